/*
 * tune_measure.c
 *		Compile one candidate schedule and time it on in-memory rows.
 *
 * A sample is the rows the tuner was given, repeated cyclically up to
 * TUNE_MEASURE_ROWS (or one batch, if larger), with the reference
 * interpreter's margins for them.  A candidate is compiled, run once over
 * the sample (warming caches and the code, and checking its margins
 * against the reference: bit for bit when exact, within float rounding
 * otherwise), then timed in passes of the whole sample in batches of the
 * batch size being tuned.  Its figure is the median pass, in microseconds
 * per row; compile time is reported but not scored.  A heuristic search
 * passes discard_above: a first timed pass slower than that ends the
 * timing (the candidate is clearly slower than the best so far).
 *
 * The stop flag (the adapter's interrupt flag) is checked between batches
 * and inside the compiled code's tiles: a stopped measurement returns
 * false at once, and the caller abandons the search.
 *
 * On a GPU (TuneMeasureOn with a cuda or rocm target and an opened device)
 * the candidate is compiled to device code, loaded on the device, and each
 * batch is copied over, run and copied back (GpuForestRun) as a scan's
 * batch is: the figure includes the copies.  gpu_emulated code runs on the
 * host like cpu code.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "silvan/compiler.h"
#include "silvan/gpu_run.h"
#include "silvan/schedule.h"
#include "silvan/tune.h"

#define TUNE_MEASURE_ROWS	4096
#define TUNE_MIN_PASSES		3
#define TUNE_MAX_PASSES		15

/* Monotonic seconds */
double
TuneClockSeconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Rows a measurement runs: TUNE_MEASURE_ROWS rounded up to whole batches */
int64_t
TuneMeasureRows(int32_t batch_size)
{
	int64_t		b = batch_size > 0 ? batch_size : 1;

	return (TUNE_MEASURE_ROWS + b - 1) / b * b;
}

/* Repeat the given rows into a sample for one batch size, with reference margins */
bool
TuneSampleInit(const Forest *forest, const void *rows, int64_t num_rows, int32_t batch_size,
			   TuneSample *sample, SilvanStatus *status)
{
	size_t		row_bytes = (size_t) forest->num_features * ForestValueSize(forest);
	size_t		acc_bytes = (size_t) forest->num_groups * ForestValueSize(forest);
	int64_t		m = TuneMeasureRows(batch_size);
	char	   *copy;

	memset(sample, 0, sizeof(TuneSample));
	if (num_rows <= 0)
		return StatusFail(status, SILVAN_ERROR_INVALID, "sample has no rows",
						  "The sample must hold at least one row.");
	copy = malloc(row_bytes * (size_t) m + 1);
	sample->reference = malloc(acc_bytes * (size_t) m + 1);
	if (copy == NULL || sample->reference == NULL)
	{
		free(copy);
		free(sample->reference);
		sample->reference = NULL;
		return StatusNoMemory(status, "the tuning sample");
	}
	for (int64_t r = 0; r < m; r++)
		memcpy(copy + row_bytes * r, (const char *) rows + row_bytes * (r % num_rows), row_bytes);
	ForestMarginsInit(forest, sample->reference, m);
	ForestInterpretAccumulate(forest, copy, m, sample->reference);
	sample->rows = copy;
	sample->num_rows = m;
	return true;
}

/* Release a sample */
void
TuneSampleFree(TuneSample *sample)
{
	free((void *) sample->rows);
	free(sample->reference);
	memset(sample, 0, sizeof(TuneSample));
}

/* A 64-bit linear congruential step: deterministic rows for a seed */
static uint64_t
NextRandom(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 17;
}

static int64_t
Max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Where a row's value must lie to take a numeric node's left or right child */
static double
SideValue(const ForestNode *node, bool left)
{
	double		t = node->threshold;
	double		delta = fabs(t) * 1e-3 + 1e-3;
	bool		below;

	switch (node->compare)
	{
		case FOREST_CMP_GE:
		case FOREST_CMP_GT:
			below = !left;
			break;
		case FOREST_CMP_EQ:
			return left ? t : t + delta;
		case FOREST_CMP_NE:
			return left ? t + delta : t;
		default:
			below = left;
			break;
	}
	return below ? t - delta : t + delta;
}

/* How the synthesizer picks values: split nodes per feature, and their hits */
typedef struct Synth
{
	const Forest *forest;
	const ForestProfile *profile;	/* NULL: uniform */
	int64_t    *splits;			/* split nodes grouped by feature */
	int64_t    *first;			/* feature f: splits[first[f] .. first[f + 1]) */
	int64_t    *tree_first;		/* per node: its tree's first node */
	int64_t    *cumulative;		/* per split (as splits): hits of the feature's splits up to it */
	uint64_t	state;
} Synth;

/*
 * One synthesized value of a feature: beside the threshold of one of its
 * splits, on either side; with a profile, the split drawn as often as rows
 * reached it (never one no row reached) and the side as often as rows went
 * that way
 */
static double
SynthesizeValue(Synth *sy, int32_t f)
{
	int64_t		n = sy->first[f + 1] - sy->first[f];
	const ForestNode *node = NULL;
	int64_t		at = 0;
	bool		left;

	if (n == 0)
		return 0;
	if (sy->profile != NULL && sy->cumulative[sy->first[f + 1] - 1] > 0)
	{
		/* the first split whose running total passes a random point of the total */
		const int64_t *cum = sy->cumulative + sy->first[f];
		uint64_t	point = NextRandom(&sy->state) % (uint64_t) cum[n - 1];
		int64_t		lo = 0;
		int64_t		hi = n - 1;

		while (lo < hi)
		{
			int64_t		mid = (lo + hi) / 2;

			if ((uint64_t) cum[mid] > point)
				hi = mid;
			else
				lo = mid + 1;
		}
		at = sy->splits[sy->first[f] + lo];
	}
	else
		at = sy->splits[sy->first[f] + (int64_t) (NextRandom(&sy->state) % (uint64_t) n)];
	node = &sy->forest->nodes[at];
	if (node->kind == FOREST_NODE_CATEGORICAL)
		return (double) (NextRandom(&sy->state) %
						 (uint64_t) (32 * (node->category_words > 0 ? node->category_words : 1)));
	if (sy->profile != NULL && sy->profile->node_hits[at] > 0)
	{
		int64_t		left_hits = sy->profile->node_hits[sy->tree_first[at] + node->left];

		left = (double) (NextRandom(&sy->state) % 1000000) / 1e6 <
			(double) left_hits / (double) sy->profile->node_hits[at];
	}
	else
		left = NextRandom(&sy->state) % 2 == 0;
	return SideValue(node, left);
}

/* Group the split nodes by feature (a counting sort), with their trees and hits */
static bool
SynthInit(Synth *sy, const Forest *forest, const ForestProfile *profile, uint64_t seed)
{
	int32_t		nf = forest->num_features;

	memset(sy, 0, sizeof(Synth));
	sy->forest = forest;
	sy->profile = profile && profile->num_nodes == forest->num_nodes ? profile : NULL;
	sy->state = seed * 2 + 1;
	sy->splits = malloc(sizeof(int64_t) * (size_t) (forest->num_nodes + 1));
	sy->tree_first = malloc(sizeof(int64_t) * (size_t) (forest->num_nodes + 1));
	sy->first = calloc((size_t) nf + 2, sizeof(int64_t));
	sy->cumulative = malloc(sizeof(int64_t) * (size_t) (forest->num_nodes + 1));
	if (!sy->splits || !sy->tree_first || !sy->first || !sy->cumulative)
		return false;
	for (int32_t t = 0; t < forest->num_trees; t++)
		for (int64_t i = 0; i < forest->trees[t].num_nodes; i++)
			sy->tree_first[forest->trees[t].first_node + i] = forest->trees[t].first_node;
	for (int64_t i = 0; i < forest->num_nodes; i++)
	{
		const ForestNode *node = &forest->nodes[i];

		if (node->kind == FOREST_NODE_LEAF || node->feature < 0 || node->feature >= nf)
			continue;
		sy->first[node->feature + 1]++;
	}
	for (int32_t f = 0; f < nf; f++)
		sy->first[f + 1] += sy->first[f];
	for (int64_t i = 0; i < forest->num_nodes; i++)
		if (forest->nodes[i].kind != FOREST_NODE_LEAF &&
			forest->nodes[i].feature >= 0 && forest->nodes[i].feature < nf)
			sy->splits[sy->first[forest->nodes[i].feature]++] = i;
	for (int32_t f = nf; f > 0; f--)
		sy->first[f] = sy->first[f - 1];
	sy->first[0] = 0;
	for (int32_t f = 0; f < nf; f++)
		for (int64_t k = sy->first[f]; k < sy->first[f + 1]; k++)
			sy->cumulative[k] = (k > sy->first[f] ? sy->cumulative[k - 1] : 0) +
				(sy->profile ? Max64(sy->profile->node_hits[sy->splits[k]], 0) : 0);
	return true;
}

static void
SynthFree(Synth *sy)
{
	free(sy->splits);
	free(sy->tree_first);
	free(sy->first);
	free(sy->cumulative);
}

/*
 * Rows synthesized from the model (malloc'd; NULL and a status on failure),
 * for tuning without a sample: each feature takes a value just beside the
 * threshold of one of its splits, so walks take both sides of the splits;
 * with a profile, splits and sides as often as the profiled rows took them
 */
void *
TuneSynthesizeRows(const Forest *forest, const ForestProfile *profile, int64_t num_rows,
				   uint64_t seed, SilvanStatus *status)
{
	bool		is_float = ForestValueSize(forest) == sizeof(float);
	char	   *rows = malloc((size_t) num_rows * forest->num_features * ForestValueSize(forest) + 1);
	Synth		sy;

	if (!SynthInit(&sy, forest, profile, seed) || rows == NULL)
	{
		SynthFree(&sy);
		free(rows);
		StatusNoMemory(status, "the synthesized rows");
		return NULL;
	}
	for (int64_t r = 0; r < num_rows; r++)
		for (int32_t f = 0; f < forest->num_features; f++)
		{
			double		x = SynthesizeValue(&sy, f);
			int64_t		at = r * forest->num_features + f;

			if (is_float)
				((float *) rows)[at] = (float) x;
			else
				((double *) rows)[at] = x;
		}
	SynthFree(&sy);
	return rows;
}

/* One value pair: equal bits when exact, else equal within the rounding of the sums */
static bool
ValuesAgree(double want, double got, double tolerance)
{
	if (isnan(want) || isnan(got))
		return isnan(want) && isnan(got);
	return fabs(want - got) <= tolerance * fmax(1.0, fabs(want));
}

/*
 * Do two margin buffers agree?  exact: bit for bit.  Otherwise within four
 * units of rounding per tree of the forest's precision, relative to the
 * margin (sums reordered across trees round differently)
 */
bool
TuneMarginsAgree(const Forest *forest, const void *want, const void *got, int64_t count,
				 bool exact)
{
	bool		is_float = ForestValueSize(forest) == sizeof(float);
	double		eps = is_float ? 1.1920929e-07 : 2.220446049250313e-16;
	double		tolerance = 4.0 * eps * (forest->num_trees > 0 ? forest->num_trees : 1);

	if (exact)
		return memcmp(want, got, (size_t) count * ForestValueSize(forest)) == 0;
	for (int64_t i = 0; i < count; i++)
	{
		double		w = is_float ? ((const float *) want)[i] : ((const double *) want)[i];
		double		g = is_float ? ((const float *) got)[i] : ((const double *) got)[i];

		if (!ValuesAgree(w, g, tolerance))
			return false;
	}
	return true;
}

/* A compiled candidate: host code, or its kernel loaded on a device */
typedef struct TuneCode
{
	const CompiledForest *code;
	GpuForest  *gpu;			/* device code: NULL on the host */
	const char *why;			/* a device run failed: what happened */
	char		why_buf[160];
} TuneCode;

/* Run one batch; false if stopped, or if the device failed (why set) */
static bool
RunBatch(TuneCode *tc, const void *rows, int64_t n, void *acc, volatile sig_atomic_t *stop)
{
	SilvanStatus status;

	if (tc->gpu == NULL)
		return CompiledForestRun(tc->code, rows, n, acc, stop);
	if (*stop)
		return false;
	if (GpuForestRun(tc->gpu, rows, n, acc, &status))
		return true;
	snprintf(tc->why_buf, sizeof(tc->why_buf), "%s: %s", status.message, status.detail);
	tc->why = tc->why_buf;
	return false;
}

/* Run the sample through the code in batches; seconds taken, or -1 if stopped or failed */
static double
RunPass(const Forest *forest, TuneCode *tc, const TuneSample *sample,
		int32_t batch_size, void *acc, volatile sig_atomic_t *stop)
{
	size_t		row_bytes = (size_t) forest->num_features * ForestValueSize(forest);
	size_t		acc_bytes = (size_t) forest->num_groups * ForestValueSize(forest);
	double		start;

	ForestMarginsInit(forest, acc, sample->num_rows);
	start = TuneClockSeconds();
	for (int64_t at = 0; at < sample->num_rows; at += batch_size)
	{
		int64_t		n = sample->num_rows - at < batch_size ? sample->num_rows - at : batch_size;

		if (!RunBatch(tc, (const char *) sample->rows + row_bytes * at, n,
					  (char *) acc + acc_bytes * at, stop))
			return -1;
	}
	return TuneClockSeconds() - start;
}

static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* A device run failed: the candidate failed */
static bool
DeviceFailed(const TuneCode *tc, TuneTiming *timing)
{
	timing->outcome = TUNE_FAILED;
	snprintf(timing->why, sizeof(timing->why), "%s", tc->why);
	return true;
}

/* Time a compiled candidate: a checked warm-up pass, then timed passes */
static bool
TimeCode(const Forest *forest, TuneCode *tc, const TuneSample *sample,
		 int32_t batch_size, bool exact, double discard_above, double seconds,
		 volatile sig_atomic_t *stop, void *acc, TuneTiming *timing)
{
	double		passes[TUNE_MAX_PASSES];
	double		spent = 0;
	int			n = 0;

	if (RunPass(forest, tc, sample, batch_size, acc, stop) < 0)
		return tc->why != NULL && DeviceFailed(tc, timing);
	if (!TuneMarginsAgree(forest, sample->reference, acc,
						  sample->num_rows * forest->num_groups, exact))
	{
		timing->outcome = TUNE_MISMATCH;
		snprintf(timing->why, sizeof(timing->why), "margins differ from the interpreter's%s",
				 exact ? " bit for bit" : " beyond float rounding");
		return true;
	}
	while (n < TUNE_MAX_PASSES && (n < TUNE_MIN_PASSES || spent < seconds))
	{
		double		t = RunPass(forest, tc, sample, batch_size, acc, stop);

		if (t < 0)
			return tc->why != NULL && DeviceFailed(tc, timing);
		passes[n++] = t * 1e6 / sample->num_rows;
		spent += t;
		if (n == 1 && discard_above > 0 && passes[0] > discard_above)
		{
			timing->outcome = TUNE_DISCARDED;
			break;
		}
	}
	qsort(passes, n, sizeof(double), CompareDoubles);
	timing->us_per_row = passes[n / 2];
	timing->passes = n;
	if (timing->outcome == TUNE_PENDING)
		timing->outcome = TUNE_TIMED;
	return true;
}

/* A candidate that did not compile or load: FAILED, with the status */
static bool
CandidateFailed(const SilvanStatus *status, TuneTiming *timing)
{
	timing->outcome = TUNE_FAILED;
	snprintf(timing->why, sizeof(timing->why), "%s: %s", status->message, status->detail);
	return true;
}

/*
 * Compile and time one candidate schedule on the host cpu; false only when
 * stopped.  seconds: about how long to keep timing passes after the minimum.
 */
bool
TuneMeasure(const Forest *forest, const ForestProfile *profile, const TuneSample *sample,
			int32_t batch_size, const char *text, bool exact, double discard_above,
			double seconds, volatile sig_atomic_t *stop, TuneTiming *timing)
{
	return TuneMeasureOn(forest, profile, NULL, NULL, sample, batch_size, text, exact,
						 discard_above, seconds, stop, timing);
}

/*
 * The same with compile options (NULL: the defaults, the host cpu);
 * device code (cuda, rocm) runs on device, which must be open
 */
bool
TuneMeasureOn(const Forest *forest, const ForestProfile *profile, const CompileOptions *options,
			  GpuDevice *device, const TuneSample *sample, int32_t batch_size,
			  const char *text, bool exact, double discard_above, double seconds,
			  volatile sig_atomic_t *stop, TuneTiming *timing)
{
	SilvanStatus status;
	Schedule	schedule;
	CompiledForest *code;
	TuneCode	tc = {0};
	size_t		device_code_len;
	void	   *acc;
	bool		ok;

	memset(timing, 0, sizeof(TuneTiming));
	if (!ScheduleParse(text, &schedule, &status) ||
		(code = CompileForestFor(forest, &schedule, profile, options, &status)) == NULL)
		return CandidateFailed(&status, timing);
	timing->compile_ms = CompiledForestCompileMillis(code);
	tc.code = code;
	if (CompiledForestDeviceCode(code, &device_code_len) != NULL &&
		(tc.gpu = GpuForestLoad(code, device, &status)) == NULL)
	{
		CompiledForestFree(code);
		return CandidateFailed(&status, timing);
	}
	acc = malloc((size_t) sample->num_rows * forest->num_groups * ForestValueSize(forest) + 1);
	if (acc == NULL)
	{
		GpuForestFree(tc.gpu);
		CompiledForestFree(code);
		timing->outcome = TUNE_FAILED;
		snprintf(timing->why, sizeof(timing->why), "out of memory for the margins");
		return true;
	}
	ok = TimeCode(forest, &tc, sample, batch_size > 0 ? batch_size : 1, exact, discard_above,
				  seconds, stop, acc, timing);
	free(acc);
	GpuForestFree(tc.gpu);
	CompiledForestFree(code);
	return ok;
}
