/*
 * schedule.h
 *		The schedule language: text a user can read, store, diff and edit,
 *		parsed into an index-variable tree that the compiler lowers.
 *
 * A schedule starts from two root index variables, batch (rows) and tree
 * (trees of the model), nested as "for batch: for tree:".  Directives,
 * one per line or ';'-separated, derive new index variables and reshape
 * the loop nest (SilvanForge section 3, Tables 1-3):
 *
 *   loop modifiers  tile(i, outer, inner, size)   split(i, first, second, at)
 *                   reorder(i, j, ...)            specialize(i)
 *                   gpuDimension(i, grid.x|grid.y|grid.z|block.x|block.y|block.z)
 *   optimizations   cache(i)  parallel(i)  interleave(i)
 *   walk strategies unrollWalk(i, hops)  peelWalk(i, hops)   (lock-step)
 *                   codeWalk(i, nodes, branchy|select|bitvector)
 *                   earlyExitWalk(i)  vectorWalk(i)
 *   reductions      atomicReduce(i)  sharedReduce(i)  vectorReduce(i, width)
 *   model layout    representation(array|sparse|reorg|perfect)  (repr.h)
 *                   tileTrees(size, uniform|probabilistic)   size 1..8
 *                   reorderTrees()   (trees sorted by depth; see below)
 *
 * Walk strategies (walk.h, one file each) say how the innermost loop's
 * walk moves a row through a tree, and own their directives.  The default
 * walks lanes in lock-step until every lane is at a leaf (walk_lockstep.c;
 * unrollWalk pads trees, peelWalk peels hops).  earlyExitWalk(i) walks
 * each lane on its own, stopping at its own leaf (walk_early_exit.c).
 * codeWalk(i, nodes, form) compiles the top `nodes` splits of each tree
 * (the hottest ones when a profile is given) into code, thresholds and
 * features as immediates, as branches or as branch-free selects, and
 * walks the rest from the buffers; the tree must be known at compile
 * time, so every loop over trees around i (or i itself) carries
 * specialize(), which emits its body once per tree.  codeWalk(i, nodes,
 * bitvector) instead compiles whole trees of at most `nodes` splits and 64
 * leaves as straight-line code that compares every split and finds the
 * leaf as a bit (QuickScorer); with interleave(i) over rows, the lanes'
 * rows are compared together in vectors.  It needs no specialize(): a
 * tree known only at run time is called through a table (walk_code.c,
 * walk_code_bits.c).  vectorWalk(i), with interleave(i) over the rows of
 * a tile, walks up to 128 rows of one tree as the lanes of AVX-512
 * vectors (sixteen rows a vector), in a layout that has them (perfect);
 * elsewhere it walks in lock-step (walk_vector.c).
 *
 * Index variables form a tree: a tiled or split variable is replaced in
 * the loop nest by the two it produced.  The loop nest itself is a tree of
 * ScheduleLoop: split produces sibling loops (loop fission), everything
 * else nests.  Loop ranges are not fixed here: they follow from the batch
 * size and the model when the MIR is built.
 *
 * Precise errors: ScheduleParse reports the line, the directive and why
 * (unknown index, reorder of loops that are not perfectly nested,
 * interleave or unrollWalk not on an innermost loop, tile size <= 0, ...)
 * in a SilvanStatus of kind SILVAN_ERROR_SYNTAX (malformed text) or
 * SILVAN_ERROR_INVALID (well-formed but illegal).
 *
 * Nothing here includes postgres.h or raises.
 */
#ifndef SILVAN_SCHEDULE_H
#define SILVAN_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "silvan/status.h"
#include "silvan/walk.h"

#define SCHEDULE_MAX_VARS		32
#define SCHEDULE_NAME_LEN		32
#define SCHEDULE_MAX_TEXT		8192
#define SCHEDULE_MAX_TILE_SIZE	8	/* tileTrees: nodes per tile */

/* Which root an index variable iterates over */
typedef enum IndexKind
{
	INDEX_BATCH = 0,
	INDEX_TREE = 1
} IndexKind;

/* How an index variable came to be */
typedef enum IndexOrigin
{
	INDEX_ORIGIN_ROOT = 0,		/* batch or tree */
	INDEX_ORIGIN_TILE_OUTER,	/* steps over tiles of `param` iterations */
	INDEX_ORIGIN_TILE_INNER,	/* 0 .. param-1 within the current tile */
	INDEX_ORIGIN_SPLIT_FIRST,	/* the parent's iterations [begin, param) */
	INDEX_ORIGIN_SPLIT_SECOND	/* the parent's iterations [param, end) */
} IndexOrigin;

/* How partial results of parallel iterations are combined */
typedef enum ReduceKind
{
	REDUCE_DEFAULT = 0,			/* privatize, then reduce (section 5) */
	REDUCE_ATOMIC,
	REDUCE_SHARED,				/* GPU shared memory */
	REDUCE_VECTOR
} ReduceKind;

typedef enum GpuDim
{
	GPU_DIM_NONE = 0,
	GPU_DIM_GRID_X, GPU_DIM_GRID_Y, GPU_DIM_GRID_Z,
	GPU_DIM_BLOCK_X, GPU_DIM_BLOCK_Y, GPU_DIM_BLOCK_Z
} GpuDim;

typedef enum TreeTiling
{
	TREE_TILING_UNIFORM = 0,
	TREE_TILING_PROBABILISTIC = 1
} TreeTiling;

/* codeWalk: how the compiled top of a tree decides */
typedef enum CodeWalkForm
{
	CODE_WALK_BRANCHY = 0,		/* if/else per split */
	CODE_WALK_SELECT = 1,		/* every split of the top compared, selects */
	CODE_WALK_BITVECTOR = 2		/* every split compared, leaves as bits */
} CodeWalkForm;

#define SCHEDULE_MAX_CODE_NODES	4096	/* codeWalk: splits per tree */
#define CODE_WALK_BITS_MAX_KEYS	1024	/* bitvector: widest categorical set read from
										 * a table; wider ones are tested lane by lane */

typedef struct IndexVar
{
	char		name[SCHEDULE_NAME_LEN];
	IndexKind	kind;
	IndexOrigin origin;
	int16_t		parent;			/* variable it was derived from; -1 roots */
	int16_t		children[2];	/* the two it was tiled/split into; -1 */
	int16_t		copy_of;		/* a split of an enclosing loop copied this
								 * loop from copy_of (same kind, origin,
								 * parent, param and flags); -1 */
	int64_t		param;			/* tile size, or split iteration */

	/* optimization directives applied to this loop */
	bool		parallel;
	bool		cache;
	bool		interleave;
	bool		specialize;
	int16_t		walk;			/* walk strategy: its row in walk.c's table
								 * (walk.h); 0, the lock-step walk, unless
								 * a walk directive says otherwise */
	int32_t		walk_args[WALK_MAX_ARGS];	/* what its directives set */
	ReduceKind	reduce;
	int32_t		vector_width;	/* REDUCE_VECTOR */
	GpuDim		gpu_dim;
	int32_t		line;			/* line of the directive that made it */
} IndexVar;

/* One loop of the nest: a live (not tiled/split away) index variable */
typedef struct ScheduleLoop
{
	int16_t		var;			/* index into Schedule.vars */
	int16_t		first_child;	/* loop nested inside; -1 if innermost */
	int16_t		next_sibling;	/* loop after this one at the same level; -1 */
} ScheduleLoop;

/* A directive as applied, in text order, so that ScheduleToText can replay it */
#define SCHEDULE_MAX_DIRECTIVES	64

typedef enum ScheduleOp
{
	SCHEDULE_OP_TILE = 1,
	SCHEDULE_OP_SPLIT,
	SCHEDULE_OP_REORDER,
	SCHEDULE_OP_SPECIALIZE,
	SCHEDULE_OP_GPU_DIMENSION,
	SCHEDULE_OP_CACHE,
	SCHEDULE_OP_PARALLEL,
	SCHEDULE_OP_INTERLEAVE,
	SCHEDULE_OP_ATOMIC_REDUCE,
	SCHEDULE_OP_SHARED_REDUCE,
	SCHEDULE_OP_VECTOR_REDUCE,
	SCHEDULE_OP_REPRESENTATION,
	SCHEDULE_OP_TILE_TREES,
	SCHEDULE_OP_REORDER_TREES,
	SCHEDULE_OP_FULL_CODEGEN,
	SCHEDULE_OP_WALK			/* a walk strategy's directive (walk.h) */
} ScheduleOp;

typedef struct ScheduleDirective
{
	int16_t		op;				/* ScheduleOp */
	int16_t		num_vars;
	int16_t		walk;			/* SCHEDULE_OP_WALK: the strategy's row */
	int16_t		walk_directive; /* and which of its directives */
	int16_t		vars[SCHEDULE_MAX_VARS];	/* variables named, in argument order */
	int64_t		values[2];		/* numbers and keywords (as enum values), in order */
} ScheduleDirective;

typedef struct Schedule
{
	int32_t		num_vars;
	IndexVar	vars[SCHEDULE_MAX_VARS];
	int32_t		num_loops;
	ScheduleLoop loops[SCHEDULE_MAX_VARS];
	int16_t		root_loop;		/* outermost loop */

	/* model layout, written in the same text so a stored schedule is complete */
	char		representation[16]; /* a layout of repr.c's table; "array"
									 * by default */
	int32_t		tile_size;		/* tileTrees size; 1 = scalar nodes */
	TreeTiling	tiling;
	bool		reorder_trees;	/* trees sorted by depth before walking */
	/*
	 * fullCodegen(): LLVM's default code generation even where the compile
	 * would pick its fast one (code walks of many splits): slower to
	 * compile, faster code
	 */
	bool		full_codegen;

	/* what ScheduleParse applied; a Schedule built by hand has none */
	int32_t		num_directives;
	ScheduleDirective directives[SCHEDULE_MAX_DIRECTIVES];
} Schedule;

/* Parse schedule text; on failure false and a status naming line and directive */
extern bool ScheduleParse(const char *text, Schedule *schedule, SilvanStatus *status);

/* The schedule with no directive: for batch: for tree */
extern void ScheduleInitDefault(Schedule *schedule);

/* Canonical text (malloc'd): parsing it again gives the same schedule */
extern char *ScheduleToText(const Schedule *schedule);

/* The loop nest as indented text (malloc'd), for explain */
extern char *ScheduleDumpNest(const Schedule *schedule);

/* Find a variable by name; -1 if none */
extern int	ScheduleFindVar(const Schedule *schedule, const char *name);

/*
 * Does the schedule add a row's trees in another order than the model's
 * (reorderTrees, a parallel or GPU-mapped tree loop, a non-default
 * reduction)?  Such code agrees with the interpreter within rounding only.
 */
extern bool ScheduleReordersSums(const Schedule *schedule);

/*
 * walk_code.c: the blocked code walk, lleaves' layout: rows in tiles of row_tile (0:
 * no tile), parallel over tiles if asked; trees in blocks of `block`,
 * each block one function that walks every row of the tile through its
 * trees, `splits` splits of each tree in code (codegen.c,
 * OutlinesIterations).  false when text is too small.
 */
extern bool ScheduleCodeBlocksText(int32_t row_tile, bool parallel, int32_t block,
								   int64_t splits, const char *form, char *text, size_t size);
/*
 * Trees per block: about SCHEDULE_CODE_BLOCK_SPLITS splits in code, but no
 * more than about SCHEDULE_CODE_MAX_BLOCKS blocks (at most 64 trees each)
 */
extern int32_t ScheduleCodeBlockTrees(int64_t splits_per_tree, int32_t num_trees);

#define SCHEDULE_CODE_BLOCK_SPLITS	384
#define SCHEDULE_CODE_MAX_BLOCKS	32

#endif							/* SILVAN_SCHEDULE_H */
