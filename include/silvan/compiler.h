/*
 * compiler.h
 *		The public face of the compiler: Forest + schedule -> native code.
 *
 * Pipeline (one pass per file under src/compiler):
 *
 *   Forest --hir.c--> HIR (tree order, padding, per-tree depth)
 *          --schedule.c--> Schedule (default by batch size, or given)
 *          --mir.c--> MIR (explicit loop nest over batch and tree, walk ops)
 *          --repr_*.c--> representation buffers (node layout in memory)
 *          --codegen.c--> LLVM IR (LLVM-C API)
 *          --runtime/jit.c--> native function (ORC LLJIT)
 *
 * The compiled function adds every tree's leaf value into a margin
 * accumulator prepared by ForestMarginsInit, in the same order and
 * precision as the reference interpreter, so results are identical.
 * Model data lives in the representation's buffers, not in the code.
 */
#ifndef SILVAN_COMPILER_H
#define SILVAN_COMPILER_H

#include "silvan/forest.h"

typedef struct CompiledForest CompiledForest;

/* Knobs of the schedule that 0.1's default pipeline understands */
typedef struct Schedule
{
	int32_t		batch_block;	/* rows per outer batch tile; 0 = whole batch */
	int32_t		interleave;		/* rows walked together through one tree */
	int32_t		unroll_depth;	/* unroll walks of trees up to this depth */
	char		representation[16]; /* "array" (only one in 0.1) */
} Schedule;

/* Pick the default schedule for a forest and a typical batch size */
extern void ScheduleDefault(const Forest *forest, int32_t batch_size,
							Schedule *schedule);

/* The schedule in the text form of the schedule language (malloc'd) */
extern char *ScheduleToText(const Schedule *schedule);

/* Compile a validated forest; NULL and a status on failure */
extern CompiledForest *CompileForest(const Forest *forest,
									 const Schedule *schedule,
									 SilvanStatus *status);

/*
 * Add all trees' leaf values into acc (num_rows * num_groups values of the
 * forest's precision, prepared by ForestMarginsInit).  rows: num_rows rows
 * of num_features values of the forest's precision, row-major.
 */
extern void CompiledForestAccumulate(const CompiledForest *compiled,
									 const void *rows, int64_t num_rows,
									 void *acc);

/* Text of every IR level (schedule, HIR, MIR, optionally LLVM IR); malloc'd */
extern char *CompiledForestExplain(const CompiledForest *compiled,
								   bool with_llvm_ir);

/* Milliseconds spent in CompileForest */
extern double CompiledForestCompileMillis(const CompiledForest *compiled);

/* Release code and buffers */
extern void CompiledForestFree(CompiledForest *compiled);

#endif							/* SILVAN_COMPILER_H */
