/*
 * test_compiler.c
 *		The compiler and JIT against the reference interpreter, bit for bit.
 *
 * Hand-built and randomly generated forests cover every split rule (LT/LE,
 * the three missing-value rules, XGBoost and LightGBM categorical rules),
 * single-leaf and uneven trees, several groups and both precisions.  Rows
 * are drawn from values that sit on, just beside and far from thresholds,
 * with NaN, zeros, infinities and odd categories.  Each forest is compiled
 * under several schedules and run on batches of 1, 3 and 4097 rows; the
 * margins must equal the interpreter's byte for byte.  Real models under
 * ../shared/models are checked the same way when they are there.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/hir.h"
#include "silvan/jit.h"
#include "silvan/mir.h"
#include "silvan/parse.h"
#include "unit.h"

/* xorshift64*: deterministic randomness */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t
RandNext(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static int
RandInt(int n)
{
	return (int) (RandNext() % (uint64_t) n);
}

static double
RandUnit(void)
{
	return (RandNext() >> 11) * (1.0 / 9007199254740992.0);
}

/* Values that probe comparisons, missing rules and categories */
static const double probe_values[] = {
	-INFINITY, -1e300, -FLT_MAX, -3.0, -1.0, -0.75, -0.5, -1e-36, -0.0, 0.0,
	1e-36, 1e-35, (double) 1e-35f, 0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0, 31.0,
	32.0, 33.5, 64.0, 1e9, 16777215.0, 16777216.0, FLT_MAX, 1e300, INFINITY
};
#define NUM_PROBES ((int) (sizeof(probe_values) / sizeof(probe_values[0])))

/* What a generated forest may contain */
typedef struct GenOptions
{
	ForestSource source;
	ForestPrecision precision;
	int32_t		num_features;
	int32_t		num_groups;
	int32_t		num_trees;
	int32_t		max_depth;
	double		leaf_prob;		/* chance a node above max_depth is a leaf */
	bool		chain;			/* caterpillar trees: one child is a leaf */
	int			compare;		/* FOREST_CMP_*, or -1 for mixed */
	int			missing;		/* FOREST_MISSING_*, or -1 for all three */
	int			default_left;	/* 0: random, 1: all left, 2: all right */
	bool		categorical;
	bool		root_leaves;	/* allow single-leaf trees */
	bool		finite;			/* finite thresholds only */
} GenOptions;

/* A forest being generated: growable nodes and category words */
typedef struct Gen
{
	const GenOptions *opt;
	ForestNode *nodes;
	int64_t		num_nodes;
	int64_t		cap_nodes;
	uint32_t   *words;
	int64_t		num_words;
	int64_t		cap_words;
	int64_t		tree_first;
} Gen;

/* Append a zeroed node; return its tree-local index */
static int32_t
GenPush(Gen *g)
{
	if (g->num_nodes == g->cap_nodes)
	{
		g->cap_nodes = g->cap_nodes ? g->cap_nodes * 2 : 256;
		g->nodes = realloc(g->nodes, sizeof(ForestNode) * g->cap_nodes);
	}
	memset(&g->nodes[g->num_nodes], 0, sizeof(ForestNode));
	return (int32_t) (g->num_nodes++ - g->tree_first);
}

/* A threshold: a probe value or a double that no float equals */
static double
GenThreshold(bool finite)
{
	double		t;

	do
		t = RandInt(3) == 0 ? RandUnit() * 6.0 - 3.0 : probe_values[RandInt(NUM_PROBES)];
	while (isnan(t) || (finite && isinf(t)));
	return t;
}

/* Fill in a numeric split */
static void
GenNumeric(const GenOptions *opt, ForestNode *node)
{
	node->kind = FOREST_NODE_NUMERIC;
	node->feature = RandInt(opt->num_features);
	node->compare = opt->compare >= 0 ? opt->compare : RandInt(2);
	node->missing = opt->missing >= 0 ? opt->missing : RandInt(3);
	node->default_left = opt->default_left ? opt->default_left == 1 : RandInt(2);
	node->threshold = GenThreshold(opt->finite);
}

/* Fill in a categorical split with a fresh random set */
static void
GenCategorical(Gen *g, ForestNode *node)
{
	int32_t		words = 1 + RandInt(3);

	if (g->num_words + words > g->cap_words)
	{
		g->cap_words = (g->cap_words + words) * 2;
		g->words = realloc(g->words, sizeof(uint32_t) * g->cap_words);
	}
	node->kind = FOREST_NODE_CATEGORICAL;
	node->feature = RandInt(g->opt->num_features);
	node->missing = FOREST_MISSING_NAN;
	node->default_left = RandInt(2);
	node->category_in_left = g->opt->source == FOREST_SOURCE_LIGHTGBM;
	node->category_offset = g->num_words;
	node->category_words = words;
	for (int32_t i = 0; i < words; i++)
		g->words[g->num_words++] = (uint32_t) RandNext();
}

/* Generate a subtree; return its tree-local root */
static int32_t
GenNode(Gen *g, int32_t depth, bool force_leaf)
{
	const GenOptions *opt = g->opt;
	int32_t		local = GenPush(g);
	int32_t		left;
	int32_t		right;
	bool		leaf = force_leaf || depth >= opt->max_depth ||
		(depth > 0 || opt->root_leaves ? RandUnit() < opt->leaf_prob : false);

	if (leaf)
	{
		g->nodes[g->tree_first + local].kind = FOREST_NODE_LEAF;
		g->nodes[g->tree_first + local].feature = -1;
		g->nodes[g->tree_first + local].left = -1;
		g->nodes[g->tree_first + local].right = -1;
		g->nodes[g->tree_first + local].leaf_value = RandUnit() * 2.0 - 1.0;
		return local;
	}
	if (opt->categorical && RandInt(3) == 0)
		GenCategorical(g, &g->nodes[g->tree_first + local]);
	else
		GenNumeric(opt, &g->nodes[g->tree_first + local]);
	{
		bool		left_leaf = opt->chain && RandInt(2) == 0;

		left = GenNode(g, depth + 1, left_leaf);
		right = GenNode(g, depth + 1, opt->chain && !left_leaf);
	}
	g->nodes[g->tree_first + local].left = left;
	g->nodes[g->tree_first + local].right = right;
	return local;
}

/* Generate and validate a forest */
static Forest *
GenForest(const GenOptions *opt)
{
	SilvanStatus status;
	Forest	   *forest = ForestCreate(&status);
	Gen			g = {.opt = opt};

	forest->source = opt->source;
	forest->category_rule = opt->source == FOREST_SOURCE_XGBOOST ?
		FOREST_CATEGORY_NONNEGATIVE : FOREST_CATEGORY_TRUNCATE;
	forest->precision = opt->precision;
	forest->num_features = opt->num_features;
	forest->task = opt->num_groups > 1 ? FOREST_TASK_MULTICLASS : FOREST_TASK_REGRESSION;
	forest->num_classes = opt->num_groups > 1 ? opt->num_groups : 1;
	ForestAllocBaseMargin(forest, opt->num_groups, &status);
	for (int32_t i = 0; i < opt->num_groups; i++)
		forest->base_margin[i] = opt->precision == FOREST_FLOAT32 ? (float) (0.25 * i) : 0.25 * i;
	ForestAllocTrees(forest, opt->num_trees, &status);
	for (int32_t t = 0; t < opt->num_trees; t++)
	{
		g.tree_first = g.num_nodes;
		GenNode(&g, 0, false);
		forest->trees[t].first_node = g.tree_first;
		forest->trees[t].num_nodes = (int32_t) (g.num_nodes - g.tree_first);
		forest->trees[t].group = t % opt->num_groups;
	}
	ForestAllocNodes(forest, g.num_nodes, &status);
	if (g.num_nodes > 0)
		memcpy(forest->nodes, g.nodes, sizeof(ForestNode) * g.num_nodes);
	ForestAllocCategoryWords(forest, g.num_words, &status);
	if (g.num_words > 0)
		memcpy(forest->category_words, g.words, sizeof(uint32_t) * g.num_words);
	free(g.nodes);
	free(g.words);
	if (!ForestValidate(forest, &status))
	{
		fprintf(stderr, "generated forest invalid: %s: %s\n", status.message, status.detail);
		ForestFree(forest);
		return NULL;
	}
	return forest;
}

/* One row value: a probe, a threshold's neighbour, a category or NaN */
static double
GenValue(const Forest *forest)
{
	int			pick = RandInt(10);

	if (pick == 0)
		return NAN;
	if (pick <= 3)
		return probe_values[RandInt(NUM_PROBES)];
	if (pick <= 5)
		return RandInt(100) - 3 + (RandInt(4) == 0 ? 0.5 : 0.0);
	if (forest->num_nodes > 0)
	{
		const ForestNode *node = &forest->nodes[RandInt((int) forest->num_nodes)];
		double		t = node->threshold;

		if (node->kind == FOREST_NODE_NUMERIC)
		{
			if (forest->precision == FOREST_FLOAT32)
			{
				float		f = (float) t;

				return pick == 6 ? f : nextafterf(f, pick == 7 ? INFINITY : -INFINITY);
			}
			return pick == 6 ? t : nextafter(t, pick == 7 ? INFINITY : -INFINITY);
		}
	}
	return RandUnit() * 8.0 - 4.0;
}

/* Rows of the forest's precision, values from GenValue */
static void *
GenRows(const Forest *forest, int64_t num_rows)
{
	int64_t		n = num_rows * forest->num_features;
	void	   *rows = malloc(ForestValueSize(forest) * (size_t) (n > 0 ? n : 1));

	for (int64_t i = 0; i < n; i++)
	{
		double		v = GenValue(forest);

		if (forest->precision == FOREST_FLOAT32)
			((float *) rows)[i] = (float) v;
		else
			((double *) rows)[i] = v;
	}
	return rows;
}

/* Compiled vs interpreted margins for one batch; true if identical */
static bool
SameMargins(const Forest *forest, const CompiledForest *compiled,
			const void *rows, int64_t num_rows, const char *what)
{
	size_t		bytes = ForestValueSize(forest) * (size_t) (num_rows * forest->num_groups);
	void	   *want = malloc(bytes + 1);
	void	   *got = malloc(bytes + 1);
	bool		same;

	ForestMarginsInit(forest, want, num_rows);
	ForestMarginsInit(forest, got, num_rows);
	ForestInterpretAccumulate(forest, rows, num_rows, want);
	CompiledForestAccumulate(compiled, rows, num_rows, got);
	same = memcmp(want, got, bytes) == 0;
	if (!same)
	{
		int64_t		n = num_rows * forest->num_groups;

		for (int64_t i = 0; i < n; i++)
		{
			double		w = forest->precision == FOREST_FLOAT32 ? ((float *) want)[i] : ((double *) want)[i];
			double		o = forest->precision == FOREST_FLOAT32 ? ((float *) got)[i] : ((double *) got)[i];

			if (memcmp(&w, &o, sizeof(double)) != 0)
			{
				fprintf(stderr, "%s: %lld rows: first difference at margin %lld: want %.17g got %.17g\n",
						what, (long long) num_rows, (long long) i, w, o);
				break;
			}
		}
	}
	free(want);
	free(got);
	return same;
}

/*
 * The forest compiled under its default schedule for batches of 1,024;
 * NULL, and a failed check naming what and the status, if it does not
 * compile
 */
static CompiledForest *
CompileDefaultFor(const Forest *forest, const HostProfile *host, const char *what)
{
	Schedule	schedule;
	SilvanStatus status;
	CompiledForest *compiled;

	ScheduleDefault(forest, 1024, host, &schedule);
	compiled = CompileForestFor(forest, &schedule, NULL, &(CompileOptions) {.host = host},
								&status);
	CHECK_MSG(compiled != NULL, "%s: %s: %s", what, compiled ? "" : status.message,
			  compiled ? "" : status.detail);
	return compiled;
}

/* The same with the fallback profile */
static CompiledForest *
CompileDefault(const Forest *forest, const char *what)
{
	return CompileDefaultFor(forest, NULL, what);
}

/* The fallback profile with one choice set (to the second alternative if pick) */
static const HostProfile *
HostWith(HostProfile *host, HostChoice choice, int pick)
{
	HostProfileFallback(host);
	HostProfileSet(host, choice, pick);
	return host;
}

/* Compile under one schedule and compare on batches of 1, 3 and 4097 rows */
static void
CheckSchedule(const char *name, const Forest *forest, const Schedule *schedule,
			  const void *rows)
{
	static const int64_t batches[] = {1, 3, 4097};
	SilvanStatus status;
	CompiledForest *compiled = CompileForest(forest, schedule, NULL, &status);
	char		what[256];
	char	   *text = schedule ? ScheduleToText(schedule) : strdup("default");

	snprintf(what, sizeof(what), "%s [%s]", name, text);
	free(text);
	CHECK_MSG(compiled != NULL, "%s: %s: %s", what,
			  compiled ? "" : status.message, compiled ? "" : status.detail);
	if (compiled == NULL)
		return;
	for (int i = 0; i < 3; i++)
		CHECK_MSG(SameMargins(forest, compiled, rows, batches[i], what), "%s", what);
	CompiledForestFree(compiled);
}

/* Compare a forest under a spread of schedules */
static void
CheckForest(const char *name, const Forest *forest)
{
	Schedule	schedules[6];
	void	   *rows = GenRows(forest, 4097);
	int32_t		deep = forest->max_depth;

	ScheduleDefault(forest, 0, NULL, &schedules[0]);
	ScheduleDefault(forest, 1, NULL, &schedules[1]);
	ScheduleTiled(&schedules[2], 7, 3, 2, "array");
	ScheduleTiled(&schedules[3], 0, 1, 0, "array");
	ScheduleTiled(&schedules[4], 256, 16, 32, "array");
	ScheduleTiled(&schedules[5], 64, 4, deep > 1 ? deep - 1 : 0, "array");
	CheckSchedule(name, forest, NULL, rows);
	for (int i = 0; i < 6; i++)
		CheckSchedule(name, forest, &schedules[i], rows);
	free(rows);
}

/* Generate a forest from options and check it; variant: expected layout */
static void
CheckGeneratedAs(const char *name, GenOptions opt, const char *variant)
{
	Forest	   *forest = GenForest(&opt);
	SilvanStatus status;
	CompiledForest *compiled;
	char	   *text;

	CHECK_MSG(forest != NULL, "%s", name);
	if (forest == NULL)
		return;
	CheckForest(name, forest);
	if (variant)
	{
		compiled = CompileForest(forest, NULL, NULL, &status);
		text = compiled ? CompiledForestExplain(compiled, false) : NULL;
		CHECK_MSG(text && strstr(text, variant), "%s: expected layout %s", name, variant);
		free(text);
		CompiledForestFree(compiled);
	}
	ForestFree(forest);
}

/* Generate a forest from options and check it */
static void
CheckGenerated(const char *name, GenOptions opt)
{
	CheckGeneratedAs(name, opt, NULL);
}

/* Base options: XGBoost-like float forest */
static GenOptions
BaseOptions(void)
{
	return (GenOptions) {
		.source = FOREST_SOURCE_XGBOOST, .precision = FOREST_FLOAT32,
		.num_features = 6, .num_groups = 1, .num_trees = 12, .max_depth = 5,
		.leaf_prob = 0.2, .compare = FOREST_CMP_LT
	};
}

/* Base options: LightGBM-like double forest */
static GenOptions
LightgbmOptions(int missing, bool categorical)
{
	GenOptions	o = BaseOptions();

	o.source = FOREST_SOURCE_LIGHTGBM;
	o.precision = FOREST_FLOAT64;
	o.compare = FOREST_CMP_LE;
	o.missing = missing;
	o.categorical = categorical;
	return o;
}

/* Generated forests over the whole space of split rules */
static void
TestGenerated(void)
{
	GenOptions	o;

	o = BaseOptions();
	CheckGenerated("xgboost float lt", o);
	o.finite = true;
	CheckGeneratedAs("xgboost float, mirrored NaN-left splits", o, "perfect (sign");
	o.precision = FOREST_FLOAT64;
	o.compare = -1;
	CheckGeneratedAs("double lt/le, mirrored NaN-left splits", o, "array (sign)");
	o = BaseOptions();
	o.default_left = 2;
	CheckGeneratedAs("xgboost float, NaN always right", o, "perfect (plain");
	o = BaseOptions();
	o.compare = FOREST_CMP_LE;
	CheckGenerated("float le", o);
	o = BaseOptions();
	o.precision = FOREST_FLOAT64;
	o.compare = -1;
	CheckGenerated("double mixed lt/le", o);
	o = LightgbmOptions(-1, false);
	CheckGeneratedAs("lightgbm double le, all missing rules", o, "array (flags)");
	o.precision = FOREST_FLOAT32;
	CheckGenerated("lightgbm float le, all missing rules", o);
	o = BaseOptions();
	o.default_left = 1;
	CheckGenerated("xgboost, NaN always left", o);
	o.default_left = 2;
	o.precision = FOREST_FLOAT64;
	CheckGenerated("double, NaN always right", o);
	o = LightgbmOptions(FOREST_MISSING_NONE, false);
	CheckGenerated("lightgbm, only NONE rule", o);
	o.finite = true;
	CheckGeneratedAs("lightgbm, only NONE rule, finite", o, "array (plain)");
	o.finite = false;
	o.categorical = true;
	CheckGenerated("lightgbm, only NONE rule, categorical", o);
	o.categorical = false;
	o.missing = FOREST_MISSING_ZERO;
	CheckGenerated("lightgbm, only ZERO rule", o);
	o.precision = FOREST_FLOAT32;
	CheckGenerated("lightgbm float, only ZERO rule", o);
	o = BaseOptions();
	o.categorical = true;
	CheckGenerated("xgboost categorical", o);
	o.precision = FOREST_FLOAT64;
	CheckGenerated("xgboost categorical double", o);
	o = LightgbmOptions(-1, true);
	CheckGenerated("lightgbm categorical, all rules", o);
	o.precision = FOREST_FLOAT32;
	CheckGenerated("lightgbm categorical float", o);
	o = BaseOptions();
	o.num_groups = 3;
	o.num_trees = 30;
	o.root_leaves = true;
	CheckGenerated("multi-group with single-leaf trees", o);
	o = BaseOptions();
	o.max_depth = 0;
	o.num_trees = 5;
	CheckGenerated("only single-leaf trees", o);
	o = BaseOptions();
	o.chain = true;
	o.max_depth = 40;
	o.num_trees = 6;
	o.missing = -1;
	o.compare = -1;
	CheckGenerated("caterpillar trees deeper than any unroll", o);
	o = BaseOptions();
	o.max_depth = 10;
	o.leaf_prob = 0.35;
	o.num_trees = 40;
	o.num_groups = 4;
	o.categorical = true;
	CheckGenerated("uneven depths, four groups", o);
	o = BaseOptions();
	o.num_features = 1;
	o.num_trees = 0;
	CheckGenerated("no trees", o);
}

/* Build a forest from an explicit node list: one tree per call to AddTree */
static Forest *
HandForest(ForestSource source, ForestPrecision precision, int32_t num_features,
		   const ForestNode *nodes, const int32_t *tree_sizes, int32_t num_trees,
		   const uint32_t *words, int64_t num_words)
{
	SilvanStatus status;
	Forest	   *forest = ForestCreate(&status);
	int64_t		total = 0;

	forest->source = source;
	forest->category_rule = source == FOREST_SOURCE_XGBOOST ?
		FOREST_CATEGORY_NONNEGATIVE : FOREST_CATEGORY_TRUNCATE;
	forest->precision = precision;
	forest->num_features = num_features;
	ForestAllocBaseMargin(forest, 1, &status);
	ForestAllocTrees(forest, num_trees, &status);
	for (int32_t t = 0; t < num_trees; t++)
	{
		forest->trees[t].first_node = total;
		forest->trees[t].num_nodes = tree_sizes[t];
		total += tree_sizes[t];
	}
	ForestAllocNodes(forest, total, &status);
	memcpy(forest->nodes, nodes, sizeof(ForestNode) * total);
	ForestAllocCategoryWords(forest, num_words, &status);
	if (num_words > 0)
		memcpy(forest->category_words, words, sizeof(uint32_t) * num_words);
	if (!ForestValidate(forest, &status))
	{
		fprintf(stderr, "hand forest invalid: %s: %s\n", status.message, status.detail);
		ForestFree(forest);
		return NULL;
	}
	return forest;
}

#define LEAF(v) {.kind = FOREST_NODE_LEAF, .feature = -1, .left = -1, .right = -1, .leaf_value = (v)}

/* Margins of a few rows, compiled with the default schedule */
static void
CompiledMargins(const Forest *forest, const void *rows, int64_t num_rows, void *acc)
{
	SilvanStatus status;
	CompiledForest *compiled = CompileForest(forest, NULL, NULL, &status);

	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	ForestMarginsInit(forest, acc, num_rows);
	if (compiled)
		CompiledForestAccumulate(compiled, rows, num_rows, acc);
	CompiledForestFree(compiled);
}

/* x <= +inf: every number goes left, NaN to the default */
static void
TestLessEqualInfinity(void)
{
	ForestNode	nodes[] = {
		{.kind = FOREST_NODE_NUMERIC, .compare = FOREST_CMP_LE, .feature = 0,
		.left = 1, .right = 2, .threshold = INFINITY},
		LEAF(1.0), LEAF(2.0),
		{.kind = FOREST_NODE_NUMERIC, .compare = FOREST_CMP_LE, .feature = 0,
		.left = 1, .right = 2, .threshold = INFINITY, .default_left = 1},
		LEAF(10.0), LEAF(20.0)
	};
	int32_t		sizes[] = {3, 3};
	double		rows[] = {INFINITY, -INFINITY, NAN, 0.0, DBL_MAX};
	double		acc[5];
	double		want[5] = {11.0, 11.0, 12.0, 11.0, 11.0};
	Forest	   *forest = HandForest(FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, 1,
									nodes, sizes, 2, NULL, 0);

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	CompiledMargins(forest, rows, 5, acc);
	CHECK(memcmp(acc, want, sizeof(want)) == 0);
	CheckForest("le +inf", forest);
	ForestFree(forest);
}

/* Thresholds that are doubles in a float forest compare exactly */
static void
TestFloatThresholds(void)
{
	ForestNode	nodes[] = {
		{.kind = FOREST_NODE_NUMERIC, .compare = FOREST_CMP_LT, .feature = 0,
		.left = 1, .right = 2, .threshold = 0.1},
		LEAF(1.0), LEAF(2.0),
		{.kind = FOREST_NODE_NUMERIC, .compare = FOREST_CMP_LE, .feature = 0,
		.left = 1, .right = 2, .threshold = 0.1},
		LEAF(10.0), LEAF(20.0)
	};
	int32_t		sizes[] = {3, 3};
	float		rows[] = {0.1f, nextafterf(0.1f, 0), nextafterf(0.1f, 1), NAN};
	float		acc[4];
	Forest	   *forest = HandForest(FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 1,
									nodes, sizes, 2, NULL, 0);
	float		want[4];

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	ForestMarginsInit(forest, want, 4);
	ForestInterpretAccumulate(forest, rows, 4, want);
	CompiledMargins(forest, rows, 4, acc);
	CHECK(memcmp(acc, want, sizeof(want)) == 0);
	/* 0.1f > 0.1, so it fails both x < 0.1 and x <= 0.1 */
	CHECK(acc[0] == 22.0f);
	CHECK(acc[1] == 11.0f);
	ForestFree(forest);
}

/* Categories: XGBoost rejects negatives, LightGBM truncates (-1, 0) to 0 */
static void
TestCategories(void)
{
	ForestNode	nodes[] = {
		{.kind = FOREST_NODE_CATEGORICAL, .feature = 0, .left = 1, .right = 2,
		.category_offset = 0, .category_words = 2, .default_left = 1},
		LEAF(1.0), LEAF(2.0)
	};
	int32_t		sizes[] = {1 + 2};
	uint32_t	words[] = {0x1u | 0x4u, 0x1u};	/* {0, 2, 32} */
	double		rows[] = {0.0, 2.0, 2.9, 1.0, 32.0, 33.0, 64.0, -0.5, -1.0, NAN,
	1e10, 16777216.0, INFINITY, -INFINITY};
	int			n = (int) (sizeof(rows) / sizeof(rows[0]));
	double		acc[14];
	double		xgb[14] = {2, 2, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	double		lgb[14] = {1, 1, 1, 2, 1, 2, 2, 1, 2, 1, 2, 2, 2, 2};
	Forest	   *forest = HandForest(FOREST_SOURCE_XGBOOST, FOREST_FLOAT64, 1,
									nodes, sizes, 1, words, 2);

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	CompiledMargins(forest, rows, n, acc);
	CHECK(memcmp(acc, xgb, sizeof(xgb)) == 0);
	forest->source = FOREST_SOURCE_LIGHTGBM;
	forest->category_rule = FOREST_CATEGORY_TRUNCATE;
	forest->nodes[0].category_in_left = 1;
	CompiledMargins(forest, rows, n, acc);
	CHECK(memcmp(acc, lgb, sizeof(lgb)) == 0);
	CheckForest("categories", forest);
	ForestFree(forest);
}

/* ZERO rule: NaN and tiny values take the default; NONE: NaN compares as 0 */
static void
TestMissingRules(void)
{
	ForestNode	nodes[] = {
		{.kind = FOREST_NODE_NUMERIC, .compare = FOREST_CMP_LE, .feature = 0,
		.left = 1, .right = 2, .threshold = -1.0, .missing = FOREST_MISSING_ZERO,
		.default_left = 1},
		LEAF(1.0), LEAF(2.0),
		{.kind = FOREST_NODE_NUMERIC, .compare = FOREST_CMP_LE, .feature = 0,
		.left = 1, .right = 2, .threshold = 0.0, .missing = FOREST_MISSING_NONE},
		LEAF(10.0), LEAF(20.0)
	};
	int32_t		sizes[] = {3, 3};
	double		rows[] = {NAN, 0.0, 1e-36, -1e-36, 1e-34, -2.0, 5.0};
	double		want[] = {11, 11, 21, 11, 22, 11, 22};
	double		acc[7];
	Forest	   *forest = HandForest(FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, 1,
									nodes, sizes, 2, NULL, 0);

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	CompiledMargins(forest, rows, 7, acc);
	CHECK(memcmp(acc, want, sizeof(want)) == 0);
	ForestFree(forest);
}

/* Padding: a leaf at depth 1 in a depth-2 tree becomes a dummy and two copies */
static void
TestHirPadding(void)
{
	ForestNode	nodes[] = {
		{.kind = FOREST_NODE_NUMERIC, .feature = 0, .left = 1, .right = 2, .threshold = 0.5},
		LEAF(1.0),
		{.kind = FOREST_NODE_NUMERIC, .feature = 0, .left = 3, .right = 4, .threshold = 1.5},
		LEAF(2.0), LEAF(3.0)
	};
	int32_t		sizes[] = {5};
	Forest	   *forest = HandForest(FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 1,
									nodes, sizes, 1, NULL, 0);
	SilvanStatus status;
	Hir		   *hir;
	char	   *text;

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	hir = HirBuildPadded(forest, 8, &status);
	CHECK(hir != NULL);
	CHECK(hir->num_nodes == 7);
	CHECK(hir->num_padding_nodes == 2);
	CHECK(hir->nodes[1].padding && hir->nodes[1].left == 3);
	CHECK(hir->nodes[4].copy && hir->nodes[3].source == hir->nodes[4].source);
	CHECK(hir->nodes[2].left == 5);
	text = HirDump(hir, true);
	CHECK(text && strstr(text, "n1: pad -> n3, n4") != NULL);
	free(text);
	HirFree(hir);
	hir = HirBuildPadded(forest, 1, &status);
	CHECK(hir->num_nodes == 5 && hir->num_unpadded == 1);
	HirFree(hir);
	ForestFree(forest);
}

/* A schedule that parses but does not compile: kind and a piece of the detail */
static void
CheckBadSchedule(const Forest *forest, const char *text, SilvanErrorKind kind,
				 const char *detail)
{
	Schedule	schedule;
	SilvanStatus status;
	CompiledForest *compiled;

	if (!ScheduleParse(text, &schedule, &status))
	{
		CHECK_MSG(false, "%s: does not parse: %s", text, status.detail);
		return;
	}
	compiled = CompileForest(forest, &schedule, NULL, &status);
	CHECK_MSG(compiled == NULL && status.kind == kind && strstr(status.detail, detail),
			  "%s: %s: %s", text, compiled ? "compiled" : status.message,
			  compiled ? "" : status.detail);
	CompiledForestFree(compiled);
}

/* Schedule text, explain text, and bad schedules */
static void
TestScheduleAndExplain(void)
{
	GenOptions	o = BaseOptions();
	Forest	   *forest = GenForest(&o);
	Schedule	schedule;
	SilvanStatus status;
	CompiledForest *compiled;
	char	   *text;

	/* the fallback profile: 16 rows in lock-step; TestVectorWalk has vectors */
	ScheduleDefault(forest, 4096, NULL, &schedule);
	CHECK(schedule.num_loops == 4 && schedule.vars[schedule.loops[0].var].param == 512 &&
		  schedule.vars[schedule.loops[1].var].kind == INDEX_TREE &&
		  schedule.vars[schedule.loops[3].var].interleave &&
		  schedule.vars[schedule.loops[3].var].param == 16 &&
		  schedule.vars[schedule.loops[3].var].walk_args[0] == 5 &&
		  strcmp(schedule.representation, "perfect") == 0);	/* float trees of depth 5 */
	text = ScheduleToText(&schedule);
	CHECK_MSG(text && strncmp(text, "tile(batch, b0, b1, 512)\nreorder(b0, tree, b1)\n"
							  "tile(b1, b2, b3, 16)\ninterleave(b3)\nunrollWalk(b3, 5)\n"
							  "parallel(b0)\nrepresentation(perfect)", 137) == 0, "%s", text);
	free(text);
	ScheduleDefault(forest, 16, NULL, &schedule);
	CHECK(schedule.num_loops == 3 && schedule.vars[schedule.loops[0].var].kind == INDEX_TREE);
	text = ScheduleToText(&schedule);
	CHECK_MSG(text && strncmp(text, "reorder(tree, batch)\ntile(batch, b0, b1, 16)\n", 44) == 0,
			  "%s", text);
	free(text);

	compiled = CompileForest(forest, NULL, NULL, &status);
	CHECK(compiled != NULL);
	text = CompiledForestExplain(compiled, true);
	CHECK(text && strstr(text, "schedule: ") && strstr(text, "hir: 12 trees") &&
		  strstr(text, "mir:") && strstr(text, "walkDecisionTree") &&
		  strstr(text, "define void @silvan_"));
	/* the default's 16 rows a tree take the root's hop with one load of it */
	CHECK_MSG(text && strstr(text, "b_root_hop"), "no shared root hop");
	free(text);
	text = CompiledForestExplain(compiled, false);
	{
		/* each pass's time, in the pipeline's order; tiling and device code did not run */
		const char *order[] = {"passes: normalize ", ", schedule ", ", check ", ", mir ", ", hir ",
		", layout ", ", estimate ", ", explain text ", ", codegen ", ", llvm "};
		const char *at = text;

		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && at != NULL; i++)
			at = strstr(at, order[i]);
		CHECK_MSG(at != NULL && strstr(text, "tiling") == NULL && strstr(text, "device code") == NULL,
				  "%s", text);
	}
	free(text);
	text = CompiledForestExplain(compiled, false);
	CHECK(text && strstr(text, "define void") == NULL);
	free(text);
	CHECK(CompiledForestCompileMillis(compiled) > 0.0);
	CompiledForestFree(compiled);

	CheckBadSchedule(forest, "tile(batch, b0, b1, 64); reorder(b0, tree, b1); unrollWalk(b1, 40)",
					 SILVAN_ERROR_INVALID, "unrollWalk(b1, 40)");
	CheckBadSchedule(forest, "tile(batch, b0, b1, 64); peelWalk(tree, 33)",
					 SILVAN_ERROR_INVALID, "peelWalk(tree, 33)");
	CheckBadSchedule(forest, "tile(batch, b0, b1, 64); reorder(b1, b0)",
					 SILVAN_ERROR_INVALID, "loop b0, or the loops it was tiled into, must enclose it");
	/* b1's tile is b2 * 4 + b3: b3 inside b1 left it unknown (wrong margins, once) */
	CheckBadSchedule(forest, "tile(batch, b0, b1, 32); tile(b0, b2, b3, 4); reorder(b2, tree, b1, b3)",
					 SILVAN_ERROR_INVALID, "loop b0, or the loops it was tiled into, must enclose it");
	CheckBadSchedule(forest, "tile(batch, b0, b1, 32); tile(b0, b2, b3, 4); reorder(b2, b1, b3, tree)",
					 SILVAN_ERROR_INVALID, "Loop b1 iterates within a tile of batch");
	CheckBadSchedule(forest, "tileTrees(4, probabilistic)",
					 SILVAN_ERROR_INVALID, "silvan.profile");
	ScheduleTiled(&schedule, 64, 4, 4, "bitmap");
	CHECK(CompileForest(forest, &schedule, NULL, &status) == NULL);
	CHECK(status.kind == SILVAN_ERROR_INVALID && strstr(status.detail, "bitmap"));
	ScheduleTiled(&schedule, 64, 99, 4, "sparse");
	compiled = CompileForest(forest, &schedule, NULL, &status);
	text = compiled ? CompiledForestExplain(compiled, false) : NULL;
	CHECK_MSG(text && strstr(text, "representation: sparse") && strstr(text, "step 16"),
			  "%s", text ? text : status.detail);
	free(text);
	CompiledForestFree(compiled);
	ForestFree(forest);
}

/* Real models: parse, compile, compare with the interpreter */
/*
 * The default schedule of LightGBM forests of small numeric trees is the
 * bitvector code walk at batches of 64 rows or more; a smaller batch, a
 * forest with categorical splits or one with too many splits keeps the
 * other defaults
 */
static void
TestBitvectorDefault(void)
{
	static const struct
	{
		const char *path;
		int32_t		batch;
		bool		bits;
		bool		specialized;	/* trees of at most 8 leaves */
	}			cases[] = {
		{"siboehm_lleaves/tests--models--NYC_taxi--model.txt", 1024, true, false},
		{"siboehm_lleaves/tests--models--NYC_taxi--model.txt", 64, true, false},
		{"siboehm_lleaves/tests--models--NYC_taxi--model.txt", 63, false, false},
		{"siboehm_lleaves/tests--models--NYC_taxi--model.txt", 1, false, false},
		{"siboehm_lleaves/tests--models--multiclass--model.txt", 1024, true, true},	/* 4-6 leaves */
		{"siboehm_lleaves/tests--models--boston_housing--model.txt", 256, true, false},
		{"siboehm_lleaves/tests--models--airline--model.txt", 1024, true, false},	/* sets of <= 288 */
		{"siboehm_lleaves/tests--models--mtpl2--model.txt", 1024, true, false},	/* 30,000 splits */
		{"siboehm_lleaves/tests--models--mtpl2--model.txt", 63, false, false},
		{"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json", 1024, false, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		Forest	   *forest = LoadSharedModel(cases[i].path);
		Schedule	schedule;
		char	   *text;

		CHECK_MSG(forest != NULL, "%s does not load", cases[i].path);
		if (forest == NULL)
			continue;
		ScheduleDefault(forest, cases[i].batch, NULL, &schedule);
		text = ScheduleToText(&schedule);
		CHECK_MSG(text != NULL && (strstr(text, "bitvector") != NULL) == cases[i].bits,
				  "%s at batch %d: %s", cases[i].path, cases[i].batch, text ? text : "(none)");
		CHECK_MSG(text != NULL && (strstr(text, "specialize(tree)") != NULL) == cases[i].specialized,
				  "%s at batch %d: %s", cases[i].path, cases[i].batch, text ? text : "(none)");
		free(text);
		ForestFree(forest);
	}

	/* one set wider than a category table's span keeps airline off bitvectors */
	{
		Forest	   *forest = LoadSharedModel("siboehm_lleaves/tests--models--airline--model.txt");
		Schedule	schedule;
		char	   *text;

		CHECK(forest != NULL);
		if (forest == NULL)
			return;
		for (int64_t n = 0; n < forest->num_nodes; n++)
			if (forest->nodes[n].kind == FOREST_NODE_CATEGORICAL)
			{
				forest->nodes[n].category_offset = 0;
				forest->nodes[n].category_words = CODE_WALK_BITS_MAX_KEYS / 32 + 1;
				break;
			}
		CHECK(forest->num_category_words > CODE_WALK_BITS_MAX_KEYS / 32);
		ScheduleDefault(forest, 1024, NULL, &schedule);
		text = ScheduleToText(&schedule);
		CHECK_MSG(text != NULL && strstr(text, "bitvector") == NULL, "wide set: %s",
				  text ? text : "(none)");
		free(text);
		ForestFree(forest);
	}
}

/*
 * The bitvector walk's tables and tree functions, on lleaves' NYC_taxi
 * (trees of up to 31 leaves) under its default schedule, gathers on and
 * off: with gathers a tree's leaf values are one gather (not a load per
 * lane), without them loads; either way the margins are the
 * interpreter's.  Each tree function is emitted final: marked so that the
 * function passes skip it, and with none of the code it does not use
 * (its lane pointers into the stage, clamps of an icmp and a select each)
 */
static void
TestBitvectorTables(void)
{
	Forest	   *forest = LoadSharedModel("siboehm_lleaves/tests--models--NYC_taxi--model.txt");
	bool		avx2 = CgHasFeature(JitHostCpuFeatures(), "avx2");
	HostProfile host;
	void	   *rows;

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	rows = GenRows(forest, 1000);
	for (int gather = 0; gather <= 1; gather++)
	{
		CompiledForest *compiled;
		char	   *text;
		char	   *tree;
		char	   *end;

		if ((compiled = CompileDefaultFor(forest, HostWith(&host, HOST_CHOICE_GATHER, gather),
										  gather ? "gathers on" : "gathers off")) == NULL)
			continue;
		CHECK_MSG(SameMargins(forest, compiled, rows, 1000, "bitvector tables"), "gather %d", gather);
		text = CompiledForestExplain(compiled, true);
		CHECK(text != NULL && strstr(text, "bitvector") != NULL);
		CHECK_MSG(text != NULL &&
				  (strstr(text, "llvm.masked.gather.v8f64") != NULL) == (gather && avx2),
				  "gather %d: leaves %s", gather, text && strstr(text, "v8f64") ? "gathered" : "loaded");
		CHECK_MSG(text != NULL && strstr(text, JIT_NO_PASSES) != NULL, "gather %d: not marked", gather);
		/* tree 0's definition, up to its end */
		tree = text ? strstr(text, "_bits0_w8_staged_acc(") : NULL;
		end = tree ? strstr(tree, "\n}\n") : NULL;
		CHECK_MSG(tree != NULL && end != NULL, "gather %d: no tree function", gather);
		if (end != NULL)
		{
			*end = '\0';
			CHECK_MSG(strstr(tree, "icmp slt i64") == NULL, "gather %d: dead lane clamps", gather);
			CHECK_MSG(strstr(tree, "load i8*, i8**") != NULL &&
					  strstr(tree, "%partials = load") == NULL,
					  "gather %d: unused argument fields kept", gather);
		}
		free(text);
		CompiledForestFree(compiled);
	}
	free(rows);
	ForestFree(forest);

	/*
	 * lleaves' multiclass (trees of 4-6 leaves) specializes the tree loop:
	 * each tree's code sits in its loop over the tile's rows (the
	 * thresholds' loads before the loop), the rows past the last full
	 * vector call the tree's function one by one; margins the interpreter's for
	 * batches of whole vectors, of a remainder, and of fewer rows than a
	 * vector
	 */
	forest = LoadSharedModel("siboehm_lleaves/tests--models--multiclass--model.txt");
	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	rows = GenRows(forest, 1000);
	{
		static const int64_t batches[] = {1000, 517, 7, 1};
		CompiledForest *compiled = CompileDefault(forest, "multiclass");
		char	   *text;
		char	   *loop;
		char	   *end;

		for (size_t b = 0; compiled != NULL && b < sizeof(batches) / sizeof(batches[0]); b++)
			CHECK_MSG(SameMargins(forest, compiled, rows, batches[b], "trees in place"),
					  "multiclass, %lld rows", (long long) batches[b]);
		text = compiled ? CompiledForestExplain(compiled, true) : NULL;
		CHECK(text != NULL && strstr(text, "specialize(tree)") != NULL);
		/* a remainder calls the tree's function row by row: no loop of four */
		CHECK_MSG(text != NULL && strstr(text, "step 8 (remainder 1)") != NULL,
				  "multiclass: %s", text && strstr(text, "step 8") ? strstr(text, "step 8") : "no step");
		loop = text ? strstr(text, "define internal fastcc void @silvan_forest_batch_spec1(") : NULL;
		end = loop ? strstr(loop, "\n}\n") : NULL;
		CHECK_MSG(loop != NULL && end != NULL, "multiclass: no specialized tree loop");
		if (end != NULL)
		{
			char	   *body = strstr(loop, "b_b3_w8_body:");

			*end = '\0';
			CHECK_MSG(body != NULL && strstr(body, "fcmp") != NULL,
					  "multiclass: the tree's code is not in its loop");
			CHECK_MSG(body != NULL && strstr(loop, "v_code_const") != NULL && strstr(loop, "v_code_const") < body,
					  "multiclass: thresholds loaded in the loop");
		}
		free(text);
		CompiledForestFree(compiled);
	}
	free(rows);
	ForestFree(forest);
}

/*
 * A 65,536-class LightGBM model (three trees of one split) under the
 * staged bitvector default: its margins stay out of the stage, which
 * would take 142 MB of stack and an unrolled copy of 65,536 classes per
 * row (which LLVM does not finish compiling); the code still agrees with the
 * interpreter
 */
static void
TestManyClassesStage(void)
{
	size_t		len;
	char	   *text = ReadFile("test/fixtures/many_classes.txt", &len);
	SilvanStatus status;
	Forest	   *forest = text ? ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status) : NULL;
	Schedule	schedule;
	CompiledForest *compiled;
	double		rows[2 * 300];
	char	   *explain = NULL;

	free(text);
	CHECK_MSG(forest != NULL && forest->num_groups == 65536, "many_classes.txt loads");
	if (forest == NULL)
		return;
	ScheduleDefault(forest, 1024, NULL, &schedule);
	compiled = CompileForest(forest, &schedule, NULL, &status);
	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	if (compiled != NULL)
		explain = CompiledForestExplain(compiled, true);
	CHECK_MSG(explain && strstr(explain, "bitvector") != NULL && strstr(explain, "%v_stage") != NULL &&
			  strstr(explain, "%v_stage_acc") == NULL,
			  "the rows are staged, the 65,536 classes' margins are not");
	free(explain);
	for (int r = 0; r < 300; r++)
	{
		rows[2 * r] = (r % 7) / 7.0;
		rows[2 * r + 1] = 0.0;
	}
	if (compiled != NULL)
	{
		double	   *want = malloc(sizeof(double) * 300 * 65536);
		double	   *got = malloc(sizeof(double) * 300 * 65536);

		ForestMarginsInit(forest, want, 300);
		ForestInterpretAccumulate(forest, rows, 300, want);
		ForestMarginsInit(forest, got, 300);
		CompiledForestAccumulate(compiled, rows, 300, got);
		CHECK_MSG(memcmp(want, got, sizeof(double) * 300 * 65536) == 0,
				  "the margins are the interpreter's");
		free(want);
		free(got);
		CompiledForestFree(compiled);
	}
	ForestFree(forest);
}

/*
 * Code that a pipelined batch may split by rows (CompiledForestSplitRows)
 * scores any ranges of a batch, each called on its own slice, exactly as
 * one call of the whole batch; code of privatized sums may not be split;
 * a forest whose code outgrows a core's cache is split in larger ranges
 */
static void
TestSplitRows(void)
{
	static const struct
	{
		const char *path;
		const char *schedule;	/* NULL: the default at batch 1024 */
		int64_t		split_rows;
	}			cases[] = {
		{"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json", NULL, 64},
		{"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
		 "tile(tree, t0, t1, 10); reorder(t0, batch, t1); parallel(t0)", 0},
		{"siboehm_lleaves/tests--models--NYC_taxi--model.txt", NULL, 64},
		{"siboehm_lleaves/tests--models--multiclass--model.txt", NULL, 64},
		{"siboehm_lleaves/tests--models--mtpl2--model.txt", NULL, 256},
	};
	static const int64_t cuts[] = {0, 64, 320, 384, 1000};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		Forest	   *forest = LoadSharedModel(cases[i].path);
		Schedule	schedule;
		SilvanStatus status;
		CompiledForest *compiled;
		void	   *rows;
		size_t		row_bytes;
		size_t		acc_row;
		char	   *whole;
		char	   *split;

		CHECK_MSG(forest != NULL, "%s does not load", cases[i].path);
		if (forest == NULL)
			continue;
		if (cases[i].schedule == NULL)
			ScheduleDefault(forest, 1024, NULL, &schedule);
		else
			CHECK(ScheduleParse(cases[i].schedule, &schedule, &status));
		compiled = CompileForest(forest, &schedule, NULL, &status);
		CHECK_MSG(compiled != NULL, "%s: %s", cases[i].path, compiled ? "" : status.message);
		if (compiled == NULL)
		{
			ForestFree(forest);
			continue;
		}
		CHECK_MSG(CompiledForestSplitRows(compiled) == cases[i].split_rows,
				  "%s [%s]: ranges of %lld rows, not %lld", cases[i].path,
				  cases[i].schedule ? cases[i].schedule : "default",
				  (long long) CompiledForestSplitRows(compiled), (long long) cases[i].split_rows);
		rows = GenRows(forest, 1000);
		row_bytes = ForestValueSize(forest) * (size_t) forest->num_features;
		acc_row = ForestValueSize(forest) * (size_t) forest->num_groups;
		whole = malloc(acc_row * 1000);
		split = malloc(acc_row * 1000);
		ForestMarginsInit(forest, whole, 1000);
		CompiledForestAccumulate(compiled, rows, 1000, whole);
		for (int c = 0; c + 1 < (int) (sizeof(cuts) / sizeof(cuts[0])); c++)
		{
			int64_t		n = cuts[c + 1] - cuts[c];

			ForestMarginsInit(forest, split + acc_row * cuts[c], n);
			CompiledForestAccumulate(compiled, (char *) rows + row_bytes * cuts[c], n,
									 split + acc_row * cuts[c]);
		}
		/* (the tree-parallel schedule adds trees in another order) */
		if (cases[i].split_rows > 0)
			CHECK_MSG(memcmp(whole, split, acc_row * 1000) == 0 &&
					  SameMargins(forest, compiled, rows, 1000, cases[i].path),
					  "%s: ranges scored apart differ from the whole batch", cases[i].path);
		free(whole);
		free(split);
		free(rows);
		CompiledForestFree(compiled);
		ForestFree(forest);
	}
}

/*
 * perfect's hops as one add-with-carry (llvm.x86.addcarry.64) or as shift
 * and add, as the host profile says: the same margins as the interpreter either
 * way, explain and the LLVM IR say which
 */
static void
TestCarryHops(void)
{
	Forest	   *forest = LoadSharedModel("asprasad_treebeard/xgb_models--higgs_xgb_model_save.json");
	HostProfile host;
	void	   *rows;

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	rows = GenRows(forest, 1000);
	for (int carry = 0; carry < 2; carry++)
	{
		CompiledForest *compiled;
		char	   *text;

		if ((compiled = CompileDefaultFor(forest, HostWith(&host, HOST_CHOICE_CARRY, carry),
										  carry ? "carry hops" : "shift hops")) == NULL)
			continue;
		text = CompiledForestExplain(compiled, true);
		CHECK_MSG(text && strstr(text, "representation: perfect (plain") &&
				  (strstr(text, "hops add with carry") != NULL) == carry &&
				  (strstr(text, "@llvm.x86.addcarry.64") != NULL) == carry,
				  "carry %d: explain does not say so", carry);
		CHECK_MSG(SameMargins(forest, compiled, rows, 1000, "carry hops"), "carry %d", carry);
		free(text);
		CompiledForestFree(compiled);
	}
	free(rows);
	ForestFree(forest);
}

/* Compile higgs' default with integer keys on or off; check explain, the IR and margins */
static void
CheckKeyHops(const Forest *forest, const void *rows, int keys, bool expect_keys, const char *what)
{
	HostProfile host;
	CompiledForest *compiled;
	char	   *text;
	static const int64_t batches[] = {1, 3, 1000};

	if ((compiled = CompileDefaultFor(forest, HostWith(&host, HOST_CHOICE_KEYS, keys), what)) == NULL)
		return;
	text = CompiledForestExplain(compiled, true);
	CHECK_MSG(text && (strstr(text, "integer keys, hops add with carry") != NULL) == expect_keys &&
			  (strstr(text, "icmp ult i32") != NULL) == expect_keys &&
			  (!expect_keys || strstr(text, "@llvm.x86.addcarry.64") != NULL),
			  "%s: explain or IR do not say whether keys are compared", what);
	for (int i = 0; i < 3; i++)
		CHECK_MSG(SameMargins(forest, compiled, rows, batches[i], what), "%s: %lld rows", what,
				  (long long) batches[i]);
	free(text);
	CompiledForestFree(compiled);
}

/*
 * Integer keys (repr_keys.c): higgs' default with keys compares them,
 * its splits rewritten to send NaN right (b' <u x), then left (x <u b,
 * children swapped); the margins are the interpreter's bit for bit on
 * rows of NaNs, zeros, infinities and exact thresholds.  A forest of one
 * tree does not repay the keys, so it compares floats.
 */
static void
TestKeyHops(void)
{
	Forest	   *forest = LoadSharedModel("asprasad_treebeard/xgb_models--higgs_xgb_model_save.json");
	void	   *rows;
	int32_t		num_trees;

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	rows = GenRows(forest, 1000);
	CheckKeyHops(forest, rows, 0, false, "higgs, floats");
	for (int left = 0; left < 2; left++)
	{
		for (int64_t i = 0; i < forest->num_nodes; i++)
			forest->nodes[i].default_left = left;
		CheckKeyHops(forest, rows, 1, true, left ? "higgs, keys, NaN left" : "higgs, keys, NaN right");
	}
	num_trees = forest->num_trees;
	forest->num_trees = 1;
	CheckKeyHops(forest, rows, 1, false, "one tree of higgs");
	forest->num_trees = num_trees;
	free(rows);
	ForestFree(forest);
}

/*
 * vectorWalk: rows as the lanes of AVX-512 vectors (walk_vector.c).
 * On every host, each model and batch size (whole vectors, the 16-row and
 * lock-step remainders) equals the interpreter bit for bit, whether the op
 * walks as vectors or falls back to lock-step in groups of 16 (another
 * layout, tree lanes, doubles, categorical splits, no AVX-512).  Where the
 * host has AVX-512F, explain and the IR say the vectors are used, and the
 * default schedule of a perfect-layout forest asks for them unless told not to.
 */
static void
TestVectorWalk(void)
{
	static const char *const paths[] = {
		"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--test--leftheavy_xgb_model.json",
		"Elvenson_xgboost-go/test--data--iris_xgboost.json",
		"dmitryikh_leaves/testdata--lg_rf_iris.model",
		"dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json",
	};
	static const char *const schedules[] = {
		"tile(batch, b0, b1, 128)\nreorder(b0, tree, b1)\ninterleave(b1)\nvectorWalk(b1)\n"
		"parallel(b0)\nrepresentation(perfect)\n",
		"tile(batch, b0, b1, 100)\nreorder(b0, tree, b1)\ninterleave(b1)\nvectorWalk(b1)\n"
		"representation(perfect)\n",
		"tile(batch, b0, b1, 128)\nreorder(b0, tree, b1)\ninterleave(b1)\nvectorWalk(b1)\n"
		"representation(array)\n",
		"tile(batch, b0, b1, 64)\ntile(tree, t0, t1, 16)\nreorder(b0, b1, t0, t1)\n"
		"interleave(t1)\nvectorWalk(t1)\nrepresentation(perfect)\n",
	};
	static const int64_t batches[] = {1, 17, 128, 1000};
	bool		vectors = CgHasFeature(JitHostCpuFeatures(), "avx512f");
	int			walked_as_vectors = 0;

	for (size_t m = 0; m < sizeof(paths) / sizeof(paths[0]); m++)
	{
		Forest	   *forest = LoadSharedModel(paths[m]);
		void	   *rows;

		CHECK_MSG(forest != NULL, "%s", paths[m]);
		if (forest == NULL)
			continue;
		rows = GenRows(forest, 1000);
		for (size_t s = 0; s < sizeof(schedules) / sizeof(schedules[0]); s++)
		{
			Schedule	schedule;
			SilvanStatus status;
			CompiledForest *compiled;
			char	   *text;

			CHECK(ScheduleParse(schedules[s], &schedule, &status));
			compiled = CompileForest(forest, &schedule, NULL, &status);
			CHECK_MSG(compiled != NULL, "%s [%zu]: %s: %s", paths[m], s,
					  compiled ? "" : status.message, compiled ? "" : status.detail);
			if (compiled == NULL)
				continue;
			for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++)
				CHECK_MSG(SameMargins(forest, compiled, rows, batches[b], "vectorWalk"),
						  "%s [%zu], %lld rows", paths[m], s, (long long) batches[b]);
			text = CompiledForestExplain(compiled, true);
			CHECK(text && strstr(text, "vectorWalk"));
			if (text && strstr(text, "llvm.x86.avx512.vpermi2var.ps.512") &&
				strstr(text, "llvm.masked.gather.v16f32"))
			{
				walked_as_vectors++;
				/* only the perfect layout's plain float records, rows as lanes */
				CHECK_MSG(s < 2 && forest->precision == FOREST_FLOAT32 && vectors,
						  "%s [%zu] walked as vectors", paths[m], s);
			}
			free(text);
			CompiledForestFree(compiled);
		}
		free(rows);
		ForestFree(forest);
	}
	if (!vectors)
	{
		printf("  skip: no AVX-512F on this host; vectorWalk checked in lock-step only\n");
		return;
	}
	/* higgs, year and iris (three groups) under the two perfect schedules; leftheavy is too small */
	CHECK_MSG(walked_as_vectors == 6, "%d compiles walked as vectors", walked_as_vectors);
	{
		Forest	   *forest = LoadSharedModel(paths[0]);
		Schedule	schedule;
		char	   *text;

		if (forest == NULL)
			return;
		for (int policy = 0; policy < 2; policy++)
		{
			HostProfile host;

			ScheduleDefault(forest, 1024, HostWith(&host, HOST_CHOICE_VECTOR_WALK, policy),
							&schedule);
			text = ScheduleToText(&schedule);
			CHECK_MSG(text && (strstr(text, "interleave(b1)\nvectorWalk(b1)") != NULL) == policy,
					  "policy %d: %s", policy, text);
			free(text);
		}
		ForestFree(forest);
	}
}

static void
TestRealModels(void)
{
	static const char *const paths[] = {
		"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--airline_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--bosch_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--test--Random_1Tree--TestModel_Size1_0.json",
		"asprasad_treebeard/xgb_models--test--Random_4Tree--TestModel_Size4_2.json",
		"asprasad_treebeard/xgb_models--test--leftheavy_xgb_model.json",
		"asprasad_treebeard/xgb_models--test--rightandleftheavy_xgb_model.json",
		"Elvenson_xgboost-go/test--data--iris_xgboost.json",
		"dmitryikh_leaves/testdata--lg_breast_cancer.txt",
		"dmitryikh_leaves/testdata--lg_kddcup99.model",
		"dmitryikh_leaves/testdata--lgmulticlass.model",
		"dmitryikh_leaves/testdata--lg_rf_iris.model",
		"dmitryikh_leaves/testdata--lg_dart_breast_cancer.model",
		"dmitryikh_leaves/testdata--model_simple.txt",
		"dmitryikh_leaves/testdata--genlin_fmtp_gamma_AvgClaimAmount.model",
		"dmlc_treelite/tests--examples--toy_categorical--toy_categorical_model.txt",
		"dmlc_treelite/tests--examples--sparse_categorical--sparse_categorical_model.txt",
		"dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json",
		"dmlc_treelite/tests--examples--lightgbm_constant_tree--model_with_constant_tree.txt",
		"siboehm_lleaves/tests--models--NYC_taxi--model.txt",
		"siboehm_lleaves/tests--models--airline--model.txt",
		"siboehm_lleaves/tests--models--boston_housing--model.txt",
		"siboehm_lleaves/tests--models--leaf_scan--model.txt",
		"siboehm_lleaves/tests--models--mixed_categorical--model.txt",
		"siboehm_lleaves/tests--models--mtpl2--model.txt",
		"siboehm_lleaves/tests--models--multiclass--model.txt",
		"siboehm_lleaves/tests--models--pure_categorical--model.txt",
		"siboehm_lleaves/tests--models--single_tree--model.txt",
		"siboehm_lleaves/tests--models--tiniest_single_tree--model.txt",
	};
	int			checked = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
	{
		Forest	   *forest = LoadSharedModel(paths[i]);
		SilvanStatus status;
		CompiledForest *compiled;

		if (forest == NULL)
			continue;
		compiled = CompileForest(forest, NULL, NULL, &status);
		CHECK_MSG(compiled != NULL, "%s: %s: %s", paths[i], status.message, status.detail);
		if (compiled)
			printf("  %s: %d trees, depth %d, compiled in %.1f ms\n", paths[i],
				   forest->num_trees, forest->max_depth,
				   CompiledForestCompileMillis(compiled));
		CompiledForestFree(compiled);
		CheckForest(paths[i], forest);
		ForestFree(forest);
		checked++;
	}
	printf("  %d real models checked\n", checked);
}

int
main(void)
{
	TestHirPadding();
	TestLessEqualInfinity();
	TestFloatThresholds();
	TestCategories();
	TestMissingRules();
	TestScheduleAndExplain();
	TestGenerated();
	TestBitvectorDefault();
	TestBitvectorTables();
	TestManyClassesStage();
	TestSplitRows();
	TestCarryHops();
	TestKeyHops();
	TestVectorWalk();
	TestRealModels();
	UNIT_DONE();
}
