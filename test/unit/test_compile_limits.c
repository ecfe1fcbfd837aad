/*
 * test_compile_limits.c
 *		The compile's bound (compile_cost.c) and its answer to a cancel
 *		request in every phase (cancel.h).
 *
 * A schedule whose code is over a limit is refused before any code is
 * generated, with SILVAN_ERROR_LIMIT naming the directive; the estimate
 * stays within a factor of two of what code generation then makes; every
 * real model's default schedule and every point of the tuner's space for
 * a spread of them stays within the default limits.  A cancel request
 * stops the compile in the phase it comes in (lowering, code generation,
 * LLVM's passes, instruction selection), with SILVAN_ERROR_CANCELED, and
 * from a timer it lands within a second while LLVM works on the biggest
 * functions the limits allow.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "silvan/cancel.h"
#include "silvan/compile_cost.h"
#include "silvan/compiler.h"
#include "silvan/parse.h"
#include "silvan/runtime.h"
#include "silvan/text.h"
#include "silvan/tune.h"
#include "unit.h"

/* The bomb of the attack: trees of one split, specialized, sixteen rows at a time */
#define BOMB_SCHEDULE "tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree); interleave(b1)"

/* Seconds on a monotonic clock */
static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A LightGBM model of num_trees trees, each splitting depth levels deep, parsed */
static Forest *
TreesOfDepth(int32_t num_trees, int32_t depth)
{
	TextBuf		buf = {0};
	int32_t		leaves = 1 << depth;
	SilvanStatus status;
	Forest	   *forest;

	TextAppend(&buf, "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
			   "max_feature_idx=3\nobjective=regression\nfeature_names=a b c d\n"
			   "feature_infos=[-1:1] [-1:1] [-1:1] [-1:1]\n\n");
	for (int32_t t = 0; t < num_trees; t++)
	{
		TextAppend(&buf, "Tree=%d\nnum_leaves=%d\nnum_cat=0\nsplit_feature=", t, leaves);
		for (int32_t s = 0; s < leaves - 1; s++)
			TextAppend(&buf, "%s%d", s ? " " : "", (t + s) % 4);
		TextAppend(&buf, "\nsplit_gain=");
		for (int32_t s = 0; s < leaves - 1; s++)
			TextAppend(&buf, "%s1", s ? " " : "");
		TextAppend(&buf, "\nthreshold=");
		for (int32_t s = 0; s < leaves - 1; s++)
			TextAppend(&buf, "%s%g", s ? " " : "", ((t * 7 + s * 3) % 17) / 17.0 - 0.5);
		TextAppend(&buf, "\ndecision_type=");
		for (int32_t s = 0; s < leaves - 1; s++)
			TextAppend(&buf, "%s2", s ? " " : "");
		/* a complete tree in breadth-first order: split s's children 2s+1, 2s+2 */
		TextAppend(&buf, "\nleft_child=");
		for (int32_t s = 0; s < leaves - 1; s++)
			TextAppend(&buf, "%s%d", s ? " " : "",
					   2 * s + 1 < leaves - 1 ? 2 * s + 1 : -(2 * s + 1 - (leaves - 1)) - 1);
		TextAppend(&buf, "\nright_child=");
		for (int32_t s = 0; s < leaves - 1; s++)
			TextAppend(&buf, "%s%d", s ? " " : "",
					   2 * s + 2 < leaves - 1 ? 2 * s + 2 : -(2 * s + 2 - (leaves - 1)) - 1);
		TextAppend(&buf, "\nleaf_value=");
		for (int32_t l = 0; l < leaves; l++)
			TextAppend(&buf, "%s%g", l ? " " : "", ((t + l) % 9) * 0.125 - 0.5);
		TextAppend(&buf, "\nshrinkage=1\n\n");
	}
	TextAppend(&buf, "end of trees\n");
	forest = ParseModel(buf.data, buf.len, MODEL_FORMAT_LIGHTGBM_TEXT, NULL, &status);
	CHECK_MSG(forest != NULL, "generated model: %s: %s", status.message, status.detail);
	free(buf.data);
	return forest;
}

/* Compile with a schedule's text under limits (NULL: the defaults); NULL and the status on failure */
static CompiledForest *
CompileTextLimited(const Forest *forest, const char *text, const CompileLimits *limits,
				   SilvanStatus *status)
{
	CompileOptions options = {.limits = limits};
	Schedule	schedule;

	if (text != NULL && !ScheduleParse(text, &schedule, status))
		return NULL;
	return CompileForestFor(forest, text ? &schedule : NULL, NULL, &options, status);
}

/* The same under the default limits */
static CompiledForest *
CompileText(const Forest *forest, const char *text, SilvanStatus *status)
{
	return CompileTextLimited(forest, text, NULL, status);
}

/* The attack's schedule is refused before code generation, naming specialize(tree) */
static void
TestBombRefused(void)
{
	Forest	   *forest = TreesOfDepth(512, 1);
	SilvanStatus status;
	CompiledForest *compiled;
	double		start = Now();

	compiled = CompileText(forest, BOMB_SCHEDULE, &status);
	CHECK(compiled == NULL);
	CHECK_MSG(status.kind == SILVAN_ERROR_LIMIT, "kind %d: %s", status.kind, status.detail);
	CHECK_MSG(strstr(status.detail, "specialize(tree)") != NULL, "%s", status.detail);
	CHECK_MSG(strstr(status.detail, "estimated before generating code") != NULL, "%s",
			  status.detail);
	CHECK_MSG(strstr(status.hint, "silvan.compile_max_function_") != NULL, "%s", status.hint);
	/* refused by the estimate: no code was generated, so it is quick */
	CHECK_MSG(Now() - start < 1.0, "refusal took %.2f s", Now() - start);
	printf("  bomb refused: %s\n  hint: %s\n", status.detail, status.hint);
	CompiledForestFree(compiled);
	ForestFree(forest);
}

/*
 * Counted is checked too: with the estimate's bound off a schedule still
 * cannot reach LLVM over the count's (limits lowered below the count)
 */
static void
TestCountRefused(void)
{
	Forest	   *forest = TreesOfDepth(64, 1);
	CompileLimits tight = *CompileLimitsDefault();
	SilvanStatus status;
	CompiledForest *compiled;
	CompileCost estimated;
	CompileCost counted;

	compiled = CompileText(forest, "tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree)",
						   &status);
	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	if (compiled == NULL)
		return;
	CompiledForestCost(compiled, &estimated, &counted);
	CHECK(counted.instructions > 0 && counted.largest_function > 0);
	CHECK(counted.largest_function_loops >= 64);
	CompiledForestFree(compiled);
	/* a limit the estimate passes (it is above the count) but the count does not */
	tight.max_function_loops = counted.largest_function_loops - 1;
	compiled = CompileTextLimited(forest,
								  "tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree)",
								  &tight, &status);
	CHECK(compiled == NULL && status.kind == SILVAN_ERROR_LIMIT);
	CHECK_MSG(strstr(status.detail, "loops") != NULL, "%s", status.detail);
	CompiledForestFree(compiled);
	ForestFree(forest);
}

/* The estimate against the count: within a factor of two, or small */
static void
CheckEstimate(const char *what, const Forest *forest, const char *text)
{
	SilvanStatus status;
	CompileLimits none = {0};
	CompiledForest *compiled;
	CompileCost e;
	CompileCost c;

	compiled = CompileTextLimited(forest, text, &none, &status);
	/* reorg and perfect refuse deep trees */
	CHECK_MSG(compiled != NULL || status.kind == SILVAN_ERROR_UNSUPPORTED, "%s %s: %s: %s",
			  what, text ? text : "default", status.message, status.detail);
	if (compiled == NULL)
		return;
	CompiledForestCost(compiled, &e, &c);
	CHECK_MSG(e.instructions <= 2 * c.instructions + 2000 && c.instructions <= 2 * e.instructions + 2000,
			  "%s %s: estimated %lld instructions, counted %lld", what, text ? text : "default",
			  (long long) e.instructions, (long long) c.instructions);
	CHECK_MSG(e.largest_function <= 2 * c.largest_function + 2000 &&
			  c.largest_function <= 2 * e.largest_function + 2000,
			  "%s %s: largest function estimated %lld, counted %lld", what,
			  text ? text : "default", (long long) e.largest_function,
			  (long long) c.largest_function);
	CHECK_MSG(e.largest_function_loops <= 2 * c.largest_function_loops + 16 &&
			  c.largest_function_loops <= 2 * e.largest_function_loops + 16,
			  "%s %s: most loops estimated %lld, counted %lld", what, text ? text : "default",
			  (long long) e.largest_function_loops, (long long) c.largest_function_loops);
	CompiledForestFree(compiled);
}

/* Estimates of a spread of schedules and models */
static void
TestEstimates(void)
{
	static const char *const texts[] = {
		NULL,
		"tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree)",
		"tile(batch, b0, b1, 64); reorder(b0, tree, b1); interleave(b1)",
		"tile(batch, b0, b1, 16); reorder(b0, tree, b1); interleave(b1); earlyExitWalk(b1)",
		"tile(batch, b0, b1, 256); tile(tree, t0, t1, 8); reorder(b0, t0, b1, t1); specialize(t0); specialize(t1); codeWalk(t1, 7, branchy)",
		"tile(batch, b0, b1, 256); tile(tree, t0, t1, 8); reorder(b0, t0, b1, t1); specialize(t0); specialize(t1); codeWalk(t1, 15, select)",
		"tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1); codeWalk(b1, 63, bitvector)",
		"tile(tree, t0, t1, 8); reorder(t0, batch, t1); specialize(t0); specialize(t1); codeWalk(t1, 15, branchy)",
		"tile(batch, b0, b1, 128); reorder(b0, tree, b1); interleave(b1); vectorWalk(b1); representation(perfect)",
		"tile(batch, b0, b1, 64); reorder(b0, tree, b1); interleave(b1); representation(reorg); tileTrees(4, uniform)",
		"tile(batch, b0, b1, 256); reorder(b0, tree, b1); parallel(b0)",
	};
	static const char *const models[] = {
		"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
		"siboehm_lleaves/tests--models--NYC_taxi--model.txt",
		"dmitryikh_leaves/testdata--lgmulticlass.model",
	};
	Forest	   *forest = TreesOfDepth(48, 4);

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		CheckEstimate("generated", forest, texts[i]);
	ForestFree(forest);
	for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++)
	{
		if ((forest = LoadSharedModel(models[m])) == NULL)
			continue;
		for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
			CheckEstimate(models[m], forest, texts[i]);
		ForestFree(forest);
	}
}

/*
 * Every real model's default schedules and, for a spread of them, points
 * spread over the tuner's space at its batch sizes stay within the
 * default limits (estimates only: no code is generated; test_tune.c
 * compiles the space's points)
 */
static void
TestWithinLimits(void)
{
	static const char *const models[] = {
		"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
		"asprasad_treebeard/xgb_models--bosch_xgb_model_save.json",
		"siboehm_lleaves/tests--models--NYC_taxi--model.txt",
		"siboehm_lleaves/tests--models--airline--model.txt",
		"siboehm_lleaves/tests--models--mtpl2--model.txt",
		"siboehm_lleaves/tests--models--multiclass--model.txt",
		"dmitryikh_leaves/testdata--lg_kddcup99.model",
	};
	static const int32_t batch_sizes[] = {1, 64, 1024, 4096, 8192};
	static TuneCpuPoint points[20000];
	int64_t		checked = 0;

	for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++)
	{
		Forest	   *forest = LoadSharedModel(models[m]);

		if (forest == NULL)
			continue;
		for (size_t b = 0; b < sizeof(batch_sizes) / sizeof(batch_sizes[0]); b++)
		{
			TuneShape	shape;
			Schedule	schedule;
			CompileCost cost;
			SilvanStatus status;
			int			n;

			ScheduleDefault(forest, batch_sizes[b], NULL, &schedule);
			CHECK_MSG(CompileEstimate(forest, &schedule, NULL, NULL, &cost, &status) &&
					  CompileCheckCost(&cost, CompileLimitsDefault(), true, &status),
					  "%s default at %d: %s", models[m], batch_sizes[b], status.detail);
			TuneShapeOf(forest, batch_sizes[b], 2, false, false, NULL, &shape);
			n = TuneCpuExhaustive(&shape, points, 20000);
			/* a spread of about 24 of them */
			for (int i = 0; i < n; i += n / 24 + 1)
			{
				char		text[TUNE_MAX_TEXT];

				if (!TuneCpuText(&shape, &points[i], text, sizeof(text)) ||
					!ScheduleParse(text, &schedule, &status))
					continue;
				/* a schedule the compiler cannot lower is no compile to bound */
				if (!CompileEstimate(forest, &schedule, NULL, NULL, &cost, &status))
					continue;
				CHECK_MSG(CompileCheckCost(&cost, CompileLimitsDefault(), true, &status), "%s at %d: %s: %s", models[m],
						  batch_sizes[b], text, status.detail);
				checked++;
			}
		}
		ForestFree(forest);
	}
	printf("  %lld tuner candidates within the default limits\n", (long long) checked);
}

/* The cancel check: true from the call after cancel_after calls, or once the timer set it */
static atomic_long cancel_calls;
static long cancel_after;
static atomic_bool cancel_flag;

static bool
TestCancelCheck(void)
{
	return atomic_load(&cancel_flag) ||
		(cancel_after >= 0 && atomic_fetch_add(&cancel_calls, 1) >= cancel_after);
}

/* Compile with the check returning true from call k on; the status */
static bool
CompileCanceledAt(const Forest *forest, const char *text, long k, SilvanStatus *status)
{
	CompiledForest *compiled;

	atomic_store(&cancel_calls, 0);
	cancel_after = k;
	CancelSetCheck(TestCancelCheck);
	compiled = CompileText(forest, text, status);
	CancelSetCheck(NULL);
	CompiledForestFree(compiled);
	return compiled == NULL;
}

/*
 * A cancel request in each phase stops the compile there: the check
 * answering true from its k-th call on for every k of a compile (calls
 * happen between phases, per specialized copy, per function of the
 * passes, after each function's machine code), each phase met
 */
static void
TestCancelEachPhase(void)
{
	Forest	   *forest = TreesOfDepth(64, 3);
	const char *text = "tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree)";
	bool		seen_lowering = false;
	bool		seen_generating = false;
	bool		seen_optimizing = false;
	bool		seen_compiling = false;
	long		k;

	for (k = 0; k < 100000; k += k < 200 ? 1 : 50)
	{
		SilvanStatus status;

		if (!CompileCanceledAt(forest, text, k, &status))
			break;				/* the check came too late: the compile finished */
		CHECK_MSG(status.kind == SILVAN_ERROR_CANCELED, "k=%ld: %s: %s", k, status.message,
				  status.detail);
		seen_lowering |= strstr(status.detail, "lowering") != NULL ||
			strstr(status.detail, "laying out") != NULL;
		seen_generating |= strstr(status.detail, "generating code") != NULL;
		seen_optimizing |= strstr(status.detail, "optimizing") != NULL;
		seen_compiling |= strstr(status.detail, "compiling the generated code") != NULL;
	}
	CHECK_MSG(seen_lowering && seen_generating && seen_optimizing && seen_compiling,
			  "phases stopped in: lowering %d, generating %d, optimizing %d, compiling %d",
			  seen_lowering, seen_generating, seen_optimizing, seen_compiling);
	printf("  canceled in every phase (%ld checks in a whole compile)\n", k);
	ForestFree(forest);
}

/* The timer: set the flag after delay seconds, note when */
typedef struct CancelTimer
{
	double		delay;
	double		fired;
} CancelTimer;

static void *
TimerMain(void *arg)
{
	CancelTimer *timer = arg;

	usleep((useconds_t) (timer->delay * 1e6));
	timer->fired = Now();
	atomic_store(&cancel_flag, true);
	return NULL;
}

/*
 * A cancel from a timer halfway through a long compile lands within a
 * second, on one thread and on two (the helper thread emits half the
 * module): lleaves' blocks of trees, each block a function of 2,000
 * splits in code, and a single function at the default loop limit
 */
static void
TestCancelLatency(void)
{
	static const struct
	{
		const char *what;
		int32_t		trees;
		int32_t		depth;
		const char *text;
	}			cases[] = {
		{"blocks of trees", 480, 6,
		"tile(batch, b0, b1, 256); tile(tree, t0, t1, 32); reorder(b0, t0, b1, t1); "
		"specialize(t0); specialize(t1); codeWalk(t1, 63, branchy); fullCodegen()"},
		{"one function of many loops", COMPILE_MAX_FUNCTION_LOOPS_DEFAULT / 2 - 4, 6,
		"tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree)"},
	};
	int			saved_threads = RuntimeMaxThreads();

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		Forest	   *forest = TreesOfDepth(cases[c].trees, cases[c].depth);

		for (int threads = 1; threads <= 2; threads++)
		{
			CancelTimer timer = {.delay = 0};
			pthread_t	thread;
			SilvanStatus status;
			CompiledForest *compiled;
			double		start;
			double		whole;
			double		landed;

			RuntimeSetMaxThreads(threads);
			start = Now();
			compiled = CompileText(forest, cases[c].text, &status);
			whole = Now() - start;
			CHECK_MSG(compiled != NULL, "%s: %s: %s", cases[c].what, status.message, status.detail);
			CompiledForestFree(compiled);
			timer.delay = whole / 2;
			atomic_store(&cancel_flag, false);
			cancel_after = -1;
			CancelSetCheck(TestCancelCheck);
			pthread_create(&thread, NULL, TimerMain, &timer);
			compiled = CompileText(forest, cases[c].text, &status);
			landed = Now();
			pthread_join(thread, NULL);
			CancelSetCheck(NULL);
			CHECK_MSG(compiled == NULL && status.kind == SILVAN_ERROR_CANCELED,
					  "%s, %d thread(s): not canceled (%s)", cases[c].what, threads, status.detail);
			CHECK_MSG(landed - timer.fired < 1.0, "%s, %d thread(s): landed %.3f s after the request",
					  cases[c].what, threads, landed - timer.fired);
			printf("  %s, %d thread(s): whole compile %.2f s; canceled at %.2f s, landed %.3f s "
				   "later (%s)\n", cases[c].what, threads, whole, timer.delay,
				   landed - timer.fired, status.detail);
			CompiledForestFree(compiled);
		}
		ForestFree(forest);
	}
	RuntimeSetMaxThreads(saved_threads);
	atomic_store(&cancel_flag, false);
}

/* Run every test, or those named on the command line */
int
main(int argc, char **argv)
{
	static const struct
	{
		const char *name;
		void		(*run) (void);
	}			tests[] = {
		{"bomb", TestBombRefused},
		{"count", TestCountRefused},
		{"estimates", TestEstimates},
		{"phases", TestCancelEachPhase},
		{"latency", TestCancelLatency},
		{"within", TestWithinLimits},
	};

	for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++)
	{
		bool		named = argc < 2;

		for (int a = 1; a < argc; a++)
			named = named || strcmp(argv[a], tests[t].name) == 0;
		if (named)
			tests[t].run();
	}
	UNIT_DONE();
}
