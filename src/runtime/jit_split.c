/*
 * jit_split.c
 *		Emit a big module as two objects, half of it on a helper thread.
 *
 * Most of a big compile is LLVM's instruction selection and object
 * emission, function by function (as for mtpl2 in leaf bitvectors, 1,000
 * straight-line tree functions).  Functions compile independently,
 * so the module's later functions can be emitted on a second core while
 * this thread emits the rest.  An LLVMContext is not thread-safe, so the
 * helper gets its own copy of the module: the bitcode jit.c wrote for the
 * module's IR key, read back in a context of its own.  The split comes
 * before the function passes, so each thread also optimizes its half.
 *
 * The split (JitSplitStart), on the module before the passes:
 *	1. functions are counted in instructions; modules of fewer than
 *	   JIT_SPLIT_MIN_INSTRUCTIONS, or whose second half would be small, stay
 *	   whole; otherwise the defined functions past this thread's share
 *	   (JIT_SPLIT_MAIN_SHARE; never the entry) are the helper's, a flag per
 *	   defined function in module order (JitSplit.parts);
 *	2. every function the module defines with local linkage becomes
 *	   external and takes a name of the code's own (prefix_fN, the prefix
 *	   being the entry symbol, named after the IR key's digest), so that the
 *	   two objects can call each other and nothing else in the JIT has the
 *	   name; the helper's functions are marked with the string attribute
 *	   JIT_SPLIT_PART;
 *	3. the helper is started: it reads the bitcode back lazily
 *	   (llvm_lazy.cpp), the bodies of its own functions only, polling for a
 *	   cancel request between them, and names and marks its copy the same
 *	   way from the flags;
 *	4. this thread turns the marked functions into declarations, the
 *	   helper every other one, and each drops the local globals it no longer
 *	   uses (constant tables a half needs stay in its object; one both need
 *	   is in both); the helper then runs the function passes (JitRunPasses)
 *	   and emits its object.
 * The caller optimizes and emits its module as usual; JitSplitFinish
 * waits for the helper and hands over its object.  Both objects are
 * linked together (jit.c, elf_link.c), which resolves their calls.
 *
 * The helper touches no PostgreSQL API and no state of this thread's
 * LLVM context; it runs with every signal blocked.  LLVM's fatal errors
 * on it go to the owner of the error bracket (llvm_errors.cpp), which
 * waits in JitSplitFinish, so they end the session as the owner's own
 * would.  silvan.max_threads = 1 (RuntimeMaxThreads) keeps modules whole.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "silvan/cancel.h"
#include "silvan/jit.h"
#include "silvan/jit_split.h"
#include "silvan/llvm_emit.h"
#include "silvan/llvm_errors.h"
#include "silvan/llvm_lazy.h"
#include "silvan/runtime.h"

/* Modules of fewer instructions are emitted whole (JitSplitSetMinInstructions) */
#define JIT_SPLIT_MIN_INSTRUCTIONS	40000
/*
 * This thread's share of the instructions: the helper first reads its
 * half back from bitcode, so it takes a little less
 */
#define JIT_SPLIT_MAIN_SHARE		0.54
/* The attribute that marks the helper's functions */
#define JIT_SPLIT_PART				"silvan-split-part"

static int64_t split_min_instructions = JIT_SPLIT_MIN_INSTRUCTIONS;

/* Tests: split modules from this many instructions on (< 1: the default) */
void
JitSplitSetMinInstructions(int64_t n)
{
	split_min_instructions = n >= 1 ? n : JIT_SPLIT_MIN_INSTRUCTIONS;
}

/* The instructions of a function (0 for a declaration) */
static int64_t
CountInstructions(LLVMValueRef fn)
{
	int64_t		n = 0;

	for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b != NULL; b = LLVMGetNextBasicBlock(b))
		for (LLVMValueRef i = LLVMGetFirstInstruction(b); i != NULL; i = LLVMGetNextInstruction(i))
			n++;
	return n;
}

/* Is fn one of the helper's functions? */
static bool
IsHelperPart(LLVMValueRef fn)
{
	return LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, JIT_SPLIT_PART,
										 strlen(JIT_SPLIT_PART)) != NULL;
}

/* The functions module defines, in order (declarations are not counted) */
static int
CountDefined(LLVMModuleRef module)
{
	int			count = 0;

	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn; fn = LLVMGetNextFunction(fn))
		count += !LLVMIsDeclaration(fn);
	return count;
}

/*
 * Choose the helper's functions: the defined functions past this thread's
 * share of the module's instructions (JIT_SPLIT_MAIN_SHARE), not the entry
 * function (named entry here); a malloc'd flag per defined function in
 * module order, or NULL when the module is not worth splitting
 */
static bool *
ChooseHalves(LLVMModuleRef module, const char *entry, int *count)
{
	int64_t		total = 0;
	int64_t		seen = 0;
	int64_t		helper = 0;
	int			k = 0;
	int64_t    *sizes;
	bool	   *parts;

	*count = CountDefined(module);
	sizes = malloc(sizeof(int64_t) * (*count > 0 ? *count : 1));
	parts = calloc(*count > 0 ? *count : 1, sizeof(bool));
	if (sizes == NULL || parts == NULL)
	{
		free(sizes);
		free(parts);
		return NULL;
	}
	/* each function's instructions, counted once (a walk of a big module is not free) */
	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn; fn = LLVMGetNextFunction(fn))
		if (!LLVMIsDeclaration(fn))
			total += (sizes[k++] = CountInstructions(fn));
	k = 0;
	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn; fn = LLVMGetNextFunction(fn))
	{
		size_t		len;

		if (LLVMIsDeclaration(fn))
			continue;
		seen += sizes[k];
		parts[k] = seen > total * JIT_SPLIT_MAIN_SHARE &&
			strcmp(LLVMGetValueName2(fn, &len), entry) != 0;
		if (parts[k])
			helper += sizes[k];
		k++;
	}
	free(sizes);
	if (total < split_min_instructions || helper < total / 4)
	{
		free(parts);
		return NULL;
	}
	return parts;
}

/*
 * Give every local function an external name of the code's own,
 * prefix_fN, and mark the helper's functions (parts, a flag per defined
 * function); both threads run it on their copy, so they agree
 */
static void
NameHalves(LLVMModuleRef module, const char *prefix, const bool *parts)
{
	LLVMContextRef context = LLVMGetModuleContext(module);
	int			n = 0;
	int			k = 0;

	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn; fn = LLVMGetNextFunction(fn))
	{
		LLVMLinkage linkage = LLVMGetLinkage(fn);
		char		name[128];

		if (LLVMIsDeclaration(fn))
			continue;
		if (linkage == LLVMInternalLinkage || linkage == LLVMPrivateLinkage)
		{
			snprintf(name, sizeof(name), "%s_f%d", prefix, n++);
			LLVMSetValueName2(fn, name, strlen(name));
			LLVMSetLinkage(fn, LLVMExternalLinkage);
			LLVMSetVisibility(fn, LLVMDefaultVisibility);
		}
		if (parts[k++])
			LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
									LLVMCreateStringAttribute(context, JIT_SPLIT_PART,
															  strlen(JIT_SPLIT_PART), "1", 1));
	}
}

/*
 * Read the bodies of the helper's functions (parts) of a lazily read
 * module, polling for a cancel request before each; false with the
 * reason in split->failure
 */
static bool
ReadHelperHalf(LLVMModuleRef module, JitSplit *split)
{
	int			k = 0;

	if (CountDefined(module) != split->part_count)
	{
		snprintf(split->failure, sizeof(split->failure), "the halves did not match");
		return false;
	}
	for (LLVMValueRef fn = LLVMGetFirstFunction(module); fn; fn = LLVMGetNextFunction(fn))
	{
		if (LLVMIsDeclaration(fn) || !split->parts[k++])
			continue;
		if ((split->canceled = CancelRequested()))
		{
			snprintf(split->failure, sizeof(split->failure), "canceled");
			return false;
		}
		if (!LlvmMaterialize(fn))
		{
			snprintf(split->failure, sizeof(split->failure), "its bitcode did not read back");
			return false;
		}
	}
	return true;
}

/* Copy the attributes at index idx of from onto to */
static void
CopyAttributes(LLVMValueRef from, LLVMValueRef to, LLVMAttributeIndex idx)
{
	unsigned	count = LLVMGetAttributeCountAtIndex(from, idx);
	LLVMAttributeRef *attrs = count > 0 ? malloc(sizeof(LLVMAttributeRef) * count) : NULL;

	if (attrs == NULL)
		return;
	LLVMGetAttributesAtIndex(from, idx, attrs);
	for (unsigned k = 0; k < count; k++)
		LLVMAddAttributeAtIndex(to, idx, attrs[k]);
	free(attrs);
}

/* Replace the defined function fn by a declaration of the same name and ABI */
static void
MakeDeclaration(LLVMModuleRef module, LLVMValueRef fn)
{
	size_t		len;
	char	   *name = strdup(LLVMGetValueName2(fn, &len));
	LLVMValueRef decl = LLVMAddFunction(module, "silvan_split_declaration",
										LLVMGlobalGetValueType(fn));
	unsigned	params = LLVMCountParams(fn);

	LLVMSetFunctionCallConv(decl, LLVMGetFunctionCallConv(fn));
	CopyAttributes(fn, decl, LLVMAttributeFunctionIndex);
	CopyAttributes(fn, decl, LLVMAttributeReturnIndex);
	for (unsigned p = 1; p <= params; p++)
		CopyAttributes(fn, decl, p);
	LLVMReplaceAllUsesWith(fn, decl);
	LLVMDeleteFunction(fn);
	if (name != NULL)
		LLVMSetValueName2(decl, name, len);
	free(name);
}

/*
 * Keep one half: the helper's functions (helper) or the others; the rest
 * become declarations, and local globals nothing uses any more go
 */
static void
KeepHalf(LLVMModuleRef module, bool helper)
{
	LLVMValueRef fn = LLVMGetFirstFunction(module);
	LLVMValueRef g = LLVMGetFirstGlobal(module);

	while (fn != NULL)
	{
		LLVMValueRef next = LLVMGetNextFunction(fn);

		if (!LLVMIsDeclaration(fn) && IsHelperPart(fn) != helper)
			MakeDeclaration(module, fn);
		fn = next;
	}
	while (g != NULL)
	{
		LLVMValueRef next = LLVMGetNextGlobal(g);
		LLVMLinkage linkage = LLVMGetLinkage(g);

		if ((linkage == LLVMInternalLinkage || linkage == LLVMPrivateLinkage) &&
			LLVMGetFirstUse(g) == NULL)
			LLVMDeleteGlobal(g);
		g = next;
	}
}

/* The helper's context: keep the first error LLVM diagnoses */
static void
HelperDiagnostic(LLVMDiagnosticInfoRef info, void *arg)
{
	JitSplit   *split = arg;
	char	   *text;

	if (LLVMGetDiagInfoSeverity(info) != LLVMDSError || split->diagnosed[0] != '\0')
		return;
	text = LLVMGetDiagInfoDescription(info);
	snprintf(split->diagnosed, sizeof(split->diagnosed), "%s", text ? text : "unknown error");
	LLVMDisposeMessage(text);
}

/* The helper: read its half of the bitcode back, optimize and emit it */
static void *
HelperMain(void *arg)
{
	JitSplit   *split = arg;
	LLVMContextRef context;
	LLVMModuleRef module = NULL;
	LLVMTargetMachineRef tm;
	char	   *message = NULL;

	LlvmErrorsHelperBegin();
	context = LLVMContextCreate();
	LLVMContextSetDiagnosticHandler(context, HelperDiagnostic, split);
	if ((module = LlvmReadLazy(context, split->bitcode, split->bitcode_len)) == NULL)
		snprintf(split->failure, sizeof(split->failure), "its bitcode did not read back");
	else if (ReadHelperHalf(module, split))
	{
		NameHalves(module, split->prefix, split->parts);
		KeepHalf(module, true);
		if (!LlvmMaterializeAll(module))
			snprintf(split->failure, sizeof(split->failure), "its bitcode did not read back");
	}
	if (split->failure[0] == '\0')
	{
		tm = LLVMCreateTargetMachine(split->target.target, split->target.triple,
									 split->target.cpu, split->target.features,
									 LLVMCodeGenLevelDefault, LLVMRelocDefault,
									 LLVMCodeModelJITDefault);
		if (tm != NULL)
		{
			split->canceled = !JitRunPasses(module, tm);
			LLVMDisposeTargetMachine(tm);
			tm = LLVMCreateTargetMachine(split->target.target, split->target.triple,
										 split->target.cpu, split->target.features,
										 split->target.level, LLVMRelocDefault,
										 LLVMCodeModelJITDefault);
		}
		if (tm == NULL)
			snprintf(split->failure, sizeof(split->failure), "no target machine");
		else
		{
			if (split->canceled || split->diagnosed[0] != '\0' ||
				!LlvmEmitCancellable(tm, module, LLVMObjectFile, &message, &split->object,
									 &split->canceled) ||
				split->diagnosed[0] != '\0')
				snprintf(split->failure, sizeof(split->failure), "%s",
						 split->canceled ? "canceled" : split->diagnosed[0] ? split->diagnosed :
						 message ? message : "");
			LLVMDisposeMessage(message);
			LLVMDisposeTargetMachine(tm);
		}
	}
	if (module != NULL)
		LLVMDisposeModule(module);
	LLVMContextDispose(context);
	LlvmErrorsHelperDone();
	return NULL;
}

/*
 * Split module (before the function passes; its entry function named
 * entry) if it is worth it: the helper starts on the later half, read
 * from bitcode (len bytes: the same module, whatever its entry's name;
 * it must outlive the split), and module keeps the rest.
 * false: module is left whole (nothing started), the caller emits it all.
 */
bool
JitSplitStart(LLVMModuleRef module, const char *entry, const char *bitcode, size_t len,
			  const JitSplitTarget *target, JitSplit *split)
{
	sigset_t	all;
	sigset_t	old;
	int			failed;

	memset(split, 0, sizeof(JitSplit));
	if (RuntimeMaxThreads() < 2 || bitcode == NULL || strlen(entry) >= sizeof(split->prefix) ||
		(split->parts = ChooseHalves(module, entry, &split->part_count)) == NULL)
		return false;
	NameHalves(module, entry, split->parts);
	split->target = *target;
	split->bitcode = bitcode;
	split->bitcode_len = len;
	strcpy(split->prefix, entry);
	LlvmErrorsHelperStarting();
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	failed = pthread_create(&split->thread, NULL, HelperMain, split);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (failed)
	{
		LlvmErrorsHelperDone();
		free(split->parts);
		split->parts = NULL;
		return false;			/* the marks and names are harmless whole */
	}
	split->started = true;
	KeepHalf(module, false);
	return true;
}

/*
 * Wait for the helper (always, once started) and take its object; false
 * and a status if it failed.  An LLVM fatal error on the helper does not
 * return from here: the error bracket's callback reports it.
 */
bool
JitSplitFinish(JitSplit *split, LLVMMemoryBufferRef *object, SilvanStatus *status)
{
	*object = NULL;
	if (!split->started)
		return true;
	LlvmErrorsAwaitHelpers();
	pthread_join(split->thread, NULL);
	split->started = false;
	free(split->parts);
	split->parts = NULL;
	if (split->failure[0] != '\0')
	{
		if (split->object != NULL)
			LLVMDisposeMemoryBuffer(split->object);
		split->object = NULL;
		if (split->canceled)
			return StatusCanceled(status, "compiling the generated code");
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not compile generated code",
						  "LLVM, on the helper thread: %s", split->failure);
	}
	*object = split->object;
	split->object = NULL;
	return true;
}
