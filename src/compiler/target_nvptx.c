/*
 * target_nvptx.c
 *		NVIDIA GPUs: an NVPTX module, emitted as PTX for the CUDA driver.
 *
 * The kernel is marked in the module's nvvm.annotations and reads its
 * indices from PTX's special registers (%ctaid for the block in the grid,
 * %tid for the thread in the block).  Pointers in SilvanKernelArgs are
 * generic addresses of device memory; nvptx64 has 64-bit pointers, so the
 * struct's layout is the host's and the runtime (gpu_run.c) copies it
 * to the device as is.  gpu_emit.c picks the sm for a device (GpuPtxTarget);
 * without one, code is emitted for sm_80.
 */
#include "silvan/codegen.h"
#include "silvan/target.h"

/* The kernel takes nothing after the arguments */
static int
NvptxKernelParams(CodegenContext *cg, LLVMTypeRef *types)
{
	return 0;
}

/* !nvvm.annotations = !{..., !{fn, !"kernel", i32 1}} */
static void
NvptxMarkKernel(CodegenContext *cg, LLVMValueRef fn)
{
	LLVMValueRef md[3];

	md[0] = fn;
	md[1] = LLVMMDStringInContext(cg->context, "kernel", 6);
	md[2] = CgInt32(cg, 1);
	LLVMAddNamedMetadataOperand(cg->module, "nvvm.annotations",
								LLVMMDNodeInContext(cg->context, md, 3));
}

/* %ctaid.{x,y,z} or %tid.{x,y,z}, widened to i64 */
static LLVMValueRef
NvptxGridIndex(CodegenContext *cg, GpuDim dim)
{
	static const char *const registers[] = {
		"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
		"llvm.nvvm.read.ptx.sreg.ctaid.z", "llvm.nvvm.read.ptx.sreg.tid.x",
		"llvm.nvvm.read.ptx.sreg.tid.y", "llvm.nvvm.read.ptx.sreg.tid.z"
	};
	return TargetDeviceIndex(cg, registers, dim);
}

/* llvm.nvvm.barrier0 */
static void
NvptxBarrier(CodegenContext *cg, LLVMBasicBlockRef b_after)
{
	TargetDeviceBarrier(cg, "llvm.nvvm.barrier0", false, b_after);
}

const Target TargetCuda = {
	.name = "cuda",
	.gpu = true,
	.output = TARGET_OUTPUT_PTX,
	.triple = "nvptx64-nvidia-cuda",
	.default_arch = "sm_80",
	.kernel_params = NvptxKernelParams,
	.mark_kernel = NvptxMarkKernel,
	.grid_index = NvptxGridIndex,
	.in_phase = TargetDeviceInPhase,
	.barrier = NvptxBarrier,
	.shared_buffer = TargetDeviceSharedBuffer,
};
