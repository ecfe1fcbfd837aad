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
 * An accepted schedule is then lowered the way CompileForest lowers it,
 * up to but not including code generation, for two small fixed forests:
 * an XGBoost one (float, a categorical split) and a LightGBM one (double,
 * categorical and zero-as-missing splits, a one-leaf tree), each with a
 * node profile so that probability-based tiling runs too.  That is the
 * MIR, the tree tiling (whose walks must land on the forest's own
 * leaves), the HIR, the representation's buffers (with and without
 * gathers), MirFinish and the explain dumps.  Lowering may refuse a
 * schedule, cleanly; it must not crash.  LLVM is linked (the
 * representations hold their code generators) but never called.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "silvan/mir.h"
#include "silvan/parse.h"
#include "silvan/repr.h"
#include "silvan/tiling.h"

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
	ForestProfile profile;
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
	ff->profile.node_hits = calloc(f->num_nodes, sizeof(int64_t));
	if (ff->rows == NULL || ff->profile.node_hits == NULL)
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
	ff->profile.num_rows = PROFILE_ROWS;
	ff->profile.num_nodes = f->num_nodes;
	ForestProfileAccumulate(f, ff->rows, PROFILE_ROWS, ff->profile.node_hits);
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
		a->unroll_walk == b->unroll_walk && a->peel_walk == b->peel_walk &&
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

/* Tiled walks must end at the leaves the forest's own walks reach */
static void
CheckTiledWalks(const FuzzForest *ff, const TiledForest *tiled)
{
	const Forest *f = ff->forest;
	size_t		row_bytes = ForestValueSize(f) * (size_t) f->num_features;
	SilvanStatus status;

	if (!TiledForestCheck(tiled, &status))
		FuzzFail("tiled forest: %s: %s", status.message, status.detail);
	for (int r = 0; r < PROFILE_ROWS; r++)
	{
		const char *row = (const char *) ff->rows + r * row_bytes;

		for (int32_t t = 0; t < f->num_trees; t++)
			if (TiledWalkTree(tiled, t, row) != ForestWalkTree(f, t, row))
				FuzzFail("tiled walk of tree %d, row %d, ends at another leaf", t, r);
	}
}

/* Tile the trees as CompileForest's TileTrees does */
static TiledForest *
Tile(const FuzzForest *ff, const Schedule *schedule, const Mir *mir)
{
	TilingOptions options;
	SilvanStatus status;
	TiledForest *tiled;

	TilingOptionsInit(&options, schedule->tile_size, schedule->tiling);
	options.profile = &ff->profile;
	options.pad_depth = mir->max_unroll < TILING_MAX_PAD_DEPTH ?
		mir->max_unroll : TILING_MAX_PAD_DEPTH;
	tiled = TileForest(ff->forest, &options, &status);
	if (tiled == NULL)
		FuzzCheckStatus(&status, "tiling");
	else
		CheckTiledWalks(ff, tiled);
	return tiled;
}

/* Order and pad the trees and build the HIR, as CompileForest's BuildHir does */
static Hir *
BuildHir(const Forest *f, const Schedule *schedule, const Mir *mir)
{
	size_t		n = (size_t) f->num_trees + 1;
	int32_t    *order = calloc(n, sizeof(int32_t));
	int32_t    *depths = calloc(n, sizeof(int32_t));
	int32_t    *pad_to = calloc(n, sizeof(int32_t));
	SilvanStatus status;
	Hir		   *hir;

	if (order == NULL || depths == NULL || pad_to == NULL)
		FuzzFail("out of memory");
	HirOrder(f, schedule->reorder_trees, order);
	for (int32_t t = 0; t < f->num_trees; t++)
		depths[t] = f->trees[order[t]].depth;
	MirPadLevels(mir, depths, pad_to);
	hir = HirBuild(f, order, schedule->tile_size > 1 ? NULL : pad_to, &status);
	if (hir == NULL)
		FuzzCheckStatus(&status, "building the HIR");
	free(order);
	free(depths);
	free(pad_to);
	return hir;
}

/* Lay out the HIR and finish the MIR; dump both as explain would */
static void
BuildBuffers(Mir *mir, const Hir *hir, const Representation *repr, bool gather)
{
	ReprBuffers buffers;
	SilvanStatus status;

	memset(&buffers, 0, sizeof(buffers));
	buffers.gather = gather;
	if (!repr->build(hir, &buffers, &status))
		FuzzCheckStatus(&status, "laying out the model");
	else
	{
		MirFinish(mir, hir, buffers.trees);
		free(MirDump(mir));
		free(HirDump(hir, true));
	}
	ReprBuffersFree(&buffers);
}

/* Lower an accepted schedule for one forest, stopping before code generation */
static void
Lower(const FuzzForest *ff, const Schedule *schedule, bool gather)
{
	const Representation *repr = ReprLookup(schedule->representation);
	Mir		   *mir = calloc(1, sizeof(Mir));
	TiledForest *tiled = NULL;
	Hir		   *hir = NULL;
	SilvanStatus status;

	if (mir == NULL)
		FuzzFail("out of memory");
	if (repr == NULL || schedule->tile_size < 1 || schedule->tile_size > TILE_MAX_SIZE)
		FuzzFail("ScheduleParse accepted layout \"%s\", tile size %d",
				 schedule->representation, schedule->tile_size);
	if (!MirBuild(schedule, ff->forest->num_trees, ff->forest->num_groups, mir, &status))
		FuzzCheckStatus(&status, "building the MIR");
	else if (schedule->tile_size == 1 || (tiled = Tile(ff, schedule, mir)) != NULL)
	{
		hir = BuildHir(ff->forest, schedule, mir);
		if (hir != NULL)
		{
			hir->tiled = tiled;
			BuildBuffers(mir, hir, repr, gather);
			if (tiled != NULL)
				free(TiledForestDump(tiled, true));
		}
	}
	HirFree(hir);
	TiledForestFree(tiled);
	free(mir);
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
			Lower(&forests[i], schedule, false);
			Lower(&forests[i], schedule, true);
		}
	}
	free(text);
	free(schedule);
	return 0;
}
