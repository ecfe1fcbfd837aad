/*
 * task.c
 *		The backend's pipeline thread: one task in flight beside the backend.
 *
 * A batched scan with silvan.max_threads > 1 overlaps its two halves: the
 * backend reads and converts the rows of batch N+1 while this thread runs
 * the compiled code over batch N (itself splitting the batch over the
 * pool's workers with RuntimeParallelFor).  The backend then waits for
 * batch N, emits its results and hands over batch N+1.
 *
 * The thread is created lazily on the first task, blocks every signal and
 * lives as long as the process.  Start and wait are a mutex and two
 * condition variables; there is at most one task, so no queue.  The waiting
 * backend does not just sleep: it joins the task's dynamic parallel loop
 * (RuntimeHelp in threads.c) and claims grains of rows like the pool's
 * workers (of a scored batch's guided loop, from the back of the batch:
 * score.c), so both cores stay busy whichever stage is slower.  Between
 * grains, and every 200 microseconds when there is nothing to help with,
 * it looks at the interrupt flag: a pending query cancel sets the task's
 * stop flag, which compiled code polls between tiles, so cancel is never
 * delayed by a whole batch.  The body must not
 * call PostgreSQL: it runs compiled code and plain C only.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "silvan/runtime.h"

#define TASK_WAIT_NS	200000
/* Spin this long for a task to end or begin before sleeping on the lock */
#define TASK_SPIN_NS	300000

typedef struct RuntimeTaskThread
{
	pthread_mutex_t lock;
	pthread_cond_t start;		/* the thread waits here for a task */
	pthread_cond_t done;		/* the backend waits here for the end */
	bool		created;
	bool		failed;			/* pthread_create failed: never try again */
	bool		busy;			/* a task was started and has not finished */
	RuntimeTaskBody body;
	void	   *context;
	int			starter_cpu;	/* where the backend started the task, or -1 */
} RuntimeTaskThread;

static RuntimeTaskThread task_thread = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.start = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER
};

/* Is task_thread.busy what *arg wants? */
static bool
TaskBusyIs(void *arg)
{
	return __atomic_load_n(&task_thread.busy, __ATOMIC_ACQUIRE) == *(bool *) arg;
}

/*
 * Spin up to TASK_SPIN_NS until task_thread.busy equals want (read without
 * the lock); true if it does.  A scan hands batches over every millisecond
 * or so, and waking a sleeping thread costs tens of microseconds on each
 * side of the handover, with the other core idle meanwhile.
 */
static bool
TaskSpinUntil(bool want)
{
	return RuntimeSpinUntil(TaskBusyIs, &want, TASK_SPIN_NS);
}

/* The pipeline thread: run each task it is given, then report */
static void *
TaskThreadMain(void *arg)
{
	RuntimeSetLoopsHelped(true);
	pthread_mutex_lock(&task_thread.lock);
	for (;;)
	{
		if (!task_thread.busy)
		{
			pthread_mutex_unlock(&task_thread.lock);
			TaskSpinUntil(true);
			pthread_mutex_lock(&task_thread.lock);
		}
		while (!task_thread.busy)
			pthread_cond_wait(&task_thread.start, &task_thread.lock);
		pthread_mutex_unlock(&task_thread.lock);
		/* the backend reads on where it is (threads.c: RuntimeLeaveCpu) */
		RuntimeLeaveCpu(task_thread.starter_cpu);
		task_thread.body(task_thread.context);
		pthread_mutex_lock(&task_thread.lock);
		__atomic_store_n(&task_thread.busy, false, __ATOMIC_RELEASE);
		pthread_cond_signal(&task_thread.done);
	}
	return NULL;
}

/* Create the thread with every signal blocked; false if it cannot be */
static bool
TaskThreadEnsure(void)
{
	sigset_t	all;
	sigset_t	old;
	pthread_t	thread;

	if (task_thread.created || task_thread.failed)
		return task_thread.created;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&thread, NULL, TaskThreadMain, NULL) == 0)
	{
		pthread_detach(thread);
		task_thread.created = true;
	}
	else
		task_thread.failed = true;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return task_thread.created;
}

/* Start body(context) on the pipeline thread; false if it cannot run there */
bool
RuntimeTaskStart(RuntimeTaskBody body, void *context)
{
	if (!TaskThreadEnsure())
		return false;
	pthread_mutex_lock(&task_thread.lock);
	if (task_thread.busy)
	{
		pthread_mutex_unlock(&task_thread.lock);
		return false;
	}
	task_thread.body = body;
	task_thread.context = context;
	task_thread.starter_cpu = RuntimeCurrentCpu();
	__atomic_store_n(&task_thread.busy, true, __ATOMIC_RELEASE);
	pthread_cond_signal(&task_thread.start);
	pthread_mutex_unlock(&task_thread.lock);
	return true;
}

/*
 * Wait for the task to finish, helping with its parallel loops and passing
 * a pending interrupt on to *stop
 */
void
RuntimeTaskWait(volatile sig_atomic_t *stop)
{
	bool		spun = false;

	pthread_mutex_lock(&task_thread.lock);
	while (task_thread.busy)
	{
		struct timespec until;

		if (*RuntimeInterruptFlag() != 0)
			*stop = 1;
		pthread_mutex_unlock(&task_thread.lock);
		while (*stop == 0 && RuntimeHelp())
			if (*RuntimeInterruptFlag() != 0)
				*stop = 1;
		/* nothing left to claim: the task is likely finishing its last grains */
		if (!spun)
		{
			spun = true;
			if (TaskSpinUntil(false))
			{
				pthread_mutex_lock(&task_thread.lock);
				break;
			}
		}
		pthread_mutex_lock(&task_thread.lock);
		if (!task_thread.busy)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += TASK_WAIT_NS;
		if (until.tv_nsec >= 1000000000)
		{
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		(void) pthread_cond_timedwait(&task_thread.done, &task_thread.lock, &until);
	}
	pthread_mutex_unlock(&task_thread.lock);
}
