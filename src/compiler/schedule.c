/*
 * schedule.c
 *		Default schedules, written as loop nests of the schedule language.
 *
 * The default is XGBoost's own strategy made explicit: tile the batch, walk
 * every tree over one tile of rows at a time, and walk several rows of the
 * tile in lock-step through each tree:
 *
 *   tile(batch, b0, b1, 512); reorder(b0, tree, b1);
 *   tile(b1, b2, b3, 16); interleave(b3); unrollWalk(b3, 8); parallel(b0)
 *
 * The tile keeps its rows in the L1 cache while all trees pass over them;
 * the tree's nodes stay hot across the rows of the tile; interleaving the
 * 16 rows of b3 hides the latency of each walk's dependent loads.
 * unrollWalk(b3, d) pads every tree up to depth d so that its walk has a
 * fixed number of hops and no leaf tests.  Tiles of rows are independent,
 * so b0 runs on the runtime's threads (as XGBoost's own loop does); with
 * silvan.max_threads = 1 it is an ordinary loop, and results are the same
 * bit for bit either way.
 *
 * That is the lock-step walk's default (walk_lockstep.c, from
 * ScheduleRowTiles here); other walk strategies claim the forests they
 * walk faster (ScheduleDefault asks them in order, walk.h).  The host
 * profile (host_profile.h) says what depends on the machine: 16 or 8 rows
 * in lock-step, vector walks, branchy or select code walks.
 *
 * The default is written as schedule text and parsed, so that it prints
 * (ScheduleToText) and stores like any user schedule.  ScheduleTiled builds
 * the same family of nests directly in the structure, without text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/compiler.h"
#include "silvan/host_profile.h"
#include "silvan/mir.h"
#include "silvan/repr.h"

/* Rows whose values fill about this many bytes make one tile */
#define SCHEDULE_TILE_BYTES		16384
#define SCHEDULE_MIN_TILE		64
#define SCHEDULE_MAX_TILE		1024
/* Rows of a default vector walk's tile, at least (walk_vector.c) */
#define SCHEDULE_VECTOR_TILE	128
#define SCHEDULE_CATEGORICAL_INTERLEAVE	8
/* Forests whose records outgrow this are walked in blocks of trees this big */
#define SCHEDULE_FOREST_L2_BYTES	(1024 * 1024)
#define SCHEDULE_TREE_BLOCK_BYTES	(256 * 1024)
/* gpu default: rows per block (one thread each) */
#define SCHEDULE_GPU_BLOCK_ROWS		64

/* Largest power of two not above n (n >= 1) */
static int32_t
FloorPow2(int64_t n)
{
	int32_t		p = 1;

	while ((int64_t) p * 2 <= n && p < (1 << 30))
		p *= 2;
	return p;
}

/* Does the forest have categorical splits? */
bool
ScheduleHasCategorical(const Forest *forest)
{
	for (int64_t i = 0; i < forest->num_nodes; i++)
		if (forest->nodes[i].kind == FOREST_NODE_CATEGORICAL)
			return true;
	return false;
}

/* Add an index variable; returns its number */
static int
AddVar(Schedule *s, const char *name, IndexKind kind, IndexOrigin origin,
	   int parent, int64_t param)
{
	int			v = s->num_vars++;
	IndexVar   *var = &s->vars[v];

	memset(var, 0, sizeof(IndexVar));
	snprintf(var->name, sizeof(var->name), "%s", name);
	var->kind = kind;
	var->origin = origin;
	var->parent = (int16_t) parent;
	var->children[0] = var->children[1] = -1;
	var->copy_of = -1;
	var->param = param;
	return v;
}

/* Tile variable v into outer and inner; returns the inner one */
static int
TileVar(Schedule *s, int v, const char *outer, const char *inner, int64_t size)
{
	int			o = AddVar(s, outer, s->vars[v].kind, INDEX_ORIGIN_TILE_OUTER, v, size);
	int			i = AddVar(s, inner, s->vars[v].kind, INDEX_ORIGIN_TILE_INNER, v, size);

	s->vars[v].children[0] = (int16_t) o;
	s->vars[v].children[1] = (int16_t) i;
	return i;
}

/* Make the loop nest a chain of the given variables, outermost first */
static void
ChainLoops(Schedule *s, const int *vars, int n)
{
	s->num_loops = n;
	for (int i = 0; i < n; i++)
		s->loops[i] = (ScheduleLoop) {
			.var = (int16_t) vars[i],
			.first_child = (int16_t) (i + 1 < n ? i + 1 : -1),
			.next_sibling = -1
		};
	s->root_loop = 0;
}

/*
 * The family of XGBoost-like schedules: batch_tile rows per tile (0: no
 * batch tile, trees outermost), interleave rows in lock-step (1: none),
 * trees up to unroll_depth padded (0: none).
 */
void
ScheduleTiled(Schedule *s, int32_t batch_tile, int32_t interleave,
			  int32_t unroll_depth, const char *representation)
{
	int			batch;
	int			tree;
	int			rows;
	int			chain[4];
	int			n = 0;

	memset(s, 0, sizeof(Schedule));
	batch = AddVar(s, "batch", INDEX_BATCH, INDEX_ORIGIN_ROOT, -1, 0);
	tree = AddVar(s, "tree", INDEX_TREE, INDEX_ORIGIN_ROOT, -1, 0);
	rows = batch;
	if (batch_tile > 0)
	{
		rows = TileVar(s, batch, "b0", "b1", batch_tile);
		chain[n++] = s->vars[batch].children[0];
	}
	chain[n++] = tree;
	if (interleave > 1)
	{
		rows = TileVar(s, rows, batch_tile > 0 ? "b2" : "b0",
					   batch_tile > 0 ? "b3" : "b1", interleave);
		chain[n++] = s->vars[s->vars[rows].parent].children[0];
		s->vars[rows].interleave = true;
	}
	chain[n++] = rows;
	s->vars[rows].walk_args[0] = unroll_depth;	/* the lock-step walk's unrollWalk */
	ChainLoops(s, chain, n);
	snprintf(s->representation, sizeof(s->representation), "%s",
			 representation ? representation : "array");
	s->tile_size = 1;
	s->tiling = TREE_TILING_UNIFORM;
}

/*
 * The same family as ScheduleTiled, as schedule text parsed into schedule;
 * false if the text does not parse (it always should).  tree_block > 0
 * adds blocks of that many trees, each passing over the whole batch (in
 * parallel chunks of 4 batch tiles) before the next block starts.
 * vector_lanes > 0 interleaves that many rows (a tile of them where the
 * batch tile is larger) in place of interleave; walk names the innermost
 * row loop's walk directive (NULL: none), walk_args what follows the
 * loop's name in it.
 */
static bool
ScheduleParseTiled(Schedule *schedule, int32_t batch_tile, int32_t interleave,
				   int32_t tree_block, const char *representation, int32_t vector_lanes,
				   const char *walk, const char *walk_args)
{
	char		text[640];
	int			n = 0;
	const char *rows = "batch";
	const char *parallel = "b0";
	SilvanStatus status;

	if (batch_tile > 0 && tree_block > 0)
	{
		n += snprintf(text + n, sizeof(text) - n,
					  "tile(batch, p0, p1, %d)\ntile(p1, b0, b1, %d)\n"
					  "tile(tree, t0, t1, %d)\nreorder(p0, t0, b0, t1, b1)\n",
					  4 * batch_tile, batch_tile, tree_block);
		rows = "b1";
		parallel = "p0";
	}
	else if (batch_tile > 0)
	{
		n += snprintf(text + n, sizeof(text) - n,
					  "tile(batch, b0, b1, %d)\nreorder(b0, tree, b1)\n", batch_tile);
		rows = "b1";
	}
	else
		n += snprintf(text + n, sizeof(text) - n, "reorder(tree, batch)\n");
	if (vector_lanes > 0)
	{
		/* the lanes are a tile's inner loop of at most vector_lanes rows */
		if (batch_tile == 0 || batch_tile > vector_lanes)
		{
			const char *inner = batch_tile > 0 ? "b3" : "b1";

			n += snprintf(text + n, sizeof(text) - n, "tile(%s, %s, %s, %d)\n", rows,
						  batch_tile > 0 ? "b2" : "b0", inner, vector_lanes);
			rows = inner;
		}
		n += snprintf(text + n, sizeof(text) - n, "interleave(%s)\n", rows);
		interleave = 1;
	}
	if (interleave > 1)
	{
		const char *outer = batch_tile > 0 ? "b2" : "b0";
		const char *inner = batch_tile > 0 ? "b3" : "b1";

		n += snprintf(text + n, sizeof(text) - n, "tile(%s, %s, %s, %d)\ninterleave(%s)\n",
					  rows, outer, inner, interleave, inner);
		rows = inner;
	}
	if (walk != NULL)
		n += snprintf(text + n, sizeof(text) - n, "%s(%s%s)\n", walk, rows, walk_args);
	if (batch_tile > 0)
		n += snprintf(text + n, sizeof(text) - n, "parallel(%s)\n", parallel);
	snprintf(text + n, sizeof(text) - n, "representation(%s)\n", representation);
	return ScheduleParse(text, schedule, &status);
}

/*
 * Trees per block when the forest's records outgrow the L2 cache, else 0.
 * Records take about the value size plus 8 bytes per node.
 */
static int32_t
TreeBlock(const Forest *forest)
{
	int64_t		bytes = forest->num_nodes * (int64_t) (ForestValueSize(forest) + 8);
	int64_t		per_tree = forest->num_trees > 0 ? bytes / forest->num_trees : 0;
	int64_t		block;

	if (bytes <= SCHEDULE_FOREST_L2_BYTES || per_tree <= 0)
		return 0;
	block = SCHEDULE_TREE_BLOCK_BYTES / per_tree;
	if (block < 1)
		block = 1;
	return block >= forest->num_trees ? 0 : (int32_t) block;
}

/* Splits of the forest, and of its largest tree */
int64_t
ScheduleCountSplits(const Forest *forest, int64_t *largest)
{
	int64_t		total = 0;

	*largest = 0;
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		const ForestTree *tree = &forest->trees[t];
		int64_t		n = 0;

		for (int64_t i = tree->first_node; i < tree->first_node + tree->num_nodes; i++)
			n += forest->nodes[i].kind != FOREST_NODE_LEAF;
		*largest = n > *largest ? n : *largest;
		total += n;
	}
	return total;
}

/*
 * The default's nest of row tiles (walk_lockstep.c, walk_vector.c): a
 * batch tile of about SCHEDULE_TILE_BYTES of rows (at least
 * SCHEDULE_VECTOR_TILE rows for vector lanes), none when the batch fits
 * one; within it the host profile's rows in lock-step (8 for forests with
 * categorical splits, whose steps are longer), or vector_lanes rows; the
 * layout the forest's default is (ReprDefaultFor).  The tile size
 * matters little.
 *
 * A forest whose records outgrow a core's L2 cache (taken to be
 * SCHEDULE_FOREST_L2_BYTES) would be streamed from L3 once per batch tile.
 * It is walked in blocks of trees that fit in a quarter of L2 instead,
 * each block passing over the whole batch, in parallel chunks of four
 * batch tiles.  Each row still adds its trees in model order.
 */
void
ScheduleRowTiles(const Forest *forest, int32_t batch_size, const HostProfile *host,
				 int32_t vector_lanes, const char *walk, const char *walk_args,
				 int32_t unroll, Schedule *schedule)
{
	int64_t		row_bytes = (int64_t) forest->num_features * (int64_t) ForestValueSize(forest);
	int32_t		tile = FloorPow2(SCHEDULE_TILE_BYTES / (row_bytes > 0 ? row_bytes : 1));
	int32_t		interleave = ScheduleHasCategorical(forest) ?
		SCHEDULE_CATEGORICAL_INTERLEAVE : HostProfileInterleave(host);
	const char *representation = ReprDefaultFor(forest)->name;

	if (tile < SCHEDULE_MIN_TILE)
		tile = SCHEDULE_MIN_TILE;
	if (tile > SCHEDULE_MAX_TILE)
		tile = SCHEDULE_MAX_TILE;
	if (vector_lanes > 0 && tile < SCHEDULE_VECTOR_TILE)
		tile = SCHEDULE_VECTOR_TILE;
	if (batch_size > 0 && batch_size <= tile)
		tile = 0;
	if (!ScheduleParseTiled(schedule, tile, interleave, tile > 0 ? TreeBlock(forest) : 0,
							representation, vector_lanes, walk, walk_args))
		ScheduleTiled(schedule, tile, interleave, unroll, representation);
}

/*
 * Pick the default schedule for a forest and a typical batch size: the
 * walk strategies (walk.h) are asked in the order of their default_rank,
 * and the first that claims the forest writes the schedule.  The code
 * walk claims LightGBM's forests (walk_code.c), the vector walk float
 * forests in the perfect layout on hosts whose profile has it
 * (walk_vector.c), the lock-step walk every other (walk_lockstep.c).
 */
void
ScheduleDefault(const Forest *forest, int32_t batch_size, const HostProfile *host,
				Schedule *schedule)
{
	HostProfile fallback;
	const WalkStrategy *tried = NULL;

	if (host == NULL)
	{
		HostProfileFallback(&fallback);
		host = &fallback;
	}
	for (;;)
	{
		const WalkStrategy *next = NULL;

		/* the strategy of least rank above the last one tried */
		for (int k = 0; k < WalkNumStrategies(); k++)
		{
			const WalkStrategy *w = WalkStrategyOf(k);

			if (w->default_rank > 0 && w->default_schedule != NULL &&
				(tried == NULL || w->default_rank > tried->default_rank) &&
				(next == NULL || w->default_rank < next->default_rank))
				next = w;
		}
		if (next == NULL)
			break;
		if (next->default_schedule(forest, batch_size, host, schedule))
			return;
		tried = next;
	}
	ScheduleInitDefault(schedule);
}

/*
 * The default schedule of a gpu target: blocks of SCHEDULE_GPU_BLOCK_ROWS
 * rows over the grid, one thread per row, each thread adding its row's
 * trees in model order, so the sums are the cpu's bit for bit.  (Tree
 * threads, shared-memory staging and Algorithm 1's search come with the
 * tuner's gpu timing; see TuneGpuText.)
 */
void
ScheduleGpuDefault(const Forest *forest, int32_t batch_size, Schedule *schedule)
{
	SilvanStatus ignored;
	char		text[160];

	snprintf(text, sizeof(text),
			 "tile(batch, b0, b1, %d)\ngpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)\n",
			 SCHEDULE_GPU_BLOCK_ROWS);
	if (!ScheduleParse(text, schedule, &ignored))
		ScheduleInitDefault(schedule);
}
