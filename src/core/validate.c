/*
 * validate.c
 *		Check a Forest before anything stores, interprets or compiles it.
 *
 * Models are untrusted input.  After ForestValidate succeeds, every later
 * stage may rely on these facts without checking again:
 *
 *   - counts are within the FOREST_MAX_* limits and consistent with each
 *     other (groups, classes, base margins, task, transform);
 *   - trees tile the node array in order: tree i's nodes start where tree
 *     i-1's end, and each tree has at least one node;
 *   - every split's feature index is in [0, num_features); every child
 *     index is inside its tree; each tree's group is in [0, num_groups);
 *     every node's fields are checked before its tree is walked;
 *   - starting at a tree's root, every node of the tree is reached exactly
 *     once: no cycles, no shared subtrees, no nodes no walk reaches (so
 *     code looping over a tree's nodes sees only nodes its walks see; the
 *     XGBoost reader and the binary form's loader drop the deleted nodes
 *     XGBoost may leave in a tree, compact.c); depth is at most
 *     FOREST_MAX_DEPTH;
 *   - categorical sets lie inside category_words;
 *   - thresholds are not NaN; with MIN/MAX aggregation, neither are leaf
 *     values (NaN marks an empty accumulator there);
 *   - enumerations (comparison, missing rule, aggregate, category rule,
 *     transform) hold known values.
 *
 * It also fills in each tree's depth and the forest's max_depth.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "silvan/forest.h"

/*
 * Check the forest-wide scalars (all a forest read by
 * ForestDeserializeHeader has: its counts are zero, its arrays absent)
 */
bool
ForestValidateHeader(const Forest *forest, SilvanStatus *status)
{
	if (forest->num_features < 1 || forest->num_features > FOREST_MAX_FEATURES)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid number of features",
						  "Field \"num_features\" is %d; expected 1 to %d.",
						  forest->num_features, FOREST_MAX_FEATURES);
	if (forest->num_groups < 1 || forest->num_groups > FOREST_MAX_GROUPS ||
		forest->base_margin == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid number of output groups",
						  "Field \"num_groups\" is %d; expected 1 to %d.",
						  forest->num_groups, FOREST_MAX_GROUPS);
	if ((unsigned) forest->precision > FOREST_FLOAT64 ||
		(unsigned) forest->source > FOREST_SOURCE_ONNX ||
		(unsigned) forest->task > FOREST_TASK_RANKING ||
		(unsigned) forest->transform > FOREST_TRANSFORM_LAST)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid model header",
						  "Field \"precision\", \"source\", \"task\" or \"transform\" is out of range.");
	if (forest->aggregate > FOREST_AGGREGATE_MAX ||
		forest->category_rule > FOREST_CATEGORY_TRUNCATE)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid model header",
						  "Field \"aggregate\" or \"category_rule\" is out of range.");
	if (forest->task == FOREST_TASK_MULTICLASS &&
		(forest->num_classes != forest->num_groups || forest->num_classes < 2))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid number of classes",
						  "Field \"num_classes\" is %d with %d output groups; a multi-class model needs one group per class.",
						  forest->num_classes, forest->num_groups);
	if (forest->task != FOREST_TASK_MULTICLASS && forest->num_groups != 1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid number of output groups",
						  "Field \"num_groups\" is %d; only multi-class models have more than one.",
						  forest->num_groups);
	if (!isfinite(forest->sigmoid_alpha))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid sigmoid parameter",
						  "Field \"sigmoid\" is not a finite number.");
	if (forest->average_output && forest->average_divisor < 1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid averaging",
						  "Field \"average_output\" is set but the model has %d iterations.",
						  forest->average_divisor);
	if (forest->num_trees < 0 || forest->num_trees > FOREST_MAX_TREES ||
		forest->num_nodes < 0 || forest->num_nodes > FOREST_MAX_NODES ||
		forest->num_category_words < 0 ||
		forest->num_category_words > FOREST_MAX_CATEGORY_WORDS)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid model size",
						  "Field \"num_trees\", \"num_nodes\" or \"num_category_words\" is out of range.");
	if ((forest->num_trees > 0 && forest->trees == NULL) ||
		(forest->num_nodes > 0 && forest->nodes == NULL) ||
		(forest->num_category_words > 0 && forest->category_words == NULL))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid model size",
						  "A count is positive but its array is missing.");
	return true;
}

/* Check one node's own fields (not yet its place in the tree) */
static bool
ValidateNode(const Forest *forest, int32_t tree_index, const ForestTree *tree,
			 int32_t local, SilvanStatus *status)
{
	const ForestNode *node = &forest->nodes[tree->first_node + local];

	if (node->kind == FOREST_NODE_LEAF)
	{
		if (forest->aggregate != FOREST_AGGREGATE_SUM && isnan(node->leaf_value))
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
							  "Field \"leaf_value\" of node %d of tree %d is NaN, which MIN and MAX aggregation cannot order.",
							  local, tree_index);
		return true;
	}
	if (node->kind != FOREST_NODE_NUMERIC && node->kind != FOREST_NODE_CATEGORICAL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
						  "Node %d of tree %d has an unknown kind %d.",
						  local, tree_index, node->kind);
	if (node->feature < 0 || node->feature >= forest->num_features)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
						  "Field \"split_feature\" of node %d of tree %d is %d; the model has %d features.",
						  local, tree_index, node->feature, forest->num_features);
	if (node->left < 0 || node->left >= tree->num_nodes ||
		node->right < 0 || node->right >= tree->num_nodes)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
						  "Child index of node %d of tree %d is out of range (left %d, right %d, tree size %d).",
						  local, tree_index, node->left, node->right, tree->num_nodes);
	if (node->compare > FOREST_CMP_NE || node->missing > FOREST_MISSING_NONE)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
						  "Node %d of tree %d has an unknown comparison or missing-value rule.",
						  local, tree_index);
	if (node->kind == FOREST_NODE_NUMERIC && isnan(node->threshold))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
						  "Field \"threshold\" of node %d of tree %d is NaN.",
						  local, tree_index);
	if (node->kind == FOREST_NODE_CATEGORICAL &&
		(node->missing != FOREST_MISSING_NAN ||
		 node->category_words < 0 || node->category_offset < 0 ||
		 node->category_words > forest->num_category_words ||
		 node->category_offset > forest->num_category_words - node->category_words))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
						  "The category set of node %d of tree %d lies outside the model's category data.",
						  local, tree_index);
	return true;
}

/* Every node of a tree must have been reached by its walk */
static bool
ValidateReached(const uint8_t *seen, const ForestTree *tree, int32_t tree_index,
				SilvanStatus *status)
{
	for (int32_t local = 0; local < tree->num_nodes; local++)
		if (!seen[local])
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
							  "Node %d of tree %d is never reached from the root.",
							  local, tree_index);
	return true;
}

/*
 * Check every node of one tree, then walk it from its root, checking each
 * node is reached exactly once; set depth.
 * seen and stack are scratch arrays of at least tree->num_nodes entries.
 */
static bool
ValidateTreeShape(Forest *forest, int32_t tree_index, uint8_t *seen,
				  int32_t *stack, int32_t *depth_of, uint32_t *ticks, SilvanStatus *status)
{
	ForestTree *tree = &forest->trees[tree_index];
	int32_t		top = 0;
	int32_t		depth = 0;

	for (int32_t local = 0; local < tree->num_nodes; local++)
	{
		if (CancelTick(ticks))
			return StatusCanceled(status, "validating the model");
		if (!ValidateNode(forest, tree_index, tree, local, status))
			return false;
	}
	memset(seen, 0, tree->num_nodes);
	stack[top++] = 0;
	depth_of[0] = 0;
	seen[0] = 1;
	while (top > 0)
	{
		int32_t		local = stack[--top];
		const ForestNode *node = &forest->nodes[tree->first_node + local];
		int32_t		children[2];

		if (CancelTick(ticks))
			return StatusCanceled(status, "validating the model");
		if (depth_of[local] > depth)
			depth = depth_of[local];
		if (node->kind == FOREST_NODE_LEAF)
			continue;
		if (depth_of[local] >= FOREST_MAX_DEPTH)
			return StatusFail(status, SILVAN_ERROR_INVALID, "tree too deep",
							  "Tree %d is deeper than %d levels.", tree_index, FOREST_MAX_DEPTH);
		children[0] = node->left;
		children[1] = node->right;
		for (int i = 0; i < 2; i++)
		{
			if (seen[children[i]])
				return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
								  "Node %d of tree %d is reached twice (a cycle or a shared subtree).",
								  children[i], tree_index);
			seen[children[i]] = 1;
			depth_of[children[i]] = depth_of[local] + 1;
			stack[top++] = children[i];
		}
	}
	if (!ValidateReached(seen, tree, tree_index, status))
		return false;
	tree->depth = depth;
	if (depth > forest->max_depth)
		forest->max_depth = depth;
	return true;
}

/* Check that trees tile the node array and that their groups exist */
static bool
ValidateTreeRanges(const Forest *forest, int32_t *largest, SilvanStatus *status)
{
	int64_t		next = 0;

	*largest = 1;
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		const ForestTree *tree = &forest->trees[t];

		if (tree->first_node != next || tree->num_nodes < 1 ||
			tree->num_nodes > forest->num_nodes - next)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
							  "Tree %d claims nodes [%lld, %lld) but the next free node is %lld of %lld.",
							  t, (long long) tree->first_node,
							  (long long) tree->first_node + tree->num_nodes,
							  (long long) next, (long long) forest->num_nodes);
		if (tree->group < 0 || tree->group >= forest->num_groups)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
							  "Field \"tree_info\" of tree %d is %d; the model has %d output groups.",
							  t, tree->group, forest->num_groups);
		if (tree->num_nodes > *largest)
			*largest = tree->num_nodes;
		next += tree->num_nodes;
	}
	if (next != forest->num_nodes)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tree structure",
						  "The trees use %lld nodes but the model has %lld.",
						  (long long) next, (long long) forest->num_nodes);
	return true;
}

/* Validate the whole forest; compute depths */
bool
ForestValidate(Forest *forest, SilvanStatus *status)
{
	int32_t		largest;
	uint8_t    *seen;
	int32_t    *stack;
	int32_t    *depth_of;
	bool		ok = true;
	uint32_t	ticks = 0;

	if (!ForestValidateHeader(forest, status) ||
		!ValidateTreeRanges(forest, &largest, status))
		return false;
	seen = malloc(largest);
	stack = malloc(sizeof(int32_t) * (size_t) largest);
	depth_of = malloc(sizeof(int32_t) * (size_t) largest);
	if (seen == NULL || stack == NULL || depth_of == NULL)
		ok = StatusNoMemory(status, "validation scratch space");
	forest->max_depth = 0;
	for (int32_t t = 0; ok && t < forest->num_trees; t++)
	{
		ok = ValidateTreeShape(forest, t, seen, stack, depth_of, &ticks, status);
		if (ok && CancelTick(&ticks))
			ok = StatusCanceled(status, "validating the model");
	}
	free(seen);
	free(stack);
	free(depth_of);
	return ok;
}
