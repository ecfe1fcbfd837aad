/*
 * test_onnx.c
 *		The ONNX reader: fixtures, public models, hostile inputs.
 *
 * - test/fixtures/onnx (make_onnx_fixtures.py): each model's outputs must
 *   equal, bit for bit after rounding to float32 (ONNX Runtime's output
 *   type), what the script's emulation of ONNX Runtime computed: labels,
 *   probabilities, regression values.  The forest must survive the binary
 *   form (class labels included) unchanged.  Every fixture compiles
 *   (comparisons ==, !=, >=, >, MIN and MAX aggregation included) under a
 *   spread of schedules, representations and tile sizes, and the compiled
 *   outputs must equal the interpreter's margins bit for bit and the
 *   expected CSV's values.
 * - asprasad/treebeard's ONNX conversions of XGBoost models, against
 *   XGBoost's own predictions (the CSVs): with the base value added first,
 *   as XGBoost does, every row matches bit for bit, which shows that every
 *   threshold, leaf and comparison was read exactly; with ONNX semantics
 *   (base value added after the trees, as ONNX Runtime does) abalone is
 *   within 3e-5 (2.4e-6 relative; float sums rounded in another order).
 *   The higgs conversion stores base_values 0.5, XGBoost's base_score in
 *   probability space, where the margin's base is logit(0.5) = 0: the
 *   converter's mistake, undone here before comparing.
 * - TreeEnsemble (ai.onnx.ml opset 5): the v5_* fixtures (every mode,
 *   BRANCH_MEMBER on integers and non-integers, shared subtrees, several
 *   targets, every aggregate and post transform) as above; and onnx/onnx's
 *   backend tests, whose TensorProto inputs and outputs are decoded with
 *   OnnxTensorRead: the interpreter's outputs equal output_0.pb exactly
 *   (as float32 for float models, as doubles for double ones), and the
 *   compiled ones the interpreter's under every schedule above.
 * - test/fixtures/onnx/bad: every model must fail with the listed kind and
 *   a detail naming the problem (v5_*: truncated tensors, ids out of range,
 *   membership sets without their NaN, cycles, copy blow-ups...); every
 *   prefix and many byte flips of real models (an opset-5 one too) must
 *   fail cleanly or parse into a valid forest.
 * - the binary form: version 1 (no v2 fields) still loads.
 */
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "silvan/compiler.h"
#include "silvan/runtime.h"
#include "unit.h"

#define FIXTURES "test/fixtures/onnx"
#define SHARED "../shared/models"

/* Rows of numbers from a CSV (optional header skipped) */
typedef struct Csv
{
	int64_t		rows;
	int32_t		cols;
	double	   *v;
} Csv;

/* Read a comma-separated file of numbers ("nan" allowed) */
static bool
CsvRead(const char *path, bool header, Csv *csv)
{
	char	   *text = ReadFile(path, NULL);
	char	   *line,
			   *save = NULL;
	int64_t		cap = 0;

	memset(csv, 0, sizeof(*csv));
	if (text == NULL)
		return false;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		int32_t		cols = 0;
		char	   *p = line;

		if (header)
		{
			header = false;
			continue;
		}
		while (*p)
		{
			char	   *end;
			double		v = strtod(p, &end);

			if (end == p)
				break;
			if (csv->rows * (csv->cols ? csv->cols : 1) + cols + 1 > cap)
			{
				cap = cap ? cap * 2 : 1024;
				csv->v = realloc(csv->v, sizeof(double) * cap);
			}
			csv->v[csv->rows * (csv->cols ? csv->cols : 0) + cols++] = v;
			p = *end == ',' ? end + 1 : end;
		}
		if (csv->cols == 0)
			csv->cols = cols;
		if (cols != csv->cols)
		{
			free(text);
			return false;
		}
		csv->rows++;
	}
	free(text);
	return true;
}

/* Parse a file as ONNX (auto-detected); NULL with a message on failure */
static Forest *
LoadOnnx(const char *path, SilvanStatus *status)
{
	size_t		len;
	char	   *data = ReadFile(path, &len);
	ModelFormat detected;
	Forest	   *forest;

	if (data == NULL)
	{
		StatusFail(status, SILVAN_ERROR_INTERNAL, "missing file", "%s", path);
		return NULL;
	}
	forest = ParseModel(data, len, MODEL_FORMAT_AUTO, &detected, status);
	CHECK_MSG(detected == MODEL_FORMAT_ONNX, "%s: detected as %s", path, ModelFormatName(detected));
	free(data);
	return forest;
}

/*
 * Margins of n rows (doubles, converted to the forest's precision), by the
 * interpreter, or by compiled code when compiled is not NULL
 */
static double *
MarginsOf(const Forest *forest, const CompiledForest *compiled, const double *x, int64_t n)
{
	size_t		vs = ForestValueSize(forest);
	void	   *rows = malloc(vs * (size_t) (n * forest->num_features) + 1);
	void	   *acc = malloc(vs * (size_t) (n * forest->num_groups) + 1);
	double	   *margins = malloc(sizeof(double) * (size_t) (n * forest->num_groups) + 1);

	for (int64_t i = 0; i < n * forest->num_features; i++)
	{
		if (forest->precision == FOREST_FLOAT32)
			((float *) rows)[i] = (float) x[i];
		else
			((double *) rows)[i] = x[i];
	}
	ForestMarginsInit(forest, acc, n);
	if (compiled)
		CompiledForestAccumulate(compiled, rows, n, acc);
	else
		ForestInterpretAccumulate(forest, rows, n, acc);
	ForestMarginsFinish(forest, acc, n, margins);
	free(rows);
	free(acc);
	return margins;
}

/* Margins of n rows by the interpreter */
static double *
Margins(const Forest *forest, const double *x, int64_t n)
{
	return MarginsOf(forest, NULL, x, n);
}

/* Equal as float32 (ONNX Runtime's outputs), NaN equal to NaN */
static bool
SameFloat(double got, double want)
{
	if (isnan(got) || isnan(want))
		return isnan(got) && isnan(want);
	return (float) got == (float) want;
}

/*
 * Compare one fixture's outputs (interpreted, or by compiled code when
 * compiled is not NULL) with its expected CSV; returns mismatches
 */
static int64_t
CompareFixture(const char *name, const Forest *forest, const CompiledForest *compiled,
			   const Csv *x, const Csv *want)
{
	double	   *m = MarginsOf(forest, compiled, x->v, x->rows);
	double		out[64];
	int64_t		bad = 0;

	for (int64_t r = 0; r < x->rows; r++)
	{
		const double *mr = m + r * forest->num_groups;
		const double *w = want->v + r * want->cols;
		double		pred = ForestPredictRow(forest, mr);

		if (!SameFloat(pred, w[0]))
		{
			if (bad++ < 3)
				fprintf(stderr, "%s: row %lld: predict %.9g, want %.9g\n", name,
						(long long) r, pred, w[0]);
			continue;
		}
		if (want->cols > 1)
		{
			int			k = ForestProbaRow(forest, mr, out);

			for (int c = 0; c < k && c + 1 < want->cols; c++)
				if (!SameFloat(out[c], w[c + 1]))
				{
					if (bad++ < 3)
						fprintf(stderr, "%s: row %lld: prob_%d %.9g, want %.9g\n", name,
								(long long) r, c, out[c], w[c + 1]);
					break;
				}
		}
	}
	free(m);
	return bad;
}

/*
 * The header read alone (ForestDeserializeHeader, what a backend reads
 * when the code cache has the model's code) agrees with the whole read:
 * labels, margins' start, transforms; it holds no trees; and every prefix
 * of a form with class labels (which follow the trees) is refused
 */
static void
CheckHeaderRead(const char *name, const uint8_t *data, size_t size, const Forest *whole)
{
	SilvanStatus st;
	int64_t		stored_nodes = -1;
	Forest	   *header = ForestDeserializeHeader(data, size, &stored_nodes, &st);
	int			accepted = 0;

	CHECK_MSG(header != NULL, "%s: header: %s: %s", name, st.message, st.detail);
	if (header == NULL)
		return;
	CHECK_MSG(ForestSameHeader(header, whole), "%s: the header read alone differs", name);
	CHECK_MSG(header->num_trees == 0 && header->trees == NULL && header->num_nodes == 0 &&
			  header->nodes == NULL && stored_nodes == whole->num_nodes,
			  "%s: the header holds trees, or miscounts the stored nodes", name);
	ForestFree(header);
	for (size_t cut = 0; whole->class_labels != NULL && cut < size; cut++)
		if ((header = ForestDeserializeHeader(data, cut, &stored_nodes, &st)) != NULL)
		{
			accepted++;
			ForestFree(header);
		}
	CHECK_MSG(accepted == 0, "%s: %d prefixes of a form with class labels gave a header",
			  name, accepted);
}

/* A forest equals its binary form's reload: margins, labels */
static void
CheckRoundTrip(const char *name, const Forest *forest, const Csv *x)
{
	SilvanStatus st;
	uint8_t    *data = NULL;
	size_t		size = 0;
	Forest	   *g;
	double	   *a,
			   *b;

	CHECK_MSG(ForestSerialize(forest, &data, &size, &st), "%s: serialize: %s", name, st.detail);
	g = data ? ForestDeserialize(data, size, &st) : NULL;
	CHECK_MSG(g != NULL, "%s: reload: %s: %s", name, st.message, st.detail);
	if (g != NULL)
	{
		a = Margins(forest, x->v, x->rows);
		b = Margins(g, x->v, x->rows);
		CHECK_MSG(memcmp(a, b, sizeof(double) * x->rows * forest->num_groups) == 0,
				  "%s: reloaded margins differ", name);
		CHECK(g->aggregate == forest->aggregate && g->base_margin_last == forest->base_margin_last &&
			  g->source == FOREST_SOURCE_ONNX && g->transform == forest->transform);
		CHECK((g->class_labels == NULL) == (forest->class_labels == NULL));
		for (int32_t c = 0; g->class_labels && forest->class_labels && c < g->num_classes; c++)
			CHECK(strcmp(g->class_labels[c], forest->class_labels[c]) == 0);
		CheckHeaderRead(name, data, size, g);
		free(a);
		free(b);
		ForestFree(g);
	}
	free(data);
}

/*
 * Schedules the fixtures compile under (each with every representation):
 * the loop shapes and walk strategies of test_schedules.c, the default
 * first; tiled ones get tileTrees(4) and (8)
 */
static const char *const fixture_schedules[] = {
	NULL,
	"tile(batch, b0, b1, 16); reorder(b0, tree, b1); parallel(b0)",
	"tile(tree, t0, t1, 3); reorder(t0, batch, t1); parallel(t0)",
	"tile(tree, t0, t1, 2); reorder(t0, batch, t1); parallel(t0); atomicReduce(t0)",
	"tile(tree, t0, t1, 2); reorder(t0, batch, t1); parallel(t0); vectorReduce(t0, 4)",
	"tile(batch, b0, b1, 16); reorder(b0, tree, b1); tile(b1, b2, b3, 8); interleave(b3)",
	"tile(batch, b0, b1, 16); reorder(b0, tree, b1); tile(b1, b2, b3, 4); interleave(b3); "
	"unrollWalk(b3, 6)",
	"tile(batch, b0, b1, 16); reorder(b0, tree, b1); interleave(b1); peelWalk(b1, 2)",
	"tile(tree, t0, t1, 4); interleave(t1); unrollWalk(t1, 6)",
	"tile(batch, b0, b1, 16); reorder(b0, b1, tree); specialize(tree); codeWalk(tree, 6, branchy)",
	"tile(batch, b0, b1, 16); reorder(b0, tree, b1); specialize(tree); codeWalk(b1, 2, select)",
	"tile(batch, b0, b1, 16); reorder(b0, tree, b1); earlyExitWalk(b1)",
	"tile(tree, t0, t1, 4); interleave(t1); earlyExitWalk(t1)",
	"tile(batch, b0, b1, 16); reorder(b0, tree, b1); reorderTrees()",
};

#define NUM_FIXTURE_SCHEDULES \
	((int) (sizeof(fixture_schedules) / sizeof(fixture_schedules[0])))

/* Schedule i of fixture_schedules with a representation and tile size */
static bool
FixtureSchedule(const Forest *forest, int i, const char *repr, int tile_size,
				Schedule *schedule, SilvanStatus *st)
{
	char		text[512];

	if (fixture_schedules[i] == NULL)
	{
		ScheduleDefault(forest, 0, NULL, schedule);
		snprintf(schedule->representation, sizeof(schedule->representation), "%s", repr);
		schedule->tile_size = tile_size;
		return true;
	}
	snprintf(text, sizeof(text), "%s; representation(%s); tileTrees(%d, uniform)",
			 fixture_schedules[i], repr, tile_size);
	return ScheduleParse(text, schedule, st);
}

/*
 * One compiled variant of a fixture: margins bit for bit the interpreter's
 * (MIN and MAX pick a value, so even reordering schedules must agree; SUM
 * under those agrees within rounding) and outputs the expected CSV's
 */
static void
CheckCompiledVariant(const char *name, const Forest *forest, const Schedule *schedule,
					 const char *what, const Csv *x, const Csv *want)
{
	SilvanStatus st;
	CompiledForest *compiled;
	bool		reorders = schedule->reorder_trees || strstr(what, "parallel(t0)") != NULL;

	StatusClear(&st);
	compiled = CompileForest(forest, schedule, NULL, &st);
	CHECK_MSG(compiled != NULL, "%s [%s]: compile: %s: %s", name, what, st.message, st.detail);
	if (compiled == NULL)
		return;
	for (int threads = 1; threads <= 3; threads += 2)
	{
		double	   *a = Margins(forest, x->v, x->rows);
		double	   *b;
		int64_t		bad;

		RuntimeSetMaxThreads(threads);
		b = MarginsOf(forest, compiled, x->v, x->rows);
		if (!reorders || forest->aggregate != FOREST_AGGREGATE_SUM)
			CHECK_MSG(memcmp(a, b, sizeof(double) * x->rows * forest->num_groups) == 0,
					  "%s [%s], %d threads: compiled margins differ from the interpreter's",
					  name, what, threads);
		bad = reorders && forest->aggregate == FOREST_AGGREGATE_SUM ? 0 :
			CompareFixture(name, forest, compiled, x, want);
		CHECK_MSG(bad == 0, "%s [%s], %d threads: %lld compiled rows differ from ONNX Runtime's",
				  name, what, threads, (long long) bad);
		free(a);
		free(b);
	}
	RuntimeSetMaxThreads(1);
	CompiledForestFree(compiled);
}

/* Does a fixture use a rule the compiler once refused (==, !=, MIN, MAX)? */
static bool
UsesOnnxOnlyRules(const Forest *forest)
{
	if (forest->aggregate != FOREST_AGGREGATE_SUM)
		return true;
	for (int64_t n = 0; n < forest->num_nodes; n++)
		if (forest->nodes[n].kind == FOREST_NODE_NUMERIC &&
			forest->nodes[n].compare > FOREST_CMP_LE)
			return true;
	return false;
}

/*
 * Every fixture compiles, with every representation (perfect untiled), and gives the
 * expected outputs; those with ONNX's own rules (==, !=, MIN and MAX)
 * under every schedule of fixture_schedules, and the default, tree-parallel,
 * peeled, code and early-exit walks in tiles of 4 and 8 too
 */
static void
CheckCompiles(const char *name, const Forest *forest, const Csv *x, const Csv *want)
{
	static const char *const reprs[] = {"array", "sparse", "reorg", "perfect"};
	static const int tile_sizes[] = {1, 4, 8};
	static const bool tiled[NUM_FIXTURE_SCHEDULES] = {
		[0] = true, [2] = true, [7] = true, [9] = true, [11] = true
	};
	const char *rule = ForestUncompiledRule(forest);
	int			num_schedules = UsesOnnxOnlyRules(forest) ? NUM_FIXTURE_SCHEDULES : 1;

	CHECK_MSG(rule == NULL, "%s: the compiler refuses %s", name, rule ? rule : "");
	for (int i = 0; i < num_schedules; i++)
		for (int r = 0; r < 4; r++)
			for (int z = 0; z < (tiled[i] && num_schedules > 1 && r < 3 ? 3 : 1); z++)
			{
				Schedule	schedule;
				SilvanStatus st;
				char		what[640];

				StatusClear(&st);
				snprintf(what, sizeof(what), "%s, %s, tiles of %d",
						 fixture_schedules[i] ? fixture_schedules[i] : "default", reprs[r],
						 tile_sizes[z]);
				if (!FixtureSchedule(forest, i, reprs[r], tile_sizes[z], &schedule, &st))
				{
					CHECK_MSG(false, "%s [%s]: %s: %s", name, what, st.message, st.detail);
					continue;
				}
				CheckCompiledVariant(name, forest, &schedule, what, x, want);
			}
}

/* Every fixture of test/fixtures/onnx/MANIFEST */
static void
TestFixtures(void)
{
	char	   *manifest = ReadFile(FIXTURES "/MANIFEST", NULL);
	char	   *line,
			   *save = NULL;
	int			count = 0;

	CHECK_MSG(manifest != NULL, "cannot read " FIXTURES "/MANIFEST");
	if (manifest == NULL)
		return;
	for (line = strtok_r(manifest, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char		name[128],
					kind[8],
					path[512];
		SilvanStatus st;
		Forest	   *forest;
		Csv			x,
					want;
		int64_t		bad;

		if (line[0] == '#' || sscanf(line, "%127s %7s", name, kind) != 2)
			continue;
		count++;
		snprintf(path, sizeof(path), FIXTURES "/%s.onnx", name);
		forest = LoadOnnx(path, &st);
		CHECK_MSG(forest != NULL, "%s: %s: %s", name, st.message, st.detail);
		if (forest == NULL)
			continue;
		snprintf(path, sizeof(path), FIXTURES "/%s.input.csv", name);
		CHECK_MSG(CsvRead(path, false, &x), "%s: cannot read inputs", name);
		snprintf(path, sizeof(path), FIXTURES "/%s.expected.csv", name);
		CHECK_MSG(CsvRead(path, true, &want), "%s: cannot read expected", name);
		CHECK(x.rows == want.rows && x.cols == forest->num_features);
		CHECK((strcmp(kind, "clf") == 0) == (forest->class_labels != NULL));
		if (x.rows == want.rows && x.cols == forest->num_features)
		{
			bad = CompareFixture(name, forest, NULL, &x, &want);
			CHECK_MSG(bad == 0, "%s: %lld rows differ from ONNX Runtime's", name, (long long) bad);
			printf("%s %-26s %-8s %-7s trees %3d rows %3lld%s\n", bad ? "FAIL" : "ok  ", name,
				   forest->precision == FOREST_FLOAT32 ? "float32" : "float64",
				   forest->class_labels ? "labels" : "", forest->num_trees, (long long) x.rows,
				   ForestUncompiledRule(forest) ? " (interpreted only)" : " (compiled too)");
			CheckRoundTrip(name, forest, &x);
			CheckCompiles(name, forest, &x, &want);
		}
		free(x.v);
		free(want.v);
		ForestFree(forest);
	}
	CHECK_MSG(count >= 20, "only %d ONNX fixtures", count);
	free(manifest);
}

/* Class labels as the models declare them */
static void
TestLabels(void)
{
	SilvanStatus st;
	Forest	   *f = LoadOnnx(FIXTURES "/sk_rf_clf_strings.onnx", &st);

	CHECK(f != NULL && f->class_labels != NULL && f->num_classes == 3 &&
		  strcmp(f->class_labels[0], "ant") == 0 && strcmp(f->class_labels[2], "cat") == 0);
	ForestFree(f);
	f = LoadOnnx(FIXTURES "/sk_dt_binary.onnx", &st);
	CHECK(f != NULL && f->class_labels != NULL && f->num_classes == 2 &&
		  strcmp(f->class_labels[0], "10") == 0 && strcmp(f->class_labels[1], "20") == 0);
	CHECK(f != NULL && f->feature_names == NULL);	/* matched by position */
	ForestFree(f);
}

/*
 * A treebeard ONNX model against XGBoost's CSV (last column): bit for bit
 * with the base added first; within abs_tol in ONNX's order.  shift is
 * subtracted from the base first; sigmoid: compare 1/(1+expf(-m)).
 */
static void
CheckTreebeard(const char *model, const char *csv_name, double shift, bool sigmoid,
			   double abs_tol)
{
	char		path[512];
	SilvanStatus st;
	Forest	   *forest;
	Csv			all;

	snprintf(path, sizeof(path), SHARED "/asprasad_treebeard/%s", model);
	if (access(path, R_OK) != 0)
	{
		printf("skip %s (no ../shared/models)\n", model);
		return;
	}
	forest = LoadOnnx(path, &st);
	CHECK_MSG(forest != NULL, "%s: %s: %s", model, st.message, st.detail);
	snprintf(path, sizeof(path), SHARED "/asprasad_treebeard/%s", csv_name);
	CHECK_MSG(CsvRead(path, false, &all), "cannot read %s", csv_name);
	if (forest == NULL || all.cols != forest->num_features + 1)
	{
		CHECK_MSG(false, "%s: %d columns for %d features", model, all.cols,
				  forest ? forest->num_features : -1);
		ForestFree(forest);
		free(all.v);
		return;
	}
	forest->base_margin[0] -= shift;
	for (int order = 0; order < 2; order++)
	{
		double	   *x = malloc(sizeof(double) * all.rows * forest->num_features);
		double	   *m;
		int64_t		exact = 0;
		double		max_diff = 0;

		for (int64_t r = 0; r < all.rows; r++)
			memcpy(x + r * forest->num_features, all.v + r * all.cols,
				   sizeof(double) * forest->num_features);
		forest->base_margin_last = order == 1;
		m = Margins(forest, x, all.rows);
		for (int64_t r = 0; r < all.rows; r++)
		{
			double		got = ForestPredictRow(forest, m + r);
			double		want = all.v[r * all.cols + all.cols - 1];

			if (sigmoid)
				got = 1.0f / (1.0f + expf(-(float) got));
			exact += (float) got == (float) want;
			max_diff = fmax(max_diff, fabs(got - (float) want));
		}
		if (order == 0)
			CHECK_MSG(exact == all.rows, "%s: %lld of %lld rows match XGBoost bit for bit",
					  model, (long long) exact, (long long) all.rows);
		else
			CHECK_MSG(max_diff <= abs_tol, "%s: ONNX order differs from XGBoost by %g", model, max_diff);
		printf("%s %-40s %s %5lld/%lld rows exact, max|diff| %.3g\n",
			   (order == 0 ? exact == all.rows : max_diff <= abs_tol) ? "ok  " : "FAIL",
			   csv_name, order == 0 ? "base first (XGBoost)" : "base last (ONNX)    ",
			   (long long) exact, (long long) all.rows, max_diff);
		free(m);
		free(x);
	}
	free(all.v);
	ForestFree(forest);
}

/* asprasad/treebeard's ONNX conversions */
static void
TestTreebeard(void)
{
	CheckTreebeard("onnx_models--abalone_onnx_model_save.onnx",
				   "onnx_models--abalone_onnx_model_save.onnx.csv", 0, false, 3e-5);
	CheckTreebeard("onnx_models--abalone_onnx_model_save.onnx",
				   "xgb_models--abalone_xgb_model_save.json.test.sampled.csv", 0, false, 3e-5);
	CheckTreebeard("onnx_models--year_prediction_msd_xgb_model_save.onnx",
				   "xgb_models--year_prediction_msd_xgb_model_save.json.csv", 0, false, 0);
	CheckTreebeard("onnx_models--higgs_xgb_model_save.onnx",
				   "xgb_models--higgs_xgb_model_save.json.csv", 0.5, true, 0);
	CheckTreebeard("onnx_models--higgs_xgb_model_save.onnx",
				   "xgb_models--higgs_xgb_model_save.json.test.sampled.csv", 0.5, true, 0);
}

/* The outputs of one row: the transformed targets (or the one value) */
static int
RowOutputs(const Forest *forest, const double *margins, double *out)
{
	if (forest->num_groups > 1)
		return ForestProbaRow(forest, margins, out);
	out[0] = ForestPredictRow(forest, margins);
	return 1;
}

/*
 * A model's outputs for the rows of in equal out: float32 outputs as
 * float32, double ones exactly; returns mismatches
 */
static int64_t
CompareTensor(const char *name, const Forest *forest, const OnnxTensor *in,
			  const OnnxTensor *out)
{
	int64_t		rows = in->dims[0];
	int64_t		width = out->num_dims == 2 ? out->dims[1] : 1;
	double	   *m = Margins(forest, in->values, rows);
	double		got[64];
	int64_t		bad = 0;

	for (int64_t r = 0; r < rows; r++)
	{
		int			k = RowOutputs(forest, m + r * forest->num_groups, got);

		CHECK(k == width);
		for (int c = 0; c < k && c < width; c++)
		{
			double		want = out->values[r * width + c];
			bool		same = out->data_type == 11 ? got[c] == want : SameFloat(got[c], want);

			if (!same && bad++ < 3)
				fprintf(stderr, "%s: row %lld target %d: %.17g, want %.17g\n", name,
						(long long) r, c, got[c], want);
		}
	}
	free(m);
	return bad;
}

/* Rows and expected outputs (predict = first largest, then the targets) as Csvs */
static void
TensorsAsCsv(const Forest *forest, const OnnxTensor *in, const OnnxTensor *out, Csv *x,
			 Csv *want)
{
	int64_t		rows = in->dims[0];
	int64_t		width = out->num_dims == 2 ? out->dims[1] : 1;

	x->rows = want->rows = rows;
	x->cols = (int32_t) in->dims[1];
	x->v = malloc(sizeof(double) * (size_t) in->count + 1);
	memcpy(x->v, in->values, sizeof(double) * (size_t) in->count);
	want->cols = (int32_t) (forest->num_groups > 1 ? width + 1 : 1);
	want->v = malloc(sizeof(double) * (size_t) (rows * want->cols) + 1);
	for (int64_t r = 0; r < rows; r++)
	{
		const double *o = out->values + r * width;
		int64_t		best = 0;

		for (int64_t c = 1; c < width; c++)
			if (o[c] > o[best])
				best = c;
		want->v[r * want->cols] = forest->num_groups > 1 ? (double) best : o[0];
		for (int64_t c = 0; forest->num_groups > 1 && c < width; c++)
			want->v[r * want->cols + 1 + c] = o[c];
	}
}

/*
 * onnx/onnx backend tests of TreeEnsemble (ai.onnx.ml opset 5): the
 * interpreter's and compiled code's outputs equal output_0.pb's
 */
static void
TestBackendNodeTests(void)
{
	static const char *const names[] = {"set_membership", "single_tree"};
	char		path[512];

	for (int i = 0; i < 2; i++)
	{
		SilvanStatus st;
		Forest	   *f;
		OnnxTensor	in,
					out;
		size_t		len;
		char	   *data;
		bool		read = true;

		snprintf(path, sizeof(path), SHARED "/onnx_onnx/onnx--backend--test--data--node--"
				 "test_ai_onnx_ml_tree_ensemble_%s--model.onnx", names[i]);
		if (access(path, R_OK) != 0)
		{
			printf("skip onnx backend tests (no ../shared/models)\n");
			return;
		}
		f = LoadOnnx(path, &st);
		CHECK_MSG(f != NULL, "%s: %s: %s", names[i], st.message, st.detail);
		for (int k = 0; k < 2; k++)
		{
			OnnxTensor *t = k == 0 ? &in : &out;

			snprintf(path, sizeof(path), SHARED "/onnx_onnx/onnx--backend--test--data--node--"
					 "test_ai_onnx_ml_tree_ensemble_%s--test_data_set_0--%s_0.pb",
					 names[i], k == 0 ? "input" : "output");
			data = ReadFile(path, &len);
			CHECK_MSG(data != NULL && OnnxTensorRead(data, len, t, &st), "%s: %s", path, st.detail);
			read = read && data != NULL;
			free(data);
		}
		if (i == 0)
			CHECK(in.data_type == 1 && in.num_dims == 2 && in.dims[0] == 6 && in.dims[1] == 1 &&
				  (float) in.values[0] == 1.2f && isnan(in.values[3]) &&
				  out.dims[1] == 4 && out.values[1 * 4 + 3] == 100.0);
		else
			CHECK(in.data_type == 11 && in.dims[0] == 3 && in.dims[1] == 2 && in.values[1] == 3.4 &&
				  out.data_type == 11 && out.values[0] == 5.23 && out.values[5] == 12.12);
		if (f != NULL && read)
		{
			Csv			x,
						want;
			int64_t		bad = CompareTensor(names[i], f, &in, &out);

			CHECK_MSG(bad == 0, "%s: %lld outputs differ from output_0.pb", names[i], (long long) bad);
			CHECK(f->num_groups == (i == 0 ? 4 : 2) && f->class_labels == NULL &&
				  f->precision == (i == 0 ? FOREST_FLOAT32 : FOREST_FLOAT64));
			printf("%s backend %-16s %s targets %d trees %d (compiled too)\n", bad ? "FAIL" : "ok  ",
				   names[i], f->precision == FOREST_FLOAT32 ? "float32" : "float64",
				   f->num_groups, f->num_trees);
			TensorsAsCsv(f, &in, &out, &x, &want);
			CheckRoundTrip(names[i], f, &x);
			CheckCompiles(names[i], f, &x, &want);
			free(x.v);
			free(want.v);
		}
		ForestFree(f);
		free(in.values);
		free(out.values);
	}
	{
		SilvanStatus st;
		OnnxTensor	t;

		CHECK(!OnnxTensorRead("\x08\xff", 2, &t, &st) && st.kind == SILVAN_ERROR_SYNTAX);
	}
}

/* test/fixtures/onnx/bad: each refused with its kind and detail */
static void
TestHostileFixtures(void)
{
	char	   *manifest = ReadFile(FIXTURES "/bad/MANIFEST", NULL);
	char	   *line,
			   *save = NULL;
	int			count = 0;

	CHECK_MSG(manifest != NULL, "cannot read " FIXTURES "/bad/MANIFEST");
	if (manifest == NULL)
		return;
	for (line = strtok_r(manifest, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char		name[128],
					kind[16],
					path[512];
		int			off = 0;
		const char *substring;
		SilvanStatus st;
		Forest	   *f;
		size_t		len;
		char	   *data;
		SilvanErrorKind want;

		if (line[0] == '#' || sscanf(line, "%127s %15s %n", name, kind, &off) != 2)
			continue;
		substring = line + off;
		want = strcmp(kind, "SYNTAX") == 0 ? SILVAN_ERROR_SYNTAX :
			strcmp(kind, "UNSUPPORTED") == 0 ? SILVAN_ERROR_UNSUPPORTED : SILVAN_ERROR_INVALID;
		snprintf(path, sizeof(path), FIXTURES "/bad/%s.onnx", name);
		data = ReadFile(path, &len);
		CHECK_MSG(data != NULL, "cannot read %s", path);
		if (data == NULL)
			continue;
		count++;
		f = ParseModel(data, len, MODEL_FORMAT_ONNX, NULL, &st);
		CHECK_MSG(f == NULL && st.kind == want && strstr(st.detail, substring) != NULL &&
				  st.message[0] >= 'a' && st.message[0] <= 'z',
				  "%s: want %s \"%s\", got kind %d: %s: %s", name, kind, substring,
				  st.kind, st.message, st.detail);
		ForestFree(f);
		free(data);
	}
	CHECK(count >= 25);
	free(manifest);
}

/*
 * Every prefix and many single-byte changes of a fixture fail cleanly or
 * give a valid forest
 */
static void
CheckMutations(const char *file)
{
	size_t		len;
	char	   *data = ReadFile(file, &len);
	int			parsed = 0;

	CHECK(data != NULL);
	if (data == NULL)
		return;
	for (size_t cut = 0; cut < len; cut++)
	{
		SilvanStatus st;
		Forest	   *f = ParseModel(data, cut, MODEL_FORMAT_ONNX, NULL, &st);

		/* protobuf ends at any field boundary: only the trailing opset imports may go */
		if (f != NULL)
			CHECK_MSG(cut + 48 >= len && ForestValidate(f, &st),
					  "prefix of %zu of %zu bytes parsed", cut, len);
		else
			CHECK_MSG(st.kind != SILVAN_OK && st.message[0] != '\0',
					  "prefix of %zu bytes: no message", cut);
		ForestFree(f);
	}
	for (size_t pos = 0; pos < len; pos++)
		for (int v = 0; v < 3; v++)
		{
			static const unsigned char values[] = {0x00, 0xff, 0x7f};
			char		saved = data[pos];
			SilvanStatus st;
			Forest	   *f;

			data[pos] = (char) values[v];
			f = ParseModel(data, len, MODEL_FORMAT_ONNX, NULL, &st);
			if (f != NULL)
			{
				parsed++;
				CHECK(ForestValidate(f, &st));
			}
			else
				CHECK(st.kind != SILVAN_OK && st.message[0] != '\0');
			ForestFree(f);
			data[pos] = saved;
		}
	printf("ok   mutations of %s: %zu prefixes, %zu byte changes (%d still parse, into valid forests)\n",
		   file, len, len * 3, parsed);
	free(data);
}

/* Mutations of an opset-3 classifier and of an opset-5 TreeEnsemble */
static void
TestMutations(void)
{
	CheckMutations(FIXTURES "/classifier_softmax.onnx");
	CheckMutations(FIXTURES "/v5_modes.onnx");
}

/* Version 1 of the binary form (before ONNX) still loads */
static void
TestBinaryFormV1(void)
{
	const char *text =
		"tree\nversion=v3\nnum_class=1\nmax_feature_idx=0\nobjective=regression\n\n"
		"Tree=0\nnum_leaves=2\nsplit_feature=0\nthreshold=0.5\n"
		"left_child=-1\nright_child=-2\nleaf_value=1 2\n\nend of trees\n";
	SilvanStatus st;
	Forest	   *f = ParseModel(text, strlen(text), MODEL_FORMAT_AUTO, NULL, &st);
	uint8_t    *v2 = NULL;
	size_t		size = 0;
	const size_t base = 121;	/* header bytes before the base margins */

	CHECK(f != NULL && ForestSerialize(f, &v2, &size, &st));
	if (v2 != NULL && size > base + 12)
	{
		uint8_t    *v1 = malloc(size);
		uint32_t	one = 1;
		Forest	   *g;

		/* v1 = v2 without the 4 bytes after the one base margin */
		memcpy(v1, v2, base + 8);
		memcpy(v1 + base + 8, v2 + base + 12, size - base - 12);
		memcpy(v1 + 4, &one, 4);
		g = ForestDeserialize(v1, size - 4, &st);
		CHECK_MSG(g != NULL, "v1: %s: %s", st.message, st.detail);
		CHECK(g && g->category_rule == FOREST_CATEGORY_TRUNCATE &&
			  g->aggregate == FOREST_AGGREGATE_SUM && !g->base_margin_last &&
			  g->num_nodes == f->num_nodes);
		ForestFree(g);
		memcpy(v1 + 4, &(uint32_t) {3}, 4);
		CHECK(ForestDeserialize(v1, size - 4, &st) == NULL);
		free(v1);
	}
	free(v2);
	ForestFree(f);
}

/* New comparison kinds survive the binary form */
static void
TestCompareFlags(void)
{
	SilvanStatus st;
	Forest	   *f = LoadOnnx(FIXTURES "/modes_opset3_double.onnx", &st);
	uint8_t    *data = NULL;
	size_t		size;
	Forest	   *g;
	int			kinds[6] = {0};

	CHECK(f != NULL && ForestSerialize(f, &data, &size, &st));
	g = data ? ForestDeserialize(data, size, &st) : NULL;
	CHECK(g != NULL);
	for (int64_t n = 0; g && n < g->num_nodes; n++)
	{
		CHECK(g->nodes[n].compare == f->nodes[n].compare &&
			  g->nodes[n].default_left == f->nodes[n].default_left);
		if (g->nodes[n].kind == FOREST_NODE_NUMERIC)
			kinds[g->nodes[n].compare]++;
	}
	/* GTE/GT were turned into < and <=; EQ and NEQ stay */
	CHECK(kinds[FOREST_CMP_LT] == 4 && kinds[FOREST_CMP_LE] == 4 &&
		  kinds[FOREST_CMP_EQ] == 2 && kinds[FOREST_CMP_NE] == 2 &&
		  kinds[FOREST_CMP_GE] == 0 && kinds[FOREST_CMP_GT] == 0);
	free(data);
	ForestFree(f);
	ForestFree(g);
}

int
main(void)
{
	if (access(FIXTURES "/MANIFEST", R_OK) != 0 && chdir("../..") != 0)
		return 1;
	TestFixtures();
	TestLabels();
	TestTreebeard();
	TestBackendNodeTests();
	TestHostileFixtures();
	TestMutations();
	TestBinaryFormV1();
	TestCompareFlags();
	UNIT_DONE();
}
