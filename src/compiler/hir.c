/*
 * hir.c
 *		Build the HIR: trees in model order, siblings adjacent, padded.
 *
 * Each tree is laid out breadth first straight into its slice of the HIR
 * node array, which doubles as the work queue: visiting node i appends its
 * two children as a pair, so a split's right child is always left + 1.
 *
 * Each tree is padded to the level its walks ask for (pad_to, by HIR
 * position; MirPadLevels computes it).  Visiting a leaf above that level
 * turns it into a dummy split and appends a pair of copies of the leaf;
 * the second copy is a twin that reuses the first one's children.  The
 * chain below a shallow leaf therefore costs two nodes per level, and no
 * path from the root ends above the pad level.  A tree padded to its depth
 * is walked in exactly depth hops with no leaf test; others take their
 * padded hops without tests and the rest in a loop in which leaves stay put.
 *
 * Trees keep the model's order unless the schedule says reorderTrees():
 * sorting them by depth changes the order of the float sums, so results
 * then match the interpreter only up to rounding.
 *
 * Before any of that, HirNormalizeCompares rewrites the comparisons the
 * lowering passes do not know into those they do, exactly: a split going
 * left iff x >= t (>, !=) is the split going left iff x < t (<=, ==) with
 * its children and its default child swapped.  For every value that is
 * compared (not NaN, or NaN read as 0 by the ZERO and NONE rules) the one
 * is the negation of the other, and the default child is still the child
 * a missing value takes.  Child indices are swapped in place, so node
 * numbers (and profiles counting hits by node) stay valid.  What remains
 * is LT, LE and EQ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/hir.h"

/* The comparison that is the negation of c for non-NaN values, or c */
static uint8_t
HirNegatedCompare(uint8_t c)
{
	switch (c)
	{
		case FOREST_CMP_GE:
			return FOREST_CMP_LT;
		case FOREST_CMP_GT:
			return FOREST_CMP_LE;
		case FOREST_CMP_NE:
			return FOREST_CMP_EQ;
	}
	return c;
}

/* Does the node compare with >=, > or != (which HirNormalizeCompares rewrites)? */
static bool
HirNeedsSwap(const ForestNode *node)
{
	return node->kind == FOREST_NODE_NUMERIC && HirNegatedCompare(node->compare) != node->compare;
}

/*
 * A copy of the forest with >=, > and != splits rewritten as <, <= and ==
 * with their children and default swapped (see the top of the file), in
 * *normalized; NULL there when no split needs it.  The copy owns only its
 * node array (free it with HirFreeNormalized); everything else is shared.
 */
bool
HirNormalizeCompares(const Forest *forest, Forest **normalized, SilvanStatus *status)
{
	Forest	   *copy;
	ForestNode *nodes;
	int64_t		n = 0;

	*normalized = NULL;
	while (n < forest->num_nodes && !HirNeedsSwap(&forest->nodes[n]))
		n++;
	if (n == forest->num_nodes)
		return true;
	copy = malloc(sizeof(Forest));
	nodes = malloc(sizeof(ForestNode) * (size_t) forest->num_nodes);
	if (copy == NULL || nodes == NULL)
	{
		free(copy);
		free(nodes);
		return StatusNoMemory(status, "the normalized splits");
	}
	*copy = *forest;
	copy->nodes = nodes;
	copy->digest[0] = '\0';	/* its nodes differ from the form it was read from */
	memcpy(nodes, forest->nodes, sizeof(ForestNode) * (size_t) forest->num_nodes);
	for (; n < forest->num_nodes; n++)
	{
		ForestNode *node = &copy->nodes[n];
		int32_t		left = node->left;

		if (!HirNeedsSwap(node))
			continue;
		node->compare = HirNegatedCompare(node->compare);
		node->left = node->right;
		node->right = left;
		node->default_left = !node->default_left;
	}
	*normalized = copy;
	return true;
}

/* Free a copy made by HirNormalizeCompares (not the arrays it shares) */
void
HirFreeNormalized(Forest *normalized)
{
	if (normalized == NULL)
		return;
	free(normalized->nodes);
	free(normalized);
}

/* Scratch space for sizing one tree at a time */
typedef struct HirScratch
{
	int32_t    *queue;
	int32_t    *level;
} HirScratch;

/*
 * Number of HIR nodes a tree needs: the nodes reachable from its root,
 * plus two per level below each leaf above pad_to; *min_leaf gets the
 * level of its shallowest leaf.
 */
static int64_t
HirTreeSize(const Forest *forest, const ForestTree *ftree, int32_t pad_to,
			HirScratch *scratch, int32_t *min_leaf)
{
	const ForestNode *nodes = forest->nodes + ftree->first_node;
	int32_t		head = 0;
	int32_t		tail = 0;
	int64_t		size = 0;

	*min_leaf = ftree->depth;
	scratch->queue[tail++] = 0;
	scratch->level[0] = 0;
	while (head < tail)
	{
		int32_t		local = scratch->queue[head++];
		const ForestNode *node = &nodes[local];

		size++;
		if (node->kind != FOREST_NODE_LEAF)
		{
			scratch->level[node->left] = scratch->level[local] + 1;
			scratch->level[node->right] = scratch->level[local] + 1;
			scratch->queue[tail++] = node->left;
			scratch->queue[tail++] = node->right;
		}
		else
		{
			if (scratch->level[local] < pad_to)
				size += 2 * (int64_t) (pad_to - scratch->level[local]);
			if (scratch->level[local] < *min_leaf)
				*min_leaf = scratch->level[local];
		}
	}
	return size;
}

/* Append a pair of children to node i of a tree being laid out */
static void
HirAddPair(HirNode *nodes, int32_t *next, int32_t i, int64_t left_source,
		   int64_t right_source, bool twins)
{
	int32_t		p = *next;

	nodes[p] = (HirNode) {
		.source = left_source, .left = -1, .level = nodes[i].level + 1
	};
	nodes[p + 1] = (HirNode) {
		.source = right_source, .left = -1, .level = nodes[i].level + 1,
		.copy = twins
	};
	nodes[i].left = p;
	*next = p + 2;
}

/* Lay out one tree breadth first into its slice of the HIR nodes */
static void
HirLayTree(const Forest *forest, const HirTree *tree, HirNode *nodes)
{
	int64_t		first = forest->trees[tree->source].first_node;
	int32_t		next = 1;

	nodes[0] = (HirNode) {
		.source = first, .left = -1
	};
	for (int32_t i = 0; i < next; i++)
	{
		const ForestNode *fnode = &forest->nodes[nodes[i].source];

		if (nodes[i].copy)
		{
			nodes[i].left = nodes[i - 1].left;
			nodes[i].padding = nodes[i - 1].padding;
		}
		else if (fnode->kind != FOREST_NODE_LEAF)
			HirAddPair(nodes, &next, i, first + fnode->left, first + fnode->right,
					   false);
		else if (nodes[i].level < tree->fixed)
		{
			nodes[i].padding = 1;
			HirAddPair(nodes, &next, i, nodes[i].source, nodes[i].source, true);
		}
	}
}

/* Size every tree and fill in the HIR tree table */
static bool
HirSizeTrees(const Forest *forest, const int32_t *order, const int32_t *pad_to,
			 Hir *hir, SilvanStatus *status)
{
	HirScratch	scratch;
	int32_t		largest = 1;
	int64_t		total = 0;

	for (int32_t t = 0; t < forest->num_trees; t++)
		if (forest->trees[t].num_nodes > largest)
			largest = forest->trees[t].num_nodes;
	scratch.queue = malloc(sizeof(int32_t) * (size_t) largest);
	scratch.level = malloc(sizeof(int32_t) * (size_t) largest);
	if (scratch.queue == NULL || scratch.level == NULL)
	{
		free(scratch.queue);
		free(scratch.level);
		return StatusNoMemory(status, "the compiler's tree scratch space");
	}
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		const ForestTree *ftree = &forest->trees[order[t]];
		HirTree    *tree = &hir->trees[t];
		int32_t		pad = pad_to ? pad_to[t] : 0;
		int32_t		min_leaf;
		int64_t		size;

		tree->source = order[t];
		tree->group = ftree->group;
		tree->depth = ftree->depth;
		pad = pad < 0 ? 0 : pad;
		pad = pad > HIR_MAX_PAD_DEPTH ? HIR_MAX_PAD_DEPTH : pad;
		tree->fixed = pad < ftree->depth ? pad : ftree->depth;
		tree->padded = tree->fixed == tree->depth;
		size = HirTreeSize(forest, ftree, tree->fixed, &scratch, &min_leaf);
		/* the hops above the shallowest leaf need no leaf test either */
		if (min_leaf > tree->fixed)
			tree->fixed = min_leaf;
		tree->padded = tree->fixed == tree->depth;
		tree->first_node = total;
		tree->num_nodes = (int32_t) size;
		total += size;
		if (size > INT32_MAX || total > INT32_MAX)
			break;
		if (tree->padded && tree->depth > hir->max_padded_depth)
			hir->max_padded_depth = tree->depth;
		if (!tree->padded)
			hir->num_unpadded++;
	}
	free(scratch.queue);
	free(scratch.level);
	if (total > INT32_MAX)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "model too large to compile",
						  "The padded trees would need more than %d nodes.", INT32_MAX);
	hir->num_nodes = total;
	return true;
}

/*
 * Walk order of the trees: model order, or by depth (stable) when by_depth.
 * order[] gets num_trees Forest tree indices.
 */
void
HirOrder(const Forest *forest, bool by_depth, int32_t *order)
{
	int32_t		n = 0;
	int32_t		max_depth = 0;

	for (int32_t t = 0; t < forest->num_trees; t++)
		max_depth = forest->trees[t].depth > max_depth ? forest->trees[t].depth : max_depth;
	if (!by_depth)
		max_depth = 0;
	for (int32_t d = 0; d <= max_depth; d++)
		for (int32_t t = 0; t < forest->num_trees; t++)
			if (!by_depth || forest->trees[t].depth == d)
				order[n++] = t;
}

/*
 * Build the HIR of a validated forest: trees in the given order (NULL:
 * model order), tree at position t padded to level pad_to[t] (NULL: none).
 */
Hir *
HirBuild(const Forest *forest, const int32_t *order, const int32_t *pad_to,
		 SilvanStatus *status)
{
	Hir		   *hir = calloc(1, sizeof(Hir));
	int32_t    *identity = NULL;
	int64_t		reachable = 0;
	bool		ok;

	if (hir == NULL)
	{
		StatusNoMemory(status, "the HIR");
		return NULL;
	}
	hir->forest = forest;
	hir->num_trees = forest->num_trees;
	hir->trees = calloc((size_t) forest->num_trees + 1, sizeof(HirTree));
	if (order == NULL)
	{
		identity = malloc(sizeof(int32_t) * ((size_t) forest->num_trees + 1));
		if (identity)
			HirOrder(forest, false, identity);
		order = identity;
	}
	if (hir->trees == NULL || order == NULL)
	{
		free(identity);
		StatusNoMemory(status, "the HIR trees");
		HirFree(hir);
		return NULL;
	}
	for (int32_t t = 0; t < forest->num_trees; t++)
		hir->reordered |= order[t] != t;
	ok = HirSizeTrees(forest, order, pad_to, hir, status);
	free(identity);
	if (!ok)
	{
		HirFree(hir);
		return NULL;
	}
	hir->nodes = malloc(sizeof(HirNode) * (size_t) (hir->num_nodes + 1));
	if (hir->nodes == NULL)
	{
		StatusNoMemory(status, "the HIR nodes");
		HirFree(hir);
		return NULL;
	}
	for (int32_t t = 0; t < hir->num_trees; t++)
		HirLayTree(forest, &hir->trees[t], hir->nodes + hir->trees[t].first_node);
	for (int64_t i = 0; i < hir->num_nodes; i++)
		if (!hir->nodes[i].padding && !hir->nodes[i].copy)
			reachable++;
	hir->num_padding_nodes = hir->num_nodes - reachable;
	return hir;
}

/* Model order, every tree no deeper than pad_depth padded completely */
Hir *
HirBuildPadded(const Forest *forest, int32_t pad_depth, SilvanStatus *status)
{
	int32_t    *pad_to = malloc(sizeof(int32_t) * ((size_t) forest->num_trees + 1));
	Hir		   *hir;

	if (pad_to == NULL)
	{
		StatusNoMemory(status, "the HIR padding levels");
		return NULL;
	}
	for (int32_t t = 0; t < forest->num_trees; t++)
		pad_to[t] = forest->trees[t].depth <= pad_depth ? forest->trees[t].depth : 0;
	hir = HirBuild(forest, NULL, pad_to, status);
	free(pad_to);
	return hir;
}

/* Describe one HIR node on one line */
static void
HirDumpNode(TextBuf *buf, const Forest *forest, const HirNode *node, int32_t i)
{
	const ForestNode *fnode = &forest->nodes[node->source];
	static const char *const missing[] = {"nan", "zero", "none"};
	static const char *const compares[] = {"<", "<=", ">=", ">", "==", "!="};

	TextAppend(buf, "    n%d: ", i);
	if (node->padding)
		TextAppend(buf, "pad -> n%d, n%d", node->left, node->left + 1);
	else if (fnode->kind == FOREST_NODE_LEAF)
		TextAppend(buf, "leaf %.9g", fnode->leaf_value);
	else if (fnode->kind == FOREST_NODE_NUMERIC)
		TextAppend(buf, "f%d %s %.9g missing %s default %s -> n%d, n%d",
				   fnode->feature, compares[fnode->compare],
				   fnode->threshold, missing[fnode->missing],
				   fnode->default_left ? "left" : "right", node->left, node->left + 1);
	else
		TextAppend(buf, "f%d in set[%lld+%d] goes %s default %s -> n%d, n%d",
				   fnode->feature, (long long) fnode->category_offset,
				   fnode->category_words, fnode->category_in_left ? "left" : "right",
				   fnode->default_left ? "left" : "right", node->left, node->left + 1);
	TextAppend(buf, "%s\n", node->copy ? " (copy)" : "");
}

/* Summarize trees by depth: how many, and whether padded (tiles: hops by tile) */
static void
HirDumpDepths(TextBuf *buf, const Hir *hir)
{
	int32_t		max_depth = 0;
	int32_t    *count;

	for (int32_t t = 0; t < hir->num_trees; t++)
		if (hir->trees[t].depth > max_depth)
			max_depth = hir->trees[t].depth;
	count = calloc((size_t) max_depth + 1, sizeof(int32_t));
	if (count == NULL)
	{
		buf->failed = true;
		return;
	}
	for (int32_t t = 0; t < hir->num_trees; t++)
		count[hir->trees[t].depth]++;
	for (int32_t d = 0; d <= max_depth; d++)
		if (count[d] > 0)
		{
			int32_t		padded = 0;
			int32_t		peeled = 0;

			for (int32_t t = 0; t < hir->num_trees; t++)
				if (hir->trees[t].depth == d)
				{
					padded += hir->trees[t].padded && d > 0;
					peeled += !hir->trees[t].padded && hir->trees[t].fixed > 0;
				}
			TextAppend(buf, "  depth %d: %d tree%s", d, count[d], count[d] == 1 ? "" : "s");
			if (hir->tiled)
			{
				TextAppend(buf, "\n");
				continue;
			}
			if (padded)
				TextAppend(buf, ", %d without leaf tests", padded);
			if (peeled)
				TextAppend(buf, ", %d with leaf tests after the first hops", peeled);
			if (count[d] - padded - peeled > 0 && d > 0)
				TextAppend(buf, ", %d with leaf tests", count[d] - padded - peeled);
			TextAppend(buf, "\n");
		}
	free(count);
}

/* The HIR as text: a summary, and optionally every node */
char *
HirDump(const Hir *hir, bool with_nodes)
{
	TextBuf		buf = {0};

	TextAppend(&buf, "hir: %d trees %s, %lld nodes (%lld padding)\n",
			   hir->num_trees, hir->reordered ? "sorted by depth" : "in model order",
			   (long long) hir->num_nodes, (long long) hir->num_padding_nodes);
	HirDumpDepths(&buf, hir);
	for (int32_t t = 0; with_nodes && t < hir->num_trees; t++)
	{
		const HirTree *tree = &hir->trees[t];

		TextAppend(&buf, "  tree %d (group %d, depth %d, %s %d, %d nodes):\n",
				   tree->source, tree->group, tree->depth,
				   tree->padded ? "padded" : "padded to level", tree->fixed,
				   tree->num_nodes);
		for (int32_t i = 0; i < tree->num_nodes; i++)
			HirDumpNode(&buf, hir->forest, &hir->nodes[tree->first_node + i], i);
	}
	return TextFinish(&buf);
}

/*
 * The node a walk really reaches from tree-local node h of tree: padding
 * splits skipped (both their children are copies, so the left one does)
 */
int32_t
HirSkipPadding(const Hir *hir, const HirTree *tree, int32_t h)
{
	const HirNode *nodes = hir->nodes + tree->first_node;

	for (int hops = 0; nodes[h].padding && hops <= FOREST_MAX_DEPTH + HIR_MAX_PAD_DEPTH; hops++)
		h = nodes[h].left;
	return h;
}

/* Release the HIR (not the Forest it points into) */
void
HirFree(Hir *hir)
{
	if (hir == NULL)
		return;
	free(hir->trees);
	free(hir->nodes);
	free(hir);
}
