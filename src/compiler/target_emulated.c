/*
 * target_emulated.c
 *		A GPU grid emulated on the CPU, for tests.
 *
 * The same lowering as a GPU target (MirBuildTarget with gpu set: mapped
 * loops run one iteration per index), compiled for the host: the kernel
 * takes, after the arguments, the indices of the thread it runs as,
 * {block.x, block.y, block.z, thread.x, thread.y, thread.z}, and
 * CompiledForestRun calls it once per thread of the grid that
 * MirGpuLaunch gives, one after another.  Without barriers or shared
 * memory (not lowered yet) a GPU kernel's threads are independent but for
 * their atomic adds, so running them in turn is one of the executions the
 * GPU may perform.  It is slow, and only for tests and explain.
 */
#include "silvan/codegen.h"
#include "silvan/target.h"

/* The kernel takes the thread's indices: const i32 * */
static int
EmulatedKernelParams(CodegenContext *cg, LLVMTypeRef *types)
{
	types[0] = LLVMPointerType(cg->t_i32, 0);
	return 1;
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

const Target TargetGpuEmulated = {
	.name = "gpu_emulated",
	.gpu = true,
	.output = TARGET_OUTPUT_JIT,
	.kernel_params = EmulatedKernelParams,
	.mark_kernel = EmulatedMarkKernel,
	.grid_index = EmulatedGridIndex,
};
