/*
 * test_runtime.c
 *		The thread pool, the interrupt flag, and compiled code under both.
 *
 * RuntimeParallelFor must cover every iteration exactly once, in at most
 * the chunks asked for and the threads allowed, run nested calls serially,
 * and be joined on return; dynamic loops too, with helpers.  Guided loops
 * claim shrinking grains that start on multiples of the smallest, the
 * caller's from the front and the others' from the back.  A task on the
 * pipeline thread runs once, its waiter helps with its loops, and a
 * pending interrupt reaches the task's stop flag.  A compiled batch whose interrupt flag is set
 * stops early (serial and parallel outer loops alike) and leaves the flag
 * for the caller; with the flag clear it gives the interpreter's margins.
 * A thread that finds itself on a given CPU leaves it, its affinity kept.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* cpu_set_t, pthread_getaffinity_np */
#endif
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "silvan/compiler.h"
#include "silvan/runtime.h"
#include "unit.h"

/* What the test loop bodies record */
typedef struct Coverage
{
	atomic_int	hits[1000];
	atomic_int	chunks_seen[64];
	atomic_int	nested_chunks;
	pthread_t	threads[64];
	atomic_int	num_threads;
} Coverage;

/* Mark every iteration of [begin, end) and the chunk that ran it */
static void
MarkBody(void *context, int64_t begin, int64_t end, int64_t chunk)
{
	Coverage   *c = context;

	for (int64_t i = begin; i < end; i++)
		atomic_fetch_add(&c->hits[i], 1);
	atomic_fetch_add(&c->chunks_seen[chunk], 1);
}

/* A body that itself runs a parallel loop, which must run as one chunk */
static void
NestedBody(void *context, int64_t begin, int64_t end, int64_t chunk)
{
	Coverage   *c = context;
	int64_t		inner = RuntimeParallelFor(MarkBody, c, begin, end, 8);

	atomic_fetch_add(&c->nested_chunks, (int) inner);
}

/* Every iteration once; chunks within the limits */
static void
TestParallelFor(void)
{
	static Coverage c;

	for (int threads = 1; threads <= 4; threads++)
	{
		RuntimeSetMaxThreads(threads);
		CHECK(RuntimeMaxThreads() == threads);
		for (int64_t max_chunks = 1; max_chunks <= 6; max_chunks += 5)
		{
			int64_t		used;
			bool		once = true;

			memset(&c, 0, sizeof(c));
			used = RuntimeParallelFor(MarkBody, &c, 3, 1000, max_chunks);
			CHECK(used >= 1 && used <= threads && used <= max_chunks);
			for (int i = 0; i < 1000; i++)
				once &= atomic_load(&c.hits[i]) == (i >= 3);
			CHECK_MSG(once, "%d threads, %lld chunks", threads, (long long) max_chunks);
			for (int64_t k = 0; k < used; k++)
				CHECK(atomic_load(&c.chunks_seen[k]) == 1);
		}
		memset(&c, 0, sizeof(c));
		CHECK(RuntimeParallelFor(MarkBody, &c, 5, 5, 4) == 0);
		CHECK(RuntimeParallelFor(MarkBody, &c, 0, 2, 8) <= 2);
		memset(&c, 0, sizeof(c));
		{
			int64_t		used = RuntimeParallelFor(NestedBody, &c, 0, 1000, 8);
			bool		once = true;

			for (int i = 0; i < 1000; i++)
				once &= atomic_load(&c.hits[i]) == 1;
			CHECK(once);
			CHECK(atomic_load(&c.nested_chunks) == used);
		}
	}
	RuntimeSetMaxThreads(0);
	CHECK(RuntimeMaxThreads() == 1);
	RuntimeSetMaxThreads(1);
	CHECK(RuntimeCoreCount() >= 1);
}

/* Dynamic loops: every iteration once, whatever the threads */
static void
TestDynamicFor(void)
{
	static Coverage c;

	for (int threads = 1; threads <= 4; threads++)
	{
		int64_t		used;
		bool		once = true;

		RuntimeSetMaxThreads(threads);
		memset(&c, 0, sizeof(c));
		used = RuntimeParallelFor(MarkBody, &c, 3, 1000, RUNTIME_ANY_CHUNKS);
		CHECK(used >= 1 && used <= threads);
		for (int i = 0; i < 1000; i++)
			once &= atomic_load(&c.hits[i]) == (i >= 3);
		CHECK_MSG(once, "dynamic, %d threads", threads);
		CHECK(!RuntimeHelp());
	}
	RuntimeSetMaxThreads(1);
}

/* The grains a guided loop handed out */
typedef struct Claims
{
	atomic_int	hits[1000];
	atomic_int	count;
	int64_t		lo[1000];
	int64_t		hi[1000];
	int64_t		chunk[1000];
	pthread_t	thread[1000];
	pthread_t	caller;
	bool		slow;			/* sleep a little per iteration */
} Claims;

/* Record one grain, and mark its iterations */
static void
ClaimBody(void *context, int64_t begin, int64_t end, int64_t chunk)
{
	Claims	   *c = context;
	int			k = atomic_fetch_add(&c->count, 1);
	struct timespec pause = {0, 20000};

	if (k < 1000)
	{
		c->lo[k] = begin;
		c->hi[k] = end;
		c->chunk[k] = chunk;
		c->thread[k] = pthread_self();
	}
	for (int64_t i = begin; i < end; i++)
	{
		atomic_fetch_add(&c->hits[i], 1);
		if (c->slow)
			nanosleep(&pause, NULL);
	}
}

/*
 * Check a guided loop's grains over [begin, 1000): every iteration once;
 * each grain starts at a multiple of grain from begin, is at most
 * grain_max + grain - 1 long, and is shorter than grain only where the
 * loop ends; the caller's thread took grains from the front only, below
 * every grain of another thread.  A loop run serially is one call.
 */
static bool
GuidedClaimsHold(const Claims *c, int64_t begin, int64_t grain, int64_t grain_max)
{
	int64_t		caller_hi = begin;
	int64_t		others_lo = 1000;
	bool		ok = c->count <= 1000;

	for (int i = 0; i < 1000; i++)
		ok &= atomic_load(&c->hits[i]) == (i >= begin);
	if (c->count == 1 && c->lo[0] == begin && c->hi[0] == 1000)
		return ok;
	for (int k = 0; k < c->count && ok; k++)
	{
		int64_t		size = c->hi[k] - c->lo[k];

		ok &= (c->lo[k] - begin) % grain == 0 && size <= grain_max + grain - 1 &&
			(size >= grain || c->hi[k] == 1000);
		if (pthread_equal(c->thread[k], c->caller))
			caller_hi = c->hi[k] > caller_hi ? c->hi[k] : caller_hi;
		else
			others_lo = c->lo[k] < others_lo ? c->lo[k] : others_lo;
	}
	return ok && caller_hi <= others_lo;
}

/* Guided loops: shrinking grains, front and back, every iteration once */
static void
TestGuidedFor(void)
{
	static Claims c;

	for (int threads = 1; threads <= 4; threads++)
	{
		bool		shrank = false;

		RuntimeSetMaxThreads(threads);
		memset(&c, 0, sizeof(c));
		c.caller = pthread_self();
		c.slow = true;
		RuntimeParallelForGuided(ClaimBody, &c, 3, 1000, 16, 64);
		CHECK_MSG(GuidedClaimsHold(&c, 3, 16, 64), "guided, %d threads", threads);
		for (int k = 0; k < c.count; k++)
			shrank |= c.hi[k] - c.lo[k] == 16;
		CHECK_MSG(threads == 1 ? c.count == 1 : shrank && c.count > 2,
				  "guided, %d threads: %d grains, none of the smallest size", threads,
				  atomic_load(&c.count));
		CHECK(!RuntimeHelp());
	}
	/* a range too short for one grain, and none at all */
	RuntimeSetMaxThreads(2);
	memset(&c, 0, sizeof(c));
	c.caller = pthread_self();
	RuntimeParallelForGuided(ClaimBody, &c, 990, 1000, 16, 64);
	CHECK(GuidedClaimsHold(&c, 990, 16, 64) && c.count == 1);
	CHECK(RuntimeParallelForGuided(ClaimBody, &c, 5, 5, 16, 64) == 0);
	RuntimeSetMaxThreads(1);
}

/* What a pipelined test task does and sees */
typedef struct TaskProbe
{
	Coverage   *coverage;
	pthread_t	waiter;
	pthread_t	runner;			/* the pipeline thread */
	atomic_int	helped;			/* iterations the waiting thread ran */
	atomic_int	others;			/* iterations neither thread ran */
	volatile sig_atomic_t stop;
	atomic_int	runs;
	bool		until_stopped;	/* spin until stop instead of a loop */
} TaskProbe;

/* A slow body that notes iterations run by the waiting thread */
static void
SlowBody(void *context, int64_t begin, int64_t end, int64_t chunk)
{
	TaskProbe  *task = context;
	struct timespec pause = {0, 20000};

	for (int64_t i = begin; i < end; i++)
	{
		atomic_fetch_add(&task->coverage->hits[i], 1);
		if (pthread_equal(pthread_self(), task->waiter))
			atomic_fetch_add(&task->helped, 1);
		else if (!pthread_equal(pthread_self(), task->runner))
			atomic_fetch_add(&task->others, 1);
		nanosleep(&pause, NULL);
	}
}

/* The task: one dynamic loop, or wait for the stop flag (at most 10 s) */
static void
TaskBody(void *context)
{
	TaskProbe  *task = context;

	task->runner = pthread_self();
	atomic_fetch_add(&task->runs, 1);
	if (task->until_stopped)
	{
		struct timespec pause = {0, 1000000};

		for (int i = 0; i < 10000 && task->stop == 0; i++)
			nanosleep(&pause, NULL);
		return;
	}
	RuntimeParallelFor(SlowBody, task, 0, 1000, RUNTIME_ANY_CHUNKS);
}

/* The pipeline thread: runs the task once, the waiter helps, stop arrives */
static void
TestTask(void)
{
	static Coverage c;
	static TaskProbe task;
	volatile sig_atomic_t flag = 0;
	bool		once = true;

	RuntimeSetMaxThreads(2);
	memset(&c, 0, sizeof(c));
	memset(&task, 0, sizeof(task));
	task.coverage = &c;
	task.waiter = pthread_self();
	CHECK(RuntimeTaskStart(TaskBody, &task));
	CHECK(!RuntimeTaskStart(TaskBody, &task));	/* one task at a time */
	RuntimeTaskWait(&task.stop);
	CHECK(atomic_load(&task.runs) == 1);
	for (int i = 0; i < 1000; i++)
		once &= atomic_load(&c.hits[i]) == 1;
	CHECK(once);
	CHECK_MSG(atomic_load(&task.helped) > 0, "the waiting thread ran no iteration");
	/* with a cap of two, the waiter is the second thread: no pool worker joins */
	CHECK_MSG(atomic_load(&task.others) == 0, "%d iterations ran on a third thread",
			  atomic_load(&task.others));
	CHECK(task.stop == 0);

	/* a pending interrupt sets the task's stop flag while it is waited for */
	memset(&task, 0, sizeof(task));
	task.until_stopped = true;
	flag = 1;
	RuntimeSetInterruptFlag(&flag);
	CHECK(RuntimeTaskStart(TaskBody, &task));
	RuntimeTaskWait(&task.stop);
	CHECK(task.stop == 1);
	CHECK(atomic_load(&task.runs) == 1);
	RuntimeSetInterruptFlag(NULL);
	RuntimeSetMaxThreads(1);
}

/* A task of one guided loop, which its caller (the pipeline thread) owns */
static void
GuidedTaskBody(void *context)
{
	Claims	   *c = context;

	c->caller = pthread_self();
	RuntimeParallelForGuided(ClaimBody, c, 0, 1000, 16, 64);
}

/* The pipeline thread's guided loop: the waiting backend helps from the back */
static void
TestTaskGuided(void)
{
	static Claims c;
	volatile sig_atomic_t stop = 0;
	int			waiter_grains = 0;
	int			third = 0;

	RuntimeSetMaxThreads(2);
	memset(&c, 0, sizeof(c));
	c.slow = true;
	CHECK(RuntimeTaskStart(GuidedTaskBody, &c));
	RuntimeTaskWait(&stop);
	CHECK_MSG(GuidedClaimsHold(&c, 0, 16, 64), "guided task: %d grains", atomic_load(&c.count));
	for (int k = 0; k < c.count; k++)
	{
		waiter_grains += pthread_equal(c.thread[k], pthread_self());
		third += !pthread_equal(c.thread[k], pthread_self()) &&
			!pthread_equal(c.thread[k], c.caller);
	}
	CHECK_MSG(waiter_grains > 0, "the waiting thread took no grain");
	CHECK_MSG(third == 0, "%d grains ran on a third thread", third);
	RuntimeSetMaxThreads(1);
}

/* A forest of many deep-ish trees over two features */
static Forest *
BigForest(void)
{
	SilvanStatus status;
	Forest	   *forest = ForestCreate(&status);
	int32_t		num_trees = 200;
	int32_t		per_tree = 31;	/* a complete tree of depth 4 */

	forest->source = FOREST_SOURCE_XGBOOST;
	forest->precision = FOREST_FLOAT32;
	forest->num_features = 2;
	forest->num_classes = 1;
	ForestAllocBaseMargin(forest, 1, &status);
	ForestAllocTrees(forest, num_trees, &status);
	ForestAllocNodes(forest, (int64_t) num_trees * per_tree, &status);
	for (int32_t t = 0; t < num_trees; t++)
	{
		ForestNode *nodes = forest->nodes + (int64_t) t * per_tree;

		forest->trees[t].first_node = (int64_t) t * per_tree;
		forest->trees[t].num_nodes = per_tree;
		for (int32_t i = 0; i < per_tree; i++)
		{
			ForestNode *node = &nodes[i];

			memset(node, 0, sizeof(ForestNode));
			if (2 * i + 1 < per_tree)
			{
				node->kind = FOREST_NODE_NUMERIC;
				node->feature = (i + t) % 2;
				node->threshold = (double) ((i * 7 + t) % 13) / 13.0;
				node->left = 2 * i + 1;
				node->right = 2 * i + 2;
			}
			else
			{
				node->kind = FOREST_NODE_LEAF;
				node->feature = node->left = node->right = -1;
				node->leaf_value = (double) ((i + t) % 5) / 8.0;
			}
		}
	}
	ForestAllocCategoryWords(forest, 0, &status);
	if (!ForestValidate(forest, &status))
	{
		fprintf(stderr, "big forest invalid: %s: %s\n", status.message, status.detail);
		ForestFree(forest);
		return NULL;
	}
	return forest;
}

/* Margins of one compiled run vs the interpreter: all equal? how many set? */
static void
RunCompiled(const Forest *forest, const char *text, volatile sig_atomic_t *flag,
			int64_t num_rows, bool *all_equal, int64_t *computed)
{
	Schedule	schedule;
	SilvanStatus status;
	CompiledForest *compiled;
	float	   *rows = malloc(sizeof(float) * 2 * (size_t) num_rows);
	float	   *want = malloc(sizeof(float) * (size_t) num_rows);
	float	   *got = malloc(sizeof(float) * (size_t) num_rows);

	for (int64_t i = 0; i < 2 * num_rows; i++)
		rows[i] = (float) ((i * 37) % 101) / 101.0f;
	CHECK(ScheduleParse(text, &schedule, &status));
	compiled = CompileForest(forest, &schedule, NULL, &status);
	CHECK_MSG(compiled != NULL, "%s: %s", text, compiled ? "" : status.detail);
	*all_equal = false;
	*computed = 0;
	if (compiled)
	{
		ForestMarginsInit(forest, want, num_rows);
		ForestInterpretAccumulate(forest, rows, num_rows, want);
		ForestMarginsInit(forest, got, num_rows);
		RuntimeSetInterruptFlag(flag);
		CompiledForestAccumulate(compiled, rows, num_rows, got);
		RuntimeSetInterruptFlag(NULL);
		*all_equal = memcmp(want, got, sizeof(float) * (size_t) num_rows) == 0;
		for (int64_t i = 0; i < num_rows; i++)
			*computed += got[i] == want[i];
	}
	CompiledForestFree(compiled);
	free(rows);
	free(want);
	free(got);
}

/* A set flag stops a batch early; a clear one changes nothing */
static void
TestInterrupt(void)
{
	static const char *const texts[] = {
		"tile(batch, b0, b1, 64); reorder(b0, tree, b1)",
		"tile(batch, b0, b1, 64); reorder(b0, tree, b1); parallel(b0)",
		"tile(tree, t0, t1, 20); reorder(t0, batch, t1); parallel(t0)",
	};
	Forest	   *forest = BigForest();
	volatile sig_atomic_t flag = 0;
	int64_t		num_rows = 20000;

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	RuntimeSetMaxThreads(3);
	for (int i = 0; i < 3; i++)
	{
		bool		equal;
		int64_t		computed;

		flag = 0;
		RunCompiled(forest, texts[i], &flag, num_rows, &equal, &computed);
		CHECK_MSG(equal || i == 2, "%s: flag clear, margins differ", texts[i]);
		flag = 1;
		RunCompiled(forest, texts[i], &flag, num_rows, &equal, &computed);
		CHECK_MSG(!equal && computed < num_rows / 2, "%s: flag set, %lld of %lld rows done",
				  texts[i], (long long) computed, (long long) num_rows);
		CHECK(flag == 1);
		RuntimeSetInterruptFlag(&flag);
		CHECK(RuntimeInterrupted());
		RuntimeSetInterruptFlag(NULL);
		CHECK(!RuntimeInterrupted());
	}
	RuntimeSetMaxThreads(1);
	ForestFree(forest);
}

/*
 * A thread on a CPU that another thread runs on moves off it (the pool's
 * answer to two threads placed on one CPU), keeping its affinity; on
 * another CPU it stays.  Needs two CPUs it may run on (CI's machines have
 * two).
 */
static void
TestLeaveCpu(void)
{
	cpu_set_t	before;
	cpu_set_t	after;
	int			cpu;

	CHECK(pthread_getaffinity_np(pthread_self(), sizeof before, &before) == 0);
	if (CPU_COUNT(&before) < 2)
	{
		printf("# TestLeaveCpu skipped: one CPU allowed\n");
		return;
	}
	cpu = RuntimeCurrentCpu();
	CHECK(cpu >= 0 && CPU_ISSET(cpu, &before));
	RuntimeLeaveCpu(cpu);
	CHECK_MSG(RuntimeCurrentCpu() != cpu, "still on CPU %d", cpu);
	CHECK(pthread_getaffinity_np(pthread_self(), sizeof after, &after) == 0);
	CHECK(CPU_EQUAL(&before, &after));
	cpu = RuntimeCurrentCpu();
	RuntimeLeaveCpu(cpu == 0 ? 1 : 0);
	CHECK(RuntimeCurrentCpu() == cpu);
	RuntimeLeaveCpu(-1);
}

int
main(void)
{
	TestParallelFor();
	TestDynamicFor();
	TestGuidedFor();
	TestTask();
	TestTaskGuided();
	TestInterrupt();
	TestLeaveCpu();
	UNIT_DONE();
}
