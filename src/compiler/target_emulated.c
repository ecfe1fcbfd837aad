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
 * kernel's only barrier follows the staging of a block's rows (cache() on
 * the outermost loop): phase 0 runs up to it and returns, and the caller
 * runs phase 0 for every thread of the block before phase 1 for any,
 * which is what the barrier guarantees on a GPU.  Apart from that and
 * their atomic adds a kernel's threads are independent, so running them in
 * turn is one of the executions a GPU may perform.  It is slow, and only
 * for tests and explain.
 */
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

/* The code before the barrier runs in phase 0 */
static LLVMValueRef
EmulatedBeforeBarrier(CodegenContext *cg)
{
	return LLVMBuildICmp(cg->builder, LLVMIntEQ, LLVMGetParam(cg->fn.function, 3), CgInt32(cg, 0),
						 "phase0");
}

/* The barrier ends phase 0: the caller runs every thread of the block up to here first */
static void
EmulatedBarrier(CodegenContext *cg, LLVMBasicBlockRef b_after)
{
	LLVMBuildBr(cg->builder, cg->fn.b_return);
}

/* The block's shared memory is the kernel's third parameter */
static LLVMValueRef
EmulatedSharedBuffer(CodegenContext *cg, LLVMTypeRef type, int64_t count)
{
	return LLVMBuildBitCast(cg->builder, LLVMGetParam(cg->fn.function, 2),
							LLVMPointerType(type, 0), "shared");
}

const Target TargetGpuEmulated = {
	.name = "gpu_emulated",
	.gpu = true,
	.output = TARGET_OUTPUT_JIT,
	.kernel_params = EmulatedKernelParams,
	.mark_kernel = EmulatedMarkKernel,
	.grid_index = EmulatedGridIndex,
	.before_barrier = EmulatedBeforeBarrier,
	.barrier = EmulatedBarrier,
	.shared_buffer = EmulatedSharedBuffer,
};
