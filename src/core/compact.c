/*
 * compact.c
 *		Dropping the nodes of a tree that no walk from its root reaches.
 *
 * XGBoost's pruner leaves the nodes it deletes in a tree's arrays, as
 * leaves that no split points to, and silvan 0.1 stored such trees as they
 * were.  ForestValidate wants every node of a tree reached exactly once
 * (code that loops over a tree's nodes must see only what its walks see),
 * so the XGBoost reader drops them as it reads each tree, and a forest
 * loaded from its binary form is compacted before it is validated: a model
 * stored by an earlier version keeps working after an upgrade.
 *
 * Both run before validation, so nothing here trusts an index: a tree in
 * which the walk meets a child outside the tree, or a node twice, is left
 * exactly as it is, for ForestValidate to refuse.  Unreached nodes cannot
 * change a prediction; dropping them keeps the others in their order and
 * renumbers the children.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "silvan/forest.h"

/*
 * Mark the nodes a walk from the root of nodes[0, n) reaches (map[i] = 0,
 * the others -1), with stack as scratch of n entries; false when a child
 * is out of range or reached twice
 */
static bool
CompactMarkReached(const ForestNode *nodes, int32_t n, int32_t *map, int32_t *stack)
{
	int32_t		top = 0;

	for (int32_t i = 0; i < n; i++)
		map[i] = -1;
	map[0] = 0;
	stack[top++] = 0;
	while (top > 0)
	{
		const ForestNode *node = &nodes[stack[--top]];
		int32_t		children[2] = {node->left, node->right};

		if (node->kind == FOREST_NODE_LEAF)
			continue;
		for (int c = 0; c < 2; c++)
		{
			if (children[c] < 0 || children[c] >= n || map[children[c]] == 0)
				return false;
			map[children[c]] = 0;
			stack[top++] = children[c];
		}
	}
	return true;
}

/*
 * Copy the reached nodes of the tree nodes[0, n) to dest, in order, with
 * children renumbered; returns how many.  dest may be nodes itself or lie
 * before it in the same array.  scratch holds 2 * n entries.  A tree with
 * a bad index is copied whole.
 */
int32_t
ForestCompactTree(const ForestNode *nodes, int32_t n, ForestNode *dest, int32_t *scratch)
{
	int32_t    *map = scratch;
	int32_t		kept = 0;

	if (n < 1)
		return n;
	if (!CompactMarkReached(nodes, n, map, scratch + n))
	{
		memmove(dest, nodes, sizeof(ForestNode) * (size_t) n);
		return n;
	}
	for (int32_t i = 0; i < n; i++)
		if (map[i] == 0)
			map[i] = kept++;
	if (kept == n && dest == nodes)
		return n;				/* every node reached, and in place: nothing moves */
	/* map[i] <= i and dest <= nodes: each write lands at or before the read */
	for (int32_t i = 0; i < n; i++)
	{
		ForestNode	node = nodes[i];

		if (map[i] < 0)
			continue;
		if (node.kind != FOREST_NODE_LEAF)
		{
			node.left = map[node.left];
			node.right = map[node.right];
		}
		dest[map[i]] = node;
	}
	return kept;
}

/*
 * Drop the unreached nodes of every tree of a forest whose trees tile its
 * node array in order (anything else is left for ForestValidate)
 */
bool
ForestDropUnreached(Forest *forest, SilvanStatus *status)
{
	int64_t		total = 0;
	int64_t		out = 0;
	int32_t		largest = 1;
	int32_t    *scratch;
	uint32_t	ticks = 0;

	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		if (forest->trees[t].first_node != total || forest->trees[t].num_nodes < 1)
			return true;
		total += forest->trees[t].num_nodes;
		if (forest->trees[t].num_nodes > largest)
			largest = forest->trees[t].num_nodes;
	}
	if (total != forest->num_nodes)
		return true;
	if ((scratch = malloc(sizeof(int32_t) * 2 * (size_t) largest)) == NULL)
		return StatusNoMemory(status, "the compaction scratch space");
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		ForestTree *tree = &forest->trees[t];

		if (CancelTickN(&ticks, (uint32_t) tree->num_nodes))
		{
			free(scratch);
			return StatusCanceled(status, "reading the stored model");
		}
		tree->num_nodes = ForestCompactTree(forest->nodes + tree->first_node, tree->num_nodes,
											forest->nodes + out, scratch);
		tree->first_node = out;
		out += tree->num_nodes;
	}
	forest->num_nodes = out;
	free(scratch);
	return true;
}
