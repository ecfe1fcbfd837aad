/*
 * test_host_profile.c
 *		The host profile as a value (host_profile.c), measured by probes
 *		(host_probe.c), and compiles for profiles and CPUs other than the
 *		host's (compile.c's options).
 *
 * The fallback takes each choice's first alternative (16 rows in
 * lock-step) and never one the CPU cannot run; the stored text reads back
 * the same and anything else is refused; measuring decides every choice
 * the CPU can take within its budget, stops when asked, and keeps the
 * fallback's picks past the budget; a compile's explain and its code
 * cache key name the profile it was made with; code made for the
 * baseline x86-64 CPU instead of this host's runs here and equals the
 * interpreter bit for bit, as code made for each test profile does; the
 * default's layout raced on a model keeps one of the two, with the same
 * margins.
 */
#include <math.h>
#include <signal.h>
#include <time.h>

#include "silvan/compiler.h"
#include "silvan/default_race.h"
#include "silvan/host_id.h"
#include "silvan/host_probe.h"
#include "silvan/host_profile.h"
#include "unit.h"

/* Milliseconds on a monotonic clock */
static double
NowMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* The fallback: the host's sets, each choice's fallback pick, none the CPU lacks */
static void
TestFallback(void)
{
	HostProfile p;
	char		key[256];

	HostProfileFallback(&p);
	CHECK(strcmp(p.cpu, HostCpuDescription()) == 0 && !p.measured);
	CHECK(p.sse2 == HostHasFeature("sse2") && p.avx512f == HostHasFeature("avx512f"));
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
		CHECK_MSG(p.choices[c].pick == HostChoiceDescribe(c)->fallback &&
				  p.choices[c].how == HOST_HOW_FALLBACK && p.choices[c].rounds == 0,
				  "choice %s", HostChoiceDescribe(c)->name);
	CHECK(!HostProfileGathers(&p) && !HostProfileCarryHops(&p) && !HostProfileVectorWalk(&p));
	CHECK(HostProfileInterleave(&p) == 16 && strcmp(HostProfileCodeWalkForm(&p), "branchy") == 0);
	HostProfileKey(&p, key, sizeof(key));
	CHECK_MSG(strcmp(key, "carry=0 keys=0 interleave=1 vector_walk=0 gather=0 code_walk=0") == 0,
			  "%s", key);

	/* a CPU without AVX-512F cannot take vector walks, by hand or from text */
	p.avx512f = false;
	CHECK(!HostProfileSet(&p, HOST_CHOICE_VECTOR_WALK, 1));
	CHECK(HostProfileSet(&p, HOST_CHOICE_CODE_WALK, 1) &&
		  p.choices[HOST_CHOICE_CODE_WALK].how == HOST_HOW_SET &&
		  strcmp(HostProfileCodeWalkForm(&p), "select") == 0);
}

/* Text round trip, and what reading refuses */
static void
TestText(void)
{
	static const char *const damaged[] = {
		"silvan host profile 2\n",	/* another version */
		"carry=0\n",
		"",
	};
	HostProfile p;
	HostProfile q;
	char	   *text;
	char	   *bad;
	size_t		len;

	HostProfileFallback(&p);
	p.measured = true;
	p.measure_ms = 812.5;
	p.choices[HOST_CHOICE_CARRY] = (HostChoiceValue) {1, HOST_HOW_MEASURED, 7, {0.5, 0.25}};
	p.choices[HOST_CHOICE_INTERLEAVE] = (HostChoiceValue) {1, HOST_HOW_TIE, 25, {0.3, 0.3}};
	text = HostProfileToText(&p);
	CHECK(text != NULL);
	if (text == NULL)
		return;
	len = strlen(text);
	CHECK(HostProfileFromText(text, len, &q));
	CHECK(strcmp(q.cpu, p.cpu) == 0 && q.measured && fabs(q.measure_ms - 812.5) < 1e-9);
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
		CHECK_MSG(q.choices[c].pick == p.choices[c].pick && q.choices[c].how == p.choices[c].how &&
				  q.choices[c].rounds == p.choices[c].rounds &&
				  q.choices[c].us_per_row[0] == p.choices[c].us_per_row[0] &&
				  q.choices[c].us_per_row[1] == p.choices[c].us_per_row[1],
				  "choice %s", HostChoiceDescribe(c)->name);
	for (size_t i = 0; i < sizeof(damaged) / sizeof(damaged[0]); i++)
		CHECK_MSG(!HostProfileFromText(damaged[i], strlen(damaged[i]), &q), "%s", damaged[i]);
	CHECK(!HostProfileFromText(text, len - 1, &q));	/* cut short */
	bad = malloc(len + 8);
	snprintf(bad, len + 8, "%sjunk\n", text);	/* something after */
	CHECK(!HostProfileFromText(bad, strlen(bad), &q));
	/* a vector walk picked on a CPU the text says has no AVX-512F */
	p.avx512f = false;
	free(text);
	text = HostProfileToText(&p);
	memcpy(bad, text, strlen(text) + 1);
	{
		char	   *line = strstr(bad, "choice vector_walk 0");

		CHECK(line != NULL);
		if (line != NULL)
			line[strlen("choice vector_walk ")] = '1';
		CHECK(!HostProfileFromText(bad, strlen(bad), &q));
	}
	free(bad);
	free(text);
}

/* Measuring: every choice decided within the budget; stops when asked; budget kept */
static void
TestMeasure(void)
{
	static volatile sig_atomic_t stop = 0;
	SilvanStatus status;
	HostProfile p;
	double		start = NowMs();
	bool		ok = HostProfileMeasure(&p, HOST_PROBE_BUDGET_MS, NULL, &status);
	double		took = NowMs() - start;
	char		line[256];

	CHECK_MSG(ok, "%s: %s", status.message, status.detail);
	if (!ok)
		return;
	printf("  measured in %.0f ms:\n", took);
	CHECK(p.measured && p.measure_ms > 0 && took < HOST_PROBE_BUDGET_MS + 3000);
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
	{
		const HostChoiceValue *v = &p.choices[c];

		HostProfileDescribeChoice(&p, c, line, sizeof(line));
		printf("    %s: %s\n", HostChoiceDescribe(c)->name, line);
		if (v->how == HOST_HOW_UNAVAILABLE)
			continue;
		CHECK_MSG(v->how == HOST_HOW_MEASURED || v->how == HOST_HOW_TIE || v->how == HOST_HOW_FALLBACK,
				  "%s: how %d", HostChoiceDescribe(c)->name, v->how);
		if (v->how == HOST_HOW_FALLBACK)
			continue;			/* past the budget on a loaded machine */
		CHECK_MSG(v->rounds >= 5 && v->rounds <= 15 && v->us_per_row[0] > 0 &&
				  v->us_per_row[1] > 0, "%s: %d rounds", HostChoiceDescribe(c)->name, v->rounds);
		/* measured: the faster one; a tie: within 3%, the fallback's pick */
		if (v->how == HOST_HOW_MEASURED)
			CHECK(v->pick == (v->us_per_row[1] < v->us_per_row[0]));
		else
			CHECK(v->pick == HostChoiceDescribe(c)->fallback &&
				  fabs(v->us_per_row[0] - v->us_per_row[1]) <=
				  0.03 * fmin(v->us_per_row[0], v->us_per_row[1]));
	}

	/* asked to stop: false, canceled, the fallback */
	stop = 1;
	start = NowMs();
	CHECK(!HostProfileMeasure(&p, HOST_PROBE_BUDGET_MS, &stop, &status) &&
		  status.kind == SILVAN_ERROR_CANCELED && !p.measured);
	CHECK_MSG(NowMs() - start < 1000, "stopping took %.0f ms", NowMs() - start);

	/* a budget spent before the first probe: every choice keeps the fallback's pick */
	CHECK(HostProfileMeasure(&p, 1.0, NULL, &status) && p.measured);
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
		CHECK_MSG((p.choices[c].how == HOST_HOW_FALLBACK ||
				   p.choices[c].how == HOST_HOW_UNAVAILABLE) && p.choices[c].rounds == 0 &&
				  p.choices[c].pick == (p.choices[c].how == HOST_HOW_FALLBACK ?
										HostChoiceDescribe(c)->fallback : 0),
				  "%s", HostChoiceDescribe(c)->name);
}

/* A forest that the default schedule walks in lock-step in the perfect layout */
static Forest *
SharedHiggs(void)
{
	return LoadSharedModel("asprasad_treebeard/xgb_models--higgs_xgb_model_save.json");
}

/* Rows of higgs' width: uniform values and some NaN */
static float *
Rows(int64_t n, int32_t features)
{
	float	   *rows = malloc(sizeof(float) * (size_t) (n * features));
	uint64_t	s = 88172645463325252ull;

	for (int64_t i = 0; i < n * features; i++)
	{
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		rows[i] = s % 97 == 0 ? NAN : (float) ((double) (s % 4096) / 1024.0 - 2.0);
	}
	return rows;
}

/* Compile with options, run on rows; equal to the interpreter bit for bit? */
static bool
SameAsInterpreter(const Forest *forest, const CompileOptions *options, const float *rows,
				  int64_t n, char **explain)
{
	SilvanStatus status;
	CompiledForest *compiled = CompileForestFor(forest, NULL, NULL, options, &status);
	size_t		bytes = sizeof(float) * (size_t) (n * forest->num_groups);
	float	   *want = malloc(bytes);
	float	   *got = malloc(bytes);
	bool		same;

	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	if (compiled == NULL)
		return false;
	ForestMarginsInit(forest, want, n);
	ForestInterpretAccumulate(forest, rows, n, want);
	ForestMarginsInit(forest, got, n);
	CompiledForestAccumulate(compiled, rows, n, got);
	same = memcmp(want, got, bytes) == 0;
	*explain = CompiledForestExplainFor(compiled, true, true);
	CompiledForestFree(compiled);
	free(want);
	free(got);
	return same;
}

/*
 * Compiles for each test profile and for the baseline CPU: explain names
 * the profile, the IR the CPU; the margins are the interpreter's
 */
static void
TestCompileFor(void)
{
	Forest	   *forest = SharedHiggs();
	float	   *rows;
	char	   *text = NULL;

	if (forest == NULL)
	{
		printf("  skip: no ../shared models\n");
		return;
	}
	rows = Rows(1000, forest->num_features);
	for (int k = 0; k < UNIT_NUM_HOST_PROFILES; k++)
	{
		HostProfile host;
		const char *name = UnitHostProfile(k, &host);
		CompileOptions options = {.host = &host};
		char		want[128];

		CHECK_MSG(SameAsInterpreter(forest, &options, rows, 1000, &text), "%s", name);
		snprintf(want, sizeof(want), "host profile: fallback; carry %s%s, keys %s%s, interleave %s",
				 HostChoiceDescribe(HOST_CHOICE_CARRY)->alternatives[HostProfileCarryHops(&host)],
				 k == 1 || k == 2 ? " (set)" : "",
				 HostChoiceDescribe(HOST_CHOICE_KEYS)->alternatives[HostProfileKeyHops(&host)],
				 k > 0 ? " (set)" : "", HostProfileInterleave(&host) == 16 ? "16 rows" : "8 rows");
		CHECK_MSG(text != NULL && strstr(text, want) != NULL, "%s: no \"%s\" in explain", name,
				  want);
		CHECK_MSG(text != NULL && (strstr(text, "hops add with carry") != NULL) ==
				  (HostProfileCarryHops(&host) || strstr(text, "plain, integer keys") != NULL),
				  "%s: hops", name);
		CHECK_MSG(text != NULL && (strstr(text, "plain, integer keys") != NULL) == (k == 3),
				  "%s: keys", name);
		free(text);
		text = NULL;
	}
	{
		CompileOptions baseline = {.cpu = "x86-64", .cpu_features = "+sse2"};

		CHECK(SameAsInterpreter(forest, &baseline, rows, 1000, &text));
		CHECK_MSG(text != NULL && strstr(text, "\"target-cpu\"=\"x86-64\"") != NULL,
				  "the IR is not for x86-64");
		free(text);
	}
	free(rows);
	ForestFree(forest);
}

/*
 * Race forest's default at 1024 rows (raced, it must be, from layout):
 * the winner is layout or sparse, the schedule's text names it, and its
 * code gives the interpreter's margins
 */
static void
CheckRaced(Forest *forest, const char *name, const char *layout, CompileOptions *options)
{
	SilvanStatus status;
	Schedule	schedule;
	bool		raced = false;
	float	   *rows;

	CHECK_MSG(ScheduleDefaultRaced(forest, 1024, options, &schedule, &raced, &status) && raced,
			  "%s: %s: %s", name, status.message, status.detail);
	CHECK_MSG(strcmp(schedule.representation, layout) == 0 ||
			  strcmp(schedule.representation, "sparse") == 0, "%s: %s", name, schedule.representation);
	printf("  %s at 1024 rows: the race of %s and sparse kept %s\n", name, layout,
		   schedule.representation);
	{
		char	   *text = ScheduleToText(&schedule);
		char		named[64];

		snprintf(named, sizeof(named), "representation(%s)", schedule.representation);
		CHECK_MSG(text != NULL && strstr(text, named) != NULL, "%s", text ? text : "NULL");
		free(text);
	}
	rows = Rows(1000, forest->num_features);
	{
		CompiledForest *compiled = CompileForestFor(forest, &schedule, NULL, options, &status);
		size_t		bytes = sizeof(float) * 1000 * forest->num_groups;
		float	   *want = malloc(bytes);
		float	   *got = malloc(bytes);

		CHECK(compiled != NULL);
		ForestMarginsInit(forest, want, 1000);
		ForestInterpretAccumulate(forest, rows, 1000, want);
		ForestMarginsInit(forest, got, 1000);
		if (compiled != NULL)
			CompiledForestAccumulate(compiled, rows, 1000, got);
		CHECK_MSG(compiled != NULL && memcmp(want, got, bytes) == 0, "%s", name);
		CompiledForestFree(compiled);
		free(want);
		free(got);
	}
	free(rows);
}

/*
 * The default's layout raced on the model: perfect or sparse for higgs,
 * array or sparse for a forest of deep trees the perfect layout does not
 * fit (four trees of depth 10), the same margins as the interpreter either
 * way; a LightGBM forest (a code walk) and a vector walk are not raced
 */
static void
TestDefaultRace(void)
{
	Forest	   *forest = SharedHiggs();
	Forest	   *deep = LoadSharedModel("asprasad_treebeard/xgb_models--test--Random_4Tree--TestModel_Size4_2.json");
	Forest	   *lightgbm = LoadSharedModel("siboehm_lleaves/tests--models--NYC_taxi--model.txt");
	HostProfile host;
	CompileOptions options = {.host = &host};
	SilvanStatus status;
	Schedule	schedule;
	bool		raced;

	if (forest == NULL || deep == NULL || lightgbm == NULL)
	{
		printf("  skip: no ../shared models\n");
		ForestFree(forest);
		ForestFree(deep);
		ForestFree(lightgbm);
		return;
	}
	HostProfileFallback(&host);
	ScheduleDefault(deep, 1024, &host, &schedule);
	CHECK_MSG(strcmp(schedule.representation, "array") == 0, "%s", schedule.representation);
	CheckRaced(forest, "higgs", "perfect", &options);
	CheckRaced(deep, "4 trees of depth 10", "array", &options);
	CHECK(ScheduleDefaultRaced(lightgbm, 1024, &options, &schedule, &raced, &status) && !raced);
	/* a vector walk's default keeps the layout its walk needs */
	(void) HostProfileSet(&host, HOST_CHOICE_VECTOR_WALK, true);
	CHECK(ScheduleDefaultRaced(forest, 1024, &options, &schedule, &raced, &status) && !raced &&
		  strcmp(schedule.representation, "perfect") == 0);
	ForestFree(forest);
	ForestFree(deep);
	ForestFree(lightgbm);
}

int
main(void)
{
	TestFallback();
	TestText();
	TestCompileFor();
	TestDefaultRace();
	TestMeasure();
	UNIT_DONE();
}
