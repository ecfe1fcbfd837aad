/*
 * bench_kernel.c
 *		Kernel timing: compiled forest vs the interpreter vs XGBoost, same rows.
 *
 *   bench_kernel MODEL ROWS_FILE [BATCH [SCHEDULE [THREADS]]]
 *   bench_kernel MODEL ROWS_FILE BATCH INTERLEAVE TILE UNROLL
 *   bench_kernel --serve MODEL ROWS_F64 NUM_ROWS
 *   bench_kernel --core-latency
 *
 * SCHEDULE is schedule-language text (default: ScheduleDefault); THREADS
 * caps the runtime's thread pool (default 1).  SILVAN_BENCH_EXPLAIN=1 in
 * the environment prints the explain text to stderr (2: with LLVM IR).
 * ROWS_FILE: text rows (comma, tab or space separated); the first
 * num_features columns of each line are used, cycled to fill the batch.
 * SILVAN_BENCH_PROFILE=1 profiles the forest on the batch's rows first and
 * compiles with that profile (codeWalk then takes the hottest splits).
 * SILVAN_BENCH_CHOICES=1,0,... sets the host profile's choices, in
 * HostChoice order ('-' keeps one; default: the fallback's picks), for the
 * default schedule and the compile.
 * Prints compile time, whether compiled margins equal the interpreter's
 * bit for bit, and microseconds per row (best of 5 after a 1 s warm-up).
 * For XGBoost models it then runs xgb_peer.py (python3-xgboost,
 * inplace_predict, nthread=1) on the very same float rows.
 *
 * --serve is the kernel worker of bench.py (make bench): ROWS_F64 holds
 * NUM_ROWS rows of num_features doubles, row-major (values the model's
 * precision holds exactly), converted once to the forest's precision.  It
 * prints "ready FEATURES WIDTH", then answers one line per command read
 * from stdin:
 *   compile BATCH         compile with the default schedule for BATCH (once
 *                         per batch size; the host profile measured at the
 *                         start, the layout raced as a server races it):
 *                         "compiled MS SAME" (CompileForest
 *                         milliseconds; SAME 1 when the first batch's margins
 *                         equal the interpreter's bit for bit)
 *   pass BATCH THREADS    score every row once in chunks of BATCH with
 *                         silvan.max_threads THREADS: margins, then what
 *                         predict() returns (class probabilities for a
 *                         multi-class model) into an array of all rows' outputs;
 *                         "us ROW_MICROSECONDS"
 *   predict BATCH PATH    the same pass with one thread, writing the outputs
 *                         (rows x WIDTH doubles) to PATH: "ok"
 *   rows N                use the first N rows from now on: "ok"
 * Errors answer "error TEXT".
 *
 * --core-latency prints "ns NANOSECONDS": how long a cache line takes to
 * go from one core to another and back (two threads, each pinned to one of
 * the first two CPUs the process may use, pass a counter to and fro; the
 * median of 7 trials of 20,000 round trips).  A scan on two threads hands
 * its rows and results between cores, so its speed over one thread's
 * depends on this figure, which on a VM changes with where the host places
 * the vCPUs; bench.py reports it beside the timings.  "ns -1": fewer than
 * two CPUs, or a thread could not be pinned.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "silvan/compiler.h"
#include "silvan/default_race.h"
#include "silvan/host_probe.h"
#include "silvan/mir.h"
#include "silvan/runtime.h"
#include "silvan/parse.h"

static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *
ReadAll(const char *path, long *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *t;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	fseek(f, 0, SEEK_SET);
	t = malloc(*len + 1);
	if (fread(t, 1, *len, f) != (size_t) *len)
		*len = 0;
	t[*len] = 0;
	fclose(f);
	return t;
}

/* Seconds per call of fn, best of 5 rounds after a 1 s warm-up */
static double
TimeIt(const Forest *fo, const CompiledForest *c, const void *rows, int batch, void *acc)
{
	int			iters = 0;
	double		t0 = Now();
	double		best = 1e9;

	do
	{
		ForestMarginsInit(fo, acc, batch);
		if (c)
			CompiledForestAccumulate(c, rows, batch, acc);
		else
			ForestInterpretAccumulate(fo, rows, batch, acc);
		iters++;
	} while (Now() - t0 < 1.0);
	for (int r = 0; r < 5; r++)
	{
		double		a = Now();
		int			n = iters / 5 + 1;

		for (int k = 0; k < n; k++)
		{
			ForestMarginsInit(fo, acc, batch);
			if (c)
				CompiledForestAccumulate(c, rows, batch, acc);
			else
				ForestInterpretAccumulate(fo, rows, batch, acc);
		}
		if ((Now() - a) / n < best)
			best = (Now() - a) / n;
	}
	return best;
}

/* ---- --serve: the kernel worker of bench.py ---- */

#define SERVE_MAX_BATCHES 16

typedef struct ServeState
{
	Forest	   *fo;
	void	   *rows;			/* num_rows rows of the forest's precision */
	int64_t		num_rows;
	int			width;			/* outputs per row */
	double	   *out;			/* num_rows * width */
	int			nbatches;
	int			batches[SERVE_MAX_BATCHES];
	CompiledForest *compiled[SERVE_MAX_BATCHES];
	void	   *acc[SERVE_MAX_BATCHES];
	double	   *margins[SERVE_MAX_BATCHES];
	HostProfile host;			/* measured as a server measures it */
	CompileOptions options;		/* with it */
} ServeState;

static int
ServeCompile(ServeState *ss, int batch, double *ms, int *same)
{
	Schedule	s;
	SilvanStatus st;
	bool		raced;
	int			k;
	int64_t		n;
	size_t		vs = ForestValueSize(ss->fo);
	int			groups = ss->fo->num_groups;
	void	   *ref;

	for (k = 0; k < ss->nbatches; k++)
		if (ss->batches[k] == batch)
			return k;
	if (ss->nbatches == SERVE_MAX_BATCHES || batch < 1)
		return -1;
	/* the default a server with a measured host profile picks (host.c, variant.c) */
	if (!ScheduleDefaultRaced(ss->fo, batch, &ss->options, &s, &raced, &st))
		ScheduleDefault(ss->fo, batch, &ss->host, &s);
	RuntimeSetMaxThreads(RuntimeCoreCount());	/* as a backend compiles */
	ss->compiled[k] = CompileForestFor(ss->fo, &s, NULL, &ss->options, &st);
	if (ss->compiled[k] == NULL)
	{
		printf("error %s: %s\n", st.message, st.detail);
		return -2;
	}
	ss->batches[k] = batch;
	ss->acc[k] = malloc(vs * (size_t) batch * groups);
	ss->margins[k] = malloc(sizeof(double) * (size_t) batch * groups);
	ss->nbatches++;
	/* the first chunk, compiled against the interpreter */
	n = ss->num_rows < batch ? ss->num_rows : batch;
	ref = malloc(vs * (size_t) batch * groups);
	RuntimeSetMaxThreads(1);
	ForestMarginsInit(ss->fo, ss->acc[k], n);
	CompiledForestAccumulate(ss->compiled[k], ss->rows, n, ss->acc[k]);
	ForestMarginsInit(ss->fo, ref, n);
	ForestInterpretAccumulate(ss->fo, ss->rows, n, ref);
	*same = memcmp(ss->acc[k], ref, vs * (size_t) n * groups) == 0;
	free(ref);
	*ms = CompiledForestCompileMillis(ss->compiled[k]);
	return k;
}

/* One pass over every row in chunks of the batch size; seconds */
static double
ServePass(ServeState *ss, int k)
{
	const Forest *fo = ss->fo;
	int			batch = ss->batches[k];
	int			groups = fo->num_groups;
	size_t		row_bytes = ForestValueSize(fo) * (size_t) fo->num_features;
	bool		multi = fo->task == FOREST_TASK_MULTICLASS;
	double		t0 = Now();

	for (int64_t s = 0; s < ss->num_rows; s += batch)
	{
		int64_t		n = ss->num_rows - s < batch ? ss->num_rows - s : batch;
		double	   *m = ss->margins[k];
		double	   *o = ss->out + s * ss->width;

		ForestMarginsInit(fo, ss->acc[k], n);
		CompiledForestAccumulate(ss->compiled[k], (const char *) ss->rows + s * row_bytes,
								 n, ss->acc[k]);
		ForestMarginsFinish(fo, ss->acc[k], n, m);
		for (int64_t i = 0; i < n; i++)
		{
			if (multi)
				ForestTransformRow(fo, m + i * groups, o + i * ss->width);
			else
				o[i * ss->width] = ForestPredictRow(fo, m + i * groups);
		}
	}
	return Now() - t0;
}

static int
Serve(int argc, char **argv)
{
	ServeState ss = {0};
	long		len;
	char	   *text;
	SilvanStatus st;
	FILE	   *f;
	double	   *d;
	int			nf;
	char		line[4096];

	if (argc < 5)
	{
		fprintf(stderr, "usage: %s --serve MODEL ROWS_F64 NUM_ROWS\n", argv[0]);
		return 2;
	}
	text = ReadAll(argv[2], &len);
	ss.fo = text ? ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &st) : NULL;
	if (ss.fo == NULL)
	{
		printf("error cannot load %s\n", argv[2]);
		return 1;
	}
	nf = ss.fo->num_features;
	ss.num_rows = atol(argv[4]);
	d = malloc(sizeof(double) * (size_t) nf * ss.num_rows);
	f = fopen(argv[3], "rb");
	if (f == NULL || ss.num_rows < 1 ||
		fread(d, sizeof(double), (size_t) nf * ss.num_rows, f) != (size_t) nf * ss.num_rows)
	{
		printf("error cannot read %ld rows of %d doubles from %s\n", (long) ss.num_rows, nf, argv[3]);
		return 1;
	}
	fclose(f);
	if (ss.fo->precision == FOREST_FLOAT32)
	{
		float	   *r = malloc(sizeof(float) * (size_t) nf * ss.num_rows);

		for (int64_t i = 0; i < (int64_t) nf * ss.num_rows; i++)
			r[i] = (float) d[i];
		free(d);
		ss.rows = r;
	}
	else
		ss.rows = d;
	ss.width = ss.fo->task == FOREST_TASK_MULTICLASS ? ss.fo->num_groups : 1;
	ss.out = malloc(sizeof(double) * (size_t) ss.width * ss.num_rows);
	if (!HostProfileMeasure(&ss.host, HOST_PROBE_BUDGET_MS, NULL, &st))
		HostProfileFallback(&ss.host);
	ss.options.host = &ss.host;
	printf("ready %d %d\n", nf, ss.width);
	fflush(stdout);
	while (fgets(line, sizeof line, stdin))
	{
		int			batch = 0, threads = 1, k, same = 0;
		double		ms = 0;
		char		path[4000];

		if (sscanf(line, "compile %d", &batch) == 1)
		{
			k = ServeCompile(&ss, batch, &ms, &same);
			if (k >= 0)
				printf("compiled %.3f %d\n", ms, same);
			else if (k == -1)
				printf("error too many batch sizes\n");
		}
		else if (sscanf(line, "pass %d %d", &batch, &threads) == 2)
		{
			k = ServeCompile(&ss, batch, &ms, &same);
			if (k >= 0)
			{
				RuntimeSetMaxThreads(threads);
				printf("us %.6f\n", ServePass(&ss, k) / ss.num_rows * 1e6);
			}
			else if (k == -1)
				printf("error too many batch sizes\n");
		}
		else if (sscanf(line, "predict %d %3999s", &batch, path) == 2)
		{
			k = ServeCompile(&ss, batch, &ms, &same);
			if (k >= 0)
			{
				RuntimeSetMaxThreads(1);
				ServePass(&ss, k);
				f = fopen(path, "wb");
				if (f == NULL ||
					fwrite(ss.out, sizeof(double), (size_t) ss.width * ss.num_rows, f) !=
					(size_t) ss.width * ss.num_rows || fclose(f) != 0)
					printf("error cannot write %s\n", path);
				else
					printf("ok\n");
			}
			else if (k == -1)
				printf("error too many batch sizes\n");
		}
		else if (sscanf(line, "rows %d", &batch) == 1 && batch > 0)
		{
			int64_t		all = atol(argv[4]);

			ss.num_rows = batch < all ? batch : all;
			printf("ok\n");
		}
		else if (strncmp(line, "quit", 4) == 0)
			break;
		else
			printf("error unknown command\n");
		fflush(stdout);
	}
	return 0;
}

/* ---- --core-latency: a cache line's round trip between two cores ---- */

#define LATENCY_TRIPS	20000
#define LATENCY_TRIALS	7

typedef struct PingPong
{
	_Alignas(64) volatile long counter;	/* odd: the first thread's turn is over */
	int			cpu;					/* where the second thread runs */
	bool		pinned;
} PingPong;

/* Pin the calling thread to one CPU */
static bool
PinTo(int cpu)
{
	cpu_set_t	set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/* The second thread: answer each odd counter with the next even one */
static void *
PingPongAnswer(void *arg)
{
	PingPong   *pp = (PingPong *) arg;

	pp->pinned = PinTo(pp->cpu);
	for (long i = 0; i < (long) LATENCY_TRIPS * LATENCY_TRIALS; i++)
	{
		while (pp->counter != 2 * i + 1)
			;
		pp->counter = 2 * i + 2;
	}
	return NULL;
}

/* Order doubles, for qsort */
static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Print the median round trip of a cache line between the first two CPUs we may use */
static int
CoreLatency(void)
{
	cpu_set_t	allowed;
	int			cpus[2];
	int			found = 0;
	static PingPong pp;
	pthread_t	thread;
	double		trial_ns[LATENCY_TRIALS];
	bool		pinned;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		CPU_ZERO(&allowed);
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[found++] = c;
	if (found < 2 || !PinTo(cpus[0]))
	{
		printf("ns -1\n");
		return 0;
	}
	pp.cpu = cpus[1];
	if (pthread_create(&thread, NULL, PingPongAnswer, &pp) != 0)
	{
		printf("ns -1\n");
		return 0;
	}
	for (int t = 0; t < LATENCY_TRIALS; t++)
	{
		double		start = Now();

		for (long i = (long) t * LATENCY_TRIPS; i < (long) (t + 1) * LATENCY_TRIPS; i++)
		{
			pp.counter = 2 * i + 1;
			while (pp.counter != 2 * i + 2)
				;
		}
		trial_ns[t] = (Now() - start) * 1e9 / LATENCY_TRIPS;
	}
	pthread_join(thread, NULL);
	pinned = pp.pinned;
	qsort(trial_ns, LATENCY_TRIALS, sizeof(double), CompareDoubles);
	printf("ns %.0f\n", pinned ? trial_ns[LATENCY_TRIALS / 2] : -1.0);
	return 0;
}

int
main(int argc, char **argv)
{
	long		len;
	char	   *text;
	SilvanStatus st;
	Forest	   *fo;
	int			batch = argc > 3 ? atoi(argv[3]) : 4096;
	int			nf, nsrc = 0;
	float	   *src, *rows;
	void	   *vrows;
	char		line[1 << 16];
	FILE	   *f;
	Schedule	s;
	ForestProfile profile = {0};
	HostProfile host;
	CompileOptions options = {0};
	CompiledForest *c;
	void	   *acc, *ref;
	double		c0, c1, kern, interp;
	char	   *sched;
	int			same;

	if (argc > 1 && strcmp(argv[1], "--serve") == 0)
		return Serve(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--core-latency") == 0)
		return CoreLatency();
	if (argc < 3)
	{
		fprintf(stderr, "usage: %s MODEL ROWS_FILE [BATCH [SCHEDULE [THREADS]]]\n", argv[0]);
		return 2;
	}
	text = ReadAll(argv[1], &len);
	fo = text ? ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &st) : NULL;
	if (fo == NULL)
	{
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	nf = fo->num_features;
	src = malloc(sizeof(float) * nf * 5000);
	f = fopen(argv[2], "r");
	while (f && nsrc < 5000 && fgets(line, sizeof line, f))
	{
		char	   *p = line;

		for (int j = 0; j < nf; j++)
		{
			src[nsrc * nf + j] = strtof(p, &p);
			while (*p == ',' || *p == '\t' || *p == ' ')
				p++;
		}
		nsrc++;
	}
	if (f)
		fclose(f);
	if (nsrc == 0)
	{
		fprintf(stderr, "no rows in %s\n", argv[2]);
		return 1;
	}
	rows = malloc(sizeof(float) * nf * batch);
	for (int i = 0; i < batch; i++)
		memcpy(rows + (size_t) i * nf, src + (size_t) (i % nsrc) * nf, sizeof(float) * nf);
	vrows = rows;
	if (fo->precision == FOREST_FLOAT64)
	{
		double	   *d = malloc(sizeof(double) * nf * batch);

		for (long i = 0; i < (long) nf * batch; i++)
			d[i] = rows[i];
		vrows = d;
	}

	/* SILVAN_BENCH_CHOICES=c,i,v,g,w: the host profile's picks, in HostChoice order */
	HostProfileFallback(&host);
	if (getenv("SILVAN_BENCH_CHOICES"))
	{
		const char *p = getenv("SILVAN_BENCH_CHOICES");

		for (int k = 0; k < HOST_NUM_CHOICES && *p; k++)
		{
			if (*p != '-' && !HostProfileSet(&host, (HostChoice) k, *p - '0'))
				fprintf(stderr, "choice %d: this CPU cannot take %c\n", k, *p);
			p += p[1] == ',' ? 2 : 1;
		}
	}
	options.host = &host;
	ScheduleDefault(fo, batch, &host, &s);
	if (argc > 6)
		ScheduleTiled(&s, atoi(argv[5]), atoi(argv[4]), atoi(argv[6]), "array");
	else if (argc > 4 && argv[4][0] && !ScheduleParse(argv[4], &s, &st))
	{
		fprintf(stderr, "%s: %s\n", st.message, st.detail);
		return 1;
	}
	RuntimeSetMaxThreads(argc == 6 ? atoi(argv[5]) : 1);
	acc = malloc(8 * (size_t) batch * fo->num_groups);
	ref = malloc(8 * (size_t) batch * fo->num_groups);
	if (getenv("SILVAN_BENCH_PROFILE") && atoi(getenv("SILVAN_BENCH_PROFILE")) > 0)
	{
		profile.num_rows = batch;
		profile.num_nodes = fo->num_nodes;
		profile.node_hits = calloc((size_t) fo->num_nodes + 1, sizeof(int64_t));
		ForestProfileAccumulate(fo, vrows, batch, profile.node_hits);
	}
	/* compiled as a backend compiles, on up to every core (jit_split.c) */
	RuntimeSetMaxThreads(RuntimeCoreCount());
	c0 = Now();
	c = CompileForestFor(fo, &s, profile.node_hits ? &profile : NULL, &options, &st);
	RuntimeSetMaxThreads(argc == 6 ? atoi(argv[5]) : 1);
	if (c == NULL)
	{
		fprintf(stderr, "%s: %s\n", st.message, st.detail);
		return 1;
	}
	if (getenv("SILVAN_BENCH_EXPLAIN"))
	{
		char	   *explain = CompiledForestExplain(c, atoi(getenv("SILVAN_BENCH_EXPLAIN")) > 1);

		fputs(explain ? explain : "", stderr);
		free(explain);
	}
	ForestMarginsInit(fo, acc, batch);
	CompiledForestAccumulate(c, vrows, batch, acc);
	c1 = Now();
	ForestMarginsInit(fo, ref, batch);
	ForestInterpretAccumulate(fo, vrows, batch, ref);
	same = memcmp(acc, ref, ForestValueSize(fo) * batch * fo->num_groups) == 0;
	if (!same)
	{
		double		worst = 0;

		for (long i = 0; i < (long) batch * fo->num_groups; i++)
		{
			double		a = fo->precision == FOREST_FLOAT32 ? ((float *) acc)[i] : ((double *) acc)[i];
			double		r = fo->precision == FOREST_FLOAT32 ? ((float *) ref)[i] : ((double *) ref)[i];
			double		d = (a > r ? a - r : r - a) / (1 + (r > 0 ? r : -r));

			worst = d > worst ? d : worst;
		}
		printf("  margins differ: worst relative difference %.3g\n", worst);
	}
	kern = TimeIt(fo, c, vrows, batch, acc);
	interp = TimeIt(fo, NULL, vrows, batch, ref);
	sched = ScheduleToText(&s);
	printf("%s: %d trees, depth %d, batch %d\n  schedule: %s\n"
		   "  compile %.1f ms, compile + first batch %.1f ms, margins %s\n"
		   "  silvan kernel %.3f us/row, interpreter %.3f us/row\n",
		   argv[1], fo->num_trees, fo->max_depth, batch, sched,
		   CompiledForestCompileMillis(c), (c1 - c0) * 1e3,
		   same ? "bitwise identical" : "DIFFERENT",
		   kern / batch * 1e6, interp / batch * 1e6);
	fflush(stdout);
	if (fo->source == FOREST_SOURCE_XGBOOST)
	{
		char		cmd[4096];

		f = fopen("/tmp/silvan-bench/rows.bin", "wb");
		if (f == NULL)
		{
			printf("  xgboost peer skipped: no /tmp/silvan-bench/ (with xgb_peer.py)\n");
			return same ? 0 : 1;
		}
		fwrite(rows, sizeof(float), (size_t) nf * batch, f);
		fclose(f);
		ForestMarginsInit(fo, acc, batch);
		CompiledForestAccumulate(c, vrows, batch, acc);
		f = fopen("/tmp/silvan-bench/margins.bin", "wb");
		fwrite(acc, ForestValueSize(fo), (size_t) batch * fo->num_groups, f);
		fclose(f);
		snprintf(cmd, sizeof cmd, "/usr/bin/python3 /tmp/silvan-bench/xgb_peer.py '%s' /tmp/silvan-bench/rows.bin %d %d 2>/dev/null",
				 argv[1], nf, batch);
		if (system(cmd) != 0)
			printf("  xgboost peer failed\n");
	}
	return same ? 0 : 1;
}
