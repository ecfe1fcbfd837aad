/*
 * walk_lockstep.c
 *		The lock-step walk, the default strategy (walk.h): every lane one
 *		level down per hop until every lane is at a leaf.  Its directives
 *		unrollWalk(i, hops) and peelWalk(i, hops) pad trees and peel hops.
 *
 * Preconditions (code generation): the loops around the op have fixed the
 * tree (rows lanes) or the row (tree lanes), or both when the walk has one
 * lane, and env->width lanes are to be walked (the innermost loop's step).
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
 * unrollWalk(i, d) pads every tree up to depth d (hir.c), so that walks of
 * trees that deep have a fixed number of hops and no leaf tests;
 * peelWalk(i, h) takes the first h hops without leaf tests.  The MIR walk
 * op carries them as unroll and peel, which the HIR's padding and the
 * representations read.
 *
 * It is the default schedule's walk for every forest no other strategy
 * claims (ScheduleRowTiles: rows in tiles, 16 or 8 of them in lock-step as
 * the host profile says, trees padded to depth 16), and the tuner's
 * lock-step, unrolled and peeled walks.
 */
#include <stdio.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/host_profile.h"
#include "silvan/mir.h"
#include "silvan/text.h"
#include "silvan/tiling.h"
#include "silvan/tune.h"

#define LOCKSTEP_UNROLL		0	/* walk_args: unrollWalk hops */
#define LOCKSTEP_PEEL		1	/* walk_args: peelWalk hops */
#define LOCKSTEP_DEFAULT_UNROLL	16	/* the default pads trees up to this depth */
#define LOCKSTEP_TUNE_PEEL	4	/* the tuner's peeled walk: hops */

/* ---- the schedule language ---- */

/* unrollWalk(i, hops), peelWalk(i, hops): hops are positive */
static bool
LockstepCheckArgs(int d, const int64_t *values, WalkRefusal *why)
{
	(void) d;
	if (values[0] >= 1)
		return true;
	why->message = "walk hops must be positive";
	snprintf(why->detail, sizeof(why->detail), "%lld hops is not positive.",
			 (long long) values[0]);
	return false;
}

/* Set the hops of unrollWalk (d = 0) or peelWalk (d = 1) */
static void
LockstepApply(IndexVar *var, int d, const int64_t *values)
{
	var->walk_args[d == 0 ? LOCKSTEP_UNROLL : LOCKSTEP_PEEL] = (int32_t) values[0];
}

/* unrollWalk and peelWalk, where set */
static int
LockstepFlags(const IndexVar *var, WalkFlag *flags)
{
	int			n = 0;

	if (var->walk_args[LOCKSTEP_UNROLL] > 0)
		flags[n++] = (WalkFlag) {"unrollWalk", var->walk_args[LOCKSTEP_UNROLL], NULL};
	if (var->walk_args[LOCKSTEP_PEEL] > 0)
		flags[n++] = (WalkFlag) {"peelWalk", var->walk_args[LOCKSTEP_PEEL], NULL};
	return n;
}

/* ---- MIR ---- */

/* The walk's padding and peeled hops */
static void
LockstepLower(const IndexVar *var, MirOp *walk)
{
	walk->unroll = var->walk_args[LOCKSTEP_UNROLL];
	walk->peel = var->walk_args[LOCKSTEP_PEEL];
}

/* Hops the HIR can pad or peel */
static bool
LockstepCheckPath(const Schedule *s, const MirOp *walk, const MirOp *loop, SilvanStatus *status)
{
	const char *name = s->vars[loop->var].name;

	if (walk->unroll > HIR_MAX_PAD_DEPTH)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "unrollWalk(%s, %d): trees can be padded to depth %d at most.",
						  name, walk->unroll, HIR_MAX_PAD_DEPTH);
	if (walk->peel > HIR_MAX_PAD_DEPTH)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "peelWalk(%s, %d): walks can be peeled for %d hops at most.",
						  name, walk->peel, HIR_MAX_PAD_DEPTH);
	if (walk->unroll < 0 || walk->peel < 0)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "Walk hops on loop %s are negative.", name);
	return true;
}

/* unrollWalk and peelWalk in the walk's line; after it, its kinds of hop */
static void
LockstepDescribe(TextBuf *buf, const Mir *mir, const MirOp *walk, int part)
{
	if (part == WALK_DESCRIBE_ARGS)
	{
		if (walk->unroll)
			TextAppend(buf, ", unrollWalk %d", walk->unroll);
		if (walk->peel)
			TextAppend(buf, ", peelWalk %d", walk->peel);
	}
	else if (mir->hir != NULL)
		TextAppend(buf, "%s%s", walk->fixed_walk ? "; padded hops: no leaf test" : "",
				   walk->leaf_walk ? "; then hops until every lane is at a leaf" : "");
}

/* ---- the default schedule ---- */

/* Rows in tiles, in lock-step, trees padded up to LOCKSTEP_DEFAULT_UNROLL */
static bool
LockstepDefault(const Forest *forest, int32_t batch_size, const HostProfile *host,
				Schedule *schedule)
{
	int32_t		unroll = forest->max_depth < LOCKSTEP_DEFAULT_UNROLL ?
		forest->max_depth : LOCKSTEP_DEFAULT_UNROLL;
	char		args[16];

	snprintf(args, sizeof(args), ", %d", unroll);
	ScheduleRowTiles(forest, batch_size, host, 0, unroll > 0 ? "unrollWalk" : NULL, args,
					 unroll, schedule);
	return true;
}

/* ---- the tuner ---- */

/* Unrolled and peeled walks: trees of more than one level */
static bool
LockstepHopsValid(const TuneShape *shape, const TuneCpuPoint *p)
{
	(void) p;
	return shape->max_depth >= 2;
}

/* The heuristic's first phase: unrolled walks only interleaved */
static bool
LockstepUnrolledFirst(TuneCpuPoint *p)
{
	return p->interleave > 1;
}

/* unrollWalk(loop, depth), at most TUNE_MAX_UNROLL */
static bool
LockstepUnrolledDirective(const WalkTuning *tuning, const TuneShape *shape, const char *loop,
						  char *text, size_t size)
{
	int32_t		depth = shape->max_depth < TUNE_MAX_UNROLL ? shape->max_depth : TUNE_MAX_UNROLL;
	int			n = snprintf(text, size, "unrollWalk(%s, %d)\n", loop, depth);

	(void) tuning;
	return n > 0 && (size_t) n < size;
}

/* The heuristic's first phase: peeled walks only alone */
static bool
LockstepPeeledFirst(TuneCpuPoint *p)
{
	return p->interleave == 1;
}

/* peelWalk(loop, hops): LOCKSTEP_TUNE_PEEL, fewer than the depth */
static bool
LockstepPeeledDirective(const WalkTuning *tuning, const TuneShape *shape, const char *loop,
						char *text, size_t size)
{
	int32_t		hops = shape->max_depth > LOCKSTEP_TUNE_PEEL ? LOCKSTEP_TUNE_PEEL :
		shape->max_depth - 1;
	int			n = snprintf(text, size, "peelWalk(%s, %d)\n", loop, hops);

	(void) tuning;
	return n > 0 && (size_t) n < size;
}

/* ---- code generation ---- */

/* Signed min or max of two i32 */
static LLVMValueRef
Pick32(CodegenContext *cg, LLVMValueRef a, LLVMValueRef b, bool min)
{
	return LLVMBuildSelect(cg->builder,
						   LLVMBuildICmp(cg->builder, min ? LLVMIntSLT : LLVMIntSGT, a, b, ""),
						   a, b, "");
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

static const WalkCodegen LockstepCodegen = {
	.emit = LockstepEmit,
	.cost = LockstepCost
};

const WalkStrategy WalkLockstep = {
	.name = "lock-step",
	.hops_through_layout = true,
	.num_directives = 2,
	.directives = {
		{"unrollWalk", "vi", "unrollWalk(indexVar, hops)", NULL},
		{"peelWalk", "vi", "peelWalk(indexVar, hops)", NULL}
	},
	.combines = true,
	.check_args = LockstepCheckArgs,
	.apply = LockstepApply,
	.flags = LockstepFlags,
	.lower = LockstepLower,
	.check_path = LockstepCheckPath,
	.describe = LockstepDescribe,
	.default_rank = 100,
	.default_schedule = LockstepDefault,
	.num_tunings = 3,
	.tunings = {
		{"lock-step", NULL, WALK_NEST_TREE_TILES, NULL, NULL, NULL, NULL},
		{"unrolled", NULL, WALK_NEST_TREE_TILES, LockstepHopsValid, LockstepUnrolledFirst, NULL,
		LockstepUnrolledDirective},
		{"peeled", NULL, 0, LockstepHopsValid, LockstepPeeledFirst, NULL, LockstepPeeledDirective}
	},
	.codegen = &LockstepCodegen
};
