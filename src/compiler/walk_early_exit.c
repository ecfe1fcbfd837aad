/*
 * walk_early_exit.c
 *		The early-exit walk strategy (walk.h), earlyExitWalk(i): every lane
 *		walks its own tree to its own leaf.
 *
 * Its directive takes no argument; it is never the default, and one of
 * the tuner's walks.
 *
 * Preconditions: as for every walk op (codegen_walk.c): the loops around
 * it fix the tree, the row, or both, and env->width lanes are to be walked.
 *
 * The lock-step walk pads trees to a common depth and moves every lane
 * until all of them are at leaves, which on deep, unbalanced trees (grown
 * leaf-wise, as LightGBM grows them) costs the hops of the deepest path
 * for every row.  Here each lane takes exactly the hops of its own path:
 * first the tree's unchecked hops (ReprTree.fixed, no leaf above that
 * level: a counted loop without leaf tests), then a loop that loads a
 * node, leaves at a leaf and otherwise moves to the child.  Lanes are
 * walked one after the other; their loops are independent, so the CPU
 * overlaps what it can.  The trees are never padded for it (MirPadLevels
 * only pads for unrollWalk and peelWalk).
 *
 * CgWalkToLeaf is also the cold part of a code walk (walk_code.c),
 * which enters the buffers below the splits it compiled.
 */
#include <stdio.h>

#include "silvan/codegen.h"
#include "silvan/text.h"
#include "silvan/tune.h"

/* ---- MIR, the tuner ---- */

/* The walk's line in the MIR dump */
static void
EarlyExitDescribe(TextBuf *buf, const Mir *mir, const MirOp *walk, int part)
{
	(void) mir, (void) walk;
	if (part == WALK_DESCRIBE_ARGS)
		TextAppend(buf, ", earlyExitWalk: each lane to its own leaf");
}

/* earlyExitWalk(loop) */
static bool
EarlyExitDirective(const WalkTuning *tuning, const TuneShape *shape, const char *loop,
				   char *text, size_t size)
{
	int			n = snprintf(text, size, "earlyExitWalk(%s)\n", loop);

	(void) tuning, (void) shape;
	return n > 0 && (size_t) n < size;
}

/* ---- code generation ---- */

/*
 * Walk one row from the record at v_index (i64) to a leaf; returns the
 * leaf's index.  v_fixed (i32, or NULL for none): hops that cannot meet a
 * leaf, taken first without tests; it must not exceed the distance to the
 * nearest leaf below v_index.
 */
LLVMValueRef
CgWalkToLeaf(CodegenContext *cg, LLVMValueRef v_index, LLVMValueRef v_row_ptr,
			 LLVMValueRef v_fixed)
{
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef b_head = CgNewBlock(cg, "b_early_head");
	LLVMBasicBlockRef b_move = CgNewBlock(cg, "b_early_move");
	LLVMBasicBlockRef b_done = CgNewBlock(cg, "b_early_done");
	LLVMBasicBlockRef b_latch;
	LLVMValueRef v_idx;
	LLVMValueRef v_next;
	ReprNode	node;

	if (v_fixed != NULL && !(LLVMIsAConstantInt(v_fixed) && LLVMConstIntGetSExtValue(v_fixed) == 0))
	{
		LLVMBasicBlockRef b_fhead = CgNewBlock(cg, "b_early_fixed_head");
		LLVMBasicBlockRef b_fbody = CgNewBlock(cg, "b_early_fixed_body");
		LLVMBasicBlockRef b_fdone = CgNewBlock(cg, "b_early_fixed_done");
		LLVMValueRef v_step;
		LLVMValueRef v_cur;
		LLVMValueRef v_zero = CgInt32(cg, 0);

		LLVMBuildBr(b, b_fhead);
		LLVMPositionBuilderAtEnd(b, b_fhead);
		v_step = LLVMBuildPhi(b, cg->t_i32, "v_step");
		v_cur = LLVMBuildPhi(b, cg->t_i64, "v_node");
		LLVMAddIncoming(v_step, &v_zero, &b_from, 1);
		LLVMAddIncoming(v_cur, &v_index, &b_from, 1);
		LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, v_step, v_fixed, ""), b_fbody, b_fdone);
		LLVMPositionBuilderAtEnd(b, b_fbody);
		cg->repr->load_node(cg, v_cur, false, &node);
		v_next = cg->repr->move_to_child(cg, &node, v_row_ptr);
		b_latch = LLVMGetInsertBlock(b);
		LLVMAddIncoming(v_cur, &v_next, &b_latch, 1);
		v_next = LLVMBuildAdd(b, v_step, CgInt32(cg, 1), "");
		LLVMAddIncoming(v_step, &v_next, &b_latch, 1);
		LLVMBuildBr(b, b_fhead);
		LLVMPositionBuilderAtEnd(b, b_fdone);
		v_index = v_cur;
		b_from = b_fdone;
	}
	LLVMBuildBr(b, b_head);
	LLVMPositionBuilderAtEnd(b, b_head);
	v_idx = LLVMBuildPhi(b, cg->t_i64, "v_node");
	LLVMAddIncoming(v_idx, &v_index, &b_from, 1);
	cg->repr->load_node(cg, v_idx, true, &node);
	LLVMBuildCondBr(b, cg->repr->is_leaf(cg, &node), b_done, b_move);
	LLVMPositionBuilderAtEnd(b, b_move);
	v_next = cg->repr->move_to_child(cg, &node, v_row_ptr);
	b_latch = LLVMGetInsertBlock(b);	/* moves may add blocks */
	LLVMAddIncoming(v_idx, &v_next, &b_latch, 1);
	LLVMBuildBr(b, b_head);
	LLVMMoveBasicBlockAfter(b_done, LLVMGetLastBasicBlock(cg->fn.function));
	LLVMPositionBuilderAtEnd(b, b_done);
	return v_idx;
}

/* Walk each of env->width lanes to its own leaf, one lane after the other */
static void
EarlyExitEmit(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
			  LLVMValueRef *v_leaf, LLVMValueRef *v_rows, LLVMValueRef *v_groups)
{
	int32_t		width = env->width > 0 ? env->width : 1;
	MirPath		path;
	WalkLane	lanes[MIR_MAX_WIDTH];

	MirPathOf(cg->mir, op, &path);
	CgSetUpLanes(cg, &path, env, width, lanes);
	for (int32_t k = 0; k < width; k++)
	{
		LLVMValueRef v_idx = CgWalkToLeaf(cg, lanes[k].v_root, lanes[k].v_row_ptr,
										  op->fixed_walk ? lanes[k].v_fixed : NULL);

		v_leaf[k] = cg->repr->leaf_value(cg, v_idx);
		v_rows[k] = lanes[k].v_row;
		v_groups[k] = lanes[k].v_group;
	}
}

/* IR instructions per early-exit walk emission, and per lane (its own hop loop) */
#define COST_EARLY_BASE		10
#define COST_EARLY_LANE		40

/* The code one early-exit walk of width lanes emits: a loop per lane */
static void
EarlyExitCost(CostModel *model, const MirOp *op, int32_t width, int32_t tree,
			  WalkCost *cost)
{
	cost->inline_instructions = COST_EARLY_BASE + (int64_t) width * COST_EARLY_LANE;
	cost->inline_loops = width;
}

static const WalkCodegen EarlyExitCodegen = {
	.emit = EarlyExitEmit,
	.cost = EarlyExitCost
};

const WalkStrategy WalkEarlyExit = {
	.name = "early exit",
	.hops_through_layout = true,
	.num_directives = 1,
	.directives = {{"earlyExitWalk", "v", "earlyExitWalk(indexVar)", NULL}},
	.describe = EarlyExitDescribe,
	.num_tunings = 1,
	.tunings = {{"early exit", NULL, 0, NULL, NULL, NULL, EarlyExitDirective}},
	.codegen = &EarlyExitCodegen
};
