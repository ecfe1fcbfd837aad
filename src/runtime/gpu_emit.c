/*
 * gpu_emit.c
 *		Device code from LLVM modules: PTX for NVIDIA, HSA code objects
 *		for AMD.
 *
 * The code generator builds a module whose triple is nvptx64-nvidia-cuda
 * or amdgcn-amd-amdhsa; this file turns it into what the driver loads,
 * through the LLVM-C target machine API.  Only the GPU targets that are
 * asked for are initialized, each once per process (the host target is
 * jit.c's).  The caller's module is never changed: code generation runs
 * on a clone, so one module can be emitted for several devices.  Invalid
 * IR is refused by the verifier before code generation (which would
 * otherwise crash on it), and errors LLVM diagnoses through the context
 * are kept by a handler of ours instead of LLVM's print-and-exit; all of
 * it inside an LlvmErrorsEnter bracket, so fatal errors reach the
 * adapter's callback.
 *
 * NVIDIA: LLVM 14 knows processors up to sm_86 and PTX ISA 7.5.  PTX is
 * forward compatible: the driver JIT-compiles PTX written for an older sm
 * for any newer GPU.  GpuPtxTarget picks the sm to emit for a device's
 * compute capability: the device's own when LLVM knows it, sm_86 for the
 * rest of the 8.x family (8.7, 8.9), and for 9.0 and later (Hopper,
 * Blackwell) sm_80, the datacenter baseline that every newer driver
 * accepts (sm_86 adds nothing the generated code uses).
 *
 * AMD: the HIP runtime loads HSA code objects, which are ELF shared
 * objects; LLVM emits a relocatable object and a linker makes the shared
 * object.  We run ld.lld-14 (Debian package lld-14) as a child process:
 * LLVM 14's C API has no entry point into lld, and lld as a library is
 * C++ only and, in Debian, shipped only as static archives (liblldELF.a in
 * liblld-14, which lld-14 does not depend on), never as a shared library
 * that an extension could link; the linker binary is the supported
 * interface (gpu_link.c runs it).  LLVM 14 knows AMDGPU processors up to gfx90a/gfx90c and
 * gfx1035 (RDNA 3's gfx1100 and MI300's gfx94x came in LLVM 15 and 17);
 * given an unknown processor name LLVM only prints a warning and emits
 * generic code, so names are checked against LLVM 14's list first.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "silvan/cancel.h"
#include "silvan/gpu.h"
#include "silvan/jit.h"
#include "silvan/llvm_emit.h"
#include "silvan/llvm_errors.h"

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"
#define AMDGPU_TRIPLE "amdgcn-amd-amdhsa"

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
static pthread_once_t amdgpu_once = PTHREAD_ONCE_INIT;

/* The first error LLVM diagnosed during this thread's current emission */
static _Thread_local char gpu_diagnosed[SILVAN_DETAIL_LEN];

/* AMDGPU processors LLVM 14 knows (llc-14 -march=amdgcn -mcpu=help) */
static const char *const amdgpu_processors[] = {
	"gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704",
	"gfx705", "gfx801", "gfx802", "gfx803", "gfx805", "gfx810", "gfx900", "gfx902",
	"gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx1010", "gfx1011",
	"gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034",
	"gfx1035", NULL
};

/* NVPTX processors LLVM 14 knows, oldest first (llc-14 -march=nvptx64 -mcpu=help) */
static const struct
{
	int			cc;				/* major * 10 + minor */
	const char *sm;
}			ptx_processors[] = {
	{30, "sm_30"}, {32, "sm_32"}, {35, "sm_35"}, {37, "sm_37"}, {50, "sm_50"},
	{52, "sm_52"}, {53, "sm_53"}, {60, "sm_60"}, {61, "sm_61"}, {62, "sm_62"},
	{70, "sm_70"}, {72, "sm_72"}, {75, "sm_75"}, {80, "sm_80"}, {86, "sm_86"},
};

/* Initialize LLVM's NVPTX target; once */
static void
GpuInitNvptx(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

/* Initialize LLVM's AMDGPU target; once */
static void
GpuInitAmdgpu(void)
{
	LLVMInitializeAMDGPUTargetInfo();
	LLVMInitializeAMDGPUTarget();
	LLVMInitializeAMDGPUTargetMC();
	LLVMInitializeAMDGPUAsmPrinter();
}

/*
 * The sm to emit PTX for on a device of compute capability major.minor:
 * the newest LLVM 14 processor not newer than the device within its
 * family, sm_80 from 9.0 on (see the top of the file); NULL below 3.0,
 * which no supported driver runs
 */
const char *
GpuPtxTarget(int major, int minor)
{
	int			cc = major * 10 + minor;
	const char *best = NULL;

	if (major >= 9)
		return "sm_80";
	for (size_t i = 0; i < sizeof(ptx_processors) / sizeof(ptx_processors[0]); i++)
		if (ptx_processors[i].cc <= cc)
			best = ptx_processors[i].sm;
	return best;
}

/* Whether LLVM 14 knows an AMDGPU processor name */
bool
GpuAmdgpuKnown(const char *gfx)
{
	for (int i = 0; gfx != NULL && amdgpu_processors[i] != NULL; i++)
		if (strcmp(gfx, amdgpu_processors[i]) == 0)
			return true;
	return false;
}

/* Whether sm is a processor LLVM 14's NVPTX target knows */
static bool
GpuPtxKnown(const char *sm)
{
	for (size_t i = 0; sm != NULL && i < sizeof(ptx_processors) / sizeof(ptx_processors[0]); i++)
		if (strcmp(sm, ptx_processors[i].sm) == 0)
			return true;
	return false;
}

/* Keep the first error LLVM diagnoses; drop warnings and remarks */
static void
GpuDiagnostic(LLVMDiagnosticInfoRef info, void *arg)
{
	char	   *text;

	if (LLVMGetDiagInfoSeverity(info) != LLVMDSError || gpu_diagnosed[0] != '\0')
		return;
	text = LLVMGetDiagInfoDescription(info);
	snprintf(gpu_diagnosed, sizeof(gpu_diagnosed), "%s", text ? text : "unknown error");
	LLVMDisposeMessage(text);
}

/* Check the module's triple and data layout against the target machine's */
static bool
GpuCheckModule(LLVMModuleRef module, LLVMTargetMachineRef tm, const char *triple,
			   SilvanStatus *status)
{
	LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
	char	   *want = LLVMCopyStringRepOfTargetData(layout);
	const char *have = LLVMGetDataLayoutStr(module);
	bool		ok = true;

	if (strcmp(LLVMGetTarget(module), triple) != 0)
		ok = StatusFail(status, SILVAN_ERROR_INVALID, "could not emit GPU code",
						"The module's target triple is \"%s\", not %s.",
						LLVMGetTarget(module), triple);
	else if (have[0] != '\0' && strcmp(have, want) != 0)
		ok = StatusFail(status, SILVAN_ERROR_INVALID, "could not emit GPU code",
						"The module's data layout \"%s\" is not %s's \"%s\".", have, triple, want);
	else if (have[0] == '\0')
		LLVMSetDataLayout(module, want);
	LLVMDisposeMessage(want);
	LLVMDisposeTargetData(layout);
	return ok;
}

/* A target machine for triple and cpu; NULL and a status if LLVM has none */
static LLVMTargetMachineRef
GpuTargetMachine(const char *triple, const char *cpu, SilvanStatus *status)
{
	LLVMTargetRef target;
	LLVMTargetMachineRef tm;
	char	   *message = NULL;

	if (LLVMGetTargetFromTriple(triple, &target, &message))
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not emit GPU code",
				   "LLVM has no target for %s: %s.", triple, message ? message : "no reason");
		LLVMDisposeMessage(message);
		return NULL;
	}
	tm = LLVMCreateTargetMachine(target, triple, cpu, "", LLVMCodeGenLevelDefault,
								 LLVMRelocPIC, LLVMCodeModelDefault);
	if (tm == NULL)
		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not emit GPU code",
				   "LLVM could not create a target machine for %s (%s).", triple, cpu);
	return tm;
}

/*
 * The IR passes that jit.c runs on host code (promotion of allocas, CSE,
 * instruction combining, loop-invariant motion), with the device's own
 * cost model; code generation then runs the target's (for NVPTX, address
 * space inference among them).  Only on a module that verifies.  false
 * when a cancel request stopped it (cancel.h).
 */
static bool
GpuOptimize(LLVMModuleRef clone, LLVMTargetMachineRef tm)
{
	LLVMPassManagerRef fpm = LLVMCreateFunctionPassManagerForModule(clone);
	bool		canceled = false;

	LLVMAddAnalysisPasses(tm, fpm);
	JitAddKernelPasses(fpm);
	LLVMInitializeFunctionPassManager(fpm);
	for (LLVMValueRef fn = LLVMGetFirstFunction(clone); fn && !canceled; fn = LLVMGetNextFunction(fn))
		if (!(canceled = CancelRequested()) && !LLVMIsDeclaration(fn))
			LLVMRunFunctionPassManager(fpm, fn);
	LLVMFinalizeFunctionPassManager(fpm);
	LLVMDisposePassManager(fpm);
	return !canceled;
}

/* Verify the clone, optimize it and run code generation; the output buffer or NULL */
static LLVMMemoryBufferRef
GpuCodegen(LLVMModuleRef clone, LLVMTargetMachineRef tm, LLVMCodeGenFileType type,
		   SilvanStatus *status)
{
	LLVMMemoryBufferRef out = NULL;
	char	   *message = NULL;
	bool		canceled = false;

	if (LLVMVerifyModule(clone, LLVMReturnStatusAction, &message))
	{
		for (char *c = message; c != NULL && *c != '\0'; c++)
			if (*c == '\n')
				*c = c[1] != '\0' ? ' ' : '\0';
		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not emit GPU code",
				   "The module is not valid LLVM IR: %s", message ? message : "no reason");
		LLVMDisposeMessage(message);
		return NULL;
	}
	LLVMDisposeMessage(message);
	message = NULL;
	if (!GpuOptimize(clone, tm) ||
		(!LlvmEmitCancellable(tm, clone, type, &message, &out, &canceled) && canceled))
	{
		StatusCanceled(status, "compiling the GPU code");
		LLVMDisposeMessage(message);
		return NULL;
	}
	if (out == NULL || gpu_diagnosed[0] != '\0')
	{
		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not emit GPU code", "LLVM: %s",
				   gpu_diagnosed[0] != '\0' ? gpu_diagnosed : message ? message : "no reason");
		if (out != NULL)
			LLVMDisposeMemoryBuffer(out);
		out = NULL;
	}
	LLVMDisposeMessage(message);
	return out;
}

/*
 * Emit a clone of module for triple and cpu, with our diagnostic handler
 * on the module's context for the duration; the buffer or NULL
 */
static LLVMMemoryBufferRef
GpuEmit(LLVMModuleRef module, const char *triple, const char *cpu, LLVMCodeGenFileType type,
		SilvanStatus *status)
{
	LLVMContextRef context = LLVMGetModuleContext(module);
	LLVMDiagnosticHandler old_handler = LLVMContextGetDiagnosticHandler(context);
	void	   *old_arg = LLVMContextGetDiagnosticContext(context);
	LLVMTargetMachineRef tm;
	LLVMModuleRef clone;
	LLVMMemoryBufferRef out = NULL;

	if ((tm = GpuTargetMachine(triple, cpu, status)) == NULL)
		return NULL;
	clone = LLVMCloneModule(module);
	gpu_diagnosed[0] = '\0';
	LLVMContextSetDiagnosticHandler(context, GpuDiagnostic, NULL);
	if (GpuCheckModule(clone, tm, triple, status))
		out = GpuCodegen(clone, tm, type, status);
	LLVMContextSetDiagnosticHandler(context, old_handler, old_arg);
	LLVMDisposeModule(clone);
	LLVMDisposeTargetMachine(tm);
	return out;
}

/* Open an LLVM error bracket, refusing if LLVM failed earlier in this process */
static bool
GpuEnter(SilvanStatus *status)
{
	if (LlvmErrorsFailed())
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not emit GPU code",
						  "LLVM failed earlier in this process.");
	LlvmErrorsEnter();
	return true;
}

/* Text (malloc'd, NUL-terminated) of an emitted buffer; NULL and a status if out of memory */
static char *
GpuBufferText(LLVMMemoryBufferRef out, const char *what, SilvanStatus *status)
{
	size_t		len = LLVMGetBufferSize(out);
	char	   *text = malloc(len + 1);

	if (text == NULL)
		StatusNoMemory(status, what);
	else
	{
		memcpy(text, LLVMGetBufferStart(out), len);
		text[len] = '\0';
	}
	LLVMDisposeMemoryBuffer(out);
	return text;
}

/* PTX text (malloc'd, NUL-terminated) for sm from an nvptx64-nvidia-cuda module */
char *
GpuEmitPtx(LLVMModuleRef module, const char *sm, SilvanStatus *status)
{
	LLVMMemoryBufferRef out;

	if (!GpuPtxKnown(sm))
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not emit GPU code",
				   "LLVM 14 has no NVPTX processor \"%s\" (sm_30 to sm_86; see GpuPtxTarget).",
				   sm ? sm : "");
		return NULL;
	}
	if (!GpuEnter(status))
		return NULL;
	pthread_once(&nvptx_once, GpuInitNvptx);
	out = GpuEmit(module, NVPTX_TRIPLE, sm, LLVMAssemblyFile, status);
	LlvmErrorsLeave();
	return out ? GpuBufferText(out, "the PTX text", status) : NULL;
}

/*
 * The data layout (malloc'd) of triple's target machine for cpu, which a
 * module must have while it is built: AMDGPU's puts allocas in address
 * space 5, and the IR builder asks the module where to put them.  NULL
 * and a status when LLVM has no such target or processor.
 */
char *
GpuDataLayout(const char *triple, const char *cpu, SilvanStatus *status)
{
	LLVMTargetMachineRef tm;
	LLVMTargetDataRef layout;
	char	   *text;
	char	   *copy;

	if (strcmp(triple, AMDGPU_TRIPLE) == 0 && !GpuAmdgpuKnown(cpu))
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not emit GPU code",
				   "LLVM 14 has no AMDGPU processor \"%s\".", cpu ? cpu : "");
		return NULL;
	}
	if (strcmp(triple, NVPTX_TRIPLE) == 0 && !GpuPtxKnown(cpu))
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not emit GPU code",
				   "LLVM 14 has no NVPTX processor \"%s\" (sm_30 to sm_86; see GpuPtxTarget).",
				   cpu ? cpu : "");
		return NULL;
	}
	if (!GpuEnter(status))
		return NULL;
	pthread_once(strcmp(triple, AMDGPU_TRIPLE) == 0 ? &amdgpu_once : &nvptx_once,
				 strcmp(triple, AMDGPU_TRIPLE) == 0 ? GpuInitAmdgpu : GpuInitNvptx);
	if ((tm = GpuTargetMachine(triple, cpu, status)) == NULL)
	{
		LlvmErrorsLeave();
		return NULL;
	}
	layout = LLVMCreateTargetDataLayout(tm);
	text = LLVMCopyStringRepOfTargetData(layout);
	copy = strdup(text);
	LLVMDisposeMessage(text);
	LLVMDisposeTargetData(layout);
	LLVMDisposeTargetMachine(tm);
	LlvmErrorsLeave();
	if (copy == NULL)
		StatusNoMemory(status, "a data layout");
	return copy;
}

/* AMDGPU assembly (malloc'd, NUL-terminated) for gfx from an amdgcn-amd-amdhsa module, for explain */
char *
GpuEmitAmdgpuAssembly(LLVMModuleRef module, const char *gfx, SilvanStatus *status)
{
	LLVMMemoryBufferRef out;

	if (!GpuAmdgpuKnown(gfx))
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not emit GPU code",
				   "LLVM 14 has no AMDGPU processor \"%s\".", gfx ? gfx : "");
		return NULL;
	}
	if (!GpuEnter(status))
		return NULL;
	pthread_once(&amdgpu_once, GpuInitAmdgpu);
	out = GpuEmit(module, AMDGPU_TRIPLE, gfx, LLVMAssemblyFile, status);
	LlvmErrorsLeave();
	return out ? GpuBufferText(out, "the AMDGPU assembly", status) : NULL;
}

/*
 * A relocatable AMDGPU object (malloc'd) for gfx from an amdgcn-amd-amdhsa
 * module; GpuLinkHsaco makes the code object HIP loads
 */
bool
GpuEmitAmdgpuObject(LLVMModuleRef module, const char *gfx, void **object, size_t *len,
					SilvanStatus *status)
{
	LLVMMemoryBufferRef out;

	*object = NULL;
	*len = 0;
	if (!GpuAmdgpuKnown(gfx))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not emit GPU code",
						  "LLVM 14 has no AMDGPU processor \"%s\".", gfx ? gfx : "");
	if (!GpuEnter(status))
		return false;
	pthread_once(&amdgpu_once, GpuInitAmdgpu);
	out = GpuEmit(module, AMDGPU_TRIPLE, gfx, LLVMObjectFile, status);
	LlvmErrorsLeave();
	if (out == NULL)
		return false;
	*len = LLVMGetBufferSize(out);
	if ((*object = malloc(*len > 0 ? *len : 1)) == NULL)
	{
		LLVMDisposeMemoryBuffer(out);
		return StatusNoMemory(status, "the AMDGPU object");
	}
	memcpy(*object, LLVMGetBufferStart(out), *len);
	LLVMDisposeMemoryBuffer(out);
	return true;
}

