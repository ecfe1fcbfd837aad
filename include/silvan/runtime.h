/*
 * runtime.h
 *		What compiled code needs at run time: the backend's thread pool and
 *		the interrupt flag.
 *
 * The pool is created lazily on the first parallel loop and owned by the
 * process (one per backend).  Worker threads run compiled loop bodies only:
 * they never call PostgreSQL (no palloc, elog, locks) and never raise.
 * Every parallel loop is joined before control returns to the caller.
 */
#ifndef SILVAN_RUNTIME_H
#define SILVAN_RUNTIME_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Cap the threads a parallel loop may use (1 = serial); default: cores */
extern void RuntimeSetMaxThreads(int max_threads);
extern int	RuntimeMaxThreads(void);

/* Number of online cores */
extern int	RuntimeCoreCount(void);

/*
 * A flag compiled code polls between tiles; when it becomes nonzero the
 * batch stops early (its results are then meaningless) so the caller can
 * service the interrupt.  The adapter passes &InterruptPending.
 */
extern void RuntimeSetInterruptFlag(volatile sig_atomic_t *flag);
extern bool RuntimeInterrupted(void);

/* The flag compiled code polls (never NULL: a zero until one is set) */
extern volatile sig_atomic_t *RuntimeInterruptFlag(void);

/*
 * Run body over [begin, end) split into at most max_chunks contiguous
 * chunks (and no more than RuntimeMaxThreads()), chunk c on its own thread,
 * chunk 0 on the caller's; returns the number of chunks used, after every
 * chunk has finished.  A call made inside a parallel loop runs serially as
 * one chunk.
 */
typedef void (*RuntimeLoopBody) (void *context, int64_t begin, int64_t end,
								 int64_t chunk);

/*
 * max_chunks at or above this: the iterations are independent and chunk
 * means nothing to the body, so the loop is split dynamically (grains
 * claimed from a counter) and may take helpers (RuntimeHelp).
 */
#define RUNTIME_ANY_CHUNKS	INT32_MAX
extern int64_t RuntimeParallelFor(RuntimeLoopBody body, void *context,
								  int64_t begin, int64_t end, int64_t max_chunks);

/*
 * A dynamic loop (as max_chunks = RUNTIME_ANY_CHUNKS) whose grains shrink
 * as it runs out: each claim takes a share of the iterations left, about
 * grain_min to grain_max of them, starting at a multiple of grain_min from
 * begin.  Large grains while there is plenty left, small ones at the end,
 * so that the threads finish together.  The caller's thread claims from
 * the front, the others from the back.
 */
extern int64_t RuntimeParallelForGuided(RuntimeLoopBody body, void *context,
										int64_t begin, int64_t end,
										int64_t grain_min, int64_t grain_max);

/*
 * One task in flight on the backend's pipeline thread (task.c), so that a
 * batched scan can read its next batch while compiled code scores this
 * one.  The task's body runs compiled code only, under the same rules as
 * the pool's workers; it may itself run parallel loops on the pool.
 * RuntimeTaskStart returns false when the thread cannot be had (the caller
 * then runs the body itself).  RuntimeTaskWait returns once the task has
 * finished; while it waits it helps with the task's dynamic parallel loops
 * (RuntimeHelp), and a pending interrupt sets *stop so that the body can
 * stop early.  One task at a time.
 */
typedef void (*RuntimeTaskBody) (void *context);

/* Spin up to ns without sleeping until done(arg); true if it came (threads.c) */
extern bool RuntimeSpinUntil(bool (*done) (void *arg), void *arg, int64_t ns);

/*
 * The CPU the calling thread runs on (-1 if unknown), and: leave that CPU
 * if the calling thread runs on it (threads.c)
 */
extern int	RuntimeCurrentCpu(void);
extern void RuntimeLeaveCpu(int cpu);

/* Claim grains of the dynamic parallel loop running now; false if none is */
extern bool RuntimeHelp(void);
/* This thread's dynamic loops are helped by a thread counted in the cap */
extern void RuntimeSetLoopsHelped(bool helped);
extern bool RuntimeTaskStart(RuntimeTaskBody body, void *context);
extern void RuntimeTaskWait(volatile sig_atomic_t *stop);

#endif							/* SILVAN_RUNTIME_H */
