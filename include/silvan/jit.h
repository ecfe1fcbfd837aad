/*
 * jit.h
 *		The JIT runtime: turn an LLVM module into callable code.
 *
 * LLVM set up once per process for the host CPU; each compiled module
 * linked into memory of its own (elf_link.c), so freeing a compiled forest
 * frees its machine code.  Every LLVM error becomes a SilvanStatus.
 */
#ifndef SILVAN_JIT_H
#define SILVAN_JIT_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "silvan/code_cache.h"
#include "silvan/status.h"

/*
 * A function attribute: the function is straight-line code the code
 * generator emitted in its final form (CgFinishStraight), which the
 * function passes skip
 */
#define JIT_NO_PASSES		"silvan-no-passes"

/* A module under construction, in its own context */
typedef struct JitModule
{
	LLVMContextRef context;
	LLVMModuleRef module;
	bool		fast_codegen;	/* instruction selection and register
								 * allocation at -O0 (large code walks:
								 * much code, simple control flow) */
	const char *cpu;			/* LLVM's CPU the code is for; NULL: the host's */
	const char *cpu_features;	/* with cpu, its features */
} JitModule;

/* Machine code added to the JIT */
typedef struct JitCode JitCode;

/* Where JitCompile found the machine code */
typedef enum JitSource
{
	JIT_COMPILED = 0,			/* compiled here (and stored on disk) */
	JIT_FROM_DISK,				/* loaded from the disk cache by its source:
								 * no IR was built */
	JIT_FROM_DISK_BY_IR,		/* loaded from the disk cache by its IR */
	JIT_SHARED					/* this process already had the same code */
} JitSource;

/* The optimized IR of compiled code, as bitcode: JitIrText prints it */
typedef struct JitIr
{
	void	   *bitcode;		/* malloc'd */
	size_t		len;
	bool		before_passes;	/* the module before the function passes (its
								 * code was emitted in two halves) */
} JitIr;

extern void JitStartEarly(void);
extern bool JitModuleCreate(const char *name, JitModule *jm, SilvanStatus *status);
extern void JitModuleDiscardNames(JitModule *jm);
extern void JitModuleDispose(JitModule *jm);
extern const char *JitHostCpuName(void);
extern const char *JitHostCpuFeatures(void);
extern unsigned long JitNextId(void);
extern bool JitOptimizeModule(JitModule *jm, SilvanStatus *status);
/* The function passes JitOptimizeModule runs on kernels (gpu_emit.c runs them too) */
extern void JitAddKernelPasses(LLVMPassManagerRef fpm);
extern bool JitRunPasses(LLVMModuleRef module, LLVMTargetMachineRef tm);
extern JitCode *JitAddModule(JitModule *jm, const char *symbol, void **address,
							 SilvanStatus *status);
extern JitCode *JitFindBySource(const char *source, size_t source_len, void **address,
								JitSource *origin);
extern JitCode *JitCompile(JitModule *jm, const char *entry, const char *source,
						   size_t source_len, void **address, JitIr *llvm_ir,
						   JitSource *origin, SilvanStatus *status);
extern void JitStoreBeside(const char *kind, const char *source, size_t source_len,
						   const void *data, size_t size);
extern bool JitMapBeside(const char *kind, const char *source, size_t source_len,
						 CodeCacheView *view);
extern void *JitLoadBeside(const char *kind, const char *source, size_t source_len,
						   size_t *size);
extern char *JitIrText(const JitIr *ir);
extern void JitCodeFree(JitCode *code);
extern int	JitCodeObjects(const JitCode *code);

/* The GNU build ID of the binary holding silvan's code, hex; "" if none (build_id.c) */
extern const char *BuildIdOfThisCode(void);

#endif							/* SILVAN_JIT_H */
