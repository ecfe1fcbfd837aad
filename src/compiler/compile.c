/*
 * compile.c
 *		The compiler driver: Forest + schedule -> native batch function.
 *
 * Passes, in order, each in its own file:
 *
 *   hir.c      Forest -> HIR (model order, sibling pairs, padding)
 *   mir.c      HIR + schedule -> MIR loop nest
 *   repr_*.c   HIR -> representation buffers (model data)
 *   codegen.c  MIR -> LLVM IR, layout details asked of the representation
 *   jit.c      LLVM IR -> short pass list -> machine code, under its own
 *              resource tracker
 *
 * The compiled forest keeps the buffers, the machine code and the text of
 * every level for explain; the Forest itself is not referenced afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/jit.h"

struct CompiledForest
{
	Schedule	schedule;
	const Representation *repr;
	ReprBuffers buffers;
	JitCode    *code;
	SilvanBatchFn fn;
	double		compile_ms;
	char	   *schedule_text;
	char	   *hir_text;
	char	   *mir_text;
	char	   *llvm_ir;
};

/* Milliseconds on a monotonic clock */
static double
NowMillis(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Keep a copy of an LLVM message, then dispose of it */
static char *
TakeLlvmMessage(char *message)
{
	char	   *copy = message ? strdup(message) : NULL;

	LLVMDisposeMessage(message);
	return copy;
}

/* Generate, optimize and JIT the batch function */
static bool
CompileCode(CompiledForest *compiled, const Mir *mir, const Representation *repr,
			SilvanStatus *status)
{
	JitModule	jm;
	char		name[64];
	void	   *address = NULL;

	snprintf(name, sizeof(name), "silvan_forest_batch_%lu", JitNextId());
	if (!JitModuleCreate(name, &jm, status))
		return false;
	if (!CodegenForest(mir, repr, &compiled->buffers, jm.module, name,
					   JitHostCpuName(), JitHostCpuFeatures(), status) ||
		!JitOptimizeModule(&jm, status))
	{
		JitModuleDispose(&jm);
		return false;
	}
	compiled->llvm_ir = TakeLlvmMessage(LLVMPrintModuleToString(jm.module));
	compiled->code = JitAddModule(&jm, name, &address, status);
	if (compiled->code == NULL)
		return false;
	compiled->fn = (SilvanBatchFn) address;
	return true;
}

/* Run the passes that need the HIR; the HIR is freed by the caller */
static bool
CompileFromHir(CompiledForest *compiled, const Hir *hir, SilvanStatus *status)
{
	const Representation *repr;
	Mir			mir;

	if (!MirBuild(hir, &compiled->schedule, &mir, status))
		return false;
	repr = ReprLookup(compiled->schedule.representation);
	compiled->repr = repr;
	if (!repr->build(hir, &compiled->buffers, status))
		return false;
	compiled->schedule_text = ScheduleToText(&compiled->schedule);
	compiled->hir_text = HirDump(hir, false);
	compiled->mir_text = MirDump(&mir);
	if (!compiled->schedule_text || !compiled->hir_text || !compiled->mir_text)
		return StatusNoMemory(status, "the compiler's explain text");
	return CompileCode(compiled, &mir, repr, status);
}

/* Compile a validated forest; NULL and a status on failure */
CompiledForest *
CompileForest(const Forest *forest, const Schedule *schedule, SilvanStatus *status)
{
	double		start = NowMillis();
	CompiledForest *compiled = calloc(1, sizeof(CompiledForest));
	Hir		   *hir;
	bool		ok;

	if (compiled == NULL)
	{
		StatusNoMemory(status, "the compiled model");
		return NULL;
	}
	if (schedule)
		compiled->schedule = *schedule;
	else
		ScheduleDefault(forest, 0, &compiled->schedule);
	compiled->schedule.representation[sizeof(compiled->schedule.representation) - 1] = '\0';
	if (!ScheduleCheck(&compiled->schedule, status))
	{
		CompiledForestFree(compiled);
		return NULL;
	}
	hir = HirBuild(forest, compiled->schedule.unroll_depth, status);
	ok = hir != NULL && CompileFromHir(compiled, hir, status);
	HirFree(hir);
	if (!ok)
	{
		CompiledForestFree(compiled);
		return NULL;
	}
	compiled->compile_ms = NowMillis() - start;
	return compiled;
}

/* Add all trees' leaf values into acc (prepared by ForestMarginsInit) */
void
CompiledForestAccumulate(const CompiledForest *compiled, const void *rows,
						 int64_t num_rows, void *acc)
{
	const ReprBuffers *b = &compiled->buffers;

	if (num_rows <= 0)
		return;
	compiled->fn(rows, num_rows, acc, b->nodes, b->trees, b->category_words,
				 b->category_sets);
}

/* Text of every IR level (schedule, HIR, MIR, optionally LLVM IR) */
char *
CompiledForestExplain(const CompiledForest *compiled, bool with_llvm_ir)
{
	TextBuf		buf = {0};

	TextAppend(&buf, "schedule: %s\n", compiled->schedule_text);
	TextAppend(&buf, "%s", compiled->hir_text);
	TextAppend(&buf, "representation: %s (%s), %lld nodes of %zu bytes, %d category sets\n",
			   compiled->schedule.representation, compiled->repr->variant(&compiled->buffers),
			   (long long) compiled->buffers.num_nodes, compiled->buffers.node_size,
			   compiled->buffers.num_category_sets);
	TextAppend(&buf, "%s", compiled->mir_text);
	TextAppend(&buf, "compile time: %.3f ms\n", compiled->compile_ms);
	if (with_llvm_ir && compiled->llvm_ir)
		TextAppend(&buf, "llvm ir:\n%s", compiled->llvm_ir);
	return TextFinish(&buf);
}

/* Milliseconds spent in CompileForest */
double
CompiledForestCompileMillis(const CompiledForest *compiled)
{
	return compiled->compile_ms;
}

/* Release code and buffers */
void
CompiledForestFree(CompiledForest *compiled)
{
	if (compiled == NULL)
		return;
	JitCodeFree(compiled->code);
	ReprBuffersFree(&compiled->buffers);
	free(compiled->schedule_text);
	free(compiled->hir_text);
	free(compiled->mir_text);
	free(compiled->llvm_ir);
	free(compiled);
}
