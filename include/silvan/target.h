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
	TARGET_OUTPUT_JIT,			/* machine code in this process (ORC) */
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
} Target;

/* What one compile targets: the target and its processor (NULL: default) */
typedef struct CompileTarget
{
	const Target *target;
	const char *arch;			/* "sm_80"; NULL: target->default_arch */
} CompileTarget;

/* A gpu_emulated kernel: args, then {block.x, .y, .z, thread.x, .y, .z} */
typedef void (*SilvanEmulatedKernelFn) (const void *args, const uint32_t *ids);

extern const Target TargetCpu;
extern const Target TargetCuda;
extern const Target TargetRocm;
extern const Target TargetGpuEmulated;

/* target.c: the target of that name, NULL if none */
extern const Target *TargetLookup(const char *name);
/* target.c: the names of all targets, comma-separated (for messages) */
extern const char *TargetNames(void);

#endif							/* SILVAN_TARGET_H */
