/*
 * fuzz_schedule.c
 *		libFuzzer target: the schedule language, and lowering what it accepts.
 *
 * The input is schedule text; it gets a NUL, so text after an embedded NUL
 * is ignored, as it would be in a C string.  A schedule that fails must
 * fail cleanly and leave the default schedule.  One that parses must print
 * (ScheduleToText) as text that parses again into the same schedule: the
 * same text, loop nest and variables (but for the line numbers).
 *
 * An accepted schedule is then lowered (fuzz_lower.c: MIR, tree tiling,
 * HIR, representation buffers, with and without gathers; no code
 * generation) for two small fixed forests: an XGBoost one (float, a
 * categorical split) and a LightGBM one (double, categorical and
 * zero-as-missing splits, a one-leaf tree), each with a node profile so
 * that probability-based tiling runs too.  Lowering may refuse a
 * schedule, cleanly; it must not crash.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "silvan/parse.h"

#define NUM_FORESTS		2
#define PROFILE_ROWS	4

/* Two trees over 3 features; tree 1 splits f1 on the set {1, 3, 40} */
static const char *xgb_model =
"{\"learner\":{\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{"
"\"num_trees\":\"2\"},\"tree_info\":[0,0],\"trees\":["
"{\"categories\":[],\"categories_nodes\":[],\"categories_segments\":[],"
"\"categories_sizes\":[],\"default_left\":[1,0,0,0,0],\"id\":0,"
"\"left_children\":[1,3,-1,-1,-1],\"right_children\":[2,4,-1,-1,-1],"
"\"split_conditions\":[5E-1,1.5E0,3E-1,-2E-1,1E-1],\"split_indices\":[0,2,0,0,0],"
"\"split_type\":[0,0,0,0,0],\"tree_param\":{\"num_nodes\":\"5\"}},"
"{\"categories\":[1,3,40],\"categories_nodes\":[0],\"categories_segments\":[0],"
"\"categories_sizes\":[3],\"default_left\":[0,0,0],\"id\":1,"
"\"left_children\":[1,-1,-1],\"right_children\":[2,-1,-1],"
"\"split_conditions\":[NaN,1E0,2E0],\"split_indices\":[1,0,0],"
"\"split_type\":[1,0,0],\"tree_param\":{\"num_nodes\":\"3\"}}]},\"name\":\"gbtree\"},"
"\"learner_model_param\":{\"base_score\":\"5E-1\",\"num_class\":\"0\",\"num_feature\":\"3\"},"
"\"objective\":{\"name\":\"binary:logistic\"}}}";

/* Three trees: categorical then numeric, one leaf, zero-as-missing */
static const char *lgb_model =
"tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=2\n"
"objective=binary sigmoid:0.5\n\n"
"Tree=0\nnum_leaves=3\nnum_cat=1\nsplit_feature=1 0\nthreshold=0 0.5\n"
"decision_type=1 10\nleft_child=-1 -2\nright_child=1 -3\nleaf_value=0.25 -0.5 1.5\n"
"cat_boundaries=0 2\ncat_threshold=10 1\n\n"
"Tree=1\nnum_leaves=1\nleaf_value=0.125\n\n"
"Tree=2\nnum_leaves=2\nsplit_feature=2\nthreshold=1\ndecision_type=4\n"
"left_child=-1\nright_child=-2\nleaf_value=-1 2\n\n"
"end of trees\n";

/* Rows for profiles and tiled walks: NaN, 0, 1, 3 in every feature */
static const double row_values[PROFILE_ROWS] = {NAN, 0.0, 1.0, 3.0};

typedef struct FuzzForest
{
	Forest	   *forest;
	void	   *rows;			/* PROFILE_ROWS rows of the forest's precision */
	FuzzLowering lowering;
} FuzzForest;

static FuzzForest forests[NUM_FORESTS];

/* Parse one fixed model, make its rows and profile it */
static void
LoadForest(FuzzForest *ff, const char *text)
{
	SilvanStatus status;
	Forest	   *f = ParseModel(text, strlen(text), MODEL_FORMAT_AUTO, NULL, &status);
	size_t		size;

	if (f == NULL)
		FuzzFail("fixed model: %s: %s", status.message, status.detail);
	size = ForestValueSize(f);
	ff->forest = f;
	ff->rows = calloc(PROFILE_ROWS * (size_t) f->num_features, size);
	if (ff->rows == NULL)
		FuzzFail("out of memory");
	for (int r = 0; r < PROFILE_ROWS; r++)
		for (int32_t j = 0; j < f->num_features; j++)
		{
			size_t		i = (size_t) r * f->num_features + j;

			if (size == sizeof(float))
				((float *) ff->rows)[i] = (float) row_values[r];
			else
				((double *) ff->rows)[i] = row_values[r];
		}
	FuzzLoweringInit(&ff->lowering, f, ff->rows, PROFILE_ROWS);
}

/* Load the fixed forests once */
static void
LoadForests(void)
{
	if (forests[0].forest != NULL)
		return;
	LoadForest(&forests[0], xgb_model);
	LoadForest(&forests[1], lgb_model);
}

/* Compare two strings that must be equal; either may be NULL (out of memory) */
static void
SameText(const char *a, const char *b, const char *what)
{
	if (a == NULL || b == NULL)
		FuzzFail("out of memory printing %s", what);
	if (strcmp(a, b) != 0)
		FuzzFail("%s differs after reparsing:\n%s\n---\n%s", what, a, b);
}

/* Do two variables agree in everything but the line that made them? */
static bool
SameVar(const IndexVar *a, const IndexVar *b)
{
	return strcmp(a->name, b->name) == 0 && a->kind == b->kind &&
		a->origin == b->origin && a->parent == b->parent &&
		a->children[0] == b->children[0] && a->children[1] == b->children[1] &&
		a->copy_of == b->copy_of && a->param == b->param &&
		a->parallel == b->parallel && a->cache == b->cache &&
		a->interleave == b->interleave && a->specialize == b->specialize &&
		a->walk == b->walk && memcmp(a->walk_args, b->walk_args, sizeof(a->walk_args)) == 0 &&
		a->reduce == b->reduce && a->vector_width == b->vector_width &&
		a->gpu_dim == b->gpu_dim;
}

/* Two parses of one schedule must agree in all but line numbers */
static void
SameSchedule(const Schedule *a, const Schedule *b)
{
	if (a->num_vars != b->num_vars || a->num_loops != b->num_loops ||
		a->root_loop != b->root_loop || a->tile_size != b->tile_size ||
		a->tiling != b->tiling || a->reorder_trees != b->reorder_trees ||
		a->num_directives != b->num_directives ||
		strcmp(a->representation, b->representation) != 0 ||
		memcmp(a->loops, b->loops, sizeof(ScheduleLoop) * a->num_loops) != 0)
		FuzzFail("the reparsed schedule differs in its loops or layout");
	for (int v = 0; v < a->num_vars; v++)
		if (!SameVar(&a->vars[v], &b->vars[v]))
			FuzzFail("variable %d (%s) differs after reparsing", v, a->vars[v].name);
}

/* Print, reparse, print again: the same schedule and the same text */
static void
CheckRoundTrip(const Schedule *schedule)
{
	Schedule   *again = malloc(sizeof(Schedule));
	SilvanStatus status;
	char	   *text = ScheduleToText(schedule);
	char	   *text2;
	char	   *nest;
	char	   *nest2;

	if (again == NULL || text == NULL)
		FuzzFail("out of memory printing a schedule");
	if (!ScheduleParse(text, again, &status))
		FuzzFail("printed schedule does not parse: %s: %s\n%s",
				 status.message, status.detail, text);
	text2 = ScheduleToText(again);
	nest = ScheduleDumpNest(schedule);
	nest2 = ScheduleDumpNest(again);
	SameText(text, text2, "the schedule text");
	SameText(nest, nest2, "the loop nest");
	SameSchedule(schedule, again);
	free(text);
	free(text2);
	free(nest);
	free(nest2);
	free(again);
}

/* A failed parse leaves the default schedule */
static void
CheckDefault(const Schedule *schedule)
{
	Schedule   *dflt = malloc(sizeof(Schedule));

	if (dflt == NULL)
		FuzzFail("out of memory");
	ScheduleInitDefault(dflt);
	SameSchedule(schedule, dflt);
	free(dflt);
}

/* Parse one input as a schedule, check the round trip, lower it */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = malloc(size + 1);
	Schedule   *schedule = malloc(sizeof(Schedule));
	SilvanStatus status;

	if (text == NULL || schedule == NULL)
		FuzzFail("out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	LoadForests();
	if (!ScheduleParse(text, schedule, &status))
	{
		FuzzCheckStatus(&status, "parsing the schedule");
		CheckDefault(schedule);
	}
	else
	{
		CheckRoundTrip(schedule);
		for (int i = 0; i < NUM_FORESTS; i++)
		{
			FuzzLower(&forests[i].lowering, schedule, false);
			FuzzLower(&forests[i].lowering, schedule, true);
		}
	}
	free(text);
	free(schedule);
	return 0;
}
