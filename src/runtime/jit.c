/*
 * jit.c
 *		LLVM inside the backend: modules in, function addresses out.
 *
 * The first use initializes the native target and describes the host
 * (LLVM's CPU name and features, the default triple and its data
 * layout).  This happens once per process under pthread_once (in the
 * postmaster, for every backend, when silvan is preloaded: JitStartEarly);
 * a failure is remembered and reported by every later call.
 *
 * Modules become object files, which elf_link.c links into memory of
 * their own, with the process's symbols visible to generated code; so
 * JitCodeFree releases exactly that module's machine code, and code read
 * back from the disk cache is linked the same way without LLVM.  A big
 * module is emitted in two halves, the second on a helper thread
 * (jit_split.c): two object files, linked together and both in its disk
 * cache entry.  Modules are optimized
 * before they are added, with a short legacy function pipeline and the host
 * target's cost model; code generation runs at LLVM's default level (-O2),
 * or at -O0 for modules that compile.c marks for fast code generation.
 * No fast-math flags are ever set, so floating point results are those of
 * the IR.  Every LLVMErrorRef becomes a status.
 *
 * LLVM calls happen only inside an LlvmErrorsEnter/Leave bracket
 * (llvm_errors.h), opened by the compiler's entry points; JitEnsure refuses
 * to work outside one, so a new caller that forgets it fails its tests
 * instead of leaving a backend to LLVM's abort().  Errors that LLVM
 * diagnoses through a context (an unsupported feature in code generation,
 * say) would otherwise be printed followed by exit(1): every module's
 * context gets a diagnostic handler that keeps the first error, and the
 * compile fails with it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/InstCombine.h>
#include <llvm-c/Transforms/Scalar.h>
#include <llvm-c/Transforms/Utils.h>

#include "silvan/cancel.h"
#include "silvan/jit.h"
#include "silvan/jit_split.h"
#include "silvan/llvm_emit.h"
#include "silvan/llvm_errors.h"
#include "silvan/llvm_load.h"

#include <llvm/Config/llvm-config.h>

#include "silvan/code_cache.h"
#include "silvan/elf_link.h"
#include "silvan/host_id.h"
#include "silvan/sha256.h"
#include "silvan/text.h"

#ifndef SILVAN_VERSION
#define SILVAN_VERSION "dev"
#endif

/*
 * Machine code in the JIT.  Code from JitCompile and JitFindBySource is
 * shared: one entry per distinct IR key in this process, counted, on the
 * list of shared code.
 */
struct JitCode
{
	ElfImage   *image;			/* the linked machine code */
	bool		shared;
	int			refcount;
	uint8_t		ir_digest[SHA256_DIGEST_LEN];	/* of the IR key: names the
												 * entry symbol */
	char	   *source_key;		/* the source key it was found or made for */
	size_t		source_len;
	void	   *address;
	int			objects;		/* object files linked: 2 when emitted split */
	JitCode    *next;
};

static JitCode *shared_code = NULL;

/* The objects of one piece of code: one, or two when emitted split (jit_split.c) */
#define JIT_MAX_OBJECTS 2
typedef struct JitObjects
{
	int			count;
	ElfObject	object[JIT_MAX_OBJECTS];	/* bytes malloc'd */
} JitObjects;

static JitCode *JitLinkObjects(JitObjects *objects, const char *symbol, SilvanStatus *status);

/* Free objects */
static void
JitObjectsDispose(JitObjects *objects)
{
	for (int k = 0; k < objects->count; k++)
		free((void *) objects->object[k].bytes);
	objects->count = 0;
}

/* Add a copy of an object LLVM emitted, and dispose of LLVM's; false without memory */
static bool
JitObjectsAdd(JitObjects *objects, LLVMMemoryBufferRef object)
{
	size_t		len = LLVMGetBufferSize(object);
	void	   *bytes = malloc(len ? len : 1);

	if (bytes != NULL)
	{
		memcpy(bytes, LLVMGetBufferStart(object), len);
		objects->object[objects->count].bytes = bytes;
		objects->object[objects->count++].len = len;
	}
	LLVMDisposeMemoryBuffer(object);
	return bytes != NULL;
}

/* The process-wide LLVM state, set up once */
static pthread_once_t jit_once = PTHREAD_ONCE_INIT;
static bool jit_ready;
static LLVMTargetRef jit_target;
static char *jit_triple;
static char *jit_data_layout;
static char *jit_cpu;
static char *jit_features;
static char jit_init_error[SILVAN_DETAIL_LEN];
static atomic_ulong jit_next_id;

/* The first error LLVM diagnosed since this thread's last JitModuleCreate */
static _Thread_local char jit_diagnosed[SILVAN_DETAIL_LEN];

/* Describe the host's target: triple, target and data layout; false and jit_init_error if not */
static bool
JitDescribeTarget(void)
{
	LLVMTargetMachineRef tm;
	LLVMTargetDataRef layout;
	char	   *message = NULL;

	jit_triple = LLVMGetDefaultTargetTriple();
	if (jit_triple == NULL || LLVMGetTargetFromTriple(jit_triple, &jit_target, &message))
	{
		snprintf(jit_init_error, sizeof(jit_init_error), "no target for triple %s: %s",
				 jit_triple ? jit_triple : "?", message ? message : "out of memory");
		LLVMDisposeMessage(message);
		return false;
	}
	tm = LLVMCreateTargetMachine(jit_target, jit_triple, jit_cpu, jit_features,
								 LLVMCodeGenLevelDefault, LLVMRelocDefault, LLVMCodeModelJITDefault);
	if (tm == NULL)
	{
		snprintf(jit_init_error, sizeof(jit_init_error), "LLVM has no target machine for %s", jit_triple);
		return false;
	}
	layout = LLVMCreateTargetDataLayout(tm);
	jit_data_layout = LLVMCopyStringRepOfTargetData(layout);
	LLVMDisposeTargetData(layout);
	LLVMDisposeTargetMachine(tm);
	return jit_data_layout != NULL;
}

/* Initialize LLVM's native target and describe the host; runs once per process */
static void
JitInitOnce(void)
{
	LlvmErrorsEnter();
	if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter())
		snprintf(jit_init_error, sizeof(jit_init_error),
				 "LLVM has no native target for this machine");
	else
	{
		jit_cpu = LLVMGetHostCPUName();
		jit_features = LLVMGetHostCPUFeatures();
		jit_ready = JitDescribeTarget();
	}
	LlvmErrorsLeave();
}

/* Keep the first error LLVM diagnoses; drop warnings and remarks */
static void
JitDiagnostic(LLVMDiagnosticInfoRef info, void *arg)
{
	char	   *text;

	if (LLVMGetDiagInfoSeverity(info) != LLVMDSError || jit_diagnosed[0] != '\0')
		return;
	text = LLVMGetDiagInfoDescription(info);
	snprintf(jit_diagnosed, sizeof(jit_diagnosed), "%s", text ? text : "unknown error");
	LLVMDisposeMessage(text);
}

/*
 * Make sure the JIT exists and may be used here: inside an error bracket,
 * LLVM not failed; false and a status otherwise
 */
static bool
JitEnsure(SilvanStatus *status)
{
	if (LlvmErrorsDepth() == 0 || LlvmErrorsFailed())
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not use the LLVM JIT",
						  "%s", LlvmErrorsFailed() ? "LLVM failed earlier in this process." :
						  "LLVM was called outside an LlvmErrorsEnter bracket.");
	pthread_once(&jit_once, JitInitOnce);
	if (!jit_ready)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not start the LLVM JIT",
						  "%s", jit_init_error[0] ? jit_init_error : "Unknown failure.");
	return true;
}

/*
 * Start the JIT now rather than at the first compile.  The postmaster calls
 * it when silvan is preloaded, so that every backend it forks has LLVM's
 * target and the host CPU's description ready, which would
 * otherwise be part of a fresh backend's first prediction.  Nothing is
 * compiled and no thread is started, so forking afterwards is safe.
 */
void
JitStartEarly(void)
{
	SilvanStatus ignored;

	/* without LLVM the first compile reports why */
	if (!LlvmLoad(&ignored))
		return;
	LlvmErrorsEnter();
	pthread_once(&jit_once, JitInitOnce);
	LlvmErrorsLeave();
}

/* The host CPU's name, for the target-cpu attribute */
const char *
JitHostCpuName(void)
{
	SilvanStatus ignored;

	if (!LlvmLoad(&ignored))
		return "";
	pthread_once(&jit_once, JitInitOnce);
	return jit_cpu ? jit_cpu : "";
}

/* The host CPU's features (+avx2, ...), for target-features and gathers */
const char *
JitHostCpuFeatures(void)
{
	SilvanStatus ignored;

	if (!LlvmLoad(&ignored))
		return "";
	pthread_once(&jit_once, JitInitOnce);
	return jit_features ? jit_features : "";
}

/* A process-unique number for symbol names */
unsigned long
JitNextId(void)
{
	return atomic_fetch_add(&jit_next_id, 1);
}

/* Create an empty module for the host in a fresh thread-safe context */
bool
JitModuleCreate(const char *name, JitModule *jm, SilvanStatus *status)
{
	memset(jm, 0, sizeof(JitModule));
	if (!JitEnsure(status))
		return false;
	jm->context = LLVMContextCreate();
	jm->module = LLVMModuleCreateWithNameInContext(name, jm->context);
	LLVMContextSetDiagnosticHandler(jm->context, JitDiagnostic, NULL);
	jit_diagnosed[0] = '\0';
	LLVMSetTarget(jm->module, jit_triple);
	LLVMSetDataLayout(jm->module, jit_data_layout);
	return true;
}

/*
 * Build the module without names for its values and blocks: LLVM then
 * writes, reads, verifies and frees a big module in about half the time
 * (names are uniqued one by one); its IR prints with numbers instead
 */
void
JitModuleDiscardNames(JitModule *jm)
{
	LLVMContextSetDiscardValueNames(jm->context, 1);
}

/* Drop a module that was not handed to the JIT */
void
JitModuleDispose(JitModule *jm)
{
	if (jm->module)
		LLVMDisposeModule(jm->module);
	if (jm->context)
		LLVMContextDispose(jm->context);
	memset(jm, 0, sizeof(JitModule));
}

/* The CPU a module's code is for, and its features: the module's, or the host's */
static const char *
JitModuleCpu(const JitModule *jm)
{
	return jm->cpu ? jm->cpu : JitHostCpuName();
}

static const char *
JitModuleFeatures(const JitModule *jm)
{
	return jm->cpu ? (jm->cpu_features ? jm->cpu_features : "") : JitHostCpuFeatures();
}

/* A target machine for the module's CPU, as the JIT's own; NULL and a status if none */
static LLVMTargetMachineRef
JitTargetMachine(const JitModule *jm, LLVMCodeGenOptLevel level, SilvanStatus *status)
{
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(jit_target, jit_triple, JitModuleCpu(jm),
													  JitModuleFeatures(jm), level,
													  LLVMRelocDefault, LLVMCodeModelJITDefault);

	if (tm == NULL)
		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not optimize generated code",
				   "LLVM could not create a target machine for %s.", jit_triple);
	return tm;
}

/* Basic blocks of a function from which on it gets the light pipeline */
#define JIT_LIGHT_BLOCKS	512

/*
 * Optimize with a short function pipeline and the host's cost model.
 *
 * The generated loop nest is already in the shape we want; what it needs
 * is the margins a specialized loop keeps in allocas promoted to
 * registers, common subexpressions merged, loops rotated (a do-while walk
 * loop is faster), invariants hoisted and induction variables tidied.
 * LLVM's -O2 pipeline gives the same kernel speed in several times the
 * time.  Functions of more than JIT_LIGHT_BLOCKS blocks are trees compiled
 * into code (codeWalk): for them only promotion, common subexpressions
 * (the row's features read once) and CFG simplification pay; the rest
 * would take a large share of a big forest's compile (mtpl2) for no
 * measurable speed.  Functions of one block have no loop and no branch:
 * the trees of leaf bitvectors (codeWalk(..., bitvector)) get promotion
 * and common subexpressions only, which on mtpl2 in bitvectors (1,000
 * such functions, 30,000 splits) compiles several times faster than the
 * full list for the same kernel speed.  Tree functions emitted final
 * (JIT_NO_PASSES: no allocas, dead code erased, and instruction selection
 * merges their repeated loads itself, the object the same byte for byte)
 * skip even these.
 */
void
JitAddKernelPasses(LLVMPassManagerRef fpm)
{
	LLVMAddPromoteMemoryToRegisterPass(fpm);	/* margins a specialized loop keeps */
	LLVMAddEarlyCSEPass(fpm);
	LLVMAddInstructionCombiningPass(fpm);
	LLVMAddLoopRotatePass(fpm);
	LLVMAddLICMPass(fpm);
	LLVMAddIndVarSimplifyPass(fpm);
	LLVMAddInstructionCombiningPass(fpm);
	LLVMAddCFGSimplificationPass(fpm);
}

/*
 * Run the function passes (see above) over module with tm's cost model,
 * polling for a cancel request before each function; false when one came
 * (the module is then half optimized).  No state of this file, so
 * jit_split.c's helper thread runs it on its half.
 */
bool
JitRunPasses(LLVMModuleRef module, LLVMTargetMachineRef tm)
{
	bool		canceled = false;
	LLVMPassManagerRef fpm;
	LLVMPassManagerRef light;
	LLVMPassManagerRef straight;

	fpm = LLVMCreateFunctionPassManagerForModule(module);
	LLVMAddAnalysisPasses(tm, fpm);
	JitAddKernelPasses(fpm);
	light = LLVMCreateFunctionPassManagerForModule(module);
	LLVMAddAnalysisPasses(tm, light);
	LLVMAddPromoteMemoryToRegisterPass(light);
	LLVMAddEarlyCSEPass(light);
	LLVMAddCFGSimplificationPass(light);
	straight = LLVMCreateFunctionPassManagerForModule(module);
	LLVMAddAnalysisPasses(tm, straight);
	LLVMAddPromoteMemoryToRegisterPass(straight);
	LLVMAddEarlyCSEPass(straight);

	LLVMInitializeFunctionPassManager(fpm);
	LLVMInitializeFunctionPassManager(light);
	LLVMInitializeFunctionPassManager(straight);
	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn && !canceled; fn = LLVMGetNextFunction(fn))
	{
		unsigned	blocks = (canceled = CancelRequested()) || LLVMIsDeclaration(fn) ||
			LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, JIT_NO_PASSES,
										  strlen(JIT_NO_PASSES)) != NULL ? 0 :
			LLVMCountBasicBlocks(fn);

		if (blocks > 0)
			LLVMRunFunctionPassManager(blocks == 1 ? straight :
									   blocks > JIT_LIGHT_BLOCKS ? light : fpm, fn);
	}
	LLVMFinalizeFunctionPassManager(fpm);
	LLVMFinalizeFunctionPassManager(light);
	LLVMFinalizeFunctionPassManager(straight);

	LLVMDisposePassManager(fpm);
	LLVMDisposePassManager(light);
	LLVMDisposePassManager(straight);
	return !canceled;
}

/* Optimize a module for the host (see above) */
bool
JitOptimizeModule(JitModule *jm, SilvanStatus *status)
{
	LLVMTargetMachineRef tm;

	bool		done;

	if (!JitEnsure(status) || (tm = JitTargetMachine(jm, LLVMCodeGenLevelDefault, status)) == NULL)
		return false;
	done = JitRunPasses(jm->module, tm);
	LLVMDisposeTargetMachine(tm);
	if (!done)
		return StatusCanceled(status, "optimizing the generated code");
	if (jit_diagnosed[0] != '\0')
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not optimize generated code",
						  "LLVM: %s", jit_diagnosed);
	return true;
}

/*
 * Compile the module as it is to an object, at -O0 (fast instruction
 * selection and register allocation) when marked for fast code
 * generation, else at the default level
 */
static bool
JitEmitObject(JitModule *jm, LLVMMemoryBufferRef *object, SilvanStatus *status)
{
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(jit_target, jit_triple, JitModuleCpu(jm),
													  JitModuleFeatures(jm),
													  jm->fast_codegen ? LLVMCodeGenLevelNone : LLVMCodeGenLevelDefault,
													  LLVMRelocDefault, LLVMCodeModelJITDefault);
	char	   *message = NULL;
	bool		canceled = false;
	bool		failed;

	if (tm == NULL)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not compile generated code",
						  "LLVM could not create a target machine for %s.", jit_triple);
	failed = !LlvmEmitCancellable(tm, jm->module, LLVMObjectFile, &message, object, &canceled);
	LLVMDisposeTargetMachine(tm);
	if (canceled)
		return StatusCanceled(status, "compiling the generated code");
	if (failed || jit_diagnosed[0] != '\0')
	{
		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not compile generated code",
				   "LLVM: %s", failed && message ? message : jit_diagnosed);
		LLVMDisposeMessage(message);
		return false;
	}
	LLVMDisposeMessage(message);
	return true;
}

/*
 * Compile the module as it is (no passes) and link it, not shared, and
 * give symbol's address.  The module is consumed either way.
 */
JitCode *
JitAddModule(JitModule *jm, const char *symbol, void **address, SilvanStatus *status)
{
	LLVMMemoryBufferRef object = NULL;
	JitObjects	objects = {0};
	JitCode    *code = NULL;

	if (JitEnsure(status) && JitEmitObject(jm, &object, status))
	{
		if (!JitObjectsAdd(&objects, object))
			StatusNoMemory(status, "the compiled code");
		else if ((code = JitLinkObjects(&objects, symbol, status)) != NULL)
			*address = code->address;
	}
	JitModuleDispose(jm);
	return code;
}

/*
 * Two keys name a module's machine code, and the disk cache keeps an
 * entry under each (code_cache.c):
 *  - the IR key: the module's bitcode before optimization (the schedule's
 *    loop nest, the layout's record types, any constants the code is
 *    specialized on), then the tail and the code generation level;
 *  - the source key: the caller's description of everything the module
 *    is built from (compile.c: digests of the model and its profile, the
 *    schedule's text, ...), then the tail.  Found before any IR is built,
 *    so a backend that meets known code skips code generation.  Only a
 *    binary with a build ID has source keys: a rebuilt compiler may turn
 *    the same source into other code, and its version string need not say.
 * More keys are the source key under another prefix (JitStoreBeside):
 * the image key's entry holds what the compiler built besides the code
 * (compile.c stores the image of its buffers there), so it belongs to
 * exactly the machine code of the source key; the default schedule key's
 * holds the schedule the compiler picks for a forest and batch size.
 * The tail: target triple, the host CPU's identity (host_id.c: what
 * LLVM's CPU name and features are computed from, read without LLVM),
 * LLVM and silvan versions, build ID.  An entry's payload is the SHA-256 of the IR key,
 * which names the entry symbol and identifies the code in this process,
 * then the object file.  Bitcode rather than IR text: the same content,
 * written several times faster.
 */
#define JIT_PAYLOAD_DIGEST_LEN SHA256_DIGEST_LEN

/* Append the tail every key ends with to buf */
static bool
JitKeyTail(TextBuf *buf)
{
	TextAppend(buf, "\n; target %s\n; host %s\n; llvm %s\n; silvan %s\n; build %s\n",
			   LLVM_DEFAULT_TARGET_TRIPLE, HostIdentity(), LLVM_VERSION_STRING,
			   SILVAN_VERSION, BuildIdOfThisCode());
	return !buf->failed;
}

/* The IR key of a module (malloc'd), NULL without memory */
static char *
JitIrKey(LLVMModuleRef module, bool fast_codegen, size_t *key_len, size_t *bitcode_len)
{
	LLVMMemoryBufferRef bitcode = LLVMWriteBitcodeToMemoryBuffer(module);
	TextBuf		tail = {0};
	size_t		code_len;
	char	   *key = NULL;

	if (bitcode == NULL)
		return NULL;
	TextAppend(&tail, "; codegen %s", fast_codegen ? "O0" : "O2");
	if (JitKeyTail(&tail))
	{
		code_len = LLVMGetBufferSize(bitcode);
		if ((key = malloc(code_len + tail.len + 1)) != NULL)
		{
			memcpy(key, LLVMGetBufferStart(bitcode), code_len);
			memcpy(key + code_len, tail.data, tail.len + 1);
			*key_len = code_len + tail.len;
			*bitcode_len = code_len;
		}
	}
	free(tail.data);
	LLVMDisposeMemoryBuffer(bitcode);
	return key;
}

/*
 * The key of what is stored for the caller's source text (malloc'd): its
 * machine code ("source"), or the image of its buffers ("image"); NULL
 * without a build ID
 */
static char *
JitKeyOfSource(const char *kind, const char *source, size_t source_len, size_t *key_len)
{
	TextBuf		buf = {0};

	if (source == NULL || BuildIdOfThisCode()[0] == '\0')
		return NULL;
	TextAppend(&buf, "silvan %s key\n%.*s", kind, (int) source_len, source);
	if (!JitKeyTail(&buf))
	{
		free(buf.data);
		return NULL;
	}
	*key_len = buf.len;
	return buf.data;
}

/* The entry symbol of the code with this IR key digest */
static void
JitSymbolName(const uint8_t *digest, char *symbol, size_t size)
{
	uint64_t	head = 0;

	for (int i = 0; i < 8; i++)
		head = head << 8 | digest[i];
	snprintf(symbol, size, "silvan_%016llx", (unsigned long long) head);
}

/* The shared code with this IR key digest, with one more user; NULL if none */
static JitCode *
JitFindByDigest(const uint8_t *digest)
{
	for (JitCode *code = shared_code; code != NULL; code = code->next)
		if (memcmp(code->ir_digest, digest, JIT_PAYLOAD_DIGEST_LEN) == 0)
		{
			code->refcount++;
			return code;
		}
	return NULL;
}

/* The shared code found by this source key, with one more user; NULL if none */
static JitCode *
JitFindBySourceKey(const char *key, size_t key_len)
{
	for (JitCode *code = shared_code; code != NULL; code = code->next)
		if (code->source_key != NULL && code->source_len == key_len &&
			memcmp(code->source_key, key, key_len) == 0)
		{
			code->refcount++;
			return code;
		}
	return NULL;
}

/*
 * The payload of a disk cache entry: the IR key digest, then each object
 * as an 8-byte length (host order) and its bytes
 */

/* Load the disk cache's entry for key: its digest and objects; false on a miss */
static bool
JitLoadEntry(const char *key, size_t key_len, uint8_t *digest, JitObjects *objects)
{
	size_t		len;
	size_t		at = JIT_PAYLOAD_DIGEST_LEN;
	uint8_t    *bytes = CodeCacheLoad(key, key_len, &len);

	objects->count = 0;
	if (bytes == NULL)
		return false;
	while (bytes != NULL && len > JIT_PAYLOAD_DIGEST_LEN && at < len)
	{
		uint64_t	size;

		if (objects->count == JIT_MAX_OBJECTS || len - at < sizeof(size))
			break;
		memcpy(&size, bytes + at, sizeof(size));
		at += sizeof(size);
		if (size == 0 || size > len - at)
			break;
		if ((objects->object[objects->count].bytes = malloc(size)) == NULL)
			break;
		memcpy((void *) objects->object[objects->count].bytes, bytes + at, size);
		objects->object[objects->count++].len = size;
		at += size;
	}
	if (objects->count == 0 || at != len)
	{
		/* short, long or unreadable: a miss */
		JitObjectsDispose(objects);
		free(bytes);
		return false;
	}
	memcpy(digest, bytes, JIT_PAYLOAD_DIGEST_LEN);
	free(bytes);
	return true;
}

/* Store objects under key, behind their IR key digest; best effort */
static void
JitStoreEntry(const char *key, size_t key_len, const uint8_t *digest, const JitObjects *objects)
{
	size_t		len = JIT_PAYLOAD_DIGEST_LEN;
	size_t		at = JIT_PAYLOAD_DIGEST_LEN;
	uint8_t    *payload;

	for (int k = 0; k < objects->count; k++)
		len += sizeof(uint64_t) + objects->object[k].len;
	if (key == NULL || !CodeCacheEnabled() || (payload = malloc(len)) == NULL)
		return;
	memcpy(payload, digest, JIT_PAYLOAD_DIGEST_LEN);
	for (int k = 0; k < objects->count; k++)
	{
		uint64_t	size = objects->object[k].len;

		memcpy(payload + at, &size, sizeof(size));
		at += sizeof(size);
		memcpy(payload + at, objects->object[k].bytes, size);
		at += size;
	}
	CodeCacheStore(key, key_len, payload, len);
	free(payload);
}

/*
 * Optimize the module and generate its objects: one, or two when
 * jit_split.c emits half of it on a helper thread.  The module's entry
 * function is named entry; bitcode (len bytes) is the module as it was
 * before that name (the IR key's bitcode: the helper reads its half from
 * it).  *llvm_ir gets the optimized module, or, when split, the module
 * before the passes.  false and a status on failure.
 */
static bool
JitEmitObjects(JitModule *jm, const char *entry, const char *bitcode, size_t len,
			   JitIr *llvm_ir, JitObjects *objects, SilvanStatus *status)
{
	LLVMCodeGenOptLevel level = jm->fast_codegen ? LLVMCodeGenLevelNone : LLVMCodeGenLevelDefault;
	JitSplitTarget split_target = {
		.target = jit_target, .triple = jit_triple, .cpu = JitModuleCpu(jm),
		.features = JitModuleFeatures(jm), .level = level
	};
	JitSplit	split;
	LLVMTargetMachineRef tm;
	LLVMMemoryBufferRef object = NULL;
	char	   *message = NULL;
	bool		ok;

	objects->count = 0;
	if (!JitEnsure(status))
		return false;
	/* writing the IR key's bitcode does not poll: a request may have come meanwhile */
	if (CancelRequested())
		return StatusCanceled(status, "compiling the generated code");
	if (JitSplitStart(jm->module, entry, bitcode, len, &split_target, &split) &&
		llvm_ir != NULL && (llvm_ir->bitcode = malloc(len)) != NULL)
	{
		memcpy(llvm_ir->bitcode, bitcode, len);
		llvm_ir->len = len;
		llvm_ir->before_passes = true;
	}
	ok = JitOptimizeModule(jm, status) && (tm = JitTargetMachine(jm, level, status)) != NULL;
	if (ok && llvm_ir != NULL && !split.started)
	{
		/* bitcode, printed only if explain asks: writing text would slow a big compile */
		LLVMMemoryBufferRef optimized = LLVMWriteBitcodeToMemoryBuffer(jm->module);

		if (optimized != NULL && (llvm_ir->bitcode = malloc(LLVMGetBufferSize(optimized))) != NULL)
		{
			llvm_ir->len = LLVMGetBufferSize(optimized);
			memcpy(llvm_ir->bitcode, LLVMGetBufferStart(optimized), llvm_ir->len);
		}
		if (optimized != NULL)
			LLVMDisposeMemoryBuffer(optimized);
	}
	if (ok)
	{
		bool		canceled = false;

		ok = LlvmEmitCancellable(tm, jm->module, LLVMObjectFile, &message, &object, &canceled) &&
			jit_diagnosed[0] == '\0';
		if (canceled)
			StatusCanceled(status, "compiling the generated code");
		else if (!ok)
			StatusFail(status, SILVAN_ERROR_INTERNAL, "could not compile generated code",
					   "LLVM: %s", jit_diagnosed[0] != '\0' ? jit_diagnosed : message ? message : "");
		LLVMDisposeMessage(message);
		LLVMDisposeTargetMachine(tm);
	}
	if (object != NULL && !JitObjectsAdd(objects, object))
		ok = StatusNoMemory(status, "the compiled code");
	/* the helper is waited for whatever happened here (it stops on a cancel too) */
	if (!JitSplitFinish(&split, &object, ok ? status : &(SilvanStatus) {0}))
		ok = false;
	if (!ok && status->kind != SILVAN_ERROR_CANCELED && CancelRequested())
		StatusCanceled(status, "compiling the generated code");
	if (object != NULL && !JitObjectsAdd(objects, object) && ok)
		ok = StatusNoMemory(status, "the compiled code");
	if (!ok)
		JitObjectsDispose(objects);
	return ok;
}

/*
 * Link objects (elf_link.c) and find symbol in them: new code, not yet
 * shared; consumes the objects.  NULL and a status on failure.
 */
static JitCode *
JitLinkObjects(JitObjects *objects, const char *symbol, SilvanStatus *status)
{
	JitCode    *code = calloc(1, sizeof(JitCode));

	if (code == NULL)
		StatusNoMemory(status, "the compiled code handle");
	else if ((code->image = ElfLink(objects->object, objects->count, status)) == NULL)
	{
		free(code);
		code = NULL;
	}
	else if ((code->address = ElfLookup(code->image, symbol)) == NULL)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "could not link generated code",
				   "The objects define no symbol %s.", symbol);
		ElfFree(code->image);
		free(code);
		code = NULL;
	}
	else
		code->objects = objects->count;
	JitObjectsDispose(objects);
	return code;
}

/*
 * Link objects as new shared code named by their IR key digest, and put
 * it on the list; consumes the objects.  NULL and a status on failure.
 */
static JitCode *
JitLinkShared(const uint8_t *digest, JitObjects *objects, SilvanStatus *status)
{
	char		symbol[64];
	JitCode    *code;

	JitSymbolName(digest, symbol, sizeof(symbol));
	if ((code = JitLinkObjects(objects, symbol, status)) == NULL)
		return NULL;
	code->shared = true;
	code->refcount = 1;
	memcpy(code->ir_digest, digest, JIT_PAYLOAD_DIGEST_LEN);
	code->next = shared_code;
	shared_code = code;
	return code;
}

/* Remember the source key code was found or made for (takes the key) */
static void
JitKeepSourceKey(JitCode *code, char *key, size_t key_len)
{
	if (code->source_key != NULL || key == NULL)
	{
		free(key);
		return;
	}
	code->source_key = key;
	code->source_len = key_len;
}

/*
 * The machine code made from source (the caller's description of what it
 * would build a module from; see the key comment above), without building
 * any IR: shared in this process (JIT_SHARED) or loaded from the disk
 * cache (JIT_FROM_DISK).  NULL on a miss, or when anything fails: the
 * caller then builds the module and calls JitCompile, which reports.
 */
JitCode *
JitFindBySource(const char *source, size_t source_len, void **address, JitSource *origin)
{
	SilvanStatus ignored;
	uint8_t		digest[JIT_PAYLOAD_DIGEST_LEN];
	JitObjects	objects = {0};
	size_t		key_len = 0;
	char	   *key;
	JitCode    *code;

	if ((key = JitKeyOfSource("source", source, source_len, &key_len)) == NULL)
		return NULL;
	if ((code = JitFindBySourceKey(key, key_len)) != NULL)
		*origin = JIT_SHARED;
	else if (!JitLoadEntry(key, key_len, digest, &objects))
		code = NULL;
	else if ((code = JitFindByDigest(digest)) != NULL)
	{
		/* the same code is here already, found by its IR or another source */
		JitObjectsDispose(&objects);
		*origin = JIT_SHARED;
	}
	else if ((code = JitLinkShared(digest, &objects, &ignored)) != NULL)
		*origin = JIT_FROM_DISK;
	if (code == NULL)
	{
		free(key);
		return NULL;
	}
	JitKeepSourceKey(code, key, key_len);
	*address = code->address;
	return code;
}

/*
 * Turn a module whose batch function is named entry into machine code,
 * through two caches: code this process already has for the same IR key
 * is shared (JIT_SHARED), else an object another backend stored for it on
 * disk is loaded (JIT_FROM_DISK_BY_IR), else the module is optimized and
 * compiled (JIT_COMPILED).  An object that was loaded or compiled is
 * stored under both keys (source may be NULL: no source key).  The entry
 * function is renamed after the IR key's digest, so equal code has one
 * symbol per process.  *llvm_ir gets the optimized IR (JitIrText prints
 * it) when compiled here, else nothing.  The module is consumed either
 * way.
 */
JitCode *
JitCompile(JitModule *jm, const char *entry, const char *source, size_t source_len,
		   void **address, JitIr *llvm_ir, JitSource *origin, SilvanStatus *status)
{
	JitCode    *code = NULL;
	char	   *ir_key = NULL;
	char	   *source_key = NULL;
	size_t		ir_len = 0;
	size_t		bitcode_len = 0;
	size_t		source_key_len = 0;
	uint8_t		digest[JIT_PAYLOAD_DIGEST_LEN];
	uint8_t		stored[JIT_PAYLOAD_DIGEST_LEN];
	char		symbol[64];
	JitObjects	objects = {0};
	LLVMValueRef fn;
	Sha256		sha;

	if (llvm_ir != NULL)
		memset(llvm_ir, 0, sizeof(JitIr));
	if (!JitEnsure(status))
		goto done;
	if ((ir_key = JitIrKey(jm->module, jm->fast_codegen, &ir_len, &bitcode_len)) == NULL)
	{
		StatusNoMemory(status, "the code's key");
		goto done;
	}
	Sha256Init(&sha);
	Sha256Update(&sha, ir_key, ir_len);
	Sha256Final(&sha, digest);
	source_key = JitKeyOfSource("source", source, source_len, &source_key_len);
	if ((code = JitFindByDigest(digest)) != NULL)
	{
		*origin = JIT_SHARED;
		goto done;
	}
	JitSymbolName(digest, symbol, sizeof(symbol));
	if ((fn = LLVMGetNamedFunction(jm->module, entry)) != NULL)
		LLVMSetValueName2(fn, symbol, strlen(symbol));
	if (JitLoadEntry(ir_key, ir_len, stored, &objects) &&
		memcmp(stored, digest, JIT_PAYLOAD_DIGEST_LEN) == 0)
		*origin = JIT_FROM_DISK_BY_IR;
	else
	{
		JitObjectsDispose(&objects);
		if (!JitEmitObjects(jm, symbol, ir_key, bitcode_len, llvm_ir, &objects, status))
			goto done;
		JitStoreEntry(ir_key, ir_len, digest, &objects);
		*origin = JIT_COMPILED;
	}
	JitStoreEntry(source_key, source_key_len, digest, &objects);
	code = JitLinkShared(digest, &objects, status);
done:
	if (code != NULL)
	{
		JitKeepSourceKey(code, source_key, source_key_len);
		source_key = NULL;
		*address = code->address;
	}
	free(source_key);
	free(ir_key);
	JitModuleDispose(jm);
	return code;
}

/*
 * Keep bytes that belong with what source makes, under kind's key: the
 * compiler's image of a compile's buffers ("image"), a forest's default
 * schedule ("default schedule"); best effort
 */
void
JitStoreBeside(const char *kind, const char *source, size_t source_len, const void *data,
			   size_t size)
{
	size_t		key_len = 0;
	char	   *key;

	if (!CodeCacheEnabled() || (key = JitKeyOfSource(kind, source, source_len, &key_len)) == NULL)
		return;
	CodeCacheStore(key, key_len, data, size);
	free(key);
}

/*
 * Map the bytes JitStoreBeside kept for kind and source, to be used where
 * they lie (CodeCacheMap: 64-byte aligned, private); false if none
 */
bool
JitMapBeside(const char *kind, const char *source, size_t source_len, CodeCacheView *view)
{
	size_t		key_len = 0;
	char	   *key;
	bool		found;

	memset(view, 0, sizeof(CodeCacheView));
	if (!CodeCacheEnabled() || (key = JitKeyOfSource(kind, source, source_len, &key_len)) == NULL)
		return false;
	found = CodeCacheMap(key, key_len, view);
	free(key);
	return found;
}

/* The bytes JitStoreBeside kept for kind and source (malloc'd), or NULL */
void *
JitLoadBeside(const char *kind, const char *source, size_t source_len, size_t *size)
{
	size_t		key_len = 0;
	char	   *key;
	void	   *data;

	if (!CodeCacheEnabled() || (key = JitKeyOfSource(kind, source, source_len, &key_len)) == NULL)
		return NULL;
	data = CodeCacheLoad(key, key_len, size);
	free(key);
	return data;
}

/* Take code off the list of shared code */
static void
JitUnlinkShared(JitCode *code)
{
	for (JitCode **p = &shared_code; *p != NULL; p = &(*p)->next)
		if (*p == code)
		{
			*p = code->next;
			return;
		}
}

/* Release a module's machine code (kept if LLVM failed: the process is exiting) */
void
JitCodeFree(JitCode *code)
{
	if (code == NULL || (code->shared && --code->refcount > 0))
		return;
	if (code->shared)
		JitUnlinkShared(code);
	ElfFree(code->image);
	free(code->source_key);
	free(code);
}

/* How many object files make up code: 2 when it was emitted split (jit_split.c) */
int
JitCodeObjects(const JitCode *code)
{
	return code != NULL ? code->objects : 0;
}

/* The text of IR kept by JitCompile (malloc'd), or NULL if none or unreadable */
char *
JitIrText(const JitIr *ir)
{
	LLVMContextRef context;
	LLVMMemoryBufferRef buffer;
	LLVMModuleRef module = NULL;
	char	   *text = NULL;

	if (ir == NULL || ir->bitcode == NULL)
		return NULL;
	context = LLVMContextCreate();
	buffer = LLVMCreateMemoryBufferWithMemoryRange(ir->bitcode, ir->len, "silvan_forest_batch", false);
	if (!LLVMParseBitcodeInContext2(context, buffer, &module))
	{
		char	   *printed = LLVMPrintModuleToString(module);

		text = strdup(printed);
		LLVMDisposeMessage(printed);
		LLVMDisposeModule(module);
	}
	LLVMDisposeMemoryBuffer(buffer);
	LLVMContextDispose(context);
	return text;
}
