/*
 * test_xgboost_read.c
 *		The XGBoost reader's three ways of reading trees agree.
 *
 * By default the reader scans the text (json_scan.c), has json-c parse
 * the document without its trees, then reads each tree straight from the
 * text, or through json-c when the tree has an unusual shape; it falls
 * back to json-c reading the whole document when the scan is not sure.
 * Every way must give the same forest, byte for byte, or the same error,
 * word for word: on the fixtures, the fuzz seeds, the shared models, on
 * documents written to trip the scan, and on mutations of them all.  The
 * reads get a budget large enough for json-c to hold a whole shared model
 * (test_decode_limits checks the real one).
 */
#include <dirent.h>
#include <stdint.h>

#include "silvan/parse.h"
#include "unit.h"

/* The outcome of one parse: the binary form, or the error */
typedef struct Outcome
{
	uint8_t    *bytes;
	size_t		size;
	SilvanStatus status;
} Outcome;

/* Parse text in one mode */
static Outcome
ParseIn(XgboostReadMode mode, const char *text, size_t len)
{
	Outcome		o = {NULL, 0};
	Forest	   *f;

	ParseXgboostReadMode(mode);
	f = ParseModel(text, len, MODEL_FORMAT_XGBOOST_JSON, NULL, &o.status);
	ParseXgboostReadMode(XGBOOST_READ_FLAT);
	if (f != NULL && !ForestSerialize(f, &o.bytes, &o.size, &o.status))
		o.bytes = NULL;
	ForestFree(f);
	return o;
}

/* Do two outcomes agree? */
static bool
Same(const Outcome *a, const Outcome *b)
{
	if ((a->bytes == NULL) != (b->bytes == NULL))
		return false;
	if (a->bytes != NULL)
		return a->size == b->size && memcmp(a->bytes, b->bytes, a->size) == 0;
	return a->status.kind == b->status.kind &&
		strcmp(a->status.message, b->status.message) == 0 &&
		strcmp(a->status.detail, b->status.detail) == 0;
}

/* All three modes must agree on the text; returns whether it parsed */
static bool
CheckModes(const char *text, size_t len, const char *label)
{
	Outcome		flat = ParseIn(XGBOOST_READ_FLAT, text, len);
	Outcome		stream = ParseIn(XGBOOST_READ_STREAM, text, len);
	Outcome		whole = ParseIn(XGBOOST_READ_WHOLE, text, len);
	bool		parsed = flat.bytes != NULL;

	CHECK_MSG(Same(&flat, &whole) && Same(&stream, &whole),
			  "%s: modes disagree: flat %s (%s), stream %s (%s), whole %s (%s)", label,
			  flat.bytes ? "parses" : flat.status.detail, flat.status.message,
			  stream.bytes ? "parses" : stream.status.detail, stream.status.message,
			  whole.bytes ? "parses" : whole.status.detail, whole.status.message);
	free(flat.bytes);
	free(stream.bytes);
	free(whole.bytes);
	return parsed;
}

/* A few thousand deterministic byte mutations of a text, each checked */
static void
CheckMutations(const char *text, size_t len, const char *label, int count)
{
	char	   *copy = malloc(len);
	uint64_t	state = 0x9E3779B97F4A7C15ull ^ len;
	static const char bytes[] = "{}[],:\"0123456789-.eE tnfNI\\/";

	for (int k = 0; k < count && len > 0; k++)
	{
		char		name[300];

		memcpy(copy, text, len);
		for (int n = 0; n < 1 + k % 3; n++)
		{
			state = state * 6364136223846793005ull + 1442695040888963407ull;
			copy[(state >> 33) % len] = bytes[(state >> 17) % (sizeof(bytes) - 1)];
		}
		snprintf(name, sizeof(name), "%s, mutation %d", label, k);
		CheckModes(copy, len, name);
	}
	free(copy);
}

/* Check every model file of a folder (names ending in .json), mutating the small ones */
static int
CheckFolder(const char *dir, int mutations)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	int			files = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
	{
		char		path[1024];
		size_t		len;
		char	   *text;
		size_t		n = strlen(e->d_name);

		if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if ((text = ReadFile(path, &len)) == NULL)
			continue;
		CheckModes(text, len, path);
		if (len < 8192)
			CheckMutations(text, len, path, mutations);
		free(text);
		files++;
	}
	closedir(d);
	return files;
}

/* The shared XGBoost models, when ../shared is there */
static void
CheckSharedModels(void)
{
	DIR		   *d = opendir("../shared/models");
	struct dirent *e;
	int			files = 0;

	if (d == NULL)
	{
		printf("  skip shared models: ../shared/models is absent\n");
		return;
	}
	while ((e = readdir(d)) != NULL)
	{
		char		path[1024];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "../shared/models/%s", e->d_name);
		files += CheckFolder(path, 0);
	}
	closedir(d);
	printf("  %d shared JSON files read three ways\n", files);
}

/* A small model for documents that trip the scan */
static const char *model_head =
"{\"learner\":{\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_trees\":\"2\"},"
"\"tree_info\":[0,0],";
static const char *model_trees =
"\"trees\":[{\"default_left\":[true,false,false],\"id\":1,\"left_children\":[1,-1,-1],"
"\"right_children\":[2,-1,-1],\"split_conditions\":[5E-1,-0,1.5],\"split_indices\":[0,0,0],"
"\"tree_param\":{\"num_nodes\":\"3\",\"size_leaf_vector\":\"0\"}},"
"{\"default_left\":[0],\"id\":0,\"left_children\":[-1],\"right_children\":[-1],"
"\"split_conditions\":[-2],\"split_indices\":[0],\"tree_param\":{\"num_nodes\":1}}]";
static const char *model_tail =
"},\"name\":\"gbtree\"},\"learner_model_param\":{\"base_score\":\"5E-1\",\"num_feature\":\"2\"},"
"\"objective\":{\"name\":\"reg:squarederror\"}}}";

/* The small model with one replacement (from in the trees, or anywhere) */
static char *
Variant(const char *from, const char *to)
{
	size_t		n = strlen(model_head) + strlen(model_trees) + strlen(model_tail);
	char	   *whole = malloc(n + 1);
	char	   *at;
	char	   *out;

	snprintf(whole, n + 1, "%s%s%s", model_head, model_trees, model_tail);
	if (from == NULL || (at = strstr(whole, from)) == NULL)
		return whole;
	out = malloc(n + strlen(to) + 1);
	memcpy(out, whole, at - whole);
	strcpy(out + (at - whole), to);
	strcat(out, at + strlen(from));
	free(whole);
	return out;
}

/* Documents that make the scan give up, a tree go to json-c, or neither */
static void
CheckTricky(void)
{
	static const char *cases[][2] = {
		{NULL, NULL},
		{"\"trees\":[", "\"trees\":[],\"trees\":["},	/* json-c keeps the last */
		{"\"trees\":[", "\"tr\\u0065es\":[],\"trees\":["},	/* escaped key */
		{"\"trees\":[", "\"trees\":[],\"tr\\u0065es\":["},
		{"\"model\":{", "\"model\":{},\"model\":{"},
		{"\"learner\":{", "\"learner\":{}, \"learner\":{"},
		{"\"model\":{", "\"gbtree\":{\"model\":{\"trees\":[]}},\"model\":{"},
		{"\"id\":1,", "\"id\":1,\"id\":1,"},	/* repeats id 1 */
		{"\"id\":1,", "\"id\":\"1\","},
		{"\"id\":1,", "\"id\":1.0,"},
		{"\"id\":1,", "\"id\":null,"},
		{"\"id\":1,", "\"id\":[1],"},
		{"\"num_nodes\":\"3\"", "\"num_nodes\":3"},
		{"\"num_nodes\":\"3\"", "\"num_nodes\":\"3\",\"num_nodes\":\"4\""},
		{"\"num_nodes\":\"3\"", "\"num_nodes\":\"0x3\""},
		{"\"size_leaf_vector\":\"0\"", "\"size_leaf_vector\":\"2\""},
		{"[5E-1,-0,1.5]", "[NaN,-0.0,Infinity]"},
		{"[5E-1,-0,1.5]", "[5E-1,\"1\",1.5]"},
		{"[5E-1,-0,1.5]", "[5E-1,1234567890123456789012,1.5]"},
		{"[5E-1,-0,1.5]", "[5E-1,-Infinity,1e400]"},
		{"[5E-1,-0,1.5]", "[5E-1,[0],1.5]"},
		{"[5E-1,-0,1.5]", "[5E-1,null,1.5]"},
		{"[true,false,false]", "[2,false,false]"},
		{"[true,false,false]", "[1.0,0,0]"},
		{"\"split_indices\":[0,0,0]", "\"split_indices\":[0,0,0],\"split_type\":[0,0]"},
		{"\"split_indices\":[0,0,0]", "\"split_indices\":[1E0,0,0]"},
		{"\"split_indices\":[0,0,0]", "\"split_indices\":[9007199254740993,0,0]"},
		{"\"tree_param\":{\"num_nodes\":1}", "\"tree_param\":{\"num_nodes\":1,\"x\":{}}"},
		{"\"tree_param\":{\"num_nodes\":1}", "\"tree_param\":[]"},
		{"\"tree_param\":{\"num_nodes\":1}", "\"tree_param\":{\"num_nodes\":1},\"extra\":{\"a\":[1]}"},
		{"\"default_left\":[0]", "\"default_left\":[0],\"categories\":[3],\"categories_nodes\":[],"
		"\"categories_segments\":[],\"categories_sizes\":[]"},
		{"\"tree_info\":[0,0]", "\"tree_info\":[0,0] "},
		{"\"tree_info\":[0,0],", "\"tree_info\":[0,0], \"trees\" : [ ] ,"},
		{"]", " , ]"},	/* a trailing comma json-c takes */
		{"{\"learner\"", " {\"learner\""},
		{"\"objective\"", "/* a comment */\"objective\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char	   *text = Variant(cases[i][0], cases[i][1]);
		char		label[128];

		snprintf(label, sizeof(label), "tricky case %zu", i);
		if (i == 0)
			CHECK_MSG(CheckModes(text, strlen(text), label), "the small model must parse");
		else
			CheckModes(text, strlen(text), label);
		CheckMutations(text, strlen(text), label, 300);
		free(text);
	}
}

/*
 * XGBoost's pruner leaves deleted nodes in a tree, leaves no split points
 * to: the reader drops them (every node of a forest must be reached), in
 * every mode, and the tree walks as before
 */
static void
CheckDeletedNodes(void)
{
	char	   *text = Variant("\"default_left\":[true,false,false],\"id\":1,\"left_children\":[1,-1,-1],"
							   "\"right_children\":[2,-1,-1],\"split_conditions\":[5E-1,-0,1.5],"
							   "\"split_indices\":[0,0,0],\"tree_param\":{\"num_nodes\":\"3\"",
							   "\"default_left\":[true,false,false,false,false],\"id\":1,"
							   "\"left_children\":[3,-1,-1,-1,-1],\"right_children\":[2,-1,-1,-1,-1],"
							   "\"split_conditions\":[5E-1,7,1.5,-0,9],\"split_indices\":[0,2147483647,0,0,2147483647],"
							   "\"tree_param\":{\"num_deleted\":\"2\",\"num_nodes\":\"5\"");
	SilvanStatus st;
	Forest	   *f = ParseModel(text, strlen(text), MODEL_FORMAT_XGBOOST_JSON, NULL, &st);
	float		row[2] = {0.25f, 0.0f};

	CHECK_MSG(f != NULL, "deleted nodes: %s: %s", st.message, st.detail);
	if (f != NULL)
	{
		const ForestTree *t = &f->trees[1];

		CHECK(t->num_nodes == 3 && f->num_nodes == 4);
		/* nodes 0, 2 and 3 are kept, as 0, 1 and 2 */
		CHECK(f->nodes[t->first_node].left == 2 && f->nodes[t->first_node].right == 1);
		CHECK(ForestWalkTree(f, 1, row) == 2 && f->nodes[t->first_node + 2].leaf_value == 0.0);
		CHECK(f->nodes[t->first_node + 1].leaf_value == 1.5);
	}
	CheckModes(text, strlen(text), "deleted nodes");
	ForestFree(f);
	free(text);
}

int
main(void)
{
	int			fixtures;

	/* json-c reading a whole shared model needs more than a read's budget */
	DecodeBudgetOverride(INT64_C(1) << 30, 64);
	fixtures = CheckFolder("test/fixtures", 0);
	int			seeds = CheckFolder("test/fuzz/corpus/xgboost_json", 200);

	CHECK_MSG(fixtures > 20 && seeds > 10, "fixtures (%d) or seeds (%d) are missing",
			  fixtures, seeds);
	CheckTricky();
	CheckDeletedNodes();
	CheckSharedModels();
	UNIT_DONE();
}
