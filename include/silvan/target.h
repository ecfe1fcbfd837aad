/*
 * target.h
 *		Where compiled code runs: the host CPU, an NVIDIA or AMD GPU, or a
 *		GPU grid emulated on the CPU for tests.
 *
 * A target is one Target entry (src/compiler/target_<name>.c) and one line
 * of target.c's table.  It says what the code generator cannot decide from
 * the MIR alone: the module's triple and data layout, whether loops map to
 * grid and block dimensions (MirBuildTarget), the kernel's ABI (its
 * parameters after the SilvanKernelArgs pointer, how it is marked a
 * kernel, how a thread reads its index in a dimension), and how the
 * module becomes code: JIT-compiled into this process (cpu, emulated),
 * emitted as PTX for the CUDA driver, or as an HSA code object for HIP
 * (gpu_emit.c).  The loop-nest lowering
 * and the representations ask the target through these hooks only.
 */
#ifndef SILVAN_TARGET_H
#define SILVAN_TARGET_H

#include <llvm-c/Core.h>

#include "silvan/schedule.h"

typedef struct CodegenContext CodegenContext;

/* What a compile makes of the module */
typedef enum TargetOutput
{
	TARGET_OUTPUT_JIT,			/* machine code in this process */
	TARGET_OUTPUT_PTX,			/* PTX text for the CUDA driver */
	TARGET_OUTPUT_HSACO			/* an HSA code object for HIP */
} TargetOutput;

typedef struct Target
{
	const char *name;			/* "cpu", "cuda", "rocm", "gpu_emulated" */
	bool		gpu;			/* loops map to grid and block dimensions */
	TargetOutput output;
	const char *triple;			/* NULL: the host's */
	/* a device's data layout is its target machine's (GpuDataLayout) */
	const char *default_arch;	/* NULL: the host's cpu */

	/* the kernel's parameters after the SilvanKernelArgs pointer */
	int			(*kernel_params) (CodegenContext *cg, LLVMTypeRef *types);
	/* mark fn the kernel (NVPTX: nvvm.annotations) */
	void		(*mark_kernel) (CodegenContext *cg, LLVMValueRef fn);
	/* the running thread's index in dimension dim (i64); gpu targets only */
	LLVMValueRef (*grid_index) (CodegenContext *cg, GpuDim dim);

	/*
	 * Barriers of a block's threads, gpu targets only.  A kernel's code is
	 * phases between barriers: in_phase says whether phase k runs (i1: on
	 * a device always; on the emulated grid when the call is for phase k),
	 * barrier ends a phase with a branch to b_after (the emulated grid
	 * returns instead: the caller runs every thread of a block through one
	 * phase before any goes on)
	 */
	LLVMValueRef (*in_phase) (CodegenContext *cg, int phase);
	void		(*barrier) (CodegenContext *cg, LLVMBasicBlockRef b_after);
	/* count values of type in the block's shared memory, as a flat pointer */
	LLVMValueRef (*shared_buffer) (CodegenContext *cg, LLVMTypeRef type, int64_t count);
} Target;

/*
 * A gpu_emulated kernel: args, {block.x, .y, .z, thread.x, .y, .z}, the
 * block's shared memory, and the phase: a kernel with a barrier is called
 * for every thread of a block with phase 0 (up to the barrier), then for
 * every thread with phase 1 (after it)
 */
typedef void (*SilvanEmulatedKernelFn) (const void *args, const uint32_t *ids, void *shared,
										int32_t phase);

extern const Target TargetCpu;
extern const Target TargetCuda;
extern const Target TargetRocm;
extern const Target TargetGpuEmulated;

/* target.c: barriers and shared memory of the device targets (NVPTX, AMDGPU) */
extern LLVMValueRef TargetDeviceIndex(CodegenContext *cg, const char *const intrinsics[6],
									  GpuDim dim);
extern LLVMValueRef TargetDeviceInPhase(CodegenContext *cg, int phase);
extern void TargetDeviceBarrier(CodegenContext *cg, const char *intrinsic, bool fences,
								LLVMBasicBlockRef b_after);
extern LLVMValueRef TargetDeviceSharedBuffer(CodegenContext *cg, LLVMTypeRef type,
											 int64_t count);

/* target.c: the target of that name, NULL if none */
extern const Target *TargetLookup(const char *name);
/* target.c: the names of all targets, comma-separated (for messages) */
extern const char *TargetNames(void);

#endif							/* SILVAN_TARGET_H */
