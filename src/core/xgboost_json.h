/*
 * xgboost_json.h
 *		What the XGBoost reader's two files share: xgboost_learner.c reads the
 *		learner's parameters, objective and feature names, xgboost_json.c the
 *		document and its trees.
 */
#ifndef SILVAN_XGBOOST_JSON_H
#define SILVAN_XGBOOST_JSON_H

#include <json.h>

#include "silvan/parse.h"

/* Name of a JSON type for messages */
extern const char *XgbTypeName(json_type type);

/* Fetch member key of obj, which must exist and have the given type */
extern json_object *XgbMember(json_object *obj, const char *key, json_type type,
							  const char *where, SilvanStatus *status);

/* Fetch an optional member: NULL when absent, else it must have the type */
extern bool XgbOptionalMember(json_object *obj, const char *key, json_type type,
							  const char *where, json_object **out, SilvanStatus *status);

/* Parse a whole string as a decimal integer */
extern bool XgbTextToInt64(const char *text, int64_t *out);

/* Read an integer given as a JSON integer, an integral number or a string */
extern bool XgbToInt64(json_object *value, int64_t *out);

/* Read a float from a number's original text (or a numeric string) */
extern bool XgbToFloat(json_object *value, float *out);

/* Read a required integer member within [lo, hi] */
extern bool XgbIntMember(json_object *obj, const char *key, const char *where, int64_t lo,
						 int64_t hi, int64_t *out, SilvanStatus *status);

/* Read an optional integer member within [lo, hi]; dflt when absent */
extern bool XgbOptionalIntMember(json_object *obj, const char *key, const char *where,
								 int64_t lo, int64_t hi, int64_t dflt, int64_t *out,
								 SilvanStatus *status);

/* Read learner_model_param and the objective */
extern bool XgbReadHeader(json_object *learner, Forest *forest, SilvanStatus *status);

/* Read learner.feature_names or learner.feature_types, charged to budget */
extern bool XgbReadFeatureStrings(json_object *learner, const char *key,
								  ForestFeatureField field, Forest *forest,
								  DecodeBudget *budget, SilvanStatus *status);

/* Find the gbtree model object; for dart also its weight_drop array */
extern json_object *XgbFindModel(json_object *learner, json_object **weights,
								 SilvanStatus *status);

#endif							/* SILVAN_XGBOOST_JSON_H */
