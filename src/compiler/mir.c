/*
 * mir.c
 *		Lower a schedule's loop nest to MIR, legalize its reductions, and
 *		dump it.
 *
 * Preconditions: the schedule came from ScheduleParse, ScheduleTiled or
 * ScheduleInitDefault, so its variables and loops are consistent (every
 * live variable is one loop, innermost-only directives sit on innermost
 * loops).  MirBuild needs only the tree and group counts; the HIR it will
 * walk is built afterwards with the padding MirPadLevels asks for, and
 * MirFinish then records which kinds of walk each walk op needs.
 *
 * Building is one recursive pass over the schedule's loop tree.  Each loop
 * becomes a loop op; the innermost loop of each path gets a walk op and a
 * reduce op.  On the way the pass checks what lowering needs: a tile's
 * inner loop must iterate inside its outer loop (its trip count depends on
 * the tile), and walk hops are limited by how deep trees may be padded.
 * Static extents (loop trip counts with an unbounded batch) give interleave
 * widths and the trees each walk may meet.
 *
 * Legalization then marks every parallel loop over trees as a conflicting
 * loop for the accumulator (two of its iterations add into the same
 * acc[row][group]) and appends a reduce-dimension op after it, unless the
 * schedule asked for atomicReduce there.  Directives with no meaning on a
 * CPU are kept as notes that the dump prints.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "silvan/mir.h"
#include "silvan/repr.h"

/* GpuDim d's name at d - 1 */
static const char *const gpu_dim_names[] = {
	"grid.x", "grid.y", "grid.z", "block.x", "block.y", "block.z"
};

/* State of one MirBuild */
typedef struct MirBuilder
{
	const Schedule *s;
	Mir		   *mir;
	SilvanStatus *status;
	int16_t		stack[SCHEDULE_MAX_VARS];	/* variables of enclosing loops */
	int			depth;
} MirBuilder;

/* Take a fresh op from the MIR's pool */
static MirOp *
MirNewOp(Mir *mir, MirOpKind kind, MirOp *parent)
{
	MirOp	   *op = &mir->ops[mir->num_ops++];

	memset(op, 0, sizeof(MirOp));
	op->kind = kind;
	op->var = -1;
	op->parent = parent;
	op->extent = -1;
	return op;
}

/* Record a note for the dump (directive lowered differently on a CPU) */
void
MirNote(Mir *mir, const char *fmt,...)
{
	va_list		args;

	if (mir->num_notes == MIR_MAX_NOTES)
		return;
	va_start(args, fmt);
	vsnprintf(mir->notes[mir->num_notes++], sizeof(mir->notes[0]), fmt, args);
	va_end(args);
}

/* Most iterations of variable v for num_rows rows; -1 when unbounded (num_rows -1) */
static int64_t
Extent(const Schedule *s, int v, int32_t num_trees, int64_t num_rows)
{
	const IndexVar *var = &s->vars[v];
	int64_t		p;

	if (var->origin == INDEX_ORIGIN_ROOT)
		return var->kind == INDEX_TREE ? num_trees : num_rows;
	p = Extent(s, var->parent, num_trees, num_rows);
	switch (var->origin)
	{
		case INDEX_ORIGIN_TILE_OUTER:
			return p < 0 ? -1 : (p + var->param - 1) / var->param;
		case INDEX_ORIGIN_TILE_INNER:
			return p < 0 || p > var->param ? var->param : p;
		case INDEX_ORIGIN_SPLIT_FIRST:
			return p < 0 || p > var->param ? var->param : p;
		case INDEX_ORIGIN_SPLIT_SECOND:
			return p < 0 ? -1 : (p > var->param ? p - var->param : 0);
		default:
			return -1;
	}
}

/* Most iterations of variable v; -1 when it grows with the batch */
static int64_t
StaticExtent(const Schedule *s, int v, int32_t num_trees)
{
	return Extent(s, v, num_trees, -1);
}

/*
 * Trees variable v (tree kind) may take, as root positions [*lo, *hi).
 * Splits of a root-unit variable clip the range; below a tile the parent's
 * range is kept (a superset).  Returns whether v's units are tree numbers.
 */
static bool
StaticTrees(const Schedule *s, int v, int32_t num_trees, int32_t *lo, int32_t *hi)
{
	const IndexVar *var = &s->vars[v];
	bool		abs;

	if (var->origin == INDEX_ORIGIN_ROOT)
	{
		*lo = 0;
		*hi = num_trees;
		return true;
	}
	abs = StaticTrees(s, var->parent, num_trees, lo, hi);
	if (!abs)
		return false;
	if (var->origin == INDEX_ORIGIN_SPLIT_FIRST)
	{
		if (*lo + var->param < *hi)
			*hi = (int32_t) (*lo + var->param);
		return true;
	}
	if (var->origin == INDEX_ORIGIN_SPLIT_SECOND)
	{
		*lo = *lo + var->param < *hi ? (int32_t) (*lo + var->param) : *hi;
		return true;
	}
	return false;
}

/* Is v itself, or a copy of it, on the list? */
static bool
StackHolds(const Schedule *s, const int16_t *stack, int n, int v)
{
	for (int i = 0; i < n; i++)
		for (int w = stack[i], hops = 0; w >= 0 && hops < 4 * SCHEDULE_MAX_VARS; hops++)
		{
			if (w == v)
				return true;
			w = s->vars[w].copy_of;
		}
	return false;
}

/*
 * Do the listed loops fix the value of variable v: v itself, both loops of
 * a tile of it, or either half of a split of it?  (A tile's outer loop
 * tiled again is fixed only once both of its parts enclose.)
 */
static bool
StackFixes(const Schedule *s, const int16_t *stack, int n, int v, int hops)
{
	const IndexVar *var;

	if (v < 0 || hops > 4 * SCHEDULE_MAX_VARS)
		return false;
	if (StackHolds(s, stack, n, v))
		return true;
	var = &s->vars[v];
	if (var->children[0] < 0 || var->children[1] < 0)
		return false;
	if (s->vars[var->children[0]].origin == INDEX_ORIGIN_TILE_OUTER)
		return StackFixes(s, stack, n, var->children[0], hops + 1) &&
			StackFixes(s, stack, n, var->children[1], hops + 1);
	return StackFixes(s, stack, n, var->children[0], hops + 1) ||
		StackFixes(s, stack, n, var->children[1], hops + 1);
}

/*
 * A tile's inner loop needs its outer loop around it: its trip count is
 * what is left of the tile.  An outer loop tiled again needs both of its
 * parts around it: with only b2 of tile(b0, b2, b3, 4) outside, b0 = b2 *
 * 4 + b3 is unknown.  Checked for every tile variable an enclosing loop
 * (or v itself) derives from.
 */
static bool
CheckTileNesting(MirBuilder *b, int v)
{
	const Schedule *s = b->s;

	for (int w = v, hops = 0; w >= 0 && hops < 4 * SCHEDULE_MAX_VARS; hops++)
	{
		const IndexVar *var = &s->vars[w];

		if (var->copy_of >= 0)
		{
			w = var->copy_of;
			continue;
		}
		if (var->origin == INDEX_ORIGIN_TILE_INNER)
		{
			int			outer = s->vars[var->parent].children[0];

			if (!StackFixes(s, b->stack, b->depth, outer, 0))
				return StatusFail(b->status, SILVAN_ERROR_INVALID, "invalid schedule",
								  "Loop %s iterates within a tile of %s, so loop %s, or the "
								  "loops it was tiled into, must enclose it.", s->vars[v].name,
								  s->vars[var->parent].name, s->vars[outer].name);
		}
		w = var->parent;
	}
	return true;
}

/*
 * Specialized loops copy their bodies; the copies of a path multiply, and
 * stay below MIR_MAX_SPECIALIZED.  Then the walk's strategy checks the
 * path (a code walk needs its tree at compile time: every loop over
 * trees on the path specialized).
 */
static bool
CheckPath(MirBuilder *b, const MirOp *walk, const MirOp *loop)
{
	const WalkStrategy *strategy = WalkStrategyOf(walk->walk);
	int64_t		copies = 1;

	for (const MirOp *p = loop; p != NULL; p = p->parent)
	{
		if (!p->specialize)
			continue;
		copies *= p->extent > 0 ? p->extent : 1;
		if (copies > MIR_MAX_SPECIALIZED)
			return StatusFail(b->status, SILVAN_ERROR_INVALID, "invalid schedule",
							  "specialize(%s) would emit the loop body more than %d times.",
							  b->s->vars[p->var].name, MIR_MAX_SPECIALIZED);
	}
	return strategy->check_path == NULL ||
		strategy->check_path(b->s, walk, loop, b->status);
}

/* The walk and reduce ops at the bottom of a path whose innermost loop is op */
static bool
MirAddWalk(MirBuilder *b, MirOp *loop)
{
	const Schedule *s = b->s;
	const IndexVar *var = &s->vars[loop->var];
	MirOp	   *walk = MirNewOp(b->mir, MIR_WALK, loop);
	MirOp	   *reduce = MirNewOp(b->mir, MIR_REDUCE, loop);
	int32_t		lo = 0;
	int32_t		hi = b->mir->num_trees;
	const WalkStrategy *strategy = WalkStrategyOf(var->walk);

	walk->lanes = var->kind == INDEX_TREE ? MIR_LANES_TREES : MIR_LANES_ROWS;
	walk->width = 1;
	walk->walk = (int16_t) WalkKindOf(strategy);
	memcpy(walk->walk_args, var->walk_args, sizeof(walk->walk_args));
	if (strategy->lower != NULL)
		strategy->lower(var, walk);
	if (var->interleave)
	{
		/* the strategy's widest step, in whole steps of MIR_MAX_WIDTH above it */
		int32_t		most = strategy->max_lanes != NULL ?
			strategy->max_lanes(s, walk) : MIR_MAX_WIDTH;

		walk->width = loop->extent > 0 && loop->extent < most ? (int32_t) loop->extent : most;
		if (walk->width > MIR_MAX_WIDTH)
			walk->width -= walk->width % MIR_MAX_WIDTH;
	}
	if (loop->specialize)
		walk->width = 1;		/* the copies fix one tree each */
	if (!CheckPath(b, walk, loop))
		return false;
	for (int i = 0; i < b->depth; i++)
		if (s->vars[b->stack[i]].kind == INDEX_TREE)
		{
			int32_t		l;
			int32_t		h;

			StaticTrees(s, b->stack[i], b->mir->num_trees, &l, &h);
			lo = l > lo ? l : lo;
			hi = h < hi ? h : hi;
		}
	walk->tree_lo = lo;
	walk->tree_hi = hi > lo ? hi : lo;
	if (loop->gpu_dim != GPU_DIM_NONE)
		walk->width = 1;		/* one iteration per thread */
	reduce->lanes = walk->lanes;
	reduce->width = walk->width;
	for (MirOp *p = loop; p != NULL; p = p->parent)
		if (p->kind == MIR_LOOP && p->index_kind == INDEX_TREE &&
			(p->parallel || p->gpu_dim != GPU_DIM_NONE))
		{
			reduce->atomic_add |= p->atomic;
			reduce->to_partial |= p->privatize;
		}
	walk->next = reduce;
	loop->body = walk;
	return true;
}

static bool OnlyMappedAround(const MirOp *op);

/*
 * Does cache(i) on this loop stage a block's rows in shared memory?  Only
 * on the outermost loop, a tile of the root batch mapped to grid.x: then
 * block k scores rows [k * size, k * size + size) and nothing else, and
 * the loop runs before any loop whose threads could leave the barrier out.
 */
static bool
StagesBlockRows(MirBuilder *b, const MirOp *op, const IndexVar *var)
{
	return op->parent == NULL && var->kind == INDEX_BATCH && var->gpu_dim == GPU_DIM_GRID_X &&
		var->origin == INDEX_ORIGIN_TILE_OUTER && b->s->vars[var->parent].origin == INDEX_ORIGIN_ROOT;
}

/*
 * On a gpu: map the loop to its dimension, make a mapped tree loop's adds
 * atomic, stage a block's rows where cache() asks, and drop what only a
 * CPU does
 */
static void
MirLegalizeGpu(MirBuilder *b, MirOp *op, const IndexVar *var)
{
	Mir		   *mir = b->mir;

	if (var->parallel)
		MirNote(mir, "parallel(%s) ignored on a gpu: gpuDimension maps loops to threads",
				var->name);
	if (var->cache && !StagesBlockRows(b, op, var))
		MirNote(mir, "cache(%s) ignored on a gpu: only the outermost loop, a tile of the batch "
				"mapped to grid.x, stages its rows in shared memory", var->name);
	if (var->specialize && var->kind == INDEX_BATCH)
		MirNote(mir, "specialize(%s) ignored: rows are not known at compile time", var->name);
	op->parallel = false;
	op->cache = var->cache && StagesBlockRows(b, op, var);
	if (op->cache)
		mir->gpu_stage_rows = var->param;
	op->poll = false;
	op->specialize = var->specialize && var->kind == INDEX_TREE;
	op->gpu_dim = var->gpu_dim;
	if (op->gpu_dim != GPU_DIM_NONE)
		mir->gpu_dims |= (uint8_t) (1 << (op->gpu_dim - 1));
	if (var->kind != INDEX_TREE || op->gpu_dim == GPU_DIM_NONE)
	{
		if (var->reduce != REDUCE_DEFAULT)
			MirNote(mir, "%s(%s) ignored: %s is not a tree loop mapped to a gpu dimension",
					var->reduce == REDUCE_ATOMIC ? "atomicReduce" :
					var->reduce == REDUCE_SHARED ? "sharedReduce" : "vectorReduce",
					var->name, var->name);
		return;
	}
	if (var->reduce == REDUCE_SHARED && op->gpu_dim >= GPU_DIM_BLOCK_X &&
		OnlyMappedAround(op) && mir->gpu_reduce == NULL)
	{
		op->shared_reduce = true;
		mir->gpu_reduce = op;
		return;
	}
	if (var->reduce != REDUCE_ATOMIC)
		MirNote(mir, "%s(%s): atomic adds instead%s", var->reduce == REDUCE_SHARED ?
				"sharedReduce" : var->reduce == REDUCE_VECTOR ? "vectorReduce" :
				"no reduction given for", var->name, var->reduce == REDUCE_SHARED ?
				" (shared memory needs a tree loop mapped to a block dimension, inside "
				"mapped loops only, one per kernel)" : "");
	op->atomic = true;
}

/* Are all loops around op mapped to gpu dimensions? */
static bool
OnlyMappedAround(const MirOp *op)
{
	for (const MirOp *p = op->parent; p != NULL; p = p->parent)
		if (p->kind == MIR_LOOP && p->gpu_dim == GPU_DIM_NONE)
			return false;
	return true;
}

/* Decide how a parallel loop's reductions are legalized; note odd directives */
static void
MirLegalize(MirBuilder *b, MirOp *op, const IndexVar *var)
{
	Mir		   *mir = b->mir;
	bool		conflicting = op->parallel && var->kind == INDEX_TREE;

	if (mir->gpu)
	{
		MirLegalizeGpu(b, op, var);
		return;
	}
	if (var->gpu_dim != GPU_DIM_NONE)
		MirNote(mir, "gpuDimension(%s) ignored: the target is the cpu", var->name);
	if (var->specialize && var->kind == INDEX_BATCH)
		MirNote(mir, "specialize(%s): one loop for all rows on the cpu", var->name);
	if (var->specialize && var->kind == INDEX_TREE && op->parallel)
		MirNote(mir, "specialize(%s) ignored: a parallel loop's chunks are decided at run time",
				var->name);
	op->specialize = var->specialize && var->kind == INDEX_TREE && !op->parallel;
	if (var->reduce == REDUCE_SHARED)
		MirNote(mir, "sharedReduce(%s) is gpu only: %s", var->name,
				conflicting ? "privatized partial sums instead" : "ignored");
	if ((var->reduce == REDUCE_ATOMIC || var->reduce == REDUCE_VECTOR) && !conflicting)
		MirNote(mir, "%s(%s) ignored: %s is not a parallel loop over trees",
				var->reduce == REDUCE_ATOMIC ? "atomicReduce" : "vectorReduce",
				var->name, var->name);
	if (!conflicting)
		return;
	mir->parallel = true;
	if (var->reduce == REDUCE_ATOMIC)
	{
		op->atomic = true;
		return;
	}
	op->privatize = true;
	op->vector_width = var->reduce == REDUCE_VECTOR ? var->vector_width : 0;
	mir->needs_partials = true;
}

static bool MirBuildLoops(MirBuilder *b, int l, MirOp *parent, MirOp **first);

/* Build the loop op of schedule loop l and everything it nests */
static MirOp *
MirBuildLoop(MirBuilder *b, int l, MirOp *parent)
{
	const Schedule *s = b->s;
	const ScheduleLoop *loop = &s->loops[l];
	const IndexVar *var = &s->vars[loop->var];
	MirOp	   *op;

	if (b->mir->num_ops + 4 > MIR_MAX_OPS)
	{
		StatusFail(b->status, SILVAN_ERROR_INVALID, "invalid schedule",
				   "The loop nest has too many loops.");
		return NULL;
	}
	if (!CheckTileNesting(b, loop->var))
		return NULL;
	op = MirNewOp(b->mir, MIR_LOOP, parent);
	op->var = loop->var;
	op->index_kind = var->kind;
	op->parallel = var->parallel;
	op->cache = var->cache;
	op->poll = parent == NULL;
	op->extent = StaticExtent(s, loop->var, b->mir->num_trees);
	MirLegalize(b, op, var);
	if (op->parallel)
		b->mir->parallel = true;
	b->stack[b->depth++] = loop->var;
	if (loop->first_child < 0)
	{
		if (!MirAddWalk(b, op))
			return NULL;
	}
	else if (!MirBuildLoops(b, loop->first_child, op, &op->body))
		return NULL;
	b->depth--;
	return op;
}

/* Does any loop in the ops below have index kind k? */
static bool
HasLoopOfKind(const MirOp *op, IndexKind k)
{
	for (; op != NULL; op = op->next)
		if (op->kind == MIR_LOOP &&
			(op->index_kind == k || HasLoopOfKind(op->body, k)))
			return true;
	return false;
}

/* Build a chain of sibling loops; *first gets the first op */
static bool
MirBuildLoops(MirBuilder *b, int l, MirOp *parent, MirOp **first)
{
	MirOp	  **link = first;

	for (; l >= 0; l = b->s->loops[l].next_sibling)
	{
		MirOp	   *op = MirBuildLoop(b, l, parent);

		if (op == NULL)
			return false;
		op->fixes_tree = !HasLoopOfKind(op->body, INDEX_TREE) &&
			!(op->body->kind == MIR_WALK && op->body->lanes == MIR_LANES_TREES);
		op->fixes_row = !HasLoopOfKind(op->body, INDEX_BATCH) &&
			!(op->body->kind == MIR_WALK && op->body->lanes == MIR_LANES_ROWS &&
			  op->body->width > 1);
		*link = op;
		link = &op->next;
		if (op->privatize)
		{
			MirOp	   *dim = MirNewOp(b->mir, MIR_REDUCE_DIM, parent);

			dim->loop = op;
			dim->vector_width = op->vector_width;
			*link = dim;
			link = &dim->next;
		}
	}
	return true;
}

/* The gpu dimensions mapped on the path from the root to op */
static uint8_t
PathGpuDims(const MirOp *op)
{
	uint8_t		dims = 0;

	for (; op != NULL; op = op->parent)
		if (op->kind == MIR_LOOP && op->gpu_dim != GPU_DIM_NONE)
			dims |= (uint8_t) (1 << (op->gpu_dim - 1));
	return dims;
}

/*
 * Every path maps the same gpu dimensions: a thread whose index in a
 * dimension no loop of its path reads would run that path's iterations
 * again, once per index
 */
static bool
CheckGpuPaths(const Mir *mir, SilvanStatus *status)
{
	for (int i = 0; i < mir->num_ops; i++)
	{
		const MirOp *walk = &mir->ops[i];
		uint8_t		missing;

		if (walk->kind != MIR_WALK)
			continue;
		missing = (uint8_t) (mir->gpu_dims & ~PathGpuDims(walk));
		for (int d = 0; d < 6; d++)
			if (missing & (1 << d))
				return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule for a gpu",
								  "The path to loop %s maps no loop to %s, which another path "
								  "maps: every path must map the same gpu dimensions.",
								  mir->schedule->vars[walk->parent->var].name, gpu_dim_names[d]);
	}
	return true;
}

/*
 * A block's threads are a fixed number, within what CUDA and HIP launch:
 * every loop mapped to a block dimension has a static extent, at most
 * MIR_GPU_MAX_BLOCK in x and y and 64 in z, MIR_GPU_MAX_BLOCK in all
 */
static bool
CheckGpuBlock(const Mir *mir, SilvanStatus *status)
{
	int64_t		dims[3] = {1, 1, 1};
	const int64_t limits[3] = {MIR_GPU_MAX_BLOCK, MIR_GPU_MAX_BLOCK, 64};

	for (int i = 0; i < mir->num_ops; i++)
	{
		const MirOp *op = &mir->ops[i];
		int			d = op->gpu_dim - GPU_DIM_BLOCK_X;

		if (op->kind != MIR_LOOP || op->gpu_dim < GPU_DIM_BLOCK_X)
			continue;
		if (op->extent < 0)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule for a gpu",
							  "gpuDimension(%s, %s): the loop's trip count grows with the batch, "
							  "and a block's threads are a fixed number; map the inner loop of "
							  "a tile instead.", mir->schedule->vars[op->var].name,
							  gpu_dim_names[op->gpu_dim - 1]);
		if (op->extent > dims[d])
			dims[d] = op->extent;
	}
	for (int d = 0; d < 3; d++)
		if (dims[d] > limits[d])
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule for a gpu",
							  "A block would have %lld threads in %s; at most %lld.",
							  (long long) dims[d], gpu_dim_names[3 + d], (long long) limits[d]);
	if (dims[0] * dims[1] * dims[2] > MIR_GPU_MAX_BLOCK)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule for a gpu",
						  "A block would have %lld x %lld x %lld = %lld threads; at most %d.",
						  (long long) dims[0], (long long) dims[1], (long long) dims[2],
						  (long long) (dims[0] * dims[1] * dims[2]), MIR_GPU_MAX_BLOCK);
	return true;
}

/* Build the MIR of a schedule for a forest of num_trees trees, for the cpu */
bool
MirBuild(const Schedule *schedule, int32_t num_trees, int32_t num_groups,
		 Mir *mir, SilvanStatus *status)
{
	return MirBuildTarget(schedule, num_trees, num_groups, false, mir, status);
}

/* Build the MIR of a schedule for a cpu or a gpu target */
bool
MirBuildTarget(const Schedule *schedule, int32_t num_trees, int32_t num_groups, bool gpu,
			   Mir *mir, SilvanStatus *status)
{
	MirBuilder	b = {.s = schedule, .mir = mir, .status = status};

	memset(mir, 0, sizeof(Mir));
	mir->gpu = gpu;
	mir->schedule = schedule;
	mir->num_trees = num_trees;
	mir->num_groups = num_groups;
	if (schedule->root_loop < 0 || schedule->num_loops < 2)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "The loop nest has no loops over rows and trees.");
	if (!MirBuildLoops(&b, schedule->root_loop, NULL, &mir->root))
		return false;
	if (gpu && (!CheckGpuPaths(mir, status) || !CheckGpuBlock(mir, status)))
		return false;
	for (int i = 0; i < mir->num_ops; i++)
		if (mir->ops[i].kind == MIR_WALK)
		{
			int32_t		p = mir->ops[i].unroll > mir->ops[i].peel ?
				mir->ops[i].unroll : mir->ops[i].peel;

			mir->max_pad = p > mir->max_pad ? p : mir->max_pad;
			if (mir->ops[i].unroll > mir->max_unroll)
				mir->max_unroll = mir->ops[i].unroll;
		}
	return true;
}

/*
 * Padding each tree needs, by HIR position: the deepest any walk that may
 * meet it asks for.  unrollWalk(d) pads trees no deeper than d completely;
 * peelWalk(p) pads the first p levels (leaves above level p move down).
 * depths[] are the trees' depths in HIR order; pad_to[] gets levels.
 */
void
MirPadLevels(const Mir *mir, const int32_t *depths, int32_t *pad_to)
{
	for (int32_t t = 0; t < mir->num_trees; t++)
		pad_to[t] = 0;
	for (int i = 0; i < mir->num_ops; i++)
	{
		const MirOp *walk = &mir->ops[i];

		if (walk->kind != MIR_WALK)
			continue;
		for (int32_t t = walk->tree_lo; t < walk->tree_hi; t++)
		{
			int32_t		need = 0;

			if (walk->unroll > 0 && depths[t] <= walk->unroll)
				need = depths[t];
			else if (walk->peel > 0)
				need = walk->peel < depths[t] ? walk->peel : depths[t];
			if (need > pad_to[t])
				pad_to[t] = need;
		}
	}
}

/*
 * Note which kinds of hop each walk meets, now that the representation
 * knows each tree's hops (nodes, or tiles): some without leaf tests
 * (fixed > 0), some with (depth > fixed)
 */
void
MirFinish(Mir *mir, const Hir *hir, const ReprTreeShape *trees)
{
	mir->hir = hir;
	for (int i = 0; i < mir->num_ops; i++)
	{
		MirOp	   *walk = &mir->ops[i];

		if (walk->kind != MIR_WALK)
			continue;
		walk->fixed_walk = walk->leaf_walk = false;
		if (WalkStrategyOf(walk->walk)->finish != NULL)
			WalkStrategyOf(walk->walk)->finish(mir, hir, walk);
		for (int32_t t = walk->tree_lo; t < walk->tree_hi && t < hir->num_trees; t++)
		{
			walk->fixed_walk |= trees[t].fixed > 0;
			walk->leaf_walk |= trees[t].depth > trees[t].fixed;
		}
	}
}

/* The loops enclosing op (and op, if a loop), and each variable's stand-in */
void
MirPathOf(const Mir *mir, const MirOp *op, MirPath *path)
{
	const Schedule *s = mir->schedule;
	const MirOp *chain[SCHEDULE_MAX_VARS];
	int			n = 0;

	for (const MirOp *p = op; p != NULL && n < SCHEDULE_MAX_VARS; p = p->parent)
		if (p->kind == MIR_LOOP)
			chain[n++] = p;
	path->num_loops = n;
	for (int i = 0; i < n; i++)
		path->loops[i] = chain[n - 1 - i];
	for (int v = 0; v < SCHEDULE_MAX_VARS; v++)
		path->rep[v] = -1;
	/* live loops and every variable they derive from stand for themselves */
	for (int i = 0; i < n; i++)
		for (int w = path->loops[i]->var, hops = 0; w >= 0 && hops < SCHEDULE_MAX_VARS; hops++)
		{
			path->rep[w] = (int16_t) w;
			w = s->vars[w].parent;
		}
	/* a variable copied by a split is stood for by its copy on the path */
	for (int w = 0; w < s->num_vars; w++)
		if (path->rep[w] == w)
			for (int c = s->vars[w].copy_of, hops = 0; c >= 0 && hops < SCHEDULE_MAX_VARS; hops++)
			{
				if (path->rep[c] < 0)
					path->rep[c] = (int16_t) w;
				c = s->vars[c].copy_of;
			}
}

/* Name of a variable */
static const char *
VarName(const Mir *mir, int v)
{
	return mir->schedule->vars[v].name;
}

/* The range of a loop's variable, as text */
static void
DumpRange(TextBuf *buf, const Mir *mir, const MirOp *op)
{
	const IndexVar *var = &mir->schedule->vars[op->var];
	const char *p = var->parent >= 0 ? VarName(mir, var->parent) : "";
	const char *whole = var->kind == INDEX_TREE ? "num_trees" : "num_rows";

	switch (var->origin)
	{
		case INDEX_ORIGIN_ROOT:
			if (var->kind == INDEX_TREE)
				TextAppend(buf, "0 to %d", mir->num_trees);
			else
				TextAppend(buf, "0 to %s", whole);
			break;
		case INDEX_ORIGIN_TILE_OUTER:
			TextAppend(buf, "tiles of %s by %lld", p, (long long) var->param);
			break;
		case INDEX_ORIGIN_TILE_INNER:
			TextAppend(buf, "0 to min(%lld, rest of the %s tile)", (long long) var->param, p);
			break;
		case INDEX_ORIGIN_SPLIT_FIRST:
			TextAppend(buf, "first %lld of %s", (long long) var->param, p);
			break;
		case INDEX_ORIGIN_SPLIT_SECOND:
			TextAppend(buf, "%s after %lld", p, (long long) var->param);
			break;
	}
}

/*
 * The steps of the innermost loop above walk: its width, then smaller
 * groups for what remains (a vector walk's MIR_MIN_VECTOR_WIDTH and
 * MIR_MAX_WIDTH, then MIR_REMAINDER_STEP), then 1; how many.  A bitvector
 * code walk has no MIR_REMAINDER_STEP: its remainders call the tree's
 * function of the full width with fewer lanes live, four rows costing what
 * eight do, and a loop of four would be a third of the loops that LLVM
 * compiles per tree where the tree loop is specialized (a longer compile,
 * the kernel no faster)
 */
int
MirStepWidths(const MirOp *walk, int32_t widths[5])
{
	int			n = 0;
	const WalkStrategy *strategy;

	/* widths[] holds five at most: the strategy's remainders three */
	if (walk == NULL || walk->width <= 1)
	{
		widths[0] = 1;
		return 1;
	}
	widths[n++] = walk->width;
	strategy = WalkStrategyOf(walk->walk);
	if (strategy->remainders != NULL)
		n += strategy->remainders(walk, widths + n);
	else if (walk->width > MIR_REMAINDER_STEP)
		widths[n++] = MIR_REMAINDER_STEP;
	widths[n++] = 1;
	return n;
}

/* Dump one op and what it nests, indented */
static void
MirDumpOps(TextBuf *buf, const Mir *mir, const MirOp *op, int indent)
{
	for (; op != NULL; op = op->next)
	{
		TextAppend(buf, "%*s", indent * 2, "");
		switch (op->kind)
		{
			case MIR_LOOP:
				TextAppend(buf, "%sfor %s in ", op->parallel ? "par." : "", VarName(mir, op->var));
				DumpRange(buf, mir, op);
				if (op->specialize)
					TextAppend(buf, " specialized: body once per tree");
				if (op->gpu_dim != GPU_DIM_NONE)
					TextAppend(buf, " one per %s index", gpu_dim_names[op->gpu_dim - 1]);
				if (op->body && op->body->kind == MIR_WALK && op->body->width > 1)
				{
					int32_t		widths[5];
					int			n = MirStepWidths(op->body, widths);

					TextAppend(buf, " step %d (remainder", widths[0]);
					for (int i = 1; i < n; i++)
						TextAppend(buf, "%s %d", i > 1 ? "," : "", widths[i]);
					TextAppend(buf, ")");
				}
				TextAppend(buf, " {");
				if (op->shared_reduce)
					TextAppend(buf, "  # conflicting loop: each thread's partial sums to shared "
							   "memory; after a barrier, index 0 adds them into acc in order");
				else if (op->privatize)
					TextAppend(buf, "  # conflicting loop: chunk c > 0 reduces into partial[c]");
				else if (op->atomic)
					TextAppend(buf, "  # conflicting loop: atomic adds into acc");
				if (op->poll)
					TextAppend(buf, "%s interrupt check per iteration",
							   op->privatize || op->atomic ? ";" : "  #");
				TextAppend(buf, "\n");
				if (op->cache && mir->gpu)
					TextAppend(buf, "%*scacheRows(%s): the block's %lld rows to shared memory "
							   "(coalesced, all threads), then a barrier\n", indent * 2 + 2, "",
							   VarName(mir, op->var), (long long) mir->gpu_stage_rows);
				else if (op->cache)
					TextAppend(buf, "%*s%s(%s)\n", indent * 2 + 2, "",
							   op->index_kind == INDEX_TREE ? "cacheTrees" : "cacheRows",
							   VarName(mir, op->var));
				MirDumpOps(buf, mir, op->body, indent + 1);
				TextAppend(buf, "%*s}\n", indent * 2, "");
				break;
			case MIR_WALK:
				TextAppend(buf, "leaf[0:%d] = walkDecisionTree(%s, %s",
						   op->width, op->lanes == MIR_LANES_TREES && op->width > 1 ?
						   "trees[0:w]" : "tree", op->lanes == MIR_LANES_ROWS && op->width > 1 ?
						   "rows[0:w]" : "row");
				if (mir->schedule->tile_size > 1)
					TextAppend(buf, ", tiles of %d: vector compare, LUT", mir->schedule->tile_size);
				if (WalkStrategyOf(op->walk)->describe != NULL)
					WalkStrategyOf(op->walk)->describe(buf, mir, op, WALK_DESCRIBE_ARGS);
				TextAppend(buf, ")  # trees %d to %d", op->tree_lo, op->tree_hi);
				if (WalkStrategyOf(op->walk)->describe != NULL)
					WalkStrategyOf(op->walk)->describe(buf, mir, op, WALK_DESCRIBE_NOTE);
				TextAppend(buf, "\n");
				break;
			case MIR_REDUCE:
				TextAppend(buf, "reduce(%s[row][group(tree)], leaf[i]) for i < %d%s\n",
						   op->to_partial ? "partial[chunk]" : "acc", op->width,
						   op->atomic_add ? ", atomically" : "");
				break;
			case MIR_REDUCE_DIM:
				TextAppend(buf, "acc[rows of %s] = reduceDimension(partial[0:chunks][rows], 0)",
						   VarName(mir, op->loop->var));
				if (op->vector_width)
					TextAppend(buf, ", vectors of %d", op->vector_width);
				TextAppend(buf, "  # then partial[1:chunks][rows] = 0\n");
				break;
		}
	}
}

/* Most rows one thread's loops below op add into: products of batch trip counts; -1 unbounded */
static int64_t
RowsBelow(const MirOp *op)
{
	int64_t		most = 1;

	for (const MirOp *c = op->body; c != NULL; c = c->next)
	{
		int64_t		n;

		if (c->kind != MIR_LOOP)
			continue;
		n = RowsBelow(c);
		if (n < 0 || (c->index_kind == INDEX_BATCH && c->extent < 0))
			return -1;
		if (c->index_kind == INDEX_BATCH)
			n *= c->extent;
		most = n > most ? n : most;
	}
	return most;
}

/* Does a batch loop below op split its rows (split(): RootSpan may be a superset)? */
static bool
SplitsRowsBelow(const Mir *mir, const MirOp *op)
{
	for (const MirOp *c = op->body; c != NULL; c = c->next)
	{
		IndexOrigin origin;

		if (c->kind != MIR_LOOP)
			continue;
		origin = mir->schedule->vars[c->var].origin;
		if ((c->index_kind == INDEX_BATCH &&
			 (origin == INDEX_ORIGIN_SPLIT_FIRST || origin == INDEX_ORIGIN_SPLIT_SECOND)) ||
			SplitsRowsBelow(mir, c))
			return true;
	}
	return false;
}

/* The shared reduction is not lowered after all: atomic adds, with a note why */
static void
SharedReduceAtomic(Mir *mir, const char *why)
{
	MirOp	   *op = mir->gpu_reduce;

	MirNote(mir, "sharedReduce(%s): atomic adds instead (%s)",
			mir->schedule->vars[op->var].name, why);
	op->shared_reduce = false;
	op->atomic = true;
	for (int i = 0; i < mir->num_ops; i++)
		for (const MirOp *p = mir->ops[i].parent; mir->ops[i].kind == MIR_REDUCE && p; p = p->parent)
			if (p == op)
				mir->ops[i].atomic_add = true;
	mir->gpu_reduce = NULL;
}

/*
 * Size what a gpu block keeps in shared memory: the rows it stages
 * (cache() on the outermost loop: rows of num_features values of
 * value_size bytes) and the partial sums of a shared reduction (one slice
 * per thread of the most rows a thread adds into, times the groups, and
 * three extents per thread); each falls back (rows read from global
 * memory, atomic adds) with a note when it would take more than
 * MIR_GPU_MAX_SHARED bytes with what is kept already.  Counts the
 * kernel's phases: one more per barrier.
 */
void
MirGpuShared(Mir *mir, int32_t num_features, size_t value_size)
{
	int64_t		bytes = mir->gpu_stage_rows * (int64_t) num_features * (int64_t) value_size;
	int64_t		dims[3];

	mir->gpu_phases = 1;
	if (mir->gpu_stage_rows > 0 && (bytes > MIR_GPU_MAX_SHARED || bytes <= 0))
	{
		MirNote(mir, "cache(%s) ignored: %lld rows of %d features take %lld bytes of shared "
				"memory, more than %d", mir->schedule->vars[mir->root->var].name,
				(long long) mir->gpu_stage_rows, num_features, (long long) bytes,
				MIR_GPU_MAX_SHARED);
		mir->root->cache = false;
		mir->gpu_stage_rows = 0;
	}
	else if (mir->gpu_stage_rows > 0)
	{
		mir->gpu_stage_bytes = bytes;
		mir->gpu_phases++;
	}
	if (mir->gpu_reduce == NULL)
		return;
	MirGpuBlockDims(mir, dims);
	mir->gpu_reduce_rows = RowsBelow(mir->gpu_reduce);
	bytes = dims[0] * dims[1] * dims[2] *
		(mir->gpu_reduce_rows * mir->num_groups * (int64_t) value_size + 3 * 8);
	if (mir->gpu_reduce_rows < 0)
		SharedReduceAtomic(mir, "the rows a thread adds into grow with the batch");
	else if (SplitsRowsBelow(mir, mir->gpu_reduce))
		SharedReduceAtomic(mir, "a loop below it splits its rows");
	else if (bytes + mir->gpu_stage_bytes > MIR_GPU_MAX_SHARED)
		SharedReduceAtomic(mir, "its partial sums would take more than 48 kB of shared memory");
	else
	{
		mir->gpu_reduce_bytes = bytes;
		mir->gpu_phases++;
	}
}

/* The threads of a gpu block in each dimension (static; CheckGpuBlock holds) */
void
MirGpuBlockDims(const Mir *mir, int64_t dims[3])
{
	dims[0] = dims[1] = dims[2] = 1;
	for (int i = 0; i < mir->num_ops; i++)
	{
		const MirOp *op = &mir->ops[i];

		if (op->kind == MIR_LOOP && op->gpu_dim >= GPU_DIM_BLOCK_X &&
			op->extent > dims[op->gpu_dim - GPU_DIM_BLOCK_X])
			dims[op->gpu_dim - GPU_DIM_BLOCK_X] = op->extent;
	}
}

/*
 * Grid and block of a gpu launch over num_rows rows: a grid dimension as
 * large as the most iterations of a loop mapped to it for num_rows rows,
 * a block dimension as large as its loops' static trip count (the same
 * whatever the batch: a block's threads share staged rows by their index),
 * 1 where no loop is mapped
 */
void
MirGpuLaunch(const Mir *mir, int64_t num_rows, uint32_t grid[3], uint32_t block[3])
{
	int64_t		dims[3];

	MirGpuBlockDims(mir, dims);
	for (int d = 0; d < 3; d++)
	{
		grid[d] = 1;
		block[d] = (uint32_t) dims[d];
	}
	for (int i = 0; i < mir->num_ops; i++)
	{
		const MirOp *op = &mir->ops[i];
		int64_t		n;
		uint32_t   *slot;

		if (op->kind != MIR_LOOP || op->gpu_dim == GPU_DIM_NONE || op->gpu_dim > GPU_DIM_GRID_Z)
			continue;
		n = Extent(mir->schedule, op->var, mir->num_trees, num_rows);
		slot = &grid[op->gpu_dim - GPU_DIM_GRID_X];
		if (n > *slot)
			*slot = n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
	}
}

/* The MIR loop nest as text (malloc'd) */
char *
MirDump(const Mir *mir)
{
	TextBuf		buf = {0};

	TextAppend(&buf, "mir:%s\n", mir->gpu ? " (gpu: each mapped loop runs one iteration per "
			   "thread or block index)" : "");
	if (mir->needs_partials)
		TextAppend(&buf, "  partial = zeroed [chunks - 1][num_rows][%d]; chunk 0 uses acc\n",
				   mir->num_groups);
	MirDumpOps(&buf, mir, mir->root, 1);
	for (int i = 0; i < mir->num_notes; i++)
		TextAppend(&buf, "  note: %s\n", mir->notes[i]);
	return TextFinish(&buf);
}

/* Does the subtree from op (and its next ops) hold an op that pred accepts? */
bool
MirSubtreeHas(const MirOp *op, bool (*pred) (const MirOp *))
{
	for (; op != NULL; op = op->next)
		if (pred(op) || MirSubtreeHas(op->body, pred))
			return true;
	return false;
}

/* Is op a loop that runs serially? */
bool
MirIsSerialLoop(const MirOp *op)
{
	return op->kind == MIR_LOOP && !op->parallel;
}

/* Is op a parallel loop? */
bool
MirIsParallelLoop(const MirOp *op)
{
	return op->kind == MIR_LOOP && op->parallel;
}

/* Is op a walk whose trees are compiled into code (a code walk)? */
bool
MirIsCodeWalk(const MirOp *op)
{
	const WalkStrategy *strategy = WalkStrategyOf(op->walk);

	return op->kind == MIR_WALK && strategy->trees_in_code != NULL &&
		strategy->trees_in_code(op);
}

/*
 * Is each iteration of specialized loop op a function of its own?  When a
 * loop over rows runs below it and code walks below that, as in lleaves'
 * blocks of trees (tile(tree, t0, t1, n); reorder(t0, batch, t1);
 * specialize(t0); specialize(t1); codeWalk(t1, ...)): the iteration's
 * function then walks its trees for every row with their code inline,
 * with no call per row.  Not on a gpu, not inside another such function
 * (inside_outlined), nor around a parallel loop.  codegen.c emits it so,
 * compile_cost.c prices it so.
 */
bool
MirOutlinesIterations(const Mir *mir, const MirOp *op, bool inside_outlined)
{
	return !mir->gpu && !inside_outlined && MirSubtreeHas(op->body, MirIsSerialLoop) &&
		MirSubtreeHas(op->body, MirIsCodeWalk) && !MirSubtreeHas(op->body, MirIsParallelLoop);
}
