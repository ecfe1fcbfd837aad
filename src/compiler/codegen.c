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
 * The walk takes exactly depth(tree) hops in a counted loop whose body
 * moves all interleaved rows one level down, so the rows' dependent loads
 * overlap.  Padded trees (every leaf at depth) need no leaf test at all;
 * in trees too deep to pad, a row that reached a leaf stays there.  Fully
 * unrolling the walk per depth was measured: a few percent faster at ten
 * times the compile time, since each distinct depth needs its own copy.
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
	LLVMValueRef v_root;		/* tree fixed by a tree loop: root (i64) */
	LLVMValueRef v_depth;
	LLVMValueRef v_group;
	LLVMValueRef v_padded;
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
	inner.v_root = LLVMBuildZExt(cg->builder, LoadTreeField(cg, loop.v_iv, 0, ""),
								 cg->t_i64, "v_root");
	inner.v_depth = LoadTreeField(cg, loop.v_iv, 1, "v_depth");
	inner.v_group = LoadTreeField(cg, loop.v_iv, 2, "v_group");
	inner.v_padded = LoadTreeField(cg, loop.v_iv, 3, "v_padded");
	EmitOps(cg, op->body, &inner);
	LoopClose(cg, &loop, 1);
}

/*
 * for row = lo to hi step interleave; the remainder goes 4 rows at a time,
 * then one by one, so small batches still overlap some walks
 */
static void
EmitRowsLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env)
{
	int32_t		widths[3];
	int			num_widths = 0;
	LLVMValueRef v_start = env->v_row_lo;

	widths[num_widths++] = op->step;
	if (op->step > MIR_REMAINDER_STEP)
		widths[num_widths++] = MIR_REMAINDER_STEP;
	if (op->step > 1)
		widths[num_widths++] = 1;
	for (int i = 0; i < num_widths; i++)
	{
		CodegenLoop loop;
		CodegenEnv	inner = *env;
		char		name[16];
		LLVMValueRef v_end = LLVMBuildSub(cg->builder, env->v_row_hi,
										  CgInt64(cg, widths[i] - 1), "");

		snprintf(name, sizeof(name), "%s_w%d", op->var, widths[i]);
		LoopOpen(cg, &loop, name, v_start, v_end);
		inner.v_row = loop.v_iv;
		inner.width = widths[i];
		EmitOps(cg, op->body, &inner);
		LoopClose(cg, &loop, widths[i]);
		v_start = loop.v_iv;
	}
}

/* Load the node every row is at */
static void
EmitLoadNodes(CodegenContext *cg, int32_t width, LLVMValueRef *v_index, ReprNode *nodes)
{
	for (int32_t i = 0; i < width; i++)
		cg->repr->load_node(cg, v_index[i], &nodes[i]);
}

/* Move every row one step down; rows whose v_leaf is set stay put */
static void
EmitMoves(CodegenContext *cg, int32_t width, LLVMValueRef *v_row, ReprNode *nodes,
		  LLVMValueRef *v_leaf, LLVMValueRef *v_next)
{
	for (int32_t i = 0; i < width; i++)
	{
		v_next[i] = cg->repr->move_to_child(cg, &nodes[i], v_row[i]);
		if (v_leaf)
			v_next[i] = LLVMBuildSelect(cg->builder, v_leaf[i], nodes[i].v_index,
										v_next[i], "v_next");
	}
}

/* Create one phi per row in the current block */
static void
EmitPhis(CodegenContext *cg, int32_t width, LLVMValueRef *v_phi)
{
	for (int32_t i = 0; i < width; i++)
		v_phi[i] = LLVMBuildPhi(cg->builder, cg->t_i64, "v_node");
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
 * A walk of at most depth hops; enters b_head from b_from with every row at
 * the root and leaves to b_done, adding the rows' nodes to the v_done phis.
 *
 * Without check_leaves (padded trees: every leaf sits at depth) each hop
 * moves every row and there is no leaf test.  With check_leaves (trees too
 * uneven to pad) a row at a leaf stays there, and the walk stops early
 * once every row is at a leaf.
 */
static void
EmitWalkLoop(CodegenContext *cg, LLVMBasicBlockRef b_head, LLVMBasicBlockRef b_from,
			 LLVMBasicBlockRef b_done, LLVMValueRef *v_done, const CodegenEnv *env,
			 LLVMValueRef *v_row, bool check_leaves)
{
	int32_t		width = env->width;
	LLVMBasicBlockRef b_body = NewBlock(cg, check_leaves ? "b_leafwalk_body" : "b_walk_body");
	LLVMBasicBlockRef b_move = b_body;
	LLVMValueRef v_roots[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_cur[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_next[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_leaf[SCHEDULE_MAX_INTERLEAVE];
	ReprNode	nodes[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_step;
	LLVMValueRef v_step_next;
	LLVMValueRef v_zero = CgInt32(cg, 0);

	FillValues(width, v_roots, env->v_root);
	LLVMPositionBuilderAtEnd(cg->builder, b_head);
	v_step = LLVMBuildPhi(cg->builder, cg->t_i32, "v_step");
	EmitPhis(cg, width, v_cur);
	LLVMAddIncoming(v_step, &v_zero, &b_from, 1);
	AddIncoming(width, v_cur, v_roots, b_from);
	LLVMBuildCondBr(cg->builder,
					LLVMBuildICmp(cg->builder, LLVMIntSLT, v_step, env->v_depth, ""),
					b_body, b_done);
	AddIncoming(width, v_done, v_cur, b_head);

	LLVMPositionBuilderAtEnd(cg->builder, b_body);
	EmitLoadNodes(cg, width, v_cur, nodes);
	if (check_leaves)
	{
		LLVMValueRef v_all = NULL;

		for (int32_t i = 0; i < width; i++)
		{
			v_leaf[i] = cg->repr->is_leaf(cg, &nodes[i]);
			v_all = v_all ? LLVMBuildAnd(cg->builder, v_all, v_leaf[i], "") : v_leaf[i];
		}
		b_move = NewBlock(cg, "b_leafwalk_move");
		LLVMBuildCondBr(cg->builder, v_all, b_done, b_move);
		AddIncoming(width, v_done, v_cur, b_body);
		LLVMPositionBuilderAtEnd(cg->builder, b_move);
	}
	EmitMoves(cg, width, v_row, nodes, check_leaves ? v_leaf : NULL, v_next);
	v_step_next = LLVMBuildAdd(cg->builder, v_step, CgInt32(cg, 1), "");
	b_move = LLVMGetInsertBlock(cg->builder);	/* moves may add blocks */
	LLVMBuildBr(cg->builder, b_head);
	LLVMAddIncoming(v_step, &v_step_next, &b_move, 1);
	AddIncoming(width, v_cur, v_next, b_move);
}

/* Pointers to the fixed rows: one base, constant offsets */
static void
EmitRowPointers(CodegenContext *cg, const CodegenEnv *env, LLVMValueRef *v_row)
{
	int64_t		num_features = cg->forest->num_features;
	LLVMValueRef v_off = LLVMBuildMul(cg->builder, env->v_row, CgInt64(cg, num_features), "");
	LLVMValueRef v_base = LLVMBuildGEP2(cg->builder, cg->t_value, cg->v_rows, &v_off, 1,
										"v_row_base");

	for (int32_t i = 0; i < env->width; i++)
	{
		LLVMValueRef v_i = CgInt64(cg, i * num_features);

		v_row[i] = LLVMBuildGEP2(cg->builder, cg->t_value, v_base, &v_i, 1, "v_row");
	}
}

/*
 * Walk the fixed rows through the fixed tree; env->v_leaf gets the leaves.
 * Padded trees take the walk without leaf tests, the others the one with;
 * when both kinds occur the tree's padded flag picks.
 */
static void
EmitWalk(CodegenContext *cg, CodegenEnv *env)
{
	const Mir  *mir = cg->mir;
	int32_t		width = env->width;
	LLVMValueRef v_row[SCHEDULE_MAX_INTERLEAVE];
	LLVMValueRef v_done[SCHEDULE_MAX_INTERLEAVE];
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(cg->builder);
	LLVMBasicBlockRef b_done = NewBlock(cg, "b_walk_done");
	LLVMBasicBlockRef b_fixed = mir->fixed_walk ? NewBlock(cg, "b_walk_head") : NULL;
	LLVMBasicBlockRef b_leafy = mir->leaf_walk ? NewBlock(cg, "b_leafwalk_head") : NULL;

	EmitRowPointers(cg, env, v_row);
	if (b_fixed && b_leafy)
		LLVMBuildCondBr(cg->builder,
						LLVMBuildICmp(cg->builder, LLVMIntNE, env->v_padded, CgInt32(cg, 0), ""),
						b_fixed, b_leafy);
	else
		LLVMBuildBr(cg->builder, b_fixed ? b_fixed : b_leafy);

	LLVMPositionBuilderAtEnd(cg->builder, b_done);
	EmitPhis(cg, width, v_done);
	if (b_fixed)
		EmitWalkLoop(cg, b_fixed, b_from, b_done, v_done, env, v_row, false);
	if (b_leafy)
		EmitWalkLoop(cg, b_leafy, b_from, b_done, v_done, env, v_row, true);
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
	LLVMValueRef v_slot = LLVMBuildAdd(cg->builder,
									   LLVMBuildMul(cg->builder, env->v_row,
													CgInt64(cg, num_groups), ""),
									   v_group, "");
	LLVMValueRef v_base = LLVMBuildGEP2(cg->builder, cg->t_value, cg->v_acc, &v_slot, 1,
										"v_acc_base");

	for (int32_t i = 0; i < env->width; i++)
	{
		LLVMValueRef v_i = CgInt64(cg, i * num_groups);
		LLVMValueRef v_ptr = LLVMBuildGEP2(cg->builder, cg->t_value, v_base, &v_i, 1,
										   "v_acc_ptr");
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

/*
 * Check the nest codegen can lower: a walk and a reduce need rows fixed by
 * an enclosing row loop and a tree fixed by an enclosing tree loop.
 */
static bool
CheckNest(const MirOp *op, bool have_rows, bool have_tree)
{
	for (; op != NULL; op = op->next)
	{
		bool		ok;

		if (op->kind == MIR_WALK || op->kind == MIR_REDUCE)
			ok = have_rows && have_tree && op->step >= 1 &&
				op->step <= SCHEDULE_MAX_INTERLEAVE;
		else
			ok = CheckNest(op->body, have_rows || op->kind == MIR_LOOP_ROWS,
						   have_tree || op->kind == MIR_LOOP_TREE) &&
				op->step >= 1;
		if (!ok)
			return false;
	}
	return true;
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

	if (!CheckNest(mir->root, false, false))
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not generate code for model",
						  "The loop nest walks trees outside a row loop and a tree loop.");
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
