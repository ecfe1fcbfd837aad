/*
 * host_probe.c
 *		Measure the host profile: which alternative of each machine-
 *		dependent choice (host_profile.h) walks faster on this CPU.
 *
 * A choice's two alternatives are compiled on a synthetic forest with the
 * schedule the default would pick (ScheduleDefault with a profile that
 * takes one alternative, then the other), or, for gathers, a tile walk
 * the tuner tries.  Forests are made here from a fixed seed:
 *
 *   lock-step  100 XGBoost-like float trees of depth 8 over 28 features,
 *              98% of their nodes above depth 8 split (higgs' trees hold
 *              504 of 511 nodes), missing values sent left as XGBoost does
 *              for data without them, the lower features picked more
 *              often, thresholds about normal: the depth-limited models
 *              (higgs, airline, year) that the perfect layout and the
 *              lock-step and vector walks serve.  Probes carry,
 *              keys, interleave, vector_walk and gather.
 *   deep       16 LightGBM-like double trees of 64 leaves grown leaf-wise,
 *              at least 10 deep, over 16 features, thresholds about
 *              normal: the forests whose default is a code walk (nyc_taxi,
 *              boston).  Probes code_walk.
 *
 * Each is scored on PROBE_ROWS distinct rows (about normal, 0.1% NaN),
 * in batches of PROBE_BATCH rows, one thread.  The two codes run in
 * interleaved rounds (A B, then B A, ...), after one untimed run each,
 * until both sides' spread (median absolute deviation over median) is
 * within PROBE_SPREAD after PROBE_MIN_ROUNDS rounds, or PROBE_MAX_ROUNDS,
 * or the budget is spent.  The medians decide: the second alternative is
 * taken when it is faster by more than PROBE_TIE, the first when it is;
 * within PROBE_TIE the choice keeps the fallback's pick and says "tie".
 * Choices are measured in the table's order, each with the ones before it
 * already decided; a choice whose second alternative the CPU lacks is
 * "unavailable", one past the budget keeps the fallback's pick.  The two
 * codes of a probe must compute the same margins bit for bit (their sums
 * are in the same order); if they do not, measuring fails.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "silvan/cancel.h"
#include "silvan/compiler.h"
#include "silvan/host_probe.h"
#include "silvan/runtime.h"

#define PROBE_ROWS			16384
#define PROBE_BATCH			1024
#define PROBE_MIN_ROUNDS	5
#define PROBE_MAX_ROUNDS	15
#define PROBE_SPREAD		0.02
#define PROBE_TIE			0.03

#define LOCK_TREES			100
#define LOCK_DEPTH			8
#define LOCK_SPLIT_PERCENT	98
#define LOCK_FEATURES		28
#define DEEP_TREES			16
#define DEEP_LEAVES			64
#define DEEP_MIN_DEPTH		10
#define DEEP_FEATURES		16

/* The tile walk the gather probe times (tileTrees over array records) */
#define PROBE_GATHER_SCHEDULE \
	"tile(batch, b0, b1, 64); reorder(b0, tree, b1); representation(array); tileTrees(4, uniform)"

/* A forest to probe on, its rows, and room for two codes' margins */
typedef struct ProbeInput
{
	Forest	   *forest;
	void	   *rows;
	int64_t		num_rows;
	void	   *acc[2];
} ProbeInput;

/* One measuring: its deadline and how to stop */
typedef struct ProbeRun
{
	double		deadline_ms;
	volatile sig_atomic_t *stop;
	ProbeInput	lock;
	ProbeInput	deep;
} ProbeRun;

/* Milliseconds on a monotonic clock */
static double
NowMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* xorshift64*: the same forests and rows on every host */
static uint64_t
NextRandom(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, 1), held exactly by a float */
static double
Uniform(uint64_t *state)
{
	return (double) (NextRandom(state) >> 40) / (double) (1ull << 24);
}

/* About normal (mean 0, deviation 1): the sum of four uniforms, scaled; held by a float */
static double
Normal(uint64_t *state)
{
	double		sum = Uniform(state) + Uniform(state) + Uniform(state) + Uniform(state);

	return (double) (float) ((sum - 2.0) * 1.7320508075688772);
}

/* Make node a split on a random feature (the lower ones more often) and threshold */
static void
MakeSplit(ForestNode *node, ForestCompare compare, int32_t features, int32_t left,
		  int32_t right, uint64_t *rng)
{
	memset(node, 0, sizeof(ForestNode));
	node->kind = FOREST_NODE_NUMERIC;
	node->compare = compare;
	node->missing = FOREST_MISSING_NAN;
	node->default_left = compare == FOREST_CMP_LT || (NextRandom(rng) & 1);
	{
		uint64_t	a = NextRandom(rng) % (uint64_t) features;
		uint64_t	b = NextRandom(rng) % (uint64_t) features;

		node->feature = (int32_t) (a < b ? a : b);
	}
	node->threshold = Normal(rng);
	node->left = left;
	node->right = right;
}

/* Make node a leaf of a small random value */
static void
MakeLeaf(ForestNode *node, uint64_t *rng)
{
	memset(node, 0, sizeof(ForestNode));
	node->kind = FOREST_NODE_LEAF;
	node->feature = -1;
	node->left = -1;
	node->right = -1;
	node->leaf_value = (Uniform(rng) - 0.5) / 8.0;
}

/*
 * A tree of depth LOCK_DEPTH as XGBoost grows them, most but not all of
 * its nodes split (LOCK_SPLIT_PERCENT each, the root and one path always),
 * in breadth-first order at nodes; its node count
 */
static int32_t
LockTree(ForestNode *nodes, uint64_t *rng)
{
	int32_t		depth[2 << LOCK_DEPTH];
	bool		leftmost[2 << LOCK_DEPTH];
	int32_t		num_nodes = 1;

	depth[0] = 0;
	leftmost[0] = true;
	for (int32_t i = 0; i < num_nodes; i++)
	{
		if (depth[i] < LOCK_DEPTH &&
			(leftmost[i] || NextRandom(rng) % 100 < LOCK_SPLIT_PERCENT))
		{
			MakeSplit(&nodes[i], FOREST_CMP_LT, LOCK_FEATURES, num_nodes, num_nodes + 1, rng);
			depth[num_nodes] = depth[num_nodes + 1] = depth[i] + 1;
			leftmost[num_nodes] = leftmost[i];
			leftmost[num_nodes + 1] = false;
			num_nodes += 2;
		}
		else
			MakeLeaf(&nodes[i], rng);
	}
	return num_nodes;
}

/*
 * A tree grown leaf-wise to DEEP_LEAVES leaves: the newest leaf split first
 * until DEEP_MIN_DEPTH, then the newest or a random one; its node count
 */
static int32_t
DeepTree(ForestNode *nodes, uint64_t *rng)
{
	int32_t		leaves[DEEP_LEAVES];
	int32_t		num_leaves = 1;
	int32_t		num_nodes = 1;

	MakeLeaf(&nodes[0], rng);
	leaves[0] = 0;
	while (num_leaves < DEEP_LEAVES)
	{
		int32_t		k = num_leaves - 1;
		int32_t		n;

		if (num_leaves > DEEP_MIN_DEPTH && (NextRandom(rng) & 1))
			k = (int32_t) (NextRandom(rng) % (uint64_t) num_leaves);
		n = leaves[k];
		MakeSplit(&nodes[n], FOREST_CMP_LE, DEEP_FEATURES, num_nodes, num_nodes + 1, rng);
		MakeLeaf(&nodes[num_nodes], rng);
		MakeLeaf(&nodes[num_nodes + 1], rng);
		leaves[k] = num_nodes;
		leaves[num_leaves++] = num_nodes + 1;
		num_nodes += 2;
	}
	return num_nodes;
}

/* A probe forest (deep or lock-step), validated; NULL and a status if it cannot be made */
static Forest *
ProbeForest(bool deep, SilvanStatus *status)
{
	uint64_t	rng = deep ? 0x9E3779B97F4A7C15ull : 0xD1B54A32D192ED03ull;
	int32_t		trees = deep ? DEEP_TREES : LOCK_TREES;
	int32_t		per_tree = deep ? 2 * DEEP_LEAVES - 1 : (2 << LOCK_DEPTH) - 1;
	Forest	   *forest = ForestCreate(status);
	int64_t		used = 0;

	if (forest == NULL)
		return NULL;
	forest->source = deep ? FOREST_SOURCE_LIGHTGBM : FOREST_SOURCE_XGBOOST;
	forest->precision = deep ? FOREST_FLOAT64 : FOREST_FLOAT32;
	forest->task = FOREST_TASK_REGRESSION;
	forest->num_features = deep ? DEEP_FEATURES : LOCK_FEATURES;
	forest->num_classes = 1;
	forest->category_rule = deep ? FOREST_CATEGORY_TRUNCATE : FOREST_CATEGORY_NONNEGATIVE;
	if (!ForestAllocBaseMargin(forest, 1, status) || !ForestAllocTrees(forest, trees, status) ||
		!ForestAllocNodes(forest, (int64_t) trees * per_tree, status))
	{
		ForestFree(forest);
		return NULL;
	}
	for (int32_t t = 0; t < trees; t++)
	{
		ForestNode *nodes = &forest->nodes[used];
		int32_t		n;

		n = deep ? DeepTree(nodes, &rng) : LockTree(nodes, &rng);
		forest->trees[t].first_node = used;
		forest->trees[t].num_nodes = n;
		used += n;
	}
	forest->num_nodes = used;
	if (!ForestValidate(forest, status))
	{
		ForestFree(forest);
		return NULL;
	}
	return forest;
}

/* The forest, its rows and margins; false and a status without memory */
static bool
ProbeInputMake(ProbeInput *in, bool deep, SilvanStatus *status)
{
	uint64_t	rng = 0xA0761D6478BD642Full;
	size_t		value_size;
	int64_t		values;

	memset(in, 0, sizeof(ProbeInput));
	if ((in->forest = ProbeForest(deep, status)) == NULL)
		return false;
	value_size = ForestValueSize(in->forest);
	in->num_rows = PROBE_ROWS;
	values = (int64_t) PROBE_ROWS * in->forest->num_features;
	in->rows = malloc((size_t) values * value_size);
	in->acc[0] = malloc((size_t) PROBE_ROWS * value_size);
	in->acc[1] = malloc((size_t) PROBE_ROWS * value_size);
	if (in->rows == NULL || in->acc[0] == NULL || in->acc[1] == NULL)
		return StatusNoMemory(status, "the host probe's rows");
	for (int64_t i = 0; i < values; i++)
	{
		double		x = NextRandom(&rng) % 1000 == 0 ? NAN : Normal(&rng);

		if (value_size == sizeof(float))
			((float *) in->rows)[i] = (float) x;
		else
			((double *) in->rows)[i] = x;
	}
	return true;
}

/* Free what ProbeInputMake made */
static void
ProbeInputFree(ProbeInput *in)
{
	ForestFree(in->forest);
	free(in->rows);
	free(in->acc[0]);
	free(in->acc[1]);
}

/* Has the caller or PostgreSQL asked to stop? */
static bool
ProbeStopped(const ProbeRun *run)
{
	return (run->stop != NULL && *run->stop) || CancelRequested();
}

/* Score every row once in batches into acc; microseconds per row, or -1 if stopped */
static double
ProbeTime(const ProbeRun *run, const ProbeInput *in, const CompiledForest *code, void *acc)
{
	size_t		row_bytes = (size_t) in->forest->num_features * ForestValueSize(in->forest);
	size_t		acc_bytes = (size_t) in->forest->num_groups * ForestValueSize(in->forest);
	static volatile sig_atomic_t never = 0;
	volatile sig_atomic_t *stop = run->stop ? run->stop : &never;
	double		start = NowMs();

	ForestMarginsInit(in->forest, acc, in->num_rows);
	for (int64_t at = 0; at < in->num_rows; at += PROBE_BATCH)
	{
		int64_t		n = in->num_rows - at < PROBE_BATCH ? in->num_rows - at : PROBE_BATCH;

		if (!CompiledForestRun(code, (const char *) in->rows + at * row_bytes, n,
							   (char *) acc + at * acc_bytes, stop))
			return -1.0;
	}
	return (NowMs() - start) * 1000.0 / in->num_rows;
}

/* Order doubles */
static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* The median of n values (sorts a copy) */
static double
Median(const double *values, int n)
{
	double		sorted[PROBE_MAX_ROUNDS];

	memcpy(sorted, values, sizeof(double) * n);
	qsort(sorted, n, sizeof(double), CompareDoubles);
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

/* Median absolute deviation over the median */
static double
Spread(const double *values, int n)
{
	double		m = Median(values, n);
	double		dev[PROBE_MAX_ROUNDS];

	for (int i = 0; i < n; i++)
		dev[i] = fabs(values[i] - m);
	return m > 0 ? Median(dev, n) / m : 0.0;
}

/*
 * Time two codes in interleaved rounds into v (rounds, medians) and pick;
 * false and a status if stopped or if their margins differ
 */
static bool
ProbeRace(const ProbeRun *run, const ProbeInput *in, CompiledForest *const codes[2],
		  uint8_t fallback, HostChoiceValue *v, SilvanStatus *status)
{
	double		times[2][PROBE_MAX_ROUNDS];
	int			n = 0;

	for (int k = 0; k < 2; k++)
		if (ProbeTime(run, in, codes[k], in->acc[k]) < 0)
			return StatusCanceled(status, "measuring the host");
	if (memcmp(in->acc[0], in->acc[1],
			   (size_t) in->num_rows * in->forest->num_groups * ForestValueSize(in->forest)) != 0)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "host probe codes disagree",
						  "The two alternatives of a host probe computed different margins.");
	while (n < PROBE_MAX_ROUNDS)
	{
		for (int j = 0; j < 2; j++)
		{
			int			k = (n + j) % 2;

			if ((times[k][n] = ProbeTime(run, in, codes[k], in->acc[k])) < 0 || ProbeStopped(run))
				return StatusCanceled(status, "measuring the host");
		}
		n++;
		if (n >= PROBE_MIN_ROUNDS &&
			((Spread(times[0], n) <= PROBE_SPREAD && Spread(times[1], n) <= PROBE_SPREAD) ||
			 NowMs() > run->deadline_ms))
			break;
	}
	v->rounds = n;
	v->us_per_row[0] = Median(times[0], n);
	v->us_per_row[1] = Median(times[1], n);
	if (fabs(v->us_per_row[1] - v->us_per_row[0]) <=
		PROBE_TIE * fmin(v->us_per_row[0], v->us_per_row[1]))
	{
		v->pick = fallback;
		v->how = HOST_HOW_TIE;
	}
	else
	{
		v->pick = v->us_per_row[1] < v->us_per_row[0];
		v->how = HOST_HOW_MEASURED;
	}
	return true;
}

/* The schedule a probe of choice times (the default's, or the gather probe's tile walk) */
static bool
ProbeSchedule(HostChoice choice, const ProbeInput *in, const HostProfile *trial,
			  Schedule *schedule, SilvanStatus *status)
{
	if (choice == HOST_CHOICE_GATHER)
		return ScheduleParse(PROBE_GATHER_SCHEDULE, schedule, status);
	ScheduleDefault(in->forest, PROBE_BATCH, trial, schedule);
	return true;
}

/* Measure one choice with the profile decided so far; false and a status on failure */
static bool
ProbeChoice(const ProbeRun *run, HostChoice choice, HostProfile *profile, SilvanStatus *status)
{
	const ProbeInput *in = choice == HOST_CHOICE_CODE_WALK ? &run->deep : &run->lock;
	HostProfile trial[2];
	CompiledForest *codes[2] = {NULL, NULL};
	bool		ok = true;

	for (int k = 0; ok && k < 2; k++)
	{
		CompileOptions options = {.host = &trial[k]};
		Schedule	schedule;

		trial[k] = *profile;
		HostProfileSet(&trial[k], choice, k);
		ok = ProbeSchedule(choice, in, &trial[k], &schedule, status) &&
			(codes[k] = CompileForestFor(in->forest, &schedule, NULL, &options, status)) != NULL;
	}
	if (ok)
		ok = ProbeRace(run, in, codes, HostChoiceDescribe(choice)->fallback,
					   &profile->choices[choice], status);
	CompiledForestFree(codes[0]);
	CompiledForestFree(codes[1]);
	return ok;
}

/* See host_probe.h */
bool
HostRace(const Forest *forest, const void *rows, int64_t num_rows, CompiledForest *const codes[2],
		 double budget_ms, volatile sig_atomic_t *stop, uint8_t fallback, HostChoiceValue *v,
		 SilvanStatus *status)
{
	ProbeRun	run = {.stop = stop, .deadline_ms = NowMs() + budget_ms};
	size_t		bytes = (size_t) num_rows * forest->num_groups * ForestValueSize(forest);
	ProbeInput	in = {.forest = (Forest *) forest, .rows = (void *) rows, .num_rows = num_rows,
	.acc = {malloc(bytes + 1), malloc(bytes + 1)}};
	bool		ok;

	memset(v, 0, sizeof(HostChoiceValue));
	ok = in.acc[0] != NULL && in.acc[1] != NULL ? ProbeRace(&run, &in, codes, fallback, v, status) :
		StatusNoMemory(status, "a race's margins");
	free(in.acc[0]);
	free(in.acc[1]);
	return ok;
}

/* See host_probe.h */
bool
HostProfileMeasure(HostProfile *profile, double budget_ms, volatile sig_atomic_t *stop,
				   SilvanStatus *status)
{
	ProbeRun	run = {.stop = stop};
	double		start = NowMs();
	int			threads = RuntimeMaxThreads();
	bool		ok;

	HostProfileFallback(profile);
	run.deadline_ms = start + budget_ms;
	ok = ProbeInputMake(&run.lock, false, status) && ProbeInputMake(&run.deep, true, status);
	RuntimeSetMaxThreads(1);
	for (int c = 0; ok && c < HOST_NUM_CHOICES; c++)
	{
		HostProfile probed = *profile;

		if (profile->choices[c].how == HOST_HOW_UNAVAILABLE || NowMs() > run.deadline_ms)
			continue;
		ok = ProbeChoice(&run, c, &probed, status);
		if (ok)
			*profile = probed;
	}
	RuntimeSetMaxThreads(threads);
	ProbeInputFree(&run.lock);
	ProbeInputFree(&run.deep);
	if (!ok)
	{
		HostProfileFallback(profile);
		return false;
	}
	profile->measured = true;
	profile->measure_ms = NowMs() - start;
	return true;
}
