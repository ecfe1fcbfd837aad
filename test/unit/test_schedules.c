/*
 * test_schedules.c
 *		Every representation under a spread of schedule-language nests,
 *		against the reference interpreter.
 *
 * Schedules cover the loop shapes of SilvanForge section 3 and the draft's
 * section 5: the default, row-parallel (XGBoost's), tree-parallel, both,
 * interleaved over rows and over trees, unrolled, peeled, one tree at a
 * time, tiled batch/tree nests, splits (fission, with the copies' names),
 * caching, the reduction directives, reorderTrees, the Tahoe GPU nests
 * whose gpuDimension a CPU ignores, and the walk strategies: code walks
 * (branches and selects, every nest that fixes the tree at compile time,
 * tops of 1 to 64 splits, so that both whole trees and buffer entries
 * below the top run), early-exit walks and vector walks (AVX-512 lanes in
 * the perfect layout where the CPU has them, lock-step elsewhere).  Each runs with every representation
 * on hand-built forests and real models, on batches that leave tile
 * remainders, with the thread pool at 1 and 3 threads; the core schedules
 * run in perfect once more with its hops as add-with-carry and once as
 * shift and add, whichever this CPU takes by default.
 *
 * Serial schedules must equal the interpreter bit for bit.  Schedules that
 * sum trees in another order (a parallel loop over trees, reorderTrees)
 * must agree within 1e-6 (1 + |x|) in float32 and 1e-12 (1 + |x|) in
 * float64.
 *
 * ONNX semantics (TestOnnxSemantics): forests whose splits compare with
 * every kind (<, <=, >=, >, ==, !=), thresholds that rows hit exactly, NaN
 * in the rows, under SUM, MIN and MAX aggregation, get the whole spread,
 * tiles included.  MIN and MAX without -0 leaves must equal the interpreter
 * bit for bit under every schedule, tree-parallel (privatized partials
 * folded in chunk order), atomic and reordered ones too: the fold picks one
 * of the values, and only equal values of different bits (0 and -0) could
 * tell the order apart; with -0 leaves, the serial schedules stay exact.  A representation may refuse a model it cannot hold (reorg and perfect:
 * deep trees) with SILVAN_ERROR_UNSUPPORTED; anything else is a failure.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/jit.h"
#include "silvan/parse.h"
#include "silvan/runtime.h"
#include "unit.h"

/* One schedule of the spread */
typedef struct TestSchedule
{
	const char *name;
	const char *text;			/* NULL: ScheduleDefault */
	bool		reorders;		/* sums in another order: compare with tolerance */
} TestSchedule;

static const TestSchedule schedules[] = {
	{"default", NULL, false},
	{"row-parallel", "tile(batch, b0, b1, 256); reorder(b0, tree, b1); parallel(b0)", false},
	{"tree-parallel", "tile(tree, t0, t1, 25); reorder(t0, batch, t1); parallel(t0)", true},
	{"both", "tile(batch, b0, b1, 256); tile(tree, t0, t1, 25); reorder(b0, t0, b1, t1); "
	"parallel(b0); parallel(t0)", true},
	{"tree-parallel inside row tiles", "tile(batch, b0, b1, 100); tile(tree, t0, t1, 3); "
	"reorder(b0, t0, b1, t1); parallel(t0)", true},
	{"interleaved", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); tile(b1, b2, b3, 8); "
	"interleave(b3)", false},
	{"unrolled", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); tile(b1, b2, b3, 4); "
	"interleave(b3); unrollWalk(b3, 6)", false},
	{"peeled", "tile(batch, b0, b1, 32); reorder(b0, tree, b1); peelWalk(b1, 3)", false},
	{"peeled, interleaved", "tile(batch, b0, b1, 50); reorder(b0, tree, b1); interleave(b1); "
	"peelWalk(b1, 2)", false},
	{"one tree at a time", "reorder(tree, batch)", false},
	{"batch then tree", "", false},
	{"trees interleaved", "tile(tree, t0, t1, 4); interleave(t1); unrollWalk(t1, 6)", false},
	{"trees interleaved, unpadded", "tile(batch, b0, b1, 16); tile(tree, t0, t1, 3); "
	"reorder(b0, t0, b1, t1); interleave(t1)", false},
	{"seed: two trees over the batch", "tile(tree, t0, t1, 2); reorder(t0, batch, t1)", false},
	{"seed: 4 rows by 2 trees", "tile(batch, b0, b1, 4); tile(tree, t0, t1, 2); "
	"reorder(b0, t0, b1, t1)", false},
	{"seed: xgboost", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); parallel(b0)", false},
	{"seed: tahoe direct", "tile(batch, b0, b1, 32); reorder(b0, b1, tree); "
	"gpuDimension(b0, grid.x); gpuDimension(b1, block.x)", false},
	{"seed: tahoe shared data", "reorder(batch, tree); gpuDimension(batch, grid.x); "
	"gpuDimension(tree, block.x); cache(batch)", false},
	{"seed: tahoe shared forest", "tile(batch, b0, b1, 16); tile(tree, t0, t1, 1000); "
	"reorder(b0, b1, t0, t1); cache(t0); gpuDimension(b0, grid.x); gpuDimension(b1, block.x)",
	false},
	{"split trees, specialized walks", "reorder(tree, batch); split(tree, t_a, t_b, 3); "
	"unrollWalk(batch_t_a, 4); peelWalk(batch_t_b, 2)", false},
	{"split rows", "split(batch, lo, hi, 100); tile(tree_hi, t0, t1, 5); reorder(t0, hi, t1)",
	false},
	{"split a tile", "tile(batch, b0, b1, 10); reorder(b0, tree, b1); split(b1, c, d, 7)", false},
	{"tile of tiles", "tile(batch, b0, b1, 8); tile(b0, b2, b3, 3); reorder(b2, tree, b3, b1)",
	false},
	{"cached", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); cache(b0); cache(tree)", false},
	{"atomic", "tile(tree, t0, t1, 10); reorder(t0, batch, t1); parallel(t0); atomicReduce(t0)",
	true},
	{"vector reduce", "tile(tree, t0, t1, 7); reorder(t0, batch, t1); parallel(t0); "
	"vectorReduce(t0, 8)", true},
	{"reordered trees", "tile(batch, b0, b1, 128); reorder(b0, tree, b1); tile(b1, b2, b3, 16); "
	"interleave(b3); unrollWalk(b3, 8); reorderTrees()", true},
	/* 27: walk strategies */
	{"code walk, trees inside rows", "tile(batch, b0, b1, 16); reorder(b0, b1, tree); "
	"parallel(b0); specialize(tree); codeWalk(tree, 6, branchy)", false},
	{"code walk, selects", "tile(batch, b0, b1, 16); reorder(b0, b1, tree); specialize(tree); "
	"codeWalk(tree, 3, select)", false},
	{"code walk, rows inside trees", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); "
	"specialize(tree); codeWalk(b1, 5, branchy)", false},
	{"code walk, interleaved rows", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); "
	"tile(b1, b2, b3, 4); interleave(b3); specialize(tree); codeWalk(b3, 4, select)", false},
	{"code walk, tree tiles", "tile(batch, b0, b1, 8); tile(tree, t0, t1, 4); "
	"reorder(b0, t0, b1, t1); specialize(t0); specialize(t1); codeWalk(t1, 64, branchy)", false},
	{"code walk, split trees", "tile(batch, b0, b1, 32); reorder(b0, b1, tree); "
	"split(tree, ta, tb, 2); specialize(ta); specialize(tb); codeWalk(ta, 1, branchy); "
	"codeWalk(tb, 64, select)", false},
	{"early exit", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); earlyExitWalk(b1)", false},
	{"early exit, interleaved", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); "
	"tile(b1, b2, b3, 4); interleave(b3); earlyExitWalk(b3)", false},
	{"early exit, trees interleaved", "tile(tree, t0, t1, 4); interleave(t1); earlyExitWalk(t1)",
	false},
	/* 37: blocks of trees in code, a function per block walking all rows */
	{"code walk, blocks of trees, selects", "tile(tree, t0, t1, 3); reorder(t0, batch, t1); "
	"specialize(t0); specialize(t1); codeWalk(t1, 2, select)", false},
	{"code walk, blocks over row tiles", "tile(batch, b0, b1, 32); tile(tree, t0, t1, 5); "
	"reorder(b0, t0, b1, t1); parallel(b0); specialize(t0); specialize(t1); "
	"codeWalk(t1, 4096, branchy)", false},
	/* 39: whole trees as leaf bitvectors, rows in vectors */
	{"bitvector, interleaved rows", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); "
	"tile(b1, b2, b3, 8); interleave(b3); specialize(tree); codeWalk(b3, 63, bitvector)", false},
	{"bitvector, trees inside rows", "tile(batch, b0, b1, 16); reorder(b0, b1, tree); "
	"specialize(tree); codeWalk(tree, 40, bitvector)", false},
	{"bitvector, blocks over row tiles", "tile(batch, b0, b1, 32); tile(b1, b2, b3, 4); "
	"tile(tree, t0, t1, 5); reorder(b0, t0, b2, t1, b3); parallel(b0); specialize(t0); "
	"specialize(t1); interleave(b3); codeWalk(b3, 12, bitvector)", false},
	/* 42: trees known at run time: a table of tree functions */
	{"bitvector, trees at run time", "tile(batch, b0, b1, 256); tile(b1, b2, b3, 8); "
	"reorder(b0, tree, b2, b3); parallel(b0); interleave(b3); codeWalk(b3, 63, bitvector)", false},
	{"bitvector, trees interleaved", "tile(tree, t0, t1, 4); interleave(t1); "
	"codeWalk(t1, 20, bitvector)", false},
	/* 44: cache(b0) stages the row tile feature-major: table, known trees (their code in the tile loop), one lane */
	{"bitvector, staged rows", "tile(batch, b0, b1, 256); tile(b1, b2, b3, 8); "
	"reorder(b0, tree, b2, b3); parallel(b0); cache(b0); interleave(b3); "
	"codeWalk(b3, 63, bitvector)", false},
	{"bitvector, staged rows, known trees", "tile(batch, b0, b1, 64); reorder(b0, tree, b1); "
	"tile(b1, b2, b3, 8); cache(b0); interleave(b3); specialize(tree); "
	"codeWalk(b3, 63, bitvector)", false},
	{"bitvector, staged rows, one lane", "tile(batch, b0, b1, 16); reorder(b0, tree, b1); "
	"cache(b0); codeWalk(b1, 63, bitvector)", false},
	/* 47: a tile of tiles, whose rows b3 fixes: prefetched, not staged (staged once: wrong) */
	{"bitvector, staged tile of tiles", "tile(batch, b0, b1, 8); tile(b0, b2, b3, 8); "
	"reorder(b2, tree, b3, b1); cache(b2); interleave(b1); codeWalk(b1, 63, bitvector)", false},
	/* 48: staged rows and margins, 16 lanes (remainder rows one by one mask their adds) */
	{"bitvector, staged margins, 16 lanes", "tile(batch, b0, b1, 128); tile(b1, b2, b3, 16); "
	"reorder(b0, tree, b2, b3); cache(b0); interleave(b3); codeWalk(b3, 63, bitvector)", false},
	/* 49: a parallel tree loop inside: its functions add into partial slices, nothing staged */
	{"bitvector, staged, parallel trees inside", "tile(batch, b0, b1, 64); tile(b1, b2, b3, 8); "
	"reorder(b0, tree, b2, b3); parallel(tree); cache(b0); interleave(b3); "
	"codeWalk(b3, 63, bitvector)", true},
	/* 50: rows as the lanes of AVX-512 vectors (perfect layout; lock-step elsewhere) */
	{"vector walk", "tile(batch, b0, b1, 128); reorder(b0, tree, b1); interleave(b1); "
	"vectorWalk(b1); parallel(b0)", false},
	{"vector walk, three vectors", "tile(batch, b0, b1, 48); reorder(b0, tree, b1); "
	"interleave(b1); vectorWalk(b1)", false},
	{"vector walk, trees interleaved", "tile(tree, t0, t1, 4); interleave(t1); vectorWalk(t1)",
	false},
};

#define NUM_SCHEDULES ((int) (sizeof(schedules) / sizeof(schedules[0])))

/* Schedules that also run with tiled trees (indices into schedules[]) */
static const int tiled_schedules[] = {0, 1, 2, 7, 11, 26, 27, 33};

/* The schedules that run on every model (the rest on some) */
static const int core_schedules[] = {0, 1, 2, 3, 5, 7, 9, 11, 27, 29, 33, 50};

#define NUM_CORE_SCHEDULES ((int) (sizeof(core_schedules) / sizeof(core_schedules[0])))

#define NUM_TILED_SCHEDULES ((int) (sizeof(tiled_schedules) / sizeof(tiled_schedules[0])))

/* the first NUM_TILED_REPRESENTATIONS also lay out Treebeard tiles */
static const char *const representations[] = {"array", "sparse", "reorg", "perfect"};

#define NUM_REPRESENTATIONS ((int) (sizeof(representations) / sizeof(representations[0])))
#define NUM_TILED_REPRESENTATIONS 3

/* xorshift64*: deterministic randomness */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint64_t
RandNext(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Rows of the forest's precision: thresholds, their neighbours, NaN, noise */
static void *
MakeRows(const Forest *forest, int64_t num_rows)
{
	int64_t		n = num_rows * forest->num_features;
	void	   *rows = malloc(ForestValueSize(forest) * (size_t) (n > 0 ? n : 1));

	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	r = RandNext();
		double		v;

		if (r % 13 == 0)
			v = NAN;
		else if (r % 7 == 1)
			v = (double) ((r >> 16) % 100);	/* categories past every set's words */
		else if (r % 3 == 0 && forest->num_nodes > 0)
		{
			const ForestNode *node = &forest->nodes[(r >> 8) % (uint64_t) forest->num_nodes];

			v = node->kind == FOREST_NODE_LEAF ? 0.5 : node->threshold;
			if (r % 2)
				v = nextafter(v, r % 4 ? INFINITY : -INFINITY);
		}
		else
			v = ((double) (r >> 11) / 9007199254740992.0) * 40.0 - 10.0;
		if (forest->precision == FOREST_FLOAT32)
			((float *) rows)[i] = (float) v;
		else
			((double *) rows)[i] = v;
	}
	return rows;
}

/*
 * The most a sum of one leaf per tree can move when its terms are added in
 * another order: each order rounds (trees + 1) times, each time by at
 * most half an ulp of a partial sum, which is at most the sum of every
 * tree's largest leaf and the base margins.
 * A margin near zero from large leaves (higgs in float: -0.003 from
 * leaves of about 0.1) moves more than a tolerance relative to itself.
 */
static double
ReorderBound(const Forest *forest)
{
	double		eps = forest->precision == FOREST_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
	double		total = 0.0;

	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		const ForestTree *tree = &forest->trees[t];
		double		largest = 0.0;

		for (int64_t i = tree->first_node; i < tree->first_node + tree->num_nodes; i++)
			if (forest->nodes[i].kind == FOREST_NODE_LEAF && fabs(forest->nodes[i].leaf_value) > largest)
				largest = fabs(forest->nodes[i].leaf_value);
		total += largest;
	}
	for (int32_t g = 0; forest->base_margin != NULL && g < forest->num_groups; g++)
		total += fabs(forest->base_margin[g]);
	return (forest->num_trees + 1) * eps * total;
}

/* Margins equal (exact), or within the tolerance when sums were reordered */
static bool
SameMargins(const Forest *forest, const void *want, const void *got, int64_t n,
			bool tolerant, char *why, size_t why_size)
{
	bool		f32 = forest->precision == FOREST_FLOAT32;
	double		tol = f32 ? 1e-6 : 1e-12;
	double		bound = tolerant ? ReorderBound(forest) : 0.0;

	if (!tolerant)
	{
		if (memcmp(want, got, ForestValueSize(forest) * (size_t) n) == 0)
			return true;
		tol = 0;
	}
	for (int64_t i = 0; i < n; i++)
	{
		double		w = f32 ? ((const float *) want)[i] : ((const double *) want)[i];
		double		g = f32 ? ((const float *) got)[i] : ((const double *) got)[i];
		bool		ok = tolerant ? fabs(w - g) <= tol * (1 + fabs(w)) || fabs(w - g) <= bound ||
			(isnan(w) && isnan(g)) :
			memcmp(&w, &g, sizeof(double)) == 0;

		if (!ok)
		{
			snprintf(why, why_size, "margin %lld: want %.17g got %.17g", (long long) i, w, g);
			return false;
		}
	}
	return true;
}

/*
 * Run one compiled forest on the first num_rows rows; compare with the
 * interpreter's margins for all rows (a batch's margins are their prefix)
 */
static bool
CheckBatch(const Forest *forest, const CompiledForest *compiled, const void *rows,
		   const void *want, int64_t num_rows, bool tolerant, char *why, size_t why_size)
{
	size_t		bytes = ForestValueSize(forest) * (size_t) (num_rows * forest->num_groups);
	void	   *got = malloc(bytes + 8);
	bool		same;

	ForestMarginsInit(forest, got, num_rows);
	CompiledForestAccumulate(compiled, rows, num_rows, got);
	same = SameMargins(forest, want, got, num_rows * forest->num_groups, tolerant,
					   why, why_size);
	free(got);
	return same;
}

static int	compiled_count = 0;
static int	refused_count = 0;

/* Compare bit for bit even where a schedule reorders (MIN/MAX forests) */
static bool force_exact = false;

/* The host profile CheckOne compiles with: the fallback, or a check's choices */
static HostProfile check_host;

/*
 * Compile under one schedule, representation and tiling (tile_size 1: none);
 * compare on several batches
 */
static void
CheckOne(const char *model, const Forest *forest, const TestSchedule *ts,
		 const char *repr, int tile_size, const char *tiling, const ForestProfile *profile,
		 const void *rows, const void *want, int64_t max_rows)
{
	/* 109: remainders of 4 and 1 rows after vectors of 8 (and of 16) */
	static const int64_t batches[] = {1, 3, 109, 1000};
	Schedule	schedule;
	SilvanStatus status;
	CompiledForest *compiled;
	char		text[1024];

	char		what[64];

	snprintf(what, sizeof(what), "%s, tiles of %d %s", repr, tile_size, tiling);
	if (ts->text == NULL)
		ScheduleDefault(forest, 0, &check_host, &schedule);
	else
	{
		snprintf(text, sizeof(text), "%s%srepresentation(%s); tileTrees(%d, %s)", ts->text,
				 ts->text[0] ? "; " : "", repr, tile_size, tiling);
		if (!ScheduleParse(text, &schedule, &status))
		{
			CHECK_MSG(false, "%s: schedule %s does not parse: %s: %s", model, ts->name,
					  status.message, status.detail);
			return;
		}
	}
	snprintf(schedule.representation, sizeof(schedule.representation), "%s", repr);
	if (ts->text == NULL)
	{
		schedule.tile_size = tile_size;
		schedule.tiling = strcmp(tiling, "uniform") == 0 ?
			TREE_TILING_UNIFORM : TREE_TILING_PROBABILISTIC;
	}
	if (getenv("SILVAN_TEST_VERBOSE"))
		fprintf(stderr, "%s [%s, %s]\n", model, ts->name, what);
	compiled = CompileForestFor(forest, &schedule, profile,
								&(CompileOptions) {.host = &check_host}, &status);
	if (compiled == NULL && status.kind == SILVAN_ERROR_UNSUPPORTED &&
		(strcmp(repr, "reorg") == 0 || strcmp(repr, "perfect") == 0))
	{
		refused_count++;
		return;
	}
	CHECK_MSG(compiled != NULL, "%s [%s, %s]: %s: %s", model, ts->name, what,
			  compiled ? "" : status.message, compiled ? "" : status.detail);
	if (compiled == NULL)
		return;
	compiled_count++;
	for (int threads = 1; threads <= 3; threads += 2)
	{
		RuntimeSetMaxThreads(threads);
		for (int i = 0; i < 4 && batches[i] <= max_rows; i++)
		{
			char		why[256] = "";
			bool		same = CheckBatch(forest, compiled, rows, want, batches[i],
										  ts->reorders && !force_exact, why, sizeof(why));

			CHECK_MSG(same, "%s [%s, %s]: %lld rows, %d threads: %s", model, ts->name, what,
					  (long long) batches[i], threads, why);
		}
	}
	RuntimeSetMaxThreads(1);
	CompiledForestFree(compiled);
}

/* How much of the spread a forest gets */
typedef enum Coverage
{
	COVER_CORE,					/* the core schedules */
	COVER_ALL,					/* every schedule */
	COVER_TILED					/* every schedule, and tiled trees */
} Coverage;

/*
 * The schedules, each with every representation, on one forest; with
 * COVER_TILED also tiles of 4 and 8, uniform and probability-based
 * (profiled on the same rows)
 */
static void
CheckForest(const char *model, const Forest *forest, Coverage coverage)
{
	static const int tile_sizes[] = {4, 8};
	static const char *const tilings[] = {"uniform", "probabilistic"};
	int64_t		max_rows = 1000;
	void	   *rows = MakeRows(forest, max_rows);
	ForestProfile profile = {
		.num_rows = max_rows, .num_nodes = forest->num_nodes,
		.node_hits = calloc((size_t) forest->num_nodes + 1, sizeof(int64_t))
	};

	void	   *want = malloc(ForestValueSize(forest) * (size_t) (max_rows * forest->num_groups));

	ForestMarginsInit(forest, want, max_rows);
	ForestInterpretAccumulate(forest, rows, max_rows, want);
	ForestProfileAccumulate(forest, rows, max_rows, profile.node_hits);
	for (int i = 0; i < (coverage == COVER_CORE ? NUM_CORE_SCHEDULES : NUM_SCHEDULES); i++)
		for (int r = 0; r < NUM_REPRESENTATIONS; r++)
			CheckOne(model, forest, &schedules[coverage == COVER_CORE ? core_schedules[i] : i],
					 representations[r], 1, "uniform", NULL, rows, want, max_rows);
	/*
	 * perfect's hops every way: add-with-carry where the cpu has SSE2, then
	 * integer keys (where the forest's records and hops take them)
	 */
	for (int way = 0; way < 3; way++)
	{
		HostProfileSet(&check_host, HOST_CHOICE_CARRY, way == 1);
		HostProfileSet(&check_host, HOST_CHOICE_KEYS, way == 2);
		for (int i = 0; i < NUM_CORE_SCHEDULES; i++)
			CheckOne(model, forest, &schedules[core_schedules[i]], "perfect", 1, "uniform",
					 NULL, rows, want, max_rows);
	}
	HostProfileFallback(&check_host);
	for (int z = 0; coverage == COVER_TILED && z < 2; z++)
	{
		/* tiles of 4 with loads, of 8 with gathers where the cpu has AVX2 */
		HostProfileSet(&check_host, HOST_CHOICE_GATHER, z);
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NUM_TILED_SCHEDULES; s++)
				for (int r = 0; r < NUM_TILED_REPRESENTATIONS; r++)
					CheckOne(model, forest, &schedules[tiled_schedules[s]], representations[r],
							 tile_sizes[z], tilings[k], &profile, rows, want, max_rows);
	}
	HostProfileFallback(&check_host);
	free(want);
	free(profile.node_hits);
	free(rows);
}

/*
 * What RandomForest draws beyond its arguments (TestOnnxSemantics): every
 * comparison kind, thresholds a float holds exactly (so that == meets
 * rows), -0 leaves
 */
static bool random_all_compares = false;
static int	random_signed_zeros = 0;	/* 1 (-1): 0, -0 or positive (negative) leaves */

/* A comparison for a random split: the source's, or any kind */
static uint8_t
RandomCompare(ForestSource source)
{
	if (random_all_compares)
		return (uint8_t) (RandNext() % (FOREST_CMP_NE + 1));
	return source == FOREST_SOURCE_LIGHTGBM ? FOREST_CMP_LE : FOREST_CMP_LT;
}

/* A random threshold; half of them quarters (exact in float) when all kinds */
static double
RandomThreshold(void)
{
	if (random_all_compares && RandNext() % 2)
		return (double) ((int64_t) (RandNext() % 81) - 40) / 4.0;
	return ((double) (RandNext() % 2001) - 1000.0) / 97.0;
}

/*
 * A random leaf value; with signed zeros, half are -0 or +0 and the rest
 * of one sign, so that MIN (MAX) often ties 0 with -0
 */
static double
RandomLeaf(void)
{
	double		v = ((double) (RandNext() % 2001) - 1000.0) / 997.0;

	if (random_signed_zeros == 0)
		return v;
	if (RandNext() % 2 == 0)
		return RandNext() % 2 ? -0.0 : 0.0;
	return random_signed_zeros * (fabs(v) + 0.5);
}

/* A random forest: splits of every rule, uneven depths, several groups */
static Forest *
RandomForest(ForestSource source, ForestPrecision precision, int32_t num_trees,
			 int32_t num_groups, int32_t max_depth, bool categorical)
{
	SilvanStatus status;
	Forest	   *forest = ForestCreate(&status);
	int64_t		cap = 0;
	int64_t		n = 0;
	ForestNode *nodes = NULL;
	uint32_t	words[8] = {0x5u, 0x80000001u, 0x3u, 0xF0u, 0x0u, 0x10000u, 0xFFFF0000u, 0x2u};

	forest->source = source;
	forest->category_rule = source == FOREST_SOURCE_XGBOOST ?
		FOREST_CATEGORY_NONNEGATIVE : FOREST_CATEGORY_TRUNCATE;
	forest->precision = precision;
	forest->num_features = 5;
	forest->task = num_groups > 1 ? FOREST_TASK_MULTICLASS : FOREST_TASK_REGRESSION;
	forest->num_classes = num_groups > 1 ? num_groups : 1;
	ForestAllocBaseMargin(forest, num_groups, &status);
	ForestAllocTrees(forest, num_trees, &status);
	for (int32_t t = 0; t < num_trees; t++)
	{
		int64_t		first = n;
		int32_t		queue_depth[4096];
		int32_t		count = 1;

		forest->trees[t].first_node = first;
		forest->trees[t].group = t % num_groups;
		queue_depth[0] = 0;
		for (int32_t i = 0; i < count; i++)
		{
			ForestNode *node;
			bool		leaf = queue_depth[i] >= max_depth || count + 2 > 4000 ||
				(queue_depth[i] > 0 && RandNext() % 4 == 0) ||
				(t % 7 == 3 && queue_depth[i] >= 1);

			if (n + 1 > cap)
			{
				cap = cap ? cap * 2 : 1024;
				nodes = realloc(nodes, sizeof(ForestNode) * (size_t) cap);
			}
			node = &nodes[n++];
			memset(node, 0, sizeof(ForestNode));
			if (leaf)
			{
				node->kind = FOREST_NODE_LEAF;
				node->feature = node->left = node->right = -1;
				node->leaf_value = RandomLeaf();
				continue;
			}
			node->kind = categorical && RandNext() % 4 == 0 ?
				FOREST_NODE_CATEGORICAL : FOREST_NODE_NUMERIC;
			node->feature = (int32_t) (RandNext() % 5);
			node->compare = RandomCompare(source);
			node->missing = source == FOREST_SOURCE_LIGHTGBM ? (uint8_t) (RandNext() % 3) : 0;
			node->default_left = RandNext() % 2;
			node->threshold = RandomThreshold();
			if (node->kind == FOREST_NODE_CATEGORICAL)
			{
				node->missing = FOREST_MISSING_NAN;
				/* sets of 32, 64 (both in code as immediates) and 96 categories */
				node->category_words = 1 + (int32_t) (RandNext() % 3);
				node->category_offset = (int64_t) (RandNext() % (uint64_t) (9 - node->category_words));
				node->category_in_left = source == FOREST_SOURCE_LIGHTGBM;
			}
			node->left = count;
			node->right = count + 1;
			queue_depth[count] = queue_depth[count + 1] = queue_depth[i] + 1;
			count += 2;
		}
		forest->trees[t].num_nodes = count;
	}
	ForestAllocNodes(forest, n, &status);
	memcpy(forest->nodes, nodes, sizeof(ForestNode) * (size_t) n);
	free(nodes);
	ForestAllocCategoryWords(forest, 8, &status);
	memcpy(forest->category_words, words, sizeof(words));
	if (!ForestValidate(forest, &status))
	{
		fprintf(stderr, "random forest invalid: %s: %s\n", status.message, status.detail);
		ForestFree(forest);
		return NULL;
	}
	return forest;
}

/* Hand-built and random forests */
static void
TestGenerated(void)
{
	struct
	{
		const char *name;
		ForestSource source;
		ForestPrecision precision;
		int32_t		trees;
		int32_t		groups;
		int32_t		depth;
		bool		categorical;
	}			cases[] = {
		{"random xgboost float", FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 23, 1, 6, 0},
		{"random lightgbm double, all rules", FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, 17, 1, 7, true},
		{"random multi-class", FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 31, 3, 5, true},
		{"random deep", FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, 9, 2, 14, false},
		{"single tree", FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 1, 1, 4, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		Forest	   *forest = RandomForest(cases[i].source, cases[i].precision, cases[i].trees,
										  cases[i].groups, cases[i].depth, cases[i].categorical);

		CHECK_MSG(forest != NULL, "%s", cases[i].name);
		if (forest == NULL)
			continue;
		CheckForest(cases[i].name, forest, i < 3 ? COVER_TILED : COVER_ALL);
		ForestFree(forest);
	}
}

/*
 * Partial tops: code walks of 1 to 64 splits per tree, branches, selects
 * and bitvectors (whole trees of up to that many splits), breadth first
 * and by profile, trees inside rows and rows inside
 * trees, with every representation, so that the walk enters the buffers
 * below the top at every depth (the record of the split where the code
 * stopped, with the unchecked hops left from there)
 */
static void
TestPartialTops(void)
{
	static const int budgets[] = {1, 2, 3, 4, 5, 8, 16, 32, 64};
	static const char *const forms[] = {"branchy", "select", "bitvector"};
	static const char *const nests[] = {
		"tile(batch, b0, b1, 16); reorder(b0, b1, tree); specialize(tree); codeWalk(tree, %d, %s)",
		"tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree); codeWalk(b1, %d, %s)",
		"tile(batch, b0, b1, 32); tile(tree, t0, t1, 4); reorder(b0, t0, b1, t1); parallel(b0); "
		"specialize(t0); specialize(t1); codeWalk(t1, %d, %s)",
	};
	struct
	{
		const char *name;
		ForestSource source;
		ForestPrecision precision;
		int32_t		trees;
		int32_t		groups;
		int32_t		depth;
		bool		categorical;
		int			nan_left;	/* -1: as drawn, else every split's default */
	}			cases[] = {
		/* FLAGS records */
		{"partial tops: lightgbm double, all rules", FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, 13, 1, 9, true, -1},
		{"partial tops: xgboost float, categorical", FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 11, 3, 6, true, -1},
		/* SIGN records: NaN-left splits mirrored, their children swapped */
		{"partial tops: xgboost float", FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 11, 1, 8, false, -1},
		/* PLAIN records, NaN left everywhere: every split's children swapped */
		{"partial tops: deep, NaN left", FOREST_SOURCE_XGBOOST, FOREST_FLOAT64, 7, 2, 14, false, 1},
		/* PLAIN records, NaN right everywhere: nothing swapped */
		{"partial tops: NaN right", FOREST_SOURCE_XGBOOST, FOREST_FLOAT32, 9, 1, 10, false, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		Forest	   *forest = RandomForest(cases[i].source, cases[i].precision, cases[i].trees,
										  cases[i].groups, cases[i].depth, cases[i].categorical);
		int64_t		max_rows = 1000;
		void	   *rows;
		void	   *want;
		ForestProfile profile;

		CHECK_MSG(forest != NULL, "%s", cases[i].name);
		if (forest == NULL)
			continue;
		for (int64_t k = 0; cases[i].nan_left >= 0 && k < forest->num_nodes; k++)
			forest->nodes[k].default_left = cases[i].nan_left == 1;
		rows = MakeRows(forest, max_rows);
		want = malloc(ForestValueSize(forest) * (size_t) (max_rows * forest->num_groups));
		profile = (ForestProfile) {
			.num_rows = max_rows, .num_nodes = forest->num_nodes,
			.node_hits = calloc((size_t) forest->num_nodes + 1, sizeof(int64_t))
		};
		ForestMarginsInit(forest, want, max_rows);
		ForestInterpretAccumulate(forest, rows, max_rows, want);
		ForestProfileAccumulate(forest, rows, max_rows, profile.node_hits);
		for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++)
			for (int f = 0; f < (int) (sizeof(forms) / sizeof(forms[0])); f++)
				for (int n = 0; n < (int) (sizeof(nests) / sizeof(nests[0])); n++)
					for (int r = 0; r < NUM_REPRESENTATIONS; r++)
						for (int p = 0; p < 2; p++)
						{
							char		text[512];
							char		name[64];
							TestSchedule ts = {.name = name, .text = text, .reorders = false};

							snprintf(text, sizeof(text), nests[n], budgets[b], forms[f]);
							snprintf(name, sizeof(name), "top %d %s, nest %d%s", budgets[b],
									 forms[f], n, p ? ", profiled" : "");
							CheckOne(cases[i].name, forest, &ts, representations[r], 1,
									 "uniform", p ? &profile : NULL, rows, want, max_rows);
						}
		free(want);
		free(profile.node_hits);
		free(rows);
		ForestFree(forest);
	}
}

/*
 * The bitvector form's category tables (walk_code_bits.c): a tree's
 * categorical splits on one feature are read as one table.  Feature 0's
 * sets span 1,280 categories, more than CODE_WALK_BITS_MAX_KEYS, so its
 * splits keep their own test; the others' span 32-96 and go to tables.
 * Rows hold the edges of a category key: NaN, (-1, 0) (category 0 for
 * LightGBM, none for XGBoost), the last category of a span and the first
 * past it, 2^24 and past, infinities.  Both kinds of read are in the code.
 */
static void
TestCategoryTables(void)
{
	static const double edges[] = {
		NAN, -0.5, -0.99, -1.0, -2.0, 0.0, 0.7, 1.0, 31.0, 31.5, 32.0, 63.0, 64.0, 95.0, 96.0,
		1023.0, 1024.0, 1279.0, 1280.0, 5000.0, 16777215.0, 16777216.0, 1e300, INFINITY, -INFINITY
	};
	static const char *nests[] = {
		"tile(batch, b0, b1, 256); tile(b1, b2, b3, 8); reorder(b0, tree, b2, b3); "
		"interleave(b3); codeWalk(b3, 63, bitvector)",
		"tile(batch, b0, b1, 4); reorder(b0, tree, b1); specialize(tree); interleave(b1); "
		"codeWalk(b1, 63, bitvector)",
		"reorder(batch, tree); codeWalk(tree, 63, bitvector)",
		"tile(batch, b0, b1, 64); tile(b1, b2, b3, 8); reorder(b0, tree, b2, b3); parallel(b0); "
		"cache(b0); interleave(b3); codeWalk(b3, 63, bitvector)"
	};
	const int64_t num_edges = (int64_t) (sizeof(edges) / sizeof(edges[0]));

	for (int c = 0; c < 2; c++)
	{
		ForestSource source = c == 0 ? FOREST_SOURCE_LIGHTGBM : FOREST_SOURCE_XGBOOST;
		ForestPrecision precision = c == 0 ? FOREST_FLOAT64 : FOREST_FLOAT32;
		/* depth 7: trees of 33-64 leaves too, so both i32 and i64 bits */
		Forest	   *forest = RandomForest(source, precision, 13, 1 + c, 7, true);
		int64_t		max_rows = 1000;
		SilvanStatus status;
		void	   *rows;
		void	   *want;

		CHECK(forest != NULL);
		if (forest == NULL)
			continue;
		CHECK(ForestAllocCategoryWords(forest, 48, &status));
		for (int64_t w = 0; w < 48; w++)
			forest->category_words[w] = (uint32_t) RandNext();
		for (int64_t k = 0; k < forest->num_nodes; k++)
		{
			ForestNode *node = &forest->nodes[k];

			if (node->kind != FOREST_NODE_CATEGORICAL)
				continue;
			node->category_words = node->feature == 0 ? 40 : 1 + (int32_t) (RandNext() % 3);
			node->category_offset = (int64_t) (RandNext() % (uint64_t) (49 - node->category_words));
		}
		CHECK_MSG(ForestValidate(forest, &status), "%s: %s", status.message, status.detail);
		rows = MakeRows(forest, max_rows);
		for (int64_t i = 0; i < max_rows * forest->num_features; i += 2)
		{
			double		v = edges[RandNext() % (uint64_t) num_edges];

			if (precision == FOREST_FLOAT32)
				((float *) rows)[i] = (float) v;
			else
				((double *) rows)[i] = v;
		}
		want = malloc(ForestValueSize(forest) * (size_t) (max_rows * forest->num_groups));
		ForestMarginsInit(forest, want, max_rows);
		ForestInterpretAccumulate(forest, rows, max_rows, want);
		for (int n = 0; n < (int) (sizeof(nests) / sizeof(nests[0])); n++)
			for (int r = 0; r < NUM_REPRESENTATIONS; r++)
			{
				TestSchedule ts = {.name = nests[n], .text = nests[n], .reorders = false};

				CheckOne(c == 0 ? "category tables, lightgbm" : "category tables, xgboost", forest,
						 &ts, representations[r], 1, "uniform", NULL, rows, want, max_rows);
			}
		{
			Schedule	schedule;
			CompiledForest *compiled;
			char	   *text = NULL;

			CHECK(ScheduleParse(nests[0], &schedule, &status));
			compiled = CompileForest(forest, &schedule, NULL, &status);
			CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
			if (compiled != NULL)
				text = CompiledForestExplain(compiled, true);
			CHECK_MSG(text && strstr(text, "@silvan_categories") != NULL,
					  "narrow sets are read from category tables");
			CHECK_MSG(text && strstr(text, "%v_word") != NULL,
					  "the wide sets of feature 0 keep their per-split test");
			CHECK_MSG(text && strstr(text, "sitofp <8 x i32>") != NULL &&
					  strstr(text, "lshr <8 x i64>") != NULL,
					  "trees of at most 32 leaves take i32 bits, larger ones i64 (halves)");
			CHECK_MSG(text && (strstr(text, "@llvm.x86.avx2.permd(") != NULL ||
							   strstr(JitHostCpuFeatures(), "+avx2") == NULL),
					  "small trees' leaves are permuted out of registers");
			free(text);
			if (compiled != NULL)
				CompiledForestFree(compiled);
			/* cache(b0) stages the tile: tree functions read it, one load a feature */
			text = NULL;
			CHECK(ScheduleParse(nests[3], &schedule, &status));
			compiled = CompileForest(forest, &schedule, NULL, &status);
			CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
			if (compiled != NULL)
				text = CompiledForestExplain(compiled, true);
			CHECK_MSG(text && strstr(text, "%v_stage") != NULL &&
					  strstr(text, "_staged_acc(") != NULL && strstr(text, "load <8 x ") != NULL,
					  "the staged nest stages the tile and reads it by vectors");
			CHECK_MSG(text && strstr(text, "%v_stage_acc") != NULL &&
					  strstr(text, "fadd <8 x ") != NULL,
					  "the staged nest stages the margins and adds vectors of leaves");
			free(text);
			if (compiled != NULL)
				CompiledForestFree(compiled);
		}
		free(want);
		free(rows);
		ForestFree(forest);
	}
}

/*
 * A block of trees whose code outgrows one function's inline budget
 * (CODEGEN_INLINE_CODE_NODES): the first trees go inline into the block's
 * function, the rest into functions it calls, with the same margins
 */
static void
TestInlineBudget(void)
{
	Forest	   *forest = RandomForest(FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, 24, 2, 14, true);
	int64_t		max_rows = 500;
	int64_t		splits = 0;
	void	   *rows;
	void	   *want;
	TestSchedule ts = {
		.name = "one block of every tree, whole trees in code",
		.text = "tile(batch, b0, b1, 128); tile(tree, t0, t1, 24); reorder(b0, t0, b1, t1); "
		"specialize(t0); specialize(t1); codeWalk(t1, 4096, branchy)",
		.reorders = false
	};

	CHECK(forest != NULL);
	if (forest == NULL)
		return;
	for (int64_t n = 0; n < forest->num_nodes; n++)
		splits += forest->nodes[n].kind != FOREST_NODE_LEAF;
	CHECK_MSG(splits > CODEGEN_INLINE_CODE_NODES, "the forest has %lld splits", (long long) splits);
	rows = MakeRows(forest, max_rows);
	want = malloc(ForestValueSize(forest) * (size_t) (max_rows * forest->num_groups));
	ForestMarginsInit(forest, want, max_rows);
	ForestInterpretAccumulate(forest, rows, max_rows, want);
	for (int r = 0; r < NUM_REPRESENTATIONS; r++)
		CheckOne("inline budget", forest, &ts, representations[r], 1, "uniform", NULL, rows,
				 want, max_rows);
	free(want);
	free(rows);
	ForestFree(forest);
}

/*
 * Thresholds at the edges: infinities, signed zeros, values no float holds
 * (0.1, 1e-40, 1e300), on every fourth split; MakeRows then draws rows at
 * them and their neighbours (infinities, zeros of both signs included)
 */
static void
SpecialThresholds(Forest *forest)
{
	static const double special[] = {INFINITY, -INFINITY, 0.0, -0.0, 0.1, 1e-40, 1e300, -1e300};

	for (int64_t n = 0; n < forest->num_nodes; n++)
		if (forest->nodes[n].kind == FOREST_NODE_NUMERIC && RandNext() % 4 == 0)
			forest->nodes[n].threshold = special[RandNext() % 8];
}

/*
 * ONNX semantics: every comparison kind with NaN rows, and SUM, MIN and
 * MAX aggregation (base margins last, as ONNX forests have them), with
 * every schedule, representation and tiling; MIN and MAX exact everywhere
 * unless -0 leaves make the order of equal values visible
 */
static void
TestOnnxSemantics(void)
{
	struct
	{
		const char *name;
		ForestSource source;	/* LIGHTGBM: ZERO and NONE rules too */
		ForestPrecision precision;
		uint8_t		aggregate;
		int32_t		trees;
		int32_t		groups;
		int32_t		depth;
		int			signed_zeros;	/* random_signed_zeros */
		bool		special;	/* SpecialThresholds */
	}			cases[] = {
		{"onnx compares, float, sum", FOREST_SOURCE_ONNX, FOREST_FLOAT32, FOREST_AGGREGATE_SUM, 19, 1, 6, 0, false},
		{"onnx compares, double, sum, all rules", FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, FOREST_AGGREGATE_SUM, 13, 2, 7, 0, false},
		{"onnx compares, float, min", FOREST_SOURCE_ONNX, FOREST_FLOAT32, FOREST_AGGREGATE_MIN, 23, 1, 6, 0, false},
		{"onnx compares, float, max, 3 groups", FOREST_SOURCE_ONNX, FOREST_FLOAT32, FOREST_AGGREGATE_MAX, 29, 3, 5, 0, false},
		{"onnx compares, double, min, all rules", FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, FOREST_AGGREGATE_MIN, 17, 2, 7, 0, false},
		{"onnx compares, double, max", FOREST_SOURCE_ONNX, FOREST_FLOAT64, FOREST_AGGREGATE_MAX, 11, 1, 9, 0, false},
		{"onnx compares, float, min, signed zeros", FOREST_SOURCE_ONNX, FOREST_FLOAT32, FOREST_AGGREGATE_MIN, 21, 2, 5, 1, false},
		{"onnx compares, double, max, signed zeros", FOREST_SOURCE_ONNX, FOREST_FLOAT64, FOREST_AGGREGATE_MAX, 21, 1, 5, -1, false},
		{"onnx compares, float, max, special thresholds", FOREST_SOURCE_ONNX, FOREST_FLOAT32, FOREST_AGGREGATE_MAX, 15, 1, 6, 0, true},
		{"onnx compares, double, sum, special thresholds", FOREST_SOURCE_LIGHTGBM, FOREST_FLOAT64, FOREST_AGGREGATE_SUM, 15, 1, 6, 0, true},
	};

	random_all_compares = true;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		Forest	   *forest;
		SilvanStatus status;

		random_signed_zeros = cases[i].signed_zeros;
		forest = RandomForest(cases[i].source, cases[i].precision, cases[i].trees,
							  cases[i].groups, cases[i].depth, false);
		CHECK_MSG(forest != NULL, "%s", cases[i].name);
		if (forest == NULL)
			continue;
		if (cases[i].special)
			SpecialThresholds(forest);
		forest->aggregate = cases[i].aggregate;
		forest->base_margin_last = cases[i].source == FOREST_SOURCE_ONNX;
		for (int32_t g = 0; g < forest->num_groups; g++)
			forest->base_margin[g] = 0.25 * (g + 1);
		CHECK_MSG(ForestValidate(forest, &status), "%s: %s", cases[i].name, status.detail);
		CHECK_MSG(ForestUncompiledRule(forest) == NULL, "%s: %s", cases[i].name,
				  ForestUncompiledRule(forest));
		force_exact = cases[i].aggregate != FOREST_AGGREGATE_SUM && !cases[i].signed_zeros;
		CheckForest(cases[i].name, forest, i < 4 ? COVER_TILED : i < 6 || cases[i].special ?
					COVER_ALL : COVER_CORE);
		force_exact = false;
		ForestFree(forest);
	}
	random_all_compares = false;
	random_signed_zeros = 0;
}

/* Real models under ../shared/models, when they are there */
static void
TestRealModels(void)
{
	static const char *const paths[] = {
		"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--test--Random_4Tree--TestModel_Size4_2.json",
		"Elvenson_xgboost-go/test--data--iris_xgboost.json",
		"dmitryikh_leaves/testdata--lg_breast_cancer.txt",
		"dmitryikh_leaves/testdata--lgmulticlass.model",
		"dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json",
		"siboehm_lleaves/tests--models--airline--model.txt",
		"siboehm_lleaves/tests--models--mixed_categorical--model.txt",
		"siboehm_lleaves/tests--models--multiclass--model.txt",
	};
	int			checked = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
	{
		Forest	   *forest = LoadSharedModel(paths[i]);

		if (forest == NULL)
			continue;
		CheckForest(paths[i], forest, i == 0 ? COVER_TILED : i == 3 || i == 8 ? COVER_ALL :
					COVER_CORE);
		ForestFree(forest);
		checked++;
	}
	printf("  %d real models checked\n", checked);
}

int
main(void)
{
	clock_t		start = clock();

	HostProfileFallback(&check_host);

	if (getenv("SILVAN_TEST_ONLY_ONNX") == NULL)
	{
		TestCategoryTables();
		TestPartialTops();
		TestInlineBudget();
		TestGenerated();
		TestRealModels();
	}
	TestOnnxSemantics();
	printf("  %d compiled, %d refused by reorg or perfect, %.1f s\n", compiled_count, refused_count,
		   (double) (clock() - start) / CLOCKS_PER_SEC);
	UNIT_DONE();
}
