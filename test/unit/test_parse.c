/*
 * test_parse.c
 *		Unit tests of the model readers: XGBoost JSON, LightGBM text, detection.
 *
 * Small models written inline pin down exactly how each library's fields
 * map onto the Forest IR (node layout, decision rules, category sets, base
 * margins, transforms).  Hostile variants of them (truncated, inconsistent,
 * unsupported, randomly mutated) must fail with the right kind of error and
 * never crash.  When the shared model collection is present (../shared, or
 * $SILVAN_SHARED) every XGBoost JSON and LightGBM text model in it is parsed
 * and its counts checked, and a few are compared with the predictions the
 * training libraries themselves produced.  The full conformance suite lives
 * elsewhere; this file keeps to the readers.
 */
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#include "silvan/parse.h"
#include "unit.h"

/* ---------- helpers ---------- */

/* The shared model folder, or NULL when it is absent */
static const char *
SharedModels(void)
{
	static char dir[1024];
	const char *candidates[] = {getenv("SILVAN_SHARED"), "../shared", "../../shared",
	"../../../shared"};
	struct stat st;

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
	{
		char		readme[1100];

		if (candidates[i] == NULL)
			continue;
		snprintf(readme, sizeof(readme), "%s/models/README.md", candidates[i]);
		if (stat(readme, &st) == 0)
		{
			snprintf(dir, sizeof(dir), "%s/models", candidates[i]);
			return dir;
		}
	}
	return NULL;
}

/* A copy of s with the first occurrence of from replaced by to */
static char *
Replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	size_t		n = strlen(s) - strlen(from) + strlen(to);
	char	   *out = malloc(n + 1);

	if (at == NULL)
	{
		fprintf(stderr, "test bug: \"%s\" not found in model text\n", from);
		unit_failed++;
		strcpy(out = realloc(out, strlen(s) + 1), s);
		return out;
	}
	memcpy(out, s, at - s);
	strcpy(out + (at - s), to);
	strcat(out, at + strlen(from));
	return out;
}

/* Parse text that must fail with the given kind; label names the case */
static void
ExpectFail(const char *text, size_t len, ModelFormat format,
		   SilvanErrorKind kind, const char *label)
{
	SilvanStatus st;
	Forest	   *f = ParseModel(text, len, format, NULL, &st);

	CHECK_MSG(f == NULL && st.kind == kind && st.message[0] != '\0' &&
			  st.detail[0] != '\0',
			  "%s: got %s, kind %d: %s: %s", label, f ? "a forest" : "NULL",
			  st.kind, st.message, st.detail);
	ForestFree(f);
}

/* ExpectFail for a NUL-terminated text */
static void
ExpectFailStr(const char *text, ModelFormat format, SilvanErrorKind kind,
			  const char *label)
{
	ExpectFail(text, strlen(text), format, kind, label);
}

/* Apply one replacement to a model and expect the result to fail */
static void
ExpectVariantFails(const char *base, ModelFormat format, const char *from,
				   const char *to, SilvanErrorKind kind, const char *label)
{
	char	   *text = Replace(base, from, to);

	ExpectFail(text, strlen(text), format, kind, label);
	free(text);
}

/* Parse text that must succeed */
static Forest *
MustParse(const char *text, size_t len, const char *label)
{
	SilvanStatus st;
	Forest	   *f = ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &st);

	CHECK_MSG(f != NULL, "%s: kind %d: %s: %s", label, st.kind, st.message, st.detail);
	return f;
}

/* Margins of one row (given as doubles) through the interpreter */
static void
RowMargins(const Forest *f, const double *x, double *margins)
{
	void	   *row = calloc(f->num_features, ForestValueSize(f));
	void	   *acc = calloc(f->num_groups, ForestValueSize(f));

	for (int j = 0; j < f->num_features; j++)
	{
		if (f->precision == FOREST_FLOAT32)
			((float *) row)[j] = (float) x[j];
		else
			((double *) row)[j] = x[j];
	}
	ForestMarginsInit(f, acc, 1);
	ForestInterpretAccumulate(f, row, 1, acc);
	ForestMarginsFinish(f, acc, 1, margins);
	free(row);
	free(acc);
}

/* Margin 0 of one row */
static double
Margin0(const Forest *f, double x0, double x1, double x2)
{
	double		x[3] = {x0, x1, x2};
	double		m[16];

	RowMargins(f, x, m);
	return m[0];
}

/* Walk every tree for a few rows so bad indices show up under valgrind */
static void
Exercise(const Forest *f)
{
	double	   *x = malloc(sizeof(double) * f->num_features);
	double	   *m = malloc(sizeof(double) * f->num_groups);
	const double probes[] = {NAN, 0.0, -1.0, 0.5, 1.0, 3.0, 40.0, 1e30};

	for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++)
	{
		for (int j = 0; j < f->num_features; j++)
			x[j] = probes[(p + j) % (sizeof(probes) / sizeof(probes[0]))];
		RowMargins(f, x, m);
	}
	free(x);
	free(m);
}

/* ---------- inline models ---------- */

/*
 * An XGBoost 1.7-style model: tree 0 is numeric (f0 < 0.5, then f2 < 1.5),
 * tree 1 has one categorical split on f1 whose set is {1, 3, 40}.
 */
static const char *xgb_model =
"{\"learner\":{\"attributes\":{},\"feature_names\":[],\"feature_types\":[],"
"\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_parallel_tree\":\"1\","
"\"num_trees\":\"2\",\"size_leaf_vector\":\"0\"},\"tree_info\":[0,0],\"trees\":["
"{\"base_weights\":[0,0,0,0,0],\"categories\":[],\"categories_nodes\":[],"
"\"categories_segments\":[],\"categories_sizes\":[],\"default_left\":[1,0,0,0,0],\"id\":0,"
"\"left_children\":[1,3,-1,-1,-1],\"loss_changes\":[0,0,0,0,0],"
"\"parents\":[2147483647,0,0,1,1],\"right_children\":[2,4,-1,-1,-1],"
"\"split_conditions\":[5E-1,1.5E0,3E-1,-2E-1,1E-1],\"split_indices\":[0,2,0,0,0],"
"\"split_type\":[0,0,0,0,0],\"sum_hessian\":[1,1,1,1,1],\"tree_param\":{\"num_deleted\":\"0\","
"\"num_feature\":\"3\",\"num_nodes\":\"5\",\"size_leaf_vector\":\"0\"}},"
"{\"base_weights\":[0,0,0],\"categories\":[1,3,40],\"categories_nodes\":[0],"
"\"categories_segments\":[0],\"categories_sizes\":[3],\"default_left\":[0,0,0],\"id\":1,"
"\"left_children\":[1,-1,-1],\"loss_changes\":[0,0,0],\"parents\":[2147483647,0,0],"
"\"right_children\":[2,-1,-1],\"split_conditions\":[NaN,1E0,2E0],\"split_indices\":[1,0,0],"
"\"split_type\":[1,0,0],\"sum_hessian\":[1,1,1],\"tree_param\":{\"num_deleted\":\"0\","
"\"num_feature\":\"3\",\"num_nodes\":\"3\",\"size_leaf_vector\":\"0\"}}]},\"name\":\"gbtree\"},"
"\"learner_model_param\":{\"base_score\":\"5E-1\",\"boost_from_average\":\"1\","
"\"num_class\":\"0\",\"num_feature\":\"3\",\"num_target\":\"1\"},"
"\"objective\":{\"name\":\"binary:logistic\",\"reg_loss_param\":{\"scale_pos_weight\":\"1\"}}},"
"\"version\":[1,7,4]}";

/*
 * A LightGBM v3-style model: tree 0 splits categorically on f1 (set {1, 3,
 * 32}), then numerically on f0 <= 0.5 with NaN missing going left; tree 1
 * is a single leaf; tree 2 splits f2 <= 1 with zero-as-missing going right.
 */
static const char *lgb_model =
"tree\n"
"version=v3\n"
"num_class=1\n"
"num_tree_per_iteration=1\n"
"label_index=0\n"
"max_feature_idx=2\n"
"objective=binary sigmoid:0.5\n"
"feature_names=a b c\n"
"feature_infos=none none none\n"
"tree_sizes=300 200 250\n"
"\n"
"Tree=0\n"
"num_leaves=3\n"
"num_cat=1\n"
"split_feature=1 0\n"
"split_gain=1 1\n"
"threshold=0 0.5\n"
"decision_type=1 10\n"
"left_child=-1 -2\n"
"right_child=1 -3\n"
"leaf_value=0.25 -0.5 1.5\n"
"leaf_weight=1 1 1\n"
"leaf_count=1 1 1\n"
"internal_value=0 0\n"
"internal_weight=0 0\n"
"internal_count=3 2\n"
"cat_boundaries=0 2\n"
"cat_threshold=10 1\n"
"is_linear=0\n"
"shrinkage=1\n"
"\n"
"\n"
"Tree=1\n"
"num_leaves=1\n"
"num_cat=0\n"
"split_feature=\n"
"split_gain=\n"
"threshold=\n"
"decision_type=\n"
"left_child=\n"
"right_child=\n"
"leaf_value=0.125\n"
"leaf_weight=\n"
"leaf_count=\n"
"internal_value=\n"
"internal_weight=\n"
"internal_count=\n"
"is_linear=0\n"
"shrinkage=1\n"
"\n"
"\n"
"Tree=2\n"
"num_leaves=2\n"
"num_cat=0\n"
"split_feature=2\n"
"split_gain=1\n"
"threshold=1.0000000000000002\n"
"decision_type=4\n"
"left_child=-1\n"
"right_child=-2\n"
"leaf_value=-1 2\n"
"leaf_weight=1 1\n"
"leaf_count=1 1\n"
"internal_value=0\n"
"internal_weight=0\n"
"internal_count=2\n"
"is_linear=0\n"
"shrinkage=0.1\n"
"\n"
"\n"
"end of trees\n"
"\n"
"feature_importances:\n"
"a=1\n"
"\n"
"parameters:\n"
"[boosting: gbdt]\n"
"[objective: binary]\n"
"end of parameters\n"
"\n"
"pandas_categorical:null\n";

/* ---------- format names and detection ---------- */

/* Format names map both ways */
static void
TestFormatNames(void)
{
	ModelFormat f = MODEL_FORMAT_AUTO;

	CHECK(ModelFormatFromName("auto", &f) && f == MODEL_FORMAT_AUTO);
	CHECK(ModelFormatFromName("xgboost", &f) && f == MODEL_FORMAT_XGBOOST_JSON);
	CHECK(ModelFormatFromName("XGBoost_JSON", &f) && f == MODEL_FORMAT_XGBOOST_JSON);
	CHECK(ModelFormatFromName("json", &f) && f == MODEL_FORMAT_XGBOOST_JSON);
	CHECK(ModelFormatFromName("LightGBM", &f) && f == MODEL_FORMAT_LIGHTGBM_TEXT);
	CHECK(ModelFormatFromName("lightgbm_text", &f) && f == MODEL_FORMAT_LIGHTGBM_TEXT);
	CHECK(ModelFormatFromName("LGBM", &f) && f == MODEL_FORMAT_LIGHTGBM_TEXT);
	CHECK(ModelFormatFromName("onnx", &f) && f == MODEL_FORMAT_ONNX);
	CHECK(ModelFormatFromName("ONNX", &f) && f == MODEL_FORMAT_ONNX);
	CHECK(strcmp(ModelFormatName(MODEL_FORMAT_ONNX), "onnx") == 0);
	CHECK(!ModelFormatFromName("", &f));
	CHECK(!ModelFormatFromName(NULL, &f));
	CHECK(strcmp(ModelFormatName(MODEL_FORMAT_XGBOOST_JSON), "xgboost_json") == 0);
	CHECK(strcmp(ModelFormatName(MODEL_FORMAT_LIGHTGBM_TEXT), "lightgbm_text") == 0);
	CHECK(strcmp(ModelFormatName(MODEL_FORMAT_AUTO), "auto") == 0);
}

/* Detection looks at the shape of the text only */
static void
TestDetect(void)
{
	const char *crlf = "\xEF\xBB\xBFtree\r\nversion=v4\r\n";
	ModelFormat detected = MODEL_FORMAT_AUTO;
	SilvanStatus st;
	Forest	   *f;

	CHECK(ModelFormatDetect(xgb_model, strlen(xgb_model)) == MODEL_FORMAT_XGBOOST_JSON);
	CHECK(ModelFormatDetect("  \n {\"learner\": {}}", 19) == MODEL_FORMAT_XGBOOST_JSON);
	CHECK(ModelFormatDetect("{\"tree_info\": []}", 17) == MODEL_FORMAT_AUTO);
	CHECK(ModelFormatDetect(lgb_model, strlen(lgb_model)) == MODEL_FORMAT_LIGHTGBM_TEXT);
	CHECK(ModelFormatDetect(crlf, strlen(crlf)) == MODEL_FORMAT_LIGHTGBM_TEXT);
	CHECK(ModelFormatDetect("x=1\nTree=0\n", 11) == MODEL_FORMAT_LIGHTGBM_TEXT);
	CHECK(ModelFormatDetect("num_tree_per_iteration=1\n", 25) == MODEL_FORMAT_LIGHTGBM_TEXT);
	CHECK(ModelFormatDetect("hello world", 11) == MODEL_FORMAT_AUTO);
	CHECK(ModelFormatDetect("", 0) == MODEL_FORMAT_AUTO);
	CHECK(ModelFormatDetect(NULL, 0) == MODEL_FORMAT_AUTO);
	/* the detected format comes back from ParseModel */
	f = ParseModel(lgb_model, strlen(lgb_model), MODEL_FORMAT_AUTO, &detected, &st);
	CHECK(f != NULL && detected == MODEL_FORMAT_LIGHTGBM_TEXT);
	ForestFree(f);
	f = ParseModel(xgb_model, strlen(xgb_model), MODEL_FORMAT_AUTO, &detected, &st);
	CHECK(f != NULL && detected == MODEL_FORMAT_XGBOOST_JSON);
	ForestFree(f);
}

/* ---------- XGBoost ---------- */

/* The inline XGBoost model maps field by field */
static void
TestXgboostFields(void)
{
	Forest	   *f = MustParse(xgb_model, strlen(xgb_model), "xgboost inline");
	const ForestNode *n;

	if (f == NULL)
		return;
	CHECK(f->source == FOREST_SOURCE_XGBOOST && f->precision == FOREST_FLOAT32);
	CHECK(strcmp(f->objective, "binary:logistic") == 0);
	CHECK(f->task == FOREST_TASK_BINARY && f->transform == FOREST_TRANSFORM_SIGMOID);
	CHECK(f->num_features == 3 && f->num_groups == 1 && f->num_classes == 2);
	CHECK(f->num_trees == 2 && f->num_nodes == 8 && f->sigmoid_alpha == 1.0);
	CHECK(f->base_margin[0] == 0.0 && !f->average_output);
	CHECK(f->trees[1].first_node == 5 && f->trees[1].num_nodes == 3 && f->max_depth == 2);
	n = &f->nodes[0];
	CHECK(n->kind == FOREST_NODE_NUMERIC && n->compare == FOREST_CMP_LT &&
		  n->missing == FOREST_MISSING_NAN && n->default_left == 1 &&
		  n->feature == 0 && n->threshold == 0.5 && n->left == 1 && n->right == 2);
	CHECK(f->nodes[1].default_left == 0 && f->nodes[1].feature == 2);
	CHECK(f->nodes[2].kind == FOREST_NODE_LEAF && f->nodes[2].leaf_value == (double) 0.3f);
	CHECK(f->nodes[3].leaf_value == (double) -0.2f && f->nodes[2].left == -1);
	n = &f->nodes[5];
	CHECK(n->kind == FOREST_NODE_CATEGORICAL && n->feature == 1 &&
		  n->category_in_left == 0 && n->missing == FOREST_MISSING_NAN &&
		  n->category_words == 2 && f->num_category_words == 2);
	CHECK(f->category_words[n->category_offset] == ((1u << 1) | (1u << 3)));
	CHECK(f->category_words[n->category_offset + 1] == (1u << 8));
	/* members go right, NaN follows default_left, the rest go left */
	CHECK(Margin0(f, 0.2, 3, 1.0) == (double) (-0.2f + 2.0f));
	CHECK(Margin0(f, 0.7, 2, 0) == (double) (0.3f + 1.0f));
	CHECK(Margin0(f, 0.7, 40, 0) == (double) (0.3f + 2.0f));
	CHECK(Margin0(f, 0.7, 41, 0) == (double) (0.3f + 1.0f));
	CHECK(Margin0(f, 0.7, -1, 0) == (double) (0.3f + 1.0f));
	CHECK(Margin0(f, NAN, NAN, NAN) == (double) (0.1f + 2.0f));
	CHECK(Margin0(f, 0.5, 1, 1.5) == (double) (0.3f + 2.0f));
	ForestFree(f);
}

/* Objectives fix task, transform and the base margin (in float) */
static void
TestXgboostObjectives(void)
{
	static const struct
	{
		const char *name;
		const char *score;
		ForestTask	task;
		ForestTransform transform;
		float		margin;
	}			cases[] = {
		{"reg:squarederror", "3E-1", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0.3f},
		{"reg:logistic", "2E-1", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_SIGMOID, -1.3862944f},
		{"binary:logitraw", "3E-1", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0.3f},
		{"binary:hinge", "5E-1", FOREST_TASK_BINARY, FOREST_TRANSFORM_HINGE, 0.5f},
		{"count:poisson", "2E0", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 0.6931472f},
		{"reg:gamma", "5E-1", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, -0.6931472f},
		{"rank:ndcg", "5E-1", FOREST_TASK_RANKING, FOREST_TRANSFORM_IDENTITY, 0.5f},
		{"survival:cox", "1E0", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 0.0f},
		{"survival:aft", "6.5004835E0", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP_DOUBLE,
		1.8718766f},
		{"reg:tweedie", "2E0", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 0.6931472f},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char		score[64];
		char	   *a,
				   *b;
		Forest	   *f;

		snprintf(score, sizeof(score), "\"base_score\":\"%s\"", cases[i].score);
		a = Replace(xgb_model, "binary:logistic", cases[i].name);
		b = Replace(a, "\"base_score\":\"5E-1\"", score);
		f = MustParse(b, strlen(b), cases[i].name);
		if (f != NULL)
		{
			CHECK_MSG(f->task == cases[i].task && f->transform == cases[i].transform,
					  "%s: task %d transform %d", cases[i].name, f->task, f->transform);
			CHECK_MSG((float) f->base_margin[0] == cases[i].margin &&
					  f->base_margin[0] == (double) (float) f->base_margin[0],
					  "%s: margin %.9g", cases[i].name, f->base_margin[0]);
		}
		ForestFree(f);
		free(a);
		free(b);
	}
}

/* multi:softprob: one group per class; base_score in every group */
static void
TestXgboostMulticlass(void)
{
	char	   *a = Replace(xgb_model, "binary:logistic", "multi:softprob");
	char	   *b = Replace(a, "\"num_class\":\"0\"", "\"num_class\":\"3\"");
	char	   *c = Replace(b, "\"tree_info\":[0,0]", "\"tree_info\":[0,2]");
	Forest	   *f = MustParse(c, strlen(c), "multi:softprob");

	if (f != NULL)
	{
		CHECK(f->task == FOREST_TASK_MULTICLASS && f->transform == FOREST_TRANSFORM_SOFTMAX);
		CHECK(f->num_groups == 3 && f->num_classes == 3);
		CHECK(f->base_margin[0] == 0.5 && f->base_margin[2] == 0.5);
		CHECK(f->trees[0].group == 0 && f->trees[1].group == 2);
	}
	ForestFree(f);
	ExpectVariantFails(b, MODEL_FORMAT_AUTO, "\"tree_info\":[0,0]", "\"tree_info\":[0,3]",
					   SILVAN_ERROR_INVALID, "tree_info out of range");
	free(a);
	free(b);
	free(c);
}

/* XGBoost 2.x writes base_score as a list and default_left as ints */
static void
TestXgboostLayouts(void)
{
	char	   *a = Replace(xgb_model, "\"base_score\":\"5E-1\"", "\"base_score\":\"[2E-1]\"");
	char	   *b = Replace(a, "\"default_left\":[1,0,0,0,0]", "\"default_left\":[true,false,false,false,false]");
	char	   *c = Replace(b, "\"size_leaf_vector\":\"0\"}},", "\"size_leaf_vector\":\"1\"}},");
	char	   *d;
	Forest	   *f = MustParse(c, strlen(c), "xgboost 2.x layout");

	if (f != NULL)
	{
		CHECK(f->base_margin[0] == (double) -logf(1.0f / 0.2f - 1.0f));
		CHECK(f->nodes[0].default_left == 1);
	}
	ForestFree(f);
	/* trees are placed by their "id" */
	d = Replace(xgb_model, "\"id\":0", "\"id\":9");
	ExpectFail(d, strlen(d), MODEL_FORMAT_AUTO, SILVAN_ERROR_INVALID, "tree id out of range");
	free(d);
	d = Replace(xgb_model, "\"id\":1", "\"id\":0");
	ExpectFail(d, strlen(d), MODEL_FORMAT_AUTO, SILVAN_ERROR_INVALID, "repeated tree id");
	free(a);
	free(b);
	free(c);
	free(d);
}

/* dart: each tree's leaves are scaled by its weight_drop, in float */
static void
TestXgboostDart(void)
{
	char	   *a = Replace(xgb_model, "\"gradient_booster\":{\"model\":",
							"\"gradient_booster\":{\"gbtree\":{\"name\":\"gbtree\",\"model\":");
	char	   *b = Replace(a, "\"name\":\"gbtree\"},\"learner_model_param\"",
							"\"name\":\"gbtree\"},\"name\":\"dart\",\"weight_drop\":[5E-1,3.3333334E-1]},\"learner_model_param\"");
	Forest	   *f = MustParse(b, strlen(b), "dart");

	if (f != NULL)
	{
		CHECK(f->nodes[2].leaf_value == (double) (0.3f * 0.5f));
		CHECK(f->nodes[7].leaf_value == (double) (2.0f * 0.33333334f));
	}
	ForestFree(f);
	ExpectVariantFails(b, MODEL_FORMAT_AUTO, "[5E-1,3.3333334E-1]", "[5E-1]",
					   SILVAN_ERROR_INVALID, "weight_drop length");
	free(a);
	free(b);
}

/* Every proper prefix of a JSON model is a syntax error */
static void
TestXgboostTruncated(void)
{
	size_t		len = strlen(xgb_model);
	int			bad = 0;

	for (size_t n = 0; n < len; n++)
	{
		SilvanStatus st;
		DecodeBudget budget;
		Forest	   *f;

		DecodeBudgetInit(&budget, "XGBoost JSON", n);
		f = ParseXgboostJson(xgb_model, n, &budget, &st);

		if (f != NULL || st.kind != SILVAN_ERROR_SYNTAX)
		{
			if (bad++ == 0)
				fprintf(stderr, "prefix %zu: kind %d: %s\n", n, st.kind, st.detail);
		}
		ForestFree(f);
	}
	CHECK_MSG(bad == 0, "%d truncated prefixes were not syntax errors", bad);
}

/* Inconsistent, unsupported and malformed XGBoost models */
static void
TestXgboostHostile(void)
{
	const ModelFormat X = MODEL_FORMAT_XGBOOST_JSON;
	const char *m = xgb_model;
	char		deep[120];
	char	   *s;

	ExpectVariantFails(m, X, "}", "}}", SILVAN_ERROR_SYNTAX, "trailing garbage");
	s = malloc(strlen(m) + 3);
	strcpy(s, m);
	strcat(s, " x");
	ExpectFail(s, strlen(s), X, SILVAN_ERROR_SYNTAX, "text after the document");
	free(s);
	ExpectVariantFails(m, X, "\"left_children\":[1,3,-1,-1,-1]",
					   "\"left_children\":[1,3,-1,-1]", SILVAN_ERROR_INVALID, "short left_children");
	ExpectVariantFails(m, X, "\"split_conditions\":[5E-1,1.5E0,3E-1,-2E-1,1E-1]",
					   "\"split_conditions\":[5E-1,1.5E0,3E-1,-2E-1,1E-1,7]",
					   SILVAN_ERROR_INVALID, "long split_conditions");
	ExpectVariantFails(m, X, "\"num_nodes\":\"5\"", "\"num_nodes\":\"6\"",
					   SILVAN_ERROR_INVALID, "num_nodes disagrees");
	ExpectVariantFails(m, X, "\"num_nodes\":\"5\"", "\"num_nodes\":\"99999999999\"",
					   SILVAN_ERROR_INVALID, "huge num_nodes");
	ExpectVariantFails(m, X, "\"num_nodes\":\"5\"", "\"num_nodes\":\"-5\"",
					   SILVAN_ERROR_INVALID, "negative num_nodes");
	ExpectVariantFails(m, X, "\"num_trees\":\"2\"", "\"num_trees\":\"3\"",
					   SILVAN_ERROR_INVALID, "num_trees disagrees");
	ExpectVariantFails(m, X, "\"tree_info\":[0,0]", "\"tree_info\":[0]",
					   SILVAN_ERROR_INVALID, "short tree_info");
	ExpectVariantFails(m, X, "\"right_children\":[2,4,-1,-1,-1]",
					   "\"right_children\":[2,5,-1,-1,-1]", SILVAN_ERROR_INVALID, "child out of range");
	ExpectVariantFails(m, X, "\"right_children\":[2,4,-1,-1,-1]",
					   "\"right_children\":[2,4,-1,-1,3]", SILVAN_ERROR_INVALID, "leaf with a right child");
	ExpectVariantFails(m, X, "\"right_children\":[2,4,-1,-1,-1]",
					   "\"right_children\":[2,0,-1,-1,-1]", SILVAN_ERROR_INVALID, "cycle to the root");
	ExpectVariantFails(m, X, "\"left_children\":[1,3,-1,-1,-1]",
					   "\"left_children\":[1,1,-1,-1,-1]", SILVAN_ERROR_INVALID, "self loop");
	ExpectVariantFails(m, X, "\"split_indices\":[0,2,0,0,0]", "\"split_indices\":[0,3,0,0,0]",
					   SILVAN_ERROR_INVALID, "feature out of range");
	ExpectVariantFails(m, X, "\"split_indices\":[0,2,0,0,0]", "\"split_indices\":[0,\"a\",0,0,0]",
					   SILVAN_ERROR_INVALID, "feature not a number");
	ExpectVariantFails(m, X, "[5E-1,1.5E0,", "[NaN,1.5E0,", SILVAN_ERROR_INVALID, "NaN threshold");
	ExpectVariantFails(m, X, "\"default_left\":[1,0,0,0,0]", "\"default_left\":[2,0,0,0,0]",
					   SILVAN_ERROR_INVALID, "default_left not 0/1");
	ExpectVariantFails(m, X, "binary:logistic", "reg:nonsense", SILVAN_ERROR_UNSUPPORTED,
					   "unknown objective");
	ExpectVariantFails(m, X, "\"name\":\"gbtree\"}", "\"name\":\"gblinear\"}",
					   SILVAN_ERROR_UNSUPPORTED, "gblinear");
	ExpectVariantFails(m, X, "\"size_leaf_vector\":\"0\"}}]", "\"size_leaf_vector\":\"3\"}}]",
					   SILVAN_ERROR_UNSUPPORTED, "vector leaves");
	ExpectVariantFails(m, X, "\"num_target\":\"1\"", "\"num_target\":\"2\"",
					   SILVAN_ERROR_UNSUPPORTED, "multi-target");
	ExpectVariantFails(m, X, "\"num_class\":\"0\"", "\"num_class\":\"4\"",
					   SILVAN_ERROR_UNSUPPORTED, "num_class without a multi-class objective");
	ExpectVariantFails(m, X, "\"base_score\":\"5E-1\"", "\"base_score\":\"1E0\"",
					   SILVAN_ERROR_INVALID, "logistic base_score of 1");
	ExpectVariantFails(m, X, "\"base_score\":\"5E-1\"", "\"base_score\":\"x\"",
					   SILVAN_ERROR_INVALID, "base_score not a number");
	ExpectVariantFails(m, X, "\"base_score\":\"5E-1\"", "\"base_score\":\"[5E-1,5E-1]\"",
					   SILVAN_ERROR_INVALID, "two base scores for one group");
	ExpectVariantFails(m, X, "\"num_feature\":\"3\",\"num_target\"", "\"num_feature\":\"0\",\"num_target\"",
					   SILVAN_ERROR_INVALID, "no features");
	ExpectVariantFails(m, X, "\"categories\":[1,3,40]", "\"categories\":[1,-3,40]",
					   SILVAN_ERROR_INVALID, "negative category");
	ExpectVariantFails(m, X, "\"categories\":[1,3,40]", "\"categories\":[1,3,16777216]",
					   SILVAN_ERROR_INVALID, "category too big");
	ExpectVariantFails(m, X, "\"categories\":[1,3,40]", "\"categories\":[1,3.5,40]",
					   SILVAN_ERROR_INVALID, "fractional category");
	ExpectVariantFails(m, X, "\"categories_sizes\":[3]", "\"categories_sizes\":[4]",
					   SILVAN_ERROR_INVALID, "category list past the end");
	ExpectVariantFails(m, X, "\"categories_nodes\":[0]", "\"categories_nodes\":[1]",
					   SILVAN_ERROR_INVALID, "category list on the wrong node");
	ExpectVariantFails(m, X, "\"categories_segments\":[0]", "\"categories_segments\":[0,0]",
					   SILVAN_ERROR_INVALID, "category arrays disagree");
	ExpectVariantFails(m, X, "\"split_type\":[1,0,0]", "\"split_type\":[0,0,0]",
					   SILVAN_ERROR_INVALID, "category list on a numeric node");
	ExpectVariantFails(m, X, "\"split_type\":[0,0,0,0,0]", "\"split_type\":[0,1,0,0,0]",
					   SILVAN_ERROR_INVALID, "categorical node without a list");
	ExpectVariantFails(m, X, "\"trees\":[", "\"trees\":[7,", SILVAN_ERROR_INVALID,
					   "a tree that is not an object");
	ExpectVariantFails(m, X, "{\"learner\":", "{\"learnerx\":", SILVAN_ERROR_INVALID,
					   "no learner");
	ExpectVariantFails(m, X, "\"tree_param\":{", "\"tree_parm\":{", SILVAN_ERROR_INVALID,
					   "no tree_param");
	ExpectFailStr("{\"name\":\"tree\",\"num_tree_per_iteration\":1,\"tree_info\":[]}", X,
			   SILVAN_ERROR_UNSUPPORTED, "LightGBM JSON dump read as XGBoost");
	ExpectFailStr("{\"learner\":{}}", X, SILVAN_ERROR_INVALID, "empty learner");
	memset(deep, '[', 60);
	memset(deep + 60, ']', 60);
	ExpectFail(deep, sizeof(deep), X, SILVAN_ERROR_SYNTAX, "nesting too deep");
	ExpectFail("{\"learner\":{}}\0{", 16, X, SILVAN_ERROR_SYNTAX, "embedded NUL");
	ExpectFailStr("", X, SILVAN_ERROR_SYNTAX, "empty text as XGBoost");
	ExpectFail("{L\x00\x00\x00\x00\x00\x00\x00\x07learner{", 18, MODEL_FORMAT_AUTO,
			   SILVAN_ERROR_UNSUPPORTED, "UBJSON");
}

/* ---------- LightGBM ---------- */

/* The inline LightGBM model maps field by field */
static void
TestLightgbmFields(void)
{
	Forest	   *f = MustParse(lgb_model, strlen(lgb_model), "lightgbm inline");
	const ForestNode *n;

	if (f == NULL)
		return;
	CHECK(f->source == FOREST_SOURCE_LIGHTGBM && f->precision == FOREST_FLOAT64);
	CHECK(strcmp(f->objective, "binary") == 0 && f->sigmoid_alpha == 0.5);
	CHECK(f->task == FOREST_TASK_BINARY && f->transform == FOREST_TRANSFORM_SIGMOID);
	CHECK(f->num_features == 3 && f->num_groups == 1 && f->num_classes == 2);
	CHECK(f->num_trees == 3 && f->num_nodes == 5 + 1 + 3 && f->base_margin[0] == 0.0);
	CHECK(f->trees[1].first_node == 5 && f->trees[1].num_nodes == 1);
	CHECK(f->trees[2].first_node == 6 && f->trees[2].num_nodes == 3);
	/* tree 0: internal 0, 1; leaves 0, 1, 2 become nodes 2, 3, 4 */
	n = &f->nodes[0];
	CHECK(n->kind == FOREST_NODE_CATEGORICAL && n->feature == 1 && n->left == 2 &&
		  n->right == 1 && n->category_in_left == 1 && n->default_left == 0 &&
		  n->missing == FOREST_MISSING_NAN && n->category_words == 2);
	CHECK(f->category_words[n->category_offset] == 10 &&
		  f->category_words[n->category_offset + 1] == 1);
	n = &f->nodes[1];
	CHECK(n->kind == FOREST_NODE_NUMERIC && n->compare == FOREST_CMP_LE &&
		  n->missing == FOREST_MISSING_NAN && n->default_left == 1 &&
		  n->threshold == 0.5 && n->left == 3 && n->right == 4);
	CHECK(f->nodes[2].leaf_value == 0.25 && f->nodes[4].leaf_value == 1.5);
	CHECK(f->nodes[5].kind == FOREST_NODE_LEAF && f->nodes[5].leaf_value == 0.125);
	n = &f->nodes[6];
	CHECK(n->missing == FOREST_MISSING_ZERO && n->default_left == 0 &&
		  n->threshold == 1.0000000000000002);
	/* members {1, 3, 32} go left; NaN and non-members right */
	CHECK(Margin0(f, 0, 3, 5) == 0.25 + 0.125 + 2);
	CHECK(Margin0(f, 0, 32, 0.5) == 0.25 + 0.125 - 1);
	CHECK(Margin0(f, 0.5, 2, 0) == -0.5 + 0.125 + 2);
	CHECK(Margin0(f, 0.6, 2, 1.0000000000000002) == 1.5 + 0.125 - 1);
	CHECK(Margin0(f, NAN, NAN, NAN) == -0.5 + 0.125 + 2);
	CHECK(Margin0(f, 0.6, 1.5, -1) == 0.25 + 0.125 - 1);
	ForestFree(f);
}

/* LightGBM objectives and their parameters */
static void
TestLightgbmObjectives(void)
{
	static const struct
	{
		const char *line;
		ForestTask	task;
		ForestTransform transform;
		double		alpha;
	}			cases[] = {
		{"objective=regression", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 1},
		{"objective=regression sqrt", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_SIGNED_SQUARE, 1},
		{"objective=huber", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 1},
		{"objective=tweedie tweedie_variance_power:1.5", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 1},
		{"objective=poisson", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 1},
		{"objective=lambdarank", FOREST_TASK_RANKING, FOREST_TRANSFORM_IDENTITY, 1},
		{"objective=cross_entropy", FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 1},
		{"objective=xentlambda", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_LOG1P_EXP, 1},
		{"objective=binary sigmoid:2", FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 2},
		{"objective=none", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 1},
		{"label_index=0", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char	   *a = Replace(lgb_model, "objective=binary sigmoid:0.5", cases[i].line);
		Forest	   *f = MustParse(a, strlen(a), cases[i].line);

		if (f != NULL)
			CHECK_MSG(f->task == cases[i].task && f->transform == cases[i].transform &&
					  f->sigmoid_alpha == cases[i].alpha && f->num_groups == 1,
					  "%s: task %d transform %d alpha %g", cases[i].line, f->task,
					  f->transform, f->sigmoid_alpha);
		ForestFree(f);
		free(a);
	}
}

/* multiclassova with groups by tree index; average_output */
static void
TestLightgbmGroups(void)
{
	char	   *a = Replace(lgb_model, "objective=binary sigmoid:0.5",
							"objective=multiclassova num_class:3 sigmoid:1.5");
	char	   *b = Replace(a, "num_class=1\nnum_tree_per_iteration=1",
							"num_class=3\nnum_tree_per_iteration=3");
	char	   *c = Replace(lgb_model, "feature_names=", "average_output\nfeature_names=");
	Forest	   *f = MustParse(b, strlen(b), "multiclassova");

	if (f != NULL)
	{
		CHECK(f->task == FOREST_TASK_MULTICLASS && f->transform == FOREST_TRANSFORM_SIGMOID_OVA);
		CHECK(f->num_groups == 3 && f->num_classes == 3 && f->sigmoid_alpha == 1.5);
		CHECK(f->trees[0].group == 0 && f->trees[1].group == 1 && f->trees[2].group == 2);
	}
	ForestFree(f);
	ExpectVariantFails(b, MODEL_FORMAT_AUTO, "num_tree_per_iteration=3",
					   "num_tree_per_iteration=2", SILVAN_ERROR_INVALID, "groups and classes disagree");
	f = MustParse(c, strlen(c), "average_output");
	if (f != NULL)
		CHECK(f->average_output && f->average_divisor == 3);
	ForestFree(f);
	free(a);
	free(b);
	free(c);
}

/* CRLF line ends, no tree_sizes and no "end of trees" (old files) */
static void
TestLightgbmVariants(void)
{
	size_t		len = strlen(lgb_model);
	char	   *crlf = malloc(2 * len + 1);
	char	   *old;
	char	   *p = crlf;
	Forest	   *f;

	for (size_t i = 0; i < len; i++)
	{
		if (lgb_model[i] == '\n')
			*p++ = '\r';
		*p++ = lgb_model[i];
	}
	*p = '\0';
	f = MustParse(crlf, strlen(crlf), "CRLF");
	if (f != NULL)
		CHECK(f->num_trees == 3 && f->sigmoid_alpha == 0.5 && f->nodes[6].threshold == 1.0000000000000002);
	ForestFree(f);
	free(crlf);
	p = Replace(lgb_model, "tree_sizes=300 200 250\n", "");
	old = Replace(p, "end of trees\n", "");
	f = MustParse(old, strlen(old), "no tree_sizes, no end of trees");
	if (f != NULL)
		CHECK(f->num_trees == 3);
	ForestFree(f);
	free(p);
	free(old);
}

/* Every prefix that stops before "end of trees" fails; none crashes */
static void
TestLightgbmTruncated(void)
{
	size_t		end = strstr(lgb_model, "end of trees") - lgb_model;
	int			bad = 0;

	for (size_t n = 0; n < end; n++)
	{
		SilvanStatus st;
		Forest	   *f = ParseModel(lgb_model, n, MODEL_FORMAT_LIGHTGBM_TEXT, NULL, &st);

		if (f != NULL || st.kind == SILVAN_OK || st.message[0] == '\0')
		{
			if (bad++ == 0)
				fprintf(stderr, "prefix %zu parsed\n", n);
		}
		ForestFree(f);
	}
	CHECK_MSG(bad == 0, "%d truncated prefixes parsed", bad);
}

/* Inconsistent, unsupported and malformed LightGBM models */
static void
TestLightgbmHostile(void)
{
	const ModelFormat L = MODEL_FORMAT_LIGHTGBM_TEXT;
	const char *m = lgb_model;

	ExpectVariantFails(m, L, "is_linear=0\nshrinkage=1\n\n\nTree=1", "is_linear=1\nshrinkage=1\n\n\nTree=1",
					   SILVAN_ERROR_UNSUPPORTED, "linear tree");
	ExpectVariantFails(m, L, "decision_type=1 10", "decision_type=1 14",
					   SILVAN_ERROR_INVALID, "missing type 3");
	ExpectVariantFails(m, L, "decision_type=1 10", "decision_type=1 16",
					   SILVAN_ERROR_INVALID, "decision_type out of range");
	ExpectVariantFails(m, L, "decision_type=1 10", "decision_type=1 x",
					   SILVAN_ERROR_SYNTAX, "decision_type not a number");
	ExpectVariantFails(m, L, "left_child=-1 -2", "left_child=-1 -2 -3",
					   SILVAN_ERROR_INVALID, "long left_child");
	ExpectVariantFails(m, L, "leaf_value=0.25 -0.5 1.5", "leaf_value=0.25 -0.5",
					   SILVAN_ERROR_INVALID, "short leaf_value");
	ExpectVariantFails(m, L, "left_child=-1 -2", "left_child=-1 -4",
					   SILVAN_ERROR_INVALID, "leaf index out of range");
	ExpectVariantFails(m, L, "left_child=-1 -2", "left_child=-1 1",
					   SILVAN_ERROR_INVALID, "internal child out of range");
	ExpectVariantFails(m, L, "right_child=1 -3", "right_child=1 0",
					   SILVAN_ERROR_INVALID, "cycle to the root");
	ExpectVariantFails(m, L, "split_feature=1 0", "split_feature=1 3",
					   SILVAN_ERROR_INVALID, "feature out of range");
	ExpectVariantFails(m, L, "threshold=0 0.5", "threshold=0 nan",
					   SILVAN_ERROR_INVALID, "NaN threshold");
	ExpectVariantFails(m, L, "threshold=0 0.5", "threshold=1 0.5",
					   SILVAN_ERROR_INVALID, "category list index out of range");
	ExpectVariantFails(m, L, "threshold=0 0.5", "threshold=0.5 0.5",
					   SILVAN_ERROR_INVALID, "fractional category list index");
	ExpectVariantFails(m, L, "cat_boundaries=0 2", "cat_boundaries=0 3",
					   SILVAN_ERROR_INVALID, "cat_boundaries past the end");
	ExpectVariantFails(m, L, "cat_boundaries=0 2", "cat_boundaries=1 2",
					   SILVAN_ERROR_INVALID, "cat_boundaries not from 0");
	ExpectVariantFails(m, L, "cat_threshold=10 1", "cat_threshold=10 -1",
					   SILVAN_ERROR_INVALID, "negative cat_threshold");
	ExpectVariantFails(m, L, "cat_threshold=10 1\n", "",
					   SILVAN_ERROR_INVALID, "missing cat_threshold");
	ExpectVariantFails(m, L, "num_leaves=3", "num_leaves=0",
					   SILVAN_ERROR_INVALID, "no leaves");
	ExpectVariantFails(m, L, "num_leaves=3", "num_leaves=99999999999",
					   SILVAN_ERROR_INVALID, "huge num_leaves");
	ExpectVariantFails(m, L, "num_leaves=3", "num_leaves=three",
					   SILVAN_ERROR_SYNTAX, "num_leaves not a number");
	ExpectVariantFails(m, L, "num_leaves=3\n", "", SILVAN_ERROR_INVALID, "no num_leaves");
	ExpectVariantFails(m, L, "objective=binary sigmoid:0.5", "objective=lambdamart",
					   SILVAN_ERROR_UNSUPPORTED, "unknown objective");
	ExpectVariantFails(m, L, "objective=binary sigmoid:0.5", "objective=binary sigmoid:-1",
					   SILVAN_ERROR_INVALID, "negative sigmoid");
	ExpectVariantFails(m, L, "objective=binary sigmoid:0.5", "objective=multiclass num_class:3",
					   SILVAN_ERROR_INVALID, "multiclass with one class");
	ExpectVariantFails(m, L, "num_class=1", "num_class=2",
					   SILVAN_ERROR_INVALID, "binary with two classes");
	ExpectVariantFails(m, L, "max_feature_idx=2\n", "", SILVAN_ERROR_INVALID,
					   "no max_feature_idx");
	ExpectVariantFails(m, L, "max_feature_idx=2", "max_feature_idx=-1",
					   SILVAN_ERROR_INVALID, "negative max_feature_idx");
	ExpectVariantFails(m, L, "Tree=1", "Tree=7", SILVAN_ERROR_INVALID, "trees out of order");
	ExpectVariantFails(m, L, "tree_sizes=300 200 250", "tree_sizes=300 200 250 9",
					   SILVAN_ERROR_SYNTAX, "fewer trees than tree_sizes");
	ExpectVariantFails(m, L, "tree_sizes=300 200 250", "tree_sizes=300 200",
					   SILVAN_ERROR_INVALID, "more trees than tree_sizes");
	ExpectVariantFails(m, L, "shrinkage=0.1\n", "shrinkage=0.1\ngarbage line\n",
					   SILVAN_ERROR_SYNTAX, "garbage line in a tree");
	ExpectFailStr("tree\nversion=v3\n", L, SILVAN_ERROR_SYNTAX, "header only");
	ExpectFailStr("hello world\n", L, SILVAN_ERROR_SYNTAX, "garbage as LightGBM");
	ExpectFailStr("{\"tree_info\":[]}", L, SILVAN_ERROR_UNSUPPORTED, "JSON as LightGBM");
	ExpectFailStr("", L, SILVAN_ERROR_SYNTAX, "empty text as LightGBM");
}

/* ParseModel with AUTO on text in no format we read */
static void
TestUnrecognized(void)
{
	const char onnx[] = "\x08\x07\x12\x07skl2onnx:\x9a\x01\n\x08ai.onnx.ml TreeEnsembleRegressor";
	const char *dump = "0:[f0<0.5] yes=1,no=2,missing=1\n\t1:leaf=0.1\n\t2:leaf=0.2\n";

	ExpectFailStr("hello world", MODEL_FORMAT_AUTO, SILVAN_ERROR_SYNTAX, "garbage");
	ExpectFailStr("", MODEL_FORMAT_AUTO, SILVAN_ERROR_SYNTAX, "empty text");
	ExpectFailStr("{\"a\": 1}", MODEL_FORMAT_AUTO, SILVAN_ERROR_SYNTAX, "other JSON");
	ExpectFail(onnx, sizeof(onnx) - 1, MODEL_FORMAT_AUTO, SILVAN_ERROR_SYNTAX, "truncated ONNX");
	ExpectFail(dump, strlen(dump), MODEL_FORMAT_AUTO, SILVAN_ERROR_UNSUPPORTED, "XGBoost text dump");
	ExpectFailStr("[{\"nodeid\": 0, \"leaf\": 1}]", MODEL_FORMAT_AUTO,
			   SILVAN_ERROR_UNSUPPORTED, "XGBoost JSON dump");
	ExpectFailStr("{\"name\":\"tree\",\"version\":\"v3\",\"num_tree_per_iteration\":1,\"tree_info\":[]}",
				  MODEL_FORMAT_AUTO, SILVAN_ERROR_UNSUPPORTED, "LightGBM JSON dump");
	ExpectFail("binf\0\0\0?", 8, MODEL_FORMAT_AUTO, SILVAN_ERROR_UNSUPPORTED, "XGBoost binary");
}

/*
 * Random byte mutations of both inline models: whatever comes back must be
 * either an error with a message or a forest that passed validation and
 * can be walked.
 */
static void
TestMutations(void)
{
	const char *models[2] = {xgb_model, lgb_model};
	const char	alphabet[] = "0123456789-.,:[]{}\"=\n eE";
	uint32_t	seed = 12345;
	int			bad = 0;

	for (int m = 0; m < 2; m++)
	{
		size_t		len = strlen(models[m]);
		char	   *buf = malloc(len + 1);

		for (int iter = 0; iter < 3000; iter++)
		{
			SilvanStatus st;
			Forest	   *f;

			memcpy(buf, models[m], len + 1);
			for (int k = 0; k < 1 + iter % 3; k++)
			{
				seed = seed * 1103515245u + 12345u;
				buf[(seed >> 8) % len] = alphabet[(seed >> 20) % (sizeof(alphabet) - 1)];
			}
			f = ParseModel(buf, len, MODEL_FORMAT_AUTO, NULL, &st);
			if (f != NULL)
				Exercise(f);
			else if (st.kind == SILVAN_OK || st.message[0] == '\0' || st.detail[0] == '\0')
				bad++;
			ForestFree(f);
		}
		free(buf);
	}
	CHECK_MSG(bad == 0, "%d mutated models failed without a message", bad);
}

/* ---------- the shared model collection ---------- */

/* Expected facts about one shared model */
typedef struct SharedModel
{
	const char *path;
	int			trees;
	int			features;
	int			groups;
	ForestTask	task;
	ForestTransform transform;
	int64_t		nodes;			/* 0: not checked */
} SharedModel;

static const SharedModel shared_models[] = {
	{"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json", 100, 28, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 50388},
	{"asprasad_treebeard/xgb_models--airline_xgb_model_save.json", 100, 13, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 50942},
	{"asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json", 100, 90, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 32558},
	{"asprasad_treebeard/xgb_models--bosch_xgb_model_save.json", 100, 968, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 13916},
	{"asprasad_treebeard/xgb_models--test--Random_1Tree--TestModel_Size1_0.json", 1, 1, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 97},
	{"asprasad_treebeard/xgb_models--test--Random_1Tree--TestModel_Size1_5.json", 1, 2, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 87},
	{"asprasad_treebeard/xgb_models--test--Random_2Tree--TestModel_Size2_19.json", 2, 1, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0},
	{"asprasad_treebeard/xgb_models--test--Random_4Tree--TestModel_Size4_2.json", 4, 2, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 410},
	{"asprasad_treebeard/xgb_models--test--leftheavy_xgb_model.json", 1, 5, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 5},
	{"asprasad_treebeard/xgb_models--test--rightheavy_xgb_model.json", 1, 5, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 5},
	{"asprasad_treebeard/xgb_models--test--rightandleftheavy_xgb_model.json", 2, 5, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 10},
	{"Elvenson_xgboost-go/test--data--iris_xgboost.json", 30, 4, 3, FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SOFTMAX, 0},
	{"dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json", 5, 2, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0},
	{"dmitryikh_leaves/testdata--lg_breast_cancer.txt", 39, 30, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 0},
	{"dmitryikh_leaves/testdata--lgmulticlass.model", 50, 28, 5, FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SOFTMAX, 0},
	{"dmitryikh_leaves/testdata--lg_kddcup99.model", 130, 41, 13, FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SOFTMAX, 0},
	{"dmitryikh_leaves/testdata--lg_dart_breast_cancer.model", 10, 30, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 0},
	{"dmitryikh_leaves/testdata--lg_rf_iris.model", 30, 4, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 0},
	{"dmitryikh_leaves/testdata--genlin_fmtp_poisson_Frequency.model", 100, 9, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 0},
	{"dmitryikh_leaves/testdata--genlin_fmtp_gamma_AvgClaimAmount.model", 100, 9, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 0},
	{"dmitryikh_leaves/testdata--genlin_fmtp_tweedie_PurePremium.model", 100, 9, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, 0},
	{"dmitryikh_leaves/testdata--model_simple.txt", 2, 2, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 0},
	{"dmlc_treelite/tests--examples--toy_categorical--toy_categorical_model.txt", 30, 2, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0},
	{"dmlc_treelite/tests--examples--sparse_categorical--sparse_categorical_model.txt", 1, 5057, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 509},
	{"dmlc_treelite/tests--examples--lightgbm_constant_tree--model_with_constant_tree.txt", 2, 126, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 0},
	{"siboehm_lleaves/tests--models--NYC_taxi--model.txt", 100, 5, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0},
	{"siboehm_lleaves/tests--models--airline--model.txt", 100, 6, 1, FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, 0},
	{"siboehm_lleaves/tests--models--boston_housing--model.txt", 100, 13, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0},
	{"siboehm_lleaves/tests--models--leaf_scan--model.txt", 1, 1, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 31},
	{"siboehm_lleaves/tests--models--mixed_categorical--model.txt", 1, 5, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 37},
	{"siboehm_lleaves/tests--models--mtpl2--model.txt", 1000, 15, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 0},
	{"siboehm_lleaves/tests--models--multiclass--model.txt", 120, 13, 3, FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SOFTMAX, 0},
	{"siboehm_lleaves/tests--models--pure_categorical--model.txt", 1, 3, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 5},
	{"siboehm_lleaves/tests--models--single_tree--model.txt", 1, 10, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 21},
	{"siboehm_lleaves/tests--models--tiniest_single_tree--model.txt", 1, 3, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 7},
	{"asprasad_treebeard/onnx_models--abalone_onnx_model_save.onnx", 1000, 8, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 87430},
	{"asprasad_treebeard/onnx_models--higgs_xgb_model_save.onnx", 100, 28, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 50388},
	{"asprasad_treebeard/onnx_models--year_prediction_msd_xgb_model_save.onnx", 100, 90, 1, FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, 32558},
	/* TreeEnsemble (opset 5): a tree per target; members become == chains */
	{"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_single_tree--model.onnx", 2, 2, 2, FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_IDENTITY, 14},
	{"onnx_onnx/onnx--backend--test--data--node--test_ai_onnx_ml_tree_ensemble_set_membership--model.onnx", 4, 1, 4, FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_IDENTITY, 60},
};

/* Files in the collection that we must refuse, each with its kind */
static const struct
{
	const char *path;
	SilvanErrorKind kind;
}			shared_refused[] = {
	{"dmitryikh_leaves/testdata--lg_1tree.json", SILVAN_ERROR_UNSUPPORTED},
	{"dmitryikh_leaves/testdata--lg_dart_breast_cancer.json", SILVAN_ERROR_UNSUPPORTED},
	{"dmitryikh_leaves/testdata--lg_rf_iris_true_predictions.txt", SILVAN_ERROR_SYNTAX},
};

/* Read a shared file; NULL (and a note) if it is missing */
static char *
ReadShared(const char *dir, const char *name, size_t *len)
{
	char		path[2048];
	char	   *text;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	text = ReadFile(path, len);
	CHECK_MSG(text != NULL, "cannot read %s", path);
	return text;
}

/* Parse every model of the collection and check its counts */
static void
TestSharedCounts(const char *dir)
{
	for (size_t i = 0; i < sizeof(shared_models) / sizeof(shared_models[0]); i++)
	{
		const SharedModel *e = &shared_models[i];
		size_t		len;
		char	   *text = ReadShared(dir, e->path, &len);
		Forest	   *f;

		if (text == NULL)
			continue;
		f = MustParse(text, len, e->path);
		if (f != NULL)
			CHECK_MSG(f->num_trees == e->trees && f->num_features == e->features &&
					  f->num_groups == e->groups && f->task == e->task &&
					  f->transform == e->transform && (e->nodes == 0 || f->num_nodes == e->nodes),
					  "%s: trees %d features %d groups %d task %d transform %d nodes %lld",
					  e->path, f->num_trees, f->num_features, f->num_groups, f->task,
					  f->transform, (long long) f->num_nodes);
		ForestFree(f);
		free(text);
	}
	for (size_t i = 0; i < sizeof(shared_refused) / sizeof(shared_refused[0]); i++)
	{
		size_t		len;
		char	   *text = ReadShared(dir, shared_refused[i].path, &len);

		if (text != NULL)
			ExpectFail(text, len, MODEL_FORMAT_AUTO, shared_refused[i].kind,
					   shared_refused[i].path);
		free(text);
	}
}

/* Read numbers separated by commas, tabs or spaces: rows of equal width */
static double *
ReadTable(const char *dir, const char *name, int *rows, int *cols)
{
	size_t		len;
	char	   *text = ReadShared(dir, name, &len);
	char	   *p = text;
	double	   *v = NULL;
	int			n = 0,
				cap = 0,
				width = 0;

	*rows = *cols = 0;
	if (text == NULL)
		return NULL;
	while (*p)
	{
		char	   *end;
		double		x;

		if (*p == '\n')
		{
			if (width > 0)
				(*rows)++, *cols = width;
			width = 0;
			p++;
			continue;
		}
		if (*p == ',' || *p == ' ' || *p == '\t' || *p == '\r')
		{
			p++;
			continue;
		}
		x = strtod(p, &end);
		if (end == p)
			break;
		if (n == cap)
			v = realloc(v, sizeof(double) * (cap = cap ? 2 * cap : 4096));
		v[n++] = x;
		width++;
		p = end;
	}
	if (width > 0)
		(*rows)++, *cols = width;
	free(text);
	return v;
}

/* Read a libsvm file as dense rows (label dropped, absent features NaN) */
static double *
ReadLibsvm(const char *dir, const char *name, int features, int *rows)
{
	size_t		len;
	char	   *text = ReadShared(dir, name, &len);
	char	   *line;
	char	   *save = NULL;
	double	   *v = NULL;

	*rows = 0;
	if (text == NULL)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char	   *p = strchr(line, ' ');

		v = realloc(v, sizeof(double) * features * (*rows + 1));
		for (int j = 0; j < features; j++)
			v[*rows * features + j] = NAN;
		while (p != NULL && *p)
		{
			char	   *end;
			long		idx = strtol(p, &end, 10);

			if (end == p || *end != ':')
				break;
			if (idx >= 0 && idx < features)
				v[*rows * features + idx] = strtod(end + 1, &p);
			else
				strtod(end + 1, &p);
		}
		(*rows)++;
	}
	free(text);
	return v;
}

/* Compare one value with the library's, in the forest's precision */
static bool
Same(const Forest *f, double got, double want)
{
	if (f->precision == FOREST_FLOAT32)
		return (float) got == (float) want;
	return fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
}

/*
 * Predict rows (skip leading columns of the table) and compare with the
 * expected values: kind 'p' predict(), 'r' raw margins, 'a' probabilities.
 */
static void
ComparePredictions(const char *dir, const char *model, const double *x, int rows,
				   int width, int skip, const double *want, int want_cols,
				   char kind)
{
	size_t		len;
	char	   *text = ReadShared(dir, model, &len);
	Forest	   *f = text ? MustParse(text, len, model) : NULL;
	double		m[64],
				out[64],
				row[6000];
	int			mismatches = 0;

	for (int r = 0; f != NULL && r < rows; r++)
	{
		for (int j = 0; j < f->num_features; j++)
			row[j] = j + skip < width ? x[r * width + skip + j] : NAN;
		RowMargins(f, row, m);
		if (kind == 'p')
			out[0] = ForestPredictRow(f, m);
		else if (kind == 'a')
			ForestTransformRow(f, m, out);
		else
			memcpy(out, m, sizeof(double) * f->num_groups);
		for (int g = 0; g < want_cols; g++)
			if (!Same(f, out[g], want[r * want_cols + g]) && mismatches++ == 0)
				fprintf(stderr, "%s row %d col %d: got %.17g want %.17g\n", model, r, g,
						out[g], want[r * want_cols + g]);
	}
	CHECK_MSG(f != NULL && mismatches == 0, "%s: %d mismatches", model, mismatches);
	ForestFree(f);
	free(text);
}

/* A few models against the predictions their libraries made */
static void
TestSharedPredictions(const char *dir)
{
	int			rows,
				cols,
				erows,
				ecols;
	double	   *x,
			   *want;

	/* treebeard: last column is XGBoost's predict() */
	x = ReadTable(dir, "asprasad_treebeard/xgb_models--higgs_xgb_model_save.json.test.sampled.csv", &rows, &cols);
	want = malloc(sizeof(double) * (rows > 0 ? rows : 1));
	for (int r = 0; r < rows; r++)
		want[r] = x[r * cols + cols - 1];
	ComparePredictions(dir, "asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
					   x, rows, cols - 1 > 0 ? cols : 0, 0, want, 1, 'p');
	free(x);
	free(want);

	/* XGBoost native categorical splits (absent features are missing) */
	x = ReadLibsvm(dir, "dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical.test", 2, &rows);
	want = ReadTable(dir, "dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical.test.pred", &erows, &ecols);
	CHECK(rows == erows && ecols == 1);
	ComparePredictions(dir, "dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json",
					   x, rows < erows ? rows : erows, 2, 0, want, 1, 'p');
	free(x);
	free(want);

	/* LightGBM multi-class probabilities; column 0 of the inputs is the label */
	x = ReadTable(dir, "dmitryikh_leaves/testdata--multiclass_test.tsv", &rows, &cols);
	want = ReadTable(dir, "dmitryikh_leaves/testdata--lgmulticlass_true_predictions.txt", &erows, &ecols);
	CHECK(rows == erows && ecols == 5);
	ComparePredictions(dir, "dmitryikh_leaves/testdata--lgmulticlass.model",
					   x, rows < erows ? rows : erows, cols, 1, want, 5, 'a');
	free(x);
	free(want);

	/* LightGBM categorical splits, raw scores */
	x = ReadTable(dir, "dmitryikh_leaves/testdata--kddcup99_test.tsv", &rows, &cols);
	want = ReadTable(dir, "dmitryikh_leaves/testdata--lg_kddcup99_true_predictions.txt", &erows, &ecols);
	CHECK(rows == erows && ecols == 13);
	ComparePredictions(dir, "dmitryikh_leaves/testdata--lg_kddcup99.model",
					   x, rows < erows ? rows : erows, cols, 0, want, 13, 'r');
	free(x);
	free(want);

	/* LightGBM poisson (exp) with categorical splits */
	x = ReadTable(dir, "dmitryikh_leaves/testdata--genlin_fmtp_poisson_Frequency_features.tsv", &rows, &cols);
	want = ReadTable(dir, "dmitryikh_leaves/testdata--genlin_fmtp_poisson_Frequency_true_predictions.txt", &erows, &ecols);
	CHECK(rows == erows && ecols == 1);
	ComparePredictions(dir, "dmitryikh_leaves/testdata--genlin_fmtp_poisson_Frequency.model",
					   x, rows < erows ? rows : erows, cols, 0, want, 1, 'p');
	free(x);
	free(want);
}

/* Feature names and types: kept as the libraries wrote them, checked */
static void
TestFeatureNames(void)
{
	Forest	   *f;
	char	   *text;
	char		long_name[FOREST_MAX_FEATURE_NAME + 8];

	/* XGBoost: none when the lists are empty; names and types when given */
	f = MustParse(xgb_model, strlen(xgb_model), "xgboost without names");
	CHECK(f && f->feature_names == NULL && f->feature_types == NULL);
	CHECK(f && ForestFeatureNamesPositional(f));
	ForestFree(f);
	text = Replace(xgb_model, "\"feature_names\":[],\"feature_types\":[]",
				   "\"feature_names\":[\"age\",\"sex\",\"b\\u00e9\"],\"feature_types\":[\"int\",\"c\",\"q\"]");
	f = MustParse(text, strlen(text), "xgboost with names");
	CHECK(f && f->feature_names && strcmp(f->feature_names[0], "age") == 0 &&
		  strcmp(f->feature_names[2], "b\xc3\xa9") == 0);
	CHECK(f && f->feature_types && strcmp(f->feature_types[1], "c") == 0);
	CHECK(f && !ForestFeatureNamesPositional(f));
	ForestFree(f);
	free(text);
	/* types without names are kept too */
	text = Replace(xgb_model, "\"feature_types\":[]", "\"feature_types\":[\"q\",\"c\",\"q\"]");
	f = MustParse(text, strlen(text), "xgboost with types only");
	CHECK(f && f->feature_names == NULL && f->feature_types != NULL);
	ForestFree(f);
	free(text);
	/* the libraries' default names restate positions */
	text = Replace(xgb_model, "\"feature_names\":[]", "\"feature_names\":[\"f0\",\"Column_1\",\"2\"]");
	f = MustParse(text, strlen(text), "xgboost with default names");
	CHECK(f && f->feature_names != NULL && ForestFeatureNamesPositional(f));
	ForestFree(f);
	free(text);
	text = Replace(xgb_model, "\"feature_names\":[]", "\"feature_names\":[\"f1\",\"f0\",\"f2\"]");
	f = MustParse(text, strlen(text), "xgboost with swapped default names");
	CHECK(f && !ForestFeatureNamesPositional(f));
	ForestFree(f);
	free(text);

	/* hostile lists */
	ExpectVariantFails(xgb_model, MODEL_FORMAT_AUTO, "\"feature_names\":[]",
					   "\"feature_names\":[\"a\",\"b\"]", SILVAN_ERROR_INVALID, "two names for three features");
	ExpectVariantFails(xgb_model, MODEL_FORMAT_AUTO, "\"feature_names\":[]",
					   "\"feature_names\":[\"a\",\"b\",\"a\"]", SILVAN_ERROR_INVALID, "a name twice");
	ExpectVariantFails(xgb_model, MODEL_FORMAT_AUTO, "\"feature_names\":[]",
					   "\"feature_names\":[\"a\",1,\"c\"]", SILVAN_ERROR_INVALID, "a number as a name");
	ExpectVariantFails(xgb_model, MODEL_FORMAT_AUTO, "\"feature_names\":[]",
					   "\"feature_names\":\"abc\"", SILVAN_ERROR_INVALID, "names not a list");
	ExpectVariantFails(xgb_model, MODEL_FORMAT_AUTO, "\"feature_names\":[]",
					   "\"feature_names\":[\"a\",\"b\\u0000c\",\"d\"]", SILVAN_ERROR_INVALID, "a zero byte in a name");
	ExpectVariantFails(xgb_model, MODEL_FORMAT_AUTO, "\"feature_types\":[]",
					   "\"feature_types\":[\"q\",\"q\",\"q\",\"q\"]", SILVAN_ERROR_INVALID, "four types for three features");
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	{
		char		list[sizeof(long_name) + 64];

		snprintf(list, sizeof(list), "\"feature_names\":[\"a\",\"%s\",\"c\"]", long_name);
		ExpectVariantFails(xgb_model, MODEL_FORMAT_AUTO, "\"feature_names\":[]", list,
						   SILVAN_ERROR_INVALID, "a name over the limit");
	}

	/* LightGBM: the feature_names= line */
	f = MustParse(lgb_model, strlen(lgb_model), "lightgbm with names");
	CHECK(f && f->feature_names && strcmp(f->feature_names[0], "a") == 0 &&
		  strcmp(f->feature_names[2], "c") == 0 && f->feature_types == NULL);
	ForestFree(f);
	text = Replace(lgb_model, "feature_names=a b c\n", "feature_names=Column_0 Column_1 Column_2\n");
	f = MustParse(text, strlen(text), "lightgbm with default names");
	CHECK(f && ForestFeatureNamesPositional(f));
	ForestFree(f);
	free(text);
	text = Replace(lgb_model, "feature_names=a b c\n", "");
	f = MustParse(text, strlen(text), "lightgbm without names");
	CHECK(f && f->feature_names == NULL);
	ForestFree(f);
	free(text);
	ExpectVariantFails(lgb_model, MODEL_FORMAT_AUTO, "feature_names=a b c\n",
					   "feature_names=a b\n", SILVAN_ERROR_INVALID, "lightgbm: two names for three features");
	ExpectVariantFails(lgb_model, MODEL_FORMAT_AUTO, "feature_names=a b c\n",
					   "feature_names=a b c d\n", SILVAN_ERROR_INVALID, "lightgbm: four names");
	ExpectVariantFails(lgb_model, MODEL_FORMAT_AUTO, "feature_names=a b c\n",
					   "feature_names=a c c\n", SILVAN_ERROR_INVALID, "lightgbm: a name twice");
	ExpectVariantFails(lgb_model, MODEL_FORMAT_AUTO, "feature_names=a b c\n",
					   "feature_names=\n", SILVAN_ERROR_INVALID, "lightgbm: no names");

	/* the dump shows them */
	f = MustParse(lgb_model, strlen(lgb_model), "lightgbm dump");
	if (f)
	{
		char	   *dump = ForestDump(f, false);

		CHECK(dump && strstr(dump, "  features=a,b,c\n") != NULL);
		free(dump);
	}
	ForestFree(f);
}

int
main(void)
{
	const char *shared = SharedModels();

	TestFormatNames();
	TestDetect();
	TestXgboostFields();
	TestXgboostObjectives();
	TestXgboostMulticlass();
	TestXgboostLayouts();
	TestXgboostDart();
	TestXgboostTruncated();
	TestXgboostHostile();
	TestLightgbmFields();
	TestLightgbmObjectives();
	TestLightgbmGroups();
	TestLightgbmVariants();
	TestLightgbmTruncated();
	TestLightgbmHostile();
	TestUnrecognized();
	TestMutations();
	TestFeatureNames();
	if (shared == NULL)
		printf("shared models not found (set SILVAN_SHARED): skipping their checks\n");
	else
	{
		TestSharedCounts(shared);
		TestSharedPredictions(shared);
	}
	UNIT_DONE();
}
