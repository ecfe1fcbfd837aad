/*
 * test_conformance.c
 *		Predictions against the training libraries' own output.
 *
 * Every model here comes with predictions that XGBoost or LightGBM made
 * itself: the fixtures of test/fixtures (made by make_fixtures.py) and the
 * public models of the shared set (../shared/models, or $SILVAN_SHARED).
 * For each model we parse with ParseModel and compute margins three ways:
 * the reference interpreter, and compiled code (CompileForest with
 * ScheduleDefault) run one row per call and all rows in one call.  The
 * compiled margins must equal the interpreter's bit for bit; the
 * interpreter's predictions, margins and probabilities must equal the
 * library's, exactly or within a tolerance:
 *
 *	 XGBoost (float32): exact, bit for bit (a zero's sign included), the
 *	 reference first rounded to float (XGBoost's outputs are floats, printed
 *	 with 9+ digits).  Margins are float sums in XGBoost's order with the
 *	 base margin derived in float as XGBoost does, and each objective's
 *	 transform is computed as XGBoost computes it (predict.c), with the same
 *	 libm: so a base margin, an expf or a softmax rounded differently fails,
 *	 as a wrong branch does.
 *
 *	 LightGBM (double): |got - want| <= 1e-12 * max(1, |want|).  LightGBM
 *	 sums doubles in model order, as we do, and its references are printed
 *	 with 17 or more significant digits; a plain double walk of the model
 *	 text reproduces all of them within 2.3e-16 relative, so 1e-12 leaves
 *	 room for libm differences in exp/softmax and nothing else (a leaf or
 *	 threshold read as float would be off by ~1e-8).  Those differences are
 *	 real: the references were made with another libm, whose exp is 1 ulp
 *	 off glibc's (and off the correctly rounded value) in a few rows of
 *	 genlin_poisson, genlin_tweedie and lgmulticlass.
 *
 *	 ONNX (test/fixtures/onnx, made by make_onnx_fixtures.py, whose
 *	 references emulate ONNX Runtime): exact.  ONNX Runtime's outputs are
 *	 float32 tensors, so ours are rounded to float and must be equal.
 *	 Every ONNX rule (==, !=, >=, >, MIN/MAX) compiles, so these forests
 *	 are checked compiled too; a forest with a rule the compiler lacked
 *	 (ForestUncompiledRule) would have to be refused by CompileForest
 *	 (UNSUPPORTED) and be checked interpreted.  onnx/onnx's backend tests
 *	 of TreeEnsemble (opset 5) give inputs and outputs as TensorProtos
 *	 (read with OnnxTensorRead); their outputs are the targets, compared
 *	 with the forest's probabilities (the transformed targets), exactly.
 *
 * Models without inputs (and every model besides) also run on synthetic
 * rows built from their own split thresholds, to compare interpreter and
 * compiled code where the branches are decided.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "silvan/compiler.h"
#include "silvan/forest.h"
#include "silvan/parse.h"
#include "unit.h"

#define XGBOOST_TOLERANCE	0.0
#define LIGHTGBM_TOLERANCE	1e-12
#define SYNTHETIC_ROWS		257
#define MAX_REPORTED		3

/* A matrix of doubles read from text */
typedef struct Table
{
	int64_t		rows;
	int32_t		cols;
	double	   *v;				/* rows * cols, row-major */
	char	  **names;			/* column names when the file had a header */
} Table;

/* What a column of expected values holds */
typedef enum ExpectKind
{
	EXPECT_PREDICT,				/* predict(): transformed value or class */
	EXPECT_MARGIN,				/* raw margins, one column per group */
	EXPECT_PROBA,				/* probabilities, one column per class */
	EXPECT_LEAVES				/* LightGBM pred_leaf indices per tree */
} ExpectKind;

static const char *const expect_names[] = {"predict", "margin", "proba", "leaves"};

/* How a shared model's input rows are stored */
typedef enum InputFormat
{
	INPUT_NONE,
	INPUT_CSV_LAST_EXPECTED,	/* treebeard: features..., predict() */
	INPUT_DELIMITED,			/* tab, space or comma separated features */
	INPUT_DELIMITED_LABEL,		/* same, first column is a label */
	INPUT_LIBSVM,				/* label idx:val ..., 0-based indices */
	INPUT_ONNX_TENSOR			/* onnx backend tests: [N, F] and [N, E] TensorProtos */
} InputFormat;

typedef struct SharedCase
{
	const char *name;
	const char *model;			/* path under models/ */
	InputFormat format;
	const char *input;
	const char *expect;			/* NULL: the last input column */
	ExpectKind kind;
	const char *expect2;		/* a second reference for the same rows */
	ExpectKind kind2;
	const char *note;
} SharedCase;

/*
 * Entries absent from a libsvm row are missing values (NaN), as treelite's
 * tests read them.  Only sparse_categorical has absent entries, and its
 * .margin reference holds only with this reading: as zeros, row 1 comes out
 * -0.0404517 instead of -0.0884107 (checked with a separate walk of the
 * model text).
 */
#define LIBSVM_ABSENT	NAN

static const SharedCase shared_cases[] = {
	/* asprasad/treebeard: XGBoost 1.4 models, last CSV column = predict() */
	{"treebeard/higgs random", "asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--higgs_xgb_model_save.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/higgs test", "asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--higgs_xgb_model_save.json.test.sampled.csv", NULL, EXPECT_PREDICT},
	{"treebeard/airline random", "asprasad_treebeard/xgb_models--airline_xgb_model_save.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--airline_xgb_model_save.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/airline test", "asprasad_treebeard/xgb_models--airline_xgb_model_save.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--airline_xgb_model_save.json.test.sampled.csv", NULL, EXPECT_PREDICT},
	{"treebeard/year_prediction_msd", "asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/TestModel_Size1_0", "asprasad_treebeard/xgb_models--test--Random_1Tree--TestModel_Size1_0.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--test--Random_1Tree--TestModel_Size1_0.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/TestModel_Size1_5", "asprasad_treebeard/xgb_models--test--Random_1Tree--TestModel_Size1_5.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--test--Random_1Tree--TestModel_Size1_5.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/TestModel_Size2_19", "asprasad_treebeard/xgb_models--test--Random_2Tree--TestModel_Size2_19.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--test--Random_2Tree--TestModel_Size2_19.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/TestModel_Size4_2", "asprasad_treebeard/xgb_models--test--Random_4Tree--TestModel_Size4_2.json",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--test--Random_4Tree--TestModel_Size4_2.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/bosch", "asprasad_treebeard/xgb_models--bosch_xgb_model_save.json", INPUT_NONE},
	{"treebeard/leftheavy", "asprasad_treebeard/xgb_models--test--leftheavy_xgb_model.json", INPUT_NONE},
	{"treebeard/rightheavy", "asprasad_treebeard/xgb_models--test--rightheavy_xgb_model.json", INPUT_NONE},
	{"treebeard/rightandleftheavy", "asprasad_treebeard/xgb_models--test--rightandleftheavy_xgb_model.json", INPUT_NONE},

	/*
	 * treebeard's ONNX conversions, against XGBoost's predict(): exact for
	 * year_prediction_msd; abalone and higgs are compared in test_onnx
	 * (abalone sums in another order than XGBoost; higgs's converter put
	 * base_score 0.5 where the margin's base is 0)
	 */
	{"treebeard/onnx year_prediction_msd", "asprasad_treebeard/onnx_models--year_prediction_msd_xgb_model_save.onnx",
	INPUT_CSV_LAST_EXPECTED, "asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json.csv", NULL, EXPECT_PREDICT},
	{"treebeard/onnx abalone", "asprasad_treebeard/onnx_models--abalone_onnx_model_save.onnx", INPUT_NONE},
	{"treebeard/onnx higgs", "asprasad_treebeard/onnx_models--higgs_xgb_model_save.onnx", INPUT_NONE},

	/* dmitryikh/leaves: LightGBM v2/v3 models */
	{"leaves/lg_breast_cancer", "dmitryikh_leaves/testdata--lg_breast_cancer.txt",
	INPUT_DELIMITED, "dmitryikh_leaves/testdata--lg_breast_cancer_data.txt",
	"dmitryikh_leaves/testdata--lg_breast_cancer_data_pred_leaves.txt", EXPECT_LEAVES},
	{"leaves/lgmulticlass", "dmitryikh_leaves/testdata--lgmulticlass.model",
	INPUT_DELIMITED_LABEL, "dmitryikh_leaves/testdata--multiclass_test.tsv",
	"dmitryikh_leaves/testdata--lgmulticlass_true_predictions.txt", EXPECT_PROBA,
	"dmitryikh_leaves/testdata--lgmulticlass_true_raw_predictions.txt", EXPECT_MARGIN},
	{"leaves/lg_kddcup99", "dmitryikh_leaves/testdata--lg_kddcup99.model",
	INPUT_DELIMITED, "dmitryikh_leaves/testdata--kddcup99_test.tsv",
	"dmitryikh_leaves/testdata--lg_kddcup99_true_predictions.txt", EXPECT_MARGIN},
	{"leaves/lg_dart_breast_cancer", "dmitryikh_leaves/testdata--lg_dart_breast_cancer.model",
	INPUT_DELIMITED, "dmitryikh_leaves/testdata--breast_cancer_test.tsv",
	"dmitryikh_leaves/testdata--lg_dart_breast_cancer_true_predictions.txt", EXPECT_PREDICT},
	{"leaves/lg_rf_iris", "dmitryikh_leaves/testdata--lg_rf_iris.model",
	INPUT_LIBSVM, "dmitryikh_leaves/testdata--iris_test.libsvm",
	"dmitryikh_leaves/testdata--lg_rf_iris_true_predictions.txt", EXPECT_MARGIN, NULL, 0,
	"reference is the plain average of leaf values; LightGBM's predict() applies the sigmoid after averaging, "
	"so it is compared with our averaged margin, not with predict()"},
	{"leaves/genlin_poisson", "dmitryikh_leaves/testdata--genlin_fmtp_poisson_Frequency.model",
	INPUT_DELIMITED, "dmitryikh_leaves/testdata--genlin_fmtp_poisson_Frequency_features.tsv",
	"dmitryikh_leaves/testdata--genlin_fmtp_poisson_Frequency_true_predictions.txt", EXPECT_PREDICT},
	{"leaves/genlin_gamma", "dmitryikh_leaves/testdata--genlin_fmtp_gamma_AvgClaimAmount.model",
	INPUT_DELIMITED, "dmitryikh_leaves/testdata--genlin_fmtp_gamma_AvgClaimAmount_features.tsv",
	"dmitryikh_leaves/testdata--genlin_fmtp_gamma_AvgClaimAmount_true_predictions.txt", EXPECT_PREDICT},
	{"leaves/genlin_tweedie", "dmitryikh_leaves/testdata--genlin_fmtp_tweedie_PurePremium.model",
	INPUT_DELIMITED, "dmitryikh_leaves/testdata--genlin_fmtp_tweedie_PurePremium_features.tsv",
	"dmitryikh_leaves/testdata--genlin_fmtp_tweedie_PurePremium_true_predictions.txt", EXPECT_PREDICT},
	{"leaves/model_simple", "dmitryikh_leaves/testdata--model_simple.txt", INPUT_NONE},

	/* dmlc/treelite */
	{"treelite/toy_categorical", "dmlc_treelite/tests--examples--toy_categorical--toy_categorical_model.txt",
	INPUT_LIBSVM, "dmlc_treelite/tests--examples--toy_categorical--toy_categorical.test",
	"dmlc_treelite/tests--examples--toy_categorical--toy_categorical.test.pred", EXPECT_PREDICT},
	{"treelite/sparse_categorical", "dmlc_treelite/tests--examples--sparse_categorical--sparse_categorical_model.txt",
	INPUT_LIBSVM, "dmlc_treelite/tests--examples--sparse_categorical--sparse_categorical.test",
	"dmlc_treelite/tests--examples--sparse_categorical--sparse_categorical.test.margin", EXPECT_MARGIN},
	{"treelite/xgb_toy_categorical", "dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json",
	INPUT_LIBSVM, "dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical.test",
	"dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical.test.pred", EXPECT_PREDICT},
	{"treelite/constant_tree", "dmlc_treelite/tests--examples--lightgbm_constant_tree--model_with_constant_tree.txt", INPUT_NONE},

	/* Elvenson/xgboost-go: multi:softmax, predict() is the class */
	{"xgboost-go/iris", "Elvenson_xgboost-go/test--data--iris_xgboost.json",
	INPUT_DELIMITED, "Elvenson_xgboost-go/test--data--iris_test.tsv",
	"Elvenson_xgboost-go/test--data--iris_xgboost_true_prediction.txt", EXPECT_PREDICT},

	/* siboehm/lleaves: LightGBM models whose references are made at test time */
	{"lleaves/NYC_taxi", "siboehm_lleaves/tests--models--NYC_taxi--model.txt", INPUT_NONE},
	{"lleaves/airline", "siboehm_lleaves/tests--models--airline--model.txt", INPUT_NONE},
	{"lleaves/boston_housing", "siboehm_lleaves/tests--models--boston_housing--model.txt", INPUT_NONE},
	{"lleaves/leaf_scan", "siboehm_lleaves/tests--models--leaf_scan--model.txt", INPUT_NONE},
	{"lleaves/mixed_categorical", "siboehm_lleaves/tests--models--mixed_categorical--model.txt", INPUT_NONE},
	{"lleaves/mtpl2", "siboehm_lleaves/tests--models--mtpl2--model.txt", INPUT_NONE},
	{"lleaves/multiclass", "siboehm_lleaves/tests--models--multiclass--model.txt", INPUT_NONE},
	{"lleaves/pure_categorical", "siboehm_lleaves/tests--models--pure_categorical--model.txt", INPUT_NONE},
	{"lleaves/single_tree", "siboehm_lleaves/tests--models--single_tree--model.txt", INPUT_NONE},
	{"lleaves/tiniest_single_tree", "siboehm_lleaves/tests--models--tiniest_single_tree--model.txt", INPUT_NONE},

	/* onnx/onnx: backend node tests of TreeEnsemble (ai.onnx.ml opset 5), their outputs are the targets */
	{"onnx/tree_ensemble_set_membership",
		"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_set_membership--model.onnx",
		INPUT_ONNX_TENSOR,
		"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_set_membership--test_data_set_0--input_0.pb",
		"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_set_membership--test_data_set_0--output_0.pb",
	EXPECT_PROBA},
	{"onnx/tree_ensemble_single_tree",
		"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_single_tree--model.onnx",
		INPUT_ONNX_TENSOR,
		"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_single_tree--test_data_set_0--input_0.pb",
		"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_single_tree--test_data_set_0--output_0.pb",
	EXPECT_PROBA},
};

/* Files of the shared set we do not read, and why */
static const char *const shared_skipped[] = {
	"dmitryikh_leaves/testdata--lg_1tree.json: LightGBM dump_model() JSON, not a model format we read",
	"dmitryikh_leaves/testdata--lg_1tree_1leaf.json: LightGBM dump_model() JSON",
	"dmitryikh_leaves/testdata--lg_dart_breast_cancer.json: LightGBM dump_model() JSON of a model tested above",
};

/* ---- reading text ---- */

/* "dir/name suffix" in a malloc'd string */
static char *
PathJoin(const char *dir, const char *name, const char *suffix)
{
	size_t		n = strlen(dir) + strlen(name) + strlen(suffix) + 2;
	char	   *p = malloc(n);

	if (p == NULL)
		abort();
	snprintf(p, n, "%s/%s%s", dir, name, suffix);
	return p;
}

/* A [rows, cols] (or [rows]) TensorProto file as a Table */
static bool
TensorTableRead(const char *path, Table *t)
{
	size_t		len;
	char	   *data = ReadFile(path, &len);
	OnnxTensor	tensor;
	SilvanStatus st;
	bool		ok;

	memset(t, 0, sizeof(*t));
	if (data == NULL)
	{
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
		return false;
	}
	ok = OnnxTensorRead(data, len, &tensor, &st);
	free(data);
	if (!ok || (tensor.num_dims != 1 && tensor.num_dims != 2))
	{
		fprintf(stderr, "%s: not a [rows, cols] tensor: %s\n", path, ok ? "" : st.detail);
		if (ok)
			free(tensor.values);
		return false;
	}
	t->rows = tensor.dims[0];
	t->cols = tensor.num_dims == 2 ? (int32_t) tensor.dims[1] : 1;
	t->v = tensor.values;
	return true;
}

static void
TableFree(Table *t)
{
	if (t->names)
		for (int32_t c = 0; c < t->cols; c++)
			free(t->names[c]);
	free(t->names);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Append a value to a growing array */
static bool
Push(double **v, int64_t *n, int64_t *cap, double x)
{
	if (*n == *cap)
	{
		int64_t		newcap = *cap ? *cap * 2 : 1024;
		double	   *nv = realloc(*v, (size_t) newcap * sizeof(double));

		if (nv == NULL)
			return false;
		*v = nv;
		*cap = newcap;
	}
	(*v)[(*n)++] = x;
	return true;
}

/* Is c a field separator of delimited text? */
static bool
IsSeparator(char c)
{
	return c == ',' || c == '\t' || c == ' ' || c == '\r';
}

/*
 * Read delimited numbers (commas, tabs or spaces; empty fields ignored, so
 * trailing separators are harmless).  With header, the first line names
 * the columns.  Every row must have as many values as the first.
 */
static bool
TableRead(const char *path, bool header, Table *t)
{
	size_t		len;
	char	   *text = ReadFile(path, &len);
	char	   *line;
	char	   *save = NULL;
	int64_t		n = 0,
				cap = 0;
	bool		first = true;

	memset(t, 0, sizeof(*t));
	if (text == NULL)
	{
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
		return false;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		int32_t		cols = 0;
		char	   *p = line;

		if (header && first)
		{
			char	   *tok,
					   *s2 = NULL;

			for (tok = strtok_r(line, ",\r", &s2); tok; tok = strtok_r(NULL, ",\r", &s2))
			{
				t->names = realloc(t->names, sizeof(char *) * (t->cols + 1));
				t->names[t->cols++] = strdup(tok);
			}
			first = false;
			continue;
		}
		while (*p)
		{
			char	   *end;
			double		x;

			while (*p && IsSeparator(*p))
				p++;
			if (*p == '\0')
				break;
			x = strtod(p, &end);
			if (end == p)
			{
				fprintf(stderr, "%s: not a number near \"%.20s\"\n", path, p);
				free(text);
				TableFree(t);
				return false;
			}
			if (!Push(&t->v, &n, &cap, x))
				abort();
			cols++;
			p = end;
		}
		if (cols == 0)
			continue;
		if (t->rows == 0 && !header)
			t->cols = cols;
		if (cols != t->cols)
		{
			fprintf(stderr, "%s: row %lld has %d values, not %d\n", path,
					(long long) t->rows + 1, cols, t->cols);
			free(text);
			TableFree(t);
			return false;
		}
		t->rows++;
	}
	free(text);
	return true;
}

/* Read libsvm rows (label idx:val ...) into num_features columns */
static bool
LibsvmRead(const char *path, int32_t num_features, double absent, Table *t)
{
	size_t		len;
	char	   *text = ReadFile(path, &len);
	char	   *line;
	char	   *save = NULL;

	memset(t, 0, sizeof(*t));
	if (text == NULL)
	{
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
		return false;
	}
	t->cols = num_features;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char	   *p = line,
				   *end;
		double	   *row;

		strtod(p, &end);		/* the label */
		if (end == p)
			continue;
		p = end;
		t->v = realloc(t->v, sizeof(double) * (size_t) (t->rows + 1) * num_features);
		row = t->v + t->rows * num_features;
		for (int32_t c = 0; c < num_features; c++)
			row[c] = absent;
		for (;;)
		{
			long		idx;

			while (*p == ' ' || *p == '\t' || *p == '\r')
				p++;
			if (*p == '\0')
				break;
			idx = strtol(p, &end, 10);
			if (end == p || *end != ':' || idx < 0 || idx >= num_features)
			{
				fprintf(stderr, "%s: bad entry near \"%.20s\"\n", path, p);
				free(text);
				TableFree(t);
				return false;
			}
			p = end + 1;
			row[idx] = strtod(p, &end);
			p = end;
		}
		t->rows++;
	}
	free(text);
	return true;
}

/* Columns [first, first + count) of a table as a new table */
static Table
TableSlice(const Table *t, int32_t first, int32_t count)
{
	Table		s = {t->rows, count, malloc(sizeof(double) * (size_t) (t->rows * count + 1)), NULL};

	for (int64_t r = 0; r < t->rows; r++)
		memcpy(s.v + r * count, t->v + r * t->cols + first, sizeof(double) * count);
	return s;
}

/* ---- running a forest ---- */

/* Feature rows in the forest's precision, as its library reads them */
static void *
RowsInPrecision(const Forest *forest, const Table *x)
{
	int64_t		n = x->rows * x->cols;

	if (forest->precision == FOREST_FLOAT32)
	{
		float	   *rows = malloc(sizeof(float) * (size_t) (n + 1));

		/* XGBoost casts float64 input to float32, as we do */
		for (int64_t i = 0; i < n; i++)
			rows[i] = (float) x->v[i];
		return rows;
	}
	else
	{
		double	   *rows = malloc(sizeof(double) * (size_t) (n + 1));

		memcpy(rows, x->v, sizeof(double) * n);
		return rows;
	}
}

/* Margins of the reference interpreter; also returns its accumulator */
static double *
InterpretMargins(const Forest *forest, const void *rows, int64_t n, void **acc_out)
{
	size_t		bytes = ForestValueSize(forest) * (size_t) (n * forest->num_groups + 1);
	void	   *acc = malloc(bytes);
	double	   *margins = malloc(sizeof(double) * (size_t) (n * forest->num_groups + 1));

	ForestMarginsInit(forest, acc, n);
	ForestInterpretAccumulate(forest, rows, n, acc);
	ForestMarginsFinish(forest, acc, n, margins);
	*acc_out = acc;
	return margins;
}

/*
 * Compile for batch size `batch` and a host profile (unit.h) and run over
 * all rows, `batch` rows per call; the accumulator must equal the
 * interpreter's bit for bit.
 */
static bool
CheckCompiled(const char *name, const Forest *forest, const void *rows,
			  int64_t n, int32_t batch, int host_profile, const void *want_acc, double *ms)
{
	HostProfile host;
	const char *host_name = UnitHostProfile(host_profile, &host);
	CompileOptions options = {.host = &host};
	Schedule	schedule;
	SilvanStatus status;
	CompiledForest *compiled;
	size_t		vsize = ForestValueSize(forest);
	size_t		row_bytes = vsize * (size_t) forest->num_features;
	size_t		acc_row = vsize * (size_t) forest->num_groups;
	void	   *acc;
	int64_t		first_bad = -1;

	StatusClear(&status);
	ScheduleDefault(forest, batch, &host, &schedule);
	compiled = CompileForestFor(forest, &schedule, NULL, &options, &status);
	if (ForestUncompiledRule(forest) != NULL)
	{
		/* the compiler refuses it; the adapter interprets such forests */
		CHECK_MSG(compiled == NULL && status.kind == SILVAN_ERROR_UNSUPPORTED,
				  "%s: uses %s but compiled", name, ForestUncompiledRule(forest));
		CompiledForestFree(compiled);
		return compiled == NULL;
	}
	CHECK_MSG(compiled != NULL, "%s: compile (batch %d, %s) failed: %s: %s", name,
			  batch, host_name, status.message, status.detail);
	if (compiled == NULL)
		return false;
	*ms += CompiledForestCompileMillis(compiled);
	acc = malloc(acc_row * (size_t) n + 1);
	ForestMarginsInit(forest, acc, n);
	for (int64_t r = 0; r < n; r += batch)
	{
		int64_t		count = n - r < batch ? n - r : batch;

		CompiledForestAccumulate(compiled, (const char *) rows + r * row_bytes,
								 count, (char *) acc + r * acc_row);
	}
	for (int64_t r = 0; r < n && first_bad < 0; r++)
		if (memcmp((char *) acc + r * acc_row, (const char *) want_acc + r * acc_row, acc_row) != 0)
			first_bad = r;
	if (first_bad >= 0)
	{
		double		got[2],
					want[2];

		ForestMarginsFinish(forest, (char *) acc + first_bad * acc_row, 1, got);
		ForestMarginsFinish(forest, (const char *) want_acc + first_bad * acc_row, 1, want);
		fprintf(stderr, "%s: compiled (batch %d, %s) differs from the interpreter at row %lld: "
				"margin_0 %.17g, interpreter %.17g\n", name, batch, host_name,
				(long long) first_bad, got[0], want[0]);
	}
	CHECK_MSG(first_bad < 0, "%s: compiled margins (batch %d, %s) are not bitwise the interpreter's",
			  name, batch, host_name);
	free(acc);
	CompiledForestFree(compiled);
	return first_bad < 0;
}

/*
 * Interpreter vs compiled with batch sizes 1 (the fallback profile) and n
 * (every host profile of unit.h)
 */
static bool
CheckCompiledBoth(const char *name, const Forest *forest, const void *rows,
				  int64_t n, const void *want_acc, double *ms)
{
	bool		ok = CheckCompiled(name, forest, rows, n, 1, 0, want_acc, ms);

	for (int k = 0; n > 1 && k < UNIT_NUM_HOST_PROFILES; k++)
		ok &= CheckCompiled(name, forest, rows, n, (int32_t) n, k, want_acc, ms);
	return ok;
}

/* Minimal deterministic generator (splitmix64) */
static uint64_t
NextRandom(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/*
 * Synthetic rows that exercise the model's own splits: each value is the
 * threshold of a split on that feature (or the next value either side),
 * a member or non-member of a categorical split's set, zero, NaN, or a
 * negative number.
 */
static Table
SyntheticRows(const Forest *forest, int64_t n)
{
	int32_t		nf = forest->num_features;
	Table		t = {n, nf, malloc(sizeof(double) * (size_t) (n * nf + 1)), NULL};
	int64_t    *count = calloc((size_t) nf + 1, sizeof(int64_t));
	int64_t    *start = calloc((size_t) nf + 2, sizeof(int64_t));
	int64_t    *nodes;
	uint64_t	state = 42;
	bool		f32 = forest->precision == FOREST_FLOAT32;

	for (int64_t i = 0; i < forest->num_nodes; i++)
		if (forest->nodes[i].kind != FOREST_NODE_LEAF)
			count[forest->nodes[i].feature]++;
	for (int32_t f = 0; f < nf; f++)
		start[f + 1] = start[f] + count[f];
	nodes = malloc(sizeof(int64_t) * (size_t) (start[nf] + 1));
	memset(count, 0, sizeof(int64_t) * nf);
	for (int64_t i = 0; i < forest->num_nodes; i++)
		if (forest->nodes[i].kind != FOREST_NODE_LEAF)
		{
			int32_t		f = forest->nodes[i].feature;

			nodes[start[f] + count[f]++] = i;
		}
	for (int64_t r = 0; r < n; r++)
		for (int32_t f = 0; f < nf; f++)
		{
			uint64_t	u = NextRandom(&state);
			double		x;
			int			pick = (int) (u % 16);

			if (pick == 0)
				x = NAN;
			else if (pick == 1)
				x = 0.0;
			else if (pick == 2)
				x = -1.0 - (double) ((u >> 8) % 1000) / 10.0;
			else if (count[f] == 0)
				x = (double) ((u >> 8) % 2000) / 100.0 - 5.0;
			else
			{
				const ForestNode *node = &forest->nodes[nodes[start[f] + (u >> 8) % count[f]]];

				if (node->kind == FOREST_NODE_CATEGORICAL)
					x = (double) ((u >> 32) % (uint64_t) (node->category_words * 32 + 2));
				else if (f32)
				{
					float		thr = (float) node->threshold;

					x = pick < 8 ? thr : nextafterf(thr, pick < 12 ? -INFINITY : INFINITY);
				}
				else
					x = pick < 8 ? node->threshold :
						nextafter(node->threshold, pick < 12 ? -INFINITY : INFINITY);
			}
			t.v[r * nf + f] = x;
		}
	free(count);
	free(start);
	free(nodes);
	return t;
}

/* ---- comparing with references ---- */

/*
 * Does got match want within the relative tolerance (NaN matches NaN)?
 * A tolerance of 0 asks for the same value bit for bit: -0 is not +0.
 */
static bool
Close(double got, double want, double tol)
{
	if (isnan(got) || isnan(want))
		return isnan(got) && isnan(want);
	if (tol == 0.0)
		return got == want && signbit(got) == signbit(want);
	if (got == want)			/* infinities */
		return true;
	return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/*
 * Compare the columns of `want` (rows x cols) with what we compute of the
 * given kind; report the first mismatches and return the largest |diff|.
 */
static double
CompareKind(const char *name, const Forest *forest, ExpectKind kind,
			const Table *want, const double *margins, double tol, bool *ok)
{
	int32_t		groups = forest->num_groups;
	int32_t		width = kind == EXPECT_PREDICT ? 1 :
		kind == EXPECT_MARGIN ? groups : ForestProbaWidth(forest);
	double	   *got = malloc(sizeof(double) * (size_t) (width + groups + 2));
	double		max_diff = 0.0;
	int			reported = 0;
	int64_t		bad = 0;

	*ok = true;
	if (kind == EXPECT_PROBA && !ForestHasProbabilities(forest))
	{
		CHECK_MSG(false, "%s: the library gives probabilities, the forest has none", name);
		*ok = false;
		free(got);
		return INFINITY;
	}
	/* binary:logistic fixtures hold only p (class 1); otherwise all */
	if (want->cols != width && !(kind == EXPECT_PROBA && want->cols == 1 && width == 2))
	{
		CHECK_MSG(false, "%s: %s reference has %d columns, we make %d", name,
				  expect_names[kind], want->cols, width);
		*ok = false;
		free(got);
		return INFINITY;
	}
	for (int64_t r = 0; r < want->rows; r++)
	{
		const double *m = margins + r * groups;
		int32_t		offset = 0;

		if (kind == EXPECT_PREDICT)
			got[0] = ForestPredictRow(forest, m);
		else if (kind == EXPECT_MARGIN)
			memcpy(got, m, sizeof(double) * groups);
		else
		{
			ForestProbaRow(forest, m, got);
			if (want->cols == 1)
				offset = 1;
		}
		for (int32_t c = 0; c < want->cols; c++)
		{
			double		g = got[c + offset];
			double		w = want->v[r * want->cols + c];

			/* XGBoost's outputs are floats, printed with enough digits */
			if (forest->precision == FOREST_FLOAT32)
				w = (float) w;
			/* ONNX Runtime's outputs are float32 tensors */
			if (forest->source == FOREST_SOURCE_ONNX)
			{
				g = (float) g;
				w = (float) w;
			}

			if (!isnan(g) && !isnan(w) && fabs(g - w) > max_diff)
				max_diff = fabs(g - w);
			if (!Close(g, w, tol))
			{
				bad++;
				if (reported++ < MAX_REPORTED)
					fprintf(stderr, "%s: row %lld %s[%d]: expected %.17g, got %.17g "
							"(margin_0 %.17g)\n", name, (long long) r,
							expect_names[kind], c + offset, w, g, m[0]);
			}
		}
	}
	if (bad > 0)
	{
		*ok = false;
		CHECK_MSG(false, "%s: %lld %s values differ from the library's", name,
				  (long long) bad, expect_names[kind]);
	}
	else
		CHECK(true);
	free(got);
	return max_diff;
}

/*
 * LightGBM pred_leaf output: the leaf index per tree.  The reference margin
 * is the sum of those leaves' values, read from the model text itself
 * (Tree=k blocks, leaf_value= lines) in tree order.
 */
static bool
MarginsFromLeaves(const char *model_text, const Table *leaves, Table *out)
{
	const char *p = model_text;
	double	  **values = calloc((size_t) leaves->cols + 1, sizeof(double *));
	int64_t    *sizes = calloc((size_t) leaves->cols + 1, sizeof(int64_t));
	int32_t		trees = 0;
	bool		ok = true;

	while ((p = strstr(p, "\nTree=")) != NULL && trees < leaves->cols)
	{
		const char *lv = strstr(p, "\nleaf_value=");
		const char *next = strstr(p + 1, "\nTree=");
		int64_t		n = 0,
					cap = 0;
		char	   *end;

		if (lv == NULL || (next && lv > next))
			break;
		lv += strlen("\nleaf_value=");
		while (*lv && *lv != '\n' && *lv != '\r')
		{
			double		x = strtod(lv, &end);

			if (end == lv)
				break;
			Push(&values[trees], &n, &cap, x);
			lv = end;
			while (*lv == ' ')
				lv++;
		}
		sizes[trees++] = n;
		p++;
	}
	if (trees != leaves->cols)
	{
		fprintf(stderr, "model has %d trees, pred_leaf file %d\n", trees, leaves->cols);
		ok = false;
	}
	out->rows = leaves->rows;
	out->cols = 1;
	out->names = NULL;
	out->v = malloc(sizeof(double) * (size_t) (leaves->rows + 1));
	for (int64_t r = 0; ok && r < leaves->rows; r++)
	{
		double		sum = 0.0;

		for (int32_t t = 0; t < trees; t++)
		{
			double		leaf = leaves->v[r * leaves->cols + t];

			if (leaf < 0 || leaf >= sizes[t])
			{
				ok = false;
				break;
			}
			sum += values[t][(int64_t) leaf];
		}
		out->v[r] = sum;
	}
	for (int32_t t = 0; t < trees; t++)
		free(values[t]);
	free(values);
	free(sizes);
	return ok;
}

/* ---- one model ---- */

/* Parse a model file; NULL (and a failed check) on error */
static Forest *
LoadModel(const char *name, const char *path, char **text_out)
{
	size_t		len;
	char	   *text = ReadFile(path, &len);
	SilvanStatus status;
	ModelFormat detected;
	Forest	   *forest;

	CHECK_MSG(text != NULL, "%s: cannot read %s", name, path);
	if (text == NULL)
		return NULL;
	StatusClear(&status);
	forest = ParseModel(text, len, MODEL_FORMAT_AUTO, &detected, &status);
	CHECK_MSG(forest != NULL, "%s: parse failed: %s: %s", name, status.message, status.detail);
	if (text_out)
		*text_out = text;
	else
		free(text);
	return forest;
}

/* Interpreter vs compiled on synthetic rows made from the model's splits */
static bool
CheckSynthetic(const char *name, const Forest *forest, double *ms)
{
	Table		x = SyntheticRows(forest, SYNTHETIC_ROWS);
	void	   *rows = RowsInPrecision(forest, &x);
	void	   *acc;
	double	   *margins = InterpretMargins(forest, rows, x.rows, &acc);
	bool		ok = CheckCompiledBoth(name, forest, rows, x.rows, acc, ms);

	free(margins);
	free(acc);
	free(rows);
	TableFree(&x);
	return ok;
}

/*
 * Run a forest over input rows, compare compiled code with the interpreter
 * and the interpreter with each reference; print one line.
 */
static void
CheckModel(const char *name, const Forest *forest, const Table *x,
		   const Table *const *wants, const ExpectKind *kinds, int nwants,
		   const char *note)
{
	double		tol = forest->source == FOREST_SOURCE_ONNX ? 0.0 :
		forest->precision == FOREST_FLOAT32 ? XGBOOST_TOLERANCE : LIGHTGBM_TOLERANCE;
	void	   *rows = NULL;
	void	   *acc = NULL;
	double	   *margins = NULL;
	double		ms = 0.0;
	bool		ok = true;
	char		diffs[256] = "";
	int64_t		n = x ? x->rows : 0;

	if (x)
	{
		CHECK_MSG(x->cols == forest->num_features, "%s: input has %d features, model %d",
				  name, x->cols, forest->num_features);
		if (x->cols != forest->num_features)
		{
			printf("FAIL %-36s feature count mismatch\n", name);
			return;
		}
		rows = RowsInPrecision(forest, x);
		margins = InterpretMargins(forest, rows, n, &acc);
		ok &= CheckCompiledBoth(name, forest, rows, n, acc, &ms);
		for (int i = 0; i < nwants; i++)
		{
			bool		kind_ok;
			double		d;

			CHECK_MSG(wants[i]->rows == n, "%s: %lld input rows, %lld reference rows",
					  name, (long long) n, (long long) wants[i]->rows);
			if (wants[i]->rows != n)
			{
				ok = false;
				continue;
			}
			d = CompareKind(name, forest, kinds[i], wants[i], margins, tol, &kind_ok);
			ok &= kind_ok;
			snprintf(diffs + strlen(diffs), sizeof(diffs) - strlen(diffs),
					 " %s %.3g", expect_names[kinds[i]], d);
		}
	}
	ok &= CheckSynthetic(name, forest, &ms);
	printf("%s %-36s %-8s %-10s trees %5d rows %5lld max|diff|%s%s (compile %.0f ms)%s%s\n",
		   ok ? "ok  " : "FAIL", name, ForestSourceName(forest->source),
		   ForestTaskName(forest->task), forest->num_trees, (long long) n,
		   diffs[0] ? diffs : " -", x ? "" : " (no reference; parse, compile, synthetic rows)",
		   ms, note ? "\n     note: " : "", note ? note : "");
	fflush(stdout);
	free(rows);
	free(acc);
	free(margins);
}

/* ---- the fixtures ---- */

/* Split an expected.csv into predict, margin_*, prob_* tables */
static void
SplitExpected(const Table *e, Table *predict, Table *margin, Table *proba)
{
	int32_t		nm = 0,
				np = 0;

	for (int32_t c = 0; c < e->cols; c++)
	{
		if (strncmp(e->names[c], "margin_", 7) == 0)
			nm++;
		else if (strncmp(e->names[c], "prob_", 5) == 0)
			np++;
	}
	*predict = TableSlice(e, 0, 1);
	*margin = TableSlice(e, 1, nm);
	*proba = TableSlice(e, 1 + nm, np);
}

static void
RunFixtures(const char *dir, const char *only)
{
	char	   *path;
	char	   *manifest;
	char	   *line,
			   *save = NULL;
	int			count = 0;

	path = PathJoin(dir, "MANIFEST", "");
	manifest = ReadFile(path, NULL);
	CHECK_MSG(manifest != NULL, "cannot read %s", path);
	free(path);
	if (manifest == NULL)
		return;
	printf("-- fixtures (%s)\n", dir);
	for (line = strtok_r(manifest, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char		name[128],
					objective[64];
		Forest	   *forest;
		Table		x,
					e,
					predict,
					margin,
					proba;
		const Table *wants[3];
		ExpectKind	kinds[3] = {EXPECT_PREDICT, EXPECT_MARGIN, EXPECT_PROBA};
		char		label[200];
		bool		ok;

		if (line[0] == '#' || sscanf(line, "%127s %63s", name, objective) != 2)
			continue;
		if (only && strstr(name, only) == NULL)
			continue;
		count++;
		snprintf(label, sizeof(label), "%s", name);
		path = PathJoin(dir, name, ".json");
		forest = LoadModel(label, path, NULL);
		free(path);
		if (forest == NULL)
		{
			printf("FAIL %-36s parse failed\n", label);
			continue;
		}
		CHECK_MSG(strcmp(forest->objective, objective) == 0, "%s: objective %s, want %s",
				  label, forest->objective, objective);
		path = PathJoin(dir, name, ".input.csv");
		ok = TableRead(path, false, &x);
		free(path);
		if (!ok)
		{
			CHECK_MSG(false, "%s: cannot read inputs", label);
			ForestFree(forest);
			continue;
		}
		path = PathJoin(dir, name, ".expected.csv");
		ok = TableRead(path, true, &e);
		free(path);
		if (!ok)
		{
			CHECK_MSG(false, "%s: cannot read expected output", label);
			TableFree(&x);
			ForestFree(forest);
			continue;
		}
		SplitExpected(&e, &predict, &margin, &proba);
		wants[0] = &predict;
		wants[1] = &margin;
		wants[2] = &proba;
		CheckModel(label, forest, &x, wants, kinds, proba.cols > 0 ? 3 : 2, NULL);
		TableFree(&x);
		TableFree(&e);
		TableFree(&predict);
		TableFree(&margin);
		TableFree(&proba);
		ForestFree(forest);
	}
	CHECK_MSG(count > 0 || only, "no fixtures listed in %s/MANIFEST", dir);
	free(manifest);
}

/* test/fixtures/onnx: label or predict first, then prob_* */
static void
RunOnnxFixtures(const char *dir, const char *only)
{
	char	   *path = PathJoin(dir, "MANIFEST", "");
	char	   *manifest = ReadFile(path, NULL);
	char	   *line,
			   *save = NULL;

	CHECK_MSG(manifest != NULL, "cannot read %s", path);
	free(path);
	if (manifest == NULL)
		return;
	printf("-- onnx fixtures (%s)\n", dir);
	for (line = strtok_r(manifest, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char		name[128],
					kind[8];
		Forest	   *forest;
		Table		x,
					e,
					predict,
					margin,
					proba;
		const Table *wants[2];
		ExpectKind	kinds[2] = {EXPECT_PREDICT, EXPECT_PROBA};
		bool		ok;

		if (line[0] == '#' || sscanf(line, "%127s %7s", name, kind) != 2)
			continue;
		if (only && strstr(name, only) == NULL)
			continue;
		path = PathJoin(dir, name, ".onnx");
		forest = LoadModel(name, path, NULL);
		free(path);
		if (forest == NULL)
		{
			printf("FAIL %-36s parse failed\n", name);
			continue;
		}
		path = PathJoin(dir, name, ".input.csv");
		ok = TableRead(path, false, &x);
		free(path);
		path = PathJoin(dir, name, ".expected.csv");
		ok = ok && TableRead(path, true, &e);
		free(path);
		CHECK_MSG(ok, "%s: cannot read inputs or expected output", name);
		if (ok)
		{
			SplitExpected(&e, &predict, &margin, &proba);
			wants[0] = &predict;
			wants[1] = &proba;
			CheckModel(name, forest, &x, wants, kinds, proba.cols > 0 ? 2 : 1,
					   ForestUncompiledRule(forest) ? "interpreted: the compiler refuses it" : NULL);
			TableFree(&x);
			TableFree(&e);
			TableFree(&predict);
			TableFree(&margin);
			TableFree(&proba);
		}
		ForestFree(forest);
	}
	free(manifest);
}

/* ---- the shared set ---- */

static void
RunSharedCase(const char *models, const SharedCase *c)
{
	char	   *path;
	char	   *text = NULL;
	Forest	   *forest;
	Table		x = {0},
				in = {0},
				want[2] = {{0}, {0}};
	const Table *wants[2];
	ExpectKind	kinds[2];
	int			nwants = 0;
	bool		ok = true;

	path = PathJoin(models, c->model, "");
	forest = LoadModel(c->name, path, &text);
	free(path);
	if (forest == NULL)
	{
		printf("FAIL %-36s parse failed\n", c->name);
		free(text);
		return;
	}
	if (c->format == INPUT_NONE)
	{
		CheckModel(c->name, forest, NULL, NULL, NULL, 0, c->note);
		ForestFree(forest);
		free(text);
		return;
	}

	path = PathJoin(models, c->input, "");
	if (c->format == INPUT_ONNX_TENSOR)
		ok = TensorTableRead(path, &x);
	else if (c->format == INPUT_LIBSVM)
		ok = LibsvmRead(path, forest->num_features, LIBSVM_ABSENT, &x);
	else
	{
		ok = TableRead(path, false, &in);
		if (ok && c->format == INPUT_CSV_LAST_EXPECTED)
		{
			x = TableSlice(&in, 0, in.cols - 1);
			want[0] = TableSlice(&in, in.cols - 1, 1);
			kinds[0] = c->kind;
			nwants = 1;
		}
		else if (ok && c->format == INPUT_DELIMITED_LABEL)
			x = TableSlice(&in, 1, in.cols - 1);
		else if (ok)
			x = TableSlice(&in, 0, in.cols);
	}
	free(path);
	for (int i = 0; ok && i < 2; i++)
	{
		const char *file = i == 0 ? c->expect : c->expect2;
		ExpectKind	kind = i == 0 ? c->kind : c->kind2;
		Table		raw;

		if (file == NULL)
			continue;
		path = PathJoin(models, file, "");
		ok = c->format == INPUT_ONNX_TENSOR ? TensorTableRead(path, &raw) :
			TableRead(path, false, &raw);
		free(path);
		if (!ok)
			break;
		if (kind == EXPECT_LEAVES)
		{
			ok = MarginsFromLeaves(text, &raw, &want[nwants]);
			kind = EXPECT_MARGIN;
			TableFree(&raw);
		}
		else
			want[nwants] = raw;
		kinds[nwants++] = kind;
	}
	CHECK_MSG(ok, "%s: cannot read inputs or references", c->name);
	if (ok)
	{
		for (int i = 0; i < nwants; i++)
			wants[i] = &want[i];
		CheckModel(c->name, forest, &x, wants, kinds, nwants, c->note);
	}
	else
		printf("FAIL %-36s cannot read inputs or references\n", c->name);
	TableFree(&x);
	TableFree(&in);
	TableFree(&want[0]);
	TableFree(&want[1]);
	ForestFree(forest);
	free(text);
}

/* Does path name a readable directory? */
static bool
IsDirectory(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The shared models folder: $SILVAN_SHARED[/models], else ../shared/models */
static bool
FindShared(const char *root, char *out, size_t size)
{
	const char *env = getenv("SILVAN_SHARED");
	char		p[4096];

	if (env && *env)
	{
		snprintf(p, sizeof(p), "%s/models", env);
		if (IsDirectory(p))
			return snprintf(out, size, "%s", p) > 0;
		if (IsDirectory(env))
			return snprintf(out, size, "%s", env) > 0;
	}
	snprintf(p, sizeof(p), "%s/../shared/models", root);
	if (IsDirectory(p))
		return snprintf(out, size, "%s", p) > 0;
	return false;
}

int
main(int argc, char **argv)
{
	const char *roots[] = {".", "..", "../..", "../../.."};
	const char *root = NULL;
	char	   *path;
	char		shared[4096];
	const char *only = argc > 1 ? argv[1] : NULL;	/* run models whose name has this */
	struct timespec t0,
				t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]) && root == NULL; i++)
	{
		path = PathJoin(roots[i], "test/fixtures/MANIFEST", "");
		if (access(path, R_OK) == 0)
			root = roots[i];
		free(path);
	}
	CHECK_MSG(root != NULL, "cannot find test/fixtures/MANIFEST; run from the repository root");
	if (root == NULL)
		UNIT_DONE();

	path = PathJoin(root, "test/fixtures", "");
	RunFixtures(path, only);
	free(path);
	path = PathJoin(root, "test/fixtures/onnx", "");
	RunOnnxFixtures(path, only);
	free(path);

	if (FindShared(root, shared, sizeof(shared)))
	{
		printf("-- shared models (%s)\n", shared);
		for (size_t i = 0; i < sizeof(shared_cases) / sizeof(shared_cases[0]); i++)
			if (only == NULL || strstr(shared_cases[i].name, only))
				RunSharedCase(shared, &shared_cases[i]);
		for (size_t i = 0; only == NULL && i < sizeof(shared_skipped) / sizeof(shared_skipped[0]); i++)
			printf("skip %s\n", shared_skipped[i]);
	}
	else
		printf("-- shared models not found (set SILVAN_SHARED or put them in ../shared/models); skipped\n");

	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("-- %.1f s\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	UNIT_DONE();
}
