/*
 * tiling.h
 *		Tree tiling (Treebeard, section 3): groups of split nodes walked as one.
 *
 * A tile is a connected set of at most tile_size split nodes of one tree;
 * a vector-tiled walk evaluates every node of the current tile at once,
 * packs the outcomes into a bitmask, and reads the child to move to from a
 * lookup table (LUT) indexed by the tile's shape and the bitmask.  This is
 * a pure data transformation on the Forest IR: no LLVM here.  The code
 * generator lays the tiles out (array or sparse) and emits the walks.
 *
 * Tile shapes.  The shape of a tile is the shape of the binary tree its
 * nodes form; a tile of n nodes has Catalan(n) possible shapes (1, 2, 5,
 * 14, 42, 132, 429, 1430 for n = 1..8).  Within a tile, nodes are numbered
 * in level order, left to right within a level (slot 0 is the tile's
 * root).  A shape is identified by its code: for each slot k in order, bit
 * 2k says the slot's left child is in the tile and bit 2k+1 its right
 * child.  Shape ids number the shapes of one size by ascending code,
 * so shape 0 is always the complete shape (levels filled left to right).  The
 * n+1 edges leaving a tile are its children, numbered left to right as
 * they appear in a drawing of the tree (a depth-first walk, left first).
 *
 * LUT.  Bit k of the outcome mask is the outcome of slot k (bit 0 = slot
 * 0, so an LLVM <n x i1> comparison bitcast to iN is the mask as it is),
 * and a set bit means the node's predicate held: the walk goes LEFT.  The
 * LUT entry for (shape, mask) is the child 0..n the walk leaves by.  The
 * paper prints the same bits most significant first; only the packing
 * differs.
 *
 * Padding.  Every tile holds exactly tile_size slots.  A tile that tiling
 * leaves smaller (its other edges all lead to leaves) is filled as
 * Treebeard does: a padding slot is a dummy split inserted on an edge from
 * a slot to a leaf; it repeats that slot's comparison (same feature, same
 * threshold, same node record), and both its edges lead to the leaf, so its
 * outcome never matters.  Edges are taken in slot order, left edge before
 * right, then the dummies' own edges, until the tile is full.  A tile's
 * child list may therefore name the same leaf more than once.
 *
 * Child references.  A tile child (and a tree's root) is a TileRef: a
 * non-negative value is a tile index relative to the tree's first tile, a
 * negative value r is the leaf ~r (tree-local Forest node index).  A tree
 * that is a single leaf has no tiles and its root is that leaf.
 *
 * Tiling.  Uniform tiling grows each tile breadth first from its root,
 * taking split nodes level by level until it has tile_size of them, and
 * tiles the subtrees below its edges the same way.  Probability-based
 * tiling grows each tile greedily: it adds the most often visited split
 * node adjacent to the tile (node hits from a ForestProfile; ties go to
 * the node earlier in level order).  It is applied only to skewed trees:
 * with L leaves and k = max(1, floor(skew_leaf_fraction * L)), a tree is
 * skewed when its k most visited leaves receive more than
 * skew_hit_fraction of the rows that reached its root (the paper uses 0.05
 * and 0.9).  Other trees, and all trees without a profile (or whose root
 * no profiled row reached), are tiled uniformly.
 *
 * Depth padding (section 3.9.1).  A uniformly tiled tree whose walk takes
 * at most pad_depth tiles is padded so that every leaf is reached after
 * exactly depth tiles: a leaf reached earlier hangs below a chain of dummy
 * tiles, each of whose n+1 children is the next link (or the leaf).  Their
 * slots are all padding and repeat the comparison of the leaf's parent, so
 * the walk is a fixed number of steps without leaf tests.  Trees tiled by
 * probability are never padded: the walk is peeled instead, and peel_depth
 * is the number of tiles after which leaves covering skew_hit_fraction of
 * the profiled rows have been reached.
 *
 * Tiles of a tree are numbered in level order of the tree of tiles: tile 0
 * is the root and a tile's children come after it.  Trees stay in model
 * order; TiledForestOrderByDepth gives a permutation for callers that may
 * reorder trees (reordering changes float sums: see hir.h).
 *
 * Memory: everything is malloc'd; TiledForestFree releases it.  The Forest
 * must outlive the TiledForest.  Shape tables are built once per size and
 * cached for the life of the process (TileShapesReset frees them); they are
 * not protected against concurrent first use from several threads.
 */
#ifndef SILVAN_TILING_H
#define SILVAN_TILING_H

#include "silvan/forest.h"
#include "silvan/schedule.h"
#include "silvan/text.h"

#define TILE_MAX_SIZE			SCHEDULE_MAX_TILE_SIZE	/* 8 */
#define TILING_MAX_PAD_DEPTH	32

/* Skew criterion of probability-based tiling (Treebeard's alpha, beta) */
#define TILING_DEFAULT_SKEW_LEAF_FRACTION	0.05
#define TILING_DEFAULT_SKEW_HIT_FRACTION	0.9

/* A tile child or tree root: a tile (>= 0) or the leaf ~ref (< 0) */
typedef int32_t TileRef;

#define TILE_REF_IS_LEAF(ref)		((ref) < 0)
#define TILE_REF_LEAF(ref)			(~(ref))	/* tree-local Forest node */
#define TILE_REF_OF_LEAF(node)		(~(node))

/*
 * One shape of a tile of n nodes.  child[k][side] (side 0 left, 1 right)
 * is the slot of slot k's child inside the tile, or -1 - e when that edge
 * leaves the tile as child e.  exit_slot[e] and exit_side[e] say where
 * child e leaves.
 */
typedef struct TileShape
{
	uint16_t	code;			/* level-order child bits, see above */
	int8_t		levels;			/* levels of the tile, 1..n */
	int8_t		child[TILE_MAX_SIZE][2];
	int8_t		exit_slot[TILE_MAX_SIZE + 1];
	int8_t		exit_side[TILE_MAX_SIZE + 1];
} TileShape;

/* All shapes of one tile size and their LUT */
typedef struct TileShapeTable
{
	int32_t		tile_size;
	int32_t		num_shapes;
	TileShape  *shapes;			/* by id: ascending code */
	uint8_t    *lut;			/* [num_shapes][1 << tile_size]: child 0..n */
} TileShapeTable;

/* How to tile */
typedef struct TilingOptions
{
	int32_t		tile_size;		/* 1..TILE_MAX_SIZE */
	TreeTiling	tiling;			/* uniform, or probabilistic where skewed */
	const ForestProfile *profile;	/* node hits; NULL: tile uniformly */
	double		skew_leaf_fraction; /* alpha */
	double		skew_hit_fraction;	/* beta; also the peel coverage */
	int32_t		pad_depth;		/* pad uniform trees this shallow; 0: none */
} TilingOptions;

/* One tiled tree; its tiles are [first_tile, first_tile + num_tiles) */
typedef struct TiledTree
{
	int32_t		source;			/* index of the tree in the Forest */
	int32_t		group;			/* margin of the row it adds to */
	int64_t		first_tile;
	int32_t		num_tiles;
	TileRef		root;			/* 0, or the leaf when the tree is a leaf */
	int32_t		depth;			/* tiles on the longest walk */
	int32_t		peel_depth;		/* tiles to reach skew_hit_fraction of
								 * profiled rows; 0 without a profile */
	int32_t		num_dummy_tiles;	/* depth padding tiles */
	bool		probabilistic;	/* skewed, tiled by probability */
	bool		padded;			/* every leaf after exactly depth tiles */
} TiledTree;

/*
 * A tiled forest.  Per tile t (global index): tile_nodes[t * n + k] is the
 * tree-local Forest node whose comparison slot k performs (for a padding
 * slot, the node it repeats); bit k of tile_padding[t] marks padding
 * slots; tile_shapes[t] is the shape id, tile_lut_rows[t] its row in lut;
 * tile_children[t * (n + 1) + e] is child e.
 */
typedef struct TiledForest
{
	const Forest *forest;
	const TileShapeTable *shapes;	/* the cached table of tile_size */
	TilingOptions options;		/* as given, but profile cleared */
	int64_t		profile_rows;	/* rows of the profile used; 0: none */
	int32_t		tile_size;
	int32_t		num_trees;
	TiledTree  *trees;			/* in model order */
	int64_t		num_tiles;
	int32_t    *tile_nodes;
	uint8_t    *tile_padding;
	int16_t    *tile_shapes;
	int16_t    *tile_lut_rows;
	TileRef    *tile_children;
	int32_t		num_lut_rows;	/* shapes used by some tile */
	int16_t    *lut_shapes;		/* shape id of each row, ascending */
	uint8_t    *lut;			/* [num_lut_rows][1 << tile_size] */
} TiledForest;

/* Summary for explain */
typedef struct TilingStats
{
	int32_t		num_trees;
	int32_t		num_probabilistic;	/* trees tiled by probability */
	int32_t		num_padded;		/* trees padded to a fixed walk */
	int64_t		num_tiles;		/* all tiles, dummy tiles included */
	int64_t		num_dummy_tiles;
	int64_t		num_split_nodes;	/* real nodes placed in tiles */
	int64_t		num_padding_slots;	/* in tiles other than dummy tiles */
	int32_t		min_tiles;		/* tiles per tree */
	int32_t		max_tiles;
	double		avg_tiles;
	double		avg_fill;		/* real nodes / slots, dummy tiles excluded */
	int32_t		max_depth;		/* tiles on the longest walk */
	double		avg_depth;
	int32_t		num_shapes_used;
	size_t		lut_bytes;
} TilingStats;

/* tiling_shapes.c: the shapes of a tile size and the LUT */
extern int32_t TileShapeCount(int32_t tile_size);
extern const TileShapeTable *TileShapesGet(int32_t tile_size, SilvanStatus *status);
extern int32_t TileShapeFind(const TileShapeTable *table, uint16_t code);
extern void TileShapeFormat(const TileShapeTable *table, int32_t shape,
							char *out, size_t size);
extern void TileShapesReset(void);

/* Child a tile of a shape leaves by for an outcome mask */
static inline int
TileShapeLookup(const TileShapeTable *table, int32_t shape, uint32_t mask)
{
	return table->lut[((size_t) shape << table->tile_size) | mask];
}

/* tiling.c */
extern void TilingOptionsInit(TilingOptions *options, int32_t tile_size,
							  TreeTiling tiling);
extern bool TilingTreeIsSkewed(const Forest *forest, int32_t tree,
							   const ForestProfile *profile,
							   double leaf_fraction, double hit_fraction);
extern TiledForest *TileForest(const Forest *forest, const TilingOptions *options,
							   SilvanStatus *status);
extern bool TiledForestCheck(const TiledForest *tiled, SilvanStatus *status);
extern int32_t TiledWalkTree(const TiledForest *tiled, int32_t tree, const void *row);
extern bool TiledForestOrderByDepth(const TiledForest *tiled, int32_t *order,
									SilvanStatus *status);
extern void TiledForestStats(const TiledForest *tiled, TilingStats *stats);
extern char *TiledForestDump(const TiledForest *tiled, bool with_tiles);
extern void TiledTreeDump(TextBuf *buf, const TiledForest *tiled, int32_t tree);
extern void TiledForestFree(TiledForest *tiled);

#endif							/* SILVAN_TILING_H */
