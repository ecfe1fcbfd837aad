/*
 * tune_space.c
 *		The bounded schedule spaces of the tuner: template parameters,
 *		their expansion into schedule text, and which points are searched.
 *
 * A CPU point expands into one of four loop-nest templates:
 *
 *   rows outside trees    tile(batch, b0, b1, T); reorder(b0, tree, b1)
 *                         [tile(b1, b2, b3, k); interleave(b3)]  walk on b1/b3
 *   trees outermost       reorder(tree, batch) [tile(batch, b0, b1, k); ...]
 *   blocks of code        (code walks, no interleave) tile(batch, b0, b1, T);
 *                         tile(tree, t0, t1, B); reorder(b0, t0, b1, t1)
 *   blocks of trees (L2) tile(batch, p0, p1, 4T); tile(p1, b0, b1, T);
 *                         tile(tree, t0, t1, B); reorder(p0, t0, b0, t1, b1)
 *   blocks of trees (L1) tile(batch, b0, b1, T); tile(tree, t0, t1, B);
 *                         reorder(b0, t0, t1, b1)
 *
 * with parallel(b0) (or p0) for rows, and tree chunks tile(tree, t0, t1,
 * C); parallel(t0) for trees.  The walk directive goes on the innermost
 * row loop; code walks put specialize() on the tree loop.  The layout
 * lines (representation, tileTrees, reorderTrees) close the text.
 *
 * Validity is decided here, from the model's shape and the batch size,
 * so that the search never times a point that cannot help: a tile of rows
 * must be smaller than the batch, interleaving smaller than the rows it
 * splits, code walks a small forest or a deep one (TUNE_CODE_SPLITS in
 * code, whole trees or the top of each, a copy per lane when interleaved),
 * Treebeard tiles only with lock-step walks
 * and the array, sparse or reorg layouts (perfect walks one node per hop), a
 * profile for probabilistic tiling, more than one thread for parallel
 * trees, and inexact tuning for anything that reorders sums.  At one
 * thread a tiled batch is always marked parallel(b0), as the default
 * schedule is, so that a stored schedule scales when threads are added.
 *
 * The GPU space is Table 5 of seed 001 (5184 points); Algorithm 1 prunes
 * it to thread-block configurations by batch size and feature count, rows
 * cached, trees not, interleave 1/2/4, unrolled only when interleaved,
 * and every representation (36 points), then shared reduction on the top
 * three (tune_search.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/host_profile.h"
#include "silvan/mir.h"
#include "silvan/repr.h"
#include "silvan/schedule.h"
#include "silvan/tune.h"
#include "silvan/walk.h"

#define lengthof(a) (sizeof(a) / sizeof((a)[0]))

/* the exhaustive grid; the heuristic's first phase takes a coarser one */
static const int32_t row_tiles[] = {0, 32, 64, 128, 256, 512, 1024, 2048};
static const int32_t interleaves[] = {1, 2, 4, 8, 16};
static const int32_t phase1_row_tiles[] = {0, 64, 256, 1024};
static const int32_t phase1_interleaves[] = {1, 8, 16};
static const int32_t tile_sizes[] = {1, 4, 8};

#define TUNE_L2_BYTES		(512 * 1024)	/* L2 blocks of trees above this */
#define TUNE_BLOCK_BYTES	(256 * 1024)
#define TUNE_L1_BLOCK_BYTES	(24 * 1024)	/* L1 blocks: most of a 32 kB L1 */

/* Describe the model and the run the space is drawn for */
void
TuneShapeOf(const Forest *forest, int32_t batch_size, int32_t max_threads,
			bool exact, bool have_profile, const HostProfile *host, TuneShape *shape)
{
	HostProfile fallback;

	memset(shape, 0, sizeof(TuneShape));
	shape->num_trees = forest->num_trees;
	shape->num_features = forest->num_features;
	shape->max_depth = forest->max_depth;
	shape->forest_bytes = forest->num_nodes * (int64_t) (ForestValueSize(forest) + 8);
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		const ForestTree *tree = &forest->trees[t];
		int64_t		splits = 0;

		for (int64_t i = tree->first_node; i < tree->first_node + tree->num_nodes; i++)
		{
			splits += forest->nodes[i].kind != FOREST_NODE_LEAF;
			shape->categorical |= forest->nodes[i].kind == FOREST_NODE_CATEGORICAL;
		}
		shape->total_splits += splits;
		if (splits > shape->largest_tree_splits)
			shape->largest_tree_splits = splits;
	}
	shape->widest_category_span = ForestWidestCategorySpan(forest);
	shape->batch_size = batch_size > 0 ? batch_size : 1;
	shape->max_threads = max_threads > 0 ? max_threads : 1;
	shape->exact = exact;
	shape->have_profile = have_profile;
	if (host == NULL)
	{
		HostProfileFallback(&fallback);
		host = &fallback;
	}
	shape->vector_walk = HostProfileVectorWalk(host);
}

/* Trees per L2-sized block, or 0 when the forest fits or blocks are pointless */
static int32_t
TreeBlock(const TuneShape *shape)
{
	int64_t		per_tree;
	int64_t		block;

	if (shape->forest_bytes <= TUNE_L2_BYTES || shape->num_trees < 2)
		return 0;
	per_tree = shape->forest_bytes / shape->num_trees;
	block = per_tree > 0 ? TUNE_BLOCK_BYTES / per_tree : 0;
	if (block < 1)
		block = 1;
	return block >= shape->num_trees ? 0 : (int32_t) block;
}

/* Trees per L1-sized block inside a tile of rows, or 0 when pointless */
static int32_t
TreeBlockL1(const TuneShape *shape)
{
	int64_t		per_tree;
	int64_t		block;

	if (shape->num_trees < 2 || shape->forest_bytes <= TUNE_L1_BLOCK_BYTES)
		return 0;
	per_tree = shape->forest_bytes / shape->num_trees;
	block = per_tree > 0 ? TUNE_L1_BLOCK_BYTES / per_tree : 0;
	if (block < 1)
		block = 1;
	return block >= shape->num_trees ? 0 : (int32_t) block;
}

/* Trees per block of a kind; 0 when the forest has no use for it */
static int32_t
BlockSize(const TuneShape *shape, TuneBlocks blocks)
{
	return blocks == TUNE_BLOCKS_L2 ? TreeBlock(shape) :
		blocks == TUNE_BLOCKS_L1 ? TreeBlockL1(shape) : 0;
}

/* Trees per parallel chunk: two chunks per thread */
static int32_t
TreeChunk(const TuneShape *shape)
{
	int32_t		chunks = 2 * shape->max_threads;

	return (shape->num_trees + chunks - 1) / chunks;
}

/* Does the point add trees in another order than the model's? */
bool
TuneCpuReordersSums(const TuneCpuPoint *point)
{
	return point->parallel == TUNE_PARALLEL_TREES || point->parallel == TUNE_PARALLEL_BOTH ||
		point->reorder_trees;
}

/* Is the point in the space for this model and run? */
bool
TuneCpuValid(const TuneShape *shape, const TuneCpuPoint *p)
{
	int32_t		rows = p->row_tile > 0 ? p->row_tile : shape->batch_size;
	bool		parallel_trees = p->parallel == TUNE_PARALLEL_TREES ||
		p->parallel == TUNE_PARALLEL_BOTH;
	const WalkTuning *walk = WalkTuningAt(p->walk, NULL);
	const Representation *layout = ReprAt(p->representation);

	if (layout == NULL)
		return false;
	if (p->row_tile < 0 || (p->row_tile > 0 && p->row_tile >= shape->batch_size))
		return false;
	if (p->interleave < 1 || (p->interleave > 1 && p->interleave >= rows))
		return false;
	/* the thread count decides between none and rows */
	if (shape->max_threads == 1 && !parallel_trees &&
		p->parallel != (p->row_tile > 0 ? TUNE_PARALLEL_ROWS : TUNE_PARALLEL_NONE))
		return false;
	if ((p->parallel == TUNE_PARALLEL_ROWS || p->parallel == TUNE_PARALLEL_BOTH) && p->row_tile == 0)
		return false;
	if (parallel_trees && (shape->exact || shape->max_threads == 1 || shape->num_trees < 2))
		return false;
	if (p->reorder_trees && shape->exact)
		return false;
	/* the walk strategy's own conditions (walk.h) */
	if (walk == NULL || (walk->valid != NULL && !walk->valid(shape, p)))
		return false;
	if (p->tile_size != 1 && (!(walk->nest & WALK_NEST_TREE_TILES) || !layout->tree_tiles))
		return false;
	if (p->probabilistic && (!shape->have_profile || p->tile_size == 1))
		return false;
	if (p->blocks != TUNE_BLOCKS_NONE &&
		(BlockSize(shape, p->blocks) == 0 || p->row_tile == 0 || parallel_trees))
		return false;
	/* a layout that does not fit every forest: one the records the forest justifies */
	return layout->fits == NULL ||
		layout->fits(shape->num_trees, shape->max_depth, 2 * shape->total_splits + shape->num_trees);
}

/* Append to a text buffer; false once it overflows */
static bool
Put(char *text, size_t size, size_t *used, const char *fmt,...)
__attribute__((format(printf, 4, 5)));

static bool
Put(char *text, size_t size, size_t *used, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (*used >= size)
		return false;
	va_start(ap, fmt);
	n = vsnprintf(text + *used, size - *used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t) n >= size - *used)
		return false;
	*used += (size_t) n;
	return true;
}

/* The walk strategy's directive for the innermost row loop */
static bool
PutWalk(const TuneShape *shape, const WalkTuning *walk, const char *loop,
		char *text, size_t size, size_t *used)
{
	char		line[128];

	if (walk->directive == NULL)
		return true;
	return walk->directive(walk, shape, loop, line, sizeof(line)) &&
		Put(text, size, used, "%s", line);
}

/*
 * The loop nest of a point with rows innermost: the batch tile (or blocks
 * of trees), tree chunks for parallel trees, interleaving, the walk
 */
static bool
PutRowsInner(const TuneShape *shape, const TuneCpuPoint *p, char *text, size_t size, size_t *used)
{
	bool		tree_chunks = p->parallel == TUNE_PARALLEL_TREES || p->parallel == TUNE_PARALLEL_BOTH;
	const WalkTuning *walk = WalkTuningAt(p->walk, NULL);
	bool		vector = (walk->nest & WALK_NEST_VECTOR_LANES) != 0;
	const char *rows = "batch";
	bool		ok = true;

	if (p->blocks == TUNE_BLOCKS_L2)
	{
		ok = Put(text, size, used, "tile(batch, p0, p1, %d)\ntile(p1, b0, b1, %d)\n"
				 "tile(tree, t0, t1, %d)\nreorder(p0, t0, b0, t1, b1)\nparallel(p0)\n",
				 4 * p->row_tile, p->row_tile, BlockSize(shape, p->blocks));
		rows = "b1";
	}
	else if (p->blocks == TUNE_BLOCKS_L1)
	{
		ok = Put(text, size, used, "tile(batch, b0, b1, %d)\ntile(tree, t0, t1, %d)\n"
				 "reorder(b0, t0, t1, b1)\nparallel(b0)\n",
				 p->row_tile, BlockSize(shape, p->blocks));
		rows = "b1";
	}
	else if (p->row_tile > 0 && tree_chunks)
	{
		ok = Put(text, size, used, "tile(batch, b0, b1, %d)\ntile(tree, t0, t1, %d)\n"
				 "reorder(b0, t0, t1, b1)\nparallel(t0)\n%s", p->row_tile, TreeChunk(shape),
				 p->parallel == TUNE_PARALLEL_BOTH ? "parallel(b0)\n" : "");
		rows = "b1";
	}
	else if (p->row_tile > 0)
	{
		ok = Put(text, size, used, "tile(batch, b0, b1, %d)\nreorder(b0, tree, b1)\n%s",
				 p->row_tile, p->parallel == TUNE_PARALLEL_ROWS ? "parallel(b0)\n" : "");
		rows = "b1";
	}
	else if (tree_chunks)
		ok = Put(text, size, used, "tile(tree, t0, t1, %d)\nreorder(t0, t1, batch)\nparallel(t0)\n",
				 TreeChunk(shape));
	else
		ok = Put(text, size, used, "reorder(tree, batch)\n");
	/* vector lanes: a tile of at most MIR_MAX_VECTOR_WIDTH rows, interleaved */
	if (ok && vector && p->row_tile > 0 && p->row_tile <= MIR_MAX_VECTOR_WIDTH)
		ok = Put(text, size, used, "interleave(%s)\n", rows);
	else if (ok && p->interleave > 1)
	{
		const char *inner = p->row_tile > 0 ? "b3" : "b1";
		int32_t		lanes = vector ? MIR_MAX_VECTOR_WIDTH : p->interleave;

		ok = Put(text, size, used, "tile(%s, %s, %s, %d)\ninterleave(%s)\n", rows,
				 p->row_tile > 0 ? "b2" : "b0", inner, lanes, inner);
		rows = inner;
	}
	if (ok && (walk->nest & WALK_NEST_SPECIALIZE))
		ok = Put(text, size, used, "specialize(tree)\n");
	/* the row tile staged feature-major (bitvectors) */
	if (ok && (walk->nest & WALK_NEST_STAGE_ROWS) && p->row_tile > 0)
		ok = Put(text, size, used, "cache(b0)\n");
	return ok && PutWalk(shape, walk, rows, text, size, used);
}

/* Expand a CPU point into schedule text; false if invalid or too long */
bool
TuneCpuText(const TuneShape *shape, const TuneCpuPoint *p, char *text, size_t size)
{
	size_t		used = 0;
	bool		ok;
	int			own = 0;
	const WalkTuning *walk;

	if (size == 0 || !TuneCpuValid(shape, p))
		return false;
	text[0] = '\0';
	walk = WalkTuningAt(p->walk, NULL);
	/* a walk with a nest of its own (code walks a row at a time) writes it */
	if (walk->nest_text != NULL)
		own = walk->nest_text(walk, shape, p, text, size);
	if (own < 0)
		return false;
	used = strlen(text);
	ok = own > 0 || PutRowsInner(shape, p, text, size, &used);
	ok = ok && Put(text, size, &used, "representation(%s)\n", ReprAt(p->representation)->name);
	if (ok && p->tile_size > 1)
		ok = Put(text, size, &used, "tileTrees(%d, %s)\n", p->tile_size,
				 p->probabilistic ? "probabilistic" : "uniform");
	if (ok && p->reorder_trees)
		ok = Put(text, size, &used, "reorderTrees()\n");
	if (ok && p->full_codegen)
		ok = Put(text, size, &used, "fullCodegen()\n");
	return ok;
}

/* Add a point if it is valid and there is room; returns the new count */
static int
AddCpu(const TuneShape *shape, const TuneCpuPoint *p, TuneCpuPoint *points, int n, int max)
{
	if (n < max && TuneCpuValid(shape, p))
		points[n++] = *p;
	return n;
}

/* The parallel strategies worth timing for a tile of rows */
static int
ParallelOptions(const TuneShape *shape, int32_t row_tile, TuneParallel *out)
{
	int			n = 0;

	if (shape->max_threads == 1)
		out[n++] = row_tile > 0 ? TUNE_PARALLEL_ROWS : TUNE_PARALLEL_NONE;
	else
	{
		out[n++] = TUNE_PARALLEL_NONE;
		if (row_tile > 0)
			out[n++] = TUNE_PARALLEL_ROWS;
	}
	if (!shape->exact && shape->max_threads > 1)
	{
		out[n++] = TUNE_PARALLEL_TREES;
		if (row_tile > 0)
			out[n++] = TUNE_PARALLEL_BOTH;
	}
	return n;
}

/* Row tiles of the heuristic: at most three, trees outermost only up to 1024 rows */
static bool
HeuristicRowTile(const TuneShape *shape, int32_t tile)
{
	return !(tile == 0 && shape->batch_size > 1024);
}

/*
 * Phase 1 of the heuristic: loop structure and parallelism, array layout,
 * scalar nodes.  Interleave 1, 8 and 16; unrolled walks only interleaved;
 * peeled walks only alone; code walks one row at a time, bitvector code
 * walks only interleaved; vector walks (where the host has them) in the
 * perfect layout, their only one.
 */
int
TuneCpuPhase1(const TuneShape *shape, TuneCpuPoint *points, int max)
{
	int			n = 0;

	for (int t = 0; t < (int) lengthof(phase1_row_tiles); t++)
	{
		TuneParallel parallel[4];
		int			np = ParallelOptions(shape, phase1_row_tiles[t], parallel);

		if (!HeuristicRowTile(shape, phase1_row_tiles[t]))
			continue;
		for (int i = 0; i < (int) lengthof(phase1_interleaves); i++)
			for (int w = 0; w < WalkNumTunings(); w++)
				for (int q = 0; q < np; q++)
				{
					TuneCpuPoint p = {.parallel = parallel[q], .row_tile = phase1_row_tiles[t],
						.interleave = phase1_interleaves[i], .walk = w,
					.tile_size = 1};
					const WalkTuning *walk = WalkTuningAt(w, NULL);

					/* the walk says which points it takes (and may set their layout) */
					if (walk->first_phase != NULL && !walk->first_phase(&p))
						continue;
					n = AddCpu(shape, &p, points, n, max);
				}
	}
	return n;
}

/* Phase 2: every representation and Treebeard tiling around a good point */
int
TuneCpuRefineLayout(const TuneShape *shape, const TuneCpuPoint *base, TuneCpuPoint *points,
					int max)
{
	int			n = 0;

	for (int r = 0; r < ReprCount(); r++)
		for (int s = 0; s < (int) lengthof(tile_sizes); s++)
			for (int prob = 0; prob <= 1; prob++)
			{
				TuneCpuPoint p = *base;

				p.representation = r;
				p.tile_size = tile_sizes[s];
				p.probabilistic = prob;
				if (memcmp(&p, base, sizeof(p)) != 0)
					n = AddCpu(shape, &p, points, n, max);
			}
	return n;
}

/*
 * Phase 3: blocks of trees, (inexact) reordered trees and parallel trees,
 * and for code walks of more than TUNE_FULL_CODEGEN_SPLITS splits, LLVM's
 * full code generation (fullCodegen(): a compile several times longer for
 * a faster walk)
 */
int
TuneCpuRefineBlocking(const TuneShape *shape, const TuneCpuPoint *base, TuneCpuPoint *points,
					  int max)
{
	TuneCpuPoint p = *base;
	int			n = 0;

	for (int b = TUNE_BLOCKS_NONE; b <= TUNE_BLOCKS_L1; b++)
	{
		p = *base;
		p.blocks = (TuneBlocks) b;
		if (p.blocks != base->blocks)
			n = AddCpu(shape, &p, points, n, max);
	}
	p = *base;
	p.reorder_trees = !base->reorder_trees;
	n = AddCpu(shape, &p, points, n, max);
	/* a code walk the compile would generate fast: LLVM's full code generation */
	p = *base;
	p.full_codegen = !base->full_codegen;
	if ((WalkTuningAt(p.walk, NULL)->nest & WALK_NEST_FULL_CODEGEN) &&
		shape->total_splits > TUNE_FULL_CODEGEN_SPLITS)
		n = AddCpu(shape, &p, points, n, max);
	for (int q = TUNE_PARALLEL_TREES; q <= TUNE_PARALLEL_BOTH; q++)
	{
		p = *base;
		p.parallel = (TuneParallel) q;
		p.blocks = TUNE_BLOCKS_NONE;
		if (p.parallel != base->parallel)
			n = AddCpu(shape, &p, points, n, max);
	}
	return n;
}

/* Every valid point of the bounded CPU space */
int
TuneCpuExhaustive(const TuneShape *shape, TuneCpuPoint *points, int max)
{
	int			n = 0;

	for (int t = 0; t < (int) lengthof(row_tiles); t++)
	{
		TuneParallel parallel[4];
		int			np = ParallelOptions(shape, row_tiles[t], parallel);

		for (int i = 0; i < (int) lengthof(interleaves); i++)
			for (int w = 0; w < WalkNumTunings(); w++)
				for (int q = 0; q < np; q++)
					for (int r = 0; r < ReprCount(); r++)
						for (int s = 0; s < (int) lengthof(tile_sizes); s++)
							for (int prob = 0; prob <= 1; prob++)
								for (int b = TUNE_BLOCKS_NONE; b <= TUNE_BLOCKS_L1; b++)
									for (int ro = 0; ro <= 1; ro++)
									{
										TuneCpuPoint p = {
											.parallel = parallel[q], .row_tile = row_tiles[t],
											.interleave = interleaves[i], .walk = w,
											.blocks = (TuneBlocks) b, .representation = r,
											.tile_size = tile_sizes[s], .probabilistic = prob,
										.reorder_trees = ro};

										n = AddCpu(shape, &p, points, n, max);
									}
	}
	return n;
}

/* ---- GPU: Table 5 and Algorithm 1 ---- */

static const int32_t gpu_rows_per_block[] = {8, 32, 64};
static const int32_t gpu_rows_per_thread[] = {1, 2, 4};
static const int32_t gpu_tree_threads[] = {2, 10, 20, 50};
static const int32_t gpu_interleaves[] = {1, 2, 4};

/* Expand a GPU point into schedule text (gpuDimension, cache, sharedReduce) */
bool
TuneGpuText(const TuneShape *shape, const TuneGpuPoint *p, char *text, size_t size)
{
	int32_t		threads = p->tree_threads > 0 ? p->tree_threads : 1;
	int32_t		chunk = (shape->num_trees + threads - 1) / threads;
	const char *walk = "t1";
	size_t		used = 0;
	bool		ok;

	if (size == 0 || p->rows_per_block < 1 || p->rows_per_thread < 1 || p->interleave < 1 ||
		ReprAt(p->representation) == NULL)
		return false;
	text[0] = '\0';
	ok = Put(text, size, &used,
			 "tile(batch, b0, b1, %d)\ntile(b1, b2, b3, %d)\ntile(tree, t0, t1, %d)\n"
			 "reorder(b0, b2, t0, b3, t1)\ngpuDimension(b0, grid.x)\n"
			 "gpuDimension(b2, block.x)\ngpuDimension(t0, block.y)\n",
			 p->rows_per_block, p->rows_per_thread, chunk > 0 ? chunk : 1);
	if (ok && p->cache_rows)
		ok = Put(text, size, &used, "cache(b0)\n");
	if (ok && p->cache_trees)
		ok = Put(text, size, &used, "cache(t0)\n");
	if (ok && p->interleave > 1)
	{
		ok = Put(text, size, &used, "tile(t1, t2, t3, %d)\ninterleave(t3)\n", p->interleave);
		walk = "t3";
	}
	if (ok && p->unroll)
		ok = Put(text, size, &used, "unrollWalk(%s, %d)\n", walk,
				 shape->max_depth < TUNE_MAX_UNROLL ? (shape->max_depth > 0 ? shape->max_depth : 1) :
				 TUNE_MAX_UNROLL);
	if (ok && p->shared_reduce)
		ok = Put(text, size, &used, "sharedReduce(t0)\n");
	return ok && Put(text, size, &used, "representation(%s)\n",
					 ReprAt(p->representation)->name);
}

/*
 * Exact schedules add each row's trees in the model's order: one tree
 * thread, no shared reduction (tree threads add atomically, or in partial
 * sums, in whatever order the hardware picks)
 */
static const int32_t gpu_exact_tree_threads[] = {1};

/*
 * Every point of Table 5 whose block a GPU launches: 3 * 3 * 4 * 2 * 2 * 2
 * * 3 * 2 * 3 = 5184 before that; exact, 3 * 3 * 1 * 8 * 3 * 1 * 3 = 648
 */
int
TuneGpuExhaustive(const TuneShape *shape, TuneGpuPoint *points, int max)
{
	const int32_t *trees = shape->exact ? gpu_exact_tree_threads : gpu_tree_threads;
	int			num_trees = shape->exact ? 1 : 4;
	int			n = 0;

	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
			for (int c = 0; c < num_trees; c++)
				for (int flags = 0; flags < 8; flags++)
					for (int i = 0; i < 3; i++)
						for (int sr = 0; sr <= (shape->exact ? 0 : 1); sr++)
							for (int r = 0; r < ReprCount() && n < max; r++)
							{
								TuneGpuPoint p = {
									.rows_per_block = gpu_rows_per_block[a],
									.rows_per_thread = gpu_rows_per_thread[b],
									.tree_threads = trees[c],
									.cache_rows = flags & 1, .cache_trees = (flags >> 1) & 1,
									.unroll = (flags >> 2) & 1, .interleave = gpu_interleaves[i],
								.shared_reduce = sr, .representation = r};

								if (ReprAt(r)->gpu && TuneGpuBlockThreads(shape, &p) <= TUNE_GPU_MAX_BLOCK_THREADS)
									points[n++] = p;
							}
	return n;
}

/* Algorithm 1, TBConfigs: thread-block configurations by batch size and features */
void
TuneGpuBlockConfigs(int32_t batch_size, int32_t num_features,
					int32_t rows_per_block[2], int32_t tree_threads[2])
{
	const int32_t batch_threshold = 2048;
	const int32_t feature_threshold = 128;

	if (batch_size <= batch_threshold || num_features > feature_threshold)
	{
		rows_per_block[0] = 8, rows_per_block[1] = 32;
		tree_threads[0] = 20, tree_threads[1] = 50;
	}
	else
	{
		rows_per_block[0] = 32, rows_per_block[1] = 64;
		tree_threads[0] = 2, tree_threads[1] = 10;
	}
}

/*
 * Threads of a block under a point's schedule (TuneGpuText): rows per
 * block over rows per thread, times the tree loop's tiles
 */
int64_t
TuneGpuBlockThreads(const TuneShape *shape, const TuneGpuPoint *p)
{
	int32_t		threads = p->tree_threads > 0 ? p->tree_threads : 1;
	int32_t		chunk = (shape->num_trees + threads - 1) / threads;
	int64_t		tiles = chunk > 0 ? (shape->num_trees + chunk - 1) / chunk : 1;
	int64_t		rows = p->rows_per_thread > 0 ?
		(p->rows_per_block + p->rows_per_thread - 1) / p->rows_per_thread : p->rows_per_block;

	return rows * (tiles > 0 ? tiles : 1);
}

/*
 * Algorithm 1, lines 13-23: the first phase's points (shared reduction
 * comes after), but for blocks of more threads than a GPU launches
 * (TUNE_GPU_MAX_BLOCK_THREADS: many features with large batches ask for
 * 32 rows by 50 tree threads).  Exact: one tree thread (18 points).
 */
int
TuneGpuAlgorithm1(const TuneShape *shape, TuneGpuPoint *points, int max)
{
	int32_t		rows_per_block[2];
	int32_t		tree_threads[2];
	int			n = 0;

	TuneGpuBlockConfigs(shape->batch_size, shape->num_features, rows_per_block, tree_threads);
	if (shape->exact)
		tree_threads[0] = tree_threads[1] = 1;
	for (int a = 0; a < 2; a++)
		for (int c = 0; c < (shape->exact ? 1 : 2); c++)
			for (int i = 0; i < 3; i++)
				for (int r = 0; r < ReprCount() && n < max; r++)
				{
					TuneGpuPoint p = {
						.rows_per_block = rows_per_block[a], .rows_per_thread = 1,
						.tree_threads = tree_threads[c], .cache_rows = true,
						.cache_trees = false, .interleave = gpu_interleaves[i],
						.unroll = gpu_interleaves[i] != 1, .shared_reduce = false,
					.representation = r};

					if (ReprAt(r)->gpu && TuneGpuBlockThreads(shape, &p) <= TUNE_GPU_MAX_BLOCK_THREADS)
						points[n++] = p;
				}
	return n;
}

/* The space's parameters and sizes as text (malloc'd), for explain and the docs */
char *
TuneSpaceDescribe(const TuneShape *shape, TuneTarget target)
{
	size_t		size = 1024;
	char	   *text = malloc(size);
	size_t		used = 0;

	if (text == NULL)
		return NULL;
	text[0] = '\0';
	if (target == TUNE_TARGET_GPU)
		Put(text, size, &used,
			"gpu space (Table 5): rows per block {8, 32, 64}, rows per thread {1, 2, 4},"
			" tree threads {2, 10, 20, 50}, cache rows, cache trees, unroll,"
			" interleave {1, 2, 4}, shared reduction, representation {array, sparse, reorg}:"
			" 5184 points (exact: one tree thread, no shared reduction, 648), less blocks"
			" over 1024 threads; Algorithm 1: 36 + 3 (exact: 18)\n");
	else
	{
		Put(text, size, &used, "cpu space: row tile {none, 32, 64, ..., 2048} below the batch"
			" size, interleave {1, 2, 4, 8, 16}, walk {");
		for (int w = 0; w < WalkNumTunings(); w++)
			Put(text, size, &used, "%s%s", w > 0 ? ", " : "", WalkTuningAt(w, NULL)->name);
		Put(text, size, &used, "}, parallel {none, rows%s}, tree blocks {none, L2: %d, L1: %d},"
			" representation {", shape->exact ? "" : ", trees, both", TreeBlock(shape),
			TreeBlockL1(shape));
		for (int r = 0; r < ReprCount(); r++)
			Put(text, size, &used, "%s%s%s", r > 0 ? ", " : "", ReprAt(r)->name,
				ReprAt(r)->tree_tiles ? "" : " (tileTrees 1 only)");
		Put(text, size, &used, "}, tileTrees {1, 4, 8}%s%s\n",
			shape->have_profile ? " uniform or probabilistic" : " uniform",
			shape->exact ? "" : ", reorderTrees");
	}
	return text;
}
