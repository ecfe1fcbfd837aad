/*
 * tiling.c
 *		Tile the trees of a forest: uniform and probability-based tiling,
 *		padding, the reference tiled walk, checks, statistics and dumps.
 *
 * Each tree is tiled from a work queue of pending tiles, which is also the
 * numbering: the item at queue position i becomes the tree's tile i, so
 * tiles come out in level order of the tree of tiles and a tile's children
 * get their numbers the moment its edges are examined.  A pending tile is
 * either a real one (rooted at a split node) or a dummy tile of a depth
 * padding chain (a leaf, and the split whose comparison its slots repeat).
 *
 * A real tile is made in three steps.  Selection picks its split nodes:
 * breadth first from the root (uniform), or greedily by node hits
 * (probability-based; ties to the node earlier in the tree's level order,
 * so that rows the profile never saw are tiled as uniform tiling would).
 * Padding then fills a short tile with dummy slots on edges to leaves,
 * in Treebeard's order (slot order, left edge first, then the dummies' own
 * edges).  Last the slots are put in level order, which gives the shape
 * code, and the shape's exits, left to right, give the tile's children.
 *
 * Depth padding needs the tree's tile depth, known only once the tree is
 * tiled, so a tree to pad is tiled a second time with the depth to reach;
 * the first attempt's tiles are simply overwritten.
 *
 * The reference walk, TiledWalkTree, does what generated code does: it
 * evaluates every slot of the tile (padding slots included) with the
 * Forest's own decision rule (ForestNodeGoesLeft), packs the outcomes, and
 * follows the forest's compacted LUT.  TiledForestCheck proves structurally
 * that every tile leads where the Forest does, so the walk must agree with
 * ForestWalkTree; the tests check both.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/tiling.h"

/* A tile waiting in a tree's queue; its position is its tile number */
typedef struct TileWork
{
	int32_t		node;			/* root split, or the leaf of a dummy tile */
	int32_t		copy;			/* dummy tile: the split its slots repeat;
								 * -1 for a real tile */
	int32_t		level;			/* tiles above it */
} TileWork;

/* The slots of one real tile while it is being made */
typedef struct TileSlots
{
	int32_t		count;
	int32_t		node[TILE_MAX_SIZE];	/* split node, or the one repeated */
	bool		padding[TILE_MAX_SIZE];
	int32_t		in[TILE_MAX_SIZE][2];	/* child slot inside the tile, or -1 */
	int32_t		out[TILE_MAX_SIZE][2];	/* otherwise the node the edge reaches */
} TileSlots;

/* Scratch space shared by all trees of one tiling */
typedef struct TileScratch
{
	int32_t    *rank;			/* level-order position of each node */
	int32_t    *leaf_level;		/* tiles walked to reach each leaf */
	int64_t    *level_hits;		/* profiled rows per leaf tile depth */
	int32_t    *bfs;			/* queue for ranking */
	TileWork   *work;
	int64_t		work_cap;
	int64_t		tile_cap;		/* tiles the TiledForest arrays hold */
} TileScratch;

/* What tiling one tree found */
typedef struct TreeOutcome
{
	int32_t		num_tiles;
	int32_t		num_dummy_tiles;
	int32_t		min_leaf_level;
	int32_t		max_leaf_level;
} TreeOutcome;

/* Read feature f of a row of the forest's precision, widened to double */
static inline double
TiledRowValue(const Forest *forest, const void *row, int32_t feature)
{
	if (forest->precision == FOREST_FLOAT32)
		return ((const float *) row)[feature];
	return ((const double *) row)[feature];
}

/* Options with the paper's defaults */
void
TilingOptionsInit(TilingOptions *options, int32_t tile_size, TreeTiling tiling)
{
	memset(options, 0, sizeof(*options));
	options->tile_size = tile_size;
	options->tiling = tiling;
	options->profile = NULL;
	options->skew_leaf_fraction = TILING_DEFAULT_SKEW_LEAF_FRACTION;
	options->skew_hit_fraction = TILING_DEFAULT_SKEW_HIT_FRACTION;
	options->pad_depth = 0;
}

/*
 * Sum of the k largest leaf hit counts of a tree, without sorting (and so
 * without memory): find by bisection the largest v such that at least k
 * leaves have hits >= v; then the top k are those above v plus ties at v.
 */
static int64_t
TopLeafHits(const ForestNode *nodes, const int64_t *hits, int32_t num_nodes,
			int64_t k, int64_t max_hits)
{
	int64_t		lo = 0;
	int64_t		hi = max_hits;
	int64_t		above = 0;
	int64_t		count_above = 0;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo + 1) / 2;
		int64_t		count = 0;

		for (int32_t i = 0; i < num_nodes; i++)
			if (nodes[i].kind == FOREST_NODE_LEAF && hits[i] >= mid)
				count++;
		if (count >= k)
			lo = mid;
		else
			hi = mid - 1;
	}
	for (int32_t i = 0; i < num_nodes; i++)
		if (nodes[i].kind == FOREST_NODE_LEAF && hits[i] > lo)
		{
			above += hits[i];
			count_above++;
		}
	return above + (k - count_above) * lo;
}

/*
 * Is a tree skewed: do at most leaf_fraction of its leaves (rounded down,
 * but at least one) receive more than hit_fraction of its profiled rows?
 */
static bool
TreeIsSkewed(const Forest *forest, int32_t tree, const int64_t *node_hits,
			 double leaf_fraction, double hit_fraction)
{
	const ForestTree *ftree = &forest->trees[tree];
	const ForestNode *nodes = forest->nodes + ftree->first_node;
	const int64_t *hits = node_hits + ftree->first_node;
	int64_t		num_leaves = 0;
	int64_t		k;

	if (hits[0] <= 0 || nodes[0].kind == FOREST_NODE_LEAF)
		return false;
	for (int32_t i = 0; i < ftree->num_nodes; i++)
		if (nodes[i].kind == FOREST_NODE_LEAF)
			num_leaves++;
	k = (int64_t) floor(leaf_fraction * (double) num_leaves);
	if (k < 1)
		k = 1;
	return (double) TopLeafHits(nodes, hits, ftree->num_nodes, k, hits[0]) >
		hit_fraction * (double) hits[0];
}

/* The skew test of probability-based tiling, for explain and tests */
bool
TilingTreeIsSkewed(const Forest *forest, int32_t tree, const ForestProfile *profile,
				   double leaf_fraction, double hit_fraction)
{
	if (profile == NULL || profile->node_hits == NULL ||
		profile->num_nodes != forest->num_nodes || tree < 0 ||
		tree >= forest->num_trees)
		return false;
	return TreeIsSkewed(forest, tree, profile->node_hits, leaf_fraction,
						hit_fraction);
}

/* Number the nodes of a tree in level order, left before right */
static void
RankNodes(const Forest *forest, const ForestTree *ftree, TileScratch *scratch)
{
	const ForestNode *nodes = forest->nodes + ftree->first_node;
	int32_t		head = 0;
	int32_t		tail = 0;

	scratch->bfs[tail++] = 0;
	while (head < tail)
	{
		int32_t		local = scratch->bfs[head];

		scratch->rank[local] = head++;
		if (nodes[local].kind != FOREST_NODE_LEAF)
		{
			scratch->bfs[tail++] = nodes[local].left;
			scratch->bfs[tail++] = nodes[local].right;
		}
	}
}

/* Pick up to n split nodes breadth first from root (uniform tiling) */
static int32_t
SelectUniform(const ForestNode *nodes, int32_t root, int32_t n, int32_t *chosen)
{
	int32_t		queue[2 * TILE_MAX_SIZE + 1];
	int32_t		head = 0;
	int32_t		tail = 0;
	int32_t		count = 0;

	queue[tail++] = root;
	while (head < tail && count < n)
	{
		int32_t		local = queue[head++];

		chosen[count++] = local;
		if (nodes[nodes[local].left].kind != FOREST_NODE_LEAF)
			queue[tail++] = nodes[local].left;
		if (nodes[nodes[local].right].kind != FOREST_NODE_LEAF)
			queue[tail++] = nodes[local].right;
	}
	return count;
}

/* Is node one of the first count chosen? */
static bool
IsChosen(const int32_t *chosen, int32_t count, int32_t node)
{
	for (int32_t i = 0; i < count; i++)
		if (chosen[i] == node)
			return true;
	return false;
}

/*
 * Pick up to n split nodes greedily (Treebeard's Algorithm 2): start from
 * root and keep adding the adjacent split node with the most hits.
 */
static int32_t
SelectGreedy(const ForestNode *nodes, const int64_t *hits, const int32_t *rank,
			 int32_t root, int32_t n, int32_t *chosen)
{
	int32_t		count = 0;

	chosen[count++] = root;
	while (count < n)
	{
		int32_t		best = -1;

		for (int32_t i = 0; i < count; i++)
		{
			int32_t		kids[2] = {nodes[chosen[i]].left, nodes[chosen[i]].right};

			for (int side = 0; side < 2; side++)
			{
				int32_t		c = kids[side];

				if (nodes[c].kind == FOREST_NODE_LEAF || IsChosen(chosen, count, c))
					continue;
				if (best < 0 || hits[c] > hits[best] ||
					(hits[c] == hits[best] && rank[c] < rank[best]))
					best = c;
			}
		}
		if (best < 0)
			break;
		chosen[count++] = best;
	}
	return count;
}

/* Lay out the chosen nodes as slots: slot 0 the root, edges inside or out */
static void
SlotsFromChosen(const ForestNode *nodes, const int32_t *chosen, int32_t count,
				TileSlots *slots)
{
	slots->count = 0;
	slots->node[slots->count] = chosen[0];
	slots->padding[slots->count++] = false;
	for (int32_t k = 0; k < slots->count; k++)
	{
		int32_t		kids[2] = {nodes[slots->node[k]].left, nodes[slots->node[k]].right};

		for (int side = 0; side < 2; side++)
		{
			if (IsChosen(chosen, count, kids[side]))
			{
				slots->node[slots->count] = kids[side];
				slots->padding[slots->count] = false;
				slots->in[k][side] = slots->count++;
				slots->out[k][side] = -1;
			}
			else
			{
				slots->in[k][side] = -1;
				slots->out[k][side] = kids[side];
			}
		}
	}
}

/*
 * Fill a short tile to n slots (Treebeard's padding): on an edge from slot
 * c to a leaf, insert a dummy slot that repeats slot c's comparison and
 * whose two edges both reach that leaf.  Slots are taken in order, left
 * edge first; the dummies, appended, are taken after the real slots.
 */
static void
PadSlots(const ForestNode *nodes, TileSlots *slots, int32_t n)
{
	for (int32_t c = 0; c < slots->count && slots->count < n; c++)
	{
		for (int side = 0; side < 2 && slots->count < n; side++)
		{
			int32_t		leaf = slots->out[c][side];
			int32_t		d = slots->count;

			if (slots->in[c][side] >= 0 || nodes[leaf].kind != FOREST_NODE_LEAF)
				continue;
			slots->node[d] = slots->node[c];
			slots->padding[d] = true;
			slots->in[d][0] = slots->in[d][1] = -1;
			slots->out[d][0] = slots->out[d][1] = leaf;
			slots->in[c][side] = d;
			slots->out[c][side] = -1;
			slots->count++;
		}
	}
}

/* Put the slots in level order (left before right); return the shape code */
static uint16_t
OrderSlots(TileSlots *slots)
{
	TileSlots	sorted;
	int32_t		order[TILE_MAX_SIZE];
	int32_t		position[TILE_MAX_SIZE];
	int32_t		tail = 1;
	uint16_t	code = 0;

	order[0] = 0;
	for (int32_t head = 0; head < tail; head++)
		for (int side = 0; side < 2; side++)
			if (slots->in[order[head]][side] >= 0)
				order[tail++] = slots->in[order[head]][side];
	for (int32_t k = 0; k < slots->count; k++)
		position[order[k]] = k;

	sorted.count = slots->count;
	for (int32_t k = 0; k < slots->count; k++)
	{
		int32_t		old = order[k];

		sorted.node[k] = slots->node[old];
		sorted.padding[k] = slots->padding[old];
		for (int side = 0; side < 2; side++)
		{
			int32_t		in = slots->in[old][side];

			sorted.in[k][side] = in >= 0 ? position[in] : -1;
			sorted.out[k][side] = slots->out[old][side];
			if (in >= 0)
				code |= (uint16_t) (1u << (2 * k + side));
		}
	}
	*slots = sorted;
	return code;
}

/* Make sure the tile arrays hold at least need tiles */
static bool
ReserveTiles(TiledForest *tiled, TileScratch *scratch, int64_t need,
			 SilvanStatus *status)
{
	int64_t		cap = scratch->tile_cap;
	int32_t		n = tiled->tile_size;
	void	   *p;

	if (need <= cap)
		return true;
	while (cap < need)
		cap = cap < 1024 ? 1024 : cap * 2;
#define GROW(field, per_tile) \
	do { \
		p = realloc(tiled->field, sizeof(*tiled->field) * (size_t) (per_tile) * (size_t) cap); \
		if (p == NULL) \
			return StatusNoMemory(status, "the tiles"); \
		tiled->field = p; \
	} while (0)
	GROW(tile_nodes, n);
	GROW(tile_padding, 1);
	GROW(tile_shapes, 1);
	GROW(tile_lut_rows, 1);
	GROW(tile_children, n + 1);
#undef GROW
	scratch->tile_cap = cap;
	return true;
}

/* Append a pending tile to the tree's queue; return its tile number */
static int32_t
PushWork(TileScratch *scratch, int64_t *tail, int32_t node, int32_t copy,
		 int32_t level, SilvanStatus *status)
{
	if (*tail >= INT32_MAX)
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "tree has too many tiles",
				   "A tiled tree may have at most %d tiles.", INT32_MAX);
		return -1;
	}
	if (*tail >= scratch->work_cap)
	{
		int64_t		cap = scratch->work_cap * 2;
		TileWork   *grown = realloc(scratch->work, sizeof(TileWork) * (size_t) cap);

		if (grown == NULL)
		{
			StatusNoMemory(status, "the tiling work queue");
			return -1;
		}
		scratch->work = grown;
		scratch->work_cap = cap;
	}
	scratch->work[*tail] = (TileWork) {
		.node = node, .copy = copy, .level = level
	};
	return (int32_t) (*tail)++;
}

/*
 * The reference of an edge reaching target from a tile at level: a new
 * tile for a split; for a leaf, the leaf itself, or when the tree is padded
 * to pad_to tiles and the leaf comes early, the first tile of a dummy chain
 * whose slots repeat the split copy.  *last_leaf and *last_ref let
 * neighbouring edges to the same leaf share one chain.
 */
static bool
EdgeRef(const ForestNode *nodes, TileScratch *scratch, int64_t *tail,
		const TileWork *item, int32_t target, int32_t copy, int32_t pad_to,
		int32_t *last_leaf, TileRef *last_ref, TileRef *ref, TreeOutcome *outcome,
		SilvanStatus *status)
{
	if (nodes[target].kind != FOREST_NODE_LEAF)
	{
		*ref = PushWork(scratch, tail, target, -1, item->level + 1, status);
		return *ref >= 0;
	}
	if (item->level + 1 >= pad_to)
	{
		*ref = TILE_REF_OF_LEAF(target);
		scratch->leaf_level[target] = item->level + 1;
		if (item->level + 1 < outcome->min_leaf_level)
			outcome->min_leaf_level = item->level + 1;
		if (item->level + 1 > outcome->max_leaf_level)
			outcome->max_leaf_level = item->level + 1;
		return true;
	}
	if (target == *last_leaf)
	{
		*ref = *last_ref;
		return true;
	}
	*ref = PushWork(scratch, tail, target, copy, item->level + 1, status);
	*last_leaf = target;
	*last_ref = *ref;
	return *ref >= 0;
}

/* Make one real tile from a pending item; queue its children */
static bool
MakeRealTile(TiledForest *tiled, const ForestNode *nodes, const int64_t *hits,
			 TileScratch *scratch, int64_t tile, int64_t *tail,
			 const TileWork *item, int32_t pad_to, TreeOutcome *outcome,
			 SilvanStatus *status)
{
	int32_t		n = tiled->tile_size;
	int32_t		chosen[TILE_MAX_SIZE];
	int32_t		count;
	TileSlots	slots;
	int32_t		shape_id;
	const TileShape *shape;
	int32_t		last_leaf = -1;
	TileRef		last_ref = 0;
	uint8_t		padding = 0;

	if (hits != NULL)
		count = SelectGreedy(nodes, hits, scratch->rank, item->node, n, chosen);
	else
		count = SelectUniform(nodes, item->node, n, chosen);
	SlotsFromChosen(nodes, chosen, count, &slots);
	PadSlots(nodes, &slots, n);
	shape_id = TileShapeFind(tiled->shapes, OrderSlots(&slots));
	if (slots.count != n || shape_id < 0)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "tile could not be formed",
						  "A tile rooted at node %d has %d of %d slots.",
						  item->node, slots.count, n);
	shape = &tiled->shapes->shapes[shape_id];
	for (int32_t k = 0; k < n; k++)
	{
		tiled->tile_nodes[tile * n + k] = slots.node[k];
		if (slots.padding[k])
			padding |= (uint8_t) (1u << k);
	}
	tiled->tile_padding[tile] = padding;
	tiled->tile_shapes[tile] = (int16_t) shape_id;
	for (int32_t e = 0; e <= n; e++)
	{
		int32_t		k = shape->exit_slot[e];

		if (!EdgeRef(nodes, scratch, tail, item, slots.out[k][shape->exit_side[e]],
					 slots.node[k], pad_to, &last_leaf, &last_ref,
					 &tiled->tile_children[tile * (n + 1) + e], outcome, status))
			return false;
	}
	return true;
}

/* Make one dummy tile of a depth padding chain */
static bool
MakeDummyTile(TiledForest *tiled, const ForestNode *nodes, TileScratch *scratch,
			  int64_t tile, int64_t *tail, const TileWork *item, int32_t pad_to,
			  int32_t complete_shape, TreeOutcome *outcome, SilvanStatus *status)
{
	int32_t		n = tiled->tile_size;
	int32_t		last_leaf = -1;
	TileRef		last_ref = 0;
	TileRef		ref;

	for (int32_t k = 0; k < n; k++)
		tiled->tile_nodes[tile * n + k] = item->copy;
	tiled->tile_padding[tile] = (uint8_t) ((1u << n) - 1);
	tiled->tile_shapes[tile] = (int16_t) complete_shape;
	if (!EdgeRef(nodes, scratch, tail, item, item->node, item->copy, pad_to,
				 &last_leaf, &last_ref, &ref, outcome, status))
		return false;
	for (int32_t e = 0; e <= n; e++)
		tiled->tile_children[tile * (n + 1) + e] = ref;
	outcome->num_dummy_tiles++;
	return true;
}

/*
 * Tile one tree into the arrays from tiled->num_tiles on.  hits selects
 * greedy tiling (NULL: uniform); pad_to > 0 pads every walk to that many
 * tiles.
 */
static bool
TileTree(TiledForest *tiled, const ForestTree *ftree, const int64_t *hits,
		 int32_t pad_to, TileScratch *scratch, TreeOutcome *outcome,
		 SilvanStatus *status)
{
	const ForestNode *nodes = tiled->forest->nodes + ftree->first_node;
	int64_t		first = tiled->num_tiles;
	int64_t		tail = 0;
	int32_t		n = tiled->tile_size;
	int32_t		complete_shape =
		TileShapeFind(tiled->shapes, (uint16_t) ((1u << (n - 1)) - 1));

	memset(outcome, 0, sizeof(*outcome));
	outcome->min_leaf_level = INT32_MAX;
	if (nodes[0].kind == FOREST_NODE_LEAF)
	{
		scratch->leaf_level[0] = 0;
		outcome->min_leaf_level = 0;
		return true;
	}
	if (PushWork(scratch, &tail, 0, -1, 0, status) < 0)
		return false;
	for (int64_t head = 0; head < tail; head++)
	{
		TileWork	item = scratch->work[head];
		bool		ok;

		if (!ReserveTiles(tiled, scratch, first + head + 1, status))
			return false;
		if (item.copy >= 0)
			ok = MakeDummyTile(tiled, nodes, scratch, first + head, &tail, &item,
							   pad_to, complete_shape, outcome, status);
		else
			ok = MakeRealTile(tiled, nodes, hits, scratch, first + head, &tail,
							  &item, pad_to, outcome, status);
		if (!ok)
			return false;
	}
	outcome->num_tiles = (int32_t) tail;
	return true;
}

/*
 * Tiles to walk until the leaves reached cover hit_fraction of the tree's
 * profiled rows (the depth Treebeard peels a skewed tree's walk to); 0
 * without hits.
 */
static int32_t
PeelDepth(const ForestTree *ftree, const ForestNode *nodes, const int64_t *hits,
		  int32_t depth, double hit_fraction, TileScratch *scratch)
{
	int64_t		covered = 0;

	if (hits == NULL || hits[0] <= 0)
		return 0;
	memset(scratch->level_hits, 0, sizeof(int64_t) * (size_t) (depth + 1));
	for (int32_t i = 0; i < ftree->num_nodes; i++)
		if (nodes[i].kind == FOREST_NODE_LEAF)
			scratch->level_hits[scratch->leaf_level[i]] += hits[i];
	for (int32_t d = 0; d <= depth; d++)
	{
		covered += scratch->level_hits[d];
		if ((double) covered >= hit_fraction * (double) hits[0])
			return d;
	}
	return depth;
}

/* Tile tree t, padding it if it qualifies, and fill its TiledTree */
static bool
TileOneTree(TiledForest *tiled, int32_t t, const ForestProfile *profile,
			TileScratch *scratch, SilvanStatus *status)
{
	const Forest *forest = tiled->forest;
	const TilingOptions *options = &tiled->options;
	const ForestTree *ftree = &forest->trees[t];
	const int64_t *hits = NULL;
	TiledTree  *tree = &tiled->trees[t];
	TreeOutcome outcome;
	const int64_t *greedy = NULL;

	if (profile != NULL)
		hits = profile->node_hits + ftree->first_node;
	tree->source = t;
	tree->group = ftree->group;
	tree->first_tile = tiled->num_tiles;
	if (options->tiling == TREE_TILING_PROBABILISTIC && hits != NULL &&
		TreeIsSkewed(forest, t, profile->node_hits,
					 options->skew_leaf_fraction, options->skew_hit_fraction))
	{
		greedy = hits;
		tree->probabilistic = true;
		RankNodes(forest, ftree, scratch);
	}
	if (!TileTree(tiled, ftree, greedy, 0, scratch, &outcome, status))
		return false;
	if (options->pad_depth > 0 && !tree->probabilistic &&
		outcome.max_leaf_level <= options->pad_depth)
	{
		tree->padded = true;
		if (outcome.min_leaf_level < outcome.max_leaf_level &&
			!TileTree(tiled, ftree, NULL, outcome.max_leaf_level, scratch,
					  &outcome, status))
			return false;
	}
	tree->num_tiles = outcome.num_tiles;
	tree->num_dummy_tiles = outcome.num_dummy_tiles;
	tree->root = outcome.num_tiles > 0 ? 0 : TILE_REF_OF_LEAF(0);
	tree->depth = outcome.max_leaf_level;
	tree->peel_depth = PeelDepth(ftree, forest->nodes + ftree->first_node, hits,
								 tree->depth, options->skew_hit_fraction, scratch);
	tiled->num_tiles += outcome.num_tiles;
	return true;
}

/* Keep only the LUT rows of shapes some tile uses, and point tiles at them */
static bool
CompactLut(TiledForest *tiled, SilvanStatus *status)
{
	const TileShapeTable *table = tiled->shapes;
	int32_t		n = tiled->tile_size;
	int16_t    *row_of = malloc(sizeof(int16_t) * (size_t) table->num_shapes);

	if (row_of == NULL)
		return StatusNoMemory(status, "the tile LUT");
	for (int32_t s = 0; s < table->num_shapes; s++)
		row_of[s] = -1;
	for (int64_t t = 0; t < tiled->num_tiles; t++)
		row_of[tiled->tile_shapes[t]] = 0;
	tiled->num_lut_rows = 0;
	for (int32_t s = 0; s < table->num_shapes; s++)
		if (row_of[s] >= 0)
			row_of[s] = (int16_t) tiled->num_lut_rows++;
	tiled->lut_shapes = malloc(sizeof(int16_t) * (size_t) (tiled->num_lut_rows + 1));
	tiled->lut = malloc(((size_t) tiled->num_lut_rows + 1) << n);
	if (tiled->lut_shapes == NULL || tiled->lut == NULL)
	{
		free(row_of);
		return StatusNoMemory(status, "the tile LUT");
	}
	for (int32_t s = 0; s < table->num_shapes; s++)
	{
		if (row_of[s] < 0)
			continue;
		tiled->lut_shapes[row_of[s]] = (int16_t) s;
		memcpy(tiled->lut + ((size_t) row_of[s] << n),
			   table->lut + ((size_t) s << n), (size_t) 1 << n);
	}
	for (int64_t t = 0; t < tiled->num_tiles; t++)
		tiled->tile_lut_rows[t] = row_of[tiled->tile_shapes[t]];
	free(row_of);
	return true;
}

/* Check the options against the forest */
static bool
CheckOptions(const Forest *forest, const TilingOptions *options,
			 SilvanStatus *status)
{
	const ForestProfile *profile = options->profile;

	if (options->tile_size < 1 || options->tile_size > TILE_MAX_SIZE)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tile size",
						  "Tile size %d is outside 1 to %d.", options->tile_size,
						  TILE_MAX_SIZE);
	if (options->tiling != TREE_TILING_UNIFORM &&
		options->tiling != TREE_TILING_PROBABILISTIC)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tiling",
						  "Tiling kind %d is neither uniform nor probabilistic.",
						  (int) options->tiling);
	if (options->pad_depth < 0 || options->pad_depth > TILING_MAX_PAD_DEPTH)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid tile pad depth",
						  "Pad depth %d is outside 0 to %d.", options->pad_depth,
						  TILING_MAX_PAD_DEPTH);
	if (!(options->skew_leaf_fraction > 0.0 && options->skew_leaf_fraction <= 1.0) ||
		!(options->skew_hit_fraction > 0.0 && options->skew_hit_fraction <= 1.0))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid skew fractions",
						  "Skew fractions %g and %g must lie in (0, 1].",
						  options->skew_leaf_fraction, options->skew_hit_fraction);
	if (profile != NULL &&
		(profile->node_hits == NULL || profile->num_nodes != forest->num_nodes))
		return StatusFail(status, SILVAN_ERROR_INVALID, "profile does not match the model",
						  "The profile has %lld nodes; the model has %lld.",
						  (long long) profile->num_nodes, (long long) forest->num_nodes);
	return true;
}

/* Allocate the scratch space for the largest tree */
static bool
ScratchInit(const Forest *forest, TileScratch *scratch, SilvanStatus *status)
{
	int32_t		max_nodes = 1;

	for (int32_t t = 0; t < forest->num_trees; t++)
		if (forest->trees[t].num_nodes > max_nodes)
			max_nodes = forest->trees[t].num_nodes;
	scratch->rank = malloc(sizeof(int32_t) * (size_t) max_nodes);
	scratch->leaf_level = malloc(sizeof(int32_t) * (size_t) max_nodes);
	scratch->level_hits = malloc(sizeof(int64_t) * ((size_t) max_nodes + 1));
	scratch->bfs = malloc(sizeof(int32_t) * (size_t) max_nodes);
	scratch->work_cap = max_nodes;
	scratch->work = malloc(sizeof(TileWork) * (size_t) scratch->work_cap);
	if (scratch->rank == NULL || scratch->leaf_level == NULL ||
		scratch->level_hits == NULL || scratch->bfs == NULL || scratch->work == NULL)
		return StatusNoMemory(status, "the tiling scratch space");
	return true;
}

/* Release the scratch space */
static void
ScratchFree(TileScratch *scratch)
{
	free(scratch->rank);
	free(scratch->leaf_level);
	free(scratch->level_hits);
	free(scratch->bfs);
	free(scratch->work);
}

/* Tile every tree of a validated forest */
TiledForest *
TileForest(const Forest *forest, const TilingOptions *options, SilvanStatus *status)
{
	TiledForest *tiled;
	TileScratch scratch = {0};
	bool		ok = true;

	if (!CheckOptions(forest, options, status))
		return NULL;
	tiled = calloc(1, sizeof(TiledForest));
	if (tiled == NULL)
	{
		StatusNoMemory(status, "the tiled forest");
		return NULL;
	}
	tiled->forest = forest;
	tiled->options = *options;
	tiled->options.profile = NULL;	/* not ours to keep */
	tiled->profile_rows = options->profile ? options->profile->num_rows : 0;
	tiled->tile_size = options->tile_size;
	tiled->num_trees = forest->num_trees;
	tiled->shapes = TileShapesGet(options->tile_size, status);
	tiled->trees = calloc((size_t) forest->num_trees + 1, sizeof(TiledTree));
	if (tiled->shapes == NULL)
		ok = false;
	else if (tiled->trees == NULL)
		ok = StatusNoMemory(status, "the tiled trees");
	else
		ok = ScratchInit(forest, &scratch, status) &&
			ReserveTiles(tiled, &scratch, 1, status);
	for (int32_t t = 0; ok && t < forest->num_trees; t++)
		ok = TileOneTree(tiled, t, options->profile, &scratch, status);
	ok = ok && CompactLut(tiled, status);
	ScratchFree(&scratch);
	if (!ok)
	{
		TiledForestFree(tiled);
		return NULL;
	}
	return tiled;
}

/* Outcome mask of one tile for a row: bit k set when slot k goes left */
static inline uint32_t
TileMask(const TiledForest *tiled, const ForestNode *nodes, int64_t tile,
		 const void *row)
{
	const int32_t *slot_nodes = tiled->tile_nodes + tile * tiled->tile_size;
	uint32_t	mask = 0;

	for (int32_t k = 0; k < tiled->tile_size; k++)
	{
		const ForestNode *node = &nodes[slot_nodes[k]];

		if (ForestNodeGoesLeft(tiled->forest, node,
							   TiledRowValue(tiled->forest, row, node->feature)))
			mask |= 1u << k;
	}
	return mask;
}

/* Walk one tiled tree for one row; return the tree-local leaf, as ForestWalkTree */
int32_t
TiledWalkTree(const TiledForest *tiled, int32_t tree, const void *row)
{
	const TiledTree *ttree = &tiled->trees[tree];
	const ForestNode *nodes = tiled->forest->nodes +
		tiled->forest->trees[ttree->source].first_node;
	int32_t		n = tiled->tile_size;
	TileRef		ref = ttree->root;

	while (!TILE_REF_IS_LEAF(ref))
	{
		int64_t		tile = ttree->first_tile + ref;
		uint32_t	mask = TileMask(tiled, nodes, tile, row);
		int			child = tiled->lut[((size_t) tiled->tile_lut_rows[tile] << n) | mask];

		ref = tiled->tile_children[tile * (n + 1) + child];
	}
	return TILE_REF_LEAF(ref);
}

/* Is tile t of a tree a dummy tile (every slot padding)? */
static inline bool
IsDummyTile(const TiledForest *tiled, int64_t tile)
{
	return tiled->tile_padding[tile] == (uint8_t) ((1u << tiled->tile_size) - 1);
}

/*
 * Does the edge ref of a tile at level lead to target, a node of the tree,
 * the way the Forest's edge does?  A leaf may hide below a chain of dummy
 * tiles; a split must be slot 0 of the tile the edge names, a real slot.
 */
static bool
RefLeadsTo(const TiledForest *tiled, const TiledTree *tree, TileRef ref,
		   int32_t target, int32_t level, bool *depth_ok)
{
	int32_t		n = tiled->tile_size;
	int64_t		tile;

	if (TILE_REF_IS_LEAF(ref))
	{
		if (tree->padded && level + 1 != tree->depth)
			*depth_ok = false;
		return TILE_REF_LEAF(ref) == target;
	}
	if (ref >= tree->num_tiles)
		return false;
	tile = tree->first_tile + ref;
	if (IsDummyTile(tiled, tile))
	{
		TileRef		next = tiled->tile_children[tile * (n + 1)];

		for (int32_t e = 1; e <= n; e++)
			if (tiled->tile_children[tile * (n + 1) + e] != next)
				return false;
		if (!TILE_REF_IS_LEAF(next) && next <= ref)
			return false;		/* chains only go forward */
		return RefLeadsTo(tiled, tree, next, target, level + 1, depth_ok);
	}
	return (tiled->tile_padding[tile] & 1) == 0 &&
		tiled->tile_nodes[tile * n] == target;
}

/*
 * Does an edge of a tile, given as the shape gives it (a slot inside the
 * tile, or -1 - e for child e), lead to target, the node the Forest's edge
 * reaches?  An edge into a padding slot must lead there by both of the
 * padding slot's edges.
 */
static bool
EdgeLeadsTo(const TiledForest *tiled, const TiledTree *tree, int64_t tile,
			int32_t level, int32_t edge, int32_t target, bool *depth_ok)
{
	const TileShape *shape = &tiled->shapes->shapes[tiled->tile_shapes[tile]];
	int32_t		n = tiled->tile_size;

	if (edge < 0)
		return RefLeadsTo(tiled, tree, tiled->tile_children[tile * (n + 1) + (-1 - edge)],
						  target, level, depth_ok);
	if (((tiled->tile_padding[tile] >> edge) & 1) == 0)
		return tiled->tile_nodes[tile * n + edge] == target;
	return EdgeLeadsTo(tiled, tree, tile, level, shape->child[edge][0], target,
					   depth_ok) &&
		EdgeLeadsTo(tiled, tree, tile, level, shape->child[edge][1], target,
					depth_ok);
}

/* Do all slots of a tile name split nodes of the tree? */
static bool
SlotsAreSplits(const TiledForest *tiled, const ForestNode *nodes,
			   int32_t num_nodes, int64_t tile)
{
	for (int32_t k = 0; k < tiled->tile_size; k++)
	{
		int32_t		node = tiled->tile_nodes[tile * tiled->tile_size + k];

		if (node < 0 || node >= num_nodes || nodes[node].kind == FOREST_NODE_LEAF)
			return false;
	}
	return true;
}

/* Check one real tile: slots, padding, and where every edge leads */
static bool
CheckTile(const TiledForest *tiled, const TiledTree *tree, const ForestNode *nodes,
		  int64_t tile, int32_t level, int32_t *seen, bool *depth_ok)
{
	const TileShape *shape = &tiled->shapes->shapes[tiled->tile_shapes[tile]];
	int32_t		n = tiled->tile_size;
	const int32_t *slot_nodes = tiled->tile_nodes + tile * n;

	for (int32_t k = 0; k < n; k++)
	{
		const ForestNode *node = &nodes[slot_nodes[k]];

		if ((tiled->tile_padding[tile] >> k) & 1)
			continue;
		seen[slot_nodes[k]]++;
		if (!EdgeLeadsTo(tiled, tree, tile, level, shape->child[k][0], node->left,
						 depth_ok) ||
			!EdgeLeadsTo(tiled, tree, tile, level, shape->child[k][1], node->right,
						 depth_ok))
			return false;
	}
	/* a padding slot repeats its parent slot's comparison */
	for (int32_t k = 0; k < n; k++)
		for (int side = 0; side < 2; side++)
		{
			int32_t		c = shape->child[k][side];

			if (c >= 0 && ((tiled->tile_padding[tile] >> c) & 1) &&
				slot_nodes[c] != slot_nodes[k])
				return false;
		}
	return (tiled->tile_padding[tile] & 1) == 0;
}

/* Check one tree: its tiles cover each split once and lead as the Forest does */
static bool
CheckTree(const TiledForest *tiled, int32_t t, int32_t *seen, int32_t *level,
		  SilvanStatus *status)
{
	const TiledTree *tree = &tiled->trees[t];
	const ForestTree *ftree = &tiled->forest->trees[tree->source];
	const ForestNode *nodes = tiled->forest->nodes + ftree->first_node;
	int32_t		n = tiled->tile_size;
	bool		depth_ok = true;

	memset(seen, 0, sizeof(int32_t) * (size_t) ftree->num_nodes);
	if (nodes[0].kind == FOREST_NODE_LEAF)
		return tree->num_tiles == 0 && tree->root == TILE_REF_OF_LEAF(0) ? true :
			StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
					   "Tree %d is a leaf but has %d tiles.", t, tree->num_tiles);
	if (tree->root != 0 || tree->num_tiles < 1 ||
		!RefLeadsTo(tiled, tree, 0, 0, -1, &depth_ok))
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
						  "Tree %d does not start at its root split.", t);
	level[0] = 0;
	for (int32_t i = 1; i < tree->num_tiles; i++)
		level[i] = -1;
	for (int32_t i = 0; i < tree->num_tiles; i++)
	{
		int64_t		tile = tree->first_tile + i;

		if (level[i] < 0)
			return StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
							  "Tile %d of tree %d is not reachable.", i, t);

		/* children come after their tile: a tile's level is its parent's + 1 */
		for (int32_t e = 0; e <= n; e++)
		{
			TileRef		ref = tiled->tile_children[tile * (n + 1) + e];

			if (!TILE_REF_IS_LEAF(ref) && ref <= i)
				return StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
								  "Tile %d of tree %d points back to tile %d.", i, t, ref);
			if (!TILE_REF_IS_LEAF(ref) && ref < tree->num_tiles)
				level[ref] = level[i] + 1;
		}
		if (tiled->tile_shapes[tile] < 0 ||
			tiled->tile_shapes[tile] >= tiled->shapes->num_shapes ||
			tiled->tile_lut_rows[tile] < 0 ||
			tiled->tile_lut_rows[tile] >= tiled->num_lut_rows ||
			tiled->lut_shapes[tiled->tile_lut_rows[tile]] != tiled->tile_shapes[tile])
			return StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
							  "Tile %d of tree %d has a bad shape or LUT row.", i, t);
		if (level[i] >= tree->depth ||
			!SlotsAreSplits(tiled, nodes, ftree->num_nodes, tile) ||
			(!IsDummyTile(tiled, tile) &&
			 !CheckTile(tiled, tree, nodes, tile, level[i], seen, &depth_ok)))
			return StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
							  "Tile %d of tree %d does not lead where the tree does.",
							  i, t);
	}
	for (int32_t i = 0; i < ftree->num_nodes; i++)
		if (seen[i] != (nodes[i].kind == FOREST_NODE_LEAF ? 0 : 1))
			return StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
							  "Node %d of tree %d is in %d tiles.", i, t, seen[i]);
	if (!depth_ok)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "bad tiled tree",
						  "Tree %d is marked padded but reaches a leaf early.", t);
	return true;
}

/*
 * Check that every tree's tiles cover its splits exactly once, that every
 * edge of every tile (through padding slots and dummy tiles) leads where
 * the Forest's edge leads, and the shape, LUT and depth bookkeeping.
 */
bool
TiledForestCheck(const TiledForest *tiled, SilvanStatus *status)
{
	const Forest *forest = tiled->forest;
	int32_t		max_nodes = 1;
	int32_t		max_tiles = 1;
	int32_t    *seen;
	int32_t    *level;
	bool		ok = true;

	for (int32_t t = 0; t < tiled->num_trees; t++)
	{
		if (forest->trees[t].num_nodes > max_nodes)
			max_nodes = forest->trees[t].num_nodes;
		if (tiled->trees[t].num_tiles > max_tiles)
			max_tiles = tiled->trees[t].num_tiles;
	}
	seen = malloc(sizeof(int32_t) * (size_t) max_nodes);
	level = malloc(sizeof(int32_t) * (size_t) max_tiles);
	if (seen == NULL || level == NULL)
		ok = StatusNoMemory(status, "the tiling check");
	for (int32_t t = 0; ok && t < tiled->num_trees; t++)
		ok = CheckTree(tiled, t, seen, level, status);
	free(seen);
	free(level);
	return ok;
}

/* Sort key of a tree for grouping walks of the same kind and length */
typedef struct TreeOrderKey
{
	int32_t		depth;
	int32_t		kind;			/* 0 padded, 1 uniform, 2 probabilistic */
	int32_t		peel_depth;		/* probabilistic trees only */
	int32_t		index;
} TreeOrderKey;

/* Compare two trees by depth, walk kind, peel depth, then model order */
static int
CompareTreeOrder(const void *a, const void *b)
{
	const TreeOrderKey *x = a;
	const TreeOrderKey *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->peel_depth != y->peel_depth)
		return x->peel_depth < y->peel_depth ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Order trees by walk length (Treebeard's tree reordering): order[i] is the
 * tree to walk i-th.  Ties keep model order; among trees of one depth,
 * padded trees come first, then other uniform trees, then probabilistic
 * trees by peel depth, so that each kind of walk forms one run.
 */
bool
TiledForestOrderByDepth(const TiledForest *tiled, int32_t *order, SilvanStatus *status)
{
	TreeOrderKey *keys = malloc(sizeof(TreeOrderKey) * ((size_t) tiled->num_trees + 1));

	if (keys == NULL)
		return StatusNoMemory(status, "the tree order");
	for (int32_t t = 0; t < tiled->num_trees; t++)
	{
		const TiledTree *tree = &tiled->trees[t];

		keys[t].depth = tree->depth;
		keys[t].kind = tree->padded ? 0 : tree->probabilistic ? 2 : 1;
		keys[t].peel_depth = tree->probabilistic ? tree->peel_depth : 0;
		keys[t].index = t;
	}
	qsort(keys, (size_t) tiled->num_trees, sizeof(TreeOrderKey), CompareTreeOrder);
	for (int32_t t = 0; t < tiled->num_trees; t++)
		order[t] = keys[t].index;
	free(keys);
	return true;
}

/* Gather the statistics shown by explain */
void
TiledForestStats(const TiledForest *tiled, TilingStats *stats)
{
	int32_t		n = tiled->tile_size;
	int64_t		depth_sum = 0;
	int64_t		real_tiles;

	memset(stats, 0, sizeof(*stats));
	stats->num_trees = tiled->num_trees;
	stats->num_tiles = tiled->num_tiles;
	stats->min_tiles = tiled->num_trees > 0 ? INT32_MAX : 0;
	for (int32_t t = 0; t < tiled->num_trees; t++)
	{
		const TiledTree *tree = &tiled->trees[t];

		stats->num_probabilistic += tree->probabilistic;
		stats->num_padded += tree->padded;
		stats->num_dummy_tiles += tree->num_dummy_tiles;
		if (tree->num_tiles < stats->min_tiles)
			stats->min_tiles = tree->num_tiles;
		if (tree->num_tiles > stats->max_tiles)
			stats->max_tiles = tree->num_tiles;
		if (tree->depth > stats->max_depth)
			stats->max_depth = tree->depth;
		depth_sum += tree->depth;
	}
	for (int64_t t = 0; t < tiled->num_tiles; t++)
	{
		if (IsDummyTile(tiled, t))
			continue;
		for (int32_t k = 0; k < n; k++)
		{
			if ((tiled->tile_padding[t] >> k) & 1)
				stats->num_padding_slots++;
			else
				stats->num_split_nodes++;
		}
	}
	real_tiles = stats->num_tiles - stats->num_dummy_tiles;
	if (tiled->num_trees > 0)
	{
		stats->avg_tiles = (double) tiled->num_tiles / tiled->num_trees;
		stats->avg_depth = (double) depth_sum / tiled->num_trees;
	}
	stats->avg_fill = real_tiles > 0 ?
		(double) stats->num_split_nodes / ((double) real_tiles * n) : 0.0;
	stats->num_shapes_used = tiled->num_lut_rows;
	stats->lut_bytes = (size_t) tiled->num_lut_rows << n;
}

/* Describe one tile on one line */
static void
DumpTile(TextBuf *buf, const TiledForest *tiled, const TiledTree *tree, int32_t i)
{
	int64_t		tile = tree->first_tile + i;
	int32_t		n = tiled->tile_size;
	char		shape[64];

	if (IsDummyTile(tiled, tile))
		TextAppend(buf, "    t%d: dummy, repeats n%d ->", i, tiled->tile_nodes[tile * n]);
	else
	{
		TileShapeFormat(tiled->shapes, tiled->tile_shapes[tile], shape, sizeof(shape));
		TextAppend(buf, "    t%d: shape %d %s [", i, tiled->tile_shapes[tile], shape);
		for (int32_t k = 0; k < n; k++)
			TextAppend(buf, "%s%sn%d", k > 0 ? " " : "",
					   (tiled->tile_padding[tile] >> k) & 1 ? "=" : "",
					   tiled->tile_nodes[tile * n + k]);
		TextAppend(buf, "] ->");
	}
	for (int32_t e = 0; e <= n; e++)
	{
		TileRef		ref = tiled->tile_children[tile * (n + 1) + e];

		if (TILE_REF_IS_LEAF(ref))
			TextAppend(buf, " leaf n%d", TILE_REF_LEAF(ref));
		else
			TextAppend(buf, " t%d", ref);
	}
	TextAppend(buf, "\n");
}

/* Append one tiled tree as text: a header line and a line per tile */
void
TiledTreeDump(TextBuf *buf, const TiledForest *tiled, int32_t t)
{
	const TiledTree *tree = &tiled->trees[t];

	TextAppend(buf, "  tree %d (group %d, %d tiles, depth %d, %s%s",
			   tree->source, tree->group, tree->num_tiles, tree->depth,
			   tree->probabilistic ? "probabilistic" : "uniform",
			   tree->padded ? ", padded" : "");
	if (tree->peel_depth > 0)
		TextAppend(buf, ", peel %d", tree->peel_depth);
	TextAppend(buf, ")%s\n", tree->num_tiles == 0 ? ": leaf n0" : ":");
	for (int32_t i = 0; i < tree->num_tiles; i++)
		DumpTile(buf, tiled, tree, i);
}

/*
 * List the shapes in use with their tile counts, most used first: the
 * first few, or all of them.
 */
static void
DumpShapesUsed(TextBuf *buf, const TiledForest *tiled, int32_t limit)
{
	int64_t    *count = calloc((size_t) tiled->num_lut_rows + 1, sizeof(int64_t));
	char		shape[64];

	if (count == NULL)
	{
		buf->failed = true;
		return;
	}
	for (int64_t t = 0; t < tiled->num_tiles; t++)
		count[tiled->tile_lut_rows[t]]++;
	for (int32_t shown = 0; shown < limit && shown < tiled->num_lut_rows; shown++)
	{
		int32_t		best = 0;

		for (int32_t r = 1; r < tiled->num_lut_rows; r++)
			if (count[r] > count[best])
				best = r;
		TileShapeFormat(tiled->shapes, tiled->lut_shapes[best], shape, sizeof(shape));
		TextAppend(buf, "    lut row %d: shape %d %s, %lld tiles\n", best,
				   tiled->lut_shapes[best], shape, (long long) count[best]);
		count[best] = -1;
	}
	if (limit < tiled->num_lut_rows)
		TextAppend(buf, "    (%d more shapes)\n", tiled->num_lut_rows - limit);
	free(count);
}

/* The tiled forest as text: a summary, shapes used, optionally every tile */
char *
TiledForestDump(const TiledForest *tiled, bool with_tiles)
{
	TextBuf		buf = {0};
	TilingStats stats;

	TiledForestStats(tiled, &stats);
	TextAppend(&buf, "tiling: tile size %d, %s, %d trees (%d by probability, %d padded), "
			   "%lld tiles (%lld dummy)\n",
			   tiled->tile_size,
			   tiled->options.tiling == TREE_TILING_PROBABILISTIC ? "probabilistic" : "uniform",
			   stats.num_trees, stats.num_probabilistic, stats.num_padded,
			   (long long) stats.num_tiles, (long long) stats.num_dummy_tiles);
	if (tiled->profile_rows > 0)
		TextAppend(&buf, "  profile: %lld rows, skewed when %g of the leaves take more than %g of them\n",
				   (long long) tiled->profile_rows, tiled->options.skew_leaf_fraction,
				   tiled->options.skew_hit_fraction);
	TextAppend(&buf, "  fill %.3f (%lld nodes, %lld padding slots); tiles per tree "
			   "min %d avg %.1f max %d; depth avg %.2f max %d\n",
			   stats.avg_fill, (long long) stats.num_split_nodes,
			   (long long) stats.num_padding_slots, stats.min_tiles, stats.avg_tiles,
			   stats.max_tiles, stats.avg_depth, stats.max_depth);
	TextAppend(&buf, "  lut: %d of %d shapes, %zu bytes\n", stats.num_shapes_used,
			   tiled->shapes->num_shapes, stats.lut_bytes);
	DumpShapesUsed(&buf, tiled, with_tiles ? tiled->num_lut_rows : 8);
	for (int32_t t = 0; with_tiles && t < tiled->num_trees; t++)
		TiledTreeDump(&buf, tiled, t);
	return TextFinish(&buf);
}

/* Release a tiled forest (not the Forest, profile or cached shapes) */
void
TiledForestFree(TiledForest *tiled)
{
	if (tiled == NULL)
		return;
	free(tiled->trees);
	free(tiled->tile_nodes);
	free(tiled->tile_padding);
	free(tiled->tile_shapes);
	free(tiled->tile_lut_rows);
	free(tiled->tile_children);
	free(tiled->lut_shapes);
	free(tiled->lut);
	free(tiled);
}
