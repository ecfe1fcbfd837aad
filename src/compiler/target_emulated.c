/*
 * target_emulated.c
 *		A GPU grid emulated on the CPU, for tests.
 *
 * The same lowering as a GPU target (MirBuildTarget with gpu set: mapped
 * loops run one iteration per index), compiled for the host: the kernel
 * takes, after the arguments, the indices of the thread it runs as,
 * {block.x, block.y, block.z, thread.x, thread.y, thread.z}, the block's
 * shared memory and a phase, and CompiledForestRun calls it once per
 * thread of the grid that MirGpuLaunch gives, one after another.  A
 * kernel's barriers (after a block's rows are staged, before a shared
 * reduction's partial sums are added) cut it into phases: the call for
 * phase k runs phase k and returns at its barrier, and the caller runs
 * phase k for every thread of the block before phase k + 1 for any, which
 * is what a barrier guarantees on a GPU.  A value that lives across a
 * barrier is kept in shared memory, so each phase can start afresh.  Apart from that and
 * their atomic adds a kernel's threads are independent, so running them in
 * turn is one of the executions a GPU may perform.  It is slow, and only
 * for tests and explain.
 */
#include <llvm-c/Target.h>

#include "silvan/codegen.h"
#include "silvan/target.h"

/* The kernel takes the thread's indices (const i32 *), shared memory (i8 *), the phase (i32) */
static int
EmulatedKernelParams(CodegenContext *cg, LLVMTypeRef *types)
{
	types[0] = LLVMPointerType(cg->t_i32, 0);
	types[1] = cg->t_i8p;
	types[2] = cg->t_i32;
	return 3;
}

/* An emulated kernel is a plain function */
static void
EmulatedMarkKernel(CodegenContext *cg, LLVMValueRef fn)
{
}

/* ids[dim - 1], the kernel's second parameter, widened to i64 */
static LLVMValueRef
EmulatedGridIndex(CodegenContext *cg, GpuDim dim)
{
	LLVMValueRef v_ids = LLVMGetParam(cg->fn.function, 1);
	LLVMValueRef v_index = CgInt64(cg, dim - GPU_DIM_GRID_X);
	LLVMValueRef v_ptr = LLVMBuildGEP2(cg->builder, cg->t_i32, v_ids, &v_index, 1, "");

	return LLVMBuildZExt(cg->builder, LLVMBuildLoad2(cg->builder, cg->t_i32, v_ptr, ""),
						 cg->t_i64, "gpu_index");
}

/* Phase k runs in the call for phase k */
static LLVMValueRef
EmulatedInPhase(CodegenContext *cg, int phase)
{
	return LLVMBuildICmp(cg->builder, LLVMIntEQ, LLVMGetParam(cg->fn.function, 3),
						 CgInt32(cg, phase), "in_phase");
}

/* A barrier ends the call: the caller runs every thread of the block up to here first */
static void
EmulatedBarrier(CodegenContext *cg, LLVMBasicBlockRef b_after)
{
	LLVMBuildBr(cg->builder, cg->fn.b_return);
}

/*
 * The block's shared memory is the kernel's third parameter: buffers are
 * laid out in it one after another, 16-byte aligned, in the order asked
 */
static LLVMValueRef
EmulatedSharedBuffer(CodegenContext *cg, LLVMTypeRef type, int64_t count)
{
	LLVMValueRef v_offset = CgInt64(cg, cg->emulated_shared_used);
	LLVMValueRef v_at = LLVMBuildGEP2(cg->builder, LLVMInt8TypeInContext(cg->context),
									  LLVMGetParam(cg->fn.function, 2), &v_offset, 1, "");

	cg->emulated_shared_used += (count * (int64_t) LLVMABISizeOfType(
		LLVMGetModuleDataLayout(cg->module), type) + 15) / 16 * 16;
	return LLVMBuildBitCast(cg->builder, v_at, LLVMPointerType(type, 0), "shared");
}

const Target TargetGpuEmulated = {
	.name = "gpu_emulated",
	.gpu = true,
	.output = TARGET_OUTPUT_JIT,
	.kernel_params = EmulatedKernelParams,
	.mark_kernel = EmulatedMarkKernel,
	.grid_index = EmulatedGridIndex,
	.in_phase = EmulatedInPhase,
	.barrier = EmulatedBarrier,
	.shared_buffer = EmulatedSharedBuffer,
};
