/*
 * compile_cost.h
 *		What a compile may cost, estimated before any code is generated
 *		and counted before LLVM runs (src/compiler/compile_cost.c).
 */
#ifndef SILVAN_COMPILE_COST_H
#define SILVAN_COMPILE_COST_H

#include <llvm-c/Core.h>

#include "silvan/compiler.h"
#include "silvan/mir.h"
#include "silvan/repr.h"

/* A walk strategy's estimate of one emission of a walk (WalkStrategy.cost) */
typedef struct WalkCost
{
	int64_t		inline_instructions;	/* in the function that walks */
	int64_t		inline_loops;	/* loops there */
	int64_t		outlined_instructions;	/* in functions of their own (tree code) */
	int64_t		largest_outlined;	/* the largest of those functions */
	int64_t		largest_outlined_loops; /* the most loops one of them has */
} WalkCost;

/* What the estimate knows while it walks the MIR; strategies read and charge it */
typedef struct CostModel
{
	const Mir  *mir;
	const Hir  *hir;
	const ReprBuffers *buffers;
	const char *features;		/* the target's (LLVM's +a,-b list); "" for a gpu */
	uint32_t	bits_tables[MIR_MAX_OPS];	/* bitvector tree tables counted, by width */
	int64_t		inline_splits_left;	/* an outlined iteration's splits still
									 * inline (codegen.c), else -1 */
} CostModel;

/*
 * The estimate of a compile from its MIR (MirFinish ran), HIR and
 * buffers, for a target with features (LLVM's list; "" for a gpu)
 */
extern void CompileEstimateMir(const Mir *mir, const Hir *hir, const ReprBuffers *buffers,
							   const char *features, const CompileLimits *limits,
							   CompileCost *cost);

/* true if cost is within the limits, else false and a status naming what is over */
extern bool CompileCheckCost(const CompileCost *cost, const CompileLimits *limits,
							 bool estimated, SilvanStatus *status);

/* Add the module's instructions and loops, all and of its largest function, to counted */
extern void CompileCountModule(LLVMModuleRef module, CompileCost *counted);


#endif							/* SILVAN_COMPILE_COST_H */
