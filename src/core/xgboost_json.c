/*
 * xgboost_json.c
 *		Read XGBoost's save_model() JSON (1.x and 2.x layouts) into a Forest.
 *
 * The whole text is checked before anything is read, so truncated or
 * malformed text is a syntax error rather than a partial model.  We then
 * walk the learner: the model parameters (feature and class counts, the
 * base score), the objective (which fixes the task, the output transform
 * and how the base score becomes a margin), the booster (gbtree, or dart
 * with its per-tree weights) and finally the trees.  The learner's part
 * is xgboost_learner.c; the document and its trees are read here.
 *
 * A model's trees are nearly all of its text, and json-c, which builds a
 * document whole, spends 30 to 100 heap bytes per byte of them.  So the
 * text is first scanned (json_scan.c, a strict check that allocates
 * nothing) for the "trees" array; json-c parses the document without it,
 * and the trees are read one at a time, in the order of the text, each
 * converted into growing node arrays and released before the next.  A
 * tree of the usual shape is read straight from the text (JsonReadFlat),
 * its numbers converted here exactly as json-c would have; any other goes
 * through json-c.  When the scan is not sure of the document, json-c
 * parses it whole as before.  Every way gives the same forest or the same
 * error (test_xgboost_read and the fuzzer compare them).  Trees placed out
 * of order by their "id" fields are laid out in model order at the end.
 *
 * Each tree's arrays are checked against its node count before its nodes
 * are filled in.  XGBoost stores a leaf's value in "split_conditions" and
 * marks leaves by left child -1.  A numeric split goes left iff x <
 * threshold, and missing values follow "default_left".  A categorical
 * split (split_type 1) sends the categories listed for it to the right;
 * we turn each list into a bitset.
 *
 * All thresholds and leaf values are float32 in XGBoost.  json-c keeps the
 * original text of every number it parses, so we round that text straight
 * to float with strtof instead of going through double, which could round
 * twice.  The model is untrusted: every count is range-checked before it
 * sizes anything, and every failure names the offending field.
 *
 * Memory.  The read is held to its budget (decode_budget.h), some four
 * times the text.  json-c is the expensive part: before it parses
 * anything (the document without its trees, a tree of an unusual shape,
 * or the whole document when the scan gave up on it) the reader charges
 * the bound json_scan.h gives for that text, so a document of tiny
 * values, empty objects or deep arrays is refused before json-c builds
 * it, and feeds it to json-c a megabyte at a time, polling for
 * cancellation in between.  Trees read straight from the text hold eight
 * bytes a value while they are read, charged as they grow, and the node
 * arrays 48 bytes a node, charged as they double.  XGBoost writes some
 * 100 bytes a node, so its models take about twice their size; a tree in
 * the fewest bytes the required arrays allow (12 a node) would take
 * eight times, and is refused, as is a category set whose largest
 * category needs more words than the text justifies.  The reader polls
 * for cancellation per tree and every CANCEL_POLL_INTERVAL nodes.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "silvan/cancel.h"
#include "silvan/json_scan.h"
#include "xgboost_json.h"

/* Bytes of text fed to json-c between two polls for cancellation */
#define XGB_FEED_CHUNK	(1 << 20)

/*
 * A per-node array of a tree: json-c's, or the scalars of a tree read
 * straight from the text (see XgbGetFlatTree)
 */
typedef struct XgbArray
{
	bool		present;
	int64_t		length;
	json_object *json;			/* json-c's array, or NULL */
	const JsonScalar *scalars;	/* else its entries, */
	const char *base;			/* whose offsets count from base */
} XgbArray;

/* The per-node arrays of one tree, each checked to hold num_nodes entries */
typedef struct XgbTree
{
	int32_t		index;			/* position in the model (for messages) */
	char		where[32];		/* "tree <index>" */
	int32_t		num_nodes;
	XgbArray	left;
	XgbArray	right;
	XgbArray	split_indices;
	XgbArray	split_conditions;
	XgbArray	default_left;
	XgbArray	split_type;		/* optional */
	XgbArray	categories;		/* the four category arrays are optional */
	XgbArray	categories_nodes;
	XgbArray	categories_segments;
	XgbArray	categories_sizes;
	int64_t		num_categorical;	/* entries of categories_nodes */
} XgbTree;

/* How trees are read (tests compare the three) */
static XgboostReadMode xgb_read_mode = XGBOOST_READ_FLAT;

/* Where the trees come from: the parsed "trees" array, or the text */
typedef struct XgbTrees
{
	const JsonTreesSpan *span;	/* where the scan found them; NULL if not */
	const char *text;
	size_t		len;
	json_object *array;			/* the parsed array, when not streamed */
	json_tokener *tok;			/* streamed: parses one tree at a time */
	size_t		pos;			/* streamed: where the previous tree ended */
	JsonFlat	flat;			/* streamed: the tree read straight from the text */
	DecodeBudget *budget;
	int64_t		tree_cost;		/* charged for the tree json-c holds now */
	uint32_t	ticks;			/* cancel polls (CancelTick) */
} XgbTrees;

/* The node arrays growing as trees are read, in the order of the text */
typedef struct XgbBuild
{
	int64_t		num_nodes;
	int64_t		node_capacity;
	int64_t		num_words;		/* category words used */
	int64_t		word_capacity;
	int32_t    *order;			/* order[position] = entry of the trees array */
	float	   *weight;			/* weight[position]: dart's weight_drop, or 1 */
	int32_t    *walk;			/* scratch for XgbDropUnreached: 2 per node */
	int64_t		walk_capacity;
	DecodeBudget *budget;
	uint32_t   *ticks;			/* the XgbTrees' cancel polls */
} XgbBuild;

/*
 * Parse the whole text as one JSON value, charging json-c's bound for it
 * (*cost); NULL with a syntax error if it is not one
 */
static json_object *
XgbParseText(const char *text, size_t len, DecodeBudget *budget, int64_t *cost,
			 SilvanStatus *status)
{
	json_tokener *tok;
	json_object *root = NULL;
	enum json_tokener_error err = json_tokener_continue;
	size_t		done = 0;
	size_t		end = 0;

	*cost = JsonTextCost(text, len);
	if (*cost < 0)
	{
		*cost = 0;
		StatusCanceled(status, "parsing the model");
		return NULL;
	}
	if (!DecodeCharge(budget, *cost, "the whole document through json-c", status))
	{
		*cost = 0;
		return NULL;
	}
	if ((tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH)) == NULL)
	{
		StatusNoMemory(status, "a JSON parser");
		return NULL;
	}
	while (done < len && err == json_tokener_continue)
	{
		int			chunk = len - done > XGB_FEED_CHUNK ? XGB_FEED_CHUNK : (int) (len - done);

		if (done > 0 && CancelRequested())
		{
			json_tokener_free(tok);
			StatusCanceled(status, "parsing the model");
			return NULL;
		}
		root = json_tokener_parse_ex(tok, text + done, chunk);
		err = json_tokener_get_error(tok);
		end = done + json_tokener_get_parse_end(tok);
		done += chunk;
	}
	if (root == NULL || err != json_tokener_success)
	{
		StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid XGBoost model JSON",
				   err == json_tokener_continue || len == 0 ?
				   "The JSON text ends before the document is complete." :
				   "The JSON text is malformed near byte %zu: %s.",
				   end, json_tokener_error_desc(err));
		json_object_put(root);
		json_tokener_free(tok);
		return NULL;
	}
	json_tokener_free(tok);
	for (; end < len; end++)
		if (!strchr(" \t\r\n", text[end]) || text[end] == '\0')
		{
			json_object_put(root);
			StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid XGBoost model JSON",
					   "Unexpected text follows the JSON document at byte %zu.", end);
			return NULL;
		}
	return root;
}

/*
 * Feed text to a tokener a chunk at a time, polling for cancellation in
 * between (*canceled); the value once it is complete
 */
static json_object *
XgbFeed(json_tokener *tok, const char *text, size_t len, bool *canceled)
{
	json_object *value = NULL;
	size_t		done = 0;

	do
	{
		int			chunk = len - done > XGB_FEED_CHUNK ? XGB_FEED_CHUNK : (int) (len - done);

		if (done > 0 && CancelRequested())
		{
			*canceled = true;
			return NULL;
		}
		value = json_tokener_parse_ex(tok, text + done, chunk);
		done += chunk;
	} while (done < len && json_tokener_get_error(tok) == json_tokener_continue);
	return value;
}

/*
 * Parse the document with the scanned trees array left out (an empty one
 * in its place); NULL if json-c does not agree with the scan or a cancel
 * request stopped it (*canceled)
 */
static json_object *
XgbParseSkeleton(const char *text, size_t len, const JsonTreesSpan *span, bool *canceled)
{
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	json_object *root = NULL;

	if (tok == NULL)
		return NULL;
	if (XgbFeed(tok, text, span->start, canceled) == NULL && !*canceled &&
		json_tokener_get_error(tok) == json_tokener_continue &&
		XgbFeed(tok, "[]", 2, canceled) == NULL &&
		json_tokener_get_error(tok) == json_tokener_continue)
		root = XgbFeed(tok, text + span->end, len - span->end, canceled);
	if (root != NULL && json_tokener_get_error(tok) != json_tokener_success)
	{
		json_object_put(root);
		root = NULL;
	}
	json_tokener_free(tok);
	return root;
}

/* Fill in an array's length and presence from its json-c array (or NULL) */
static void
XgbArrayFromJson(XgbArray *array)
{
	array->present = array->json != NULL;
	array->length = array->json ? (int64_t) json_object_array_length(array->json) : 0;
	array->scalars = NULL;
	array->base = NULL;
}

/* Fetch a per-node array of a tree and check it has num_nodes entries */
static bool
XgbNodeArray(json_object *tree_json, const char *key, bool required,
			 XgbTree *tree, XgbArray *out, SilvanStatus *status)
{
	size_t		n;

	memset(out, 0, sizeof(*out));
	if (!(required ? (out->json = XgbMember(tree_json, key, json_type_array, tree->where, status)) != NULL
		  : XgbOptionalMember(tree_json, key, json_type_array, tree->where, &out->json, status)))
		return false;
	if (out->json == NULL)
		return true;
	out->present = true;
	out->length = json_object_array_length(out->json);
	n = (size_t) out->length;
	if (n != (size_t) tree->num_nodes)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"%s\" of tree %d has %zu entries; expected %d.",
						  key, tree->index, n, tree->num_nodes);
	return true;
}

/* Fetch the optional category arrays of a tree and check they agree */
static bool
XgbCategoryArrays(json_object *tree_json, XgbTree *tree, SilvanStatus *status)
{
	XgbArray   *arrays[3] = {&tree->categories_nodes, &tree->categories_segments,
	&tree->categories_sizes};
	const char *names[3] = {"categories_nodes", "categories_segments", "categories_sizes"};

	if (!XgbOptionalMember(tree_json, "categories", json_type_array, tree->where,
						   &tree->categories.json, status))
		return false;
	XgbArrayFromJson(&tree->categories);
	tree->num_categorical = 0;
	for (int i = 0; i < 3; i++)
	{
		size_t		n;

		if (!XgbOptionalMember(tree_json, names[i], json_type_array, tree->where,
							   &arrays[i]->json, status))
			return false;
		XgbArrayFromJson(arrays[i]);
		n = (size_t) arrays[i]->length;
		if (i == 0)
			tree->num_categorical = (int64_t) n;
		else if ((int64_t) n != tree->num_categorical)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
							  "Field \"%s\" of tree %d has %zu entries; expected %lld.",
							  names[i], tree->index, n, (long long) tree->num_categorical);
	}
	if (tree->num_categorical > 0 && (!tree->categories.present || !tree->split_type.present))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Tree %d lists categorical nodes but lacks field \"%s\".",
						  tree->index, !tree->categories.present ? "categories" : "split_type");
	return true;
}

/* Check tree_param and fetch every per-node array of one tree */
static bool
XgbGetTree(json_object *tree_json, int32_t index, XgbTree *tree,
		   SilvanStatus *status)
{
	json_object *param;
	char		where[64];
	int64_t		num_nodes;
	int64_t		leaf_vector;

	memset(tree, 0, sizeof(*tree));
	tree->index = index;
	snprintf(tree->where, sizeof(tree->where), "tree %d", index);
	if (!json_object_is_type(tree_json, json_type_object))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Tree %d is %s; expected an object.", index,
						  XgbTypeName(json_object_get_type(tree_json)));
	if ((param = XgbMember(tree_json, "tree_param", json_type_object, tree->where, status)) == NULL)
		return false;
	snprintf(where, sizeof(where), "tree_param of tree %d", index);
	if (!XgbIntMember(param, "num_nodes", where, 1, INT32_MAX, &num_nodes, status) ||
		!XgbOptionalIntMember(param, "size_leaf_vector", where, 0, INT32_MAX, 0,
							  &leaf_vector, status))
		return false;
	if (leaf_vector > 1)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported XGBoost model",
						  "Field \"size_leaf_vector\" of tree %d is %lld; trees with vector leaves (multi-target) are not supported.",
						  index, (long long) leaf_vector);
	tree->num_nodes = (int32_t) num_nodes;
	return XgbNodeArray(tree_json, "left_children", true, tree, &tree->left, status) &&
		XgbNodeArray(tree_json, "right_children", true, tree, &tree->right, status) &&
		XgbNodeArray(tree_json, "split_indices", true, tree, &tree->split_indices, status) &&
		XgbNodeArray(tree_json, "split_conditions", true, tree, &tree->split_conditions, status) &&
		XgbNodeArray(tree_json, "default_left", true, tree, &tree->default_left, status) &&
		XgbNodeArray(tree_json, "split_type", false, tree, &tree->split_type, status) &&
		XgbCategoryArrays(tree_json, tree, status);
}

/* Copy a scalar's text into buf, NUL-terminated */
static const char *
XgbScalarText(const XgbArray *array, const JsonScalar *scalar, char *buf)
{
	memcpy(buf, array->base + scalar->offset, scalar->len);
	buf[scalar->len] = '\0';
	return buf;
}

/* Entry i of an array as an integer, read as XgbToInt64 reads json-c's */
static bool
XgbEntryInt64(const XgbArray *array, int64_t i, int64_t *out)
{
	char		buf[JSON_FLAT_MAX_TOKEN + 1];
	const JsonScalar *sc;
	double		d;

	if (array->json != NULL)
		return XgbToInt64(json_object_array_get_idx(array->json, i), out);
	if (i < 0 || i >= array->length)
		return false;
	sc = &array->scalars[i];
	XgbScalarText(array, sc, buf);
	switch (sc->kind)
	{
		case JSON_FLAT_INT:
			*out = strtoll(buf, NULL, 10);
			return true;
		case JSON_FLAT_DOUBLE:
			d = strtod(buf, NULL);
			if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != floor(d))
				return false;
			*out = (int64_t) d;
			return true;
		case JSON_FLAT_STRING:
			return XgbTextToInt64(buf, out);
		default:
			return false;
	}
}

/*
 * Entry i of an array as a float, read as XgbToFloat reads json-c's: an
 * integer from its value (json-c prints it again, so "-0" is 0), any
 * other number or a string from its text
 */
static bool
XgbEntryFloat(const XgbArray *array, int64_t i, float *out)
{
	char		buf[JSON_FLAT_MAX_TOKEN + 1];
	const JsonScalar *sc;
	char	   *end;

	if (array->json != NULL)
		return XgbToFloat(json_object_array_get_idx(array->json, i), out);
	if (i < 0 || i >= array->length)
		return false;
	sc = &array->scalars[i];
	XgbScalarText(array, sc, buf);
	if (sc->kind == JSON_FLAT_INT)
	{
		*out = (float) strtoll(buf, NULL, 10);
		return true;
	}
	if (sc->kind != JSON_FLAT_DOUBLE && sc->kind != JSON_FLAT_STRING)
		return false;
	*out = strtof(buf, &end);
	return end != buf && *end == '\0';
}

/* Is entry i of an array a boolean?  Its value in *value */
static bool
XgbEntryBool(const XgbArray *array, int64_t i, bool *value)
{
	json_object *entry;

	if (array->json == NULL)
	{
		if (i < 0 || i >= array->length || array->scalars[i].kind != JSON_FLAT_BOOL)
			return false;
		*value = array->base[array->scalars[i].offset] == 't';
		return true;
	}
	entry = json_object_array_get_idx(array->json, i);
	if (!json_object_is_type(entry, json_type_boolean))
		return false;
	*value = json_object_get_boolean(entry);
	return true;
}

/* Read entry i of an integer array, within [lo, hi] */
static bool
XgbArrayInt(const XgbArray *array, size_t i, const char *key, int32_t tree,
			int64_t lo, int64_t hi, int64_t *out, SilvanStatus *status)
{
	if (!XgbEntryInt64(array, (int64_t) i, out))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Entry %zu of field \"%s\" of tree %d is not an integer.",
						  i, key, tree);
	if (*out < lo || *out > hi)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Entry %zu of field \"%s\" of tree %d is %lld; expected %lld to %lld.",
						  i, key, tree, (long long) *out, (long long) lo, (long long) hi);
	return true;
}

/* Read entry i of a float array */
static bool
XgbArrayFloat(const XgbArray *array, size_t i, const char *key, int32_t tree,
			  float *out, SilvanStatus *status)
{
	if (!XgbEntryFloat(array, (int64_t) i, out))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Entry %zu of field \"%s\" of tree %d is not a number.",
						  i, key, tree);
	return true;
}

/* Is node i a split marked categorical? */
static bool
XgbIsCategorical(const XgbTree *tree, int32_t i, SilvanStatus *status,
				 bool *categorical)
{
	int64_t		left;
	int64_t		type = 0;

	if (!XgbArrayInt(&tree->left, i, "left_children", tree->index, -1,
					 INT32_MAX, &left, status) ||
		(tree->split_type.present &&
		 !XgbArrayInt(&tree->split_type, i, "split_type", tree->index, 0, 1,
					  &type, status)))
		return false;
	*categorical = left != -1 && type == 1;
	return true;
}

/*
 * Check category list k of a tree (its node, its bounds and every value)
 * and return the node it belongs to and the bitset words it needs.
 */
static bool
XgbCategoryList(const XgbTree *tree, int64_t k, int64_t *node, int64_t *begin,
				int64_t *size, int32_t *words, SilvanStatus *status)
{
	int64_t		total = tree->categories.length;
	int64_t		max = -1;

	if (!XgbArrayInt(&tree->categories_nodes, k, "categories_nodes", tree->index,
					 0, tree->num_nodes - 1, node, status) ||
		!XgbArrayInt(&tree->categories_segments, k, "categories_segments",
					 tree->index, 0, total, begin, status) ||
		!XgbArrayInt(&tree->categories_sizes, k, "categories_sizes", tree->index,
					 0, total - *begin, size, status))
		return false;
	for (int64_t j = *begin; j < *begin + *size; j++)
	{
		int64_t		c;

		if (!XgbArrayInt(&tree->categories, j, "categories", tree->index, 0,
						 FOREST_MAX_CATEGORY - 1, &c, status))
			return false;
		if (c > max)
			max = c;
	}
	*words = max < 0 ? 0 : (int32_t) (max / 32 + 1);
	return true;
}

/*
 * Match categorical splits to category lists: the k-th categorical split,
 * in node order, must be categories_nodes[k].  Adds up the words needed.
 */
static bool
XgbCountCategoryWords(const XgbTree *tree, int64_t *words, uint32_t *ticks,
					  SilvanStatus *status)
{
	int64_t		k = 0;

	for (int32_t i = 0; i < tree->num_nodes; i++)
	{
		bool		categorical;
		int64_t		node,
					begin,
					size;
		int32_t		need;

		if (CancelTick(ticks))
			return StatusCanceled(status, "parsing the model");
		if (!XgbIsCategorical(tree, i, status, &categorical))
			return false;
		if (!categorical)
			continue;
		if (k >= tree->num_categorical)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
							  "Node %d of tree %d is a categorical split but has no entry in field \"categories_nodes\".",
							  i, tree->index);
		if (!XgbCategoryList(tree, k, &node, &begin, &size, &need, status))
			return false;
		if (node != i)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
							  "Entry %lld of field \"categories_nodes\" of tree %d is %lld; expected categorical node %d.",
							  (long long) k, tree->index, (long long) node, i);
		*words += need;
		k++;
	}
	if (k != tree->num_categorical)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"categories_nodes\" of tree %d has %lld entries; the tree has %lld categorical splits.",
						  tree->index, (long long) tree->num_categorical, (long long) k);
	return true;
}

/* Fill in a categorical node: set the bits of its category list k */
static bool
XgbFillCategorical(Forest *forest, const XgbTree *tree, int64_t k,
				   ForestNode *node, int64_t *word_cursor, SilvanStatus *status)
{
	int64_t		node_index,
				begin,
				size;
	int32_t		words;
	uint32_t   *bits;

	if (!XgbCategoryList(tree, k, &node_index, &begin, &size, &words, status))
		return false;
	if (words > forest->num_category_words - *word_cursor)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "category sets overflow",
						  "Tree %d needs more category words than were counted.", tree->index);
	node->kind = FOREST_NODE_CATEGORICAL;
	node->category_in_left = 0;
	node->category_offset = *word_cursor;
	node->category_words = words;
	node->threshold = 0.0;
	bits = forest->category_words + *word_cursor;
	for (int64_t j = begin; j < begin + size; j++)
	{
		int64_t		c = 0;

		XgbEntryInt64(&tree->categories, j, &c);
		bits[c / 32] |= UINT32_C(1) << (c % 32);
	}
	*word_cursor += words;
	return true;
}

/* Fill in node i of a tree as a leaf (weight scales dart trees) */
static bool
XgbFillLeaf(const XgbTree *tree, int32_t i, int64_t right, float weight,
			ForestNode *node, SilvanStatus *status)
{
	float		value;

	if (right != -1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Node %d of tree %d has left child -1 but right child %lld.",
						  i, tree->index, (long long) right);
	if (!XgbArrayFloat(&tree->split_conditions, i, "split_conditions",
					   tree->index, &value, status))
		return false;
	if (isnan(value))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Leaf value of node %d of tree %d (field \"split_conditions\") is NaN.",
						  i, tree->index);
	node->kind = FOREST_NODE_LEAF;
	node->feature = -1;
	node->left = -1;
	node->right = -1;
	node->leaf_value = (float) (value * weight);
	return true;
}

/* Read the default_left flag of node i: a boolean or 0/1 */
static bool
XgbDefaultLeft(const XgbTree *tree, int32_t i, uint8_t *out, SilvanStatus *status)
{
	bool		value;
	int64_t		flag;

	if (XgbEntryBool(&tree->default_left, i, &value))
	{
		*out = value ? 1 : 0;
		return true;
	}
	if (!XgbArrayInt(&tree->default_left, i, "default_left", tree->index, 0, 1,
					 &flag, status))
		return false;
	*out = (uint8_t) flag;
	return true;
}

/* Fill in node i of a tree as a split, numeric or categorical */
static bool
XgbFillSplit(Forest *forest, const XgbTree *tree, int32_t i, int64_t left,
			 int64_t right, int64_t *category_k, int64_t *word_cursor,
			 ForestNode *node, SilvanStatus *status)
{
	int64_t		feature;
	float		threshold;
	bool		categorical;

	if (left >= tree->num_nodes || right < 0 || right >= tree->num_nodes)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Node %d of tree %d has children %lld and %lld; the tree has %d nodes.",
						  i, tree->index, (long long) left, (long long) right,
						  tree->num_nodes);
	if (!XgbArrayInt(&tree->split_indices, i, "split_indices", tree->index, 0,
					 forest->num_features - 1, &feature, status) ||
		!XgbDefaultLeft(tree, i, &node->default_left, status) ||
		!XgbIsCategorical(tree, i, status, &categorical))
		return false;
	node->feature = (int32_t) feature;
	node->left = (int32_t) left;
	node->right = (int32_t) right;
	node->missing = FOREST_MISSING_NAN;
	node->compare = FOREST_CMP_LT;
	if (categorical)
		return XgbFillCategorical(forest, tree, (*category_k)++, node,
								  word_cursor, status);
	if (!XgbArrayFloat(&tree->split_conditions, i, "split_conditions",
					   tree->index, &threshold, status))
		return false;
	if (isnan(threshold))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Threshold of node %d of tree %d (field \"split_conditions\") is NaN.",
						  i, tree->index);
	node->kind = FOREST_NODE_NUMERIC;
	node->threshold = threshold;
	return true;
}

/* Fill in every node of one tree */
static bool
XgbFillTree(Forest *forest, const XgbTree *tree, ForestNode *nodes,
			float weight, int64_t *word_cursor, uint32_t *ticks, SilvanStatus *status)
{
	int64_t		category_k = 0;

	for (int32_t i = 0; i < tree->num_nodes; i++)
	{
		int64_t		left,
					right;
		bool		ok;

		if (CancelTick(ticks))
			return StatusCanceled(status, "parsing the model");
		memset(&nodes[i], 0, sizeof(ForestNode));
		if (!XgbArrayInt(&tree->left, i, "left_children", tree->index, -1,
						 INT32_MAX, &left, status) ||
			!XgbArrayInt(&tree->right, i, "right_children", tree->index, -1,
						 INT32_MAX, &right, status))
			return false;
		if (left == -1)
			ok = XgbFillLeaf(tree, i, right, weight, &nodes[i], status);
		else
			ok = XgbFillSplit(forest, tree, i, left, right, &category_k,
							  word_cursor, &nodes[i], status);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * The model position of entry i of the "trees" array: XGBoost places each
 * tree by its "id" field, which must name each position exactly once.
 */
static bool
XgbTreePosition(json_object *tree, int32_t i, int32_t n, int32_t *order,
				int32_t *position, SilvanStatus *status)
{
	json_object *id;
	int64_t		pos = i;

	if (json_object_is_type(tree, json_type_object) &&
		json_object_object_get_ex(tree, "id", &id) && id != NULL &&
		(!XgbToInt64(id, &pos) || pos < 0 || pos >= n))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"id\" of tree %d is not an integer from 0 to %d.",
						  i, n - 1);
	if (order[pos] != -1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"id\" of tree %d repeats id %lld.", i, (long long) pos);
	order[pos] = i;
	*position = (int32_t) pos;
	return true;
}

/* Read each tree's group and dart weight */
static bool
XgbTreeGroups(Forest *forest, json_object *tree_info, json_object *weights,
			  float *weight, uint32_t *ticks, SilvanStatus *status)
{
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		int64_t		group;

		if (CancelTick(ticks))
			return StatusCanceled(status, "parsing the model");
		if (!XgbToInt64(json_object_array_get_idx(tree_info, t), &group) ||
			group < 0 || group >= forest->num_groups)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
							  "Entry %d of field \"tree_info\" is not an output group from 0 to %d.",
							  t, forest->num_groups - 1);
		forest->trees[t].group = (int32_t) group;
		weight[t] = 1.0f;
		if (weights != NULL &&
			(!XgbToFloat(json_object_array_get_idx(weights, t), &weight[t]) ||
			 !isfinite(weight[t])))
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
							  "Entry %d of field \"weight_drop\" is not a finite number.", t);
	}
	return true;
}

/*
 * Find the trees of the model: read from the text one at a time where the
 * scan found them under this model, else from the parsed "trees" array
 */
static bool
XgbOpenTrees(XgbTrees *src, json_object *model, bool dart, size_t *n,
			 SilvanStatus *status)
{
	json_object *trees = XgbMember(model, "trees", json_type_array,
								   "the gbtree model", status);

	if (trees == NULL)
		return false;
	if (src->span == NULL || src->span->under_gbtree != dart)
	{
		src->array = trees;
		*n = json_object_array_length(trees);
		return true;
	}
	if (json_object_array_length(trees) != 0)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "XGBoost reader lost the trees",
						  "The trees array json-c parsed is not the one the scan left out.");
	if ((src->tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH)) == NULL)
		return StatusNoMemory(status, "a JSON parser");
	src->pos = src->span->start + 1;
	*n = (size_t) src->span->count;
	return true;
}

/* Where entry i of a streamed trees array starts */
static size_t
XgbTreeStart(const XgbTrees *src, int32_t i)
{
	size_t		start = JsonScanSkipBlanks(src->text, src->len, src->pos);

	if (i > 0 && start < src->len && src->text[start] == ',')
		start = JsonScanSkipBlanks(src->text, src->len, start + 1);
	return start;
}

/* Release entry i of the trees array once it is read */
static void
XgbReleaseTree(XgbTrees *src, int32_t i, json_object *tree)
{
	if (src->array != NULL)
		json_object_array_put_idx(src->array, i, NULL);
	else
		json_object_put(tree);
	DecodeRelease(src->budget, src->tree_cost);
	src->tree_cost = 0;
}

/* Parse entry i of the trees array with json-c (entries come in order) */
static bool
XgbNextTree(XgbTrees *src, int32_t i, json_object **tree, SilvanStatus *status)
{
	size_t		start;
	size_t		end;
	int64_t		cost;
	bool		canceled = false;
	char		what[64];

	if (src->array != NULL)
	{
		*tree = json_object_array_get_idx(src->array, i);
		return true;
	}
	start = XgbTreeStart(src, i);
	end = JsonScanValueEnd(src->text, src->len, start, &cost);
	snprintf(what, sizeof(what), "tree %d through json-c", i);
	if (!DecodeCharge(src->budget, cost, what, status))
		return false;
	src->tree_cost = cost;
	json_tokener_reset(src->tok);
	*tree = XgbFeed(src->tok, src->text + start, end - start, &canceled);
	if (*tree == NULL && !canceled && json_tokener_get_error(src->tok) == json_tokener_continue)
		*tree = XgbFeed(src->tok, " ", 1, &canceled);	/* a number needs an end */
	/* json-c takes about as long per 16 bytes as the rest per node */
	if (canceled || CancelTickN(&src->ticks, (uint32_t) ((end - start) >> 4)))
	{
		XgbReleaseTree(src, i, *tree);
		return StatusCanceled(status, "parsing the model");
	}
	if (*tree == NULL || json_tokener_get_error(src->tok) != json_tokener_success)
	{
		XgbReleaseTree(src, i, *tree);
		return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid XGBoost model JSON",
						  "The JSON text is malformed in tree %d, from byte %zu.", i, start);
	}
	src->pos = end;
	return true;
}

/*
 * Make room for need entries of size bytes (at least one), not zeroed
 * (zeroing a large array at once would keep a cancel waiting: the node
 * loops zero each node before they fill it); the capacity doubles, but
 * not past limit, each growth charged (the old and the new array while
 * realloc moves it).  NULL when out of memory or
 * budget, the array left as it was.
 */
static void *
XgbGrow(void *array, int64_t *capacity, int64_t need, size_t size, int64_t limit,
		DecodeBudget *budget, const char *what, SilvanStatus *status)
{
	int64_t		cap = *capacity;
	char	   *grown;

	if (need < 1)
		need = 1;
	if (need <= cap)
		return array;
	while (cap < need)
		cap = cap < 1024 ? 1024 : cap * 2;
	if (cap > limit)
		cap = need;
	/* realloc may hold the old array and the new one at once: both are charged meanwhile */
	if (!DecodeCharge(budget, cap * (int64_t) size, what, status))
		return NULL;
	if ((grown = realloc(array, (size_t) cap * size)) == NULL)
	{
		DecodeRelease(budget, cap * (int64_t) size);
		StatusNoMemory(status, "the node arrays");
		return NULL;
	}
	DecodeRelease(budget, *capacity * (int64_t) size);
	*capacity = cap;
	return grown;
}

/*
 * Drop the nodes of the last tree read that no walk reaches: XGBoost's
 * pruner leaves the nodes it deletes in the tree (as leaves no split
 * points to).  The others keep their order; children are renumbered.
 */
static bool
XgbDropUnreached(Forest *forest, int32_t pos, XgbBuild *b, SilvanStatus *status)
{
	ForestTree *tree = &forest->trees[pos];
	ForestNode *nodes = forest->nodes + tree->first_node;
	int32_t		n = tree->num_nodes;
	int32_t		kept;
	int32_t    *walk;

	if (n == 1)
		return true;
	if ((walk = XgbGrow(b->walk, &b->walk_capacity, 2 * (int64_t) n, sizeof(int32_t),
						2 * (int64_t) INT32_MAX, b->budget, "the walk of a tree",
						status)) == NULL)
		return false;
	b->walk = walk;
	kept = ForestCompactTree(nodes, n, nodes, walk);
	memset(nodes + kept, 0, sizeof(ForestNode) * (size_t) (n - kept));
	tree->num_nodes = kept;
	b->num_nodes -= n - kept;
	return true;
}

/*
 * Convert one tree, at model position pos, filling in its nodes after
 * those of the trees read before it
 */
static bool
XgbLoadTree(Forest *forest, const XgbTree *tree, int32_t pos, XgbBuild *b,
			SilvanStatus *status)
{
	int64_t		words = 0;
	ForestNode *nodes;
	uint32_t   *bits;

	if (!XgbCountCategoryWords(tree, &words, b->ticks, status))
		return false;
	if (b->num_nodes + tree->num_nodes > FOREST_MAX_NODES ||
		b->num_words + words > FOREST_MAX_CATEGORY_WORDS)
		return StatusFail(status, SILVAN_ERROR_INVALID, "model too large",
						  "The model has more than %lld nodes or %lld category words.",
						  (long long) FOREST_MAX_NODES,
						  (long long) FOREST_MAX_CATEGORY_WORDS);
	if ((nodes = XgbGrow(forest->nodes, &b->node_capacity, b->num_nodes + tree->num_nodes,
						 sizeof(ForestNode), FOREST_MAX_NODES, b->budget, "the nodes",
						 status)) == NULL)
		return false;
	forest->nodes = nodes;
	if ((bits = XgbGrow(forest->category_words, &b->word_capacity, b->num_words + words,
						sizeof(uint32_t), FOREST_MAX_CATEGORY_WORDS, b->budget,
						"the category sets", status)) == NULL)
		return false;
	forest->category_words = bits;
	forest->num_category_words = b->word_capacity;
	memset(bits + b->num_words, 0, sizeof(uint32_t) * (size_t) words);
	forest->trees[pos].first_node = b->num_nodes;
	forest->trees[pos].num_nodes = tree->num_nodes;
	b->num_nodes += tree->num_nodes;
	return XgbFillTree(forest, tree, nodes + b->num_nodes - tree->num_nodes,
					   b->weight[pos], &b->num_words, b->ticks, status) &&
		XgbDropUnreached(forest, pos, b, status);
}

/* Take an array member of a flat tree: false if absent or of another kind */
static bool
XgbFlatArray(const JsonFlat *flat, const char *key, XgbArray *out)
{
	int64_t		m = JsonFlatFind(flat, -1, key);

	memset(out, 0, sizeof(*out));
	if (m < 0)
		return false;
	if (flat->members[m].kind != JSON_FLAT_ARRAY)
		return false;
	out->present = true;
	out->length = flat->members[m].count;
	out->scalars = flat->scalars + flat->members[m].first;
	out->base = flat->base;
	return true;
}

/* Read an integer scalar member of a flat tree as XgbToInt64 would */
static bool
XgbFlatInt(const JsonFlat *flat, int64_t parent, const char *key, int64_t *out)
{
	int64_t		m = JsonFlatFind(flat, parent, key);
	XgbArray	one = {true, 1, NULL, NULL, flat->base};

	if (m < 0 || flat->members[m].kind >= JSON_FLAT_ARRAY)
		return false;
	one.scalars = flat->scalars + flat->members[m].first;
	return XgbEntryInt64(&one, 0, out);
}

/* Fetch the optional split_type and category arrays of a flat tree */
static bool
XgbFlatCategories(const JsonFlat *flat, XgbTree *tree)
{
	XgbArray   *optional[] = {&tree->split_type, &tree->categories,
		&tree->categories_nodes, &tree->categories_segments, &tree->categories_sizes};
	const char *names[] = {"split_type", "categories", "categories_nodes",
	"categories_segments", "categories_sizes"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (JsonFlatFind(flat, -1, names[i]) >= 0 && !XgbFlatArray(flat, names[i], optional[i]))
			return false;
	tree->num_categorical = tree->categories_nodes.length;
	return (!tree->split_type.present || tree->split_type.length == tree->num_nodes) &&
		tree->categories_segments.length == tree->num_categorical &&
		tree->categories_sizes.length == tree->num_categorical &&
		(tree->num_categorical == 0 ||
		 (tree->categories.present && tree->split_type.present));
}

/*
 * Fetch a tree's arrays from its flat reading, as XgbGetTree does from
 * json-c's; false (and no status) at anything XgbGetTree would refuse, so
 * that json-c reads the tree again and the error is XgbGetTree's own
 */
static bool
XgbGetFlatTree(const JsonFlat *flat, int32_t index, XgbTree *tree)
{
	int64_t		param = JsonFlatFind(flat, -1, "tree_param");
	int64_t		num_nodes;
	int64_t		leaf_vector = 0;
	XgbArray   *required[] = {&tree->left, &tree->right, &tree->split_indices,
	&tree->split_conditions, &tree->default_left};
	const char *names[] = {"left_children", "right_children", "split_indices",
	"split_conditions", "default_left"};

	memset(tree, 0, sizeof(*tree));
	tree->index = index;
	snprintf(tree->where, sizeof(tree->where), "tree %d", index);
	if (param < 0 || flat->members[param].kind != JSON_FLAT_OBJECT ||
		!XgbFlatInt(flat, param, "num_nodes", &num_nodes) ||
		num_nodes < 1 || num_nodes > INT32_MAX ||
		(JsonFlatFind(flat, param, "size_leaf_vector") >= 0 &&
		 (!XgbFlatInt(flat, param, "size_leaf_vector", &leaf_vector) ||
		  leaf_vector < 0 || leaf_vector > 1)))
		return false;
	tree->num_nodes = (int32_t) num_nodes;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!XgbFlatArray(flat, names[i], required[i]) || required[i]->length != num_nodes)
			return false;
	return XgbFlatCategories(flat, tree);
}

/*
 * Read entry i straight from the text when it is a flat object of the
 * usual shape whose id is good; false (and no status) otherwise
 */
static bool
XgbReadFlatTree(XgbTrees *src, int32_t i, int32_t n, int32_t *order,
				XgbTree *tree, int32_t *position)
{
	size_t		end;
	int64_t		pos = i;

	if (src->array != NULL || xgb_read_mode != XGBOOST_READ_FLAT ||
		!JsonReadFlat(src->text, src->len, XgbTreeStart(src, i), &src->flat, &end) ||
		(JsonFlatFind(&src->flat, -1, "id") >= 0 &&
		 !XgbFlatInt(&src->flat, -1, "id", &pos)) ||
		pos < 0 || pos >= n || order[pos] != -1 ||
		!XgbGetFlatTree(&src->flat, (int32_t) pos, tree))
		return false;
	order[pos] = i;
	*position = (int32_t) pos;
	src->pos = end;
	return true;
}

/* Read and convert entry i of the trees array: straight from the text, or through json-c */
static bool
XgbLoadEntry(Forest *forest, XgbTrees *src, int32_t i, XgbBuild *b,
			 SilvanStatus *status)
{
	XgbTree		tree;
	json_object *tree_json;
	int32_t		pos = 0;
	bool		ok;

	if (XgbReadFlatTree(src, i, forest->num_trees, b->order, &tree, &pos))
		return XgbLoadTree(forest, &tree, pos, b, status);
	if (src->flat.over_budget)
		return DecodeBudgetFail(src->budget, status);
	if (src->flat.canceled)
		return StatusCanceled(status, "parsing the model");
	if (!XgbNextTree(src, i, &tree_json, status))
		return false;
	ok = XgbTreePosition(tree_json, i, forest->num_trees, b->order, &pos, status) &&
		XgbGetTree(tree_json, pos, &tree, status) &&
		XgbLoadTree(forest, &tree, pos, b, status);
	XgbReleaseTree(src, i, tree_json);
	return ok;
}

/* Trim the grown arrays to what the trees use, giving back the rest of their charge */
static void
XgbTrimArrays(Forest *forest, XgbBuild *b)
{
	int64_t		nodes_kept = b->num_nodes > 0 ? b->num_nodes : 1;
	int64_t		words_kept = b->num_words > 0 ? b->num_words : 1;
	ForestNode *nodes = realloc(forest->nodes, sizeof(ForestNode) * (size_t) nodes_kept);
	uint32_t   *bits = realloc(forest->category_words, sizeof(uint32_t) * (size_t) words_kept);

	if (nodes != NULL)
	{
		forest->nodes = nodes;
		DecodeRelease(b->budget, (b->node_capacity - nodes_kept) * (int64_t) sizeof(ForestNode));
		b->node_capacity = nodes_kept;
	}
	if (bits != NULL)
	{
		forest->category_words = bits;
		DecodeRelease(b->budget, (b->word_capacity - words_kept) * (int64_t) sizeof(uint32_t));
		b->word_capacity = words_kept;
	}
	forest->num_nodes = b->num_nodes;
	forest->num_category_words = b->num_words;
}

/*
 * Lay the trees out in model order when their "id" fields reorder them
 * (they were filled in in the order of the trees array)
 */
static bool
XgbPlaceTrees(Forest *forest, const int32_t *order, DecodeBudget *budget,
			  SilvanStatus *status)
{
	ForestNode *placed;
	int64_t		next = 0;
	int32_t		t = 0;
	int64_t		bytes = (int64_t) sizeof(ForestNode) * (forest->num_nodes > 0 ? forest->num_nodes : 1);

	while (t < forest->num_trees && order[t] == t)
		t++;
	if (t == forest->num_trees)
		return true;
	if (!DecodeCharge(budget, bytes, "the nodes in model order", status))
		return false;
	placed = malloc((size_t) bytes);
	if (placed == NULL)
		return StatusNoMemory(status, "the node array");
	for (t = 0; t < forest->num_trees; t++)
	{
		ForestTree *tree = &forest->trees[t];

		memcpy(placed + next, forest->nodes + tree->first_node,
			   sizeof(ForestNode) * (size_t) tree->num_nodes);
		tree->first_node = next;
		next += tree->num_nodes;
	}
	free(forest->nodes);
	forest->nodes = placed;
	DecodeRelease(budget, bytes);
	return true;
}

/*
 * Read every tree in the order of the trees array, one at a time: each is
 * checked, converted into the growing node arrays and released before the
 * next, so at most one tree's JSON is alive when the trees are streamed
 */
static bool
XgbLoadTrees(Forest *forest, XgbTrees *src, XgbBuild *b, SilvanStatus *status)
{
	ForestNode *nodes;
	uint32_t   *bits;

	for (int32_t i = 0; i < forest->num_trees; i++)
	{
		if (CancelTick(b->ticks))
			return StatusCanceled(status, "parsing the model");
		if (!XgbLoadEntry(forest, src, i, b, status))
			return false;
	}
	if ((nodes = XgbGrow(forest->nodes, &b->node_capacity, 1, sizeof(ForestNode),
						 FOREST_MAX_NODES, b->budget, "the nodes", status)) == NULL)
		return false;
	forest->nodes = nodes;
	if ((bits = XgbGrow(forest->category_words, &b->word_capacity, 1, sizeof(uint32_t),
						FOREST_MAX_CATEGORY_WORDS, b->budget, "the category sets",
						status)) == NULL)
		return false;
	forest->category_words = bits;
	XgbTrimArrays(forest, b);
	return XgbPlaceTrees(forest, b->order, b->budget, status);
}

/* Check the tree counts agree, then read all trees */
static bool
XgbReadTrees(Forest *forest, json_object *model, json_object *weights,
			 XgbTrees *src, SilvanStatus *status)
{
	json_object *tree_info;
	json_object *param;
	int64_t		declared;
	size_t		n = 0;
	XgbBuild	b = {0};
	bool		ok;
	int64_t		per_tree = sizeof(ForestTree) + sizeof(int32_t) + sizeof(float);

	b.budget = src->budget;
	b.ticks = &src->ticks;
	if (!XgbOpenTrees(src, model, weights != NULL, &n, status) ||
		(tree_info = XgbMember(model, "tree_info", json_type_array, "the gbtree model", status)) == NULL ||
		(param = XgbMember(model, "gbtree_model_param", json_type_object, "the gbtree model", status)) == NULL ||
		!XgbIntMember(param, "num_trees", "gbtree_model_param", 0, FOREST_MAX_TREES,
					  &declared, status))
		return false;
	if (n != (size_t) declared)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"trees\" has %zu entries; field \"num_trees\" is %lld.",
						  n, (long long) declared);
	if (json_object_array_length(tree_info) != n)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"tree_info\" has %zu entries; expected %zu.",
						  json_object_array_length(tree_info), n);
	if (weights != NULL && json_object_array_length(weights) != n)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"weight_drop\" has %zu entries; expected %zu.",
						  json_object_array_length(weights), n);
	/* the trees stay charged; their order and weights are given back */
	if (!DecodeCharge(src->budget, per_tree * (int64_t) n + 3 * DECODE_CHUNK_OVERHEAD,
					  "the trees", status) ||
		!ForestAllocTrees(forest, (int32_t) n, status))
		return false;
	b.order = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
	b.weight = malloc(sizeof(float) * (n > 0 ? n : 1));
	if (b.order == NULL || b.weight == NULL)
		ok = StatusNoMemory(status, "the tree order");
	else
	{
		for (size_t t = 0; t < n; t++)
			b.order[t] = -1;
		ok = XgbTreeGroups(forest, tree_info, weights, b.weight, b.ticks, status) &&
			XgbLoadTrees(forest, src, &b, status);
	}
	free(b.order);
	free(b.weight);
	free(b.walk);
	DecodeRelease(src->budget, (int64_t) (sizeof(int32_t) + sizeof(float)) * (int64_t) n +
				  b.walk_capacity * (int64_t) sizeof(int32_t));
	return ok;
}

/* Explain a document without "learner": perhaps another library's JSON */
static bool
XgbNotALearner(json_object *root, SilvanStatus *status)
{
	json_object *unused;

	if (json_object_is_type(root, json_type_object) &&
		json_object_object_get_ex(root, "tree_info", &unused) &&
		json_object_object_get_ex(root, "num_tree_per_iteration", &unused))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
						  "This looks like a LightGBM JSON dump (dump_model()); save the model with save_model() as text and load that instead.");
	if (json_object_is_type(root, json_type_array))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
						  "This looks like an XGBoost JSON dump (dump_model()), which lacks the objective and base score; save the model with save_model(\"model.json\") instead.");
	return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
					  "Field \"learner\" is missing; the text is not an XGBoost save_model() JSON document.");
}

/* Read the parsed document into a new forest */
static Forest *
XgbReadDocument(json_object *root, XgbTrees *src, SilvanStatus *status)
{
	json_object *learner;
	json_object *model;
	json_object *weights;
	Forest	   *forest;

	if (!json_object_is_type(root, json_type_object) ||
		!json_object_object_get_ex(root, "learner", &learner))
	{
		XgbNotALearner(root, status);
		return NULL;
	}
	if ((learner = XgbMember(root, "learner", json_type_object, "the document", status)) == NULL ||
		(forest = ForestCreate(status)) == NULL)
		return NULL;
	forest->source = FOREST_SOURCE_XGBOOST;
	forest->precision = FOREST_FLOAT32;
	forest->category_rule = FOREST_CATEGORY_NONNEGATIVE;
	forest->aggregate = FOREST_AGGREGATE_SUM;
	forest->base_margin_last = false;
	forest->average_output = false;
	forest->average_divisor = 1;
	if (XgbReadHeader(learner, forest, status) &&
		XgbReadFeatureStrings(learner, "feature_names", FOREST_FEATURE_NAMES, forest,
							  src->budget, status) &&
		XgbReadFeatureStrings(learner, "feature_types", FOREST_FEATURE_TYPES, forest,
							  src->budget, status) &&
		(model = XgbFindModel(learner, &weights, status)) != NULL &&
		XgbReadTrees(forest, model, weights, src, status))
		return forest;
	ForestFree(forest);
	return NULL;
}

/* Does the text look like XGBoost's binary UBJSON model format? */
static bool
XgbLooksLikeUbjson(const char *text, size_t len)
{
	return len > 2 && text[0] == '{' && strchr("iUIlL", text[1]) != NULL &&
		text[1] != '\0';
}

/*
 * Parse XGBoost save_model() JSON into a forest: the document without its
 * trees and then one tree at a time where the scan finds them, else the
 * whole document at once
 */
Forest *
ParseXgboostJson(const char *text, size_t len, DecodeBudget *budget, SilvanStatus *status)
{
	JsonTreesSpan span = {0};
	XgbTrees	src;
	json_object *root = NULL;
	Forest	   *forest;
	int64_t		cost = 0;
	bool		canceled = false;

	StatusClear(status);
	memset(&src, 0, sizeof(src));
	src.text = text;
	src.len = len;
	src.budget = budget;
	src.flat.budget = budget;
	if (XgbLooksLikeUbjson(text, len))
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
				   "This looks like XGBoost's binary UBJSON format; save the model with save_model(\"model.json\") instead.");
		return NULL;
	}
	if (xgb_read_mode != XGBOOST_READ_WHOLE && JsonScanTrees(text, len, &span))
	{
		if (!DecodeCharge(budget, span.skeleton_cost, "the document without its trees through json-c", status))
			return NULL;
		cost = span.skeleton_cost;
		root = XgbParseSkeleton(text, len, &span, &canceled);
		if (root != NULL)
			src.span = &span;
		else
		{
			DecodeRelease(budget, cost);
			cost = 0;
		}
	}
	if (canceled || span.canceled)
	{
		StatusCanceled(status, "parsing the model");
		return NULL;
	}
	if (root == NULL && (root = XgbParseText(text, len, budget, &cost, status)) == NULL)
		return NULL;
	forest = XgbReadDocument(root, &src, status);
	if (src.tok != NULL)
		json_tokener_free(src.tok);
	JsonFlatFree(&src.flat);
	json_object_put(root);
	DecodeRelease(budget, cost);
	return forest;
}

/* Tests: how to read trees; every mode gives the same forest or error */
void
ParseXgboostReadMode(XgboostReadMode mode)
{
	xgb_read_mode = mode;
}
