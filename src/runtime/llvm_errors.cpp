/*
 * llvm_errors.cpp
 *		Handlers for LLVM's fatal errors and out-of-memory, installed only
 *		while silvan runs LLVM code.  The project's only C++.
 *
 * LLVM reports what it cannot return through three process-wide hooks:
 * the fatal error handler (report_fatal_error: "Cannot select", an
 * unsupported library call, ...), the bad-alloc handler (a failed malloc
 * inside LLVM) and the C++ new handler (a failed operator new).  Left
 * alone, each prints a line and calls abort() or exit(); in a backend
 * that is a crash, and the postmaster restarts every session.  Neither
 * the new handler nor LLVM's handlers are reachable from the LLVM-C API,
 * hence this file, in the manner of PostgreSQL's llvmjit_error.cpp.
 *
 * The outermost LlvmErrorsEnter installs all three, nested brackets only
 * count, and the matching LlvmErrorsLeave puts back what was there: the
 * previous new handler exactly; LLVM's two slots are simply emptied, since
 * LLVM offers no way to read them and asserts that a slot is empty when
 * one is installed.  Every LLVM user we share a backend with (PostgreSQL's
 * own JIT provider first) installs its handlers only around its own calls,
 * so outside anyone's bracket the slots are empty and emptying them is
 * restoring them.  Handlers are therefore never in place while PostgreSQL
 * or another extension runs, and never while compiled code runs.
 *
 * A failure undoes the bracket first (so the exit path runs with the
 * process's usual handlers), marks LLVM as unusable for the rest of the
 * process (LlvmErrorsFailed: its state may be half-updated) and then calls
 * the callback, but only on the thread that opened the outermost bracket:
 * the adapter's callback is ereport(FATAL), which PostgreSQL allows on the
 * backend's own thread alone.  Anything else (no callback, another thread,
 * a callback that returns) writes the message to stderr without
 * allocating and calls abort(), which is what LLVM would have done.
 * Nothing here throws or longjmps: LLVM is built without exceptions, and
 * a longjmp through its frames would leave its locks and state broken.
 *
 * Helper threads (jit_split.c emits half a module on one) run LLVM for the
 * bracket's owner: the owner counts each in (LlvmErrorsHelperStarting)
 * before starting it, the helper says so first (LlvmErrorsHelperBegin) and
 * counts itself out when done (LlvmErrorsHelperDone), and the owner waits
 * for all of them (LlvmErrorsAwaitHelpers) before it leaves the bracket.
 * A failure on a helper is kept, handed to the waiting owner, and the
 * helper then parks for good, never returning into LLVM; the owner reports
 * it as its own, through the callback (so a helper's out-of-memory ends
 * the session, as the owner's would, instead of aborting the server).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <new>

#include <llvm/Support/ErrorHandling.h>

#include "silvan/llvm_errors.h"

static pthread_mutex_t errors_lock = PTHREAD_MUTEX_INITIALIZER;
static int	errors_depth;
static pthread_t errors_owner;
static std::new_handler errors_saved_new_handler;
static volatile bool errors_failed;

/* Helper threads of the bracket's owner (see above) */
static pthread_cond_t errors_helpers_changed = PTHREAD_COND_INITIALIZER;
static int	errors_helpers;		/* started and not done */
static bool errors_helper_failed;
static bool errors_helper_out_of_memory;
static char errors_helper_message[512];
static thread_local bool errors_on_helper;

/* Write text to stderr without allocating */
static void
WriteStderr(const char *text)
{
	size_t		len = strlen(text);

	while (len > 0)
	{
		ssize_t		n = write(STDERR_FILENO, text, len);

		if (n <= 0)
			return;
		text += n;
		len -= (size_t) n;
	}
}

/* Take the handlers down and restore the previous new handler; lock held */
static void
UninstallHandlers(void)
{
	std::set_new_handler(errors_saved_new_handler);
	llvm::remove_bad_alloc_error_handler();
	llvm::remove_fatal_error_handler();
	errors_saved_new_handler = nullptr;
	errors_depth = 0;
}

/*
 * A helper's failure: keep it for the owner and wake it, then park this
 * thread for good; lock held on entry
 */
[[noreturn]] static void
ParkHelper(const char *message, bool out_of_memory)
{
	sigset_t	all;

	errors_failed = true;
	if (!errors_helper_failed)
	{
		errors_helper_failed = true;
		errors_helper_out_of_memory = out_of_memory;
		strncpy(errors_helper_message, message, sizeof(errors_helper_message) - 1);
	}
	pthread_cond_broadcast(&errors_helpers_changed);
	pthread_mutex_unlock(&errors_lock);
	sigfillset(&all);
	for (;;)
		sigsuspend(&all);
}

/* Report a failure to the callback, or print it and abort */
[[noreturn]] static void
Fail(const char *message, bool out_of_memory)
{
	bool		owner;

	pthread_mutex_lock(&errors_lock);
	if (errors_on_helper && errors_depth > 0)
		ParkHelper(message, out_of_memory);
	owner = errors_depth > 0 && pthread_equal(pthread_self(), errors_owner);
	errors_failed = true;
	if (errors_depth > 0)
		UninstallHandlers();
	pthread_mutex_unlock(&errors_lock);

	if (owner && LlvmErrorsCallback() != nullptr)
		LlvmErrorsCallback()(message, out_of_memory);
	WriteStderr(out_of_memory ? "silvan: LLVM ran out of memory: " : "silvan: LLVM error: ");
	WriteStderr(message);
	WriteStderr("\n");
	abort();
}

/* LLVM's fatal error handler: report_fatal_error */
static void
FatalErrorHandler(void *user_data, const char *reason, bool gen_crash_diag)
{
	Fail(reason, false);
}

/* LLVM's bad-alloc handler: malloc failed inside LLVM */
static void
BadAllocHandler(void *user_data, const char *reason, bool gen_crash_diag)
{
	Fail(reason, true);
}

/* The C++ new handler: operator new failed */
static void
NewHandler(void)
{
	Fail("operator new failed", true);
}

/* Open a bracket of LLVM calls; the outermost installs the handlers */
void
LlvmErrorsEnter(void)
{
	pthread_mutex_lock(&errors_lock);
	if (errors_depth++ == 0)
	{
		errors_owner = pthread_self();
		errors_saved_new_handler = std::set_new_handler(NewHandler);
		llvm::install_bad_alloc_error_handler(BadAllocHandler);
		llvm::install_fatal_error_handler(FatalErrorHandler);
	}
	pthread_mutex_unlock(&errors_lock);
}

/* Close a bracket; the outermost restores what was there before */
void
LlvmErrorsLeave(void)
{
	pthread_mutex_lock(&errors_lock);
	if (errors_depth == 1)
		UninstallHandlers();
	else if (errors_depth > 1)
		errors_depth--;
	pthread_mutex_unlock(&errors_lock);
}

/* Owner: a helper thread is about to start */
void
LlvmErrorsHelperStarting(void)
{
	pthread_mutex_lock(&errors_lock);
	errors_helpers++;
	pthread_mutex_unlock(&errors_lock);
}

/* Helper, first: this thread's failures go to the owner */
void
LlvmErrorsHelperBegin(void)
{
	errors_on_helper = true;
}

/* Helper, last: done without failing */
void
LlvmErrorsHelperDone(void)
{
	pthread_mutex_lock(&errors_lock);
	errors_helpers--;
	pthread_cond_broadcast(&errors_helpers_changed);
	pthread_mutex_unlock(&errors_lock);
}

/*
 * Owner: wait until every helper is done; a helper's failure is reported
 * here as the owner's own (the callback; no return)
 */
void
LlvmErrorsAwaitHelpers(void)
{
	bool		failed;

	pthread_mutex_lock(&errors_lock);
	while (errors_helpers > 0 && !errors_helper_failed)
		pthread_cond_wait(&errors_helpers_changed, &errors_lock);
	failed = errors_helper_failed;
	pthread_mutex_unlock(&errors_lock);
	if (failed)
		Fail(errors_helper_message, errors_helper_out_of_memory);
}

/* How many brackets are open */
int
LlvmErrorsDepth(void)
{
	int			depth;

	pthread_mutex_lock(&errors_lock);
	depth = errors_depth;
	pthread_mutex_unlock(&errors_lock);
	return depth;
}

/* Has LLVM failed in this process?  Its state may then be inconsistent */
bool
LlvmErrorsFailed(void)
{
	return errors_failed;
}

/* Tests: a fatal or bad-alloc error, reported by LLVM as LLVM reports them */
void
LlvmErrorsReportForTest(const char *message, bool out_of_memory)
{
	if (out_of_memory)
		llvm::report_bad_alloc_error(message);
	llvm::report_fatal_error(message);
}
