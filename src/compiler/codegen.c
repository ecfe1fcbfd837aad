/*
 * codegen.c
 *		Lower the MIR loop nest to LLVM functions.
 *
 * The kernel is
 *
 *   void fn(const SilvanKernelArgs *args)
 *
 * and every parallel loop adds a function fn_par<k>(ctx, begin, end,
 * chunk) holding that loop's body, which the runtime's threads call on
 * chunks of the loop's range.  Preconditions: MirBuild accepted the
 * schedule (so every loop's range is computable where the loop starts) and
 * MirFinish ran.
 *
 * Loops and ranges.  Each loop op becomes a counted loop over its index
 * variable's range, computed where the loop starts from the ranges and
 * values of the loops around it (mir.h gives the arithmetic).  An
 * environment (CodegenEnv) carries those LLVM values down the nest: ranges
 * and values per index variable, the accumulation target, and the tree and
 * row once a loop has fixed them (the tree's record is then loaded once, not
 * once per walk).  Environments are copied into each loop body, so a value
 * is only ever used where its definition dominates.  The innermost loop of
 * an interleaved walk steps by the walk's width, with remainder loops of the
 * narrower steps MirStepWidths gives, down to 1.  When that loop is the
 * inner loop of a tile exactly as wide as the walk (tile(p, o, i, w);
 * interleave(i)), the two loops are emitted as one loop over p stepping by
 * w: the same iterations in the same order, without setting up a loop per
 * tile.
 *
 * Specialized loops (specialize() on a loop over trees) are emitted once
 * per iteration, each copy with its tree a constant, for walks that
 * compile the tree itself (codeWalk); over one fixed row the copies keep
 * the row's margins in registers.
 *
 * Parallel loops.  The body is outlined: the environment's non-constant
 * values are stored into a context array (one i64 each, in an alloca of
 * the calling function's entry block), the outlined function reloads them,
 * and the call goes through args->parallel_for, which returns once every
 * chunk is done.  A conflicting loop (privatize) points each chunk but the
 * first at its own slice of args->partials; the reduce-dimension op that
 * follows it adds the slices of the chunks that ran into acc over the rows
 * the loop touched and zeroes them (MIN and MAX forests: folds them in,
 * chunk by chunk in tree order, with the same rule as a leaf, and sets
 * them back to NaN, their "no tree yet").  The outermost loops poll the
 * interrupt flag once per iteration and return early when it is set.
 *
 * Targets.  The kernel's parameters after the arguments, its marking and
 * the thread indices are the target's (target.h); on a gpu target a loop
 * mapped to a grid or block dimension is codegen_gpu.c's, which also lays
 * out the phases the kernel's barriers cut.  Allocas go through CgAlloca,
 * so a target that keeps its stack in another address space sees the same
 * IR.
 *
 * Floating point: plain fcmp and fadd without fast-math flags, one add (or
 * MIN / MAX fold, CgAggregate) per tree per row, in tree order for any
 * serial schedule, so results equal the interpreter's bit for bit; only
 * conflicting (tree-parallel) loops and reordered trees change the order
 * of the sums (a MIN / MAX fold picks the same value in any order, save
 * which of 0 and -0 when both occur).  Model data and row loads
 * carry !invariant.load, since nothing the kernel stores aliases them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>

#include "silvan/cancel.h"
#include "silvan/codegen.h"
#include "silvan/jit.h"

/* A counted loop being emitted */
static void EmitOps(CodegenContext *cg, const MirOp *op, CodegenEnv *env);

/* See codegen.h */
bool
CgCanceled(CodegenContext *cg)
{
	if (!cg->canceled && CancelRequested())
		cg->canceled = true;
	return cg->canceled;
}

/* Append a block to the function being emitted */
LLVMBasicBlockRef
CgNewBlock(CodegenContext *cg, const char *name)
{
	return LLVMAppendBasicBlockInContext(cg->context, cg->fn.function, name);
}

/*
 * n values of type (n NULL: one) on the stack of the function being
 * emitted, as a pointer of address space 0: where a target keeps its stack
 * elsewhere (AMDGPU: address space 5) the alloca is cast to a flat pointer,
 * so the code that takes the address, and the functions it is passed to,
 * are the same on every target.  The builder stays where it was.
 */
LLVMValueRef
CgAlloca(CodegenContext *cg, LLVMTypeRef type, LLVMValueRef v_count, const char *name)
{
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_here = LLVMGetInsertBlock(b);
	LLVMValueRef v;

	LLVMPositionBuilderAtEnd(b, cg->fn.b_allocas);
	v = v_count ? LLVMBuildArrayAlloca(b, type, v_count, name) : LLVMBuildAlloca(b, type, name);
	if (LLVMGetPointerAddressSpace(LLVMTypeOf(v)) != 0)
		v = LLVMBuildAddrSpaceCast(b, v, LLVMPointerType(type, 0), name);
	LLVMPositionBuilderAtEnd(b, b_here);
	return v;
}

/* See codegen.h */
LLVMValueRef
CgDeclare(CodegenContext *cg, const char *name, LLVMTypeRef t_fn)
{
	LLVMValueRef fn = LLVMGetNamedFunction(cg->module, name);

	return fn != NULL ? fn : LLVMAddFunction(cg->module, name, t_fn);
}

/*
 * The n lanes' elements (of type t_elem: float, double, i32 or i64) at the
 * pointers v_ptrs (<n x t_elem*>): llvm.masked.gather with every lane on,
 * which LLVM turns into the target's gather instruction or one load per lane
 */
LLVMValueRef
CgMaskedGather(CodegenContext *cg, LLVMTypeRef t_elem, LLVMValueRef v_ptrs, unsigned n,
			   const char *name)
{
	LLVMTypeKind kind = LLVMGetTypeKind(t_elem);
	const char *suffix = kind == LLVMFloatTypeKind ? "f32" : kind == LLVMDoubleTypeKind ? "f64" :
		LLVMGetIntTypeWidth(t_elem) == 64 ? "i64" : "i32";
	LLVMTypeRef t_vec = LLVMVectorType(t_elem, n);
	LLVMTypeRef params[4] = {
		LLVMVectorType(LLVMPointerType(t_elem, 0), n), cg->t_i32, LLVMVectorType(cg->t_i1, n), t_vec
	};
	LLVMTypeRef t_fn = LLVMFunctionType(t_vec, params, 4, false);
	LLVMValueRef args[4];
	char		fn_name[64];

	snprintf(fn_name, sizeof(fn_name), "llvm.masked.gather.v%u%s.v%up0%s", n, suffix, n, suffix);
	args[0] = v_ptrs;
	args[1] = CgInt32(cg, suffix[1] == '6' ? 8 : 4);
	args[2] = LLVMConstAllOnes(LLVMVectorType(cg->t_i1, n));
	args[3] = LLVMGetUndef(t_vec);
	return LLVMBuildCall2(cg->builder, t_fn, CgDeclare(cg, fn_name, t_fn), args, 4, name);
}

/* v (a scalar) in each of lanes lanes: an insert and a shuffle, folded for constants */
LLVMValueRef
CgSplat(LLVMBuilderRef b, LLVMValueRef v, unsigned lanes)
{
	LLVMContextRef context = LLVMGetTypeContext(LLVMTypeOf(v));
	LLVMTypeRef t_vec = LLVMVectorType(LLVMTypeOf(v), lanes);
	LLVMTypeRef t_i32 = LLVMInt32TypeInContext(context);
	LLVMValueRef v_one = LLVMBuildInsertElement(b, LLVMGetUndef(t_vec), v,
												LLVMConstInt(t_i32, 0, false), "");

	return LLVMBuildShuffleVector(b, v_one, LLVMGetUndef(t_vec),
								  LLVMConstNull(LLVMVectorType(t_i32, lanes)), "");
}

/* Is feature name on in LLVM's comma-separated "+name,-other" list? */
bool
CgHasFeature(const char *features, const char *name)
{
	size_t		len = strlen(name);

	for (const char *p = features; p != NULL && *p != '\0'; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (p[0] == '+' && strncmp(p + 1, name, len) == 0 && (p[1 + len] == ',' || p[1 + len] == '\0'))
			return true;
	return false;
}

/* A load of model data or rows: invariant for the whole call */
LLVMValueRef
CgLoad(CodegenContext *cg, LLVMTypeRef type, LLVMValueRef v_ptr, const char *name)
{
	LLVMValueRef v = LLVMBuildLoad2(cg->builder, type, v_ptr, name);

	LLVMSetMetadata(v, cg->md_invariant, cg->md_empty);
	return v;
}

/* Index of a code constant's slot (type float or double), added if new; -1 out of memory */
static int64_t
CodeConstantSlot(CodegenContext *cg, uint64_t bits)
{
	uint64_t	h;

	if (cg->num_code_consts * 2 >= cg->code_const_index_size)
	{
		int64_t		size = cg->code_const_index_size ? cg->code_const_index_size * 2 : 1024;
		int64_t    *index = calloc((size_t) size, sizeof(int64_t));

		if (index == NULL)
			return -1;
		for (int64_t k = 0; k < cg->num_code_consts; k++)
		{
			h = (cg->code_consts[k] * UINT64_C(0x9E3779B97F4A7C15)) >> 20;
			while (index[h % (uint64_t) size] != 0)
				h++;
			index[h % (uint64_t) size] = k + 1;
		}
		free(cg->code_const_index);
		cg->code_const_index = index;
		cg->code_const_index_size = size;
	}
	h = (bits * UINT64_C(0x9E3779B97F4A7C15)) >> 20;
	for (;; h++)
	{
		int64_t		k = cg->code_const_index[h % (uint64_t) cg->code_const_index_size];

		if (k == 0)
			break;
		if (cg->code_consts[k - 1] == bits)
			return k - 1;
	}
	if (cg->num_code_consts == cg->cap_code_consts)
	{
		int64_t		cap = cg->cap_code_consts ? cg->cap_code_consts * 2 : 256;
		uint64_t   *grown = realloc(cg->code_consts, sizeof(uint64_t) * (size_t) cap);

		if (grown == NULL)
			return -1;
		cg->code_consts = grown;
		cg->cap_code_consts = cap;
	}
	cg->code_consts[cg->num_code_consts] = bits;
	cg->code_const_index[h % (uint64_t) cg->code_const_index_size] = cg->num_code_consts + 1;
	return cg->num_code_consts++;
}

/*
 * A float or double constant of the code, read from the code constants
 * (aux[REPR_AUX_CODE_CONSTANTS]) at a fixed offset instead of written as an
 * immediate.  x86 has no floating-point immediates: LLVM puts each into a
 * constant pool that the code addresses through a relocation, and linking
 * thousands of them (mtpl2's 8,700) is a large share of a fresh backend's
 * load of the code; a load at a fixed offset from a pointer the function
 * already holds needs none, and code that differs only in its constants
 * becomes the same code.
 */
LLVMValueRef
CgCodeConstant(CodegenContext *cg, LLVMTypeRef type, double value)
{
	bool		is_float = LLVMGetTypeKind(type) == LLVMFloatTypeKind;
	float		f = (float) value;
	uint64_t	bits = 0;
	int64_t		k;
	LLVMValueRef v_offset;

	if (is_float)
		memcpy(&bits, &f, sizeof(f));
	else
		memcpy(&bits, &value, sizeof(value));
	if ((k = CodeConstantSlot(cg, bits)) < 0)
	{
		cg->code_consts_failed = true;
		return LLVMConstReal(type, value);
	}
	v_offset = CgInt64(cg, k * (int64_t) sizeof(uint64_t));
	return CgLoad(cg, type,
				  LLVMBuildBitCast(cg->builder,
								   LLVMBuildGEP2(cg->builder, LLVMInt8TypeInContext(cg->context),
												 cg->v_aux[REPR_AUX_CODE_CONSTANTS], &v_offset, 1,
												 ""),
								   LLVMPointerType(type, 0), ""),
				  "v_code_const");
}

/* Open a loop: iv from v_start while iv < v_end (signed) */
void
CgLoopOpen(CodegenContext *cg, CodegenLoop *loop, const char *name,
		 LLVMValueRef v_start, LLVMValueRef v_end)
{
	char		label[64];
	LLVMBasicBlockRef b_pre = LLVMGetInsertBlock(cg->builder);
	LLVMBasicBlockRef b_body;

	snprintf(label, sizeof(label), "b_%s_head", name);
	loop->b_head = CgNewBlock(cg, label);
	snprintf(label, sizeof(label), "b_%s_body", name);
	b_body = CgNewBlock(cg, label);
	snprintf(label, sizeof(label), "b_%s_exit", name);
	loop->b_exit = CgNewBlock(cg, label);

	LLVMBuildBr(cg->builder, loop->b_head);
	LLVMPositionBuilderAtEnd(cg->builder, loop->b_head);
	loop->v_iv = LLVMBuildPhi(cg->builder, LLVMTypeOf(v_start), "v_iv");
	LLVMAddIncoming(loop->v_iv, &v_start, &b_pre, 1);
	LLVMBuildCondBr(cg->builder,
					LLVMBuildICmp(cg->builder, LLVMIntSLT, loop->v_iv, v_end, ""),
					b_body, loop->b_exit);
	LLVMPositionBuilderAtEnd(cg->builder, b_body);
}

/* Close a loop: step the iv, branch back, continue after the loop */
void
CgLoopClose(CodegenContext *cg, CodegenLoop *loop, int64_t step)
{
	LLVMValueRef v_next = LLVMBuildAdd(cg->builder, loop->v_iv,
									   LLVMConstInt(LLVMTypeOf(loop->v_iv), step, true),
									   "v_iv_next");
	LLVMBasicBlockRef b_latch = LLVMGetInsertBlock(cg->builder);

	LLVMBuildBr(cg->builder, loop->b_head);
	LLVMAddIncoming(loop->v_iv, &v_next, &b_latch, 1);
	LLVMMoveBasicBlockAfter(loop->b_exit, LLVMGetLastBasicBlock(cg->fn.function));
	LLVMPositionBuilderAtEnd(cg->builder, loop->b_exit);
}

/* Signed minimum of two i64 */
LLVMValueRef
CgMin64(CodegenContext *cg, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(cg->builder, LLVMBuildICmp(cg->builder, LLVMIntSLT, a, b, ""),
						   a, b, "");
}

/* The first root variable of a kind (batch or tree) */
int
CgRootVar(CodegenContext *cg, IndexKind kind)
{
	const Schedule *s = cg->mir->schedule;

	for (int v = 0; v < s->num_vars; v++)
		if (s->vars[v].origin == INDEX_ORIGIN_ROOT && s->vars[v].kind == kind &&
			s->vars[v].copy_of < 0)
			return v;
	return -1;
}

/*
 * Range [lo, hi) of variable v (on the path), in v's own iterations,
 * memoized in env; false when it needs a loop that has not started.
 */
static bool
VarRange(CodegenContext *cg, CodegenEnv *env, const MirPath *path, int v,
		 LLVMValueRef *v_lo, LLVMValueRef *v_hi)
{
	const IndexVar *var = &cg->mir->schedule->vars[v];
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef p_lo;
	LLVMValueRef p_hi;
	LLVMValueRef v_size = CgInt64(cg, var->param);
	LLVMValueRef v_cut;

	if (env->v_lo[v] != NULL)
	{
		*v_lo = env->v_lo[v];
		*v_hi = env->v_hi[v];
		return true;
	}
	if (var->origin == INDEX_ORIGIN_ROOT)
	{
		*v_lo = CgInt64(cg, 0);
		*v_hi = var->kind == INDEX_TREE ? CgInt64(cg, cg->mir->num_trees) : cg->fn.v_num_rows;
	}
	else
	{
		if (!VarRange(cg, env, path, var->parent, &p_lo, &p_hi))
			return false;
		switch (var->origin)
		{
			case INDEX_ORIGIN_TILE_OUTER:
				*v_lo = CgInt64(cg, 0);
				*v_hi = LLVMBuildSDiv(b, LLVMBuildAdd(b, LLVMBuildSub(b, p_hi, p_lo, ""),
													  CgInt64(cg, var->param - 1), ""),
									  v_size, "v_tiles");
				break;
			case INDEX_ORIGIN_TILE_INNER:
				{
					int			outer = cg->mir->schedule->vars[var->parent].children[0];
					LLVMValueRef v_k = CgVarValue(cg, env, path, outer);

					if (v_k == NULL)
						return false;
					*v_lo = CgInt64(cg, 0);
					*v_hi = CgMin64(cg, v_size,
								  LLVMBuildSub(b, LLVMBuildSub(b, p_hi, p_lo, ""),
											   LLVMBuildMul(b, v_k, v_size, ""), ""));
				}
				break;
			case INDEX_ORIGIN_SPLIT_FIRST:
			case INDEX_ORIGIN_SPLIT_SECOND:
				v_cut = CgMin64(cg, LLVMBuildAdd(b, p_lo, v_size, ""), p_hi);
				*v_lo = var->origin == INDEX_ORIGIN_SPLIT_FIRST ? p_lo : v_cut;
				*v_hi = var->origin == INDEX_ORIGIN_SPLIT_FIRST ? v_cut : p_hi;
				break;
			default:
				return false;
		}
	}
	env->v_lo[v] = *v_lo;
	env->v_hi[v] = *v_hi;
	return true;
}

/*
 * Value of variable v (any variable; its stand-in on the path is used) in
 * the current iteration; NULL when it needs a loop that has not started.
 * A tiled variable is lo + outer * size + inner, a split one the value of
 * its half on the path.
 */
LLVMValueRef
CgVarValue(CodegenContext *cg, CodegenEnv *env, const MirPath *path, int v)
{
	const Schedule *s = cg->mir->schedule;
	const IndexVar *var;
	int			r = v >= 0 ? path->rep[v] : -1;
	LLVMValueRef v_lo;
	LLVMValueRef v_hi;

	if (r < 0)
		return NULL;
	if (env->v_val[r] != NULL)
		return env->v_val[r];
	var = &s->vars[r];
	if (var->children[0] < 0)
		return NULL;			/* a loop that has not started */
	if (s->vars[var->children[0]].origin == INDEX_ORIGIN_TILE_OUTER)
	{
		LLVMValueRef v_outer = CgVarValue(cg, env, path, var->children[0]);
		LLVMValueRef v_inner = CgVarValue(cg, env, path, var->children[1]);

		if (v_outer == NULL || v_inner == NULL || !VarRange(cg, env, path, r, &v_lo, &v_hi))
			return NULL;
		return LLVMBuildAdd(cg->builder,
							LLVMBuildAdd(cg->builder, v_lo,
										 LLVMBuildMul(cg->builder, v_outer,
													  CgInt64(cg, s->vars[var->children[0]].param), ""),
										 ""),
							v_inner, "");
	}
	{
		LLVMValueRef v_first = CgVarValue(cg, env, path, var->children[0]);

		return v_first ? v_first : CgVarValue(cg, env, path, var->children[1]);
	}
}

/*
 * The root indices [*lo, *hi) (rows or trees) that the loops not yet
 * started may still reach below variable v, whose iteration i is the
 * index base + i.  Exact for nests of tiles and splits whose outer loops
 * are fixed; otherwise the whole range of the variable reached.
 */
static void
OpenSpan(CodegenContext *cg, CodegenEnv *env, const MirPath *path, int v,
		 LLVMValueRef v_base, LLVMValueRef *v_span_lo, LLVMValueRef *v_span_hi)
{
	const Schedule *s = cg->mir->schedule;
	LLVMBuilderRef b = cg->builder;
	const IndexVar *var = &s->vars[v];
	LLVMValueRef v_lo;
	LLVMValueRef v_hi;

	if (env->v_val[v] != NULL)
	{
		*v_span_lo = LLVMBuildAdd(b, v_base, env->v_val[v], "");
		*v_span_hi = LLVMBuildAdd(b, *v_span_lo, CgInt64(cg, 1), "");
		return;
	}
	if (!VarRange(cg, env, path, v, &v_lo, &v_hi))
	{
		*v_span_lo = CgInt64(cg, 0);
		*v_span_hi = var->kind == INDEX_TREE ? CgInt64(cg, cg->mir->num_trees) :
			cg->fn.v_num_rows;
		return;
	}
	if (var->children[0] >= 0 && s->vars[var->children[0]].origin == INDEX_ORIGIN_TILE_OUTER)
	{
		LLVMValueRef v_k = CgVarValue(cg, env, path, var->children[0]);
		LLVMValueRef v_size = CgInt64(cg, s->vars[var->children[0]].param);
		int			inner = path->rep[var->children[1]];

		if (v_k != NULL)
		{
			LLVMValueRef v_start = LLVMBuildAdd(b, v_lo, LLVMBuildMul(b, v_k, v_size, ""), "");

			if (inner >= 0)
			{
				OpenSpan(cg, env, path, inner, LLVMBuildAdd(b, v_base, v_start, ""),
						 v_span_lo, v_span_hi);
				return;
			}
			v_lo = v_start;
			v_hi = CgMin64(cg, LLVMBuildAdd(b, v_start, v_size, ""), v_hi);
		}
	}
	else if (var->children[0] >= 0)
	{
		int			half = path->rep[var->children[0]] >= 0 ? path->rep[var->children[0]] :
			path->rep[var->children[1]];

		if (half >= 0)
		{
			OpenSpan(cg, env, path, half, v_base, v_span_lo, v_span_hi);
			return;
		}
	}
	*v_span_lo = LLVMBuildAdd(b, v_base, v_lo, "");
	*v_span_hi = LLVMBuildAdd(b, v_base, v_hi, "");
}

/* The open span of a root (rows or trees) at the current position */
void
CgRootSpan(CodegenContext *cg, CodegenEnv *env, const MirPath *path, IndexKind kind,
		 LLVMValueRef *v_lo, LLVMValueRef *v_hi)
{
	CodegenEnv	scratch = *env;
	int			root = CgRootVar(cg, kind);

	OpenSpan(cg, &scratch, path, path->rep[root] >= 0 ? path->rep[root] : root,
			 CgInt64(cg, 0), v_lo, v_hi);
}

/* Field f (FIELDNO_REPRTREE_*) of the tree record at v_rec */
LLVMValueRef
CgLoadTreeField(CodegenContext *cg, LLVMValueRef v_rec, unsigned f, const char *name)
{
	return CgLoad(cg, cg->t_i32, LLVMBuildStructGEP2(cg->builder, cg->t_tree, v_rec, f, ""),
				  name);
}

/* Load the tree record at HIR position v_tree (i64) */
void
CgLoadTree(CodegenContext *cg, LLVMValueRef v_tree, LLVMValueRef *v_rec,
		   LLVMValueRef *v_root, LLVMValueRef *v_depth, LLVMValueRef *v_fixed,
		   LLVMValueRef *v_group)
{
	*v_rec = LLVMBuildGEP2(cg->builder, cg->t_tree, cg->v_trees, &v_tree, 1, "v_tree_rec");
	*v_root = LLVMBuildZExt(cg->builder, CgLoadTreeField(cg, *v_rec, FIELDNO_REPRTREE_ROOT, ""),
							cg->t_i64, "v_root");
	*v_depth = CgLoadTreeField(cg, *v_rec, FIELDNO_REPRTREE_DEPTH, "v_depth");
	*v_group = CgLoadTreeField(cg, *v_rec, FIELDNO_REPRTREE_GROUP, "v_group");
	*v_fixed = CgLoadTreeField(cg, *v_rec, FIELDNO_REPRTREE_FIXED, "v_fixed");
}

/* Pointer to the first value of row v_row (i64) */
LLVMValueRef
CgRowPointer(CodegenContext *cg, LLVMValueRef v_row)
{
	LLVMValueRef v_base = cg->fn.v_rows;
	LLVMValueRef v_off;

	if (cg->v_gpu_stage != NULL)
	{
		/* a gpu block's rows, staged in shared memory (EmitGpuStage) */
		v_base = cg->v_gpu_stage;
		v_row = LLVMBuildSub(cg->builder, v_row, cg->v_gpu_stage_lo, "");
	}
	v_off = LLVMBuildMul(cg->builder, v_row, CgInt64(cg, cg->forest->num_features), "");
	return LLVMBuildGEP2(cg->builder, cg->t_value, v_base, &v_off, 1, "v_row_ptr");
}

/* Branch to the function's return if the interrupt flag is set */
static void
EmitPoll(CodegenContext *cg)
{
	LLVMValueRef v_flag = LLVMBuildLoad2(cg->builder, cg->t_i32, cg->fn.v_interrupt,
										 "v_interrupt");
	LLVMBasicBlockRef b_go = CgNewBlock(cg, "b_not_interrupted");

	LLVMSetVolatile(v_flag, true);
	LLVMBuildCondBr(cg->builder,
					LLVMBuildICmp(cg->builder, LLVMIntNE, v_flag, CgInt32(cg, 0), ""),
					cg->fn.b_return, b_go);
	LLVMPositionBuilderAtEnd(cg->builder, b_go);
}

/*
 * cacheRows over a bitvector walk of rows: copy rows [lo, hi) feature-major
 * into a stack buffer of stride rows a feature (CgBitvectorStageStride),
 * so that a vector of consecutive rows' feature is one load.  The
 * MIR_MAX_WIDTH - 1 rows past hi repeat row hi - 1: a remainder's unused
 * lanes read them, never past the buffer or the batch.  margins: the
 * rows' margins are staged too, group-major (g * stride + r), so that
 * the walks add a vector of rows' leaves with one load and one store;
 * EmitUnstageMargins copies them back after the iteration.
 */
static void
EmitStage(CodegenContext *cg, CodegenEnv *env, LLVMValueRef v_lo, LLVMValueRef v_hi,
		  int64_t stride, bool margins)
{
	LLVMBuilderRef b = cg->builder;
	int32_t		num_features = cg->forest->num_features;
	int32_t		num_groups = cg->forest->num_groups;
	LLVMBasicBlockRef b_here = LLVMGetInsertBlock(b);
	LLVMValueRef v_stage;
	LLVMValueRef v_acc = NULL;
	LLVMValueRef v_count;
	LLVMValueRef v_last;
	CodegenLoop loop;

	LLVMPositionBuilderAtEnd(b, cg->fn.b_allocas);
	v_stage = LLVMBuildArrayAlloca(b, cg->t_value, CgInt64(cg, stride * num_features), "v_stage");
	LLVMSetAlignment(v_stage, 32);
	if (margins)
	{
		v_acc = LLVMBuildArrayAlloca(b, cg->t_value, CgInt64(cg, stride * num_groups),
									 "v_stage_acc");
		LLVMSetAlignment(v_acc, 32);
	}
	LLVMPositionBuilderAtEnd(b, b_here);
	v_count = CgMin64(cg, LLVMBuildAdd(b, LLVMBuildSub(b, v_hi, v_lo, ""),
									 CgInt64(cg, MIR_MAX_WIDTH - 1), ""), CgInt64(cg, stride));
	v_count = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, v_hi, v_lo, ""), v_count,
							  CgInt64(cg, 0), "v_stage_rows");
	v_last = LLVMBuildSub(b, v_hi, CgInt64(cg, 1), "");
	CgLoopOpen(cg, &loop, "stage", CgInt64(cg, 0), v_count);
	{
		LLVMValueRef v_src = CgMin64(cg, LLVMBuildAdd(b, v_lo, loop.v_iv, ""), v_last);
		LLVMValueRef v_row_ptr = CgRowPointer(cg, v_src);

		for (int32_t f = 0; f < num_features; f++)
		{
			LLVMValueRef v_f = CgInt64(cg, f);
			LLVMValueRef v_to = LLVMBuildAdd(b, CgInt64(cg, (int64_t) f * stride), loop.v_iv, "");

			LLVMBuildStore(b, CgLoad(cg, cg->t_value,
									 LLVMBuildGEP2(b, cg->t_value, v_row_ptr, &v_f, 1, ""), "v_x"),
						   LLVMBuildGEP2(b, cg->t_value, v_stage, &v_to, 1, ""));
		}
		for (int32_t g = 0; margins && g < num_groups; g++)
		{
			LLVMValueRef v_from = LLVMBuildAdd(b, LLVMBuildMul(b, v_src, CgInt64(cg, num_groups), ""),
											   CgInt64(cg, g), "");
			LLVMValueRef v_to = LLVMBuildAdd(b, CgInt64(cg, (int64_t) g * stride), loop.v_iv, "");

			LLVMBuildStore(b, LLVMBuildLoad2(b, cg->t_value,
											 LLVMBuildGEP2(b, cg->t_value, env->v_target, &v_from, 1, ""),
											 "v_margin"),
						   LLVMBuildGEP2(b, cg->t_value, v_acc, &v_to, 1, ""));
		}
	}
	CgLoopClose(cg, &loop, 1);
	env->v_stage = v_stage;
	env->v_stage_lo = v_lo;
	env->stage_stride = stride;
	env->v_stage_acc = v_acc;
}

/* The staged margins of rows [lo, hi) back into the target (EmitStage) */
static void
EmitUnstageMargins(CodegenContext *cg, const CodegenEnv *env, LLVMValueRef v_hi)
{
	LLVMBuilderRef b = cg->builder;
	int32_t		num_groups = cg->forest->num_groups;
	LLVMValueRef v_rows = LLVMBuildSub(b, v_hi, env->v_stage_lo, "");
	CodegenLoop loop;

	CgLoopOpen(cg, &loop, "unstage", CgInt64(cg, 0), v_rows);
	for (int32_t g = 0; g < num_groups; g++)
	{
		LLVMValueRef v_from = LLVMBuildAdd(b, CgInt64(cg, (int64_t) g * env->stage_stride),
										   loop.v_iv, "");
		LLVMValueRef v_to = LLVMBuildAdd(b,
										 LLVMBuildMul(b, LLVMBuildAdd(b, env->v_stage_lo, loop.v_iv, ""),
													  CgInt64(cg, num_groups), ""),
										 CgInt64(cg, g), "");

		LLVMBuildStore(b, LLVMBuildLoad2(b, cg->t_value,
										 LLVMBuildGEP2(b, cg->t_value, env->v_stage_acc, &v_from, 1, ""),
										 "v_margin"),
					   LLVMBuildGEP2(b, cg->t_value, env->v_target, &v_to, 1, ""));
	}
	CgLoopClose(cg, &loop, 1);
}

/* Does op add into the target other than by plain adds in this function? */
static bool
SharesTarget(const MirOp *op)
{
	return (op->kind == MIR_LOOP && op->parallel) ||
		op->kind == MIR_REDUCE_DIM || (op->kind == MIR_REDUCE && op->atomic_add);
}

/*
 * Can the stage of cache loop op hold its rows' margins?  Only when every
 * add below it is a plain one by this thread: no parallel loop below
 * (its chunks run on other threads and may reduce into partial slices),
 * no atomic add, no fold of partial slices.  Specialized loops may be
 * outlined: their functions get the stage (EnvSlots).
 */
static bool
StagesMargins(const MirOp *op)
{
	for (const MirOp *o = op->body; o != NULL; o = o->next)
		if (SharesTarget(o) || !StagesMargins(o))
			return false;
	return true;
}

/*
 * Do a stage's margins fit: at most CODEGEN_MAX_STAGE_GROUPS classes (the
 * copies in and out are unrolled over them) in CODEGEN_MAX_STAGE_BYTES?
 * A 65,536-class model would make a 142 MB stack buffer and an IR copy
 * loop LLVM does not finish compiling.
 */
static bool
MarginsFitStage(const CodegenContext *cg, int64_t stride)
{
	int64_t		groups = cg->forest->num_groups;

	return groups <= CODEGEN_MAX_STAGE_GROUPS &&
		stride * groups * (int64_t) ForestValueSize(cg->forest) <= CODEGEN_MAX_STAGE_BYTES;
}

/*
 * cacheRows / cacheTrees: stage or prefetch what one iteration of the loop
 * reads.  Returns the iteration's last row + 1 when the stage holds its
 * margins (to be copied back after the body), else NULL.
 */
static LLVMValueRef
EmitCache(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_lo;
	LLVMValueRef v_hi;
	int64_t		stride;

	CgRootSpan(cg, env, path, op->index_kind, &v_lo, &v_hi);
	if (op->index_kind == INDEX_BATCH && (stride = CgBitvectorStageStride(cg, op)) > 0)
	{
		EmitStage(cg, env, v_lo, v_hi, stride, StagesMargins(op) && MarginsFitStage(cg, stride));
		return env->v_stage_acc != NULL ? v_hi : NULL;
	}
	else if (op->index_kind == INDEX_BATCH)
	{
		int64_t		row_bytes = (int64_t) cg->forest->num_features *
			(int64_t) ForestValueSize(cg->forest);
		LLVMValueRef v_base = LLVMBuildBitCast(b, CgRowPointer(cg, v_lo), cg->t_i8p, "");
		LLVMValueRef v_bytes = LLVMBuildMul(b, LLVMBuildSub(b, v_hi, v_lo, ""),
											CgInt64(cg, row_bytes), "");

		ReprPrefetch(cg, v_base, v_bytes, 256);
	}
	else if (cg->repr->cache_tree != NULL)
	{
		CodegenLoop loop;
		LLVMValueRef v_rec, v_root, v_depth, v_fixed, v_group;

		CgLoopOpen(cg, &loop, "cache_trees", v_lo, CgMin64(cg, v_hi, LLVMBuildAdd(b, v_lo, CgInt64(cg, 64), "")));
		CgLoadTree(cg, loop.v_iv, &v_rec, &v_root, &v_depth, &v_fixed, &v_group);
		cg->repr->cache_tree(cg, v_rec);
		CgLoopClose(cg, &loop, 1);
	}
	return NULL;
}

/*
 * One iteration: fix the tree and row when no loop below varies them,
 * stage or prefetch (cache), the body, and the staged margins back
 */
void
CgEmitLoopBody(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path)
{
	LLVMValueRef v_unstage = NULL;

	if (op->fixes_tree && env->v_tree == NULL)
	{
		env->v_tree = CgVarValue(cg, env, path, CgRootVar(cg, INDEX_TREE));
		if (env->v_tree)
			CgLoadTree(cg, env->v_tree, &env->v_tree_rec, &env->v_root, &env->v_depth,
					   &env->v_fixed, &env->v_group);
	}
	if (op->fixes_row && env->v_row == NULL)
	{
		env->v_row = CgVarValue(cg, env, path, CgRootVar(cg, INDEX_BATCH));
		if (env->v_row)
			env->v_row_ptr = CgRowPointer(cg, env->v_row);
	}
	if (op->cache && !cg->target->gpu)
		v_unstage = EmitCache(cg, op, env, path);
	EmitOps(cg, op->body, env);
	if (v_unstage != NULL)
		EmitUnstageMargins(cg, env, v_unstage);
}

/*
 * A serial loop over [v_start, v_end): an interleaved innermost loop steps
 * by the walk's width, then by smaller groups (MirStepWidths), so a short
 * remainder still overlaps some walks.  The induction variable is the value of iv_var (op's own
 * variable, or the tiled parent of a fused tile).
 */
static void
EmitSerialLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path,
			   LLVMValueRef v_start, LLVMValueRef v_end, int iv_var)
{
	const Schedule *s = cg->mir->schedule;
	const MirOp *walk = op->body && op->body->kind == MIR_WALK ? op->body : NULL;
	int32_t		widths[5];
	int			num_widths = MirStepWidths(walk, widths);

	for (int i = 0; i < num_widths; i++)
	{
		CodegenLoop loop;
		CodegenEnv	inner = *env;
		char		name[SCHEDULE_NAME_LEN + 8];
		LLVMValueRef v_last = LLVMBuildSub(cg->builder, v_end,
										   CgInt64(cg, widths[i] - 1), "");

		snprintf(name, sizeof(name), "%s_w%d", s->vars[op->var].name, widths[i]);
		CgLoopOpen(cg, &loop, name, v_start, v_last);
		if (op->poll)
			EmitPoll(cg);
		inner.v_val[iv_var] = loop.v_iv;
		inner.width = widths[i];
		inner.lane_var = op->var;
		inner.lane_iv = (int16_t) iv_var;
		CgEmitLoopBody(cg, op, &inner, path);
		CgLoopClose(cg, &loop, widths[i]);
		v_start = loop.v_iv;
	}
}

/* Load field f of the kernel arguments (pointer fields cast to type) */
static LLVMValueRef
LoadArg(CodegenContext *cg, LLVMValueRef v_args, unsigned f, LLVMTypeRef type,
		const char *name)
{
	LLVMTypeRef t_field = LLVMStructGetTypeAtIndex(cg->t_args, f);
	LLVMValueRef v = CgLoad(cg, t_field, LLVMBuildStructGEP2(cg->builder, cg->t_args,
															  v_args, f, ""), name);

	return type && type != t_field ? LLVMBuildBitCast(cg->builder, v, type, name) : v;
}

/* Read every argument field into cg->fn (and the layout's copies in cg) */
static void
LoadArgs(CodegenContext *cg, LLVMValueRef v_args)
{
	LLVMBuilderRef b = cg->builder;
	CodegenFunction *fn = &cg->fn;
	LLVMTypeRef t_ptr_value = LLVMPointerType(cg->t_value, 0);
	LLVMValueRef v_aux;

	fn->v_args = v_args;
	fn->v_rows = LoadArg(cg, v_args, FIELDNO_KERNELARGS_ROWS, t_ptr_value, "rows");
	fn->v_num_rows = LoadArg(cg, v_args, FIELDNO_KERNELARGS_NUM_ROWS, NULL, "num_rows");
	fn->v_acc = LoadArg(cg, v_args, FIELDNO_KERNELARGS_ACC, t_ptr_value, "acc");
	fn->v_partials = LoadArg(cg, v_args, FIELDNO_KERNELARGS_PARTIALS, t_ptr_value,
							 "partials");
	fn->v_max_chunks = LoadArg(cg, v_args, FIELDNO_KERNELARGS_MAX_CHUNKS, NULL, "max_chunks");
	fn->v_nodes = LoadArg(cg, v_args, FIELDNO_KERNELARGS_NODES,
						  LLVMPointerType(cg->t_node, 0), "nodes");
	fn->v_trees = LoadArg(cg, v_args, FIELDNO_KERNELARGS_TREES,
						  LLVMPointerType(cg->t_tree, 0), "trees");
	fn->v_category_words = LoadArg(cg, v_args, FIELDNO_KERNELARGS_CATEGORY_WORDS,
								   LLVMPointerType(cg->t_i32, 0), "category_words");
	fn->v_category_sets = LoadArg(cg, v_args, FIELDNO_KERNELARGS_CATEGORY_SETS,
								  LLVMPointerType(cg->t_set, 0), "category_sets");
	v_aux = LLVMBuildStructGEP2(b, cg->t_args, v_args, FIELDNO_KERNELARGS_AUX, "");
	for (unsigned i = 0; i < REPR_MAX_AUX; i++)
		fn->v_aux[i] = CgLoad(cg, cg->t_i8p,
							  LLVMBuildStructGEP2(b, LLVMArrayType(cg->t_i8p, REPR_MAX_AUX),
												  v_aux, i, ""), "aux");
	fn->v_interrupt = LoadArg(cg, v_args, FIELDNO_KERNELARGS_INTERRUPT,
							  LLVMPointerType(cg->t_i32, 0), "interrupt");
	fn->v_parallel_for = LoadArg(cg, v_args, FIELDNO_KERNELARGS_PARALLEL_FOR,
								 LLVMPointerType(cg->t_parallel_for, 0), "parallel_for");
	cg->v_nodes = fn->v_nodes;
	cg->v_trees = fn->v_trees;
	cg->v_category_words = fn->v_category_words;
	cg->v_category_sets = fn->v_category_sets;
	memcpy(cg->v_aux, fn->v_aux, sizeof(cg->v_aux));
}

/* Add an enum attribute (noalias, nocapture, ...) at an index */
static void
AddAttribute(CodegenContext *cg, LLVMValueRef fn, unsigned index, const char *name)
{
	unsigned	kind = LLVMGetEnumAttributeKindForName(name, strlen(name));

	LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(cg->context, kind, 0));
}

/* Add a string attribute to a function */
static void
AddStringAttribute(CodegenContext *cg, LLVMValueRef fn, const char *key, const char *value)
{
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
							LLVMCreateStringAttribute(cg->context, key, (unsigned) strlen(key),
													  value, (unsigned) strlen(value)));
}

/* Start emitting function fn: an allocas block, a body, a return block */
static void
BeginFunction(CodegenContext *cg, LLVMValueRef fn)
{
	memset(&cg->fn, 0, sizeof(CodegenFunction));
	cg->fn.function = fn;
	AddAttribute(cg, fn, LLVMAttributeFunctionIndex, "nounwind");
	AddStringAttribute(cg, fn, "target-cpu", cg->cpu);
	AddStringAttribute(cg, fn, "target-features", cg->features);
	cg->fn.b_allocas = CgNewBlock(cg, "b_entry");
	cg->fn.b_return = CgNewBlock(cg, "b_return");
	LLVMPositionBuilderAtEnd(cg->builder, cg->fn.b_return);
	LLVMBuildRetVoid(cg->builder);
	LLVMPositionBuilderAtEnd(cg->builder, cg->fn.b_allocas);
}

/* End the function: the allocas block falls into the body; the body returns */
static void
FinishFunction(CodegenContext *cg, LLVMBasicBlockRef b_body)
{
	LLVMBuildBr(cg->builder, cg->fn.b_return);
	LLVMMoveBasicBlockAfter(cg->fn.b_return, LLVMGetLastBasicBlock(cg->fn.function));
	LLVMPositionBuilderAtEnd(cg->builder, cg->fn.b_allocas);
	LLVMBuildBr(cg->builder, b_body);
}

/*
 * Pointers to every capturable slot of an environment.  A stage (and its
 * margins) is captured too: an outlined function runs while its caller
 * waits, so the caller's stack buffer is there; StagesMargins keeps the
 * margins out of a stage that other threads' functions would add to.
 */
static int
EnvSlots(CodegenEnv *env, LLVMValueRef **slots)
{
	int			n = 0;

	for (int v = 0; v < SCHEDULE_MAX_VARS; v++)
	{
		slots[n++] = &env->v_lo[v];
		slots[n++] = &env->v_hi[v];
		slots[n++] = &env->v_val[v];
	}
	slots[n++] = &env->v_target;
	slots[n++] = &env->v_tree;
	slots[n++] = &env->v_tree_rec;
	slots[n++] = &env->v_root;
	slots[n++] = &env->v_depth;
	slots[n++] = &env->v_fixed;
	slots[n++] = &env->v_group;
	slots[n++] = &env->v_row;
	slots[n++] = &env->v_row_ptr;
	slots[n++] = &env->v_stage;
	slots[n++] = &env->v_stage_lo;
	slots[n++] = &env->v_stage_acc;
	return n;
}

/* A value as an i64 for the context array */
static LLVMValueRef
ToI64(CodegenContext *cg, LLVMValueRef v)
{
	LLVMTypeRef t = LLVMTypeOf(v);

	if (LLVMGetTypeKind(t) == LLVMPointerTypeKind)
		return LLVMBuildPtrToInt(cg->builder, v, cg->t_i64, "");
	if (t != cg->t_i64)
		return LLVMBuildZExt(cg->builder, v, cg->t_i64, "");
	return v;
}

/* An i64 from the context array back as a value of type t */
static LLVMValueRef
FromI64(CodegenContext *cg, LLVMValueRef v, LLVMTypeRef t)
{
	if (LLVMGetTypeKind(t) == LLVMPointerTypeKind)
		return LLVMBuildIntToPtr(cg->builder, v, t, "");
	if (t != cg->t_i64)
		return LLVMBuildTrunc(cg->builder, v, t, "");
	return v;
}

/* Make saved the function being emitted again, the builder at the end of b_saved */
static void
RestoreFunction(CodegenContext *cg, const CodegenFunction *saved, LLVMBasicBlockRef b_saved)
{
	cg->fn = *saved;
	cg->v_nodes = saved->v_nodes;
	cg->v_trees = saved->v_trees;
	cg->v_category_words = saved->v_category_words;
	cg->v_category_sets = saved->v_category_sets;
	memcpy(cg->v_aux, saved->v_aux, sizeof(cg->v_aux));
	LLVMPositionBuilderAtEnd(cg->builder, b_saved);
}

/* The environment's non-constant values, stored for an outlined function */
typedef struct CgCapture
{
	LLVMTypeRef t_ctx;			/* { i64 args, i64 slot... } */
	LLVMValueRef v_ctx;			/* its alloca in the caller */
	int			slots[CODEGEN_ENV_SLOTS];	/* EnvSlots indexes captured */
	LLVMTypeRef types[CODEGEN_ENV_SLOTS];
	int			num;
} CgCapture;

/* Store the arguments and env's non-constant slots into a context alloca */
static void
CaptureEnv(CodegenContext *cg, CodegenEnv *env, CgCapture *cap)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef *slots[CODEGEN_ENV_SLOTS];
	int			n = EnvSlots(env, slots);
	LLVMTypeRef fields[CODEGEN_ENV_SLOTS + 1];
	LLVMBasicBlockRef b_here = LLVMGetInsertBlock(b);

	cap->num = 0;
	for (int k = 0; k < n; k++)
		if (*slots[k] != NULL && !LLVMIsConstant(*slots[k]))
		{
			cap->types[cap->num] = LLVMTypeOf(*slots[k]);
			cap->slots[cap->num++] = k;
		}
	for (int i = 0; i <= cap->num; i++)
		fields[i] = cg->t_i64;
	cap->t_ctx = LLVMStructTypeInContext(cg->context, fields, (unsigned) cap->num + 1, false);
	LLVMPositionBuilderAtEnd(b, cg->fn.b_allocas);
	cap->v_ctx = LLVMBuildAlloca(b, cap->t_ctx, "ctx");
	LLVMPositionBuilderAtEnd(b, b_here);
	LLVMBuildStore(b, LLVMBuildPtrToInt(b, cg->fn.v_args, cg->t_i64, ""),
				   LLVMBuildStructGEP2(b, cap->t_ctx, cap->v_ctx, 0, ""));
	for (int i = 0; i < cap->num; i++)
		LLVMBuildStore(b, ToI64(cg, *slots[cap->slots[i]]),
					   LLVMBuildStructGEP2(b, cap->t_ctx, cap->v_ctx, (unsigned) (i + 1), ""));
}

/*
 * In an outlined function: reload the arguments and the captured slots
 * from v_ctx_i8 into *inner; outer's constants are copied, not captured.
 */
static void
UnpackEnv(CodegenContext *cg, CodegenEnv *outer, const CgCapture *cap,
		  LLVMValueRef v_ctx_i8, CodegenEnv *inner)
{
	LLVMValueRef v_ctx = LLVMBuildBitCast(cg->builder, v_ctx_i8,
										  LLVMPointerType(cap->t_ctx, 0), "ctx");
	LLVMValueRef *slots[CODEGEN_ENV_SLOTS];
	LLVMValueRef *outer_slots[CODEGEN_ENV_SLOTS];
	int			n;

	LoadArgs(cg, LLVMBuildIntToPtr(cg->builder,
								   CgLoad(cg, cg->t_i64,
										  LLVMBuildStructGEP2(cg->builder, cap->t_ctx, v_ctx, 0, ""),
										  ""),
								   LLVMPointerType(cg->t_args, 0), "args"));
	memset(inner, 0, sizeof(*inner));
	inner->stage_stride = outer->stage_stride;
	EnvSlots(inner, slots);
	for (int i = 0; i < cap->num; i++)
		*slots[cap->slots[i]] =
			FromI64(cg, CgLoad(cg, cg->t_i64,
							   LLVMBuildStructGEP2(cg->builder, cap->t_ctx, v_ctx, (unsigned) (i + 1), ""),
							   ""), cap->types[i]);
	n = EnvSlots(outer, outer_slots);
	for (int k = 0; k < n; k++)
		if (*outer_slots[k] != NULL && LLVMIsConstant(*outer_slots[k]))
			*slots[k] = *outer_slots[k];
}

/*
 * Start outlined function fn_<kind><k> of type t_fn, whose first parameter
 * is the context CaptureEnv filled: the builder is left in its body block
 * (*b_body) with the arguments and *inner (env's values) reloaded.  The
 * caller keeps the function it was emitting and goes back to it.
 */
static LLVMValueRef
BeginOutlined(CodegenContext *cg, const char *kind, LLVMTypeRef t_fn, CodegenEnv *env,
			  const CgCapture *cap, CodegenEnv *inner, LLVMBasicBlockRef *b_body)
{
	char		name[256];
	LLVMValueRef fn;

	snprintf(name, sizeof(name), "%s_%s%d", cg->fn_name, kind, cg->num_outlined++);
	fn = LLVMAddFunction(cg->module, name, t_fn);
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	BeginFunction(cg, fn);
	*b_body = CgNewBlock(cg, "b_body");
	LLVMPositionBuilderAtEnd(cg->builder, *b_body);
	UnpackEnv(cg, env, cap, LLVMGetParam(fn, 0), inner);
	return fn;
}

/*
 * Outline the body of parallel loop op into fn_par<k>(ctx, begin, end,
 * chunk); env (the caller's) is reloaded from ctx.  Returns the function.
 */
static LLVMValueRef
EmitOutlined(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path,
			 const CgCapture *cap)
{
	CodegenFunction saved = cg->fn;
	LLVMBasicBlockRef b_saved = LLVMGetInsertBlock(cg->builder);
	LLVMBasicBlockRef b_body;
	CodegenEnv	inner;
	LLVMValueRef fn = BeginOutlined(cg, "par", cg->t_body, env, cap, &inner, &b_body);
	LLVMValueRef v_chunk = LLVMGetParam(fn, 3);

	if (op->privatize)
	{
		LLVMValueRef v_slice_index = LLVMBuildMul(cg->builder,
												  LLVMBuildSub(cg->builder, v_chunk, CgInt64(cg, 1), ""),
												  LLVMBuildMul(cg->builder, cg->fn.v_num_rows,
															   CgInt64(cg, cg->forest->num_groups), ""),
												  "");
		LLVMValueRef v_slice = LLVMBuildGEP2(cg->builder, cg->t_value, cg->fn.v_partials,
											 &v_slice_index, 1, "v_slice");

		inner.v_target = LLVMBuildSelect(cg->builder,
										 LLVMBuildICmp(cg->builder, LLVMIntEQ, v_chunk,
													   CgInt64(cg, 0), ""),
										 inner.v_target, v_slice, "v_target");
	}
	EmitSerialLoop(cg, op, &inner, path, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), op->var);
	FinishFunction(cg, b_body);
	RestoreFunction(cg, &saved, b_saved);
	return fn;
}

/*
 * Start emitting helper function fn, whose first parameter is the kernel
 * arguments: the builder is left in its entry block with the arguments
 * loaded; *saved and *b_saved keep the function being emitted.  The
 * caller builds the helper's return, then calls CgEndHelper.
 */
void
CgBeginHelper(CodegenContext *cg, LLVMValueRef fn, CodegenFunction *saved,
			  LLVMBasicBlockRef *b_saved)
{
	*saved = cg->fn;
	*b_saved = LLVMGetInsertBlock(cg->builder);
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	memset(&cg->fn, 0, sizeof(CodegenFunction));
	cg->fn.function = fn;
	AddAttribute(cg, fn, LLVMAttributeFunctionIndex, "nounwind");
	AddAttribute(cg, fn, LLVMAttributeFunctionIndex, "noinline");
	AddStringAttribute(cg, fn, "target-cpu", cg->cpu);
	AddStringAttribute(cg, fn, "target-features", cg->features);
	cg->fn.b_allocas = CgNewBlock(cg, "b_entry");
	LLVMPositionBuilderAtEnd(cg->builder, cg->fn.b_allocas);
	LoadArgs(cg, LLVMGetParam(fn, 0));
}

/* Can instruction i go when nothing uses it?  No effects, no terminator */
static bool
IsErasable(LLVMValueRef i)
{
	switch (LLVMGetInstructionOpcode(i))
	{
		case LLVMLoad:
			return !LLVMGetVolatile(i);
		case LLVMStore:
		case LLVMCall:
		case LLVMInvoke:
		case LLVMFence:
		case LLVMAtomicCmpXchg:
		case LLVMAtomicRMW:
		case LLVMAlloca:
		case LLVMPHI:
			return false;
		default:
			return LLVMIsATerminatorInst(i) == NULL;
	}
}

/*
 * Finish straight-line helper fn as it stands: erase what nothing uses
 * (the argument fields and lane pointers it does not read; last to first,
 * so whole dead chains go) and mark it JIT_NO_PASSES, so the function
 * passes skip it.  Its repeated loads stay: instruction selection merges
 * them.  A function of more than one block, or with an alloca (only
 * mem2reg would promote it), is left to the passes.
 */
void
CgFinishStraight(CodegenContext *cg, LLVMValueRef fn)
{
	LLVMBasicBlockRef block = LLVMGetFirstBasicBlock(fn);
	LLVMValueRef i;
	bool		allocas = false;

	if (block == NULL || LLVMGetNextBasicBlock(block) != NULL)
		return;
	for (i = LLVMGetLastInstruction(block); i != NULL;)
	{
		LLVMValueRef prev = LLVMGetPreviousInstruction(i);

		allocas = allocas || LLVMGetInstructionOpcode(i) == LLVMAlloca;
		if (LLVMGetFirstUse(i) == NULL && IsErasable(i))
			LLVMInstructionEraseFromParent(i);
		i = prev;
	}
	if (!allocas)
		AddStringAttribute(cg, fn, JIT_NO_PASSES, "");
}

/* Go back to the function CgBeginHelper left */
void
CgEndHelper(CodegenContext *cg, const CodegenFunction *saved, LLVMBasicBlockRef b_saved)
{
	RestoreFunction(cg, saved, b_saved);
}

/* A parallel loop: outline its body and run it on the runtime's threads */
static void
EmitParallelLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path,
				 LLVMValueRef v_lo, LLVMValueRef v_hi)
{
	LLVMBuilderRef b = cg->builder;
	CgCapture	cap;
	LLVMValueRef fn;
	LLVMValueRef v_args[5];
	LLVMValueRef v_chunks;

	CaptureEnv(cg, env, &cap);
	fn = EmitOutlined(cg, op, env, path, &cap);
	v_args[0] = fn;
	v_args[1] = LLVMBuildBitCast(b, cap.v_ctx, cg->t_i8p, "");
	v_args[2] = v_lo;
	v_args[3] = v_hi;
	v_args[4] = op->privatize ? cg->fn.v_max_chunks : CgInt64(cg, INT32_MAX);
	v_chunks = LLVMBuildCall2(b, cg->t_parallel_for, cg->fn.v_parallel_for, v_args, 5,
							  "v_chunks");
	cg->v_chunks[op - cg->mir->ops] = v_chunks;
	if (op->poll)
		EmitPoll(cg);
}

/*
 * The inner loop of a tile when the walk below it takes all of the tile's
 * iterations in lock-step: tile(p, o, i, w); interleave(i) with width w.
 * Then o and i together just step through p's range by w (the last tile
 * being the remainder), and one loop over p, stepping by w with the usual
 * remainder loops, does the same with no per-tile setup.  NULL otherwise.
 */
static const MirOp *
FusableTile(CodegenContext *cg, const MirOp *op)
{
	const Schedule *s = cg->mir->schedule;
	const IndexVar *outer = &s->vars[op->var];
	const MirOp *inner = op->body;
	const IndexVar *ivar;

	if (outer->origin != INDEX_ORIGIN_TILE_OUTER || op->parallel || op->cache ||
		op->gpu_dim != GPU_DIM_NONE || (inner != NULL && inner->gpu_dim != GPU_DIM_NONE) ||
		op->specialize || (inner != NULL && inner->specialize) ||
		op->poll || inner == NULL || inner->next != NULL || inner->kind != MIR_LOOP ||
		inner->parallel || inner->cache || inner->body == NULL ||
		inner->body->kind != MIR_WALK)
		return NULL;
	ivar = &s->vars[inner->var];
	if (ivar->origin != INDEX_ORIGIN_TILE_INNER || ivar->parent != outer->parent ||
		inner->body->width != outer->param)
		return NULL;
	return inner;
}

/* Is each iteration of specialized loop op a function of its own?  (MirOutlinesIterations) */
static bool
OutlinesIterations(const CodegenContext *cg, const MirOp *op)
{
	return !cg->target->gpu && MirOutlinesIterations(cg->mir, op, cg->code_inline_left >= 0);
}

/* Iteration i of specialized loop op as function fn_spec<k>(ctx), called here */
static void
EmitOutlinedIteration(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
					  const MirPath *path, const CgCapture *cap, int64_t i)
{
	LLVMTypeRef t_fn = LLVMFunctionType(LLVMVoidTypeInContext(cg->context), &cg->t_i8p, 1, false);
	CodegenFunction saved = cg->fn;
	LLVMBasicBlockRef b_saved = LLVMGetInsertBlock(cg->builder);
	LLVMBasicBlockRef b_body;
	CodegenEnv	inner;
	LLVMValueRef fn = BeginOutlined(cg, "spec", t_fn, env, cap, &inner, &b_body);
	LLVMValueRef v_call;
	LLVMValueRef v_ctx;

	LLVMSetFunctionCallConv(fn, LLVMFastCallConv);
	AddAttribute(cg, fn, LLVMAttributeFunctionIndex, "noinline");
	inner.v_val[op->var] = CgInt64(cg, i);
	inner.width = 1;
	inner.lane_var = op->var;
	cg->code_inline_left = CODEGEN_INLINE_CODE_NODES;
	CgEmitLoopBody(cg, op, &inner, path);
	cg->code_inline_left = -1;
	FinishFunction(cg, b_body);
	RestoreFunction(cg, &saved, b_saved);
	v_ctx = LLVMBuildBitCast(cg->builder, cap->v_ctx, cg->t_i8p, "");
	v_call = LLVMBuildCall2(cg->builder, t_fn, fn, &v_ctx, 1, "");
	LLVMSetInstructionCallConv(v_call, LLVMFastCallConv);
}

/*
 * A specialized loop over trees: its body once per iteration, with the
 * iteration a constant, so that the walks below know their trees at
 * compile time (codeWalk).  When the body is the code walk of one fixed
 * row (which gives every leaf's group as a constant),
 * the row's margins are loaded into allocas first and stored back after
 * the last tree: mem2reg keeps them in registers across the copies, and
 * the adds stay the same, in the same order.  false (nothing emitted)
 * when the range is not a compile-time constant.
 */
static bool
EmitSpecializedLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path,
					LLVMValueRef v_lo, LLVMValueRef v_hi)
{
	LLVMBuilderRef b = cg->builder;
	int32_t		groups = cg->forest->num_groups;
	bool		local = env->v_row != NULL && env->v_stage_acc == NULL &&
		op->body != NULL && op->body->kind == MIR_WALK &&
		op->body->next != NULL && !op->body->next->atomic_add &&
		MirIsCodeWalk(op->body) && cg->buffers->record_of != NULL &&
		groups <= CODEGEN_MAX_LOCAL_GROUPS;
	LLVMValueRef v_ptrs[CODEGEN_MAX_LOCAL_GROUPS];
	CodegenEnv	body = *env;

	if (!LLVMIsAConstantInt(v_lo) || !LLVMIsAConstantInt(v_hi))
		return false;
	body.num_local = 0;
	for (int32_t g = 0; local && g < groups; g++)
	{
		LLVMValueRef v_slot = LLVMBuildAdd(b, LLVMBuildMul(b, env->v_row, CgInt64(cg, groups), ""),
										   CgInt64(cg, g), "");

		v_ptrs[g] = LLVMBuildGEP2(b, cg->t_value, env->v_target, &v_slot, 1, "v_acc_ptr");
		body.v_local[g] = CgAlloca(cg, cg->t_value, NULL, "v_margin");
		LLVMBuildStore(b, LLVMBuildLoad2(b, cg->t_value, v_ptrs[g], ""), body.v_local[g]);
		body.num_local = g + 1;
	}
	if (OutlinesIterations(cg, op))
	{
		CgCapture	cap;

		CaptureEnv(cg, env, &cap);
		for (int64_t i = LLVMConstIntGetSExtValue(v_lo);
			 i < LLVMConstIntGetSExtValue(v_hi) && !CgCanceled(cg); i++)
		{
			if (op->poll)
				EmitPoll(cg);
			EmitOutlinedIteration(cg, op, env, path, &cap, i);
		}
		return true;
	}
	cg->specialized_hi = local ? LLVMConstIntGetSExtValue(v_hi) : -1;
	cg->code_cache_count = 0;
	for (int64_t i = LLVMConstIntGetSExtValue(v_lo);
		 i < LLVMConstIntGetSExtValue(v_hi) && !CgCanceled(cg); i++)
	{
		CodegenEnv	inner = body;

		if (op->poll)
			EmitPoll(cg);
		inner.v_val[op->var] = CgInt64(cg, i);
		inner.width = 1;
		inner.lane_var = op->var;
		CgEmitLoopBody(cg, op, &inner, path);
	}
	cg->specialized_hi = -1;
	cg->code_cache_count = 0;
	for (int32_t g = 0; g < body.num_local; g++)
		LLVMBuildStore(b, LLVMBuildLoad2(b, cg->t_value, body.v_local[g], ""), v_ptrs[g]);
	return true;
}

/* Does the target have feature name ("avx2": "+avx2" in its features)? */
bool
CgTargetHas(const CodegenContext *cg, const char *name)
{
	size_t		len = strlen(name);
	const char *f = cg->features;

	while (f != NULL && *f != '\0')
	{
		if (f[0] == '+' && strncmp(f + 1, name, len) == 0 && (f[1 + len] == ',' || f[1 + len] == '\0'))
			return true;
		if ((f = strchr(f, ',')) != NULL)
			f++;
	}
	return false;
}

/* A loop op: its range, then a serial or a parallel loop */
static void
EmitLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	MirPath		path;
	CodegenEnv	outer = *env;
	LLVMValueRef v_lo;
	LLVMValueRef v_hi;
	const MirOp *inner = FusableTile(cg, op);

	if (inner != NULL)
	{
		int			parent = cg->mir->schedule->vars[op->var].parent;

		MirPathOf(cg->mir, inner, &path);
		if (VarRange(cg, &outer, &path, parent, &v_lo, &v_hi))
		{
			EmitSerialLoop(cg, inner, &outer, &path, v_lo, v_hi, parent);
			return;
		}
	}
	MirPathOf(cg->mir, op, &path);
	if (!VarRange(cg, &outer, &path, op->var, &v_lo, &v_hi))
	{
		/* MirBuild guarantees computable ranges; emit nothing rather than crash */
		return;
	}
	if (op->gpu_dim != GPU_DIM_NONE)
		CgEmitGpuLoop(cg, op, &outer, &path, v_lo, v_hi);
	else if (op->parallel)
		EmitParallelLoop(cg, op, &outer, &path, v_lo, v_hi);
	else if (!op->specialize || !EmitSpecializedLoop(cg, op, &outer, &path, v_lo, v_hi))
		EmitSerialLoop(cg, op, &outer, &path, v_lo, v_hi, op->var);
}

/* w lanes (scalar when 1) of the aggregate's "nothing yet": 0, or NaN */
LLVMValueRef
CgEmptyValue(CodegenContext *cg, int32_t w)
{
	LLVMValueRef lanes[16];		/* vectorReduce widths are 2 to 16 */
	LLVMValueRef v_one = cg->forest->aggregate == FOREST_AGGREGATE_SUM ?
		CgValue(cg, 0.0) : CgValue(cg, NAN);

	if (w <= 1)
		return v_one;
	for (int32_t i = 0; i < w; i++)
		lanes[i] = v_one;
	return LLVMConstVector(lanes, (unsigned) w);
}

/*
 * reduceDimension after a conflicting loop: for every chunk c > 0 that ran,
 * acc[e] += partial[c - 1][e] and partial[c - 1][e] = 0, for the elements
 * of the rows the loop touched; vectors of vector_width when asked.  MIN
 * and MAX: acc[e] = fold(acc[e], partial[c - 1][e]), partial = NaN.
 */
static void
EmitReduceDim(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	LLVMBuilderRef b = cg->builder;
	MirPath		path;
	LLVMValueRef v_lo;
	LLVMValueRef v_hi;
	LLVMValueRef v_groups = CgInt64(cg, cg->forest->num_groups);
	LLVMValueRef v_stride = LLVMBuildMul(b, cg->fn.v_num_rows, v_groups, "v_stride");
	LLVMValueRef v_e_lo;
	LLVMValueRef v_e_hi;
	CodegenLoop chunks;
	int32_t		widths[2] = {op->vector_width > 1 ? op->vector_width : 1, 1};
	int			num_widths = op->vector_width > 1 ? 2 : 1;
	LLVMValueRef v_start;
	LLVMValueRef v_slice;
	LLVMValueRef v_chunk_index;

	MirPathOf(cg->mir, op->loop, &path);
	CgRootSpan(cg, env, &path, INDEX_BATCH, &v_lo, &v_hi);
	v_e_lo = LLVMBuildMul(b, v_lo, v_groups, "");
	v_e_hi = LLVMBuildMul(b, v_hi, v_groups, "");
	CgLoopOpen(cg, &chunks, "reduce_chunk", CgInt64(cg, 1), cg->v_chunks[op->loop - cg->mir->ops]);
	v_chunk_index = LLVMBuildMul(b, LLVMBuildSub(b, chunks.v_iv, CgInt64(cg, 1), ""),
								 v_stride, "");
	v_slice = LLVMBuildGEP2(b, cg->t_value, cg->fn.v_partials, &v_chunk_index, 1, "v_slice");
	v_start = v_e_lo;
	for (int i = 0; i < num_widths; i++)
	{
		CodegenLoop loop;
		int32_t		w = widths[i];
		LLVMTypeRef t = w > 1 ? LLVMVectorType(cg->t_value, (unsigned) w) : cg->t_value;
		LLVMValueRef v_dst;
		LLVMValueRef v_src;
		LLVMValueRef v_sum;
		LLVMValueRef v_store;
		LLVMValueRef v_load_a;
		LLVMValueRef v_load_b;
		unsigned	align = (unsigned) ForestValueSize(cg->forest);

		CgLoopOpen(cg, &loop, w > 1 ? "reduce_vector" : "reduce_scalar", v_start,
				 LLVMBuildSub(b, v_e_hi, CgInt64(cg, w - 1), ""));
		v_dst = LLVMBuildGEP2(b, cg->t_value, env->v_target, &loop.v_iv, 1, "");
		v_src = LLVMBuildGEP2(b, cg->t_value, v_slice, &loop.v_iv, 1, "");
		if (w > 1)
		{
			v_dst = LLVMBuildBitCast(b, v_dst, LLVMPointerType(t, 0), "");
			v_src = LLVMBuildBitCast(b, v_src, LLVMPointerType(t, 0), "");
		}
		v_load_a = LLVMBuildLoad2(b, t, v_dst, "");
		v_load_b = LLVMBuildLoad2(b, t, v_src, "");
		LLVMSetAlignment(v_load_a, align);
		LLVMSetAlignment(v_load_b, align);
		v_sum = CgAggregate(cg, v_load_a, v_load_b);
		v_store = LLVMBuildStore(b, v_sum, v_dst);
		LLVMSetAlignment(v_store, align);
		v_store = LLVMBuildStore(b, CgEmptyValue(cg, w), v_src);
		LLVMSetAlignment(v_store, align);
		CgLoopClose(cg, &loop, w);
		v_start = loop.v_iv;
	}
	CgLoopClose(cg, &chunks, 1);
}

/* Lower a list of MIR ops */
static void
EmitOps(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	for (; op != NULL; op = op->next)
	{
		switch (op->kind)
		{
			case MIR_LOOP:
				EmitLoop(cg, op, env);
				break;
			case MIR_WALK:
				{
					LLVMValueRef v_leaf[MIR_MAX_WIDTH] = {NULL};
					LLVMValueRef v_rows[MIR_MAX_WIDTH];
					LLVMValueRef v_groups[MIR_MAX_WIDTH];

					/* a walk that added its leaves itself leaves v_leaf[0] NULL */
					CgWalkCodegen(op)->emit(cg, op, env, v_leaf, v_rows, v_groups);
					if (op->next && op->next->kind == MIR_REDUCE)
					{
						op = op->next;
						if (v_leaf[0] != NULL)
							CgEmitReduce(cg, op, env, v_leaf, v_rows, v_groups);
					}
				}
				break;
			case MIR_REDUCE:
				break;			/* emitted with its walk */
			case MIR_REDUCE_DIM:
				EmitReduceDim(cg, op, env);
				break;
		}
	}
}

/* {i32 root, depth, group, fixed, first, count, reserved[2]}: ReprTree */
LLVMTypeRef
CodegenTreeType(LLVMContextRef context)
{
	LLVMTypeRef fields[REPR_TREE_FIELDS];

	for (int i = 0; i < REPR_TREE_FIELDS; i++)
		fields[i] = LLVMInt32TypeInContext(context);
	return LLVMStructTypeInContext(context, fields, REPR_TREE_FIELDS, false);
}

/* {i32 offset, i32 num_words}: ReprCategorySet */
LLVMTypeRef
CodegenCategorySetType(LLVMContextRef context)
{
	LLVMTypeRef fields[2];

	fields[FIELDNO_REPRCATEGORYSET_OFFSET] = LLVMInt32TypeInContext(context);
	fields[FIELDNO_REPRCATEGORYSET_NUM_WORDS] = LLVMInt32TypeInContext(context);
	return LLVMStructTypeInContext(context, fields, 2, false);
}

/* SilvanKernelArgs: counts are i64, every pointer an i8* cast where loaded */
LLVMTypeRef
CodegenKernelArgsType(LLVMContextRef context)
{
	LLVMTypeRef t_i8p = LLVMPointerType(LLVMInt8TypeInContext(context), 0);
	LLVMTypeRef fields[KERNEL_ARGS_FIELDS];

	for (int i = 0; i < KERNEL_ARGS_FIELDS; i++)
		fields[i] = t_i8p;
	fields[FIELDNO_KERNELARGS_NUM_ROWS] = LLVMInt64TypeInContext(context);
	fields[FIELDNO_KERNELARGS_MAX_CHUNKS] = LLVMInt64TypeInContext(context);
	fields[FIELDNO_KERNELARGS_AUX] = LLVMArrayType(t_i8p, REPR_MAX_AUX);
	return LLVMStructTypeInContext(context, fields, KERNEL_ARGS_FIELDS, false);
}

/* Set up the types every emitter uses */
static void
InitTypes(CodegenContext *cg)
{
	LLVMTypeRef body_params[4];
	LLVMTypeRef pfor_params[5];

	cg->t_value = cg->forest->precision == FOREST_FLOAT32 ?
		LLVMFloatTypeInContext(cg->context) : LLVMDoubleTypeInContext(cg->context);
	cg->t_i1 = LLVMInt1TypeInContext(cg->context);
	cg->t_i32 = LLVMInt32TypeInContext(cg->context);
	cg->t_i64 = LLVMInt64TypeInContext(cg->context);
	cg->t_i8p = LLVMPointerType(LLVMInt8TypeInContext(cg->context), 0);
	cg->t_tree = CodegenTreeType(cg->context);
	cg->t_set = CodegenCategorySetType(cg->context);
	cg->t_node = cg->repr->node_type(cg);
	body_params[0] = cg->t_i8p;
	body_params[1] = body_params[2] = body_params[3] = cg->t_i64;
	cg->t_body = LLVMFunctionType(LLVMVoidTypeInContext(cg->context), body_params, 4, false);
	pfor_params[0] = LLVMPointerType(cg->t_body, 0);
	pfor_params[1] = cg->t_i8p;
	pfor_params[2] = pfor_params[3] = pfor_params[4] = cg->t_i64;
	cg->t_parallel_for = LLVMFunctionType(cg->t_i64, pfor_params, 5, false);
	cg->t_args = CodegenKernelArgsType(cg->context);
	cg->md_invariant = LLVMGetMDKindIDInContext(cg->context, "invariant.load", 14);
	cg->md_empty = LLVMMDNodeInContext(cg->context, NULL, 0);
}

/*
 * Check the generated module with LLVM's verifier, one function at a
 * time so that a cancel request is seen between them (verifying a big
 * module at once takes a tenth of a second and more); on a failure the
 * whole module is verified again for LLVM's message.  The module's
 * globals are the constant tables built here from typed arrays.
 */
static bool
VerifyGenerated(LLVMModuleRef module, SilvanStatus *status)
{
	char	   *error = NULL;

	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn; fn = LLVMGetNextFunction(fn))
	{
		if (CancelRequested())
			return StatusCanceled(status, "generating code");
		if (LLVMIsDeclaration(fn) || !LLVMVerifyFunction(fn, LLVMReturnStatusAction))
			continue;
		LLVMVerifyModule(module, LLVMReturnStatusAction, &error);
		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not generate code for model",
				   "LLVM rejected the generated function: %s", error ? error : "");
		LLVMDisposeMessage(error);
		return false;
	}
	return true;
}

/* Emit the forest's kernel (and its outlined loop bodies) into module */
bool
CodegenForest(const Mir *mir, const Representation *repr, const ReprBuffers *buffers,
			  LLVMModuleRef module, const char *fn_name, const Target *target,
			  const char *cpu, const char *features, CodegenStats *stats,
			  SilvanStatus *status)
{
	CodegenContext *cg = calloc(1, sizeof(CodegenContext));
	CodegenEnv	env;
	LLVMTypeRef params[1 + CODEGEN_MAX_KERNEL_PARAMS];
	int			num_params;
	LLVMValueRef fn;
	LLVMBasicBlockRef b_body;

	if (cg == NULL)
		return StatusNoMemory(status, "the code generator");
	cg->forest = mir->hir->forest;
	cg->mir = mir;
	cg->repr = repr;
	cg->buffers = buffers;
	cg->fn_name = fn_name;
	cg->target = target;
	cg->cpu = cpu;
	cg->features = features;
	cg->module = module;
	cg->context = LLVMGetModuleContext(module);
	cg->code_nodes_left = CODEGEN_MAX_CODE_NODES;
	cg->specialized_hi = -1;
	cg->code_inline_left = -1;
	InitTypes(cg);
	params[0] = LLVMPointerType(cg->t_args, 0);
	num_params = 1 + target->kernel_params(cg, params + 1);
	fn = LLVMAddFunction(module, fn_name,
						 LLVMFunctionType(LLVMVoidTypeInContext(cg->context), params,
										  (unsigned) num_params, false));
	target->mark_kernel(cg, fn);
	cg->builder = LLVMCreateBuilderInContext(cg->context);
	BeginFunction(cg, fn);
	AddAttribute(cg, fn, 1, "nocapture");
	AddAttribute(cg, fn, 1, "readonly");
	b_body = CgNewBlock(cg, "b_body");
	LLVMPositionBuilderAtEnd(cg->builder, b_body);
	LoadArgs(cg, LLVMGetParam(fn, 0));
	memset(&env, 0, sizeof(env));
	env.v_target = cg->fn.v_acc;
	EmitOps(cg, mir->root, &env);
	FinishFunction(cg, b_body);
	LLVMDisposeBuilder(cg->builder);
	stats->code_splits = CODEGEN_MAX_CODE_NODES - cg->code_nodes_left;
	stats->code_categorical = cg->code_categorical;
	stats->code_consts = cg->code_consts;
	stats->num_code_consts = cg->num_code_consts;
	free(cg->code_const_index);
	if (cg->canceled || cg->code_consts_failed)
	{
		bool		canceled = cg->canceled;

		free(cg->code_consts);
		stats->code_consts = NULL;
		free(cg);
		return canceled ? StatusCanceled(status, "generating code") :
			StatusNoMemory(status, "the code constants");
	}
	free(cg);
	return VerifyGenerated(module, status);
}
