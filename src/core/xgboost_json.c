/*
 * xgboost_json.c
 *		Read XGBoost's save_model() JSON (1.x and 2.x layouts) into a Forest.
 *
 * The whole text is checked before anything is read, so truncated or
 * malformed text is a syntax error rather than a partial model.  We then
 * walk the learner: the model parameters (feature and class counts, the
 * base score), the objective (which fixes the task, the output transform
 * and how the base score becomes a margin), the booster (gbtree, or dart
 * with its per-tree weights) and finally the trees.
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
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "silvan/json_scan.h"
#include "silvan/parse.h"

/* How the base score (in output space) becomes a base margin */
typedef enum XgbMarginRule
{
	XGB_MARGIN_SAME,			/* the score is the margin */
	XGB_MARGIN_LOGIT,			/* -log(1/b - 1) */
	XGB_MARGIN_LOG				/* log(b) */
} XgbMarginRule;

/* What one XGBoost objective means for prediction */
typedef struct XgbObjective
{
	const char *name;
	ForestTask	task;
	ForestTransform transform;
	XgbMarginRule margin;
} XgbObjective;

/*
 * Checked against XGBoost 1.7.4's predict(output_margin=True) and predict()
 * for each objective.  binary:logitraw takes its base score as the margin
 * (as XGBoost 1.7 and 2.x do; some older versions applied the logit).
 * The transforms are each objective's PredTransform, computed in float as
 * XGBoost does (predict.c): survival:aft's is exp in double, rounded to
 * float, unlike the expf of reg:gamma, reg:tweedie, count:poisson and
 * survival:cox, so it has a transform of its own.
 */
static const XgbObjective xgb_objectives[] = {
	{"reg:squarederror", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"reg:linear", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"reg:squaredlogerror", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"reg:pseudohubererror", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"reg:absoluteerror", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"reg:logistic", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_SIGMOID, XGB_MARGIN_LOGIT},
	{"binary:logistic", FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID, XGB_MARGIN_LOGIT},
	{"binary:logitraw", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"binary:hinge", FOREST_TASK_BINARY, FOREST_TRANSFORM_HINGE, XGB_MARGIN_SAME},
	{"reg:gamma", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, XGB_MARGIN_LOG},
	{"reg:tweedie", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, XGB_MARGIN_LOG},
	{"count:poisson", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, XGB_MARGIN_LOG},
	{"rank:pairwise", FOREST_TASK_RANKING, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"rank:ndcg", FOREST_TASK_RANKING, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"rank:map", FOREST_TASK_RANKING, FOREST_TRANSFORM_IDENTITY, XGB_MARGIN_SAME},
	{"multi:softmax", FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SOFTMAX, XGB_MARGIN_SAME},
	{"multi:softprob", FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SOFTMAX, XGB_MARGIN_SAME},
	{"survival:cox", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP, XGB_MARGIN_LOG},
	{"survival:aft", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP_DOUBLE, XGB_MARGIN_LOG},
};

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
} XgbBuild;

/* Parse the whole text as one JSON value; NULL with a syntax error if not */
static json_object *
XgbParseText(const char *text, size_t len, SilvanStatus *status)
{
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	json_object *root = NULL;
	enum json_tokener_error err = json_tokener_continue;
	size_t		done = 0;
	size_t		end = 0;

	if (tok == NULL)
	{
		StatusNoMemory(status, "a JSON parser");
		return NULL;
	}
	while (done < len && err == json_tokener_continue)
	{
		int			chunk = len - done > (1 << 30) ? (1 << 30) : (int) (len - done);

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
 * Feed text to a tokener in pieces it can take; the value once it is
 * complete, and in *used (if not NULL) the bytes it took
 */
static json_object *
XgbFeed(json_tokener *tok, const char *text, size_t len, size_t *used)
{
	json_object *value = NULL;
	size_t		done = 0;
	size_t		end = 0;

	do
	{
		int			chunk = len - done > (1 << 30) ? (1 << 30) : (int) (len - done);

		value = json_tokener_parse_ex(tok, text + done, chunk);
		end = done + json_tokener_get_parse_end(tok);
		done += chunk;
	} while (done < len && json_tokener_get_error(tok) == json_tokener_continue);
	if (used != NULL)
		*used = end;
	return value;
}

/*
 * Parse the document with the scanned trees array left out (an empty one
 * in its place); NULL if json-c does not agree with the scan
 */
static json_object *
XgbParseSkeleton(const char *text, size_t len, const JsonTreesSpan *span)
{
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	json_object *root = NULL;

	if (tok == NULL)
		return NULL;
	if (XgbFeed(tok, text, span->start, NULL) == NULL &&
		json_tokener_get_error(tok) == json_tokener_continue &&
		XgbFeed(tok, "[]", 2, NULL) == NULL &&
		json_tokener_get_error(tok) == json_tokener_continue)
		root = XgbFeed(tok, text + span->end, len - span->end, NULL);
	if (root != NULL && json_tokener_get_error(tok) != json_tokener_success)
	{
		json_object_put(root);
		root = NULL;
	}
	json_tokener_free(tok);
	return root;
}

/* Name of a JSON type for messages */
static const char *
XgbTypeName(json_type type)
{
	switch (type)
	{
		case json_type_null:
			return "null";
		case json_type_boolean:
			return "a boolean";
		case json_type_double:
		case json_type_int:
			return "a number";
		case json_type_object:
			return "an object";
		case json_type_array:
			return "an array";
		case json_type_string:
			return "a string";
	}
	return "unknown";
}

/* Fetch member key of obj, which must exist and have the given type */
static json_object *
XgbMember(json_object *obj, const char *key, json_type type, const char *where,
		  SilvanStatus *status)
{
	json_object *value;

	if (!json_object_object_get_ex(obj, key, &value) || value == NULL)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
				   "Field \"%s\" is missing from %s.", key, where);
		return NULL;
	}
	if (!json_object_is_type(value, type))
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
				   "Field \"%s\" of %s is %s; expected %s.", key, where,
				   XgbTypeName(json_object_get_type(value)), XgbTypeName(type));
		return NULL;
	}
	return value;
}

/* Fetch an optional member: NULL when absent, else it must have the type */
static bool
XgbOptionalMember(json_object *obj, const char *key, json_type type,
				  const char *where, json_object **out, SilvanStatus *status)
{
	*out = NULL;
	if (!json_object_object_get_ex(obj, key, out) || *out == NULL)
	{
		*out = NULL;
		return true;
	}
	*out = XgbMember(obj, key, type, where, status);
	return *out != NULL;
}

/* Parse a whole string as a decimal integer */
static bool
XgbTextToInt64(const char *text, int64_t *out)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (end == text || *end != '\0' || errno != 0)
		return false;
	*out = v;
	return true;
}

/* Read an integer given as a JSON integer, an integral number or a string */
static bool
XgbToInt64(json_object *value, int64_t *out)
{
	double		d;

	switch (json_object_get_type(value))
	{
		case json_type_int:
			*out = json_object_get_int64(value);
			return true;
		case json_type_double:
			d = json_object_get_double(value);
			if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != floor(d))
				return false;
			*out = (int64_t) d;
			return true;
		case json_type_string:
			return XgbTextToInt64(json_object_get_string(value), out);
		default:
			return false;
	}
}

/* Read a float from a number's original text (or a numeric string) */
static bool
XgbToFloat(json_object *value, float *out)
{
	json_type	type = json_object_get_type(value);
	const char *text;
	char	   *end;

	if (type != json_type_double && type != json_type_int && type != json_type_string)
		return false;
	text = json_object_get_string(value);
	if (text == NULL)
		return false;
	*out = strtof(text, &end);
	return end != text && *end == '\0';
}

/* Read a required integer member within [lo, hi] */
static bool
XgbIntMember(json_object *obj, const char *key, const char *where, int64_t lo,
			 int64_t hi, int64_t *out, SilvanStatus *status)
{
	json_object *value;

	if (!json_object_object_get_ex(obj, key, &value) || value == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"%s\" is missing from %s.", key, where);
	if (!XgbToInt64(value, out))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"%s\" of %s is not an integer.", key, where);
	if (*out < lo || *out > hi)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"%s\" of %s is %lld; expected %lld to %lld.", key,
						  where, (long long) *out, (long long) lo, (long long) hi);
	return true;
}

/* Read an optional integer member within [lo, hi]; dflt when absent */
static bool
XgbOptionalIntMember(json_object *obj, const char *key, const char *where,
					 int64_t lo, int64_t hi, int64_t dflt, int64_t *out,
					 SilvanStatus *status)
{
	json_object *value;

	if (!json_object_object_get_ex(obj, key, &value) || value == NULL)
	{
		*out = dflt;
		return true;
	}
	return XgbIntMember(obj, key, where, lo, hi, out, status);
}

/* Count the values of a base_score string: one, or a bracketed list */
static int64_t
XgbCountScores(const char *text)
{
	int64_t		n = 1;

	for (const char *p = text; *p; p++)
		n += (*p == ',');
	return n;
}

/*
 * Parse base_score: "5E-1", or a bracketed list "[5E-1]" / "[a,b,...]" as
 * XGBoost 2.1 and later write it.  Returns a malloc'd array of *count values.
 */
static float *
XgbParseBaseScore(json_object *value, int32_t *count, SilvanStatus *status)
{
	const char *text = json_object_get_string(value);
	const char *p = text;
	int64_t		n = XgbCountScores(text);
	bool		bracketed = (*p == '[');
	float	   *scores;

	if (n > FOREST_MAX_GROUPS)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
				   "Field \"base_score\" of learner_model_param has %lld values; at most %d are supported.",
				   (long long) n, FOREST_MAX_GROUPS);
		return NULL;
	}
	if ((scores = malloc(sizeof(float) * n)) == NULL)
	{
		StatusNoMemory(status, "the base scores");
		return NULL;
	}
	p += bracketed;
	for (*count = 0; *count < n; (*count)++)
	{
		char	   *end;

		scores[*count] = strtof(p, &end);
		if (end == p)
			break;
		for (p = end; *p == ' '; p++);
		if (*count + 1 < n && *p++ != ',')
			break;
	}
	if (*count != n || (bracketed && *p++ != ']') || *p != '\0')
	{
		free(scores);
		StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
				   "Field \"base_score\" of learner_model_param is \"%.64s\"; expected a number or a list of numbers.",
				   text);
		return NULL;
	}
	return scores;
}

/* Turn one base score into a margin, in float arithmetic like XGBoost */
static bool
XgbScoreToMargin(XgbMarginRule rule, float b, const char *objective,
				 double *margin, SilvanStatus *status)
{
	if (!isfinite(b))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"base_score\" of learner_model_param is not finite.");
	if (rule == XGB_MARGIN_LOGIT && !(b > 0.0f && b < 1.0f))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"base_score\" is %g; objective \"%s\" needs a value in (0, 1).",
						  b, objective);
	if (rule == XGB_MARGIN_LOG && !(b > 0.0f))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"base_score\" is %g; objective \"%s\" needs a positive value.",
						  b, objective);
	if (rule == XGB_MARGIN_LOGIT)
		*margin = -logf(1.0f / b - 1.0f);
	else if (rule == XGB_MARGIN_LOG)
		*margin = logf(b);
	else
		*margin = b;
	return true;
}

/* Look up an objective by name; NULL if we do not support it */
static const XgbObjective *
XgbFindObjective(const char *name)
{
	for (size_t i = 0; i < sizeof(xgb_objectives) / sizeof(xgb_objectives[0]); i++)
		if (strcmp(xgb_objectives[i].name, name) == 0)
			return &xgb_objectives[i];
	return NULL;
}

/* Set task, transform, groups and base margins from the objective */
static bool
XgbApplyObjective(Forest *forest, const char *name, int64_t num_class,
				  const float *scores, int32_t num_scores, SilvanStatus *status)
{
	const XgbObjective *obj = XgbFindObjective(name);
	int32_t		groups = 1;

	if (obj == NULL)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported XGBoost objective",
						  "Objective \"%.64s\" is not supported.", name);
	snprintf(forest->objective, sizeof(forest->objective), "%s", obj->name);
	forest->task = obj->task;
	forest->transform = obj->transform;
	forest->sigmoid_alpha = 1.0;
	if (obj->task == FOREST_TASK_MULTICLASS)
	{
		groups = (int32_t) num_class;
		forest->num_classes = groups;
	}
	else if (num_class > 1)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported XGBoost model",
						  "Field \"num_class\" is %lld but objective \"%s\" has one output.",
						  (long long) num_class, obj->name);
	else
		forest->num_classes = obj->task == FOREST_TASK_BINARY ? 2 : 1;
	if (groups < 1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"num_class\" is %lld; objective \"%s\" needs at least 2 classes.",
						  (long long) num_class, obj->name);
	if (num_scores != 1 && num_scores != groups)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"base_score\" has %d values; expected 1 or %d.",
						  num_scores, groups);
	if (!ForestAllocBaseMargin(forest, groups, status))
		return false;
	for (int32_t g = 0; g < groups; g++)
		if (!XgbScoreToMargin(obj->margin, scores[num_scores == 1 ? 0 : g],
							  obj->name, &forest->base_margin[g], status))
			return false;
	return true;
}

/* Read the base scores; XGBoost's default 0.5 when absent */
static float *
XgbReadBaseScores(json_object *param, int32_t *count, SilvanStatus *status)
{
	json_object *value = NULL;
	float	   *scores;

	if (json_object_object_get_ex(param, "base_score", &value) && value != NULL)
	{
		if (json_object_is_type(value, json_type_string))
			return XgbParseBaseScore(value, count, status);
		if (!json_object_is_type(value, json_type_double) &&
			!json_object_is_type(value, json_type_int))
		{
			StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
					   "Field \"base_score\" of learner_model_param is not a number.");
			return NULL;
		}
	}
	if ((scores = malloc(sizeof(float))) == NULL)
	{
		StatusNoMemory(status, "the base scores");
		return NULL;
	}
	*count = 1;
	scores[0] = 0.5f;
	if (value != NULL)
		XgbToFloat(value, &scores[0]);
	return scores;
}

/* Read learner_model_param and the objective */
static bool
XgbReadHeader(json_object *learner, Forest *forest, SilvanStatus *status)
{
	json_object *param;
	json_object *objective;
	json_object *name;
	float	   *scores;
	int32_t		num_scores;
	int64_t		num_feature;
	int64_t		num_class;
	int64_t		num_target;
	bool		ok;

	if ((param = XgbMember(learner, "learner_model_param", json_type_object,
						   "learner", status)) == NULL ||
		(objective = XgbMember(learner, "objective", json_type_object,
							   "learner", status)) == NULL ||
		(name = XgbMember(objective, "name", json_type_string,
						  "learner.objective", status)) == NULL ||
		!XgbIntMember(param, "num_feature", "learner_model_param", 1,
					  FOREST_MAX_FEATURES, &num_feature, status) ||
		!XgbOptionalIntMember(param, "num_class", "learner_model_param", 0,
							  FOREST_MAX_GROUPS, 0, &num_class, status) ||
		!XgbOptionalIntMember(param, "num_target", "learner_model_param", 0,
							  INT32_MAX, 1, &num_target, status))
		return false;
	if (num_target > 1)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported XGBoost model",
						  "Field \"num_target\" is %lld; multi-target models are not supported.",
						  (long long) num_target);
	forest->num_features = (int32_t) num_feature;
	if ((scores = XgbReadBaseScores(param, &num_scores, status)) == NULL)
		return false;
	ok = XgbApplyObjective(forest, json_object_get_string(name), num_class,
						   scores, num_scores, status);
	free(scores);
	return ok;
}

/*
 * Read learner.feature_names or learner.feature_types, a list of strings
 * one per feature; absent or empty: the model has none
 */
static bool
XgbReadFeatureStrings(json_object *learner, const char *key, ForestFeatureField field,
					  Forest *forest, SilvanStatus *status)
{
	json_object *list;
	const char **strings;
	size_t	   *lengths;
	size_t		n;
	bool		ok = true;

	if (!XgbOptionalMember(learner, key, json_type_array, "learner", &list, status))
		return false;
	if (list == NULL || (n = json_object_array_length(list)) == 0)
		return true;
	if (n != (size_t) forest->num_features)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"%s\" has %zu entries; field \"num_feature\" is %d.",
						  key, n, forest->num_features);
	strings = malloc(sizeof(char *) * n);
	lengths = malloc(sizeof(size_t) * n);
	if (strings == NULL || lengths == NULL)
		ok = StatusNoMemory(status, "the feature names");
	for (size_t i = 0; ok && i < n; i++)
	{
		json_object *entry = json_object_array_get_idx(list, i);

		if (!json_object_is_type(entry, json_type_string))
			ok = StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
							"Entry %zu of field \"%s\" is %s; expected a string.",
							i, key, XgbTypeName(json_object_get_type(entry)));
		else
		{
			strings[i] = json_object_get_string(entry);
			lengths[i] = (size_t) json_object_get_string_len(entry);
		}
	}
	if (ok)
		ok = ForestSetFeatureStrings(forest, field, strings, lengths, (int64_t) n, status);
	free(strings);
	free(lengths);
	return ok;
}

/* Find the gbtree model object; for dart also its weight_drop array */
static json_object *
XgbFindModel(json_object *learner, json_object **weights, SilvanStatus *status)
{
	json_object *booster;
	json_object *name;
	const char *kind;

	*weights = NULL;
	if ((booster = XgbMember(learner, "gradient_booster", json_type_object,
							 "learner", status)) == NULL ||
		(name = XgbMember(booster, "name", json_type_string,
						  "learner.gradient_booster", status)) == NULL)
		return NULL;
	kind = json_object_get_string(name);
	if (strcmp(kind, "gbtree") == 0)
		return XgbMember(booster, "model", json_type_object,
						 "learner.gradient_booster", status);
	if (strcmp(kind, "dart") == 0)
	{
		json_object *gbtree;

		if ((gbtree = XgbMember(booster, "gbtree", json_type_object,
								"learner.gradient_booster", status)) == NULL ||
			(*weights = XgbMember(booster, "weight_drop", json_type_array,
								  "learner.gradient_booster", status)) == NULL)
			return NULL;
		return XgbMember(gbtree, "model", json_type_object,
						 "learner.gradient_booster.gbtree", status);
	}
	StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported XGBoost booster",
			   "Booster \"%.64s\" is not supported; only \"gbtree\" and \"dart\" are.",
			   kind);
	return NULL;
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
XgbCountCategoryWords(const XgbTree *tree, int64_t *words, SilvanStatus *status)
{
	int64_t		k = 0;

	for (int32_t i = 0; i < tree->num_nodes; i++)
	{
		bool		categorical;
		int64_t		node,
					begin,
					size;
		int32_t		need;

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
			float weight, int64_t *word_cursor, SilvanStatus *status)
{
	int64_t		category_k = 0;

	for (int32_t i = 0; i < tree->num_nodes; i++)
	{
		int64_t		left,
					right;
		bool		ok;

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
			  float *weight, SilvanStatus *status)
{
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		int64_t		group;

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

/* Parse entry i of the trees array with json-c (entries come in order) */
static bool
XgbNextTree(XgbTrees *src, int32_t i, json_object **tree, SilvanStatus *status)
{
	size_t		start;
	size_t		end;

	if (src->array != NULL)
	{
		*tree = json_object_array_get_idx(src->array, i);
		return true;
	}
	start = XgbTreeStart(src, i);
	json_tokener_reset(src->tok);
	if (start < src->len && src->text[start] == '{')
	{
		/* json-c stops where the object closes */
		*tree = XgbFeed(src->tok, src->text + start, src->span->end - start, &end);
		end += start;
	}
	else
	{
		end = JsonScanValueEnd(src->text, src->len, start);
		*tree = XgbFeed(src->tok, src->text + start, end - start, NULL);
		if (*tree == NULL && json_tokener_get_error(src->tok) == json_tokener_continue)
			*tree = XgbFeed(src->tok, " ", 1, NULL);	/* a number needs an end */
	}
	if (*tree == NULL || json_tokener_get_error(src->tok) != json_tokener_success)
	{
		json_object_put(*tree);
		return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid XGBoost model JSON",
						  "The JSON text is malformed in tree %d, from byte %zu.", i, start);
	}
	src->pos = end;
	return true;
}

/* Release entry i of the trees array once it is read */
static void
XgbReleaseTree(XgbTrees *src, int32_t i, json_object *tree)
{
	if (src->array != NULL)
		json_object_array_put_idx(src->array, i, NULL);
	else
		json_object_put(tree);
}

/*
 * Make room for need entries of size bytes (at least one), zeroed; the
 * capacity doubles, but not past limit.  NULL when out of memory, the
 * array left as it was.
 */
static void *
XgbGrow(void *array, int64_t *capacity, int64_t need, size_t size, int64_t limit,
		SilvanStatus *status)
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
	if ((grown = realloc(array, (size_t) cap * size)) == NULL)
	{
		StatusNoMemory(status, "the node arrays");
		return NULL;
	}
	memset(grown + (size_t) *capacity * size, 0, (size_t) (cap - *capacity) * size);
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
						2 * (int64_t) INT32_MAX, status)) == NULL)
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

	if (!XgbCountCategoryWords(tree, &words, status))
		return false;
	if (b->num_nodes + tree->num_nodes > FOREST_MAX_NODES ||
		b->num_words + words > FOREST_MAX_CATEGORY_WORDS)
		return StatusFail(status, SILVAN_ERROR_INVALID, "model too large",
						  "The model has more than %lld nodes or %lld category words.",
						  (long long) FOREST_MAX_NODES,
						  (long long) FOREST_MAX_CATEGORY_WORDS);
	if ((nodes = XgbGrow(forest->nodes, &b->node_capacity, b->num_nodes + tree->num_nodes,
						 sizeof(ForestNode), FOREST_MAX_NODES, status)) == NULL)
		return false;
	forest->nodes = nodes;
	if ((bits = XgbGrow(forest->category_words, &b->word_capacity, b->num_words + words,
						sizeof(uint32_t), FOREST_MAX_CATEGORY_WORDS, status)) == NULL)
		return false;
	forest->category_words = bits;
	forest->num_category_words = b->word_capacity;
	forest->trees[pos].first_node = b->num_nodes;
	forest->trees[pos].num_nodes = tree->num_nodes;
	b->num_nodes += tree->num_nodes;
	return XgbFillTree(forest, tree, nodes + b->num_nodes - tree->num_nodes,
					   b->weight[pos], &b->num_words, status) &&
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
	if (!XgbNextTree(src, i, &tree_json, status))
		return false;
	ok = XgbTreePosition(tree_json, i, forest->num_trees, b->order, &pos, status) &&
		XgbGetTree(tree_json, pos, &tree, status) &&
		XgbLoadTree(forest, &tree, pos, b, status);
	XgbReleaseTree(src, i, tree_json);
	return ok;
}

/* Trim the grown arrays to what the trees use */
static void
XgbTrimArrays(Forest *forest, const XgbBuild *b)
{
	ForestNode *nodes = realloc(forest->nodes,
								sizeof(ForestNode) * (size_t) (b->num_nodes > 0 ? b->num_nodes : 1));
	uint32_t   *bits = realloc(forest->category_words,
							   sizeof(uint32_t) * (size_t) (b->num_words > 0 ? b->num_words : 1));

	if (nodes != NULL)
		forest->nodes = nodes;
	if (bits != NULL)
		forest->category_words = bits;
	forest->num_nodes = b->num_nodes;
	forest->num_category_words = b->num_words;
}

/*
 * Lay the trees out in model order when their "id" fields reorder them
 * (they were filled in in the order of the trees array)
 */
static bool
XgbPlaceTrees(Forest *forest, const int32_t *order, SilvanStatus *status)
{
	ForestNode *placed;
	int64_t		next = 0;
	int32_t		t = 0;

	while (t < forest->num_trees && order[t] == t)
		t++;
	if (t == forest->num_trees)
		return true;
	placed = malloc(sizeof(ForestNode) * (size_t) (forest->num_nodes > 0 ? forest->num_nodes : 1));
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
		if (!XgbLoadEntry(forest, src, i, b, status))
			return false;
	if ((nodes = XgbGrow(forest->nodes, &b->node_capacity, 1, sizeof(ForestNode),
						 FOREST_MAX_NODES, status)) == NULL)
		return false;
	forest->nodes = nodes;
	if ((bits = XgbGrow(forest->category_words, &b->word_capacity, 1, sizeof(uint32_t),
						FOREST_MAX_CATEGORY_WORDS, status)) == NULL)
		return false;
	forest->category_words = bits;
	XgbTrimArrays(forest, b);
	return XgbPlaceTrees(forest, b->order, status);
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
	if (!ForestAllocTrees(forest, (int32_t) n, status))
		return false;
	b.order = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
	b.weight = malloc(sizeof(float) * (n > 0 ? n : 1));
	if (b.order == NULL || b.weight == NULL)
		ok = StatusNoMemory(status, "the tree order");
	else
	{
		for (size_t t = 0; t < n; t++)
			b.order[t] = -1;
		ok = XgbTreeGroups(forest, tree_info, weights, b.weight, status) &&
			XgbLoadTrees(forest, src, &b, status);
	}
	free(b.order);
	free(b.weight);
	free(b.walk);
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
		XgbReadFeatureStrings(learner, "feature_names", FOREST_FEATURE_NAMES, forest, status) &&
		XgbReadFeatureStrings(learner, "feature_types", FOREST_FEATURE_TYPES, forest, status) &&
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
ParseXgboostJson(const char *text, size_t len, SilvanStatus *status)
{
	JsonTreesSpan span;
	XgbTrees	src;
	json_object *root = NULL;
	Forest	   *forest;

	StatusClear(status);
	memset(&src, 0, sizeof(src));
	src.text = text;
	src.len = len;
	if (XgbLooksLikeUbjson(text, len))
	{
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
				   "This looks like XGBoost's binary UBJSON format; save the model with save_model(\"model.json\") instead.");
		return NULL;
	}
	if (xgb_read_mode != XGBOOST_READ_WHOLE && JsonScanTrees(text, len, &span) &&
		(root = XgbParseSkeleton(text, len, &span)) != NULL)
		src.span = &span;
	else if ((root = XgbParseText(text, len, status)) == NULL)
		return NULL;
	forest = XgbReadDocument(root, &src, status);
	if (src.tok != NULL)
		json_tokener_free(src.tok);
	JsonFlatFree(&src.flat);
	json_object_put(root);
	return forest;
}

/* Tests: how to read trees; every mode gives the same forest or error */
void
ParseXgboostReadMode(XgboostReadMode mode)
{
	xgb_read_mode = mode;
}
