/*
 * llvm_load.c
 *		LLVM, loaded when the first compile needs it.
 *
 * A backend that scores with machine code from the code cache calls no
 * LLVM at all (host_id.c, code_cache.c and elf_link.c find and link the
 * code), so it should not pay for loading LLVM: the dynamic linking of
 * libLLVM alone costs a fresh backend tens of milliseconds, many times the
 * rest of its first prediction.  So the server module, silvan.so, does not
 * link LLVM, much as PostgreSQL keeps its own JIT in llvmjit.so.
 *
 * silvan.so's calls into LLVM (the LLVM-C API, and the few functions of
 * silvan's C++ shims: llvm_errors.cpp, llvm_emit.cpp, llvm_lazy.cpp) go
 * through stubs generated when it is built (scripts/llvm_stubs.sh writes
 * llvm_stubs.c): each stub jumps through its slot in a table.  The shims
 * are built into silvan_llvm.so, which links libLLVM, installed beside
 * silvan.so.  LlvmLoad opens it (found in the directory of the library
 * holding this code) and fills every slot with dlsym; the compiler's entry
 * points call it first, so a missing or broken silvan_llvm.so is an error
 * with a status.  Until then each slot points to a resolver that loads
 * LLVM and goes on, so a call on a path no entry point prepared still
 * works; its one failure mode (LLVM cannot be loaded there) prints why
 * and aborts, as LLVM's own fatal errors would.  The stubs are hidden:
 * nothing else in the process (PostgreSQL's llvmjit.so) binds to them.
 *
 * Programs linked with LLVM directly (unit tests, fuzzers, benchmarks)
 * have no stubs: the table's symbols are weak and absent there, and
 * LlvmLoad has nothing to do.  LLVM's error callback is kept here, so the
 * adapter registers it when silvan is loaded, without loading LLVM.
 * Nothing here includes postgres.h or raises.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* dladdr */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "silvan/llvm_errors.h"
#include "silvan/llvm_load.h"

#define LLVM_MODULE_NAME	"silvan_llvm.so"

/* The stubs' table (llvm_stubs.c), absent from programs linked with LLVM */
extern const int llvm_stub_count __attribute__((weak));
extern const char *const llvm_stub_names[] __attribute__((weak));
extern void *llvm_stub_slots[] __attribute__((weak));

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool load_done;
static char load_error[SILVAN_DETAIL_LEN];
static LlvmErrorCallback errors_callback;

/* Register what a failure inside a bracket calls (NULL: print and abort) */
void
LlvmErrorsSetCallback(LlvmErrorCallback callback)
{
	errors_callback = callback;
}

/* The registered callback (llvm_errors.cpp) */
LlvmErrorCallback
LlvmErrorsCallback(void)
{
	return errors_callback;
}

/* Where silvan_llvm.so is: beside the library holding this code; false if unknown */
static bool
LlvmModulePath(char *path, size_t size)
{
	Dl_info		info;
	const char *slash;

	if (dladdr((void *) LlvmModulePath, &info) == 0 || info.dli_fname == NULL ||
		(slash = strrchr(info.dli_fname, '/')) == NULL)
		return false;
	return snprintf(path, size, "%.*s/%s", (int) (slash - info.dli_fname), info.dli_fname,
					LLVM_MODULE_NAME) < (int) size;
}

/* Open silvan_llvm.so and fill every stub's slot; once per process */
static void
LlvmLoadOnce(void)
{
	char		path[4096];
	void	   *handle;
	void	  **resolved;

	if (&llvm_stub_count == NULL)
	{
		load_done = true;		/* linked with LLVM: nothing to load */
		return;
	}
	if (!LlvmModulePath(path, sizeof(path)))
	{
		snprintf(load_error, sizeof(load_error), "The directory of silvan's library is unknown.");
		return;
	}
	if ((handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL)
	{
		snprintf(load_error, sizeof(load_error), "%s", dlerror());
		return;
	}
	if ((resolved = calloc(llvm_stub_count, sizeof(void *))) == NULL)
	{
		snprintf(load_error, sizeof(load_error), "Out of memory.");
		return;
	}
	for (int i = 0; i < llvm_stub_count; i++)
		if ((resolved[i] = dlsym(handle, llvm_stub_names[i])) == NULL)
		{
			snprintf(load_error, sizeof(load_error), "%s does not define %s.", path,
					 llvm_stub_names[i]);
			free(resolved);
			return;
		}
	/* all or nothing: a slot changes only once every name resolved */
	for (int i = 0; i < llvm_stub_count; i++)
		__atomic_store_n(&llvm_stub_slots[i], resolved[i], __ATOMIC_RELEASE);
	free(resolved);
	__atomic_store_n(&load_done, true, __ATOMIC_RELEASE);
}

/* Load LLVM if it is not loaded yet; false and a status if it cannot be */
bool
LlvmLoad(SilvanStatus *status)
{
	pthread_once(&load_once, LlvmLoadOnce);
	if (!load_done)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not load LLVM", "%s", load_error);
	return true;
}

/* Has this process loaded LLVM (or been linked with it)? */
bool
LlvmLoaded(void)
{
	return &llvm_stub_count == NULL || __atomic_load_n(&load_done, __ATOMIC_ACQUIRE);
}

/* A stub was called before LLVM was loaded: load it, or print why not and abort */
void *
LlvmStubResolve(int index)
{
	SilvanStatus status;
	static const char prefix[] = "silvan: could not load LLVM: ";

	if (!LlvmLoad(&status))
	{
		if (write(2, prefix, sizeof(prefix) - 1) < 0 ||
			write(2, status.detail, strlen(status.detail)) < 0 || write(2, "\n", 1) < 0)
			abort();
		abort();
	}
	return __atomic_load_n(&llvm_stub_slots[index], __ATOMIC_ACQUIRE);
}
