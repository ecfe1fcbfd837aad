/*
 * forest.c
 *		Creating and freeing a Forest.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/forest.h"

/* Allocate an empty forest with the defaults every parser starts from */
Forest *
ForestCreate(SilvanStatus *status)
{
	Forest	   *forest = calloc(1, sizeof(Forest));

	if (forest == NULL)
	{
		StatusNoMemory(status, "a forest");
		return NULL;
	}
	forest->sigmoid_alpha = 1.0;
	forest->num_groups = 1;
	forest->num_classes = 1;
	return forest;
}

/* Allocate the tree array, zeroed */
bool
ForestAllocTrees(Forest *forest, int32_t num_trees, SilvanStatus *status)
{
	if (num_trees < 0 || num_trees > FOREST_MAX_TREES)
		return StatusFail(status, SILVAN_ERROR_INVALID, "too many trees",
						  "The model has %d trees; at most %d are supported.",
						  num_trees, FOREST_MAX_TREES);
	free(forest->trees);
	forest->trees = calloc(num_trees > 0 ? num_trees : 1, sizeof(ForestTree));
	if (forest->trees == NULL)
		return StatusNoMemory(status, "the tree array");
	forest->num_trees = num_trees;
	return true;
}

/* Allocate the node array, zeroed */
bool
ForestAllocNodes(Forest *forest, int64_t num_nodes, SilvanStatus *status)
{
	if (num_nodes < 0 || num_nodes > FOREST_MAX_NODES)
		return StatusFail(status, SILVAN_ERROR_INVALID, "too many nodes",
						  "The model has %lld nodes; at most %lld are supported.",
						  (long long) num_nodes, (long long) FOREST_MAX_NODES);
	free(forest->nodes);
	forest->nodes = calloc(num_nodes > 0 ? num_nodes : 1, sizeof(ForestNode));
	if (forest->nodes == NULL)
		return StatusNoMemory(status, "the node array");
	forest->num_nodes = num_nodes;
	return true;
}

/* Allocate the categorical bitset words, zeroed */
bool
ForestAllocCategoryWords(Forest *forest, int64_t num_words, SilvanStatus *status)
{
	if (num_words < 0 || num_words > FOREST_MAX_CATEGORY_WORDS)
		return StatusFail(status, SILVAN_ERROR_INVALID, "categorical splits too large",
						  "The model's category sets take %lld words; at most %lld are supported.",
						  (long long) num_words, (long long) FOREST_MAX_CATEGORY_WORDS);
	free(forest->category_words);
	forest->category_words = calloc(num_words > 0 ? num_words : 1, sizeof(uint32_t));
	if (forest->category_words == NULL)
		return StatusNoMemory(status, "the category sets");
	forest->num_category_words = num_words;
	return true;
}

/* Allocate the base margins, zeroed, and set the group count */
bool
ForestAllocBaseMargin(Forest *forest, int32_t num_groups, SilvanStatus *status)
{
	if (num_groups < 1 || num_groups > FOREST_MAX_GROUPS)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid number of output groups",
						  "The model has %d output groups; expected 1 to %d.",
						  num_groups, FOREST_MAX_GROUPS);
	free(forest->base_margin);
	forest->base_margin = calloc(num_groups, sizeof(double));
	if (forest->base_margin == NULL)
		return StatusNoMemory(status, "the base margins");
	forest->num_groups = num_groups;
	return true;
}

/* Are two lists of n strings (either may be NULL) equal? */
static bool
SameStrings(char **a, char **b, int32_t n)
{
	if (a == NULL || b == NULL)
		return a == b;
	for (int32_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/*
 * Do two forests agree on everything but their trees: what margins,
 * transforms, outputs and labels read (a forest read by
 * ForestDeserializeHeader against the same form read whole)?
 */
bool
ForestSameHeader(const Forest *a, const Forest *b)
{
	if (a->source != b->source || strcmp(a->objective, b->objective) != 0 ||
		a->task != b->task || a->transform != b->transform ||
		memcmp(&a->sigmoid_alpha, &b->sigmoid_alpha, sizeof(double)) != 0 ||
		a->precision != b->precision || a->num_features != b->num_features ||
		a->num_groups != b->num_groups || a->num_classes != b->num_classes ||
		a->average_output != b->average_output || a->average_divisor != b->average_divisor ||
		a->aggregate != b->aggregate || a->base_margin_last != b->base_margin_last ||
		a->category_rule != b->category_rule || strcmp(a->digest, b->digest) != 0)
		return false;
	if (a->num_groups > 0 &&
		memcmp(a->base_margin, b->base_margin, sizeof(double) * (size_t) a->num_groups) != 0)
		return false;
	return SameStrings(a->class_labels, b->class_labels, a->num_classes) &&
		SameStrings(a->feature_names, b->feature_names, a->num_features) &&
		SameStrings(a->feature_types, b->feature_types, a->num_features);
}

/*
 * Do two forests have the same shape: the same kind of outputs, features
 * and trees, each tree with the same nodes splitting on the same features
 * the same way, whatever their thresholds, leaf values and category sets?
 * Everything a schedule names or a compile decides by (tiles, walks,
 * layouts, code walks) is then the same for both.
 */
bool
ForestSameShape(const Forest *a, const Forest *b)
{
	if (a->source != b->source || a->task != b->task || a->precision != b->precision ||
		a->num_features != b->num_features || a->num_groups != b->num_groups ||
		a->num_classes != b->num_classes || a->average_output != b->average_output ||
		a->aggregate != b->aggregate || a->category_rule != b->category_rule ||
		a->num_trees != b->num_trees || a->num_nodes != b->num_nodes)
		return false;
	for (int32_t t = 0; t < a->num_trees; t++)
		if (a->trees[t].first_node != b->trees[t].first_node ||
			a->trees[t].num_nodes != b->trees[t].num_nodes ||
			a->trees[t].group != b->trees[t].group || a->trees[t].depth != b->trees[t].depth)
			return false;
	for (int64_t n = 0; n < a->num_nodes; n++)
	{
		const ForestNode *x = &a->nodes[n];
		const ForestNode *y = &b->nodes[n];

		if (x->kind != y->kind || x->compare != y->compare || x->missing != y->missing ||
			x->default_left != y->default_left || x->category_in_left != y->category_in_left ||
			x->feature != y->feature || x->left != y->left || x->right != y->right ||
			x->category_words != y->category_words)
			return false;
	}
	return true;
}

/* Free a forest and everything it owns */
void
ForestFree(Forest *forest)
{
	if (forest == NULL)
		return;
	free(forest->base_margin);
	free(forest->trees);
	free(forest->nodes);
	free(forest->category_words);
	free(forest->feature_names);
	free(forest->feature_types);
	free(forest->class_labels);
	free(forest);
}

/* The widest span of a categorical set (32 categories a word); 0 if none */
int64_t
ForestWidestCategorySpan(const Forest *forest)
{
	int64_t		span = 0;

	for (int64_t i = 0; i < forest->num_nodes; i++)
		if (forest->nodes[i].kind == FOREST_NODE_CATEGORICAL &&
			(int64_t) forest->nodes[i].category_words * 32 > span)
			span = (int64_t) forest->nodes[i].category_words * 32;
	return span;
}

/* Name of the training library */
const char *
ForestSourceName(ForestSource source)
{
	switch (source)
	{
		case FOREST_SOURCE_XGBOOST:
			return "xgboost";
		case FOREST_SOURCE_LIGHTGBM:
			return "lightgbm";
		case FOREST_SOURCE_ONNX:
			return "onnx";
	}
	return "unknown";
}

/* Name of the task */
const char *
ForestTaskName(ForestTask task)
{
	switch (task)
	{
		case FOREST_TASK_REGRESSION:
			return "regression";
		case FOREST_TASK_BINARY:
			return "binary";
		case FOREST_TASK_MULTICLASS:
			return "multiclass";
		case FOREST_TASK_RANKING:
			return "ranking";
	}
	return "unknown";
}

/*
 * The first rule of the forest that the compiler does not implement: none
 * today (every comparison and the SUM, MIN and MAX aggregates compile; see
 * compile.c), save a category rule this build does not know.  NULL when
 * the compiler handles every rule the forest uses.
 */
const char *
ForestUncompiledRule(const Forest *forest)
{
	if (forest->category_rule > FOREST_CATEGORY_TRUNCATE)
		return "this category rule";
	return NULL;
}
