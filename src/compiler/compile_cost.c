/*
 * compile_cost.c
 *		Bound what a compile may cost before it starts.
 *
 * Any role may load a model and set its schedules, and a schedule can ask
 * for a great deal of code: specialize(tree) copies a loop's body once
 * per tree, interleave widens every walk to sixteen lanes and more, a
 * code walk writes every split of every tree into code.  LLVM's time on
 * a function grows much faster than the function, so a compile is
 * bounded twice, by the limits in the compile's options (the adapter's
 * silvan.compile_max_instructions, silvan.compile_max_function_instructions
 * and silvan.compile_max_function_loops), each check by CompileCheckCost:
 *
 *   1. before any code is generated, by an estimate made from the MIR,
 *      the HIR and the layout (CompileEstimateMir): the walks the loop
 *      nest emits (each specialized copy of a body, each step width of an
 *      interleaved loop), each priced by its walk strategy
 *      (WalkStrategy.cost: the code one emission makes, in the function
 *      that walks and in functions of their own), summed per function
 *      the way codegen.c outlines them (parallel loop bodies, outlined
 *      specialized iterations, code walks' tree functions);
 *   2. after code generation and before LLVM's passes, by counting the
 *      module's instructions exactly (CompileCountModule), so a schedule
 *      the estimate misjudged still never reaches LLVM over the bound.
 *
 * A compile over a bound fails with SILVAN_ERROR_LIMIT (54000), naming
 * the directive that multiplies the code most and the estimate, with a
 * hint.  The estimate is calibrated on the compiles of the tests'
 * schedules and the tuner's spaces to be within a factor of two of the
 * count (test_compile_limits.c checks it), and the default limits are far
 * above what any default schedule or tuner candidate of the real models
 * in ../shared/models needs.  The per-function bound also keeps each
 * function's passes and instruction selection short, which is what lets
 * a cancel request stop LLVM quickly (llvm_emit.cpp).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/compile_cost.h"
#include "silvan/compiler.h"

/* Instructions and loops of a function */
typedef struct CostSize
{
	int64_t		instructions;
	int64_t		loops;
} CostSize;

/* The estimate as it walks the MIR: the function being filled, and the worst so far */
typedef struct CostWalker
{
	CostModel	model;
	const CompileLimits *limits;
	CompileCost *cost;
	CostSize	fn;				/* the function being filled */
	const MirOp *fn_walk;		/* its walk of most code, and that walk's copies */
	int64_t		fn_walk_copies;
	int64_t		fn_walk_size;
	double		worst;			/* the largest function's share of its limits */
	const MirOp *blame;			/* the worst function's walk of most code */
	int64_t		blame_copies;
} CostWalker;

/* Instructions a function has before its walks: entry, argument loads, return */
#define COST_FUNCTION_BASE		40
/* A loop's own instructions: induction variable, compare, branch, range */
#define COST_LOOP				12

/* How much of the function limits a function of this size takes (the defaults' when off) */
static double
CostShare(const CompileLimits *limits, const CostSize *size)
{
	int64_t		li = limits->max_function_instructions > 0 ?
		limits->max_function_instructions : COMPILE_MAX_FUNCTION_INSTRUCTIONS_DEFAULT;
	int64_t		ll = limits->max_function_loops > 0 ?
		limits->max_function_loops : COMPILE_MAX_FUNCTION_LOOPS_DEFAULT;
	double		a = (double) size->instructions / (double) li;
	double		b = (double) size->loops / (double) ll;

	return a > b ? a : b;
}

/* Record a finished function of this size, made mostly by walk (of copies copies) */
static void
CostFunctionDone(CostWalker *w, const CostSize *size, const MirOp *walk, int64_t copies)
{
	double		share = CostShare(w->limits, size);

	if (size->instructions > w->cost->largest_function)
		w->cost->largest_function = size->instructions;
	if (size->loops > w->cost->largest_function_loops)
		w->cost->largest_function_loops = size->loops;
	if (share > w->worst)
	{
		w->worst = share;
		w->blame = walk;
		w->blame_copies = copies;
	}
}

/* Add code to the function being filled, and to the compile */
static void
CostAdd(CostWalker *w, int64_t instructions, int64_t loops)
{
	w->fn.instructions += instructions;
	w->fn.loops += loops;
	w->cost->instructions += instructions;
	w->cost->loops += loops;
}

/* Functions of their own (tree code): to the compile, and the largest */
static void
CostAddOutlined(CostWalker *w, const WalkCost *walk, const MirOp *op)
{
	CostSize	largest = {walk->largest_outlined, walk->largest_outlined_loops};

	w->cost->instructions += walk->outlined_instructions;
	CostFunctionDone(w, &largest, op, 1);
}

/* Is tree loop op specialized in code: it and every tree loop around it (constant ranges) */
static bool
CostSpecialized(const MirOp *op)
{
	if (op->kind != MIR_LOOP || !op->specialize || op->parallel || op->extent <= 0)
		return false;
	for (const MirOp *p = op->parent; p != NULL; p = p->parent)
		if (p->kind == MIR_LOOP && p->index_kind == INDEX_TREE && !p->specialize)
			return false;
	return true;
}

/* The tree a specialized copy fixes for the walk below, or -1 */
static int32_t
CostCopyTree(const MirOp *walk, int64_t copy, int64_t copies)
{
	int64_t		span = walk->tree_hi - walk->tree_lo;

	if (span <= 0 || copies <= 0)
		return -1;
	return walk->tree_lo + (int32_t) (copy * span / copies);
}

static void CostOps(CostWalker *w, const MirOp *op, int64_t copies, bool in_outlined,
					bool fixed);

/*
 * One walk op, emitted copies times (specialized loops around it), once
 * per step width of its loop (each with its loop), or once per copy when
 * its own loop is the specialized one; where specialized loops fix its
 * tree (fixed) walks are priced per copy's tree, on a sample when there
 * are many
 */
static void
CostWalk(CostWalker *w, const MirOp *op, int64_t copies, bool specialized, bool fixed)
{
	const WalkCodegen *strategy = CgWalkCodegen(op);
	int32_t		widths[5];
	int			num_widths = specialized ? 1 : MirStepWidths(op, widths);
	int64_t		before = w->fn.instructions;

	if (specialized)
		widths[0] = op->width > 1 && op->lanes == MIR_LANES_ROWS ? op->width : 1;
	for (int i = 0; i < num_widths; i++)
	{
		int64_t		samples = copies < 64 ? copies : 64;
		WalkCost	sum = {0};

		for (int64_t s = 0; s < samples; s++)
		{
			WalkCost	one = {0};
			int32_t		tree = fixed ? CostCopyTree(op, s * copies / samples, copies) : -1;

			strategy->cost(&w->model, op, widths[i], tree, &one);
			sum.inline_instructions += one.inline_instructions;
			sum.inline_loops += one.inline_loops;
			sum.outlined_instructions += one.outlined_instructions;
			if (one.largest_outlined > sum.largest_outlined)
				sum.largest_outlined = one.largest_outlined;
			if (one.largest_outlined_loops > sum.largest_outlined_loops)
				sum.largest_outlined_loops = one.largest_outlined_loops;
		}
		if (samples > 0)
		{
			sum.inline_instructions = sum.inline_instructions * copies / samples;
			sum.inline_loops = sum.inline_loops * copies / samples;
			sum.outlined_instructions = sum.outlined_instructions * copies / samples;
		}
		/* each copy's step loop of this width, or none for a specialized copy */
		CostAdd(w, sum.inline_instructions + (specialized ? 0 : copies * COST_LOOP),
				sum.inline_loops + (specialized ? 0 : copies));
		CostAddOutlined(w, &sum, op);
		w->cost->walk_copies += copies;
	}
	if (w->fn.instructions - before > w->fn_walk_size)
	{
		w->fn_walk = op;
		w->fn_walk_copies = copies * num_widths;
		w->fn_walk_size = w->fn.instructions - before;
	}
}

/*
 * The body of op as functions of their own: one for a parallel loop,
 * one per iteration of an outlined specialized loop (priced once: they
 * are alike)
 */
static void
CostOutlinedBody(CostWalker *w, const MirOp *op, int64_t functions, bool fixed)
{
	CostSize	saved = w->fn;
	const MirOp *saved_walk = w->fn_walk;
	int64_t		saved_copies = w->fn_walk_copies;
	int64_t		saved_size = w->fn_walk_size;
	CompileCost before = *w->cost;

	int64_t		saved_inline = w->model.inline_splits_left;

	w->fn.instructions = COST_FUNCTION_BASE;
	w->fn.loops = 0;
	w->fn_walk = NULL;
	w->fn_walk_copies = 0;
	w->fn_walk_size = 0;
	/* an outlined iteration takes its code walks' first splits inline */
	w->model.inline_splits_left = op->parallel ? -1 : CODEGEN_INLINE_CODE_NODES;
	CostOps(w, op->body, 1, !op->parallel, fixed);
	w->model.inline_splits_left = saved_inline;
	/* the others alike, and each function's base */
	w->cost->instructions += COST_FUNCTION_BASE +
		(functions - 1) * (w->cost->instructions - before.instructions + COST_FUNCTION_BASE);
	w->cost->loops += (functions - 1) * (w->cost->loops - before.loops);
	CostFunctionDone(w, &w->fn, w->fn_walk, w->fn_walk_copies);
	w->fn = saved;
	w->fn_walk = saved_walk;
	w->fn_walk_copies = saved_copies;
	w->fn_walk_size = saved_size;
	CostAdd(w, COST_LOOP * functions, 0);	/* the calls */
}

/* A loop op: a function of its own when parallel, copies when specialized */
static void
CostLoop(CostWalker *w, const MirOp *op, int64_t copies, bool in_outlined, bool fixed)
{
	bool		specialized = CostSpecialized(op);
	int64_t		body_copies = specialized ? copies * op->extent : copies;

	fixed = fixed || specialized;
	if (op->parallel || (specialized && MirOutlinesIterations(w->model.mir, op, in_outlined)))
	{
		CostAdd(w, COST_LOOP, 1);
		CostOutlinedBody(w, op, op->parallel ? 1 : op->extent, fixed);
		return;
	}
	if (op->body != NULL && op->body->kind == MIR_WALK)
	{
		/* the walk's loop: its step loops (CostWalk), or its copies */
		CostWalk(w, op->body, body_copies, specialized, fixed);
		CostOps(w, op->body->next, body_copies, in_outlined, fixed);
		return;
	}
	if (!specialized)
		CostAdd(w, COST_LOOP, 1);
	CostOps(w, op->body, body_copies, in_outlined, fixed);
}

/* A list of MIR ops; fixed: specialized loops around them fix the tree */
static void
CostOps(CostWalker *w, const MirOp *op, int64_t copies, bool in_outlined, bool fixed)
{
	for (; op != NULL; op = op->next)
	{
		switch (op->kind)
		{
			case MIR_LOOP:
				CostLoop(w, op, copies, in_outlined, fixed);
				break;
			case MIR_WALK:
				CostWalk(w, op, copies, false, fixed);
				break;
			case MIR_REDUCE:
				break;			/* priced with its walk */
			case MIR_REDUCE_DIM:
				CostAdd(w, 4 * COST_LOOP * copies, 3 * copies);
				break;
		}
	}
}

/* Format n with thousands separators into buf */
static const char *
Thousands(int64_t n, char *buf, size_t size)
{
	char		digits[32];
	int			len = snprintf(digits, sizeof(digits), "%lld", (long long) (n < 0 ? -n : n));
	size_t		at = 0;

	if (n < 0 && at + 1 < size)
		buf[at++] = '-';
	for (int i = 0; i < len && at + 2 < size; i++)
	{
		if (i > 0 && (len - i) % 3 == 0)
			buf[at++] = ',';
		buf[at++] = digits[i];
	}
	buf[at] = '\0';
	return buf;
}

/* The name of the variable of loop op */
static const char *
CostVarName(const Mir *mir, const MirOp *op)
{
	return mir->schedule->vars[op->var].name;
}

/*
 * Say which directive makes the worst function what it is: the
 * specialized loop of most iterations around its biggest walk, else the
 * walk's code walk or interleave
 */
static void
CostBlame(const CostWalker *w, CompileCost *cost)
{
	const Mir  *mir = w->model.mir;
	const MirOp *op = w->blame;
	const MirOp *most = NULL;
	const MirOp *loop = op != NULL ? op->parent : NULL;
	char		copies[32];

	cost->directive[0] = '\0';
	cost->blame[0] = '\0';
	if (op == NULL || loop == NULL)
		return;
	for (const MirOp *p = loop; p != NULL; p = p->parent)
		if (CostSpecialized(p) && (most == NULL || p->extent > most->extent))
			most = p;
	if (most != NULL)
	{
		snprintf(cost->directive, sizeof(cost->directive), "specialize(%s)",
				 CostVarName(mir, most));
		snprintf(cost->blame, sizeof(cost->blame),
				 "specialize(%s) copies the walk below it once per tree%s, %s times",
				 CostVarName(mir, most), CostSpecialized(loop) ? "" : " and step width",
				 Thousands(w->blame_copies, copies, sizeof(copies)));
	}
	else if (CgWalkCodegen(op)->blame != NULL)
		CgWalkCodegen(op)->blame(op, CostVarName(mir, loop), cost->directive,
								 sizeof(cost->directive), cost->blame, sizeof(cost->blame));
	else if (op->width > 1)
	{
		snprintf(cost->directive, sizeof(cost->directive), "interleave(%s)",
				 CostVarName(mir, loop));
		snprintf(cost->blame, sizeof(cost->blame),
				 "interleave(%s) walks %d lanes at once", CostVarName(mir, loop), op->width);
	}
}

/* See compile_cost.h */
void
CompileEstimateMir(const Mir *mir, const Hir *hir, const ReprBuffers *buffers,
				   const char *features, const CompileLimits *limits, CompileCost *cost)
{
	CostWalker	w = {.cost = cost, .limits = limits};

	memset(cost, 0, sizeof(CompileCost));
	w.model.mir = mir;
	w.model.hir = hir;
	w.model.buffers = buffers;
	w.model.features = features;
	w.model.inline_splits_left = -1;
	w.fn.instructions = COST_FUNCTION_BASE;
	cost->instructions = COST_FUNCTION_BASE;
	CostOps(&w, mir->root, 1, false, false);
	CostFunctionDone(&w, &w.fn, w.fn_walk, w.fn_walk_copies);
	CostBlame(&w, cost);
}

/* Refuse a compile over a limit: what, how much, which directive, a hint */
static bool
CostRefuse(const CompileCost *cost, const char *what, int64_t amount, int64_t limit,
		   const char *setting, bool estimated, SilvanStatus *status)
{
	char		a[32];
	char		l[32];

	StatusFail(status, SILVAN_ERROR_LIMIT, "schedule exceeds the compile budget",
			   "%s%s%s %s%s %s (%s); at most %s are allowed (silvan.%s).",
			   cost->blame[0] ? cost->blame : "", cost->blame[0] ? ": " : "", what,
			   estimated ? "about " : "", Thousands(amount, a, sizeof(a)),
			   strstr(setting, "loops") ? "loops" : "LLVM IR instructions",
			   estimated ? "estimated before generating code" : "counted before LLVM ran",
			   Thousands(limit, l, sizeof(l)), setting);
	if (cost->directive[0])
		return StatusHint(status, "Narrow %s (tile the loop and specialize only an inner one, "
						  "or interleave fewer rows), or ask a superuser to raise silvan.%s.",
						  cost->directive, setting);
	return StatusHint(status, "Ask a superuser to raise silvan.%s.", setting);
}

/* See compile_cost.h */
bool
CompileCheckCost(const CompileCost *cost, const CompileLimits *limits, bool estimated,
				 SilvanStatus *status)
{
	if (limits->max_function_loops > 0 && cost->largest_function_loops > limits->max_function_loops)
		return CostRefuse(cost, "its largest function would have", cost->largest_function_loops,
						  limits->max_function_loops, "compile_max_function_loops", estimated,
						  status);
	if (limits->max_function_instructions > 0 &&
		cost->largest_function > limits->max_function_instructions)
		return CostRefuse(cost, "its largest function would have", cost->largest_function,
						  limits->max_function_instructions, "compile_max_function_instructions",
						  estimated, status);
	if (limits->max_instructions > 0 && cost->instructions > limits->max_instructions)
		return CostRefuse(cost, "the compile would have", cost->instructions,
						  limits->max_instructions, "compile_max_instructions", estimated, status);
	return true;
}

/* A block of a function, by address, with its place in the function */
typedef struct CostBlock
{
	LLVMBasicBlockRef block;
	uint32_t	at;
} CostBlock;

/* Order blocks by address, for BlockIndex */
static int
BlockCompare(const void *a, const void *b)
{
	uintptr_t	x = (uintptr_t) ((const CostBlock *) a)->block;
	uintptr_t	y = (uintptr_t) ((const CostBlock *) b)->block;

	return x < y ? -1 : x > y;
}

/* The place of block in its function (sorted: n blocks by address) */
static uint32_t
BlockIndex(const CostBlock *sorted, uint32_t n, LLVMBasicBlockRef block)
{
	uint32_t	lo = 0;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if ((uintptr_t) sorted[mid].block < (uintptr_t) block)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && sorted[lo].block == block ? sorted[lo].at : 0;
}

/*
 * The loops of fn: the back edges of a depth-first walk of its blocks
 * from the entry (an edge to a block on the walk's stack), which for the
 * reducible graphs codegen.c makes are the loops' latches.  Iterative:
 * each stack entry keeps the next successor to look at.
 */
static int64_t
CountLoops(LLVMValueRef fn)
{
	uint32_t	n = LLVMCountBasicBlocks(fn);
	LLVMBasicBlockRef *blocks = n > 0 ? malloc(sizeof(LLVMBasicBlockRef) * n) : NULL;
	CostBlock  *sorted = n > 0 ? malloc(sizeof(CostBlock) * n) : NULL;
	uint8_t    *state = n > 0 ? calloc(n, 1) : NULL;	/* 0 new, 1 on stack, 2 done */
	uint32_t   *stack = n > 0 ? malloc(sizeof(uint32_t) * n) : NULL;
	uint32_t   *next = n > 0 ? calloc(n, sizeof(uint32_t)) : NULL;
	int64_t		loops = 0;
	uint32_t	depth = 0;

	if (blocks == NULL || sorted == NULL || state == NULL || stack == NULL || next == NULL)
		goto done;
	LLVMGetBasicBlocks(fn, blocks);
	for (uint32_t i = 0; i < n; i++)
	{
		sorted[i].block = blocks[i];
		sorted[i].at = i;
	}
	qsort(sorted, n, sizeof(CostBlock), BlockCompare);
	stack[depth++] = 0;
	state[0] = 1;
	while (depth > 0)
	{
		uint32_t	b = stack[depth - 1];
		LLVMValueRef term = LLVMGetBasicBlockTerminator(blocks[b]);
		uint32_t	succ = term != NULL ? LLVMGetNumSuccessors(term) : 0;
		uint32_t	to;

		if (next[b] == succ)
		{
			state[b] = 2;
			depth--;
			continue;
		}
		to = BlockIndex(sorted, n, LLVMGetSuccessor(term, next[b]++));
		if (state[to] == 1)
			loops++;
		else if (state[to] == 0)
		{
			state[to] = 1;
			stack[depth++] = to;
		}
	}
done:
	free(blocks);
	free(sorted);
	free(state);
	free(stack);
	free(next);
	return loops;
}

/* See compile_cost.h */
void
CompileCountModule(LLVMModuleRef module, CompileCost *counted)
{
	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn; fn = LLVMGetNextFunction(fn))
	{
		int64_t		n = 0;
		int64_t		loops;

		for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
			for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
				n++;
		loops = n > 0 ? CountLoops(fn) : 0;
		counted->instructions += n;
		counted->loops += loops;
		if (n > counted->largest_function)
			counted->largest_function = n;
		if (loops > counted->largest_function_loops)
			counted->largest_function_loops = loops;
	}
}
