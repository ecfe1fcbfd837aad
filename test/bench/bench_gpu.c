/*
 * bench_gpu.c
 *		GPU kernel timing on a CUDA device: silvan's default gpu schedule
 *		and Algorithm 1's points, same rows for every schedule.
 *
 *   bench_gpu MODEL NUM_ROWS ROWS_OUT [BATCH ...]
 *
 * NUM_ROWS rows are made from the model's thresholds (each value a
 * threshold, a neighbour of one, NaN or noise) and written to ROWS_OUT as
 * raw row-major float32 (float64 for double models) for the torch peer
 * (gpu_peer.py), which scores the very same rows; ROWS_OUT.margins gets
 * the interpreter's margins of the first 65,536 rows (float64) to check
 * the peer against.  For each schedule (the
 * gpu default, then TuneGpuAlgorithm1's points for the batch size) the
 * forest is compiled for the device's sm, its buffers loaded once, and
 * every row scored in chunks of BATCH rows (default 4096, 65536, 1048576):
 * rows to the device, the kernel, margins back, as GpuForestRun does for
 * a batched scan.  One warm-up pass, then the median of 5 passes.  Before
 * timing, the first chunk's margins are compared with the interpreter's:
 * "exact" (bit for bit) or the largest relative difference.  Prints one
 * tab-separated line per schedule and batch:
 *   model schedule batch us_per_row compile_ms check schedule_text
 * Needs a CUDA device (exits 2 without one); with SILVAN_BENCH_ROWS_ONLY
 * set it only writes the rows and margins.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "silvan/compiler.h"
#include "silvan/gpu.h"
#include "silvan/gpu_run.h"
#include "silvan/parse.h"
#include "silvan/tune.h"

static uint64_t rand_state = 0x243f6a8885a308d3ULL;

/* Seconds on a monotonic clock */
static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A uniform double in [0, 1) */
static double
RandUnit(void)
{
	rand_state ^= rand_state << 13;
	rand_state ^= rand_state >> 7;
	rand_state ^= rand_state << 17;
	return (double) (rand_state >> 11) / (double) (1ULL << 53);
}

/* Rows from the model's thresholds, in its precision */
static void *
MakeRows(const Forest *forest, int64_t num_rows)
{
	int64_t		n = num_rows * forest->num_features;
	void	   *rows = malloc(ForestValueSize(forest) * (size_t) n);

	for (int64_t i = 0; rows && i < n; i++)
	{
		double		u = RandUnit();
		const ForestNode *node = &forest->nodes[(int64_t) (RandUnit() * forest->num_nodes)];
		double		v = node->kind == FOREST_NODE_NUMERIC ? node->threshold : 0.0;

		if (u < 0.02)
			v = NAN;
		else if (u < 0.5)
			v = nextafter(v, u < 0.25 ? -INFINITY : INFINITY);
		if (forest->precision == FOREST_FLOAT32)
			((float *) rows)[i] = (float) v;
		else
			((double *) rows)[i] = v;
	}
	return rows;
}

/* Compare the device's margins with the interpreter's: "exact" or the worst ratio */
static void
Check(const Forest *forest, const void *rows, int64_t n, const void *got, char *out, size_t size)
{
	void	   *want = malloc(ForestValueSize(forest) * (size_t) (n * forest->num_groups));
	double		worst = 0;
	bool		exact;

	ForestMarginsInit(forest, want, n);
	ForestInterpretAccumulate(forest, rows, n, want);
	exact = memcmp(want, got, ForestValueSize(forest) * (size_t) (n * forest->num_groups)) == 0;
	for (int64_t i = 0; i < n * forest->num_groups; i++)
	{
		double		w = forest->precision == FOREST_FLOAT32 ? ((float *) want)[i] : ((double *) want)[i];
		double		g = forest->precision == FOREST_FLOAT32 ? ((float *) got)[i] : ((double *) got)[i];
		double		d = fabs(w - g) / fmax(1.0, fabs(w));

		worst = d > worst ? d : worst;
	}
	if (exact)
		snprintf(out, size, "exact");
	else
		snprintf(out, size, "rel.diff %.2g", worst);
	free(want);
}

/* Score all rows in chunks of batch; seconds, or -1 on a driver error */
static double
Pass(GpuForest *gf, const Forest *forest, const void *rows, int64_t num_rows, int64_t batch,
	 void *acc)
{
	size_t		row_bytes = ForestValueSize(forest) * (size_t) forest->num_features;
	size_t		acc_row = ForestValueSize(forest) * (size_t) forest->num_groups;
	SilvanStatus status;
	double		start = Now();

	for (int64_t lo = 0; lo < num_rows; lo += batch)
	{
		int64_t		n = num_rows - lo < batch ? num_rows - lo : batch;

		ForestMarginsInit(forest, (char *) acc + lo * acc_row, n);
		if (!GpuForestRun(gf, (const char *) rows + lo * row_bytes, n,
						  (char *) acc + lo * acc_row, &status))
		{
			fprintf(stderr, "run: %s: %s\n", status.message, status.detail);
			return -1;
		}
	}
	return Now() - start;
}

static int
CompareDouble(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* Time one schedule at one batch size and print its line */
static void
BenchSchedule(const char *model, const Forest *forest, const Schedule *schedule, int index,
			  GpuDevice *device, const char *sm, const void *rows, int64_t num_rows,
			  int64_t batch, const char *text)
{
	CompileOptions target = {&TargetCuda, sm};
	SilvanStatus status;
	double		start = Now();
	CompiledForest *compiled = CompileForestFor(forest, schedule, NULL, &target, &status);
	double		compile_ms = (Now() - start) * 1000;
	GpuForest  *gf;
	void	   *acc;
	double		times[5];
	char		check[64] = "";

	if (compiled == NULL || (gf = GpuForestLoad(compiled, device, &status)) == NULL)
	{
		fprintf(stderr, "%s [%s]: %s: %s\n", model, text, status.message, status.detail);
		CompiledForestFree(compiled);
		return;
	}
	acc = malloc(ForestValueSize(forest) * (size_t) (num_rows * forest->num_groups));
	if (Pass(gf, forest, rows, num_rows, batch, acc) >= 0)
	{
		Check(forest, rows, batch < num_rows ? batch : num_rows, acc, check, sizeof(check));
		for (int r = 0; r < 5; r++)
			times[r] = Pass(gf, forest, rows, num_rows, batch, acc);
		qsort(times, 5, sizeof(double), CompareDouble);
		printf("%s\t%d\t%lld\t%.5f\t%.1f\t%s\t%s\n", model, index, (long long) batch,
			   times[2] * 1e6 / (double) num_rows, compile_ms, check, text);
		fflush(stdout);
	}
	free(acc);
	GpuForestFree(gf);
	CompiledForestFree(compiled);
}

int
main(int argc, char **argv)
{
	int64_t		default_batches[] = {4096, 65536, 1048576};
	int64_t    *batches = default_batches;
	int			num_batches = 3;
	SilvanStatus status;
	GpuLibrary *lib;
	GpuDevice  *device = NULL;
	GpuDeviceInfo info;
	int			major;
	int			minor;
	const char *sm;
	Forest	   *forest;
	char	   *text;
	size_t		len;
	int64_t		num_rows;
	void	   *rows;
	FILE	   *out;

	if (argc < 4)
	{
		fprintf(stderr, "usage: bench_gpu MODEL NUM_ROWS ROWS_OUT [BATCH ...]\n");
		return 1;
	}
	num_rows = atoll(argv[2]);
	if (argc > 4)
	{
		num_batches = argc - 4;
		batches = malloc(sizeof(int64_t) * (size_t) num_batches);
		for (int i = 0; i < num_batches; i++)
			batches[i] = atoll(argv[4 + i]);
	}
	if (getenv("SILVAN_BENCH_ROWS_ONLY") != NULL)
		lib = NULL;				/* write the rows and margins only (tests the peer) */
	else if ((lib = GpuDriverLoad(GPU_CUDA, NULL, &status)) == NULL ||
		!GpuDeviceInfoGet(lib, 0, &info, &status) ||
		(device = GpuDeviceOpen(lib, 0, &status)) == NULL)
	{
		fprintf(stderr, "no device: %s: %s\n", status.message, status.detail);
		return 2;
	}
	if (lib != NULL && sscanf(info.arch, "sm_%1d%d", &major, &minor) != 2)
		return 2;
	sm = lib ? GpuPtxTarget(major, minor) : "";
	{
		FILE	   *f = fopen(argv[1], "rb");

		if (f == NULL)
			return 1;
		fseek(f, 0, SEEK_END);
		len = (size_t) ftell(f);
		fseek(f, 0, SEEK_SET);
		text = malloc(len + 1);
		if (fread(text, 1, len, f) != len)
			return 1;
		text[len] = '\0';
		fclose(f);
	}
	forest = ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status);
	if (forest == NULL)
	{
		fprintf(stderr, "%s: %s\n", status.message, status.detail);
		return 1;
	}
	rows = MakeRows(forest, num_rows);
	out = fopen(argv[3], "wb");
	if (rows == NULL || out == NULL ||
		fwrite(rows, ForestValueSize(forest) * (size_t) forest->num_features, (size_t) num_rows,
			   out) != (size_t) num_rows)
		return 1;
	fclose(out);
	{
		/* the interpreter's margins of the first rows, float64, for gpu_peer.py */
		int64_t		n = num_rows < 65536 ? num_rows : 65536;
		int64_t		m = n * forest->num_groups;
		void	   *acc = malloc(ForestValueSize(forest) * (size_t) m);
		double	   *margins = malloc(sizeof(double) * (size_t) m);
		char		path[1024];

		ForestMarginsInit(forest, acc, n);
		ForestInterpretAccumulate(forest, rows, n, acc);
		for (int64_t i = 0; i < m; i++)
			margins[i] = forest->precision == FOREST_FLOAT32 ? ((float *) acc)[i] :
				((double *) acc)[i];
		snprintf(path, sizeof(path), "%s.margins", argv[3]);
		if ((out = fopen(path, "wb")) == NULL ||
			fwrite(margins, sizeof(double), (size_t) m, out) != (size_t) m)
			return 1;
		fclose(out);
		free(acc);
		free(margins);
	}
	if (lib == NULL)
		return 0;
	fprintf(stderr, "device %s (%s), PTX for %s; %s: %d trees, %d features, %lld rows\n",
			info.name, info.arch, sm, argv[1], forest->num_trees, forest->num_features,
			(long long) num_rows);
	for (int b = 0; b < num_batches; b++)
	{
		TuneShape	shape;
		TuneGpuPoint points[64];
		int			n;
		Schedule	schedule;
		char		point_text[1024];

		/* the paper's Algorithm 1, tree threads included (not exact: atomic adds) */
		TuneShapeOf(forest, (int32_t) (batches[b] < INT32_MAX ? batches[b] : INT32_MAX), 1,
					false, false, NULL, &shape);
		n = TuneGpuAlgorithm1(&shape, points, 64);
		ScheduleGpuDefault(forest, (int32_t) batches[b], &schedule);
		BenchSchedule(argv[1], forest, &schedule, 0, device, sm, rows, num_rows, batches[b],
					  "gpu default");
		for (int i = 0; i < n; i++)
		{
			if (!TuneGpuText(&shape, &points[i], point_text, sizeof(point_text)) ||
				!ScheduleParse(point_text, &schedule, &status))
				continue;
			for (char *c = point_text; *c; c++)
				if (*c == '\n')
					*c = ';';
			BenchSchedule(argv[1], forest, &schedule, i + 1, device, sm, rows, num_rows,
						  batches[b], point_text);
		}
	}
	GpuDeviceClose(device);
	GpuDriverUnload(lib);
	return 0;
}
