/*
 * bench_kernel.c
 *		Kernel timing: compiled forest vs the interpreter vs XGBoost, same rows.
 *
 *   bench_kernel MODEL ROWS_FILE [BATCH [SCHEDULE [THREADS]]]
 *   bench_kernel MODEL ROWS_FILE BATCH INTERLEAVE TILE UNROLL
 *
 * SCHEDULE is schedule-language text (default: ScheduleDefault); THREADS
 * caps the runtime's thread pool (default 1).  SILVAN_BENCH_EXPLAIN=1 in
 * the environment prints the explain text to stderr (2: with LLVM IR).
 * ROWS_FILE: text rows (comma, tab or space separated); the first
 * num_features columns of each line are used, cycled to fill the batch.
 * SILVAN_BENCH_PROFILE=1 profiles the forest on the batch's rows first and
 * compiles with that profile (codeWalk then takes the hottest splits).
 * Prints compile time, whether compiled margins equal the interpreter's
 * bit for bit, and microseconds per row (best of 5 after a 1 s warm-up).
 * For XGBoost models it then runs xgb_peer.py (python3-xgboost,
 * inplace_predict, nthread=1) on the very same float rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "silvan/compiler.h"
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
	CompiledForest *c;
	void	   *acc, *ref;
	double		c0, c1, kern, interp;
	char	   *sched;
	int			same;

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

	ScheduleDefault(fo, batch, &s);
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
	c0 = Now();
	c = CompileForest(fo, &s, profile.node_hits ? &profile : NULL, &st);
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
