/*
 * hir.h
 *		The high-level IR: the forest as the compiler sees it.
 *
 * The HIR keeps the trees in model order (XGBoost sums in float32 tree by
 * tree, so any reordering would change results) and rewrites each tree's
 * shape for lowering:
 *
 *   - siblings are adjacent: a split's right child is always left + 1, and
 *     nodes appear level by level, so representations can copy the order;
 *   - padding: in a tree whose depth is at most pad_depth, a leaf at depth
 *     d < D becomes a chain of dummy splits whose two children are identical
 *     copies of the leaf, so every leaf sits at depth D and the walk has a
 *     fixed trip count with no leaf test.  The two copies share their
 *     children, so a chain costs two nodes per level, not 2^(D-d).
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
	bool		padded;			/* every leaf sits at depth */
	int64_t		first_node;		/* first node in Hir.nodes */
	int32_t		num_nodes;
} HirTree;

typedef struct Hir
{
	const Forest *forest;
	int32_t		pad_depth;		/* trees up to this depth are padded */
	int32_t		num_trees;
	HirTree    *trees;			/* in model order */
	int64_t		num_nodes;
	HirNode    *nodes;
	int64_t		num_padding_nodes;	/* dummies and copies added */
	int32_t		max_padded_depth;	/* deepest padded tree, 0 if none */
	int32_t		num_unpadded;	/* trees deeper than pad_depth */
} Hir;

/* hir.c */
extern Hir *HirBuild(const Forest *forest, int32_t pad_depth, SilvanStatus *status);
extern char *HirDump(const Hir *hir, bool with_nodes);
extern void HirFree(Hir *hir);

#endif							/* SILVAN_HIR_H */
