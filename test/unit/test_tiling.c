/*
 * test_tiling.c
 *		Unit tests of tree tiling: shapes, the LUT, tiling and the tiled walk.
 *
 * The shape tables are checked against the Catalan numbers and, for every
 * shape and outcome mask, against a plain walk of the shape decoded here
 * from its code.  Small forests built by hand pin down padding, depth
 * padding, greedy tiling of a skewed tree and the dump.  Then every model
 * of the shared set that parses is tiled with sizes 1, 2, 4 and 8,
 * uniformly (with and without depth padding) and by probability (profiled
 * over the model's own input rows where the set has them, else over
 * synthetic rows that mostly repeat one row, which makes trees skewed), and
 * the tiled walk must reach the same leaf as ForestWalkTree on a few
 * hundred rows with NaNs, zeros, thresholds and their neighbours.  As no
 * shared model uses LightGBM's NaN or ZERO missing types, each model is
 * then checked again with every missing rule and default direction mixed
 * over its splits.
 *
 * Usage: test_tiling [substring]   (only shared models whose path has it)
 */
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>

#include "silvan/parse.h"
#include "silvan/tiling.h"
#include "unit.h"

#define TEST_ROWS		300
#define PROFILE_ROWS	1000

static const int32_t catalan[TILE_MAX_SIZE + 1] = {1, 1, 2, 5, 14, 42, 132, 429, 1430};

/* ---- shapes and the LUT ---- */

/* A shape decoded from its code by the test itself */
typedef struct TestShape
{
	int32_t		in[TILE_MAX_SIZE][2];	/* child slot, or -1 */
	int32_t		exit_of[TILE_MAX_SIZE][2];	/* left-to-right exit number */
} TestShape;

/* Number exits in order of horizontal position (in-order over edges) */
static void
TestNumberExits(TestShape *ts, int32_t k, int32_t *next)
{
	for (int side = 0; side < 2; side++)
	{
		if (ts->in[k][side] >= 0)
			TestNumberExits(ts, ts->in[k][side], next);
		else
			ts->exit_of[k][side] = (*next)++;
	}
}

/* Decode a level-order code: slots announced in order */
static void
TestDecode(uint16_t code, int32_t n, TestShape *ts)
{
	int32_t		next = 1;
	int32_t		exits = 0;

	for (int32_t k = 0; k < n; k++)
		for (int side = 0; side < 2; side++)
			ts->in[k][side] = (code >> (2 * k + side)) & 1 ? next++ : -1;
	TestNumberExits(ts, 0, &exits);
}

/* Walk a decoded shape under an outcome mask (bit k set: slot k goes left) */
static int32_t
TestWalkShape(const TestShape *ts, uint32_t mask)
{
	int32_t		k = 0;

	for (;;)
	{
		int			side = (mask >> k) & 1 ? 0 : 1;

		if (ts->in[k][side] < 0)
			return ts->exit_of[k][side];
		k = ts->in[k][side];
	}
}

/* Shape counts, codes, the LUT against a direct walk, formatting */
static void
TestShapes(void)
{
	SilvanStatus st;

	CHECK(TileShapeCount(0) == 0 && TileShapeCount(9) == 0);
	CHECK(TileShapesGet(0, &st) == NULL && st.kind == SILVAN_ERROR_INVALID);
	CHECK(TileShapesGet(9, &st) == NULL);
	for (int32_t n = 1; n <= TILE_MAX_SIZE; n++)
	{
		const TileShapeTable *table = TileShapesGet(n, &st);
		int64_t		lut_errors = 0;
		int32_t		shape_errors = 0;

		CHECK(table != NULL);
		if (table == NULL)
			continue;
		CHECK(TileShapesGet(n, &st) == table);	/* cached */
		CHECK_MSG(TileShapeCount(n) == catalan[n] && table->num_shapes == catalan[n],
				  "n %d: %d shapes, expected %d", n, table->num_shapes, catalan[n]);
		for (int32_t s = 0; s < table->num_shapes; s++)
		{
			const TileShape *shape = &table->shapes[s];
			TestShape	ts;
			int32_t		bits = __builtin_popcount(shape->code);

			if ((s > 0 && shape->code <= table->shapes[s - 1].code) || bits != n - 1 ||
				TileShapeFind(table, shape->code) != s)
				shape_errors++;
			TestDecode(shape->code, n, &ts);
			for (int32_t k = 0; k < n; k++)
				for (int side = 0; side < 2; side++)
				{
					int32_t		c = shape->child[k][side];

					if (ts.in[k][side] >= 0 ? c != ts.in[k][side] :
						c != -1 - ts.exit_of[k][side] ||
						shape->exit_slot[-1 - c] != k || shape->exit_side[-1 - c] != side)
						shape_errors++;
				}
			for (uint32_t mask = 0; mask < (1u << n); mask++)
				if (TileShapeLookup(table, s, mask) != TestWalkShape(&ts, mask))
					lut_errors++;
		}
		CHECK_MSG(shape_errors == 0, "n %d: %d shape errors", n, shape_errors);
		CHECK_MSG(lut_errors == 0, "n %d: %lld LUT entries differ from a walk", n,
				  (long long) lut_errors);
		CHECK(TileShapeFind(table, 0xffff) == -1);
		CHECK(TileShapeFind(table, (uint16_t) ((1u << (n - 1)) - 1)) >= 0);
		printf("tile size %d: %d shapes, LUT %d x %d\n", n, table->num_shapes,
			   table->num_shapes, 1 << n);
	}

	/* worked by hand: n = 2, root with a right child */
	{
		const TileShapeTable *t2 = TileShapesGet(2, &st);
		int32_t		s = TileShapeFind(t2, 0x2);
		char		text[64];

		CHECK(s >= 0);
		CHECK(TileShapeLookup(t2, s, 0x1) == 0);	/* root left */
		CHECK(TileShapeLookup(t2, s, 0x3) == 0);
		CHECK(TileShapeLookup(t2, s, 0x2) == 1);	/* right, then left */
		CHECK(TileShapeLookup(t2, s, 0x0) == 2);	/* right, right */
		TileShapeFormat(t2, s, text, sizeof(text));
		CHECK(strcmp(text, "o(-,o)") == 0);
	}
	/* n = 3: the complete shape, and the left chain */
	{
		const TileShapeTable *t3 = TileShapesGet(3, &st);
		char		text[64];
		int32_t		full = TileShapeFind(t3, 0x3);
		int32_t		chain = TileShapeFind(t3, 0x1 | 0x4);

		TileShapeFormat(t3, full, text, sizeof(text));
		CHECK(strcmp(text, "o(o,o)") == 0);
		TileShapeFormat(t3, chain, text, sizeof(text));
		CHECK(strcmp(text, "o(o(o,-),-)") == 0);
		/* left chain: 111 -> child 0; 011 (slot 2 right) -> 1; 001 -> 2; 0x0 -> 3 */
		CHECK(TileShapeLookup(t3, chain, 0x7) == 0);
		CHECK(TileShapeLookup(t3, chain, 0x3) == 1);
		CHECK(TileShapeLookup(t3, chain, 0x1) == 2);
		CHECK(TileShapeLookup(t3, chain, 0x0) == 3);
		CHECK(TileShapeLookup(t3, chain, 0x6) == 3);
		CHECK(t3->shapes[chain].levels == 3 && t3->shapes[full].levels == 2);
	}
}

/* ---- forests built by hand ---- */

/* Set a numeric split (XGBoost rule: x < threshold goes left) */
static void
SetSplit(ForestNode *node, int feature, double threshold, int left, int right)
{
	memset(node, 0, sizeof(*node));
	node->kind = FOREST_NODE_NUMERIC;
	node->feature = feature;
	node->threshold = threshold;
	node->left = left;
	node->right = right;
}

/* Set a leaf */
static void
SetLeaf(ForestNode *node, double value)
{
	memset(node, 0, sizeof(*node));
	node->kind = FOREST_NODE_LEAF;
	node->feature = node->left = node->right = -1;
	node->leaf_value = value;
}

/* A one-tree float64 forest of num_nodes nodes, to be filled in */
static Forest *
OneTreeForest(int32_t num_nodes, int32_t num_features)
{
	SilvanStatus st;
	Forest	   *f = ForestCreate(&st);

	f->precision = FOREST_FLOAT64;
	f->num_features = num_features;
	f->num_groups = 1;
	f->num_classes = 1;
	ForestAllocBaseMargin(f, 1, &st);
	ForestAllocTrees(f, 1, &st);
	ForestAllocNodes(f, num_nodes, &st);
	f->trees[0] = (ForestTree) {0, num_nodes, 0, 0};
	return f;
}

/* Walk both ways on a grid of rows over features 0..2; count differences */
static int
GridMismatches(const Forest *f, const TiledForest *tiled)
{
	static const double values[] = {-1.0, 0.0, 2.5, 3.0, 4.0, 5.0, 7.0, NAN};
	int			bad = 0;
	int			nv = sizeof(values) / sizeof(values[0]);

	for (int a = 0; a < nv; a++)
		for (int b = 0; b < nv; b++)
			for (int c = 0; c < nv; c++)
			{
				double		row[3] = {values[a], values[b], values[c]};

				for (int32_t t = 0; t < f->num_trees; t++)
					if (TiledWalkTree(tiled, t, row) != ForestWalkTree(f, t, row))
						bad++;
			}
	return bad;
}

/*
 * Padding: a tree n0(f0<5) -> n1(f1<3) -> leaves n3, n4; right leaf n2.
 * With 4 slots, dummies go on n0's right edge and then n1's left edge.
 */
static void
TestPadding(void)
{
	SilvanStatus st;
	Forest	   *f = OneTreeForest(5, 3);
	TilingOptions options;
	TiledForest *tiled;
	char	   *text;
	const TileRef expect_children[5] = {~3, ~3, ~4, ~2, ~2};
	const int32_t expect_nodes[4] = {0, 1, 0, 1};

	SetSplit(&f->nodes[0], 0, 5.0, 1, 2);
	SetSplit(&f->nodes[1], 1, 3.0, 3, 4);
	SetLeaf(&f->nodes[2], 2.0);
	SetLeaf(&f->nodes[3], 3.0);
	SetLeaf(&f->nodes[4], 4.0);
	CHECK(ForestValidate(f, &st));
	TilingOptionsInit(&options, 4, TREE_TILING_UNIFORM);
	tiled = TileForest(f, &options, &st);
	CHECK(tiled != NULL);
	if (tiled == NULL)
	{
		ForestFree(f);
		return;
	}
	CHECK(tiled->num_tiles == 1 && tiled->trees[0].depth == 1);
	CHECK(tiled->tile_padding[0] == 0xc);	/* slots 2 and 3 */
	CHECK(tiled->shapes->shapes[tiled->tile_shapes[0]].code == 0x7);
	CHECK(memcmp(tiled->tile_nodes, expect_nodes, sizeof(expect_nodes)) == 0);
	CHECK(memcmp(tiled->tile_children, expect_children, sizeof(expect_children)) == 0);
	CHECK(TiledForestCheck(tiled, &st));
	CHECK(GridMismatches(f, tiled) == 0);
	text = TiledForestDump(tiled, true);
	CHECK(text != NULL && strstr(text, "o(o(o,-),o) [n0 n1 =n0 =n1] -> "
								 "leaf n3 leaf n3 leaf n4 leaf n2 leaf n2") != NULL);
	if (text)
		fputs(text, stdout);
	free(text);

	/* a broken tile is caught by the check */
	tiled->tile_children[2] = ~3;
	CHECK(!TiledForestCheck(tiled, &st) && st.kind == SILVAN_ERROR_INTERNAL);
	TiledForestFree(tiled);

	/* bad options */
	TilingOptionsInit(&options, 9, TREE_TILING_UNIFORM);
	CHECK(TileForest(f, &options, &st) == NULL && st.kind == SILVAN_ERROR_INVALID);
	TilingOptionsInit(&options, 2, TREE_TILING_UNIFORM);
	options.pad_depth = TILING_MAX_PAD_DEPTH + 1;
	CHECK(TileForest(f, &options, &st) == NULL && st.kind == SILVAN_ERROR_INVALID);
	{
		int64_t		hits[4] = {0};
		ForestProfile profile = {1, 4, hits};

		TilingOptionsInit(&options, 2, TREE_TILING_PROBABILISTIC);
		options.profile = &profile;
		CHECK(TileForest(f, &options, &st) == NULL && strstr(st.detail, "4 nodes") != NULL);
	}
	ForestFree(f);
}

/*
 * Depth padding with tile size 1: n0 -> (n1 -> (n3 -> n5, n6), n4), n2.
 * The walk takes 3 tiles; n2 hangs below 2 dummy tiles, n4 below 1.
 */
static void
TestDepthPadding(void)
{
	SilvanStatus st;
	Forest	   *f = OneTreeForest(7, 3);
	TilingOptions options;
	TiledForest *tiled;

	SetSplit(&f->nodes[0], 0, 5.0, 1, 2);
	SetSplit(&f->nodes[1], 1, 3.0, 3, 4);
	SetLeaf(&f->nodes[2], 2.0);
	SetSplit(&f->nodes[3], 2, 4.0, 5, 6);
	SetLeaf(&f->nodes[4], 4.0);
	SetLeaf(&f->nodes[5], 5.0);
	SetLeaf(&f->nodes[6], 6.0);
	f->nodes[3].missing = FOREST_MISSING_NAN;
	f->nodes[3].default_left = 1;
	CHECK(ForestValidate(f, &st));
	for (int32_t n = 1; n <= 2; n++)
	{
		TilingOptionsInit(&options, n, TREE_TILING_UNIFORM);
		options.pad_depth = 8;
		tiled = TileForest(f, &options, &st);
		CHECK(tiled != NULL);
		if (tiled == NULL)
			continue;
		CHECK(tiled->trees[0].padded);
		CHECK(TiledForestCheck(tiled, &st));
		CHECK(GridMismatches(f, tiled) == 0);
		if (n == 1)
			CHECK(tiled->trees[0].depth == 3 && tiled->trees[0].num_dummy_tiles == 3 &&
				  tiled->num_tiles == 6);
		else
			/* {n0, n1}, then {n3, pad}; n2 and n4 each below one dummy */
			CHECK(tiled->trees[0].depth == 2 && tiled->trees[0].num_dummy_tiles == 2 &&
				  tiled->num_tiles == 4);
		TiledForestFree(tiled);
	}
	/* too deep to pad */
	TilingOptionsInit(&options, 1, TREE_TILING_UNIFORM);
	options.pad_depth = 2;
	tiled = TileForest(f, &options, &st);
	CHECK(tiled != NULL && !tiled->trees[0].padded && tiled->num_tiles == 3);
	CHECK(tiled != NULL && TiledForestCheck(tiled, &st));
	TiledForestFree(tiled);
	ForestFree(f);
}

/*
 * Greedy tiling of a skewed tree: complete depth 3, node i has children
 * 2i+1, 2i+2; 91 of 100 rows reach leaf n13 by n0 -> n2 -> n6.
 */
static void
TestProbabilistic(void)
{
	SilvanStatus st;
	Forest	   *f = OneTreeForest(15, 3);
	int64_t		hits[15] = {100, 5, 95, 3, 2, 3, 92, 2, 1, 1, 1, 2, 1, 91, 1};
	int64_t		flat[15] = {80, 40, 40, 20, 20, 20, 20, 10, 10, 10, 10, 10, 10, 10, 10};
	ForestProfile profile = {100, 15, hits};
	ForestProfile flat_profile = {80, 15, flat};
	TilingOptions options;
	TiledForest *tiled;
	const int32_t expect_root[3] = {0, 2, 6};
	const int32_t expect_uniform[3] = {0, 1, 2};
	int32_t		order[1];

	for (int32_t i = 0; i < 7; i++)
		SetSplit(&f->nodes[i], i % 3, (double) (i % 4) + 2.5, 2 * i + 1, 2 * i + 2);
	for (int32_t i = 7; i < 15; i++)
		SetLeaf(&f->nodes[i], i);
	CHECK(ForestValidate(f, &st));
	CHECK(TilingTreeIsSkewed(f, 0, &profile, 0.05, 0.9));
	CHECK(!TilingTreeIsSkewed(f, 0, &profile, 0.05, 0.95));
	CHECK(!TilingTreeIsSkewed(f, 0, &flat_profile, 0.05, 0.9));
	CHECK(TilingTreeIsSkewed(f, 0, &flat_profile, 0.9, 0.8));	/* 7 of 8 leaves: 70 > 64 */
	CHECK(!TilingTreeIsSkewed(f, 0, NULL, 0.05, 0.9));

	TilingOptionsInit(&options, 3, TREE_TILING_PROBABILISTIC);
	options.profile = &profile;
	tiled = TileForest(f, &options, &st);
	CHECK(tiled != NULL);
	if (tiled != NULL)
	{
		CHECK(tiled->trees[0].probabilistic);
		CHECK(memcmp(tiled->tile_nodes, expect_root, sizeof(expect_root)) == 0);
		CHECK(tiled->tile_children[2] == ~13 && tiled->tile_children[3] == ~14);
		CHECK(tiled->trees[0].peel_depth == 1);
		CHECK(tiled->trees[0].depth == 2 && tiled->num_tiles == 3);
		CHECK(TiledForestCheck(tiled, &st));
		CHECK(GridMismatches(f, tiled) == 0);
		CHECK(TiledForestOrderByDepth(tiled, order, &st) && order[0] == 0);
		TiledForestFree(tiled);
	}
	/* the same tree, not skewed: uniform */
	options.profile = &flat_profile;
	tiled = TileForest(f, &options, &st);
	CHECK(tiled != NULL && !tiled->trees[0].probabilistic &&
		  memcmp(tiled->tile_nodes, expect_uniform, sizeof(expect_uniform)) == 0);
	CHECK(tiled != NULL && tiled->trees[0].peel_depth == 2);
	TiledForestFree(tiled);
	/* no profile: uniform */
	options.profile = NULL;
	tiled = TileForest(f, &options, &st);
	CHECK(tiled != NULL && !tiled->trees[0].probabilistic &&
		  tiled->trees[0].peel_depth == 0);
	TiledForestFree(tiled);
	ForestFree(f);
}

/* A forest of a single leaf tree and a stump; reordering puts the leaf first */
static void
TestLeafTree(void)
{
	SilvanStatus st;
	Forest	   *f = ForestCreate(&st);
	TilingOptions options;
	TiledForest *tiled;
	int32_t		order[2];
	TilingStats stats;
	char	   *text;

	f->precision = FOREST_FLOAT32;
	f->num_features = 1;
	f->num_groups = 1;
	f->num_classes = 1;
	ForestAllocBaseMargin(f, 1, &st);
	ForestAllocTrees(f, 2, &st);
	ForestAllocNodes(f, 4, &st);
	f->trees[0] = (ForestTree) {0, 3, 0, 0};
	f->trees[1] = (ForestTree) {3, 1, 0, 0};
	SetSplit(&f->nodes[0], 0, 1.0, 1, 2);
	SetLeaf(&f->nodes[1], 1.0);
	SetLeaf(&f->nodes[2], 2.0);
	SetLeaf(&f->nodes[3], 3.0);
	CHECK(ForestValidate(f, &st));
	TilingOptionsInit(&options, 8, TREE_TILING_UNIFORM);
	tiled = TileForest(f, &options, &st);
	CHECK(tiled != NULL);
	if (tiled != NULL)
	{
		float		row[1] = {0.5f};

		CHECK(tiled->trees[1].num_tiles == 0 && tiled->trees[1].root == ~0);
		CHECK(TiledWalkTree(tiled, 1, row) == 0 && TiledWalkTree(tiled, 0, row) == 1);
		CHECK(TiledForestCheck(tiled, &st));
		CHECK(TiledForestOrderByDepth(tiled, order, &st) && order[0] == 1 && order[1] == 0);
		TiledForestStats(tiled, &stats);
		CHECK(stats.num_tiles == 1 && stats.num_split_nodes == 1 &&
			  stats.num_padding_slots == 7 && stats.min_tiles == 0 && stats.max_tiles == 1);
		text = TiledForestDump(tiled, true);
		CHECK(text != NULL && strstr(text, "tree 1 (group 0, 0 tiles, depth 0, uniform): leaf n0"));
		free(text);
		TiledForestFree(tiled);
	}
	ForestFree(f);
}

/* ---- the shared models ---- */

/* A small deterministic generator */
static uint64_t
NextRandom(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* What rows need to know of each feature */
typedef struct FeatureInfo
{
	int32_t		num_thresholds;
	double		thresholds[32];
	double		lo;
	double		hi;
	bool		categorical;
} FeatureInfo;

/* Collect thresholds (a sample) and categorical use per feature */
static FeatureInfo *
GatherFeatures(const Forest *f, uint64_t *seed)
{
	FeatureInfo *info = calloc((size_t) f->num_features, sizeof(FeatureInfo));

	if (info == NULL)
		return NULL;
	for (int32_t j = 0; j < f->num_features; j++)
	{
		info[j].lo = -10.0;
		info[j].hi = 10.0;
	}
	for (int64_t i = 0; i < f->num_nodes; i++)
	{
		const ForestNode *node = &f->nodes[i];
		FeatureInfo *fi;

		if (node->kind == FOREST_NODE_LEAF)
			continue;
		fi = &info[node->feature];
		if (node->kind == FOREST_NODE_CATEGORICAL)
		{
			fi->categorical = true;
			continue;
		}
		if (fi->num_thresholds == 0 || node->threshold < fi->lo)
			fi->lo = node->threshold;
		if (fi->num_thresholds == 0 || node->threshold > fi->hi)
			fi->hi = node->threshold;
		if (fi->num_thresholds < 32)
			fi->thresholds[fi->num_thresholds++] = node->threshold;
		else
			fi->thresholds[NextRandom(seed) % 32] = node->threshold;
	}
	return info;
}

/* One feature value: NaN, zeros, thresholds, neighbours, categories, noise */
static double
RandomValue(const FeatureInfo *fi, uint64_t *seed)
{
	uint64_t	r = NextRandom(seed) % 100;
	double		t;

	if (r < 8)
		return NAN;
	if (r < 12)
	{
		static const double zeros[] = {0.0, -0.0, 1e-36, -1e-36};

		return zeros[NextRandom(seed) % 4];
	}
	if (fi->categorical && r < 60)
	{
		static const double odd[] = {-1.0, -0.5, 2.5, 1e9, 31.0, 32.0, 33.0};

		if (r < 20)
			return odd[NextRandom(seed) % 7];
		return (double) (NextRandom(seed) % 40);
	}
	if (fi->num_thresholds > 0 && r < 55)
	{
		t = fi->thresholds[NextRandom(seed) % (uint64_t) fi->num_thresholds];
		if (r < 35)
			return t;
		return nextafter(t, r % 2 ? INFINITY : -INFINITY);
	}
	return fi->lo - 1.0 + (fi->hi - fi->lo + 2.0) *
		(double) (NextRandom(seed) % 1000003) / 1000003.0;
}

/* Store value v as feature j of row r in the forest's precision */
static void
StoreValue(const Forest *f, void *rows, int64_t r, int32_t j, double v)
{
	if (f->precision == FOREST_FLOAT32)
	{
		float		x = (float) v;

		/* a neighbour of a float threshold must stay a float neighbour */
		if (!isnan(v) && (double) x != v && fabs(v) < 3e38)
			x = nextafterf((float) v, v > (double) (float) v ? INFINITY : -INFINITY);
		((float *) rows)[r * f->num_features + j] = x;
	}
	else
		((double *) rows)[r * f->num_features + j] = v;
}

/*
 * num_rows rows: with skew, most values repeat one base row (so most rows
 * take one path); otherwise every value is drawn afresh.
 */
static void *
MakeRows(const Forest *f, const FeatureInfo *info, int64_t num_rows, bool skew,
		 uint64_t *seed)
{
	void	   *rows = malloc(ForestValueSize(f) * (size_t) f->num_features * (size_t) num_rows + 1);
	double	   *base = malloc(sizeof(double) * ((size_t) f->num_features + 1));

	if (rows == NULL || base == NULL)
	{
		free(rows);
		free(base);
		return NULL;
	}
	for (int32_t j = 0; j < f->num_features; j++)
		do
			base[j] = RandomValue(&info[j], seed);
		while (isnan(base[j]));
	for (int64_t r = 0; r < num_rows; r++)
		for (int32_t j = 0; j < f->num_features; j++)
			StoreValue(f, rows, r, j,
					   skew && NextRandom(seed) % 100 < 97 ? base[j] :
					   RandomValue(&info[j], seed));
	free(base);
	return rows;
}

/*
 * The model's own input rows, where the set has them: a treebeard CSV
 * beside the model, every column but the last a feature.  Returns the
 * number of rows read (at most max_rows) into rows.
 */
static int64_t
ReadOwnRows(const Forest *f, const char *model_path, void *rows, int64_t max_rows)
{
	static const char *const suffixes[] = {".test.sampled.csv", ".csv"};
	int64_t		count = 0;

	for (int i = 0; i < 2 && count == 0; i++)
	{
		char		path[4096];
		size_t		len;
		char	   *text;
		char	   *p;

		snprintf(path, sizeof(path), "%s%s", model_path, suffixes[i]);
		text = ReadFile(path, &len);
		if (text == NULL)
			continue;
		p = text;
		while (*p && count < max_rows)
		{
			int32_t		j = 0;

			while (*p && *p != '\n' && j < f->num_features)
			{
				char	   *end;
				double		v = strtod(p, &end);

				if (end == p)
					break;
				StoreValue(f, rows, count, j++, v);
				p = end;
				if (*p == ',')
					p++;
			}
			while (*p && *p != '\n')
				p++;
			if (*p == '\n')
				p++;
			if (j == f->num_features)
				count++;
		}
		free(text);
	}
	return count;
}

/* Totals over the shared models */
typedef struct SharedTotals
{
	int			models;
	int			skipped;
	int64_t		walks;
	int32_t		probabilistic_trees;
} SharedTotals;

/* Tile one model one way; check the tiling and compare walks on the rows */
static void
CheckTiling(const char *name, const Forest *f, const TilingOptions *options,
			const void *rows, int64_t num_rows, SharedTotals *totals)
{
	SilvanStatus st;
	TiledForest *tiled = TileForest(f, options, &st);
	size_t		row_bytes = ForestValueSize(f) * (size_t) f->num_features;
	int64_t		splits = 0;
	int64_t		bad = 0;
	TilingStats stats;
	int32_t    *order;
	bool		order_ok = true;
	char	   *text;

	CHECK_MSG(tiled != NULL, "%s: tiling failed: %s: %s", name, st.message, st.detail);
	if (tiled == NULL)
		return;
	CHECK_MSG(TiledForestCheck(tiled, &st), "%s n %d %s pad %d: %s", name,
			  options->tile_size, options->tiling ? "prob" : "uniform",
			  options->pad_depth, st.detail);
	for (int64_t r = 0; r < num_rows; r++)
	{
		const void *row = (const char *) rows + (size_t) r * row_bytes;

		for (int32_t t = 0; t < f->num_trees; t++)
		{
			int32_t		expect = ForestWalkTree(f, t, row);
			int32_t		got = TiledWalkTree(tiled, t, row);

			if (got != expect && bad++ == 0)
				fprintf(stderr, "%s n %d: row %lld tree %d: tiled leaf %d, forest leaf %d\n",
						name, options->tile_size, (long long) r, t, got, expect);
		}
	}
	totals->walks += num_rows * f->num_trees;
	CHECK_MSG(bad == 0, "%s n %d %s pad %d: %lld walks differ", name, options->tile_size,
			  options->tiling ? "prob" : "uniform", options->pad_depth, (long long) bad);

	/* statistics and the tree order */
	for (int64_t i = 0; i < f->num_nodes; i++)
		splits += f->nodes[i].kind != FOREST_NODE_LEAF;
	TiledForestStats(tiled, &stats);
	CHECK(stats.num_split_nodes == splits);
	CHECK(stats.avg_fill > 0.0 || splits == 0);
	CHECK(stats.avg_fill <= 1.0);
	CHECK(options->tile_size > 1 || (stats.num_padding_slots == 0 && stats.num_tiles ==
									 splits + stats.num_dummy_tiles));
	if (options->tiling == TREE_TILING_PROBABILISTIC)
		totals->probabilistic_trees += stats.num_probabilistic;
	order = malloc(sizeof(int32_t) * (size_t) f->num_trees);
	if (order != NULL && TiledForestOrderByDepth(tiled, order, &st))
	{
		char	   *seen = calloc((size_t) f->num_trees, 1);

		for (int32_t i = 0; seen != NULL && i < f->num_trees; i++)
		{
			if (order[i] < 0 || order[i] >= f->num_trees || seen[order[i]]++ ||
				(i > 0 && tiled->trees[order[i]].depth < tiled->trees[order[i - 1]].depth))
				order_ok = false;
		}
		free(seen);
	}
	free(order);
	CHECK_MSG(order_ok, "%s: tree order is not a permutation by depth", name);

	/* a padded tile may only sit where tiling could not grow (maximal tiles) */
	bad = 0;
	for (int32_t k = 0; k < tiled->num_trees; k++)
	{
		const TiledTree *tree = &tiled->trees[k];
		int32_t		n = tiled->tile_size;
		uint8_t		all = (uint8_t) ((1u << n) - 1);

		for (int64_t t = tree->first_tile; t < tree->first_tile + tree->num_tiles; t++)
		{
			if (tiled->tile_padding[t] == 0 || tiled->tile_padding[t] == all)
				continue;
			for (int32_t e = 0; e <= n; e++)
			{
				TileRef		ref = tiled->tile_children[t * (n + 1) + e];

				if (!TILE_REF_IS_LEAF(ref) &&
					tiled->tile_padding[tree->first_tile + ref] != all)
					bad++;
			}
		}
	}
	CHECK_MSG(bad == 0, "%s: %lld padded tiles have a split below them", name,
			  (long long) bad);
	text = TiledForestDump(tiled, true);
	CHECK(text != NULL);
	free(text);
	TiledForestFree(tiled);
}

/* Tile one shared model in every way and compare walks */
static void
RunModel(const char *path, const char *name, SharedTotals *totals)
{
	SilvanStatus st;
	size_t		len;
	char	   *text = ReadFile(path, &len);
	Forest	   *f;
	FeatureInfo *info;
	uint64_t	seed = 0x9e3779b97f4a7c15ull ^ len;
	void	   *profile_rows;
	void	   *test_rows;
	int64_t		own;
	int64_t    *hits;
	ForestProfile profile;
	struct timespec t0,
				t1;
	static const int32_t sizes[] = {1, 2, 4, 8};

	if (text == NULL || ModelFormatDetect(text, len) == MODEL_FORMAT_AUTO)
	{
		free(text);
		return;
	}
	f = ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &st);
	free(text);
	if (f == NULL)
	{
		printf("skip %s: %s\n", name, st.message);
		totals->skipped++;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	info = GatherFeatures(f, &seed);
	profile_rows = info ? MakeRows(f, info, PROFILE_ROWS, true, &seed) : NULL;
	test_rows = info ? MakeRows(f, info, TEST_ROWS, false, &seed) : NULL;
	hits = calloc((size_t) f->num_nodes + 1, sizeof(int64_t));
	CHECK(info != NULL && profile_rows != NULL && test_rows != NULL && hits != NULL);
	if (info == NULL || profile_rows == NULL || test_rows == NULL || hits == NULL)
		goto done;

	/* profile on the model's own rows if any; half the test rows are those too */
	own = ReadOwnRows(f, path, profile_rows, PROFILE_ROWS);
	ForestProfileAccumulate(f, profile_rows, own > 0 ? own : PROFILE_ROWS, hits);
	profile = (ForestProfile) {own > 0 ? own : PROFILE_ROWS, f->num_nodes, hits};
	memcpy(test_rows, profile_rows, ForestValueSize(f) * (size_t) f->num_features * (TEST_ROWS / 2));

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
	{
		TilingOptions options;

		TilingOptionsInit(&options, sizes[i], TREE_TILING_UNIFORM);
		CheckTiling(name, f, &options, test_rows, TEST_ROWS, totals);
		options.pad_depth = TILING_MAX_PAD_DEPTH;
		CheckTiling(name, f, &options, test_rows, TEST_ROWS, totals);
		TilingOptionsInit(&options, sizes[i], TREE_TILING_PROBABILISTIC);
		options.profile = &profile;
		options.pad_depth = TILING_MAX_PAD_DEPTH;	/* applies to unskewed trees */
		CheckTiling(name, f, &options, test_rows, TEST_ROWS, totals);
	}

	/*
	 * No shared model uses LightGBM's NaN or ZERO missing types: give every
	 * numeric split each rule in turn, and both default directions.
	 */
	for (int64_t i = 0; i < f->num_nodes; i++)
		if (f->nodes[i].kind == FOREST_NODE_NUMERIC)
		{
			f->nodes[i].missing = (uint8_t) (i % 3);
			f->nodes[i].default_left = (uint8_t) ((i / 3) % 2);
		}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
	{
		TilingOptions options;

		TilingOptionsInit(&options, sizes[i], TREE_TILING_PROBABILISTIC);
		options.profile = &profile;
		CheckTiling(name, f, &options, test_rows, TEST_ROWS, totals);
	}

	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("ok %s: %d trees, %lld nodes, profile %s rows, %.2f s\n", name, f->num_trees,
		   (long long) f->num_nodes, own > 0 ? "own" : "synthetic",
		   (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	totals->models++;
done:
	free(info);
	free(profile_rows);
	free(test_rows);
	free(hits);
	ForestFree(f);
}

/* Does a file name end with suffix? */
static bool
EndsWith(const char *name, const char *suffix)
{
	size_t		n = strlen(name);
	size_t		s = strlen(suffix);

	return n >= s && strcmp(name + n - s, suffix) == 0;
}

/* Compare strings for qsort */
static int
CompareNames(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Run every model file (json, txt, model) under models/<source>/, sorted */
static void
RunShared(const char *models, const char *only, SharedTotals *totals)
{
	DIR		   *top = opendir(models);
	struct dirent *d;
	char	  **paths = NULL;
	size_t		num = 0;
	size_t		cap = 0;

	if (top == NULL)
		return;
	while ((d = readdir(top)) != NULL)
	{
		char		dir[4096];
		DIR		   *sub;
		struct dirent *e;

		if (d->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", models, d->d_name);
		if ((sub = opendir(dir)) == NULL)
			continue;
		while ((e = readdir(sub)) != NULL)
		{
			char		path[8192];

			if (!EndsWith(e->d_name, ".json") && !EndsWith(e->d_name, ".txt") &&
				!EndsWith(e->d_name, ".model"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (only != NULL && strstr(path, only) == NULL)
				continue;
			if (num == cap)
			{
				char	  **grown = realloc(paths, sizeof(char *) * (cap = cap ? cap * 2 : 64));

				if (grown == NULL)
					break;
				paths = grown;
			}
			paths[num++] = strdup(path);
		}
		closedir(sub);
	}
	closedir(top);
	if (num > 0)
		qsort(paths, num, sizeof(char *), CompareNames);
	for (size_t i = 0; i < num; i++)
	{
		if (paths[i] != NULL)
			RunModel(paths[i], paths[i] + strlen(models) + 1, totals);
		free(paths[i]);
	}
	free(paths);
}

/* The shared models folder: $SILVAN_SHARED[/models], else ../shared/models */
static bool
FindShared(char *out, size_t size)
{
	const char *env = getenv("SILVAN_SHARED");
	const char *candidates[3];
	int			num = 0;
	char		with_models[4096];
	struct stat sb;

	if (env != NULL && *env)
	{
		snprintf(with_models, sizeof(with_models), "%s/models", env);
		candidates[num++] = with_models;
		candidates[num++] = env;
	}
	candidates[num++] = "../shared/models";
	for (int i = 0; i < num; i++)
		if (stat(candidates[i], &sb) == 0 && S_ISDIR(sb.st_mode))
			return snprintf(out, size, "%s", candidates[i]) > 0;
	return false;
}

int
main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	char		models[4096];
	SharedTotals totals = {0};
	struct timespec t0,
				t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	TestShapes();
	TestPadding();
	TestDepthPadding();
	TestProbabilistic();
	TestLeafTree();
	if (FindShared(models, sizeof(models)))
	{
		printf("-- shared models (%s)\n", models);
		RunShared(models, only, &totals);
		printf("-- %d models, %d skipped, %lld tiled walks compared, "
			   "%d trees tiled by probability\n", totals.models, totals.skipped,
			   (long long) totals.walks, totals.probabilistic_trees);
		CHECK(only != NULL || totals.models > 0);
		CHECK(only != NULL || totals.probabilistic_trees > 0);
	}
	else
		printf("-- shared models not found (set SILVAN_SHARED or put them in ../shared/models); skipped\n");
	TileShapesReset();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("-- %.1f s\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	UNIT_DONE();
}
