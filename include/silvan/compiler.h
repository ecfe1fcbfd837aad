/*
 * compiler.h
 *		The public face of the compiler: Forest + schedule -> native code.
 *
 * Pipeline (compile.c runs it, in this order; one pass per file under
 * src/compiler unless said):
 *
 *   Forest --runtime/jit.c--> machine code and the image of its buffers
 *            (compile_image.c) from the code cache, found by source: with
 *            both, nothing below runs
 *          --hir.c--> the forest normalized (compares as LT, LE, EQ)
 *          --schedule.c--> Schedule (the default by batch size, or given)
 *          --mir.c--> MIR (explicit loop nest over batch and tree, walk ops)
 *          --tiling.c--> tiles (tileTrees with n > 1)
 *          --hir.c--> HIR (tree order, padding, per-tree depth)
 *          --repr_*.c--> representation buffers (node layout in memory)
 *          --compile_cost.c--> the compile's size, held to its limits
 *          --codegen.c--> LLVM IR (LLVM-C API)
 *          --runtime/jit.c--> native function (an object elf_link.c links),
 *            or the same machine code from this process or the disk cache
 *            (runtime/code_cache.c), keyed by the IR before optimization
 *
 * For a gpu target (target.h) the same passes run with loops mapped to
 * grid and block indices (MirBuildTarget), no code cache, and codegen's
 * module is the device's: runtime/gpu_emit.c turns it into PTX (cuda) or
 * an HSA code object (rocm), which gpu_run.c loads through the driver;
 * gpu_emulated JIT-compiles the kernel for the host instead.
 *
 * The compiled function adds every tree's leaf value into a margin
 * accumulator prepared by ForestMarginsInit, in the same order and
 * precision as the reference interpreter, so results are identical.
 * Model data lives in the representation's buffers, and in the code only
 * where a code walk puts thresholds into it.
 *
 * profile (may be NULL) carries node hit counts for probability-based
 * tiling; a schedule asking for it without a profile is an error.
 * Parallel loops run on the runtime's thread pool (runtime.h), which never
 * calls back into PostgreSQL; a batch checks the interrupt flag the
 * adapter registered between tiles and returns early when it is set.
 */
#ifndef SILVAN_COMPILER_H
#define SILVAN_COMPILER_H

#include <signal.h>

#include "silvan/forest.h"
#include "silvan/host_profile.h"
#include "silvan/schedule.h"
#include "silvan/target.h"

typedef struct CompiledForest CompiledForest;
typedef struct ReprBuffers ReprBuffers;

/*
 * What one compile may cost (compile_cost.c): LLVM IR instructions in all,
 * and instructions and loops in its largest function (LLVM's time on a
 * function grows faster than either), estimated from the MIR before any
 * code is generated and counted exactly before LLVM runs; a compile over
 * any fails with SILVAN_ERROR_LIMIT.  The adapter passes them in the
 * compile's options from silvan.compile_max_instructions,
 * silvan.compile_max_function_instructions and
 * silvan.compile_max_function_loops; 0 means no bound.
 */
typedef struct CompileLimits
{
	int64_t		max_instructions;
	int64_t		max_function_instructions;
	int64_t		max_function_loops;
} CompileLimits;

#define COMPILE_MAX_INSTRUCTIONS_DEFAULT			2000000
#define COMPILE_MAX_FUNCTION_INSTRUCTIONS_DEFAULT	60000
#define COMPILE_MAX_FUNCTION_LOOPS_DEFAULT			300

/* The limits of COMPILE_MAX_*_DEFAULT */
extern const CompileLimits *CompileLimitsDefault(void);

/*
 * What a compile is for, beyond the forest, schedule and profile: every
 * input that the code depends on and the host could otherwise be asked,
 * so that a test compiles for "a Zen 4" or "a Xeon" profile on any
 * machine and the code cache keys on what the code was made for.  NULL
 * fields take the defaults: the host cpu, LLVM's name and features of
 * the host (code to run in this process), the fallback profile
 * (HostProfileFallback), the default limits.  A cpu other than the
 * host's makes code that only an equal CPU should run.
 */
typedef struct CompileOptions
{
	const Target *target;		/* NULL: the host cpu (TargetCpu) */
	const char *arch;			/* a device's processor ("sm_80"); NULL: the target's default */
	const char *cpu;			/* LLVM's name of the CPU host code is for; NULL: the host's */
	const char *cpu_features;	/* with cpu: its LLVM features; NULL: the host's */
	const HostProfile *host;	/* the machine's choices; NULL: the fallback */
	const CompileLimits *limits;	/* NULL: CompileLimitsDefault() */
} CompileOptions;

/* A compile's size: estimated from the MIR, or counted in the module */
typedef struct CompileCost
{
	int64_t		walk_copies;	/* walks emitted: copies of bodies times step widths */
	int64_t		instructions;	/* LLVM IR instructions in all */
	int64_t		loops;			/* loops in all */
	int64_t		largest_function;	/* instructions of the largest function */
	int64_t		largest_function_loops; /* loops of the function of most */
	char		directive[64];	/* the directive that multiplies it most, as written */
	char		blame[160];		/* how, in words */
} CompileCost;

/*
 * The cost of compiling a forest with a schedule: the passes up to the
 * layout (MIR, HIR, buffers) and the estimate, no code generated; false
 * and a status when the schedule does not lower.  options may be NULL.
 */
extern bool CompileEstimate(const Forest *forest, const Schedule *schedule,
							const ForestProfile *profile, const CompileOptions *options,
							CompileCost *cost, SilvanStatus *status);

/* The estimate a compile made, and what it counted in the module before LLVM ran */
extern void CompiledForestCost(const CompiledForest *compiled, CompileCost *estimated,
							   CompileCost *counted);

/*
 * Pick the default schedule for a forest and a typical batch size, with a
 * host profile's choices (NULL: the fallback profile's)
 */
extern void ScheduleDefault(const Forest *forest, int32_t batch_size,
							const HostProfile *host, Schedule *schedule);

/*
 * schedule.c, for the walk strategies' defaults: the default's nest of row
 * tiles, vector_lanes rows interleaved (0: the host profile's lock-step
 * rows), the innermost row loop's walk directive walk(loop<walk_args>)
 * (NULL: none), unroll its padding in the fallback without text
 */
extern void ScheduleRowTiles(const Forest *forest, int32_t batch_size,
							 const HostProfile *host, int32_t vector_lanes, const char *walk,
							 const char *walk_args, int32_t unroll, Schedule *schedule);
extern bool ScheduleHasCategorical(const Forest *forest);
/* Splits of the forest, and of its largest tree */
extern int64_t ScheduleCountSplits(const Forest *forest, int64_t *largest);

/* Pick the default schedule of a gpu target (schedule.c) */
extern void ScheduleGpuDefault(const Forest *forest, int32_t batch_size,
							   Schedule *schedule);

/*
 * Compile a validated forest for the host cpu with the default options;
 * NULL and a status on failure
 */
extern CompiledForest *CompileForest(const Forest *forest,
									 const Schedule *schedule,
									 const ForestProfile *profile,
									 SilvanStatus *status);

/*
 * The same with options (NULL: the defaults).  A gpu target's
 * loops map to grid and block dimensions (mir.h).  gpu_emulated code runs
 * through CompiledForestRun like the cpu's, one thread at a time; cuda and
 * rocm code is device code that GpuForestRun (gpu_run.c) loads and
 * launches on a device.
 * Only cpu code goes through the code cache.
 */
extern CompiledForest *CompileForestFor(const Forest *forest, const Schedule *schedule,
										const ForestProfile *profile,
										const CompileOptions *options,
										SilvanStatus *status);

/*
 * The code cache's answer alone, for a forest whose trees may not have
 * been read (ForestDeserializeHeader): the compile of that forest and
 * schedule, or NULL; the default schedule a forest and batch size got
 * before, or false; and remembering it
 */
extern CompiledForest *CompileForestFromCache(const Forest *forest,
											  const Schedule *schedule,
											  const ForestProfile *profile,
											  const CompileOptions *options);
extern bool ScheduleDefaultFromCache(const Forest *forest, int32_t batch_size,
									 const HostProfile *host, Schedule *schedule);
extern void ScheduleDefaultRemember(const Forest *forest, int32_t batch_size,
									const HostProfile *host, const Schedule *schedule);

/*
 * Add all trees' leaf values into acc (num_rows * num_groups values of the
 * forest's precision, prepared by ForestMarginsInit).  rows: num_rows rows
 * of num_features values of the forest's precision, row-major.
 */
extern void CompiledForestAccumulate(const CompiledForest *compiled,
									 const void *rows, int64_t num_rows,
									 void *acc);

/*
 * The same, stopping early once *stop becomes nonzero (instead of the
 * runtime's interrupt flag); true when it ran to the end with *stop zero.
 */
extern bool CompiledForestRun(const CompiledForest *compiled,
							  const void *rows, int64_t num_rows, void *acc,
							  volatile sig_atomic_t *stop);

/*
 * Whether separate calls may score separate ranges of a batch's rows at
 * once, each with its own slice of acc (host code whose loops privatize
 * nothing: a row's margins never depend on which rows share its call),
 * and the fewest rows such a call should take to score them about as fast
 * as a whole batch; 0 when the code must run whole
 */
extern int64_t CompiledForestSplitRows(const CompiledForest *compiled);

/*
 * Text of every IR level (schedule, HIR, MIR, optionally LLVM IR);
 * malloc'd.  ...For: without origin, no word of where the machine code
 * came from (for roles that do not own the model)
 */
extern char *CompiledForestExplain(const CompiledForest *compiled,
								   bool with_llvm_ir);
extern char *CompiledForestExplainFor(const CompiledForest *compiled, bool with_llvm_ir,
									  bool origin);

/* Where the machine code came from: compiled, the disk cache, or shared */
extern const char *CompiledForestCodeOrigin(const CompiledForest *compiled);
extern bool CompiledForestFromCodeCache(const CompiledForest *compiled);
extern int	CompiledForestCodeObjects(const CompiledForest *compiled);

/* Milliseconds spent in CompileForest */
extern double CompiledForestCompileMillis(const CompiledForest *compiled);

/* Release code and buffers */
extern void CompiledForestFree(CompiledForest *compiled);

/* What a gpu runner needs of a compiled forest */
extern const Target *CompiledForestTarget(const CompiledForest *compiled);
extern const char *CompiledForestDeviceCode(const CompiledForest *compiled, size_t *len);
extern const ReprBuffers *CompiledForestBuffers(const CompiledForest *compiled);
extern void CompiledForestShape(const CompiledForest *compiled, int32_t *num_features,
								int32_t *num_groups, size_t *value_size);
extern void CompiledForestLaunch(const CompiledForest *compiled, int64_t num_rows,
								 uint32_t grid[3], uint32_t block[3]);

#endif							/* SILVAN_COMPILER_H */
