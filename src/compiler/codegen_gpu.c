/*
 * codegen_gpu.c
 *		Loops mapped to GPU grid and block dimensions, and the phases a
 *		kernel's barriers cut.
 *
 * Preconditions: the MIR was built for a gpu target (MirBuildTarget) and
 * sized (MirGpuShared): every path maps the same dimensions, a block's
 * threads are a static number, a stage and a shared reduction fit in
 * shared memory, and the loops around a shared reduction are all mapped.
 *
 * A mapped loop runs the iteration lo + k in the thread whose index in its
 * dimension is k, if that is below hi.  The outermost loop lays out the
 * kernel: the block's rows staged in shared memory (cache), a barrier; the
 * nest; for a shared reduction a barrier and the adds of its partial sums.
 * A barrier is only ever placed where every thread of a block arrives: the
 * stage under the grid.x loop's test, which a block takes as one, the
 * reduction's after the outermost loop's test.  How a phase runs is the
 * target's (target.h: a device runs them in turn; the emulated grid calls
 * the kernel once per phase and thread), so values that live across a
 * barrier live in shared memory.
 */
#include "silvan/codegen.h"

/* The running thread's index in its block: x fastest, by the block's static size */
static LLVMValueRef
GpuThreadIndex(CodegenContext *cg)
{
	LLVMBuilderRef b = cg->builder;
	const Target *target = cg->target;
	int64_t		dims[3];

	MirGpuBlockDims(cg->mir, dims);
	return LLVMBuildAdd(b, target->grid_index(cg, GPU_DIM_BLOCK_X),
						LLVMBuildMul(b, CgInt64(cg, dims[0]),
									 LLVMBuildAdd(b, target->grid_index(cg, GPU_DIM_BLOCK_Y),
												  LLVMBuildMul(b, CgInt64(cg, dims[1]),
															   target->grid_index(cg, GPU_DIM_BLOCK_Z),
															   ""), ""), ""), "tid");
}

/* Threads of a block (static) */
static int64_t
GpuBlockThreads(CodegenContext *cg)
{
	int64_t		dims[3];

	MirGpuBlockDims(cg->mir, dims);
	return dims[0] * dims[1] * dims[2];
}

/*
 * Phase `phase` of a kernel cut by barriers: the builder continues in a
 * block that runs it when the target says so, *b_next is where the code
 * after it goes (target.h, in_phase)
 */
static void
BeginGpuPhase(CodegenContext *cg, int phase, LLVMBasicBlockRef *b_next)
{
	LLVMBasicBlockRef b_phase = CgNewBlock(cg, "gpu_phase");

	*b_next = CgNewBlock(cg, "gpu_phase_done");
	LLVMBuildCondBr(cg->builder, cg->target->in_phase(cg, phase), b_phase, *b_next);
	LLVMPositionBuilderAtEnd(cg->builder, b_phase);
}

/*
 * cache() on a gpu: block k's rows [k * size, min(k * size + size, n))
 * copied into shared memory by all the block's threads, thread t taking
 * values t, t + threads, ... (consecutive threads read consecutive values:
 * coalesced), then a barrier ending the phase; rows are then read there
 * (CgRowPointer).  The loop is outermost and mapped to grid.x, so every
 * thread of a block takes the same branch to here.
 */
static void
EmitGpuStage(CodegenContext *cg, LLVMValueRef v_block, LLVMValueRef v_stage,
			 LLVMBasicBlockRef b_after)
{
	LLVMBuilderRef b = cg->builder;
	int64_t		rows = cg->mir->gpu_stage_rows;
	int64_t		features = cg->forest->num_features;
	LLVMValueRef v_row_lo = LLVMBuildMul(b, v_block, CgInt64(cg, rows), "stage_row_lo");
	LLVMValueRef v_count = LLVMBuildMul(b, CgMin64(cg, CgInt64(cg, rows),
												 LLVMBuildSub(b, cg->fn.v_num_rows, v_row_lo, "")),
										CgInt64(cg, features), "stage_values");
	LLVMValueRef v_first = LLVMBuildMul(b, v_row_lo, CgInt64(cg, features), "");
	LLVMValueRef v_from = LLVMBuildGEP2(b, cg->t_value, cg->fn.v_rows, &v_first, 1, "");
	CodegenLoop loop;

	CgLoopOpen(cg, &loop, "gpu_stage_copy", GpuThreadIndex(cg), v_count);
	LLVMBuildStore(b, CgLoad(cg, cg->t_value, LLVMBuildGEP2(b, cg->t_value, v_from, &loop.v_iv, 1, ""),
							 ""),
				   LLVMBuildGEP2(b, cg->t_value, v_stage, &loop.v_iv, 1, ""));
	CgLoopClose(cg, &loop, GpuBlockThreads(cg));
	cg->target->barrier(cg, b_after);
}

/* Element i of an i64 array */
static LLVMValueRef
I64At(CodegenContext *cg, LLVMValueRef v_array, LLVMValueRef v_i, int64_t field)
{
	LLVMValueRef v_at = LLVMBuildAdd(cg->builder, LLVMBuildMul(cg->builder, v_i, CgInt64(cg, 3), ""),
									 CgInt64(cg, field), "");

	return LLVMBuildGEP2(cg->builder, cg->t_i64, v_array, &v_at, 1, "");
}

/*
 * One iteration of a shared reduction's loop (sharedReduce): the trees
 * below add into this thread's own partial sums (the rows it may reach,
 * CgRootSpan, at most Mir.gpu_reduce_rows, from the aggregate's "nothing
 * yet"), which then go to its slice of shared memory with their first row,
 * row count and the loop's iterations in range
 */
static void
EmitGpuReduceIteration(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path,
					   LLVMValueRef v_lo, LLVMValueRef v_hi)
{
	LLVMBuilderRef b = cg->builder;
	int64_t		slice = cg->mir->gpu_reduce_rows * cg->mir->num_groups;
	LLVMValueRef v_parts = CgAlloca(cg, cg->t_value, CgInt64(cg, slice), "v_parts");
	LLVMValueRef v_tid = GpuThreadIndex(cg);
	LLVMValueRef v_span_lo;
	LLVMValueRef v_span_hi;
	LLVMValueRef v_n;
	LLVMValueRef v_shift;
	LLVMValueRef v_to;
	CodegenLoop loop;

	CgRootSpan(cg, env, path, INDEX_BATCH, &v_span_lo, &v_span_hi);
	v_n = LLVMBuildSub(b, CgMin64(cg, v_span_hi, cg->fn.v_num_rows), v_span_lo, "reduce_rows");
	v_n = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, v_n, CgInt64(cg, 0), ""), v_n,
						  CgInt64(cg, 0), "");
	/* the span is exact below mapped loops and tiles (MirGpuShared); never past the slice */
	v_n = CgMin64(cg, v_n, CgInt64(cg, cg->mir->gpu_reduce_rows));
	for (int64_t i = 0; i < slice; i++)
		LLVMBuildStore(b, CgEmptyValue(cg, 1),
					   LLVMBuildGEP2(b, cg->t_value, v_parts, (LLVMValueRef[]) {CgInt64(cg, i)}, 1, ""));
	/* acc's index row * groups + group lands in the partials of rows from span_lo */
	v_shift = LLVMBuildNeg(b, LLVMBuildMul(b, v_span_lo, CgInt64(cg, cg->mir->num_groups), ""), "");
	env->v_target = LLVMBuildGEP2(b, cg->t_value, v_parts, &v_shift, 1, "v_parts_by_row");
	CgEmitLoopBody(cg, op, env, path);
	v_to = LLVMBuildGEP2(b, cg->t_value, cg->v_gpu_parts,
						 (LLVMValueRef[]) {LLVMBuildMul(b, v_tid, CgInt64(cg, slice), "")}, 1, "");
	CgLoopOpen(cg, &loop, "gpu_parts_out", CgInt64(cg, 0),
			 LLVMBuildMul(b, v_n, CgInt64(cg, cg->mir->num_groups), ""));
	LLVMBuildStore(b, LLVMBuildLoad2(b, cg->t_value,
									 LLVMBuildGEP2(b, cg->t_value, v_parts, &loop.v_iv, 1, ""), ""),
				   LLVMBuildGEP2(b, cg->t_value, v_to, &loop.v_iv, 1, ""));
	CgLoopClose(cg, &loop, 1);
	LLVMBuildStore(b, v_span_lo, I64At(cg, cg->v_gpu_extents, v_tid, 0));
	LLVMBuildStore(b, v_n, I64At(cg, cg->v_gpu_extents, v_tid, 1));
	LLVMBuildStore(b, LLVMBuildSub(b, v_hi, v_lo, ""), I64At(cg, cg->v_gpu_extents, v_tid, 2));
}

/*
 * After the barrier: the thread with index 0 in the reduction's dimension
 * adds, for each of its rows and groups, the partial sums of the loop's
 * iterations in range in their order, then that into acc
 */
static void
EmitGpuReduceFinish(CodegenContext *cg)
{
	LLVMBuilderRef b = cg->builder;
	const MirOp *op = cg->mir->gpu_reduce;
	int64_t		dims[3];
	int64_t		slice = cg->mir->gpu_reduce_rows * cg->mir->num_groups;
	int			d = op->gpu_dim - GPU_DIM_BLOCK_X;
	int64_t		stride;
	LLVMValueRef v_tid = GpuThreadIndex(cg);
	LLVMBasicBlockRef b_first = CgNewBlock(cg, "gpu_reduce_first");
	LLVMBasicBlockRef b_done = CgNewBlock(cg, "gpu_reduce_done");
	LLVMValueRef v_span_lo;
	LLVMValueRef v_count;
	LLVMValueRef v_iterations;
	LLVMValueRef v_sum;
	LLVMValueRef v_acc;
	CodegenLoop values;
	CodegenLoop parts;

	MirGpuBlockDims(cg->mir, dims);
	stride = d == 0 ? 1 : d == 1 ? dims[0] : dims[0] * dims[1];
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, cg->target->grid_index(cg, op->gpu_dim),
									 CgInt64(cg, 0), ""), b_first, b_done);
	LLVMPositionBuilderAtEnd(b, b_first);
	v_span_lo = LLVMBuildLoad2(b, cg->t_i64, I64At(cg, cg->v_gpu_extents, v_tid, 0), "");
	v_count = LLVMBuildMul(b, LLVMBuildLoad2(b, cg->t_i64, I64At(cg, cg->v_gpu_extents, v_tid, 1), ""),
						   CgInt64(cg, cg->mir->num_groups), "");
	v_iterations = LLVMBuildLoad2(b, cg->t_i64, I64At(cg, cg->v_gpu_extents, v_tid, 2), "");
	CgLoopOpen(cg, &values, "gpu_reduce_values", CgInt64(cg, 0), v_count);
	v_sum = CgAlloca(cg, cg->t_value, NULL, "v_reduce_sum");
	LLVMBuildStore(b, CgEmptyValue(cg, 1), v_sum);
	CgLoopOpen(cg, &parts, "gpu_reduce_parts", CgInt64(cg, 0), v_iterations);
	{
		LLVMValueRef v_thread = LLVMBuildAdd(b, v_tid, LLVMBuildMul(b, parts.v_iv,
																	CgInt64(cg, stride), ""), "");
		LLVMValueRef v_at = LLVMBuildAdd(b, LLVMBuildMul(b, v_thread, CgInt64(cg, slice), ""),
										 values.v_iv, "");
		LLVMValueRef v_part = LLVMBuildLoad2(b, cg->t_value,
											 LLVMBuildGEP2(b, cg->t_value, cg->v_gpu_parts,
														   &v_at, 1, ""), "");

		LLVMBuildStore(b, CgAggregate(cg, LLVMBuildLoad2(b, cg->t_value, v_sum, ""), v_part), v_sum);
	}
	CgLoopClose(cg, &parts, 1);
	v_acc = LLVMBuildGEP2(b, cg->t_value, cg->fn.v_acc,
						  (LLVMValueRef[]) {LLVMBuildAdd(b, LLVMBuildMul(b, v_span_lo,
																		   CgInt64(cg, cg->mir->num_groups), ""),
														  values.v_iv, "")}, 1, "");
	LLVMBuildStore(b, CgAggregate(cg, LLVMBuildLoad2(b, cg->t_value, v_acc, ""),
								  LLVMBuildLoad2(b, cg->t_value, v_sum, "")), v_acc);
	CgLoopClose(cg, &values, 1);
	LLVMBuildBr(b, b_done);
	LLVMPositionBuilderAtEnd(b, b_done);
}

/* The body of a mapped loop's iteration: a shared reduction's, or the plain one */
static void
EmitGpuIteration(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path,
				 LLVMValueRef v_lo, LLVMValueRef v_hi)
{
	if (op->shared_reduce)
		EmitGpuReduceIteration(cg, op, env, path, v_lo, v_hi);
	else
		CgEmitLoopBody(cg, op, env, path);
}

/*
 * The outermost loop of a gpu kernel, with the phases its barriers cut:
 * the block's rows staged (cache), the nest (each thread first marking
 * that it added nothing, for a shared reduction), then a shared
 * reduction's sums.  A barrier is only ever reached by all of a block's
 * threads: the stage's sits under the grid.x loop's test, which a block
 * takes as one; the nest's after the outermost loop's test.
 */
static void
EmitGpuKernelLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *inner, const MirPath *path,
				  LLVMValueRef v_iv, LLVMValueRef v_lo, LLVMValueRef v_hi)
{
	LLVMBuilderRef b = cg->builder;
	const Target *target = cg->target;
	const Mir  *mir = cg->mir;
	LLVMValueRef v_in = LLVMBuildICmp(b, LLVMIntSLT, v_iv, v_hi, "gpu_in");
	LLVMValueRef v_stage = NULL;
	LLVMBasicBlockRef b_next;
	LLVMBasicBlockRef b_body;
	int			phase = 0;

	/* shared memory is laid out in this order (the emulated grid's offsets) */
	if (op->cache)
		v_stage = target->shared_buffer(cg, cg->t_value, mir->gpu_stage_rows * cg->forest->num_features);
	if (mir->gpu_reduce)
	{
		cg->v_gpu_parts = target->shared_buffer(cg, cg->t_value,
												GpuBlockThreads(cg) * mir->gpu_reduce_rows * mir->num_groups);
		cg->v_gpu_extents = target->shared_buffer(cg, cg->t_i64, GpuBlockThreads(cg) * 3);
	}
	if (op->cache)
	{
		BeginGpuPhase(cg, phase++, &b_next);
		b_body = CgNewBlock(cg, "gpu_stage");
		LLVMBuildCondBr(b, v_in, b_body, b_next);
		LLVMPositionBuilderAtEnd(b, b_body);
		EmitGpuStage(cg, v_iv, v_stage, b_next);
		LLVMPositionBuilderAtEnd(b, b_next);
		cg->v_gpu_stage = v_stage;
		cg->v_gpu_stage_lo = LLVMBuildMul(b, v_iv, CgInt64(cg, mir->gpu_stage_rows), "");
	}
	BeginGpuPhase(cg, phase++, &b_next);
	if (mir->gpu_reduce)
		LLVMBuildStore(b, CgInt64(cg, 0), I64At(cg, cg->v_gpu_extents, GpuThreadIndex(cg), 1));
	b_body = CgNewBlock(cg, "gpu_body");
	{
		LLVMBasicBlockRef b_skip = CgNewBlock(cg, "gpu_skip");

		LLVMBuildCondBr(b, v_in, b_body, b_skip);
		LLVMPositionBuilderAtEnd(b, b_body);
		EmitGpuIteration(cg, op, inner, path, v_lo, v_hi);
		LLVMBuildBr(b, b_skip);
		LLVMPositionBuilderAtEnd(b, b_skip);
	}
	cg->v_gpu_stage = NULL;
	if (mir->gpu_reduce)
	{
		target->barrier(cg, b_next);
		LLVMPositionBuilderAtEnd(b, b_next);
		BeginGpuPhase(cg, phase++, &b_next);
		EmitGpuReduceFinish(cg);
	}
	LLVMBuildBr(b, b_next);
	LLVMPositionBuilderAtEnd(b, b_next);
}

/*
 * A loop mapped to a gpu dimension: the running thread's index k in it is
 * iteration lo + k, if that is below hi; one lane.  The outermost loop
 * also lays out the kernel's phases (EmitGpuKernelLoop).
 */
void
CgEmitGpuLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env, const MirPath *path,
			LLVMValueRef v_lo, LLVMValueRef v_hi)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_iv = LLVMBuildAdd(b, v_lo, cg->target->grid_index(cg, op->gpu_dim),
									 "gpu_iv");
	LLVMBasicBlockRef b_body;
	LLVMBasicBlockRef b_after;
	CodegenEnv	inner = *env;

	inner.v_val[op->var] = v_iv;
	inner.width = 1;
	inner.lane_var = op->var;
	if (op->parent == NULL)
	{
		EmitGpuKernelLoop(cg, op, &inner, path, v_iv, v_lo, v_hi);
		return;
	}
	b_body = CgNewBlock(cg, "gpu_body");
	b_after = CgNewBlock(cg, "gpu_after");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, v_iv, v_hi, ""), b_body, b_after);
	LLVMPositionBuilderAtEnd(b, b_body);
	EmitGpuIteration(cg, op, &inner, path, v_lo, v_hi);
	LLVMBuildBr(b, b_after);
	LLVMPositionBuilderAtEnd(b, b_after);
}

