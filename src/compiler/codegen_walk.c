/*
 * codegen_walk.c
 *		What every walk strategy's code generation shares (walk.h): the
 *		lanes of a walk, and the reduce op, the adds of the leaves into
 *		the accumulator.
 *
 * Preconditions: the loops around the op have fixed the tree (rows lanes)
 * or the row (tree lanes), or both when the walk has one lane, and
 * env->width lanes are to be walked (the innermost loop's step).
 *
 * The reduce adds each lane's leaf into target[row][group], lane by lane:
 * for tree lanes that is tree order, so serial schedules keep the
 * interpreter's order of sums.  Below a stage that holds its rows'
 * margins (cache(i), EmitStage) the target is the stage's copy.  Inside a specialized tree loop over one
 * row the targets are the loop's own allocas (CodegenEnv.v_local), which
 * mem2reg keeps in registers across the trees; the adds are the same.
 * atomicReduce makes the add an atomic read-modify-write (LLVM expands it
 * to a compare-and-swap loop).
 *
 * MIN and MAX forests fold instead of adding (CgAggregate), exactly as the
 * interpreter does: the leaf replaces the target when the target is NaN
 * ("no tree yet") or the leaf is strictly smaller (larger), so of equal
 * values (0 and -0) the first in tree order stays.  Their atomicReduce is
 * a compare-and-swap loop of its own on the value's bits.
 */
#include <stdio.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/tiling.h"

/* The code generation of a walk op's strategy */
const WalkCodegen *
CgWalkCodegen(const MirOp *op)
{
	return WalkStrategyOf(op->walk)->codegen;
}

/*
 * How far the root index (row or tree) moves when variable v moves by one:
 * the product of the tile sizes where v's chain runs through an outer loop
 */
static int64_t
LaneStride(const Schedule *s, int v)
{
	int64_t		stride = 1;

	for (int hops = 0; v >= 0 && hops < 4 * SCHEDULE_MAX_VARS; hops++)
	{
		if (s->vars[v].origin == INDEX_ORIGIN_TILE_OUTER)
			stride *= s->vars[v].param;
		v = s->vars[v].parent;
	}
	return stride;
}

/* How many iterations of its root apart the lanes of env's innermost loop are */
int64_t
CgLaneStride(CodegenContext *cg, const CodegenEnv *env)
{
	return env->width > 1 ? LaneStride(cg->mir->schedule, env->lane_var) : 1;
}


/*
 * The row and tree of every lane.  Lane k is lane 0 moved by k iterations
 * of the innermost loop, so its row pointer is lane 0's plus a constant
 * (one base register for all lanes' feature loads).
 */
void
CgSetUpLanes(CodegenContext *cg, const MirPath *path, const CodegenEnv *env, int32_t width,
			 WalkLane *lanes)
{
	LLVMBuilderRef b = cg->builder;
	int64_t		stride = width > 1 ? LaneStride(cg->mir->schedule, env->lane_var) : 0;
	LLVMValueRef v_tree0 = NULL;
	LLVMValueRef v_rec;
	CodegenEnv	lane_env = *env;

	for (int32_t k = 0; k < width; k++)
	{
		WalkLane   *lane = &lanes[k];

		if (env->v_row != NULL)
		{
			lane->v_row = env->v_row;
			lane->v_row_ptr = env->v_row_ptr;
		}
		else if (k == 0)
		{
			lane->v_row = CgVarValue(cg, &lane_env, path, CgRootVar(cg, INDEX_BATCH));
			lane->v_row_ptr = CgRowPointer(cg, lane->v_row);
		}
		else
		{
			LLVMValueRef v_off = CgInt64(cg, k * stride * cg->forest->num_features);

			lane->v_row = LLVMBuildAdd(b, lanes[0].v_row, CgInt64(cg, k * stride), "v_lane_row");
			lane->v_row_ptr = LLVMBuildGEP2(b, cg->t_value, lanes[0].v_row_ptr, &v_off, 1,
											"v_row_ptr");
		}
		if (env->v_tree != NULL)
		{
			lane->v_tree = env->v_tree;
			lane->v_root = env->v_root;
			lane->v_depth = env->v_depth;
			lane->v_fixed = env->v_fixed;
			lane->v_group = env->v_group;
			continue;
		}
		if (k == 0)
			v_tree0 = CgVarValue(cg, &lane_env, path, CgRootVar(cg, INDEX_TREE));
		lane->v_tree = k == 0 ? v_tree0 : LLVMBuildAdd(b, v_tree0, CgInt64(cg, k * stride), "");
		CgLoadTree(cg, lane->v_tree, &v_rec, &lane->v_root, &lane->v_depth, &lane->v_fixed,
				   &lane->v_group);
	}
}


/*
 * The aggregate of the forest applied to a target value and a new one
 * (scalars or vectors of the value type): SUM adds; MIN (MAX) takes v_new
 * when v_acc is NaN or v_new is strictly smaller (larger), so a NaN v_new
 * (an empty partial) leaves v_acc alone
 */
LLVMValueRef
CgAggregate(CodegenContext *cg, LLVMValueRef v_acc, LLVMValueRef v_new)
{
	LLVMBuilderRef b = cg->builder;
	uint8_t		aggregate = cg->forest->aggregate;
	LLVMValueRef v_better;

	if (aggregate == FOREST_AGGREGATE_SUM)
		return LLVMBuildFAdd(b, v_acc, v_new, "v_sum");
	v_better = LLVMBuildFCmp(b, aggregate == FOREST_AGGREGATE_MIN ? LLVMRealOLT : LLVMRealOGT,
							 v_new, v_acc, "");
	return LLVMBuildSelect(b, LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealUNO, v_acc, v_acc, ""),
										  v_better, ""),
						   v_new, v_acc, "v_aggregate");
}

/*
 * CgAggregate of a leaf value, which in a MIN or MAX forest is never NaN
 * (validate.c): one unordered compare, new < acc or acc NaN (MIN), says
 * the same.  It also keeps LLVM 14's InstCombine correct where the leaf is
 * a constant (a code walk inline): it rewrote the two-compare form with a
 * -0 leaf into "acc < -0 ? acc : -0", which takes -0 over a +0 it should
 * keep.
 */
LLVMValueRef
CgAggregateLeaf(CodegenContext *cg, LLVMValueRef v_acc, LLVMValueRef v_leaf)
{
	LLVMBuilderRef b = cg->builder;
	uint8_t		aggregate = cg->forest->aggregate;

	if (aggregate == FOREST_AGGREGATE_SUM)
		return LLVMBuildFAdd(b, v_acc, v_leaf, "v_sum");
	return LLVMBuildSelect(b, LLVMBuildFCmp(b, aggregate == FOREST_AGGREGATE_MIN ? LLVMRealULT : LLVMRealUGT,
											v_leaf, v_acc, ""),
						   v_leaf, v_acc, "v_aggregate");
}

/*
 * Atomic MIN or MAX of *v_ptr and v_leaf: a compare-and-swap loop on the
 * value's bits (LLVM 14 has no floating point min/max read-modify-write)
 */
static void
AtomicAggregate(CodegenContext *cg, LLVMValueRef v_ptr, LLVMValueRef v_leaf)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_bits = LLVMIntTypeInContext(cg->context,
											  (unsigned) ForestValueSize(cg->forest) * 8);
	LLVMValueRef v_bits_ptr = LLVMBuildBitCast(b, v_ptr, LLVMPointerType(t_bits, 0), "");
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef b_loop = CgNewBlock(cg, "atomic_aggregate");
	LLVMBasicBlockRef b_done = CgNewBlock(cg, "atomic_aggregate_done");
	LLVMValueRef v_first = LLVMBuildLoad2(b, t_bits, v_bits_ptr, "");
	LLVMValueRef v_old;
	LLVMValueRef v_new;
	LLVMValueRef v_pair;
	LLVMValueRef v_seen;

	LLVMSetOrdering(v_first, LLVMAtomicOrderingMonotonic);
	LLVMSetAlignment(v_first, (unsigned) ForestValueSize(cg->forest));
	LLVMBuildBr(b, b_loop);
	LLVMPositionBuilderAtEnd(b, b_loop);
	v_old = LLVMBuildPhi(b, t_bits, "v_old");
	v_new = LLVMBuildBitCast(b, CgAggregateLeaf(cg, LLVMBuildBitCast(b, v_old, cg->t_value, ""),
											v_leaf), t_bits, "");
	v_pair = LLVMBuildAtomicCmpXchg(b, v_bits_ptr, v_old, v_new, LLVMAtomicOrderingMonotonic,
									LLVMAtomicOrderingMonotonic, false);
	v_seen = LLVMBuildExtractValue(b, v_pair, 0, "v_seen");
	LLVMAddIncoming(v_old, &v_first, &b_from, 1);
	LLVMAddIncoming(v_old, &v_seen, &b_loop, 1);
	LLVMBuildCondBr(b, LLVMBuildExtractValue(b, v_pair, 1, ""), b_done, b_loop);
	LLVMPositionBuilderAtEnd(b, b_done);
}

/*
 * Where lane k adds its leaf: target[row][group], or where a stage holds
 * the margins of its rows (EmitStage), there (group-major)
 */
static LLVMValueRef
ReduceTarget(CodegenContext *cg, const CodegenEnv *env, LLVMValueRef v_row, LLVMValueRef v_group)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_group64 = LLVMBuildSExt(b, v_group, cg->t_i64, "");
	LLVMValueRef v_slot;

	if (env->v_stage_acc != NULL)
	{
		v_slot = LLVMBuildAdd(b, LLVMBuildMul(b, v_group64, CgInt64(cg, env->stage_stride), ""),
							  LLVMBuildSub(b, v_row, env->v_stage_lo, ""), "");
		return LLVMBuildGEP2(b, cg->t_value, env->v_stage_acc, &v_slot, 1, "v_acc_ptr");
	}
	v_slot = LLVMBuildAdd(b, LLVMBuildMul(b, v_row, CgInt64(cg, cg->forest->num_groups), ""),
						  v_group64, "");
	return LLVMBuildGEP2(b, cg->t_value, env->v_target, &v_slot, 1, "v_acc_ptr");
}

/* target[row][group] += leaf (or MIN / MAX), lane by lane */
void
CgEmitReduce(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
			 const LLVMValueRef *v_leaf, const LLVMValueRef *v_rows,
			 const LLVMValueRef *v_groups)
{
	LLVMBuilderRef b = cg->builder;
	int32_t		width = env->width > 0 ? env->width : 1;

	bool		row_lanes = width > 1 && env->v_row == NULL;
	int64_t		stride = row_lanes ? LaneStride(cg->mir->schedule, env->lane_var) : 0;
	LLVMValueRef v_first = NULL;

	for (int32_t k = 0; k < width; k++)
	{
		LLVMValueRef v_ptr;

		if (env->num_local > 0 && LLVMIsConstant(v_groups[k]) && !op->atomic_add)
		{
			int64_t		g = LLVMConstIntGetSExtValue(v_groups[k]);

			if (g >= 0 && g < env->num_local)
			{
				LLVMBuildStore(b, CgAggregateLeaf(cg, LLVMBuildLoad2(b, cg->t_value, env->v_local[g], ""),
											  v_leaf[k]), env->v_local[g]);
				continue;
			}
		}
		if (row_lanes && k > 0)
		{
			/* one tree, rows a constant apart: constant offsets from lane 0 */
			LLVMValueRef v_off = CgInt64(cg, k * stride *
										 (env->v_stage_acc != NULL ? 1 : cg->forest->num_groups));

			v_ptr = LLVMBuildGEP2(b, cg->t_value, v_first, &v_off, 1, "v_acc_ptr");
		}
		else
			v_ptr = v_first = ReduceTarget(cg, env, v_rows[k], v_groups[k]);
		if (op->atomic_add && cg->forest->aggregate != FOREST_AGGREGATE_SUM)
			AtomicAggregate(cg, v_ptr, v_leaf[k]);
		else if (op->atomic_add)
			LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpFAdd, v_ptr, v_leaf[k],
							   LLVMAtomicOrderingMonotonic, false);
		else
			LLVMBuildStore(b, CgAggregateLeaf(cg, LLVMBuildLoad2(b, cg->t_value, v_ptr, ""),
										  v_leaf[k]), v_ptr);
	}
}

