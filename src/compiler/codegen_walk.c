/*
 * codegen_walk.c
 *		Lower walk and reduce ops: the walk strategies' table, lock-step
 *		tree walks (the default strategy), and the adds of the leaves
 *		into the accumulator.
 *
 * Preconditions: the loops around the op have fixed the tree (rows lanes)
 * or the row (tree lanes), or both when the walk has one lane, and
 * env->width lanes are to be walked (the innermost loop's step).
 *
 * A walk has two phases.  The first takes the hops every lane's tree has
 * padded (ReprTree.fixed: no leaf above that level) in a counted loop
 * without any leaf test.  The second, for trees deeper than their padding,
 * is a loop that stops once every lane is at a leaf, in which a lane that
 * reached a leaf stays there.  Lanes of different trees (interleaved tree
 * loops) take the first phase for the smallest padding among them and the
 * second up to the largest depth.  Lanes of one tree (rows lanes) take the
 * root's hop with one load of the root for all of them.  Each hop moves
 * every lane one level down, so the lanes' dependent loads overlap.  The
 * hops are not fully unrolled per depth: that gains little and multiplies
 * the compile time, since each distinct depth needs its own copy.
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

/* The walk strategy of a walk op */
const WalkStrategy *
CgWalkStrategy(MirWalkKind kind)
{
	static const WalkStrategy *const all[] = {&WalkLockstep, &WalkEarlyExit, &WalkCode, &WalkVector};

	return kind >= 0 && kind < (int) (sizeof(all) / sizeof(all[0])) ? all[kind] : &WalkLockstep;
}

/* Signed min or max of two i32 */
static LLVMValueRef
Pick32(CodegenContext *cg, LLVMValueRef a, LLVMValueRef b, bool min)
{
	return LLVMBuildSelect(cg->builder,
						   LLVMBuildICmp(cg->builder, min ? LLVMIntSLT : LLVMIntSGT, a, b, ""),
						   a, b, "");
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
 * Hops v_start .. v_end of every lane (v_idx in: where they are; out: where
 * they end).  check: test for leaves, keep lanes at leaves, stop when all
 * are; otherwise every lane moves each hop.
 */
static void
EmitHops(CodegenContext *cg, int32_t width, const WalkLane *lanes, LLVMValueRef *v_idx,
		 LLVMValueRef v_start, LLVMValueRef v_end, bool check)
{
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef b_head = CgNewBlock(cg, check ? "b_leafwalk_head" : "b_walk_head");
	LLVMBasicBlockRef b_body = CgNewBlock(cg, check ? "b_leafwalk_body" : "b_walk_body");
	LLVMBasicBlockRef b_done = CgNewBlock(cg, check ? "b_leafwalk_done" : "b_walk_done");
	LLVMValueRef v_step;
	LLVMValueRef v_step_next;
	LLVMValueRef v_cur[MIR_MAX_WIDTH];
	LLVMValueRef v_next[MIR_MAX_WIDTH];
	LLVMValueRef v_leaf[MIR_MAX_WIDTH];
	LLVMValueRef v_out[MIR_MAX_WIDTH];
	ReprNode	nodes[MIR_MAX_WIDTH];
	LLVMBasicBlockRef b_latch;

	LLVMBuildBr(b, b_head);
	LLVMPositionBuilderAtEnd(b, b_head);
	v_step = LLVMBuildPhi(b, cg->t_i32, "v_step");
	LLVMAddIncoming(v_step, &v_start, &b_from, 1);
	for (int32_t k = 0; k < width; k++)
	{
		v_cur[k] = LLVMBuildPhi(b, cg->t_i64, "v_node");
		LLVMAddIncoming(v_cur[k], &v_idx[k], &b_from, 1);
	}
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, v_step, v_end, ""), b_body, b_done);

	LLVMPositionBuilderAtEnd(b, b_done);
	for (int32_t k = 0; k < width; k++)
	{
		v_out[k] = LLVMBuildPhi(b, cg->t_i64, "v_walked");
		LLVMAddIncoming(v_out[k], &v_cur[k], &b_head, 1);
	}

	/*
	 * Without leaf tests each lane's load and move are emitted together: the
	 * backend keeps that order, so fewer lanes' loaded nodes are live at once
	 * (fewer spills than all loads first, then all moves).
	 */
	LLVMPositionBuilderAtEnd(b, b_body);
	for (int32_t k = 0; k < width; k++)
	{
		cg->repr->load_node(cg, v_cur[k], check, &nodes[k]);
		if (!check)
			v_next[k] = cg->repr->move_to_child(cg, &nodes[k], lanes[k].v_row_ptr);
	}
	if (check)
	{
		LLVMValueRef v_all = NULL;
		LLVMBasicBlockRef b_move = CgNewBlock(cg, "b_leafwalk_move");

		for (int32_t k = 0; k < width; k++)
		{
			v_leaf[k] = cg->repr->is_leaf(cg, &nodes[k]);
			v_all = v_all ? LLVMBuildAnd(b, v_all, v_leaf[k], "") : v_leaf[k];
		}
		LLVMBuildCondBr(b, v_all, b_done, b_move);
		for (int32_t k = 0; k < width; k++)
			LLVMAddIncoming(v_out[k], &v_cur[k], &b_body, 1);
		LLVMPositionBuilderAtEnd(b, b_move);
	}
	for (int32_t k = 0; check && k < width; k++)
	{
		v_next[k] = cg->repr->move_to_child(cg, &nodes[k], lanes[k].v_row_ptr);
		v_next[k] = LLVMBuildSelect(b, v_leaf[k], v_cur[k], v_next[k], "v_next");
	}
	v_step_next = LLVMBuildAdd(b, v_step, CgInt32(cg, 1), "");
	b_latch = LLVMGetInsertBlock(b);	/* moves may add blocks */
	LLVMBuildBr(b, b_head);
	LLVMAddIncoming(v_step, &v_step_next, &b_latch, 1);
	for (int32_t k = 0; k < width; k++)
		LLVMAddIncoming(v_cur[k], &v_next[k], &b_latch, 1);

	LLVMMoveBasicBlockAfter(b_done, LLVMGetLastBasicBlock(cg->fn.function));
	LLVMPositionBuilderAtEnd(b, b_done);
	memcpy(v_idx, v_out, sizeof(LLVMValueRef) * (size_t) width);
}

/*
 * The first hop of lanes that share one tree, when the tree has one
 * (v_fixed > 0): every lane starts at the root, so its node is loaded once
 * for all of them and only the features are each lane's own, which makes
 * the XGBoost depth-8 models' kernels (16 rows a tree, Treebeard's perfect
 * layout) faster.  Each lane's node of the second level is loaded:
 * picking it from both children loaded once (two selects a lane instead
 * of two loads) is slower.  v_idx (in: the root) gets each lane's node
 * after the hop; *v_start the hop the walk goes on from.
 */
static void
EmitSharedRootHop(CodegenContext *cg, int32_t width, const WalkLane *lanes, LLVMValueRef *v_idx,
				  LLVMValueRef v_fixed, LLVMValueRef *v_start)
{
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef b_hop = CgNewBlock(cg, "b_root_hop");
	LLVMBasicBlockRef b_join = CgNewBlock(cg, "b_root_done");
	LLVMValueRef v_child[MIR_MAX_WIDTH];
	LLVMValueRef v_zero = CgInt32(cg, 0);
	LLVMValueRef v_one = CgInt32(cg, 1);
	ReprNode	root;

	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, v_fixed, v_zero, ""), b_hop, b_join);
	LLVMPositionBuilderAtEnd(b, b_hop);
	cg->repr->load_node(cg, v_idx[0], false, &root);
	for (int32_t k = 0; k < width; k++)
		v_child[k] = cg->repr->move_to_child(cg, &root, lanes[k].v_row_ptr);
	b_hop = LLVMGetInsertBlock(b);	/* moves may add blocks */
	LLVMBuildBr(b, b_join);
	LLVMPositionBuilderAtEnd(b, b_join);
	for (int32_t k = 0; k < width; k++)
	{
		LLVMValueRef v_node = LLVMBuildPhi(b, cg->t_i64, "v_node");

		LLVMAddIncoming(v_node, &v_idx[k], &b_from, 1);
		LLVMAddIncoming(v_node, &v_child[k], &b_hop, 1);
		v_idx[k] = v_node;
	}
	*v_start = LLVMBuildPhi(b, cg->t_i32, "v_step");
	LLVMAddIncoming(*v_start, &v_zero, &b_from, 1);
	LLVMAddIncoming(*v_start, &v_one, &b_hop, 1);
}

/*
 * Walk env->width lanes in lock-step; v_leaf gets each lane's leaf value,
 * v_rows its row (i64) and v_groups its tree's group (i32), for the reduce
 */
static void
LockstepEmit(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
		   LLVMValueRef *v_leaf, LLVMValueRef *v_rows, LLVMValueRef *v_groups)
{
	int32_t		width = env->width > 0 ? env->width : 1;
	MirPath		path;
	WalkLane	lanes[MIR_MAX_WIDTH];
	LLVMValueRef v_idx[MIR_MAX_WIDTH];
	LLVMValueRef v_fixed;
	LLVMValueRef v_depth;
	LLVMValueRef v_start = CgInt32(cg, 0);
	bool		per_lane_trees = env->v_tree == NULL;
	bool		check = op->leaf_walk || (per_lane_trees && width > 1 && op->fixed_walk);

	MirPathOf(cg->mir, op, &path);
	CgSetUpLanes(cg, &path, env, width, lanes);
	for (int32_t k = 0; k < width; k++)
	{
		v_idx[k] = lanes[k].v_root;
		v_rows[k] = lanes[k].v_row;
		v_groups[k] = lanes[k].v_group;
	}
	v_fixed = lanes[0].v_fixed;
	v_depth = lanes[0].v_depth;
	for (int32_t k = 1; per_lane_trees && k < width; k++)
	{
		v_fixed = Pick32(cg, v_fixed, lanes[k].v_fixed, true);
		v_depth = Pick32(cg, v_depth, lanes[k].v_depth, false);
	}
	if (op->fixed_walk && !per_lane_trees && width > 1)
		EmitSharedRootHop(cg, width, lanes, v_idx, v_fixed, &v_start);
	if (op->fixed_walk)
		EmitHops(cg, width, lanes, v_idx, v_start, v_fixed, false);
	if (check)
		EmitHops(cg, width, lanes, v_idx, op->fixed_walk ? v_fixed : CgInt32(cg, 0),
				 v_depth, true);
	for (int32_t k = 0; k < width; k++)
		v_leaf[k] = cg->repr->leaf_value(cg, v_idx[k]);
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

/* IR instructions per lock-step walk emission, per lane, and per lane and hop loop */
#define COST_LOCKSTEP_BASE		30
#define COST_LOCKSTEP_LANE		14
#define COST_LOCKSTEP_HOPS		16

/* The code one lock-step walk of width lanes emits: a hop loop or two, all lanes in each */
static void
LockstepCost(CostModel *model, const MirOp *op, int32_t width, int32_t tree,
			 WalkCost *cost)
{
	bool		check = op->leaf_walk ||
		(op->lanes == MIR_LANES_TREES && width > 1 && op->fixed_walk);
	int			loops = (op->fixed_walk ? 1 : 0) + (check ? 1 : 0);

	int64_t		hop = COST_LOCKSTEP_HOPS;

	/* a hop of tiled trees walks a tile: its nodes compared, its shape looked up */
	if (model->hir->tiled != NULL)
		hop *= 4 + model->hir->tiled->tile_size;
	cost->inline_instructions = COST_LOCKSTEP_BASE +
		(int64_t) width * (COST_LOCKSTEP_LANE + hop * loops);
	cost->inline_loops = loops;
}

const WalkStrategy WalkLockstep = {
	.name = "lockstep",
	.emit = LockstepEmit,
	.cost = LockstepCost
};
