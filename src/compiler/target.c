/*
 * target.c
 *		The list of targets, and the host CPU's entry.
 *
 * The CPU target is today's code: the host's triple and data layout
 * (LLVM's default triple), no grid, the kernel a plain function of SilvanKernelArgs *.
 */
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/target.h"

/* The CPU kernel takes nothing after the arguments */
static int
CpuKernelParams(CodegenContext *cg, LLVMTypeRef *types)
{
	return 0;
}

/* A CPU kernel is a plain function */
static void
CpuMarkKernel(CodegenContext *cg, LLVMValueRef fn)
{
}

/* A call of the intrinsic name taking nothing and returning t_ret, declared once per module */
static LLVMValueRef
CallIntrinsic(CodegenContext *cg, const char *name, LLVMTypeRef t_ret)
{
	LLVMTypeRef t_fn = LLVMFunctionType(t_ret, NULL, 0, false);

	return LLVMBuildCall2(cg->builder, t_fn, CgDeclare(cg, name, t_fn), NULL, 0, "");
}

/*
 * A thread or block index read from a device's i32 intrinsic (intrinsics:
 * grid.x, .y, .z, block.x, .y, .z in GpuDim order), widened to i64
 */
LLVMValueRef
TargetDeviceIndex(CodegenContext *cg, const char *const intrinsics[6], GpuDim dim)
{
	return LLVMBuildZExt(cg->builder,
						 CallIntrinsic(cg, intrinsics[dim - GPU_DIM_GRID_X], cg->t_i32),
						 cg->t_i64, "gpu_index");
}

/* On a device every phase runs, one after another */
LLVMValueRef
TargetDeviceInPhase(CodegenContext *cg, int phase)
{
	return LLVMConstInt(cg->t_i1, 1, false);
}

/*
 * A barrier through the intrinsic named, then on to b_after; with fences,
 * between a release and an acquire fence that make the block's writes to
 * shared memory visible to all its threads (AMDGPU's s.barrier does not
 * order memory; NVPTX's barrier0, bar.sync, does, and LLVM 14's NVPTX back
 * end cannot select a fence)
 */
void
TargetDeviceBarrier(CodegenContext *cg, const char *intrinsic, bool fences,
					LLVMBasicBlockRef b_after)
{
	if (fences)
		LLVMBuildFence(cg->builder, LLVMAtomicOrderingRelease, false, "");
	CallIntrinsic(cg, intrinsic, LLVMVoidTypeInContext(cg->context));
	if (fences)
		LLVMBuildFence(cg->builder, LLVMAtomicOrderingAcquire, false, "");
	LLVMBuildBr(cg->builder, b_after);
}

/*
 * count values of type in a module global of address space 3 (shared
 * memory on NVPTX and AMDGPU, one per block), as a flat pointer
 */
LLVMValueRef
TargetDeviceSharedBuffer(CodegenContext *cg, LLVMTypeRef type, int64_t count)
{
	LLVMTypeRef t_array = LLVMArrayType(type, (unsigned) count);
	LLVMValueRef global = LLVMAddGlobalInAddressSpace(cg->module, t_array, "silvan_shared", 3);
	LLVMValueRef v_first;

	LLVMSetInitializer(global, LLVMGetUndef(t_array));
	LLVMSetLinkage(global, LLVMInternalLinkage);
	LLVMSetAlignment(global, 16);
	v_first = LLVMBuildBitCast(cg->builder, global, LLVMPointerType(type, 3), "");
	return LLVMBuildAddrSpaceCast(cg->builder, v_first, LLVMPointerType(type, 0), "shared");
}

const Target TargetCpu = {
	.name = "cpu",
	.gpu = false,
	.output = TARGET_OUTPUT_JIT,
	.kernel_params = CpuKernelParams,
	.mark_kernel = CpuMarkKernel,
	.grid_index = NULL,
};

/* Every target, by name */
static const Target *const targets[] = {
	&TargetCpu,
	&TargetCuda,
	&TargetRocm,
	&TargetGpuEmulated,
};

/* The target of that name, NULL if none */
const Target *
TargetLookup(const char *name)
{
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (name != NULL && strcmp(targets[i]->name, name) == 0)
			return targets[i];
	return NULL;
}

/* The names of all targets, comma-separated */
const char *
TargetNames(void)
{
	return "cpu, cuda, rocm, gpu_emulated";
}
