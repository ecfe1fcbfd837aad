/*
 * xgboost_learner.c
 *		Read an XGBoost model's learner: its parameters (feature and class
 *		counts, the base score), its objective, its feature names and
 *		types, and where its trees are; and the json-c helpers the reader
 *		shares (xgboost_json.h).
 *
 * The objective fixes the task, the output transform and how the base
 * score, which XGBoost stores in output space, becomes a margin.  Feature
 * names are charged to the read's budget before they are copied.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "xgboost_json.h"

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

/* Name of a JSON type for messages */
const char *
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
json_object *
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
bool
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
bool
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
bool
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
bool
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
bool
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
bool
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
bool
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
bool
XgbReadFeatureStrings(json_object *learner, const char *key, ForestFeatureField field,
					  Forest *forest, DecodeBudget *budget, SilvanStatus *status)
{
	json_object *list;
	const char **strings;
	size_t	   *lengths;
	size_t		n;
	bool		ok = true;
	int64_t		total = 0;
	uint32_t	ticks = 0;

	if (!XgbOptionalMember(learner, key, json_type_array, "learner", &list, status))
		return false;
	if (list == NULL || (n = json_object_array_length(list)) == 0)
		return true;
	if (n != (size_t) forest->num_features)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
						  "Field \"%s\" has %zu entries; field \"num_feature\" is %d.",
						  key, n, forest->num_features);
	if (!DecodeCharge(budget, 16 * (int64_t) n + 2 * DECODE_CHUNK_OVERHEAD, key, status))
		return false;
	strings = malloc(sizeof(char *) * n);
	lengths = malloc(sizeof(size_t) * n);
	if (strings == NULL || lengths == NULL)
		ok = StatusNoMemory(status, "the feature names");
	for (size_t i = 0; ok && i < n; i++)
	{
		json_object *entry = json_object_array_get_idx(list, i);

		if (CancelTick(&ticks))
			ok = StatusCanceled(status, "reading the feature names");
		else if (!json_object_is_type(entry, json_type_string))
			ok = StatusFail(status, SILVAN_ERROR_INVALID, "invalid XGBoost model",
							"Entry %zu of field \"%s\" is %s; expected a string.",
							i, key, XgbTypeName(json_object_get_type(entry)));
		else
		{
			strings[i] = json_object_get_string(entry);
			lengths[i] = (size_t) json_object_get_string_len(entry);
			total += (int64_t) lengths[i] + 1;
		}
	}
	/* the forest's copy (pointers and text) and the sorted pointers that check it */
	if (ok)
		ok = DecodeCharge(budget, 16 * (int64_t) n + total + 2 * DECODE_CHUNK_OVERHEAD,
						  key, status) &&
			ForestSetFeatureStrings(forest, field, strings, lengths, (int64_t) n, status);
	free(strings);
	free(lengths);
	if (ok)
		DecodeRelease(budget, 24 * (int64_t) n + 3 * DECODE_CHUNK_OVERHEAD);
	return ok;
}

/* Find the gbtree model object; for dart also its weight_drop array */
json_object *
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
