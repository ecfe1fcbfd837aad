/*
 * walk_vector.c
 *		The vector walk strategy (walk.h), vectorWalk(i): the rows of one
 *		tree walked as the lanes of AVX-512 vectors, sixteen rows a vector
 *		and up to eight vectors at once.
 *
 * Its directive takes no argument.  MIR gives it up to
 * MIR_MAX_VECTOR_WIDTH lanes of rows in a layout that has vector rows
 * (Representation.vector_rows: perfect), untiled; elsewhere MIR_MAX_WIDTH
 * lanes in lock-step.  It is the default for the forests whose default
 * layout has vector rows, without categorical splits, where the host
 * profile says vector walks beat lock-step (VectorDefault), and one of
 * the tuner's walks.
 *
 * Preconditions (else the op is walked in lock-step, WalkLockstep): a cpu
 * target whose features have AVX-512F; the perfect layout (repr_perfect.c)
 * of a float forest with PLAIN records in one of the two compare forms
 * that decide by one unordered compare (REPR_PLAIN_BELOW_X, _X_BELOW) and
 * at least 64 records; lanes that are consecutive rows of one tree (an
 * interleaved row loop of step 1) in a multiple of sixteen, at least four
 * vectors (one or two vectors' gathers wait on each other, slower than
 * lock-step; four overlap enough to beat it); leaves added
 * by a plain reduce (no stage, no locals, no atomics): one vector add into
 * sixteen consecutive margins, or, for forests of several groups, a gather
 * of the rows' margins of the tree's group, the add and a scatter.  The
 * innermost loop steps by the op's width, then by 64, 16, 4 and 1
 * (MirStepWidths): four vectors or more first, the last rows in lock-step.
 *
 * In the perfect layout record g's children are 2g and 2g + 1, so a hop of
 * sixteen rows is one gather of their features (a vector of row offsets
 * plus the node's feature), one compare of the sixteen values with the
 * nodes' thresholds into a mask, and a shift with a masked or: no branch,
 * no per-lane address arithmetic.  What a hop costs is how the thresholds
 * and features reach the lanes.  A tree's nodes of one level are a run of
 * records (g0 * 2^k on, for root g0 and level k), so its top levels are
 * loaded whole into registers once per op and each lane's node is picked
 * out of them by a permute on its index within the level: levels 1 to 3
 * (at most 8 records, one 64-byte load) by vpermps/vpermd, level 4 (16
 * records) by vpermi2ps/vpermi2d of two loads, level 5 (32 records) by two
 * of those and a select on the index's fifth bit.  The root is one scalar
 * load for all lanes.  Deeper levels gather the threshold and the feature
 * too, and the leaf value (the threshold slot of the last level's record)
 * is a gather.  Several vectors are walked level by level together, so
 * their gathers overlap.
 *
 * On a core with fast AVX-512 gathers, higgs, airline and year (100
 * XGBoost trees of depth 8, the default's 128-row tiles) walk clearly
 * faster this way than 16 rows in lock-step with add-with-carry hops.
 * Gathering every level's threshold and feature instead of permuting the
 * top levels is much slower, and 64 rows a tree instead of 128 somewhat
 * slower.
 *
 * Reading past a level's run: levels 1 to 3 load 8 records from the run's
 * first, whichever of them the level has.  The run is internal (below 2^H
 * in a layout of 2^(H+1) records), so the 8 records end inside the layout
 * when it has at least 64 records, which the preconditions ask.  Every
 * record a lane's index can reach is in the layout, and unused records
 * are zero (feature 0), so every gather stays in bounds.
 *
 * Each row adds its leaves in tree order into its own margin, as the
 * lock-step walk does, and the compare is the scalar walk's, lane by
 * lane: margins equal the interpreter's bit for bit.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/text.h"
#include "silvan/tune.h"

#define VECTOR_LANES		16
/* the tuner's vector walk: its interleave (one point per nest) */
#define VECTOR_TUNE_INTERLEAVE	16
/* Levels whose nodes are permuted out of registers (0 to 5) */
#define VECTOR_TABLE_LEVELS	6

/* ---- MIR ---- */

/* Does the schedule's layout hold rows as vector lanes, untiled? */
static bool
VectorRowsLayout(const Schedule *s)
{
	const Representation *layout = ReprLookup(s->representation);

	return s->tile_size <= 1 && layout != NULL && layout->vector_rows;
}

/*
 * Rows as vectors only in a layout that has them: elsewhere a vector walk
 * is lock-step, in groups of at most MIR_MAX_WIDTH rows, which the loop's
 * step then gives
 */
static int32_t
VectorMaxLanes(const Schedule *s, const MirOp *walk)
{
	return walk->lanes == MIR_LANES_ROWS && VectorRowsLayout(s) ?
		MIR_MAX_VECTOR_WIDTH : MIR_MAX_WIDTH;
}

/* Remainders: four vectors, one vector's worth in lock-step, four rows */
static int
VectorRemainders(const MirOp *walk, int32_t *widths)
{
	int			n = 0;

	if (walk->width > MIR_MIN_VECTOR_WIDTH)
		widths[n++] = MIR_MIN_VECTOR_WIDTH;
	if (walk->width > MIR_MAX_WIDTH)
		widths[n++] = MIR_MAX_WIDTH;
	if (walk->width > MIR_REMAINDER_STEP)
		widths[n++] = MIR_REMAINDER_STEP;
	return n;
}

/* The walk's line in the MIR dump */
static void
VectorDescribe(TextBuf *buf, const Mir *mir, const MirOp *walk, int part)
{
	(void) mir, (void) walk;
	if (part == WALK_DESCRIBE_ARGS)
		TextAppend(buf, ", vectorWalk: sixteen rows a vector where AVX-512 and the layout allow, else lock-step");
}

/* ---- the default schedule ---- */

/*
 * Float forests whose default layout has vector rows (perfect: XGBoost's
 * depth-limited trees), without categorical splits, on hosts whose
 * profile has vector walks: the default's row tiles, MIR_MAX_VECTOR_WIDTH
 * rows of a tile as vectors
 */
static bool
VectorDefault(const Forest *forest, int32_t batch_size, const HostProfile *host,
			  Schedule *schedule)
{
	if (!ReprDefaultFor(forest)->vector_rows || ScheduleHasCategorical(forest) ||
		!HostProfileVectorWalk(host))
		return false;
	ScheduleRowTiles(forest, batch_size, host, MIR_MAX_VECTOR_WIDTH, "vectorWalk", "", 0,
					 schedule);
	return true;
}

/* ---- the tuner ---- */

/*
 * A layout with vector rows, hosts whose profile has vector walks, no
 * categorical splits, one point per nest (interleave 16, which the nest
 * takes as MIR_MAX_VECTOR_WIDTH rows)
 */
static bool
VectorValid(const TuneShape *shape, const TuneCpuPoint *p)
{
	int32_t		rows = p->row_tile > 0 ? p->row_tile : shape->batch_size;
	const Representation *layout = ReprAt(p->representation);

	return shape->vector_walk && !shape->categorical && rows >= VECTOR_TUNE_INTERLEAVE &&
		p->interleave == VECTOR_TUNE_INTERLEAVE && layout != NULL && layout->vector_rows;
}

/* The heuristic's first phase: in the first layout with vector rows, which phase 2 would not try */
static bool
VectorFirst(TuneCpuPoint *p)
{
	for (int r = 0; r < ReprCount(); r++)
		if (ReprAt(r)->vector_rows)
		{
			p->representation = r;
			return true;
		}
	return false;
}

/* vectorWalk(loop) */
static bool
VectorDirective(const WalkTuning *tuning, const TuneShape *shape, const char *loop,
				char *text, size_t size)
{
	int			n = snprintf(text, size, "vectorWalk(%s)\n", loop);

	(void) tuning, (void) shape;
	return n > 0 && (size_t) n < size;
}

/* ---- code generation ---- */

/* What one vector walk emits with */
typedef struct VectorWalk
{
	CodegenContext *cg;
	int32_t		vectors;
	LLVMTypeRef t_vf;			/* <16 x float> */
	LLVMTypeRef t_vi;			/* <16 x i32> */
	LLVMValueRef v_floats;		/* float* over the records */
	LLVMValueRef v_ints;		/* i32* over the records */
	LLVMValueRef v_row_ptr;		/* float* to lane 0's row */
	LLVMValueRef v_lane_off[MIR_MAX_VECTOR_WIDTH / VECTOR_LANES];	/* rows' offsets */
	LLVMValueRef v_g[MIR_MAX_VECTOR_WIDTH / VECTOR_LANES];	/* each lane's record */
} VectorWalk;

/* Why the op cannot walk as vectors, or NULL */
static const char *
VectorWalkUnfit(CodegenContext *cg, const MirOp *op, const CodegenEnv *env)
{
	const ReprBuffers *buffers = cg->buffers;

	if (cg->target->gpu)
		return "gpu target";
	if (!CgHasFeature(cg->features, "avx512f"))
		return "no AVX-512F";
	if (!cg->repr->vector_rows || cg->forest->precision != FOREST_FLOAT32)
		return "not the perfect layout of a float forest";
	if (buffers->layout != REPR_SPLIT_PLAIN || (buffers->plain_form != REPR_PLAIN_BELOW_X &&
												 buffers->plain_form != REPR_PLAIN_X_BELOW))
		return "splits that one compare does not decide";
	if (buffers->num_nodes < 64 || buffers->num_nodes > INT32_MAX / 2)
		return "layout size";
	if (env->width < MIR_MIN_VECTOR_WIDTH)
		return "fewer than four vectors (slower than lock-step)";
	if (env->v_tree == NULL || env->v_row != NULL ||
		env->width % VECTOR_LANES != 0 || env->width > MIR_MAX_VECTOR_WIDTH ||
		CgLaneStride(cg, env) != 1)
		return "lanes not consecutive rows of one tree";
	if ((int64_t) (env->width + 1) * cg->forest->num_features > INT32_MAX)
		return "rows too wide";
	if (env->v_stage != NULL || env->v_stage_acc != NULL || env->num_local > 0 ||
		env->v_group == NULL || op->next == NULL || op->next->kind != MIR_REDUCE ||
		op->next->atomic_add)
		return "reduce";
	return NULL;
}

/* <16 x i32> of v */
static LLVMValueRef
SplatI32(VectorWalk *w, LLVMValueRef v)
{
	return CgSplat(w->cg->builder, v, VECTOR_LANES);
}

/* <16 x i32> constant of (base + lane) * scale */
static LLVMValueRef
LaneConstants(VectorWalk *w, int64_t base, int64_t scale)
{
	LLVMValueRef lanes[VECTOR_LANES];

	for (int l = 0; l < VECTOR_LANES; l++)
		lanes[l] = CgInt32(w->cg, (int32_t) ((base + l) * scale));
	return LLVMConstVector(lanes, VECTOR_LANES);
}

/* A call of the x86 intrinsic name returning t_ret */
static LLVMValueRef
CallIntrinsic(VectorWalk *w, const char *name, LLVMTypeRef t_ret, LLVMValueRef *args,
			  unsigned n)
{
	LLVMTypeRef params[3];
	LLVMTypeRef t_fn;

	for (unsigned i = 0; i < n; i++)
		params[i] = LLVMTypeOf(args[i]);
	t_fn = LLVMFunctionType(t_ret, params, n, false);
	return LLVMBuildCall2(w->cg->builder, t_fn, CgDeclare(w->cg, name, t_fn), args, n, "");
}

/* One vector of sixteen 32-bit values at base[v_index + 16 * chunk] (index i64) */
static LLVMValueRef
LoadChunk(VectorWalk *w, LLVMValueRef v_base, LLVMValueRef v_index, int chunk)
{
	LLVMBuilderRef b = w->cg->builder;
	LLVMValueRef v_at = LLVMBuildAdd(b, v_index, CgInt64(w->cg, 16 * chunk), "");
	LLVMValueRef v_ptr = LLVMBuildGEP2(b, w->cg->t_i32, v_base, &v_at, 1, "");
	LLVMValueRef v_load;

	v_ptr = LLVMBuildBitCast(b, v_ptr, LLVMPointerType(w->t_vi, 0), "");
	v_load = LLVMBuildLoad2(b, w->t_vi, v_ptr, "v_level");
	LLVMSetAlignment(v_load, 4);
	LLVMSetMetadata(v_load, w->cg->md_invariant, w->cg->md_empty);
	return v_load;
}

/* Gather 32-bit values base[v_index] (<16 x i32>) as elements of t_elem */
static LLVMValueRef
Gather(VectorWalk *w, LLVMTypeRef t_elem, LLVMValueRef v_base, LLVMValueRef v_index)
{
	LLVMBuilderRef b = w->cg->builder;
	LLVMValueRef v_wide = LLVMBuildSExt(b, v_index, LLVMVectorType(w->cg->t_i64, VECTOR_LANES), "");
	LLVMValueRef v_ptrs = LLVMBuildGEP2(b, t_elem, v_base, &v_wide, 1, "");

	return CgMaskedGather(w->cg, t_elem, v_ptrs, VECTOR_LANES, "v_gathered");
}

/*
 * Move vector v one level down: gather its rows' features, compare with the
 * thresholds, child 2g + (goes right)
 */
static void
Hop(VectorWalk *w, int v, LLVMValueRef v_threshold, LLVMValueRef v_feature)
{
	CodegenContext *cg = w->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_x = Gather(w, cg->t_value, w->v_row_ptr,
							  LLVMBuildAdd(b, w->v_lane_off[v], v_feature, ""));
	LLVMValueRef v_right = cg->buffers->plain_form == REPR_PLAIN_BELOW_X ?
		LLVMBuildFCmp(b, LLVMRealULT, v_threshold, v_x, "v_go_right") :
		LLVMBuildFCmp(b, LLVMRealULT, v_x, v_threshold, "v_go_right");
	LLVMValueRef v_twice = LLVMBuildShl(b, w->v_g[v], SplatI32(w, CgInt32(cg, 1)), "");

	w->v_g[v] = LLVMBuildSelect(b, v_right, LLVMBuildOr(b, v_twice, SplatI32(w, CgInt32(cg, 1)), ""),
								v_twice, "v_child");
}

/* The root's hop: one record for every lane */
static void
RootHop(VectorWalk *w, LLVMValueRef v_root)
{
	CodegenContext *cg = w->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_at = LLVMBuildShl(b, v_root, CgInt64(cg, 1), "");
	LLVMValueRef v_at1 = LLVMBuildAdd(b, v_at, CgInt64(cg, 1), "");
	LLVMValueRef v_thr = CgLoad(cg, cg->t_value,
								LLVMBuildGEP2(b, cg->t_value, w->v_floats, &v_at, 1, ""), "");
	LLVMValueRef v_feat = CgLoad(cg, cg->t_i32,
								 LLVMBuildGEP2(b, cg->t_i32, w->v_ints, &v_at1, 1, ""), "");
	LLVMValueRef v_thrs = CgSplat(b, v_thr, VECTOR_LANES);
	LLVMValueRef v_feats = SplatI32(w, v_feat);

	for (int v = 0; v < w->vectors; v++)
		Hop(w, v, v_thrs, v_feats);
}

/*
 * Level k (1 to 5) of the tree at root v_root: its run of 2^k records is
 * loaded into registers, each lane's threshold and feature permuted out
 */
static void
TableHop(VectorWalk *w, LLVMValueRef v_root, int k)
{
	CodegenContext *cg = w->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_first = LLVMBuildShl(b, v_root, CgInt64(cg, k), "v_level_first");
	LLVMValueRef v_at = LLVMBuildShl(b, v_first, CgInt64(cg, 1), "");
	LLVMValueRef v_first32 = SplatI32(w, LLVMBuildTrunc(b, v_first, cg->t_i32, ""));
	LLVMValueRef chunks[4];
	int			num_chunks = k <= 3 ? 1 : k == 4 ? 2 : 4;

	for (int c = 0; c < num_chunks; c++)
		chunks[c] = LoadChunk(w, w->v_ints, v_at, c);
	for (int v = 0; v < w->vectors; v++)
	{
		/* dword 2j of the run: lane's threshold; 2j + 1: its feature */
		LLVMValueRef v_j = LLVMBuildSub(b, w->v_g[v], v_first32, "v_in_level");
		LLVMValueRef v_even = LLVMBuildShl(b, v_j, SplatI32(w, CgInt32(cg, 1)), "");
		LLVMValueRef v_odd = LLVMBuildOr(b, v_even, SplatI32(w, CgInt32(cg, 1)), "");
		LLVMValueRef v_thr;
		LLVMValueRef v_feat;

		if (num_chunks == 1)
		{
			LLVMValueRef args_f[2] = {LLVMBuildBitCast(b, chunks[0], w->t_vf, ""), v_even};
			LLVMValueRef args_i[2] = {chunks[0], v_odd};

			v_thr = CallIntrinsic(w, "llvm.x86.avx512.permvar.sf.512", w->t_vf, args_f, 2);
			v_feat = CallIntrinsic(w, "llvm.x86.avx512.permvar.si.512", w->t_vi, args_i, 2);
		}
		else
		{
			LLVMValueRef thr[2];
			LLVMValueRef feat[2];
			LLVMValueRef v_even5 = LLVMBuildAnd(b, v_even, SplatI32(w, CgInt32(cg, 31)), "");
			LLVMValueRef v_odd5 = LLVMBuildAnd(b, v_odd, SplatI32(w, CgInt32(cg, 31)), "");

			for (int h = 0; h < num_chunks / 2; h++)
			{
				LLVMValueRef args_f[3] = {LLVMBuildBitCast(b, chunks[2 * h], w->t_vf, ""), v_even5,
				LLVMBuildBitCast(b, chunks[2 * h + 1], w->t_vf, "")};
				LLVMValueRef args_i[3] = {chunks[2 * h], v_odd5, chunks[2 * h + 1]};

				thr[h] = CallIntrinsic(w, "llvm.x86.avx512.vpermi2var.ps.512", w->t_vf, args_f, 3);
				feat[h] = CallIntrinsic(w, "llvm.x86.avx512.vpermi2var.d.512", w->t_vi, args_i, 3);
			}
			v_thr = thr[0];
			v_feat = feat[0];
			if (num_chunks == 4)
			{
				/* records 16 to 31 of the run are in the second pair */
				LLVMValueRef v_high = LLVMBuildICmp(b, LLVMIntUGE, v_j,
													SplatI32(w, CgInt32(cg, 16)), "");

				v_thr = LLVMBuildSelect(b, v_high, thr[1], thr[0], "");
				v_feat = LLVMBuildSelect(b, v_high, feat[1], feat[0], "");
			}
		}
		Hop(w, v, v_thr, v_feat);
	}
}

/* A level below the tables: thresholds and features gathered too */
static void
GatherHop(VectorWalk *w)
{
	CodegenContext *cg = w->cg;
	LLVMBuilderRef b = cg->builder;

	for (int v = 0; v < w->vectors; v++)
	{
		LLVMValueRef v_even = LLVMBuildShl(b, w->v_g[v], SplatI32(w, CgInt32(cg, 1)), "");
		LLVMValueRef v_odd = LLVMBuildOr(b, v_even, SplatI32(w, CgInt32(cg, 1)), "");

		Hop(w, v, Gather(w, cg->t_value, w->v_floats, v_even),
			Gather(w, cg->t_i32, w->v_ints, v_odd));
	}
}

/*
 * Walk every vector to its leaf: the table levels, each entered only when
 * the tree is that deep, then a loop over the deeper levels
 */
static void
WalkToLeaves(VectorWalk *w, LLVMValueRef v_root, LLVMValueRef v_depth)
{
	CodegenContext *cg = w->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_walked = CgNewBlock(cg, "b_vector_walked");
	LLVMBasicBlockRef b_head = CgNewBlock(cg, "b_vector_deep_head");
	LLVMBasicBlockRef b_body = CgNewBlock(cg, "b_vector_deep_body");
	LLVMBasicBlockRef from[VECTOR_TABLE_LEVELS + 1];
	LLVMValueRef walked[VECTOR_TABLE_LEVELS + 1][MIR_MAX_VECTOR_WIDTH / VECTOR_LANES];
	LLVMValueRef v_head[MIR_MAX_VECTOR_WIDTH / VECTOR_LANES];
	LLVMValueRef v_start = CgInt32(cg, VECTOR_TABLE_LEVELS);
	LLVMValueRef v_step;
	LLVMValueRef v_next;
	LLVMBasicBlockRef b_entry;
	LLVMBasicBlockRef b_latch;
	int			n = 0;

	for (int k = 0; k < VECTOR_TABLE_LEVELS; k++)
	{
		LLVMBasicBlockRef b_level = CgNewBlock(cg, "b_vector_level");

		from[n] = LLVMGetInsertBlock(b);
		memcpy(walked[n++], w->v_g, sizeof(LLVMValueRef) * (size_t) w->vectors);
		LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, CgInt32(cg, k), v_depth, ""),
						b_level, b_walked);
		LLVMPositionBuilderAtEnd(b, b_level);
		if (k == 0)
			RootHop(w, v_root);
		else
			TableHop(w, v_root, k);
	}

	/* levels from VECTOR_TABLE_LEVELS down: for (step = 6; step < depth; step++) */
	b_entry = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, b_head);
	LLVMPositionBuilderAtEnd(b, b_head);
	v_step = LLVMBuildPhi(b, cg->t_i32, "v_vector_step");
	LLVMAddIncoming(v_step, &v_start, &b_entry, 1);
	for (int v = 0; v < w->vectors; v++)
	{
		v_head[v] = LLVMBuildPhi(b, w->t_vi, "v_record");
		LLVMAddIncoming(v_head[v], &w->v_g[v], &b_entry, 1);
	}
	from[n] = b_head;
	memcpy(walked[n++], v_head, sizeof(LLVMValueRef) * (size_t) w->vectors);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, v_step, v_depth, ""), b_body, b_walked);
	LLVMPositionBuilderAtEnd(b, b_body);
	memcpy(w->v_g, v_head, sizeof(LLVMValueRef) * (size_t) w->vectors);
	GatherHop(w);
	v_next = LLVMBuildAdd(b, v_step, CgInt32(cg, 1), "");
	b_latch = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, b_head);
	LLVMAddIncoming(v_step, &v_next, &b_latch, 1);
	for (int v = 0; v < w->vectors; v++)
		LLVMAddIncoming(v_head[v], &w->v_g[v], &b_latch, 1);

	LLVMMoveBasicBlockAfter(b_walked, LLVMGetLastBasicBlock(cg->fn.function));
	LLVMPositionBuilderAtEnd(b, b_walked);
	for (int v = 0; v < w->vectors; v++)
	{
		LLVMValueRef v_phi = LLVMBuildPhi(b, w->t_vi, "v_leaf_record");

		for (int i = 0; i < n; i++)
			LLVMAddIncoming(v_phi, &walked[i][v], &from[i], 1);
		w->v_g[v] = v_phi;
	}
}

/* Scatter v_values to the sixteen pointers v_ptrs */
static void
Scatter(VectorWalk *w, LLVMValueRef v_values, LLVMValueRef v_ptrs)
{
	CodegenContext *cg = w->cg;
	LLVMTypeRef t_i1v = LLVMVectorType(cg->t_i1, VECTOR_LANES);
	LLVMTypeRef params[4] = {w->t_vf, LLVMTypeOf(v_ptrs), cg->t_i32, t_i1v};
	LLVMTypeRef t_fn = LLVMFunctionType(LLVMVoidTypeInContext(cg->context), params, 4, false);
	LLVMValueRef args[4] = {v_values, v_ptrs, CgInt32(cg, 4), LLVMConstAllOnes(t_i1v)};

	LLVMBuildCall2(cg->builder, t_fn, CgDeclare(cg, "llvm.masked.scatter.v16f32.v16p0f32", t_fn),
				   args, 4, "");
}

/*
 * The leaves' values, added into each row's margin of the tree's group:
 * sixteen consecutive margins where the forest has one group, else each
 * row's margin num_groups apart, gathered and scattered (the rows differ)
 */
static void
AddLeaves(VectorWalk *w, CodegenEnv *env, LLVMValueRef v_row0)
{
	CodegenContext *cg = w->cg;
	LLVMBuilderRef b = cg->builder;
	int32_t		groups = cg->forest->num_groups;
	LLVMValueRef v_group = LLVMBuildSExt(b, env->v_group, cg->t_i64, "");
	LLVMValueRef v_strides = LLVMBuildSExt(b, LaneConstants(w, 0, groups),
										   LLVMVectorType(cg->t_i64, VECTOR_LANES), "");

	for (int v = 0; v < w->vectors; v++)
	{
		LLVMValueRef v_even = LLVMBuildShl(b, w->v_g[v], SplatI32(w, CgInt32(cg, 1)), "");
		LLVMValueRef v_leaf = Gather(w, cg->t_value, w->v_floats, v_even);
		LLVMValueRef v_row = LLVMBuildAdd(b, v_row0, CgInt64(cg, VECTOR_LANES * v), "");
		LLVMValueRef v_at = LLVMBuildAdd(b, LLVMBuildMul(b, v_row, CgInt64(cg, groups), ""),
										 v_group, "");
		LLVMValueRef v_ptr = LLVMBuildGEP2(b, cg->t_value, env->v_target, &v_at, 1, "v_acc_ptr");
		LLVMValueRef v_acc;
		LLVMValueRef v_ptrs;
		LLVMValueRef v_store;

		if (groups == 1)
		{
			v_ptr = LLVMBuildBitCast(b, v_ptr, LLVMPointerType(w->t_vf, 0), "");
			v_acc = LLVMBuildLoad2(b, w->t_vf, v_ptr, "v_acc");
			LLVMSetAlignment(v_acc, 4);
			v_store = LLVMBuildStore(b, CgAggregateLeaf(cg, v_acc, v_leaf), v_ptr);
			LLVMSetAlignment(v_store, 4);
			continue;
		}
		v_ptrs = LLVMBuildGEP2(b, cg->t_value, v_ptr, &v_strides, 1, "v_acc_ptrs");
		v_acc = CgMaskedGather(cg, cg->t_value, v_ptrs, VECTOR_LANES, "v_acc");
		Scatter(w, CgAggregateLeaf(cg, v_acc, v_leaf), v_ptrs);
	}
}

/*
 * The lock-step walk of the op's lanes in groups of at most MIR_MAX_WIDTH
 * (a vector walk's width may be more than one lock-step walk takes), each
 * group's leaves added by the reduce
 */
static void
LockstepGroups(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
			   LLVMValueRef *v_leaf, LLVMValueRef *v_rows, LLVMValueRef *v_groups)
{
	LLVMValueRef v_iv = env->v_val[env->lane_iv];

	if (env->width <= MIR_MAX_WIDTH || v_iv == NULL)
	{
		WalkLockstep.codegen->emit(cg, op, env, v_leaf, v_rows, v_groups);
		return;
	}
	for (int32_t first = 0; first < env->width; first += MIR_MAX_WIDTH)
	{
		CodegenEnv	group = *env;
		LLVMValueRef leaf[MIR_MAX_WIDTH] = {NULL};
		LLVMValueRef rows[MIR_MAX_WIDTH];
		LLVMValueRef groups[MIR_MAX_WIDTH];

		group.width = env->width - first < MIR_MAX_WIDTH ? env->width - first : MIR_MAX_WIDTH;
		group.v_val[env->lane_iv] = LLVMBuildAdd(cg->builder, v_iv, CgInt64(cg, first), "");
		WalkLockstep.codegen->emit(cg, op, &group, leaf, rows, groups);
		if (leaf[0] != NULL && op->next != NULL && op->next->kind == MIR_REDUCE)
			CgEmitReduce(cg, op->next, &group, leaf, rows, groups);
	}
	v_leaf[0] = NULL;			/* added here */
}

/* vectorWalk's emit: the op's rows as vectors, or in lock-step where they cannot be */
static void
VectorEmit(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
		   LLVMValueRef *v_leaf, LLVMValueRef *v_rows, LLVMValueRef *v_groups)
{
	LLVMBuilderRef b = cg->builder;
	VectorWalk	w = {.cg = cg};
	CodegenEnv	lane_env = *env;
	MirPath		path;
	LLVMValueRef v_row0;
	LLVMValueRef v_root32;

	if (VectorWalkUnfit(cg, op, env) != NULL)
	{
		LockstepGroups(cg, op, env, v_leaf, v_rows, v_groups);
		return;
	}
	w.vectors = env->width / VECTOR_LANES;
	w.t_vf = LLVMVectorType(cg->t_value, VECTOR_LANES);
	w.t_vi = LLVMVectorType(cg->t_i32, VECTOR_LANES);
	w.v_floats = LLVMBuildBitCast(b, cg->v_nodes, LLVMPointerType(cg->t_value, 0), "v_node_floats");
	w.v_ints = LLVMBuildBitCast(b, cg->v_nodes, LLVMPointerType(cg->t_i32, 0), "v_node_ints");
	MirPathOf(cg->mir, op, &path);
	v_row0 = CgVarValue(cg, &lane_env, &path, CgRootVar(cg, INDEX_BATCH));
	w.v_row_ptr = CgRowPointer(cg, v_row0);
	v_root32 = SplatI32(&w, LLVMBuildTrunc(b, env->v_root, cg->t_i32, ""));
	for (int v = 0; v < w.vectors; v++)
	{
		w.v_lane_off[v] = LaneConstants(&w, (int64_t) VECTOR_LANES * v, cg->forest->num_features);
		w.v_g[v] = v_root32;
	}
	WalkToLeaves(&w, env->v_root, env->v_depth);
	AddLeaves(&w, env, v_row0);
	v_leaf[0] = NULL;			/* added here */
}

/* IR instructions per vector walk emission, per vector, and per vector and level */
#define COST_VECTOR_BASE		100
#define COST_VECTOR_VECTOR		20
#define COST_VECTOR_LEVEL		10

/*
 * The code one vector walk of width lanes emits: its levels, vector by
 * vector, where VectorWalkUnfit's checks that the estimate can make pass
 * (the target, the layout, the width), else lock-step groups
 */
static void
VectorCost(CostModel *model, const MirOp *op, int32_t width, int32_t tree, WalkCost *cost)
{
	const ReprBuffers *buffers = model->buffers;
	int64_t		vectors = width / VECTOR_LANES;
	bool		fit = CgHasFeature(model->features, "avx512f") &&
		VectorRowsLayout(model->mir->schedule) &&
		model->hir->forest->precision == FOREST_FLOAT32 &&
		buffers->layout == REPR_SPLIT_PLAIN &&
		(buffers->plain_form == REPR_PLAIN_BELOW_X || buffers->plain_form == REPR_PLAIN_X_BELOW) &&
		buffers->num_nodes >= 64 && width >= MIR_MIN_VECTOR_WIDTH &&
		width % VECTOR_LANES == 0 && op->lanes == MIR_LANES_ROWS;

	if (!fit)
	{
		/* walked in lock-step, in groups of MIR_MAX_WIDTH */
		int32_t		groups = (width + MIR_MAX_WIDTH - 1) / MIR_MAX_WIDTH;

		WalkLockstep.codegen->cost(model, op, width < MIR_MAX_WIDTH ? width : MIR_MAX_WIDTH, tree, cost);
		cost->inline_instructions *= groups;
		cost->inline_loops *= groups;
		return;
	}
	cost->inline_instructions = COST_VECTOR_BASE +
		vectors * (COST_VECTOR_VECTOR + COST_VECTOR_LEVEL * (model->hir->max_padded_depth + 1));
	cost->inline_loops = 1;
}

static const WalkCodegen VectorCodegen = {
	.emit = VectorEmit,
	.cost = VectorCost
};

const WalkStrategy WalkVector = {
	.name = "vector",
	.num_directives = 1,
	.directives = {{"vectorWalk", "v", "vectorWalk(indexVar)", NULL}},
	.max_lanes = VectorMaxLanes,
	.remainders = VectorRemainders,
	.describe = VectorDescribe,
	.default_rank = 50,
	.default_schedule = VectorDefault,
	.num_tunings = 1,
	.tunings = {
		{"vector", NULL, WALK_NEST_VECTOR_LANES, VectorValid, VectorFirst, NULL, VectorDirective}
	},
	.codegen = &VectorCodegen
};
