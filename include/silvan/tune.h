/*
 * tune.h
 *		Schedule exploration: a bounded space of template schedules, the
 *		strategies that search it, and the timing of one candidate.
 *
 * SilvanForge (seed 001, section 8) bounds the unbounded schedule language
 * with a few template parameters, expands each point into schedule text,
 * and prunes the space by what the batch size and the model can use.  The
 * tuner only ever produces schedule text; the compiler consumes it like
 * any user's schedule ("Schedules are data").
 *
 * The CPU space (TuneCpuPoint; tune_space.c) covers the loop structures
 * silvan can compile: batch tile (rows per tile, or none: trees outermost),
 * rows walked in lock-step (interleave), the walk (lock-step until every
 * lane is at a leaf, unrolled to a fixed number of hops, peeled, early
 * exit, trees as code with branches or selects, in blocks of trees),
 * parallelism (none,
 * rows, trees, both), blocks of trees that stay in L2 or L1 (the `cache`
 * of section 7 on CPUs), the representation (array, sparse, reorg), Treebeard
 * tile size (1, 4, 8) and tiling (uniform; probabilistic with a profile),
 * and reorderTrees.  The GPU space (TuneGpuPoint) is Table 5's nine
 * parameters; it is enumerated and pruned here so that a GPU target only
 * adds timing on the device.
 *
 * Strategies (tune_search.c):
 *   exhaustive  every valid point of the bounded space, each timed fully.
 *   heuristic   CPU: phases.  1, loop structure and parallelism (array
 *               layout, scalar nodes); 2, layout and tiling on the best
 *               three of phase 1; 3, tree blocking, (inexact only)
 *               reductions, and full code generation for big code walks
 *               (fullCodegen()) on the best three so far.  A candidate whose
 *               first timed pass is more than TUNE_DISCARD_FACTOR times the
 *               best so far is discarded after that pass.  Unrolled walks
 *               only with interleaving (Algorithm 1, line 17).
 *               GPU: Algorithm 1: thread-block configurations by batch size
 *               and feature count, rows cached, trees not, interleave 1/2/4
 *               unrolled when interleaved, every representation; then shared
 *               reduction on the top three.
 * The default schedule (ScheduleDefault) is always timed first, as
 * candidate 0, so every result can be compared with it.
 *
 * Exactness: with exact, a candidate whose schedule reorders the sums
 * (parallel tree loops, vector reductions, reorderTrees) is not in the
 * space, and every candidate's margins must equal the reference
 * interpreter's bit for bit (the training library's order of summation).
 * Without exact, such candidates are in the space and must agree within
 * float rounding (TuneMarginsAgree).
 *
 * The search is an iterator so that the caller owns the loop: it asks for
 * the next candidate, times it (TuneMeasure, or a fake timer in the unit
 * tests), reports the outcome, and may stop at any time (budget, cancel).
 * Nothing here includes postgres.h or raises.
 */
#ifndef SILVAN_TUNE_H
#define SILVAN_TUNE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "silvan/forest.h"
#include "silvan/status.h"

#define TUNE_MAX_TEXT			640
#define TUNE_DISCARD_FACTOR		1.5 /* heuristic: slower than this after one pass */
#define TUNE_TOP				3	/* phases 2 and 3 refine this many */
#define TUNE_CODE_SPLITS		32768	/* code walks: splits in code, all trees */
#define TUNE_CODE_WHOLE_SPLITS	8192	/* code walks for any forest this small */
#define TUNE_CODE_MIN_DEPTH		10	/* and for deeper ones, in part if large */
#define TUNE_BITS_MAX_SPLITS	32768	/* bitvector code walks: splits of all trees */
#define TUNE_FULL_CODEGEN_SPLITS	4096	/* code walks of more splits: fullCodegen() too */

typedef enum TuneStrategy
{
	TUNE_HEURISTIC = 0,
	TUNE_EXHAUSTIVE = 1
} TuneStrategy;

typedef enum TuneTarget
{
	TUNE_TARGET_CPU = 0,
	TUNE_TARGET_GPU = 1			/* cuda and rocm share the space */
} TuneTarget;

typedef enum TuneParallel
{
	TUNE_PARALLEL_NONE = 0,
	TUNE_PARALLEL_ROWS,
	TUNE_PARALLEL_TREES,		/* reorders sums */
	TUNE_PARALLEL_BOTH			/* reorders sums */
} TuneParallel;

/* unrolled walks (and the gpu space's unroll) pad trees up to this depth */
#define TUNE_MAX_UNROLL		16

/* Blocks of trees: which cache a block of trees' nodes is sized for */
typedef enum TuneBlocks
{
	TUNE_BLOCKS_NONE = 0,
	TUNE_BLOCKS_L2,				/* each block passes over the whole batch */
	TUNE_BLOCKS_L1				/* blocks inside each tile of rows */
} TuneBlocks;

/* One point of the CPU space */
typedef struct TuneCpuPoint
{
	TuneParallel parallel;
	int32_t		row_tile;		/* rows per batch tile; 0: trees outermost */
	int32_t		interleave;		/* rows in lock-step; 1: none */
	int32_t		walk;			/* a walk strategy's tuner walk (WalkTuningAt) */
	TuneBlocks	blocks;			/* blocks of trees, sized for L2 or L1 */
	int32_t		representation; /* a layout: its position in repr.c's table */
	int32_t		tile_size;		/* tileTrees: 1, 4, 8 */
	bool		probabilistic;	/* tileTrees(n, probabilistic) */
	bool		reorder_trees;	/* reorders sums */
	bool		full_codegen;	/* fullCodegen(): code walks of many splits */
} TuneCpuPoint;

/* One point of the GPU space: Table 5 of seed 001 */
typedef struct TuneGpuPoint
{
	int32_t		rows_per_block;
	int32_t		rows_per_thread;
	int32_t		tree_threads;
	bool		cache_rows;
	bool		cache_trees;
	bool		unroll;
	int32_t		interleave;
	bool		shared_reduce;
	int32_t		representation; /* a layout: its position in repr.c's table */
} TuneGpuPoint;

/* What the space needs to know about the model and the run */
typedef struct TuneShape
{
	int32_t		num_trees;
	int32_t		num_features;
	int32_t		max_depth;
	int64_t		total_splits;
	int64_t		largest_tree_splits;
	int64_t		forest_bytes;	/* node records, about */
	bool		categorical;
	int64_t		widest_category_span;	/* categories, 32 a word of the set */
	int32_t		batch_size;
	int32_t		max_threads;
	bool		exact;
	bool		have_profile;
	bool		vector_walk;	/* the host walks rows as AVX-512 vectors */
} TuneShape;

/* host: the profile the space's host choices come from (NULL: the fallback) */
struct HostProfile;
extern void TuneShapeOf(const Forest *forest, int32_t batch_size, int32_t max_threads,
						bool exact, bool have_profile, const struct HostProfile *host,
						TuneShape *shape);

/* tune_space.c: points to text, enumeration, pruning */
extern bool TuneCpuText(const TuneShape *shape, const TuneCpuPoint *point,
						char *text, size_t size);
extern bool TuneGpuText(const TuneShape *shape, const TuneGpuPoint *point,
						char *text, size_t size);
extern bool TuneCpuReordersSums(const TuneCpuPoint *point);
extern bool TuneCpuValid(const TuneShape *shape, const TuneCpuPoint *point);
extern int	TuneCpuExhaustive(const TuneShape *shape, TuneCpuPoint *points, int max_points);
extern int	TuneCpuPhase1(const TuneShape *shape, TuneCpuPoint *points, int max_points);
extern int	TuneCpuRefineLayout(const TuneShape *shape, const TuneCpuPoint *base,
								TuneCpuPoint *points, int max_points);
extern int	TuneCpuRefineBlocking(const TuneShape *shape, const TuneCpuPoint *base,
								  TuneCpuPoint *points, int max_points);
extern int	TuneGpuExhaustive(const TuneShape *shape, TuneGpuPoint *points, int max_points);
extern int	TuneGpuAlgorithm1(const TuneShape *shape, TuneGpuPoint *points, int max_points);
/* Threads of a block a point asks for; at most TUNE_GPU_MAX_BLOCK_THREADS launch */
#define TUNE_GPU_MAX_BLOCK_THREADS 1024
extern int64_t TuneGpuBlockThreads(const TuneShape *shape, const TuneGpuPoint *point);
extern void TuneGpuBlockConfigs(int32_t batch_size, int32_t num_features,
								int32_t rows_per_block[2], int32_t tree_threads[2]);
extern char *TuneSpaceDescribe(const TuneShape *shape, TuneTarget target);

/* tune_search.c: the search as an iterator */
typedef enum TuneOutcome
{
	TUNE_PENDING = 0,
	TUNE_TIMED,					/* fully timed: us_per_row is its median */
	TUNE_DISCARDED,				/* clearly slower after a short timing */
	TUNE_FAILED,				/* did not compile */
	TUNE_MISMATCH				/* results differ from the reference */
} TuneOutcome;

typedef struct TuneCandidate
{
	int32_t		id;				/* 0: the default schedule */
	int32_t		phase;			/* 0 default, 1..3 the heuristic's, 1 exhaustive */
	TuneTarget	target;
	TuneCpuPoint cpu;
	TuneGpuPoint gpu;
	char		text[TUNE_MAX_TEXT];
	bool		reorders_sums;
	TuneOutcome outcome;
	double		us_per_row;
	double		compile_ms;
} TuneCandidate;

typedef struct TuneOptions
{
	TuneTarget	target;
	TuneStrategy strategy;
	const char *default_text;	/* the default schedule, timed first */
} TuneOptions;

typedef struct TuneProgress
{
	const char *phase;			/* "default", "loop structure", ... */
	int32_t		done;			/* candidates reported */
	int32_t		planned;		/* candidates known so far */
	double		best_us_per_row;	/* 0: none yet */
	double		default_us_per_row; /* 0: not yet */
} TuneProgress;

typedef struct TuneSearch TuneSearch;

extern TuneSearch *TuneSearchCreate(const TuneShape *shape, const TuneOptions *options,
									SilvanStatus *status);
extern const TuneCandidate *TuneSearchNext(TuneSearch *search);
extern void TuneSearchReport(TuneSearch *search, int32_t id, TuneOutcome outcome,
							 double us_per_row, double compile_ms);
extern double TuneSearchDiscardAbove(const TuneSearch *search);
extern const TuneCandidate *TuneSearchBest(const TuneSearch *search);
extern const TuneCandidate *TuneSearchDefault(const TuneSearch *search);
extern int	TuneSearchTop(const TuneSearch *search, const TuneCandidate **top);
extern void TuneSearchProgressOf(const TuneSearch *search, TuneProgress *progress);
extern int32_t TuneSearchCount(const TuneSearch *search, TuneOutcome outcome);
extern void TuneSearchFree(TuneSearch *search);

/* tune_measure.c: compile and time one candidate on in-memory rows */
typedef struct TuneSample
{
	const void *rows;			/* num_rows rows of the forest's precision */
	int64_t		num_rows;
	void	   *reference;		/* the interpreter's margins for them */
} TuneSample;

typedef struct TuneTiming
{
	TuneOutcome outcome;
	double		us_per_row;		/* median of the timed passes */
	double		compile_ms;
	int32_t		passes;
	char		why[160];		/* FAILED / MISMATCH: what happened */
} TuneTiming;

extern double TuneClockSeconds(void);
extern int64_t TuneMeasureRows(int32_t batch_size);
extern bool TuneSampleInit(const Forest *forest, const void *rows, int64_t num_rows,
						   int32_t batch_size, TuneSample *sample, SilvanStatus *status);
extern void TuneSampleFree(TuneSample *sample);
extern void *TuneSynthesizeRows(const Forest *forest, const ForestProfile *profile,
								int64_t num_rows, uint64_t seed, SilvanStatus *status);
extern bool TuneMarginsAgree(const Forest *forest, const void *want, const void *got,
							 int64_t count, bool exact);
extern bool TuneMeasure(const Forest *forest, const ForestProfile *profile,
						const TuneSample *sample, int32_t batch_size, const char *text,
						bool exact, double discard_above, double seconds,
						volatile sig_atomic_t *stop, TuneTiming *timing);

/* tune_measure.c: the same with compile options (NULL: the defaults) and, for device code, a device */
struct CompileOptions;
struct GpuDevice;
extern bool TuneMeasureOn(const Forest *forest, const ForestProfile *profile,
						  const struct CompileOptions *options, struct GpuDevice *device,
						  const TuneSample *sample, int32_t batch_size, const char *text,
						  bool exact, double discard_above, double seconds,
						  volatile sig_atomic_t *stop, TuneTiming *timing);

#endif							/* SILVAN_TUNE_H */
