/*
 * hir.h
 *		The high-level IR: the forest as the compiler sees it.
 *
 * The HIR keeps the trees in model order (XGBoost sums in float32 tree by
 * tree, so any reordering changes results in the last bits), unless the
 * schedule says reorderTrees(): then trees are sorted by depth (stable), so
 * that trees of one depth are walked together.  Each tree's shape is
 * rewritten for lowering:
 *
 *   - siblings are adjacent: a split's right child is always left + 1, and
 *     nodes appear level by level, so representations can copy the order;
 *   - padding to level P (asked per tree by the walks that meet it): a
 *     leaf at depth d < P becomes a chain of dummy splits whose two
 *     children are identical copies of the leaf, so no leaf sits above
 *     level P and the first P hops of a walk need no leaf test.  P = depth
 *     pads the whole tree (unrollWalk): every leaf at depth D, a walk of
 *     fixed trip count.  The two copies share their children, so a chain
 *     costs two nodes per level, not 2^(P-d).
 *
 * HIR nodes point back to the Forest node they stand for; the Forest must
 * outlive the HIR.
 */
#ifndef SILVAN_HIR_H
#define SILVAN_HIR_H

#include "silvan/forest.h"
#include "silvan/text.h"

/* Deepest tree that may be padded (keeps padding linear in tree size) */
#define HIR_MAX_PAD_DEPTH	32

typedef struct HirNode
{
	int64_t		source;			/* global index of the Forest node */
	int32_t		left;			/* tree-local; right is left + 1; -1 on leaves */
	int32_t		level;			/* edges from the root */
	uint8_t		padding;		/* dummy split: both children are copies */
	uint8_t		copy;			/* identical twin of the node before it */
} HirNode;

typedef struct HirTree
{
	int32_t		source;			/* index of the tree in the Forest */
	int32_t		group;			/* margin of the row it adds to */
	int32_t		depth;			/* steps of the walk (padded trees: exact) */
	int32_t		fixed;			/* no leaf above this level (padding, or the
								 * shallowest leaf): hops without leaf tests */
	bool		padded;			/* every leaf sits at depth (fixed = depth) */
	int64_t		first_node;		/* first node in Hir.nodes */
	int32_t		num_nodes;
} HirTree;

struct TiledForest;

typedef struct Hir
{
	const Forest *forest;
	const struct TiledForest *tiled;	/* tileTrees(n > 1): the tiles */
	bool		reordered;		/* trees sorted by depth, not model order */
	int32_t		num_trees;
	HirTree    *trees;			/* in walk order */
	int64_t		num_nodes;
	HirNode    *nodes;
	int64_t		num_padding_nodes;	/* dummies and copies added */
	int32_t		max_padded_depth;	/* deepest padded tree, 0 if none */
	int32_t		num_unpadded;	/* trees not padded to their depth */
} Hir;

/* hir.c */
extern bool HirNormalizeCompares(const Forest *forest, Forest **normalized,
								 SilvanStatus *status);
extern void HirFreeNormalized(Forest *normalized);
extern void HirOrder(const Forest *forest, bool by_depth, int32_t *order);
extern Hir *HirBuild(const Forest *forest, const int32_t *order, const int32_t *pad_to,
					 SilvanStatus *status);
extern Hir *HirBuildPadded(const Forest *forest, int32_t pad_depth, SilvanStatus *status);
extern char *HirDump(const Hir *hir, bool with_nodes);
extern int32_t HirSkipPadding(const Hir *hir, const HirTree *tree, int32_t h);
extern void HirFree(Hir *hir);

#endif							/* SILVAN_HIR_H */
