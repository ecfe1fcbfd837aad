/*
 * llvm_errors.h
 *		LLVM's fatal errors and out-of-memory, inside a bracket.
 *
 * LLVM has no way to return most failures: report_fatal_error and a failed
 * allocation end in abort() or exit(), which in a backend crashes the
 * whole server.  Every stretch of LLVM calls therefore runs between
 * LlvmErrorsEnter and LlvmErrorsLeave, which install handlers for LLVM's
 * fatal errors, LLVM's bad-alloc errors and C++ operator new, and take
 * them down again (brackets nest; the outermost one installs).  A failure
 * inside the bracket calls the registered callback with LLVM's message;
 * the callback must not return and must not longjmp (the adapter's does
 * ereport(FATAL), which exits through proc_exit).  Without a callback, or
 * when it returns, or on a thread other than the one that opened the
 * bracket, the message goes to stderr and the process calls abort(), as
 * LLVM itself would.  Implemented in C++ (src/runtime/llvm_errors.cpp).
 */
#ifndef SILVAN_LLVM_ERRORS_H
#define SILVAN_LLVM_ERRORS_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Told of an LLVM failure; out_of_memory for failed allocations */
typedef void (*LlvmErrorCallback) (const char *message, bool out_of_memory);

/* The callback is kept by llvm_load.c, which is there before LLVM is */
extern void LlvmErrorsSetCallback(LlvmErrorCallback callback);
extern LlvmErrorCallback LlvmErrorsCallback(void);
extern void LlvmErrorsEnter(void);
extern void LlvmErrorsLeave(void);
extern int	LlvmErrorsDepth(void);
extern bool LlvmErrorsFailed(void);

/* Threads that run LLVM for the bracket's owner (llvm_errors.cpp) */
extern void LlvmErrorsHelperStarting(void);
extern void LlvmErrorsHelperBegin(void);
extern void LlvmErrorsHelperDone(void);
extern void LlvmErrorsAwaitHelpers(void);

/* Tests: report a fatal (or bad-alloc) error through LLVM's own reporting */
extern void LlvmErrorsReportForTest(const char *message, bool out_of_memory);

#ifdef __cplusplus
}
#endif

#endif							/* SILVAN_LLVM_ERRORS_H */
