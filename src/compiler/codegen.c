/*
 * codegen.c
 *		Lower the MIR loop nest to one LLVM function.
 *
 * The function is
 *
 *   void fn(const T *rows, int64 num_rows, T *acc, const node *nodes,
 *           const ReprTree *trees, const uint32 *category_words,
 *           const ReprCategorySet *category_sets)
 *
 * with T the forest's precision.  Each MIR op is lowered on its own: loops
 * become counted loops that narrow an environment (the open row range, the
 * fixed rows, the fixed tree), the walk op moves the fixed rows through the
 * fixed tree, and the reduce op adds each leaf into its row's margin.
 *
 * The walk switches on the tree's depth.  Padded trees enter a chain of
 * unrolled levels part way down, Duff's device style: a tree of depth d
 * runs the last d levels, so one chain serves every depth and code size is
 * bounded by the deepest padded tree, not by the number of trees.  Each
 * level moves all interleaved rows one step; there are no leaf tests.
 * Unpadded trees take a counted loop of depth steps in which a row that
 * reached a leaf stays there.
 *
 * Floating point: plain fcmp and fadd without fast-math flags, one add per
 * tree per row in tree order, so results equal the interpreter's bit for
 * bit.  The representation emits everything that depends on node layout.
 */
#include <stdio.h>
#include <string.h>

#include <llvm-c/Analysis.h>

#include "silvan/codegen.h"

/* What the enclosing loops have fixed */
typedef struct CodegenEnv
{
	LLVMValueRef v_row_lo;		/* open rows: [lo, hi), i64 */
	LLVMValueRef v_row_hi;
	LLVMValueRef v_row;			/* first row fixed by a row loop */
	int32_t		width;			/* rows fixed by a row loop; 0 if none */
	LLVMValueRef v_root;		/* tree fixed by a tree loop (i32s) */
	LLVMValueRef v_depth;
	LLVMValueRef v_group;
	LLVMValueRef v_leaf[SCHEDULE_MAX_INTERLEAVE];
} CodegenEnv;

/* A counted loop being emitted */
typedef struct CodegenLoop
{
	LLVMBasicBlockRef b_head;
	LLVMBasicBlockRef b_exit;
	LLVMValueRef v_iv;
} CodegenLoop;

static void EmitOps(CodegenContext *cg, const MirOp *op, CodegenEnv *env);

/* Append a block to the function */
static LLVMBasicBlockRef
NewBlock(CodegenContext *cg, const char *name)
{
	return LLVMAppendBasicBlockInContext(cg->context, cg->function, name);
}

/* Open a loop: iv from v_start while iv < v_end (signed) */
static void
LoopOpen(CodegenContext *cg, CodegenLoop *loop, const char *name,
		 LLVMValueRef v_start, LLVMValueRef v_end)
{
	char		label[64];
	LLVMBasicBlockRef b_pre = LLVMGetInsertBlock(cg->builder);
	LLVMBasicBlockRef b_body;

	snprintf(label, sizeof(label), "b_%s_head", name);
	loop->b_head = NewBlock(cg, label);
	snprintf(label, sizeof(label), "b_%s_body", name);
	b_body = NewBlock(cg, label);
	snprintf(label, sizeof(label), "b_%s_exit", name);
	loop->b_exit = NewBlock(cg, label);

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
static void
LoopClose(CodegenContext *cg, CodegenLoop *loop, int64_t step)
{
	LLVMValueRef v_next = LLVMBuildAdd(cg->builder, loop->v_iv,
									   LLVMConstInt(LLVMTypeOf(loop->v_iv), step, true),
									   "v_iv_next");
	LLVMBasicBlockRef b_latch = LLVMGetInsertBlock(cg->builder);

	LLVMBuildBr(cg->builder, loop->b_head);
	LLVMAddIncoming(loop->v_iv, &v_next, &b_latch, 1);
	LLVMMoveBasicBlockAfter(loop->b_exit, LLVMGetLastBasicBlock(cg->function));
	LLVMPositionBuilderAtEnd(cg->builder, loop->b_exit);
}

/* for b0 = lo to hi step tile: the body sees [b0, min(b0 + tile, hi)) */
static void
EmitTileLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	CodegenLoop loop;
	CodegenEnv	inner = *env;
	LLVMValueRef v_end;

	LoopOpen(cg, &loop, op->var, env->v_row_lo, env->v_row_hi);
	v_end = LLVMBuildAdd(cg->builder, loop.v_iv, CgInt64(cg, op->step), "");
	inner.v_row_lo = loop.v_iv;
	inner.v_row_hi = LLVMBuildSelect(cg->builder,
									 LLVMBuildICmp(cg->builder, LLVMIntSLT, v_end,
												   env->v_row_hi, ""),
									 v_end, env->v_row_hi, "v_tile_end");
	EmitOps(cg, op->body, &inner);
	LoopClose(cg, &loop, op->step);
}

/* Load field f of tree record v_tree */
static LLVMValueRef
LoadTreeField(CodegenContext *cg, LLVMValueRef v_tree, unsigned f, const char *name)
{
	LLVMValueRef v_idx = LLVMBuildZExt(cg->builder, v_tree, cg->t_i64, "");
	LLVMValueRef v_rec = LLVMBuildGEP2(cg->builder, cg->t_tree, cg->v_trees, &v_idx, 1, "");

	return LLVMBuildLoad2(cg->builder, cg->t_i32,
						  LLVMBuildStructGEP2(cg->builder, cg->t_tree, v_rec, f, ""), name);
}

/* for tree = 0 to num_trees: fix root, depth and group */
static void
EmitTreeLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	CodegenLoop loop;
	CodegenEnv	inner = *env;

	LoopOpen(cg, &loop, op->var, CgInt32(cg, 0), CgInt32(cg, cg->buffers->num_trees));
	inner.v_root = LoadTreeField(cg, loop.v_iv, 0, "v_root");
	inner.v_depth = LoadTreeField(cg, loop.v_iv, 1, "v_depth");
	inner.v_group = LoadTreeField(cg, loop.v_iv, 2, "v_group");
	EmitOps(cg, op->body, &inner);
	LoopClose(cg, &loop, 1);
}

/* for row = lo to hi step interleave, then the remainder one by one */
static void
EmitRowsLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	CodegenLoop main_loop;
	CodegenLoop rest_loop;
	CodegenEnv	inner = *env;
	LLVMValueRef v_rest_start = env->v_row_lo;
	char		name[16];

	if (op->step > 1)
	{
		LLVMValueRef v_end = LLVMBuildSub(cg->builder, env->v_row_hi,
										  CgInt64(cg, op->step - 1), "");

		LoopOpen(cg, &main_loop, op->var, env->v_row_lo, v_end);
		inner.v_row = main_loop.v_iv;
		inner.width = op->step;
		EmitOps(cg, op->body, &inner);
		LoopClose(cg, &main_loop, op->step);
		v_rest_start = main_loop.v_iv;
	}
	snprintf(name, sizeof(name), "%s_rest", op->var);
	LoopOpen(cg, &rest_loop, name, v_rest_start, env->v_row_hi);
	inner.v_row = rest_loop.v_iv;
	inner.width = 1;
	EmitOps(cg, op->body, &inner);
	LoopClose(cg, &rest_loop, 1);
}

/* Move every row one step down from the nodes in v_index */
static void
EmitStep(CodegenContext *cg, int32_t width, LLVMValueRef *v_row,
		 LLVMValueRef *v_index, LLVMValueRef *v_next, bool leaves_stay)
{
	for (int32_t i = 0; i < width; i++)
	{
		ReprNode	node;

		cg->repr->load_node(cg, v_index[i], &node);
		v_next[i] = cg->repr->move_to_child(cg, &node, v_row[i]);
		if (leaves_stay)
			v_next[i] = LLVMBuildSelect(cg->builder, cg->repr->is_leaf(cg, &node),
										v_index[i], v_next[i], "v_next");
	}
}

/* Create one phi per row in the current block */
static void
EmitPhis(CodegenContext *cg, int32_t width, LLVMValueRef *v_phi)
{
	for (int32_t i = 0; i < width; i++)
		v_phi[i] = LLVMBuildPhi(cg->builder, cg->t_i32, "v_node");
}

/* Add one incoming value per row from block b_from */
static void
AddIncoming(int32_t width, LLVMValueRef *v_phi, LLVMValueRef *v_from,
			LLVMBasicBlockRef b_from)
{
	for (int32_t i = 0; i < width; i++)
		LLVMAddIncoming(v_phi[i], &v_from[i], &b_from, 1);
}

/* Fill an array with one value */
static void
FillValues(int32_t width, LLVMValueRef *v_out, LLVMValueRef v)
{
	for (int32_t i = 0; i < width; i++)
		v_out[i] = v;
}

/*
 * The unrolled chain: levels 0 .. unroll-1, each entered from the switch
 * with every row at the root (trees of depth unroll - k enter at level k).
 * Returns the last level's block; v_out gets its nodes.
 */
static LLVMBasicBlockRef
EmitUnrolledChain(CodegenContext *cg, LLVMValueRef v_switch, LLVMBasicBlockRef b_switch,
				  const CodegenEnv *env, LLVMValueRef *v_row, LLVMValueRef *v_out)
{
	int32_t		unroll = cg->mir->unroll_depth;
	int32_t		width = env->width;
	LLVMValueRef v_roots[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_prev[SCHEDULE_MAX_INTERLEAVE];
	LLVMBasicBlockRef b_prev = NULL;

	FillValues(width, v_roots, env->v_root);
	for (int32_t k = 0; k < unroll; k++)
	{
		char		label[32];
		LLVMBasicBlockRef b_level;
		LLVMValueRef v_cur[SCHEDULE_MAX_INTERLEAVE];

		snprintf(label, sizeof(label), "b_level%d", k);
		b_level = NewBlock(cg, label);
		if (b_prev != NULL)
			LLVMBuildBr(cg->builder, b_level);
		LLVMAddCase(v_switch, CgInt32(cg, unroll - k), b_level);
		LLVMPositionBuilderAtEnd(cg->builder, b_level);
		EmitPhis(cg, width, v_cur);
		AddIncoming(width, v_cur, v_roots, b_switch);
		if (b_prev != NULL)
			AddIncoming(width, v_cur, v_prev, b_prev);
		EmitStep(cg, width, v_row, v_cur, v_prev, false);
		b_prev = b_level;
	}
	memcpy(v_out, v_prev, sizeof(LLVMValueRef) * width);
	return b_prev;
}

/*
 * The counted loop for unpadded trees: depth steps, leaves stay put.  The
 * switch's default enters b_head with every row at the root; b_head exits
 * to b_done, and v_out gets its nodes.
 */
static void
EmitLoopWalk(CodegenContext *cg, LLVMBasicBlockRef b_head, LLVMBasicBlockRef b_switch,
			 LLVMBasicBlockRef b_done, const CodegenEnv *env, LLVMValueRef *v_row,
			 LLVMValueRef *v_out)
{
	int32_t		width = env->width;
	LLVMBasicBlockRef b_body = NewBlock(cg, "b_walk_body");
	LLVMValueRef v_roots[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_next[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_step;
	LLVMValueRef v_step_next;
	LLVMValueRef v_zero = CgInt32(cg, 0);

	FillValues(width, v_roots, env->v_root);
	LLVMPositionBuilderAtEnd(cg->builder, b_head);
	v_step = LLVMBuildPhi(cg->builder, cg->t_i32, "v_step");
	EmitPhis(cg, width, v_out);
	LLVMAddIncoming(v_step, &v_zero, &b_switch, 1);
	AddIncoming(width, v_out, v_roots, b_switch);
	LLVMBuildCondBr(cg->builder,
					LLVMBuildICmp(cg->builder, LLVMIntSLT, v_step, env->v_depth, ""),
					b_body, b_done);

	LLVMPositionBuilderAtEnd(cg->builder, b_body);
	EmitStep(cg, width, v_row, v_out, v_next, true);
	v_step_next = LLVMBuildAdd(cg->builder, v_step, CgInt32(cg, 1), "");
	LLVMBuildBr(cg->builder, b_head);
	LLVMAddIncoming(v_step, &v_step_next, &b_body, 1);
	AddIncoming(width, v_out, v_next, b_body);
}

/* Walk the fixed rows through the fixed tree; env->v_leaf gets the leaves */
static void
EmitWalk(CodegenContext *cg, CodegenEnv *env)
{
	int32_t		width = env->width;
	int64_t		num_features = cg->forest->num_features;
	LLVMValueRef v_row[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_roots[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_done[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_out[SCHEDULE_MAX_INTERLEAVE];
	LLVMBasicBlockRef b_switch = LLVMGetInsertBlock(cg->builder);
	LLVMBasicBlockRef b_done = NewBlock(cg, "b_walk_done");
	LLVMBasicBlockRef b_loop = cg->mir->loop_walk ? NewBlock(cg, "b_walk_head") : b_done;
	LLVMValueRef v_switch;

	for (int32_t i = 0; i < width; i++)
	{
		LLVMValueRef v_r = LLVMBuildAdd(cg->builder, env->v_row, CgInt64(cg, i), "");
		LLVMValueRef v_off = LLVMBuildMul(cg->builder, v_r, CgInt64(cg, num_features), "");

		v_row[i] = LLVMBuildGEP2(cg->builder, cg->t_value, cg->v_rows, &v_off, 1, "v_row");
	}
	FillValues(width, v_roots, env->v_root);
	v_switch = LLVMBuildSwitch(cg->builder, env->v_depth, b_loop,
							   (unsigned) cg->mir->unroll_depth);

	LLVMPositionBuilderAtEnd(cg->builder, b_done);
	EmitPhis(cg, width, v_done);
	if (!cg->mir->loop_walk)
		AddIncoming(width, v_done, v_roots, b_switch);
	if (cg->mir->unroll_depth > 0)
	{
		LLVMBasicBlockRef b_last = EmitUnrolledChain(cg, v_switch, b_switch, env,
													 v_row, v_out);

		LLVMBuildBr(cg->builder, b_done);
		AddIncoming(width, v_done, v_out, b_last);
	}
	if (cg->mir->loop_walk)
	{
		EmitLoopWalk(cg, b_loop, b_switch, b_done, env, v_row, v_out);
		AddIncoming(width, v_done, v_out, b_loop);
	}
	LLVMMoveBasicBlockAfter(b_done, LLVMGetLastBasicBlock(cg->function));
	LLVMPositionBuilderAtEnd(cg->builder, b_done);
	for (int32_t i = 0; i < width; i++)
		env->v_leaf[i] = cg->repr->leaf_value(cg, v_done[i]);
}

/* acc[row + i][group] += leaf[i], one add per row in tree order */
static void
EmitReduce(CodegenContext *cg, CodegenEnv *env)
{
	int64_t		num_groups = cg->forest->num_groups;
	LLVMValueRef v_group = LLVMBuildSExt(cg->builder, env->v_group, cg->t_i64, "");

	for (int32_t i = 0; i < env->width; i++)
	{
		LLVMValueRef v_r = LLVMBuildAdd(cg->builder, env->v_row, CgInt64(cg, i), "");
		LLVMValueRef v_slot = LLVMBuildAdd(cg->builder,
										   LLVMBuildMul(cg->builder, v_r,
														CgInt64(cg, num_groups), ""),
										   v_group, "");
		LLVMValueRef v_ptr = LLVMBuildGEP2(cg->builder, cg->t_value, cg->v_acc,
										   &v_slot, 1, "v_acc_ptr");
		LLVMValueRef v_sum = LLVMBuildFAdd(cg->builder,
										   LLVMBuildLoad2(cg->builder, cg->t_value, v_ptr, ""),
										   env->v_leaf[i], "v_sum");

		LLVMBuildStore(cg->builder, v_sum, v_ptr);
	}
}

/* Lower a list of MIR ops */
static void
EmitOps(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	for (; op != NULL; op = op->next)
	{
		switch (op->kind)
		{
			case MIR_LOOP_TILE:
				EmitTileLoop(cg, op, env);
				break;
			case MIR_LOOP_TREE:
				EmitTreeLoop(cg, op, env);
				break;
			case MIR_LOOP_ROWS:
				EmitRowsLoop(cg, op, env);
				break;
			case MIR_WALK:
				EmitWalk(cg, env);
				break;
			case MIR_REDUCE:
				EmitReduce(cg, env);
				break;
		}
	}
}

/* Add an enum attribute (noalias, nocapture, ...) at an index */
static void
AddAttribute(CodegenContext *cg, unsigned index, const char *name)
{
	unsigned	kind = LLVMGetEnumAttributeKindForName(name, strlen(name));

	LLVMAddAttributeAtIndex(cg->function, index,
							LLVMCreateEnumAttribute(cg->context, kind, 0));
}

/* Add a string attribute to the function */
static void
AddStringAttribute(CodegenContext *cg, const char *key, const char *value)
{
	LLVMAddAttributeAtIndex(cg->function, LLVMAttributeFunctionIndex,
							LLVMCreateStringAttribute(cg->context, key, (unsigned) strlen(key),
													  value, (unsigned) strlen(value)));
}

/* Declare the batch function and name its parameters */
static void
DeclareFunction(CodegenContext *cg, const char *fn_name, const char *cpu,
				const char *features)
{
	LLVMTypeRef t_ptr_value = LLVMPointerType(cg->t_value, 0);
	LLVMTypeRef params[7] = {
		t_ptr_value, cg->t_i64, t_ptr_value, LLVMPointerType(cg->t_node, 0),
		LLVMPointerType(cg->t_tree, 0), LLVMPointerType(cg->t_i32, 0),
		LLVMPointerType(cg->t_set, 0)
	};
	static const char *const names[7] = {
		"rows", "num_rows", "acc", "nodes", "trees", "category_words", "category_sets"
	};
	LLVMValueRef *slots[7] = {
		&cg->v_rows, &cg->v_num_rows, &cg->v_acc, &cg->v_nodes, &cg->v_trees,
		&cg->v_category_words, &cg->v_category_sets
	};

	cg->function = LLVMAddFunction(cg->module, fn_name,
								   LLVMFunctionType(LLVMVoidTypeInContext(cg->context),
													params, 7, false));
	for (unsigned i = 0; i < 7; i++)
	{
		*slots[i] = LLVMGetParam(cg->function, i);
		LLVMSetValueName2(*slots[i], names[i], strlen(names[i]));
		if (i == 1)
			continue;
		AddAttribute(cg, i + 1, "noalias");
		AddAttribute(cg, i + 1, "nocapture");
		if (i != 2)
			AddAttribute(cg, i + 1, "readonly");
	}
	AddAttribute(cg, LLVMAttributeFunctionIndex, "nounwind");
	AddStringAttribute(cg, "target-cpu", cpu);
	AddStringAttribute(cg, "target-features", features);
}

/* Set up the types every emitter uses */
static void
InitTypes(CodegenContext *cg)
{
	LLVMTypeRef tree_fields[4];
	LLVMTypeRef set_fields[2];

	cg->t_value = cg->forest->precision == FOREST_FLOAT32 ?
		LLVMFloatTypeInContext(cg->context) : LLVMDoubleTypeInContext(cg->context);
	cg->t_i1 = LLVMInt1TypeInContext(cg->context);
	cg->t_i32 = LLVMInt32TypeInContext(cg->context);
	cg->t_i64 = LLVMInt64TypeInContext(cg->context);
	for (int i = 0; i < 4; i++)
		tree_fields[i] = cg->t_i32;
	set_fields[0] = set_fields[1] = cg->t_i32;
	cg->t_tree = LLVMStructTypeInContext(cg->context, tree_fields, 4, false);
	cg->t_set = LLVMStructTypeInContext(cg->context, set_fields, 2, false);
	cg->t_node = cg->repr->node_type(cg);
}

/* Emit the forest's batch function into module */
bool
CodegenForest(const Mir *mir, const Representation *repr, const ReprBuffers *buffers,
			  LLVMModuleRef module, const char *fn_name, const char *cpu,
			  const char *features, SilvanStatus *status)
{
	CodegenContext cg = {0};
	CodegenEnv	env = {0};
	char	   *error = NULL;

	cg.forest = mir->hir->forest;
	cg.mir = mir;
	cg.repr = repr;
	cg.buffers = buffers;
	cg.module = module;
	cg.context = LLVMGetModuleContext(module);
	InitTypes(&cg);
	DeclareFunction(&cg, fn_name, cpu, features);
	cg.builder = LLVMCreateBuilderInContext(cg.context);
	LLVMPositionBuilderAtEnd(cg.builder, NewBlock(&cg, "b_entry"));
	env.v_row_lo = CgInt64(&cg, 0);
	env.v_row_hi = cg.v_num_rows;
	EmitOps(&cg, mir->root, &env);
	LLVMBuildRetVoid(cg.builder);
	LLVMDisposeBuilder(cg.builder);

	if (LLVMVerifyModule(module, LLVMReturnStatusAction, &error))
	{
		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not generate code for model",
				   "LLVM rejected the generated function: %s", error ? error : "");
		LLVMDisposeMessage(error);
		return false;
	}
	LLVMDisposeMessage(error);
	return true;
}
