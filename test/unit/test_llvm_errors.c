/*
 * test_llvm_errors.c
 *		LLVM's fatal errors and out-of-memory inside and outside the bracket.
 *
 * Each failure runs in a forked child, since it ends the process.  Inside
 * an LlvmErrorsEnter bracket, a module LLVM cannot compile (an i256
 * division: "Unsupported library call operation!", which LLVM reports
 * with report_fatal_error and abort()) and an operator new that fails
 * inside an LLVM-C call must reach the registered callback, with LLVM's
 * message and the out-of-memory flag; the callback exits with a code that
 * says what it saw.  LLVM's bad-alloc slot is reached through LLVM's own
 * report_bad_alloc_error.  After the outermost LlvmErrorsLeave, LLVM's
 * defaults are back (abort, a null from nothrow new); without a callback,
 * or on another thread, the shim prints and aborts; a helper thread's
 * failure (jit_split.c's) reaches the callback on the owner's thread when
 * the owner waits for its helpers.  An error that LLVM
 * diagnoses through the context (SSE disabled, where LLVM would print and
 * exit(1)) becomes a failed status.  The compiler's entry points leave no
 * bracket open, and the JIT refuses to run outside one.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "silvan/compiler.h"
#include "silvan/jit.h"
#include "silvan/llvm_errors.h"
#include "unit.h"

/* What a child's exit code says */
#define EXIT_RETURNED		60	/* the failing call returned */
#define EXIT_FATAL_SEEN		61	/* callback: the expected fatal error */
#define EXIT_OOM_SEEN		62	/* callback: out of memory */
#define EXIT_WRONG_CALL		63	/* callback: another message or flag */
#define EXIT_STATUS_SEEN	64	/* a failed status with LLVM's diagnostic */

/* The message the callback expects, and whether out of memory */
static const char *expected_message;
static bool expected_oom;

/* The test's callback: exit with what it was told */
static void
ExitCallback(const char *message, bool out_of_memory)
{
	if (out_of_memory != expected_oom || strstr(message, expected_message) == NULL)
	{
		fprintf(stderr, "callback got \"%s\" (out of memory: %d)\n", message, out_of_memory);
		_exit(EXIT_WRONG_CALL);
	}
	_exit(out_of_memory ? EXIT_OOM_SEEN : EXIT_FATAL_SEEN);
}

/*
 * Run body in a child with no core dumps; its wait status.  What the child
 * writes to stderr is read to the end and kept in err (size bytes, may be
 * NULL).
 */
static int
RunChild(void (*body) (void), char *err, size_t size)
{
	char		buf[4096];
	size_t		len = 0;
	ssize_t		n;
	int			fds[2];
	int			status = 0;
	pid_t		pid;

	if (pipe(fds) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
	{
		struct rlimit no_core = {0, 0};

		setrlimit(RLIMIT_CORE, &no_core);
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		body();
		_exit(EXIT_RETURNED);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		if ((len += (size_t) n) == sizeof(buf) - 1)
			len = 0;			/* keep draining; the start is lost */
	buf[len] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (err != NULL && size > 0)
	{
		len = len < size - 1 ? len : size - 1;
		memcpy(err, buf, len);
		err[len] = '\0';
	}
	return status;
}

/* Did the child exit with code? */
static bool
ExitedWith(int status, int code)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/* Did the child die of SIGABRT? */
static bool
Aborted(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/* JIT a function LLVM cannot compile: i256 sdiv has no library call */
static void
CompileI256Division(void)
{
	SilvanStatus status;
	JitModule	jm;
	LLVMTypeRef t_wide;
	LLVMTypeRef params[2];
	LLVMValueRef fn;
	LLVMBuilderRef b;
	void	   *address;

	if (!JitModuleCreate("i256_division", &jm, &status))
		_exit(EXIT_WRONG_CALL);
	t_wide = LLVMIntTypeInContext(jm.context, 256);
	params[0] = params[1] = t_wide;
	fn = LLVMAddFunction(jm.module, "divide", LLVMFunctionType(t_wide, params, 2, false));
	b = LLVMCreateBuilderInContext(jm.context);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(jm.context, fn, "b_entry"));
	LLVMBuildRet(b, LLVMBuildSDiv(b, LLVMGetParam(fn, 0), LLVMGetParam(fn, 1), ""));
	LLVMDisposeBuilder(b);
	(void) JitAddModule(&jm, "divide", &address, &status);
}

/* Copy a buffer too large for any allocator through the LLVM-C API */
static void
CopyHugeBuffer(void)
{
	static const char data[1];
	LLVMMemoryBufferRef buffer;

	buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, (size_t) 1 << 62, "huge");
	if (buffer != NULL)
		LLVMDisposeMemoryBuffer(buffer);
}

/* Child: a fatal error in code generation, inside the bracket */
static void
ChildFatalInBracket(void)
{
	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "Unsupported library call operation";
	expected_oom = false;
	LlvmErrorsEnter();
	CompileI256Division();
}

/* Child: operator new fails inside an LLVM-C call, inside the bracket */
static void
ChildNewFailsInBracket(void)
{
	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "operator new";
	expected_oom = true;
	LlvmErrorsEnter();
	CopyHugeBuffer();
}

/* Child: LLVM's bad-alloc report, inside the bracket */
static void
ChildBadAllocInBracket(void)
{
	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "test bad alloc";
	expected_oom = true;
	LlvmErrorsEnter();
	LlvmErrorsReportForTest("test bad alloc", true);
}

/* Child: nested brackets keep the handlers until the outermost closes */
static void
ChildNested(void)
{
	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "operator new";
	expected_oom = true;
	LlvmErrorsEnter();
	LlvmErrorsEnter();
	LlvmErrorsLeave();
	CopyHugeBuffer();
}

/* Child: after the bracket, nothrow new returns null again */
static void
ChildNewAfterLeave(void)
{
	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "operator new";
	expected_oom = true;
	LlvmErrorsEnter();
	LlvmErrorsLeave();
	CopyHugeBuffer();
}

/* Child: after the bracket, LLVM's own fatal error reporting is back */
static void
ChildFatalAfterLeave(void)
{
	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "after leave";
	expected_oom = false;
	LlvmErrorsEnter();
	LlvmErrorsLeave();
	LlvmErrorsReportForTest("after leave", false);
}

/* Child: inside the bracket without a callback */
static void
ChildNoCallback(void)
{
	LlvmErrorsSetCallback(NULL);
	LlvmErrorsEnter();
	LlvmErrorsReportForTest("nobody listens", false);
}

/* A thread other than the bracket's owner reports a fatal error */
static void *
ReportOnThread(void *arg)
{
	LlvmErrorsReportForTest("from another thread", false);
	return NULL;
}

/* Child: the callback is only for the thread that opened the bracket */
static void
ChildOtherThread(void)
{
	pthread_t	thread;

	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "from another thread";
	expected_oom = false;
	LlvmErrorsEnter();
	if (pthread_create(&thread, NULL, ReportOnThread, NULL) == 0)
		pthread_join(thread, NULL);
}

/* A helper thread of the bracket's owner reports a fatal error or runs out of memory */
static void *
ReportOnHelper(void *arg)
{
	LlvmErrorsHelperBegin();
	LlvmErrorsReportForTest(expected_message, expected_oom);
	LlvmErrorsHelperDone();		/* not reached: the helper parks */
	return NULL;
}

/*
 * Child: a helper's failure reaches the owner's callback when the owner
 * waits for its helpers (the helper does not abort the process)
 */
static void
RunHelperFailure(const char *message, bool out_of_memory)
{
	pthread_t	thread;

	LlvmErrorsSetCallback(ExitCallback);
	expected_message = message;
	expected_oom = out_of_memory;
	LlvmErrorsEnter();
	LlvmErrorsHelperStarting();
	if (pthread_create(&thread, NULL, ReportOnHelper, NULL) != 0)
		_exit(EXIT_WRONG_CALL);
	LlvmErrorsAwaitHelpers();
	fprintf(stderr, "the owner's wait returned\n");
}

static void
ChildHelperFatal(void)
{
	RunHelperFailure("from a helper", false);
}

static void
ChildHelperOutOfMemory(void)
{
	RunHelperFailure("helper out of memory", true);
}

/* Child: helpers that finish let the owner go on, and leave LLVM usable */
static void *
HelperThatFinishes(void *arg)
{
	LlvmErrorsHelperBegin();
	LlvmErrorsHelperDone();
	return NULL;
}

static void
ChildHelpersFinish(void)
{
	pthread_t	threads[2];

	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "none expected";
	expected_oom = false;
	LlvmErrorsEnter();
	for (int k = 0; k < 2; k++)
	{
		LlvmErrorsHelperStarting();
		if (pthread_create(&threads[k], NULL, HelperThatFinishes, NULL) != 0)
			_exit(EXIT_WRONG_CALL);
	}
	LlvmErrorsAwaitHelpers();
	for (int k = 0; k < 2; k++)
		pthread_join(threads[k], NULL);
	LlvmErrorsLeave();
	_exit(LlvmErrorsFailed() ? EXIT_WRONG_CALL : EXIT_RETURNED);
}

/* Child: an error LLVM diagnoses (SSE return without SSE) fails the compile */
static void
ChildDiagnosedError(void)
{
	SilvanStatus status;
	JitModule	jm;
	LLVMTypeRef t_double;
	LLVMValueRef fn;
	LLVMBuilderRef b;
	void	   *address;

	LlvmErrorsSetCallback(ExitCallback);
	expected_message = "(none)";
	expected_oom = false;
	LlvmErrorsEnter();
	if (!JitModuleCreate("no_sse", &jm, &status))
		_exit(EXIT_WRONG_CALL);
	t_double = LLVMDoubleTypeInContext(jm.context);
	fn = LLVMAddFunction(jm.module, "twice", LLVMFunctionType(t_double, &t_double, 1, false));
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
							LLVMCreateStringAttribute(jm.context, "target-features", 15,
													  "-sse,-sse2", 10));
	b = LLVMCreateBuilderInContext(jm.context);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(jm.context, fn, "b_entry"));
	LLVMBuildRet(b, LLVMBuildFAdd(b, LLVMGetParam(fn, 0), LLVMGetParam(fn, 0), ""));
	LLVMDisposeBuilder(b);
	if (JitAddModule(&jm, "twice", &address, &status) == NULL &&
		strstr(status.detail, "SSE") != NULL)
	{
		LlvmErrorsLeave();
		_exit(EXIT_STATUS_SEEN);
	}
	fprintf(stderr, "compiled anyway, or: %s: %s\n", status.message, status.detail);
}

/* Failures inside the bracket reach the callback */
static void
TestInsideBracket(void)
{
	static const struct
	{
		const char *name;
		void		(*body) (void);
		int			code;
	}			cases[] = {
		{"fatal error in code generation", ChildFatalInBracket, EXIT_FATAL_SEEN},
		{"operator new in an LLVM-C call", ChildNewFailsInBracket, EXIT_OOM_SEEN},
		{"LLVM's bad-alloc report", ChildBadAllocInBracket, EXIT_OOM_SEEN},
		{"nested brackets", ChildNested, EXIT_OOM_SEEN},
		{"diagnosed error", ChildDiagnosedError, EXIT_STATUS_SEEN},
		{"fatal error on a helper thread", ChildHelperFatal, EXIT_FATAL_SEEN},
		{"out of memory on a helper thread", ChildHelperOutOfMemory, EXIT_OOM_SEEN},
		{"helpers that finish", ChildHelpersFinish, EXIT_RETURNED},
	};
	char		err[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		int			status = RunChild(cases[i].body, err, sizeof(err));

		CHECK_MSG(ExitedWith(status, cases[i].code), "%s: wait status 0x%x, stderr \"%s\"",
				  cases[i].name, status, err);
	}
}

/* Outside the bracket, without a callback and on other threads: defaults */
static void
TestOutsideBracket(void)
{
	char		err[1024];
	int			status;

	status = RunChild(ChildNewAfterLeave, NULL, 0);
	CHECK_MSG(ExitedWith(status, EXIT_RETURNED), "new after leave: wait status 0x%x", status);
	status = RunChild(ChildFatalAfterLeave, err, sizeof(err));
	CHECK_MSG(Aborted(status) && strstr(err, "LLVM ERROR: after leave") != NULL,
			  "fatal after leave: wait status 0x%x, stderr \"%s\"", status, err);
	status = RunChild(ChildNoCallback, err, sizeof(err));
	CHECK_MSG(Aborted(status) && strstr(err, "silvan: LLVM error: nobody listens") != NULL,
			  "no callback: wait status 0x%x, stderr \"%s\"", status, err);
	status = RunChild(ChildOtherThread, err, sizeof(err));
	CHECK_MSG(Aborted(status) && strstr(err, "silvan: LLVM error: from another thread") != NULL,
			  "other thread: wait status 0x%x, stderr \"%s\"", status, err);
}

/* The JIT refuses to run outside a bracket; the compiler closes its own */
static void
TestEntryPoints(void)
{
	SilvanStatus status;
	JitModule	jm;
	Schedule	schedule;
	CompiledForest *compiled;
	size_t		len;
	char	   *text = ReadFile("test/fixtures/binary_logistic.json", &len);
	Forest	   *forest;

	CHECK(LlvmErrorsDepth() == 0);
	CHECK(!JitModuleCreate("outside", &jm, &status));
	CHECK(strstr(status.detail, "outside") != NULL);

	CHECK_MSG(text != NULL, "cannot read test/fixtures/binary_logistic.json");
	if (text == NULL)
		return;
	forest = ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status);
	free(text);
	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	compiled = CompileForest(forest, NULL, NULL, &status);
	CHECK(compiled != NULL);
	CHECK(LlvmErrorsDepth() == 0);
	CompiledForestFree(compiled);
	CHECK(LlvmErrorsDepth() == 0);
	ScheduleDefault(forest, 0, NULL, &schedule);
	strcpy(schedule.representation, "bogus");
	CHECK(CompileForest(forest, &schedule, NULL, &status) == NULL);
	CHECK(LlvmErrorsDepth() == 0);
	CHECK(!LlvmErrorsFailed());
	ForestFree(forest);
}

int
main(void)
{
	TestInsideBracket();
	TestOutsideBracket();
	TestEntryPoints();
	UNIT_DONE();
}
