/*
 * test_fuzz_findings.c
 *		Every input the fuzzers (test/fuzz) found, and the reported ones,
 *		must fail cleanly, or load safely.
 *
 * Each finding lives in test/fuzz/findings/<target>/ (make fuzz replays
 * them too).  Here each must fail with the right kind of error, a message
 * and a detail naming the field at fault, and without allocating anything
 * huge: the inputs are read under an address-space limit of a few hundred
 * megabytes above what the process already maps, so a reader that sizes
 * an array by a count it has not checked fails with out of memory instead
 * of the expected error (or, without overcommit, cannot even try).
 */
#include <stdint.h>
#include <sys/resource.h>

#include "silvan/parse.h"
#include "unit.h"

/* Headroom over the current address space while reading findings */
#define FINDINGS_HEADROOM	(256L << 20)

/* Offsets in the binary form's header (see serialize.c) */
#define BIN_NUM_TREES	101
#define BIN_NUM_NODES	105
#define BIN_BASE_MARGIN	121

/* Limit the address space to what is mapped now plus the headroom */
static bool
LimitMemory(struct rlimit *saved)
{
	FILE	   *f = fopen("/proc/self/statm", "r");
	long		pages = 0;
	struct rlimit limit;

	if (f == NULL || fscanf(f, "%ld", &pages) != 1 || getrlimit(RLIMIT_AS, saved) != 0)
	{
		if (f)
			fclose(f);
		return false;
	}
	fclose(f);
	limit = *saved;
	limit.rlim_cur = (rlim_t) pages * 4096 + FINDINGS_HEADROOM;
	if (saved->rlim_max != RLIM_INFINITY && limit.rlim_cur > saved->rlim_max)
		limit.rlim_cur = saved->rlim_max;
	return setrlimit(RLIMIT_AS, &limit) == 0;
}

/* Does the status name the field (and say what is wrong)? */
static bool
Names(const SilvanStatus *st, const char *message, const char *detail)
{
	return strcmp(st->message, message) == 0 && strstr(st->detail, detail) != NULL;
}

/* Parse a committed finding; it must fail with kind, message and detail */
static void
ExpectModelFails(const char *path, ModelFormat format, SilvanErrorKind kind,
				 const char *message, const char *detail)
{
	size_t		len;
	char	   *text = ReadFile(path, &len);
	SilvanStatus st;
	Forest	   *f;

	CHECK_MSG(text != NULL, "%s is missing", path);
	if (text == NULL)
		return;
	f = ParseModel(text, len, format, NULL, &st);
	CHECK_MSG(f == NULL && st.kind == kind && Names(&st, message, detail),
			  "%s: got %s, kind %d: %s: %s", path, f ? "a forest" : "NULL",
			  st.kind, st.message, st.detail);
	ForestFree(f);
	free(text);
}

/*
 * LightGBM trees that claim far more leaves than their arrays hold: the
 * reported 208-byte model (num_leaves=0536870911, which made the reader
 * calloc 60 GB for nodes before looking at any array) and the fuzzer's
 * mutation of a real model into the same (num_leaves=200000002).
 */
static void
TestLightgbmLeafCounts(void)
{
	ExpectModelFails("test/fuzz/findings/lightgbm_text/num_leaves_huge.txt",
					 MODEL_FORMAT_LIGHTGBM_TEXT, SILVAN_ERROR_INVALID,
					 "invalid LightGBM model",
					 "Field \"leaf_value\" of tree 0 has 2 entries; expected 536870911.");
	ExpectModelFails("test/fuzz/findings/lightgbm_text/num_leaves_mutated.txt",
					 MODEL_FORMAT_LIGHTGBM_TEXT, SILVAN_ERROR_INVALID,
					 "invalid LightGBM model",
					 "Field \"leaf_value\" of tree 2 has 2 entries; expected 200000002.");
	ExpectModelFails("test/fuzz/findings/lightgbm_text/num_leaves_huge.txt",
					 MODEL_FORMAT_AUTO, SILVAN_ERROR_INVALID,
					 "invalid LightGBM model", "\"leaf_value\"");
}

/*
 * Issue 33: small models shaped to make a reader hold far more memory than
 * their bytes justify (make_decode_findings.py writes them): empty ONNX
 * attributes, nodes, tensors and unknown fields, which protobuf-c inflated
 * a hundredfold; an XGBoost document of empty objects and a tree of an
 * unusual shape, which json-c inflated as much; category sets whose
 * largest category needs megabytes.  Each is refused for memory, the
 * detail naming what was being read and the budget.
 */
static void
TestDecodeBudget(void)
{
	static const struct
	{
		const char *path;
		ModelFormat format;
		const char *detail;
	}			cases[] = {
		{"onnx/empty_attributes.onnx", MODEL_FORMAT_ONNX, "the 1 nodes and 50000 attributes of the graph"},
		{"onnx/empty_nodes.onnx", MODEL_FORMAT_ONNX, "the 100000 nodes and 0 attributes of the graph"},
		{"onnx/empty_tensors.onnx", MODEL_FORMAT_ONNX, "Reading the attributes of the graph's nodes"},
		{"onnx/unknown_fields.onnx", MODEL_FORMAT_ONNX, "Reading the ONNX graph"},
		{"xgboost_json/learner_objects.json", MODEL_FORMAT_XGBOOST_JSON, "the document without its trees"},
		{"xgboost_json/dense_tree_nested.json", MODEL_FORMAT_XGBOOST_JSON, "tree 0 through json-c"},
		{"xgboost_json/category_blowup.json", MODEL_FORMAT_XGBOOST_JSON, "the category sets"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char		path[256];

		snprintf(path, sizeof(path), "test/fuzz/findings/%s", cases[i].path);
		ExpectModelFails(path, cases[i].format, SILVAN_ERROR_LIMIT,
						 "model needs more memory to decode than its size justifies",
						 cases[i].detail);
	}
}

/*
 * Load committed binary-form bytes with nodes no walk reaches: they load
 * without those nodes, and the result stores and loads again as it is
 */
static void
ExpectStoredCompacts(const char *path, int64_t dropped)
{
	size_t		len;
	char	   *data = ReadFile(path, &len);
	SilvanStatus st;
	Forest	   *f;
	Forest	   *again = NULL;
	int64_t		stored_nodes;
	uint8_t    *bytes = NULL;
	size_t		size = 0;

	CHECK_MSG(data != NULL && len > BIN_NUM_NODES + sizeof(int64_t), "%s is missing", path);
	if (data == NULL || len <= BIN_NUM_NODES + sizeof(int64_t))
		return;
	memcpy(&stored_nodes, data + BIN_NUM_NODES, sizeof(stored_nodes));
	f = ForestDeserialize((const uint8_t *) data, len, &st);
	CHECK_MSG(f != NULL, "%s: %s: %s", path, st.message, st.detail);
	if (f != NULL)
	{
		CHECK_MSG(f->num_nodes == stored_nodes - dropped, "%s: %lld nodes of %lld",
				  path, (long long) f->num_nodes, (long long) stored_nodes);
		CHECK(ForestSerialize(f, &bytes, &size, &st));
		again = bytes ? ForestDeserialize(bytes, size, &st) : NULL;
		CHECK(again != NULL && again->num_nodes == f->num_nodes);
	}
	ForestFree(again);
	ForestFree(f);
	free(bytes);
	free(data);
}

/*
 * A stored forest whose tree holds a split the walk from the root never
 * reaches, with a feature index past the row: validation looks only at
 * reachable nodes, but every stage that loops over the node array (the
 * serializer, tiling's leaf counts, the fuzzer's own row builder) reads
 * them all.  Unreached nodes are dropped before validation, so the bad
 * index goes with its node.
 */
static void
TestUnreachableNode(void)
{
	ExpectStoredCompacts("test/fuzz/findings/forest_binary/unreachable_node.bin", 2);
}

/*
 * A stored forest with a tree whose node 5 no walk reaches, though every
 * field of it is in range: the tiling (and anything else that loops over
 * a tree's nodes) counted it, and found it in no tile.  Such nodes are
 * what XGBoost's pruner leaves in a tree, and what silvan 0.1 stored: the
 * loader drops them (compact.c), so a model stored by 0.1 still loads
 * after an upgrade, and validation then wants every node reached.
 */
static void
TestUnreachedNode(void)
{
	ExpectStoredCompacts("test/fuzz/findings/forest_binary/unreached_node.bin", 6);
}

/* The binary form of the inline LightGBM model below, malloc'd */
static uint8_t *
StoredModel(size_t *size)
{
	const char *text =
		"tree\nversion=v3\nnum_class=1\nmax_feature_idx=0\nobjective=regression\n\n"
		"Tree=0\nnum_leaves=2\nsplit_feature=0\nthreshold=0.5\n"
		"left_child=-1\nright_child=-2\nleaf_value=1 2\n\nend of trees\n";
	SilvanStatus st;
	Forest	   *f = ParseModel(text, strlen(text), MODEL_FORMAT_AUTO, NULL, &st);
	uint8_t    *data = NULL;

	CHECK(f != NULL && ForestSerialize(f, &data, size, &st));
	ForestFree(f);
	return data;
}

/*
 * Binary-form counts that each fit the bytes left but together do not:
 * they must be refused before anything is allocated, not after reading
 * runs out.
 */
static void
TestStoredCounts(void)
{
	size_t		size;
	uint8_t    *model = StoredModel(&size);
	size_t		padded = BIN_BASE_MARGIN + (16 << 20);
	uint8_t    *data = calloc(padded, 1);
	int32_t		trees = (int32_t) ((padded - BIN_BASE_MARGIN) / 8 - 1);
	int64_t		nodes = (int64_t) (padded - BIN_BASE_MARGIN) / 9 - 1;
	SilvanStatus st;
	Forest	   *f;

	if (model == NULL || data == NULL)
		return;
	memcpy(data, model, BIN_BASE_MARGIN);
	memcpy(data + BIN_NUM_TREES, &trees, sizeof(trees));
	memcpy(data + BIN_NUM_NODES, &nodes, sizeof(nodes));
	f = ForestDeserialize(data, padded, &st);
	CHECK_MSG(f == NULL && st.kind == SILVAN_ERROR_INVALID &&
			  Names(&st, "invalid stored model", "counts do not match its size"),
			  "got %s, kind %d: %s: %s", f ? "a forest" : "NULL", st.kind,
			  st.message, st.detail);
	ForestFree(f);
	free(model);
	free(data);
}

int
main(void)
{
	struct rlimit saved;
	bool		limited = LimitMemory(&saved);

	CHECK_MSG(limited, "cannot limit the address space");
	TestLightgbmLeafCounts();
	TestDecodeBudget();
	TestUnreachableNode();
	TestUnreachedNode();
	TestStoredCounts();
	if (limited)
		setrlimit(RLIMIT_AS, &saved);
	UNIT_DONE();
}
