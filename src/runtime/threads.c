/*
 * threads.c
 *		The backend's small thread pool for parallel loops, and the
 *		interrupt flag compiled code polls.
 *
 * The pool is created lazily by the first parallel loop that wants more
 * than one thread and grows up to RuntimeMaxThreads() - 1 workers (the
 * calling thread always runs chunk 0).  A loop's iterations are split into
 * contiguous chunks of nearly equal size; worker w runs chunk w + 1.  The
 * caller publishes the job under the pool's lock, bumps a generation
 * counter and wakes the workers; it runs its own chunk and then waits until
 * every participating worker has reported back, so a parallel loop is
 * always joined before RuntimeParallelFor returns.  Both waits spin a
 * while before they sleep (RUNTIME_SPIN_NS): on a VM a wake-up costs as
 * much as a small batch.  Because the caller
 * waits for exactly the workers it enlisted, a worker can never run a stale
 * job: the next generation starts only after it has finished.
 *
 * A loop whose iterations are independent (max_chunks at or above
 * RUNTIME_ANY_CHUNKS: compiled code passes that for loops with nothing
 * privatized) is split dynamically instead: every participant claims
 * grains of a few iterations from a shared counter until none are left,
 * so a thread that shares its core with another does not hold the loop
 * back.  Such a loop also takes helpers: RuntimeHelp lets a thread that
 * would otherwise wait (the backend, waiting for its pipelined batch)
 * claim grains too.  The caller closes the loop to helpers once the
 * counter runs out and waits for the helpers that joined.
 *
 * A guided loop (RuntimeParallelForGuided) is a dynamic loop whose claims
 * take a share of what is left instead of a fixed grain: the last grains
 * are small, so whoever takes the last one does not leave the others
 * waiting long.  Its caller claims from the front and everyone else from
 * the back, so that each thread walks a run of consecutive iterations: a
 * batch's rows handed out in alternate grains to two threads score slower
 * than the same rows in two runs (a core's prefetching follows its own
 * run).
 *
 * A thread whose loops are known to be helped (RuntimeSetLoopsHelped: the
 * pipeline thread) enlists one worker fewer, down to none, so that the
 * backend, its helper, makes up the cap: with silvan.max_threads = 2 a
 * pipelined scan runs two threads, not three taking turns on two cores.
 *
 * A thread woken to run a chunk may be put on the very CPU of the thread
 * that woke it, though another CPU is idle: Linux places a woken thread
 * near its waker, and a thread that sleeps between queries wakes where the
 * backend is.  The two then take turns on one CPU, each spinning while
 * the other works, until the scheduler balances them (a 1,024-row batch
 * took three to eight times as long on two threads as on one, one pass
 * in two after the process had been idle).  So the caller notes its CPU
 * with the job, and a worker that finds itself on it moves off
 * (RuntimeLeaveCpu: its affinity without that CPU, then back as it was);
 * and a spinning thread yields now and then to a thread it waits for that
 * may share its CPU.  With both, such passes ran as fast as with the two
 * threads pinned to two CPUs.
 *
 * Workers run compiled loop bodies only: no PostgreSQL calls, no memory
 * allocation, nothing that raises.  They block every signal, so signal
 * handlers (and with them PostgreSQL's interrupt handling) run only on the
 * backend's own thread.  Nested parallel loops, and calls that arrive while
 * another thread uses the pool, run serially as a single chunk.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* sched_getcpu, CPU_SET, pthread_setaffinity_np */
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "silvan/runtime.h"

#define RUNTIME_MAX_WORKERS	255
#define RUNTIME_GRAINS_PER_THREAD	16
/*
 * How long a worker spins for the next loop, and the caller for its workers,
 * before sleeping on the pool's lock.  Waking a sleeping thread (a futex
 * wake on each side) can take about as long as a 1,024-row batch of a
 * 100-tree model takes on one core, which would leave a second thread little
 * to gain on such batches.  Spinning costs an idle worker at most this much
 * CPU after the backend's last loop.
 */
#define RUNTIME_SPIN_NS		500000

/*
 * How a dynamic loop's iterations are claimed: grain at a time from the
 * front up to end; or, guided, a share of what is left (one participant's
 * part, halved), clamped to [grain, grain_max] and a multiple of grain,
 * from the front by the loop's caller and from the back by the others
 */
typedef struct GrainRule
{
	int64_t		begin;
	int64_t		end;
	int64_t		grain;
	int64_t		grain_max;
	int64_t		share;			/* guided: iterations left / share */
	bool		guided;
} GrainRule;

/* A guided loop's unclaimed iterations: offsets from begin, both 32 bits */
#define SPAN(front, back)	(((uint64_t) (front) << 32) | (uint64_t) (back))
#define SPAN_FRONT(span)	((int64_t) ((span) >> 32))
#define SPAN_BACK(span)		((int64_t) ((span) & 0xffffffffu))
#define GUIDED_MAX_ITERATIONS	((int64_t) INT32_MAX)

typedef struct RuntimePool
{
	pthread_mutex_t lock;
	pthread_cond_t work;		/* workers wait here for a new generation */
	pthread_cond_t done;		/* the caller waits here for its workers */
	pthread_mutex_t call;		/* one parallel loop at a time */
	int			num_workers;
	pthread_t	threads[RUNTIME_MAX_WORKERS];
	uint64_t	born[RUNTIME_MAX_WORKERS];	/* generation when created */
	uint64_t	generation;
	/* the current job */
	RuntimeLoopBody body;
	void	   *context;
	int64_t		begin;
	int64_t		end;
	int64_t		chunks;
	int64_t		pending;		/* enlisted workers not yet finished */
	int			caller_cpu;		/* where the caller runs its chunk, or -1 */
	/* dynamic loops */
	bool		dynamic;
	bool		open;			/* helpers may join */
	int64_t		helpers;		/* helpers that joined and have not left */
	GrainRule	grains;
	int64_t		next;			/* next unclaimed iteration (atomic) */
	uint64_t	span;			/* guided: the unclaimed ones, SPAN (atomic) */
} RuntimePool;

static RuntimePool pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
	.call = PTHREAD_MUTEX_INITIALIZER
};
static int	max_threads = 0;	/* 0: not set, use the core count */
static __thread bool in_parallel_loop = false;
static __thread bool loops_are_helped = false;
static volatile sig_atomic_t no_interrupt = 0;
static volatile sig_atomic_t *interrupt_flag = &no_interrupt;

/* Number of online cores */
int
RuntimeCoreCount(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (n > RUNTIME_MAX_WORKERS + 1 ? RUNTIME_MAX_WORKERS + 1 : (int) n);
}

/* Cap the threads a parallel loop may use (1 = serial) */
void
RuntimeSetMaxThreads(int n)
{
	if (n < 1)
		n = 1;
	if (n > RUNTIME_MAX_WORKERS + 1)
		n = RUNTIME_MAX_WORKERS + 1;
	/* atomic: a loop of the pipeline thread may read it meanwhile */
	__atomic_store_n(&max_threads, n, __ATOMIC_RELAXED);
}

/* Threads a parallel loop may use */
int
RuntimeMaxThreads(void)
{
	int			n = __atomic_load_n(&max_threads, __ATOMIC_RELAXED);

	return n > 0 ? n : RuntimeCoreCount();
}

/*
 * Declare that the calling thread's dynamic loops will be helped by another
 * thread that counts against RuntimeMaxThreads() (the pipeline thread's
 * loops, helped by the waiting backend): they then enlist one worker fewer,
 * so that the threads of a pipelined scan never outnumber the cap
 */
void
RuntimeSetLoopsHelped(bool helped)
{
	loops_are_helped = helped;
}

/* Register the flag compiled code polls between tiles */
void
RuntimeSetInterruptFlag(volatile sig_atomic_t *flag)
{
	interrupt_flag = flag ? flag : &no_interrupt;
}

/* The flag compiled code polls */
volatile sig_atomic_t *
RuntimeInterruptFlag(void)
{
	return interrupt_flag;
}

/* Is an interrupt pending (so the last batch may have stopped early)? */
bool
RuntimeInterrupted(void)
{
	return *interrupt_flag != 0;
}

/* Bounds of chunk c of chunks over [begin, end) */
static void
ChunkBounds(int64_t begin, int64_t end, int64_t chunks, int64_t c,
			int64_t *lo, int64_t *hi)
{
	int64_t		n = end - begin;
	int64_t		q = n / chunks;
	int64_t		r = n % chunks;

	*lo = begin + c * q + (c < r ? c : r);
	*hi = *lo + q + (c < r ? 1 : 0);
}

/* Iterations a guided claim takes when left are unclaimed */
static int64_t
GuidedGrain(const GrainRule *rule, int64_t left)
{
	int64_t		size = left / rule->share;

	size -= size % rule->grain;
	if (size < rule->grain)
		size = rule->grain;
	if (size > rule->grain_max)
		size = rule->grain_max;
	return size < left ? size : left;
}

/*
 * A guided claim from the front or the back: its first iteration, or end
 * when none is left.  Every claim starts at a multiple of grain from begin.
 */
static int64_t
ClaimGuided(const GrainRule *rule, bool from_back, int64_t *hi)
{
	uint64_t	span = __atomic_load_n(&pool.span, __ATOMIC_RELAXED);

	for (;;)
	{
		int64_t		front = SPAN_FRONT(span);
		int64_t		back = SPAN_BACK(span);
		int64_t		size;
		int64_t		lo;

		if (front >= back)
			return rule->end;
		size = GuidedGrain(rule, back - front);
		lo = front;
		if (from_back)
		{
			lo = back - size;
			lo -= lo % rule->grain;
			if (lo < front)
				lo = front;
			size = back - lo;
		}
		if (__atomic_compare_exchange_n(&pool.span, &span,
										from_back ? SPAN(front, lo) : SPAN(lo + size, back),
										true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		{
			*hi = rule->begin + lo + size;
			return rule->begin + lo;
		}
	}
}

/* Claim the next grain by the rule: its first iteration, or end when none is left */
static int64_t
ClaimGrain(const GrainRule *rule, int64_t chunk, int64_t *hi)
{
	int64_t		lo;

	if (rule->guided)
		return ClaimGuided(rule, chunk != 0, hi);
	lo = __atomic_fetch_add(&pool.next, rule->grain, __ATOMIC_RELAXED);
	if (lo >= rule->end)
		return rule->end;
	*hi = lo + rule->grain < rule->end ? lo + rule->grain : rule->end;
	return lo;
}

/* Has the dynamic loop running now no unclaimed iterations left? */
static bool
LoopClaimed(void)
{
	if (pool.grains.guided)
	{
		uint64_t	span = __atomic_load_n(&pool.span, __ATOMIC_RELAXED);

		return SPAN_FRONT(span) >= SPAN_BACK(span);
	}
	return __atomic_load_n(&pool.next, __ATOMIC_RELAXED) >= pool.end;
}

/* Claim grains of a dynamic loop until none are left; chunk names the claimer */
static void
ClaimGrains(RuntimeLoopBody body, void *context, GrainRule rule, int64_t chunk)
{
	for (;;)
	{
		int64_t		hi;
		int64_t		lo = ClaimGrain(&rule, chunk, &hi);

		if (lo >= rule.end)
			return;
		body(context, lo, hi, chunk);
	}
}

/* Nanoseconds on the monotonic clock */
static int64_t
ClockNs(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t) now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Spin up to ns, without the lock, until done(arg); true if it came */
bool
RuntimeSpinUntil(bool (*done) (void *arg), void *arg, int64_t ns)
{
	int64_t		until = ClockNs() + ns;

	for (int i = 0;; i++)
	{
		if (done(arg))
			return true;
		if ((i & 63) == 63 && ClockNs() > until)
			return false;
		/* a thread it waits for may share its CPU (see the top of the file) */
		if ((i & 1023) == 1023)
			sched_yield();
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
}

/* See runtime.h */
int
RuntimeCurrentCpu(void)
{
#ifdef __linux__
	return sched_getcpu();
#else
	return -1;
#endif
}

/*
 * See runtime.h: if the calling thread runs on cpu and may run elsewhere,
 * set its affinity to the others (which moves it now), then back to what
 * it was (which leaves it where it is)
 */
void
RuntimeLeaveCpu(int cpu)
{
#ifdef __linux__
	cpu_set_t	allowed;
	cpu_set_t	others;

	if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getcpu() != cpu ||
		pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0)
		return;
	others = allowed;
	CPU_CLR(cpu, &others);
	if (CPU_COUNT(&others) == 0)
		return;
	if (pthread_setaffinity_np(pthread_self(), sizeof others, &others) == 0)
		(void) pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
#else
	(void) cpu;
#endif
}

/* Has the pool moved past generation *arg? */
static bool
NewGeneration(void *arg)
{
	return __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE) != *(uint64_t *) arg;
}

/* Have the caller's workers and helpers all reported back? */
static bool
LoopJoined(void *arg)
{
	(void) arg;
	return __atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE) == 0 &&
		__atomic_load_n(&pool.helpers, __ATOMIC_ACQUIRE) == 0;
}

/* A worker: wait for a generation that enlists it, run its chunk, report */
static void *
WorkerMain(void *arg)
{
	int64_t		index = (int64_t) (intptr_t) arg;
	uint64_t	seen = 0;

	in_parallel_loop = true;
	pthread_mutex_lock(&pool.lock);
	seen = pool.born[index];
	for (;;)
	{
		int64_t		lo;
		int64_t		hi;

		if (pool.generation == seen)
		{
			pthread_mutex_unlock(&pool.lock);
			(void) RuntimeSpinUntil(NewGeneration, &seen, RUNTIME_SPIN_NS);
			pthread_mutex_lock(&pool.lock);
		}
		while (pool.generation == seen)
			pthread_cond_wait(&pool.work, &pool.lock);
		seen = pool.generation;
		if (index + 1 >= pool.chunks)
			continue;
		pthread_mutex_unlock(&pool.lock);
		RuntimeLeaveCpu(pool.caller_cpu);
		if (pool.dynamic)
			ClaimGrains(pool.body, pool.context, pool.grains, index + 1);
		else
		{
			ChunkBounds(pool.begin, pool.end, pool.chunks, index + 1, &lo, &hi);
			pool.body(pool.context, lo, hi, index + 1);
		}
		pthread_mutex_lock(&pool.lock);
		__atomic_store_n(&pool.pending, pool.pending - 1, __ATOMIC_RELEASE);
		if (pool.pending == 0)
			pthread_cond_signal(&pool.done);
	}
	return NULL;
}

/* Grow the pool to n workers if possible; returns how many there are */
static int
EnsureWorkers(int n)
{
	sigset_t	all;
	sigset_t	old;

	if (n > RUNTIME_MAX_WORKERS)
		n = RUNTIME_MAX_WORKERS;
	if (pool.num_workers >= n)
		return pool.num_workers;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&pool.lock);
	while (pool.num_workers < n &&
		   (pool.born[pool.num_workers] = pool.generation, true) &&
		   pthread_create(&pool.threads[pool.num_workers], NULL, WorkerMain,
						  (void *) (intptr_t) pool.num_workers) == 0)
	{
		pthread_detach(pool.threads[pool.num_workers]);
		pool.num_workers++;
	}
	pthread_mutex_unlock(&pool.lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pool.num_workers;
}

/*
 * Run body over [begin, end) in up to max_chunks chunks; joined on return.
 * A dynamic loop is guided when grain_max > 0 (grains of about grain_min
 * to grain_max iterations) and its iterations fit the span's 32 bits,
 * else claimed in RUNTIME_GRAINS_PER_THREAD grains a thread.
 */
static int64_t
ParallelRun(RuntimeLoopBody body, void *context, int64_t begin, int64_t end,
			int64_t max_chunks, int64_t grain_min, int64_t grain_max)
{
	bool		dynamic = max_chunks >= RUNTIME_ANY_CHUNKS;
	bool		helped = dynamic && loops_are_helped;
	int64_t		chunks = RuntimeMaxThreads() - (helped ? 1 : 0);
	int64_t		lo;
	int64_t		hi;

	if (end <= begin)
		return 0;
	if (chunks > max_chunks)
		chunks = max_chunks;
	if (chunks > end - begin)
		chunks = end - begin;
	if (chunks < 1)
		chunks = 1;
	if ((chunks <= 1 && !helped) || in_parallel_loop ||
		pthread_mutex_trylock(&pool.call) != 0)
	{
		body(context, begin, end, 0);
		return 1;
	}
	if (1 + (int64_t) EnsureWorkers((int) chunks - 1) < chunks)
		chunks = 1 + pool.num_workers;
	if (chunks <= 1 && !helped)
	{
		pthread_mutex_unlock(&pool.call);
		body(context, begin, end, 0);
		return 1;
	}
	pthread_mutex_lock(&pool.lock);
	pool.body = body;
	pool.context = context;
	pool.begin = begin;
	pool.end = end;
	pool.chunks = chunks;
	pool.pending = chunks - 1;
	pool.caller_cpu = RuntimeCurrentCpu();
	pool.dynamic = dynamic;
	pool.grains = (GrainRule) {
		.begin = begin, .end = end, .grain = grain_min, .grain_max = grain_max,
		.share = 2 * (chunks + (helped ? 1 : 0)),
		.guided = grain_max > 0 && end - begin <= GUIDED_MAX_ITERATIONS
	};
	if (!pool.grains.guided)
		pool.grains.grain = (end - begin) / ((chunks + (helped ? 1 : 0)) * RUNTIME_GRAINS_PER_THREAD);
	if (pool.grains.grain < 1)
		pool.grains.grain = 1;
	pool.next = begin;
	pool.span = SPAN(0, end - begin);
	pool.open = pool.dynamic;
	__atomic_store_n(&pool.generation, pool.generation + 1, __ATOMIC_RELEASE);
	if (chunks > 1)
		pthread_cond_broadcast(&pool.work);
	pthread_mutex_unlock(&pool.lock);

	in_parallel_loop = true;
	if (pool.dynamic)
		ClaimGrains(body, context, pool.grains, 0);
	else
	{
		ChunkBounds(begin, end, chunks, 0, &lo, &hi);
		body(context, lo, hi, 0);
	}
	in_parallel_loop = false;

	pthread_mutex_lock(&pool.lock);
	pool.open = false;
	if (pool.pending > 0 || pool.helpers > 0)
	{
		pthread_mutex_unlock(&pool.lock);
		(void) RuntimeSpinUntil(LoopJoined, NULL, RUNTIME_SPIN_NS);
		pthread_mutex_lock(&pool.lock);
	}
	while (pool.pending > 0 || pool.helpers > 0)
		pthread_cond_wait(&pool.done, &pool.lock);
	pthread_mutex_unlock(&pool.lock);
	pthread_mutex_unlock(&pool.call);
	return chunks;
}

/* Run body over [begin, end) in up to max_chunks chunks; joined on return */
int64_t
RuntimeParallelFor(RuntimeLoopBody body, void *context, int64_t begin,
				   int64_t end, int64_t max_chunks)
{
	return ParallelRun(body, context, begin, end, max_chunks, 1, 0);
}

/* See runtime.h: a dynamic loop of shrinking grains */
int64_t
RuntimeParallelForGuided(RuntimeLoopBody body, void *context, int64_t begin,
						 int64_t end, int64_t grain_min, int64_t grain_max)
{
	if (grain_min < 1)
		grain_min = 1;
	if (grain_max < grain_min)
		grain_max = grain_min;
	return ParallelRun(body, context, begin, end, RUNTIME_ANY_CHUNKS, grain_min, grain_max);
}

/* Claim grains of the dynamic loop running now, if any; false if none is open */
bool
RuntimeHelp(void)
{
	RuntimeLoopBody body;
	void	   *context;
	GrainRule	grains;
	int64_t		chunk;

	pthread_mutex_lock(&pool.lock);
	if (!pool.open || LoopClaimed())
	{
		pthread_mutex_unlock(&pool.lock);
		return false;
	}
	pool.helpers++;
	body = pool.body;
	context = pool.context;
	grains = pool.grains;
	chunk = pool.chunks;
	pthread_mutex_unlock(&pool.lock);

	in_parallel_loop = true;
	ClaimGrains(body, context, grains, chunk);
	in_parallel_loop = false;

	pthread_mutex_lock(&pool.lock);
	__atomic_store_n(&pool.helpers, pool.helpers - 1, __ATOMIC_RELEASE);
	if (pool.helpers == 0 && pool.pending == 0)
		pthread_cond_signal(&pool.done);
	pthread_mutex_unlock(&pool.lock);
	return true;
}
