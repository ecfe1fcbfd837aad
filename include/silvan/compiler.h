/*
 * compiler.h
 *		The public face of the compiler: Forest + schedule -> native code.
 *
 * Pipeline (one pass per file under src/compiler):
 *
 *   Forest --runtime/jit.c--> machine code and the image of its buffers
 *            (compile_image.c) from the code cache, found by source: with
 *            both, nothing below runs
 *          --hir.c--> HIR (tree order, padding, per-tree depth)
 *          --schedule.c--> Schedule (default by batch size, or given)
 *          --mir.c--> MIR (explicit loop nest over batch and tree, walk ops)
 *          --repr_*.c--> representation buffers (node layout in memory)
 *          --runtime/jit.c--> the machine code made from the same model,
 *            profile and schedule, from this process or the disk cache
 *            (runtime/code_cache.c): found by source, the two steps below
 *            are skipped
 *          --codegen.c--> LLVM IR (LLVM-C API)
 *          --runtime/jit.c--> native function (ORC LLJIT), or the same
 *            machine code from this process or the disk cache, keyed by the
 *            bitcode before optimization
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
#include "silvan/schedule.h"

typedef struct CompiledForest CompiledForest;

/* Pick the default schedule for a forest and a typical batch size */
extern void ScheduleDefault(const Forest *forest, int32_t batch_size,
							Schedule *schedule);

/* Compile a validated forest; NULL and a status on failure */
extern CompiledForest *CompileForest(const Forest *forest,
									 const Schedule *schedule,
									 const ForestProfile *profile,
									 SilvanStatus *status);

/*
 * The code cache's answer alone, for a forest whose trees may not have
 * been read (ForestDeserializeHeader): the compile of that forest and
 * schedule, or NULL; the default schedule a forest and batch size got
 * before, or false; and remembering it
 */
extern CompiledForest *CompileForestFromCache(const Forest *forest,
											  const Schedule *schedule,
											  const ForestProfile *profile);
extern bool ScheduleDefaultFromCache(const Forest *forest, int32_t batch_size,
									 Schedule *schedule);
extern void ScheduleDefaultRemember(const Forest *forest, int32_t batch_size,
									const Schedule *schedule);

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

/* Text of every IR level (schedule, HIR, MIR, optionally LLVM IR); malloc'd */
extern char *CompiledForestExplain(const CompiledForest *compiled,
								   bool with_llvm_ir);

/* Where the machine code came from: compiled, the disk cache, or shared */
extern const char *CompiledForestCodeOrigin(const CompiledForest *compiled);

/* Milliseconds spent in CompileForest */
extern double CompiledForestCompileMillis(const CompiledForest *compiled);

/* Release code and buffers */
extern void CompiledForestFree(CompiledForest *compiled);

#endif							/* SILVAN_COMPILER_H */
