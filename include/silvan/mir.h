/*
 * mir.h
 *		The mid-level IR: the schedule's loop nest made explicit.
 *
 * MIR is a small tree of ops built from the schedule's index-variable
 * tree.  A loop op iterates one live index variable over its range, which
 * follows from the batch size, the tree count and the loops around it:
 *
 *   root batch / tree      [0, num_rows) / [0, num_trees)
 *   tile outer of p        tiles 0 .. ceil(|p| / size) - 1
 *   tile inner of p        0 .. min(size, |p| - outer * size) - 1
 *   split first of p       p's iterations [lo, min(lo + at, hi))
 *   split second of p      p's iterations [min(lo + at, hi), hi)
 *
 * where |p| = hi - lo is the range of p in the current iteration of the
 * loops around (a split iteration counts from the parent's first one, so
 * splitting a tile's inner loop splits every tile).  A variable that was
 * tiled takes the value lo + outer * size + inner, a split one the value
 * of whichever half the path runs through.  A variable copied by a split
 * (IndexVar.copy_of) is its own loop and derives from the same parent.
 *
 * The innermost loop of every path holds a walk op and a reduce op.  The
 * walk moves the row (or rows) the path has fixed through the tree (or
 * trees) it has fixed, as its loop's walk strategy says (walk.h: the op
 * takes the strategy's row and arguments, and the strategy checks the
 * loops around it); with interleave the innermost loop's iterations are
 * walked in groups (as many as the loop's trip count, at most the
 * strategy's widest step, MIR_MAX_WIDTH for lock-step walks; then the
 * strategy's remainder steps, 4 by default, then 1 for what remains).  The
 * lock-step walk takes each tree's padded hops without leaf tests
 * (unrollWalk pads whole trees, peelWalk the first levels) and the rest in
 * a loop that stops when every lane is at a leaf.  Other strategies walk
 * each lane to its own leaf (earlyExitWalk), run code compiled for the
 * fixed tree (codeWalk) or walk rows as vector lanes (vectorWalk); a
 * specialized loop over trees fixes its tree at compile time by emitting
 * its body once per tree.  The reduce op adds each leaf into
 * acc[row][group(tree)].
 *
 * Reductions are legalized as in SilvanForge section 5: a parallel loop
 * over trees is a conflicting loop for acc, so each of its chunks but the
 * first accumulates into a private zeroed slice of a partial buffer
 * (privatize), and after the loop joins, a reduce-dimension op adds the
 * slices into acc for the rows the loop touched and zeroes them again
 * (reduceDimension; the first chunk writes acc itself, which is the
 * "index 0" that reduceDimInplace reduces into).  atomicReduce replaces
 * privatization by atomic adds; vectorReduce vectorizes the
 * reduce-dimension op.  A nested parallel loop runs as one chunk inside the
 * enclosing one, so it needs no slices of its own.
 *
 * On a gpu target (MirBuildTarget) a loop with gpuDimension(i, d) runs one
 * iteration per index of d: the thread (block.*) or block (grid.*) with
 * index k runs iteration k, if the loop has that many in its current
 * range.  Every path of the nest maps the same dimensions, so each
 * iteration of the nest runs on exactly one thread; loops mapped to block
 * dimensions have static trip counts whose product is at most
 * MIR_GPU_MAX_BLOCK threads.  A tree loop mapped to a dimension is a
 * conflicting loop whose adds are atomic (sums in another order: equal
 * within rounding, not bit for bit).  cache() on the outermost loop, a
 * tile of the batch mapped to grid.x, stages the block's rows in shared
 * memory: every thread of the block copies a share of them (consecutive
 * threads, consecutive values), a barrier, then the nest reads its rows
 * there.  sharedReduce(t) on a tree loop mapped to a block dimension, with
 * only mapped loops around it, privatizes instead: each thread adds its
 * trees into its own partial sums, which go to shared memory; after a
 * barrier the thread with t's index 0 adds the partials into acc, in t's
 * order (sums in another order than the model's: equal within rounding).
 * parallel, other cache() and the interrupt check are CPU notions, noted
 * and dropped.
 */
#ifndef SILVAN_MIR_H
#define SILVAN_MIR_H

#include "silvan/compiler.h"
#include "silvan/hir.h"

/* Lanes of one lock-step walk */
#define MIR_MAX_WIDTH			16
/* Lanes of one vectorWalk: eight vectors of sixteen rows; fewer than four walk in lock-step */
#define MIR_MAX_VECTOR_WIDTH	128
#define MIR_MIN_VECTOR_WIDTH	64
/* Rows a walk's remainder takes together before going one by one */
#define MIR_REMAINDER_STEP		4
#define MIR_MAX_OPS				(4 * SCHEDULE_MAX_VARS + 8)
#define MIR_MAX_NOTES			8
/* Threads of one gpu block, at most (CUDA's and HIP's limit) */
#define MIR_GPU_MAX_BLOCK		1024
/* Static shared memory of one gpu block, at most (CUDA's without opting in) */
#define MIR_GPU_MAX_SHARED		(48 * 1024)

typedef enum MirOpKind
{
	MIR_LOOP,					/* for var in range(var) */
	MIR_WALK,					/* walk the fixed rows through the fixed trees */
	MIR_REDUCE,					/* target[row][group(tree)] += leaf */
	MIR_REDUCE_DIM				/* acc[rows] += partial[1..chunks-1][rows] */
} MirOpKind;

/* specialize(): most copies of a loop body, over all specialized loops of a path */
#define MIR_MAX_SPECIALIZED		65536

/* What a walk op walks in lock-step */
typedef enum MirLanes
{
	MIR_LANES_ROWS,				/* rows of the innermost loop, one tree */
	MIR_LANES_TREES				/* trees of the innermost loop, one row */
} MirLanes;

typedef struct MirOp
{
	MirOpKind	kind;
	int16_t		var;			/* loop: the schedule variable */
	IndexKind	index_kind;		/* loop: batch or tree */
	struct MirOp *body;
	struct MirOp *next;
	struct MirOp *parent;		/* enclosing loop; NULL at the top */

	/* loops */
	bool		parallel;
	bool		privatize;		/* parallel tree loop: partial slices */
	bool		atomic;			/* parallel tree loop: atomic adds */
	int32_t		vector_width;	/* reduce-dimension after it: lanes */
	bool		cache;			/* stage or prefetch one iteration's rows, or trees */
	bool		poll;			/* outermost: check the interrupt flag */
	bool		fixes_tree;		/* no tree loop below: tree known in body */
	bool		fixes_row;		/* no batch loop below: row known in body */
	bool		specialize;		/* tree loop: body emitted once per tree */
	GpuDim		gpu_dim;		/* gpu: one iteration per thread or block index */
	bool		shared_reduce;	/* gpu tree loop: partial sums through shared memory */
	int64_t		extent;			/* most iterations; -1 when unbounded */

	/* walks and reduces */
	MirLanes	lanes;
	int16_t		walk;			/* walk strategy (walk.h): its loop's */
	int32_t		walk_args[WALK_MAX_ARGS];	/* and what its directives set */
	int32_t		width;			/* lanes; the innermost loop steps by it */
	int32_t		unroll;			/* hops of trees padded to this depth */
	int32_t		peel;			/* hops peeled (no leaf tests) */
	int32_t		tree_lo;		/* trees it may walk, HIR positions */
	int32_t		tree_hi;
	bool		fixed_walk;		/* set by MirFinish: some trees have */
	bool		leaf_walk;		/* padded hops / hops with leaf tests */
	bool		atomic_add;		/* reduce: atomically */
	bool		to_partial;		/* reduce: into the chunk's target */

	/* reduce-dimension */
	struct MirOp *loop;			/* the parallel loop it follows */
} MirOp;

typedef struct Mir
{
	const Schedule *schedule;
	const Hir  *hir;			/* set by MirFinish */
	const ForestProfile *profile;	/* node hits for codeWalk, or NULL */
	int32_t		num_trees;
	int32_t		num_groups;
	MirOp	   *root;
	MirOp		ops[MIR_MAX_OPS];
	int32_t		num_ops;
	bool		needs_partials; /* some loop privatizes */
	bool		parallel;		/* some loop is parallel */
	bool		gpu;			/* built for a gpu target (MirBuildTarget) */
	uint8_t		gpu_dims;		/* gpu: dimensions mapped, bit d - 1 for GpuDim d */
	int64_t		gpu_stage_rows; /* gpu: rows a block stages (cache), else 0 */
	int64_t		gpu_stage_bytes;	/* their bytes of shared memory (MirGpuShared) */
	MirOp	   *gpu_reduce;		/* gpu: the loop whose sums go through shared memory */
	int64_t		gpu_reduce_rows;	/* most rows one of its threads adds into */
	int64_t		gpu_reduce_bytes;	/* its threads' partial sums and their extents */
	int32_t		gpu_phases;		/* gpu: the kernel's barriers + 1 */
	int32_t		max_pad;		/* deepest padding any walk asks for */
	int32_t		max_unroll;		/* deepest unrollWalk (tiles: pad depth) */
	int32_t		num_notes;
	char		notes[MIR_MAX_NOTES][160];	/* directives lowered differently */
} Mir;

/* What MirFinish needs of each tree (repr.h's ReprTree): hops of its walk */
typedef struct ReprTree ReprTreeShape;

/* schedule.c */
extern void ScheduleTiled(Schedule *schedule, int32_t batch_tile, int32_t interleave,
						  int32_t unroll_depth, const char *representation);

/* mir.c */
extern bool MirBuild(const Schedule *schedule, int32_t num_trees, int32_t num_groups,
					 Mir *mir, SilvanStatus *status);
extern bool MirBuildTarget(const Schedule *schedule, int32_t num_trees, int32_t num_groups,
						   bool gpu, Mir *mir, SilvanStatus *status);
extern void MirGpuLaunch(const Mir *mir, int64_t num_rows, uint32_t grid[3],
						 uint32_t block[3]);
extern void MirGpuShared(Mir *mir, int32_t num_features, size_t value_size);
extern void MirGpuBlockDims(const Mir *mir, int64_t dims[3]);
extern void MirPadLevels(const Mir *mir, const int32_t *depths, int32_t *pad_to);
extern void MirFinish(Mir *mir, const Hir *hir, const ReprTreeShape *trees);
extern char *MirDump(const Mir *mir);
/* A note for the dump: a directive lowered differently */
extern void MirNote(Mir *mir, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern int	MirStepWidths(const MirOp *walk, int32_t widths[5]);
extern bool MirSubtreeHas(const MirOp *op, bool (*pred) (const MirOp *));
extern bool MirIsSerialLoop(const MirOp *op);
extern bool MirIsParallelLoop(const MirOp *op);
extern bool MirIsCodeWalk(const MirOp *op);
extern bool MirOutlinesIterations(const Mir *mir, const MirOp *op, bool inside_outlined);

/*
 * The loops of one path, root first, for range and value arithmetic: rep[v]
 * is the variable standing for v on the path (v itself, or the copy of it
 * the path runs through), -1 when v is not on the path.
 */
typedef struct MirPath
{
	int32_t		num_loops;
	const MirOp *loops[SCHEDULE_MAX_VARS];
	int16_t		rep[SCHEDULE_MAX_VARS];
} MirPath;

extern void MirPathOf(const Mir *mir, const MirOp *op, MirPath *path);

#endif							/* SILVAN_MIR_H */
