/*
 * test_forest.c
 *		Unit tests of the Forest IR: validation, serialization, interpreter.
 *
 * Forests are built by hand here so that each decision rule is checked
 * against values worked out on paper.
 */
#include <math.h>

#include "silvan/forest.h"
#include "unit.h"

/* Set a numeric split */
static void
SetSplit(ForestNode *n, int feature, double threshold, int left, int right)
{
	n->kind = FOREST_NODE_NUMERIC;
	n->feature = feature;
	n->threshold = threshold;
	n->left = left;
	n->right = right;
}

/* Set a leaf */
static void
SetLeaf(ForestNode *n, double value)
{
	n->kind = FOREST_NODE_LEAF;
	n->feature = n->left = n->right = -1;
	n->leaf_value = value;
}

/* A two-tree float64 forest: tree0 splits f0 < 0.5, tree1 is a stump on f1 */
static Forest *
MakeForest(ForestPrecision precision)
{
	SilvanStatus st;
	Forest	   *f = ForestCreate(&st);

	f->precision = precision;
	f->num_features = 2;
	ForestAllocBaseMargin(f, 1, &st);
	f->base_margin[0] = 0.5;
	ForestAllocTrees(f, 2, &st);
	ForestAllocNodes(f, 6, &st);
	f->trees[0] = (ForestTree) {0, 3, 0, 0};
	f->trees[1] = (ForestTree) {3, 3, 0, 0};
	SetSplit(&f->nodes[0], 0, 0.5, 1, 2);
	SetLeaf(&f->nodes[1], 1.0);
	SetLeaf(&f->nodes[2], 2.0);
	SetSplit(&f->nodes[3], 1, 0.0, 1, 2);
	f->nodes[3].compare = FOREST_CMP_LE;
	f->nodes[3].default_left = 1;
	SetLeaf(&f->nodes[4], 10.0);
	SetLeaf(&f->nodes[5], 20.0);
	return f;
}

/* Predict one double row through the interpreter */
static double
Margin(Forest *f, double x0, double x1)
{
	double		row[2] = {x0, x1};
	double		acc[1];
	double		m;

	ForestMarginsInit(f, acc, 1);
	ForestInterpretAccumulate(f, row, 1, acc);
	ForestMarginsFinish(f, acc, 1, &m);
	return m;
}

/* Decision rules: LT, LE, NaN default, ZERO and NONE missing modes */
static void
TestDecisions(void)
{
	SilvanStatus st;
	Forest	   *f = MakeForest(FOREST_FLOAT64);

	CHECK(ForestValidate(f, &st));
	CHECK(f->max_depth == 1);
	CHECK(Margin(f, 0.4, 1.0) == 0.5 + 1.0 + 20.0);
	CHECK(Margin(f, 0.5, 0.0) == 0.5 + 2.0 + 10.0);	/* LT fails at equality, LE holds */
	CHECK(Margin(f, NAN, NAN) == 0.5 + 2.0 + 10.0);	/* default right, default left */
	f->nodes[3].missing = FOREST_MISSING_NONE;
	f->nodes[3].threshold = -1.0;
	CHECK(Margin(f, 0.0, NAN) == 0.5 + 1.0 + 20.0);	/* NaN read as 0 > -1 */
	f->nodes[3].missing = FOREST_MISSING_ZERO;
	CHECK(Margin(f, 0.0, 1e-36) == 0.5 + 1.0 + 10.0);	/* zero takes default left */
	CHECK(Margin(f, 0.0, -0.5) == 0.5 + 1.0 + 20.0);	/* -0.5 <= -1 fails: right */
	ForestFree(f);
}

/* Categorical rules of both libraries */
static void
TestCategorical(void)
{
	SilvanStatus st;
	Forest	   *f = MakeForest(FOREST_FLOAT64);

	ForestAllocCategoryWords(f, 1, &st);
	f->category_words[0] = (1u << 0) | (1u << 3);	/* {0, 3} */
	f->nodes[0].kind = FOREST_NODE_CATEGORICAL;
	f->nodes[0].category_offset = 0;
	f->nodes[0].category_words = 1;
	f->nodes[0].category_in_left = 1;	/* LightGBM: members left */
	f->source = FOREST_SOURCE_LIGHTGBM;
	f->category_rule = FOREST_CATEGORY_TRUNCATE;
	CHECK(ForestValidate(f, &st));
	CHECK(Margin(f, 3.0, 1.0) == 0.5 + 1.0 + 20.0);
	CHECK(Margin(f, 3.7, 1.0) == 0.5 + 1.0 + 20.0);	/* truncates to 3 */
	CHECK(Margin(f, -0.5, 1.0) == 0.5 + 1.0 + 20.0);	/* LightGBM: (int)-0.5 = 0 */
	CHECK(Margin(f, 2.0, 1.0) == 0.5 + 2.0 + 20.0);
	CHECK(Margin(f, 1e30, 1.0) == 0.5 + 2.0 + 20.0);
	CHECK(Margin(f, NAN, 1.0) == 0.5 + 2.0 + 20.0);	/* NaN right */
	f->source = FOREST_SOURCE_XGBOOST;
	f->category_rule = FOREST_CATEGORY_NONNEGATIVE;
	f->nodes[0].category_in_left = 0;	/* XGBoost: members right */
	CHECK(Margin(f, 3.0, 1.0) == 0.5 + 2.0 + 20.0);
	CHECK(Margin(f, -0.5, 1.0) == 0.5 + 1.0 + 20.0);	/* XGBoost: negative invalid, left */
	CHECK(Margin(f, 2.0, 1.0) == 0.5 + 1.0 + 20.0);
	ForestFree(f);
}

/* Hostile structures are rejected with a message */
static void
TestValidation(void)
{
	SilvanStatus st;
	Forest	   *f = MakeForest(FOREST_FLOAT64);

	f->nodes[0].left = 0;		/* cycle to the root */
	CHECK(!ForestValidate(f, &st) && st.kind == SILVAN_ERROR_INVALID);
	f->nodes[0].left = 2;		/* shared child */
	CHECK(!ForestValidate(f, &st) && strstr(st.detail, "reached twice"));
	f->nodes[0].left = 7;		/* out of the tree */
	CHECK(!ForestValidate(f, &st) && strstr(st.detail, "out of range"));
	f->nodes[0].left = 1;
	f->nodes[0].feature = 2;	/* no such feature */
	CHECK(!ForestValidate(f, &st) && strstr(st.detail, "split_feature"));
	f->nodes[0].feature = 0;
	f->trees[1].group = 1;
	CHECK(!ForestValidate(f, &st) && strstr(st.detail, "tree_info"));
	f->trees[1].group = 0;
	f->trees[1].num_nodes = 4;
	CHECK(!ForestValidate(f, &st));
	f->trees[1].num_nodes = 3;
	CHECK(ForestValidate(f, &st));
	ForestFree(f);
}

/* Serialization round-trips and rejects every truncation */
static void
TestSerialize(void)
{
	SilvanStatus st;
	Forest	   *f = MakeForest(FOREST_FLOAT32);
	Forest	   *g;
	uint8_t    *data;
	size_t		size;
	int			bad = 0;
	float		row[2] = {0.25f, 3.0f};
	float		acc_f[1], acc_g[1];

	CHECK(ForestValidate(f, &st));
	CHECK(ForestSerialize(f, &data, &size, &st));
	g = ForestDeserialize(data, size, &st);
	CHECK(g != NULL);
	ForestMarginsInit(f, acc_f, 1);
	ForestInterpretAccumulate(f, row, 1, acc_f);
	ForestMarginsInit(g, acc_g, 1);
	ForestInterpretAccumulate(g, row, 1, acc_g);
	CHECK(acc_f[0] == acc_g[0] && acc_f[0] == 21.5f);
	for (size_t cut = 0; cut < size; cut++)
	{
		Forest	   *h = ForestDeserialize(data, cut, &st);

		if (h != NULL)
		{
			bad++;
			ForestFree(h);
		}
	}
	CHECK(bad == 0);
	/* the header alone: no trees, the same facts, refused when cut inside it */
	{
		int64_t		stored_nodes = -1;
		Forest	   *header = ForestDeserializeHeader(data, size, &stored_nodes, &st);
		size_t		header_end = 4 + 4 + 5 + 64 + 8 + 5 * 4 + 2 * 8 + 8 * (size_t) f->num_groups + 4;

		CHECK(header != NULL && ForestSameHeader(header, g) && header->num_trees == 0 &&
			  header->nodes == NULL && stored_nodes == g->num_nodes);
		ForestFree(header);
		for (size_t cut = 0; cut < header_end && cut < size; cut++)
			if ((header = ForestDeserializeHeader(data, cut, &stored_nodes, &st)) != NULL)
			{
				bad++;
				ForestFree(header);
			}
		CHECK_MSG(bad == 0, "%d cuts inside the header gave a header", bad);
	}
	data[size - 2] ^= 0x7f;		/* corrupt a leaf: still valid */
	data[4] = 0xff;			/* corrupt the format version */
	CHECK(ForestDeserialize(data, size, &st) == NULL);
	free(data);
	ForestFree(f);
	ForestFree(g);
}

/* Transforms: sigmoid, softmax, probabilities */
static void
TestTransforms(void)
{
	SilvanStatus st;
	Forest	   *f = MakeForest(FOREST_FLOAT64);
	double		m[3] = {0.0, 1.0, 2.0};
	double		out[3];

	f->transform = FOREST_TRANSFORM_SIGMOID;
	f->task = FOREST_TASK_BINARY;
	f->num_classes = 2;
	CHECK(ForestPredictRow(f, m) == 0.5);
	CHECK(ForestProbaRow(f, m, out) == 2 && out[0] == 0.5 && out[1] == 0.5);
	/* a binary model has one margin but two probabilities: scratch needs both */
	CHECK(f->num_groups == 1 && ForestOutputWidth(f) == 2);
	f->task = FOREST_TASK_MULTICLASS;
	f->transform = FOREST_TRANSFORM_SOFTMAX;
	ForestAllocBaseMargin(f, 3, &st);
	f->num_classes = 3;
	CHECK(ForestPredictRow(f, m) == 2.0);
	CHECK(ForestProbaRow(f, m, out) == 3 && ForestOutputWidth(f) == 3);
	CHECK(fabs(out[0] + out[1] + out[2] - 1.0) < 1e-15);
	CHECK(fabs(out[2] / out[1] - exp(1.0)) < 1e-12);
	ForestFree(f);
}

/*
 * Softmax, LightGBM's in double and XGBoost's in float, bit for bit as
 * their formulas with a call of exp for every class: ties for the largest
 * margin, -0, infinities (inf - inf is NaN, not 0) and NaN margins
 */
static void
TestSoftmaxExact(void)
{
	static const double rows[][3] = {
		{0.0, 1.0, 2.0}, {2.0, 2.0, -1.0}, {-0.0, 0.0, -0.0}, {1e300, -1e300, 3.5},
		{INFINITY, 1.0, 2.0}, {INFINITY, INFINITY, 0.0}, {-INFINITY, -INFINITY, -INFINITY},
		{NAN, 1.0, 2.0}, {NAN, NAN, NAN}, {0.1, 0.2, 0.30000000000000004}, {-745.5, 0.0, 709.0},
	};
	SilvanStatus st;
	int			mismatches = 0;

	for (int precision = 0; precision < 2; precision++)
	{
		Forest	   *f = MakeForest(precision ? FOREST_FLOAT32 : FOREST_FLOAT64);

		f->task = FOREST_TASK_MULTICLASS;
		f->transform = FOREST_TRANSFORM_SOFTMAX;
		ForestAllocBaseMargin(f, 3, &st);
		f->num_classes = 3;
		for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
		{
			double		out[3];
			double		want[3];
			double		dsum = 0.0;
			double		dmax = fmax(fmax(rows[r][1], rows[r][0]), rows[r][2]);
			float		fmaxv = fmaxf(fmaxf((float) rows[r][1], (float) rows[r][0]), (float) rows[r][2]);

			for (int i = 0; i < 3; i++)
			{
				want[i] = precision ? expf((float) rows[r][i] - fmaxv) : exp(rows[r][i] - dmax);
				dsum += want[i];
			}
			for (int i = 0; i < 3; i++)
				want[i] = precision ? (double) ((float) want[i] / (float) dsum) : want[i] / dsum;
			ForestTransformRow(f, rows[r], out);
			for (int i = 0; i < 3; i++)
				if (memcmp(&out[i], &want[i], sizeof(double)) != 0 && !(isnan(out[i]) && isnan(want[i])) &&
					mismatches++ == 0)
					fprintf(stderr, "softmax (%s) row %zu class %d: got %.17g want %.17g\n",
							precision ? "float" : "double", r, i, out[i], want[i]);
		}
		ForestFree(f);
	}
	CHECK_MSG(mismatches == 0, "%d softmax values differ from the formula's", mismatches);
}

/* A float's bits as a float */
static float
FloatOfBits(uint32_t bits)
{
	float		f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/*
 * XGBoost's transforms in float, bit for bit: each want is what XGBoost
 * 1.7.4's predict() gave for the margin (a zero-tree model's DMatrix
 * base_margin), as float bits.  reg:gamma exponentiates with expf,
 * survival:aft with exp in double; the sigmoid caps -x at 88.7; hinge
 * sends NaN and -0 to 0.  NaN wants match any NaN.
 */
static void
TestXgboostTransformsExact(void)
{
	static const struct
	{
		ForestTransform transform;
		uint32_t	margin;
		uint32_t	want;
	}			cases[] = {
		/* reg:gamma and survival:aft: 1.8718766 = logf(6.5004835) */
		{FOREST_TRANSFORM_EXP, 0x3fef99a7, 0x40d003f7},
		{FOREST_TRANSFORM_EXP_DOUBLE, 0x3fef99a7, 0x40d003f6},
		{FOREST_TRANSFORM_EXP, 0x40f4df2d, 0x450395cf}, /* 7.65224314 */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0x40f4df2d, 0x450395ce},
		{FOREST_TRANSFORM_EXP, 0xc153dbe7, 0x35ee5c72}, /* -13.2411871 */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0xc153dbe7, 0x35ee5c71},
		{FOREST_TRANSFORM_EXP, 0x411fe63f, 0x46ab00d1}, /* 9.99371243 */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0x411fe63f, 0x46ab00d0},
		{FOREST_TRANSFORM_EXP_DOUBLE, 0x42b17217, 0x7f7fff84},	/* 88.7228317 */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0x42b17218, 0x7f800000},	/* 88.7228394: inf */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0xc2cff0a4, 0x00000001},	/* -103.97 */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0xc2d00000, 0x00000000},	/* -104 */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0xff800000, 0x00000000},	/* -inf */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0x7fc00000, 0x7fc00000},	/* NaN */
		{FOREST_TRANSFORM_EXP_DOUBLE, 0x80000000, 0x3f800000},	/* -0 */
		/* binary:logistic */
		{FOREST_TRANSFORM_SIGMOID, 0xff800000, 0x0020bd47},	/* -inf */
		{FOREST_TRANSFORM_SIGMOID, 0xc47a0000, 0x0020bd47},	/* -1000 */
		{FOREST_TRANSFORM_SIGMOID, 0xc2b16667, 0x0020bd47},	/* just below -88.7 */
		{FOREST_TRANSFORM_SIGMOID, 0xc2b16666, 0x0020bd47},	/* -88.7 */
		{FOREST_TRANSFORM_SIGMOID, 0xc2b16b85, 0x0020bd47},	/* -88.71 */
		{FOREST_TRANSFORM_SIGMOID, 0xc2b17217, 0x0020bd47},	/* -88.7228317 */
		{FOREST_TRANSFORM_SIGMOID, 0xc2ae0000, 0x00b33687},	/* -87 */
		{FOREST_TRANSFORM_SIGMOID, 0xc1a40000, 0x30abd1d8},	/* -20.5 */
		{FOREST_TRANSFORM_SIGMOID, 0x80000000, 0x3f000000},	/* -0 */
		{FOREST_TRANSFORM_SIGMOID, 0x3fc00000, 0x3f514c8f},	/* 1.5 */
		{FOREST_TRANSFORM_SIGMOID, 0x4185999a, 0x3f800000},	/* 16.7 */
		{FOREST_TRANSFORM_SIGMOID, 0x7f800000, 0x3f800000},	/* inf */
		{FOREST_TRANSFORM_SIGMOID, 0x7fc00000, 0x7fc00000},	/* NaN */
		/* binary:hinge */
		{FOREST_TRANSFORM_HINGE, 0x80000001, 0x00000000},	/* -1.4e-45 */
		{FOREST_TRANSFORM_HINGE, 0x80000000, 0x00000000},	/* -0 */
		{FOREST_TRANSFORM_HINGE, 0x00000001, 0x3f800000},	/* 1.4e-45 */
		{FOREST_TRANSFORM_HINGE, 0x7fc00000, 0x00000000},	/* NaN */
	};
	Forest	   *f = MakeForest(FOREST_FLOAT32);
	int			mismatches = 0;

	f->task = FOREST_TASK_REGRESSION;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		double		margin = FloatOfBits(cases[i].margin);
		float		want = FloatOfBits(cases[i].want);
		float		got;

		f->transform = cases[i].transform;
		got = (float) ForestPredictRow(f, &margin);
		if (memcmp(&got, &want, sizeof(float)) != 0 && !(isnan(got) && isnan(want)) &&
			mismatches++ < 3)
			fprintf(stderr, "transform %d of %.9g: got %.9g (0x%08x) want %.9g\n",
					(int) cases[i].transform, margin, got,
					(unsigned) cases[i].want, want);
	}
	CHECK_MSG(mismatches == 0, "%d transformed values differ from XGBoost's", mismatches);
	ForestFree(f);
}

/* EXP_DOUBLE survives the binary form; a transform past the last is refused */
static void
TestTransformStored(void)
{
	SilvanStatus st;
	Forest	   *f = MakeForest(FOREST_FLOAT32);
	Forest	   *g;
	uint8_t    *data;
	size_t		size;

	f->transform = FOREST_TRANSFORM_EXP_DOUBLE;
	CHECK(ForestValidate(f, &st));
	CHECK(ForestSerialize(f, &data, &size, &st));
	g = ForestDeserialize(data, size, &st);
	CHECK(g != NULL && g->transform == FOREST_TRANSFORM_EXP_DOUBLE);
	/* the transform byte follows the magic, the version, source and task */
	CHECK(data[10] == FOREST_TRANSFORM_EXP_DOUBLE);
	/* an XGBoost survival:aft form stored with expf, before EXP_DOUBLE: read as XGBoost computes it */
	data[10] = FOREST_TRANSFORM_EXP;
	ForestFree(g);
	g = NULL;
	if (f->source == FOREST_SOURCE_XGBOOST)
	{
		Forest	   *aft;

		snprintf(f->objective, sizeof(f->objective), "survival:aft");
		free(data);
		f->transform = FOREST_TRANSFORM_EXP;
		CHECK(ForestSerialize(f, &data, &size, &st));
		aft = ForestDeserialize(data, size, &st);
		CHECK(aft != NULL && aft->transform == FOREST_TRANSFORM_EXP_DOUBLE);
		ForestFree(aft);
		/* another objective's EXP stays expf */
		snprintf(f->objective, sizeof(f->objective), "reg:gamma");
		free(data);
		CHECK(ForestSerialize(f, &data, &size, &st));
		aft = ForestDeserialize(data, size, &st);
		CHECK(aft != NULL && aft->transform == FOREST_TRANSFORM_EXP);
		ForestFree(aft);
	}
	data[10] = FOREST_TRANSFORM_LAST + 1;
	CHECK(ForestDeserialize(data, size, &st) == NULL);
	f->transform = FOREST_TRANSFORM_LAST + 1;
	CHECK(!ForestValidate(f, &st));
	free(data);
	ForestFree(f);
	ForestFree(g);
}

/*
 * ForestSameShape: thresholds and leaf values may differ; a node's
 * feature, a tree's structure or the number of trees may not
 */
static void
TestSameShape(void)
{
	SilvanStatus st;
	Forest	   *a = MakeForest(FOREST_FLOAT64);
	Forest	   *b = MakeForest(FOREST_FLOAT64);

	CHECK(ForestValidate(a, &st) && ForestValidate(b, &st));
	CHECK(ForestSameShape(a, b));
	b->nodes[0].threshold = 7.5;
	b->nodes[4].leaf_value = -3.0;
	CHECK(ForestSameShape(a, b));
	b->nodes[3].feature = 0;
	CHECK(!ForestSameShape(a, b));
	b->nodes[3].feature = 1;
	b->nodes[3].default_left = 0;
	CHECK(!ForestSameShape(a, b));
	b->nodes[3].default_left = 1;
	b->trees[1].group = 1;
	CHECK(!ForestSameShape(a, b));
	b->trees[1].group = 0;
	CHECK(ForestSameShape(a, b));
	b->num_trees = 1;
	CHECK(!ForestSameShape(a, b));
	b->num_trees = 2;
	b->precision = FOREST_FLOAT32;
	CHECK(!ForestSameShape(a, b));
	ForestFree(a);
	ForestFree(b);
}

/* ForestClassOfRow: predict()'s index (multi-class), above 0.5 (binary), -1 otherwise */
static void
TestClassOfRow(void)
{
	SilvanStatus st;
	Forest	   *f = MakeForest(FOREST_FLOAT64);
	double		margins[3] = {0.0, 2.0, 1.0};

	CHECK(ForestValidate(f, &st));
	CHECK(ForestClassOfRow(f, margins) == -1);	/* regression */
	f->task = FOREST_TASK_BINARY;
	f->transform = FOREST_TRANSFORM_SIGMOID;
	f->sigmoid_alpha = 1.0;
	f->num_classes = 2;
	CHECK(ForestClassOfRow(f, margins) == 0);	/* sigmoid(0) = 0.5: not above */
	margins[0] = 0.01;
	CHECK(ForestClassOfRow(f, margins) == 1);
	margins[0] = -0.01;
	CHECK(ForestClassOfRow(f, margins) == 0);
	f->task = FOREST_TASK_MULTICLASS;
	f->num_groups = 3;
	f->num_classes = 3;
	CHECK(ForestClassOfRow(f, margins) == 1);	/* the largest margin */
	margins[2] = 2.0;
	CHECK(ForestClassOfRow(f, margins) == 1);	/* a tie: the first */
	f->num_groups = 1;
	ForestFree(f);
}

int
main(void)
{
	TestSameShape();
	TestClassOfRow();
	TestDecisions();
	TestCategorical();
	TestValidation();
	TestSerialize();
	TestTransforms();
	TestSoftmaxExact();
	TestXgboostTransformsExact();
	TestTransformStored();
	UNIT_DONE();
}
