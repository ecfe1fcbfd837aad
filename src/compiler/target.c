/*
 * target.c
 *		The list of targets, and the host CPU's entry.
 *
 * The CPU target is today's code: the host's triple and data layout
 * (ORC's), no grid, the kernel a plain function of SilvanKernelArgs *.
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
