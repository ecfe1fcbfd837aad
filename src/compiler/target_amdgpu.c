/*
 * target_amdgpu.c
 *		AMD GPUs: an AMDGPU module, emitted as an HSA code object for HIP.
 *
 * The kernel has the amdgpu_kernel calling convention and reads its
 * indices from the workgroup and workitem id intrinsics.  The module's
 * data layout is the target machine's (gpu_emit.c, GpuDataLayout): its
 * allocas live in address space 5, and CgAlloca casts them to flat
 * pointers, so the walks and reductions emit the same IR as elsewhere.
 * gpu_emit.c emits a relocatable object for the processor and ld.lld-14
 * links it into the code object that hipModuleLoadData takes.  LLVM 14
 * knows processors up to gfx90a and gfx1035; gfx90a is the default.
 */
#include "silvan/codegen.h"
#include "silvan/target.h"

/* The kernel takes nothing after the arguments */
static int
AmdgpuKernelParams(CodegenContext *cg, LLVMTypeRef *types)
{
	return 0;
}

/* The amdgpu_kernel calling convention makes fn a kernel */
static void
AmdgpuMarkKernel(CodegenContext *cg, LLVMValueRef fn)
{
	LLVMSetFunctionCallConv(fn, LLVMAMDGPUKERNELCallConv);
}

/* llvm.amdgcn.workgroup.id.{x,y,z} or workitem.id.{x,y,z}, widened to i64 */
static LLVMValueRef
AmdgpuGridIndex(CodegenContext *cg, GpuDim dim)
{
	static const char *const intrinsics[] = {
		"llvm.amdgcn.workgroup.id.x", "llvm.amdgcn.workgroup.id.y",
		"llvm.amdgcn.workgroup.id.z", "llvm.amdgcn.workitem.id.x",
		"llvm.amdgcn.workitem.id.y", "llvm.amdgcn.workitem.id.z"
	};
	return TargetDeviceIndex(cg, intrinsics, dim);
}

/* llvm.amdgcn.s.barrier */
static void
AmdgpuBarrier(CodegenContext *cg, LLVMBasicBlockRef b_after)
{
	TargetDeviceBarrier(cg, "llvm.amdgcn.s.barrier", true, b_after);
}

const Target TargetRocm = {
	.name = "rocm",
	.gpu = true,
	.output = TARGET_OUTPUT_HSACO,
	.triple = "amdgcn-amd-amdhsa",
	.default_arch = "gfx90a",
	.kernel_params = AmdgpuKernelParams,
	.mark_kernel = AmdgpuMarkKernel,
	.grid_index = AmdgpuGridIndex,
	.in_phase = TargetDeviceInPhase,
	.barrier = AmdgpuBarrier,
	.shared_buffer = TargetDeviceSharedBuffer,
};
