/*
 * predict.c
 *		Scoring one row: predict(), predict_proba(), predict_raw().
 *
 * The model is found through the backend cache; a per-call-site cache in
 * fn_extra skips even the hash lookup while the cache generation holds.
 */
#include <math.h>

#include "silvan_pg.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* What a call site remembers between calls: the model, for a role, while the cache holds */
typedef struct PredictCallCache
{
	char		name[NAMEDATALEN];
	uint64		generation;
	Oid			role;
	ModelVersion *version;
} PredictCallCache;

/* Find the model, through fn_extra when possible */
static ModelVersion *
PredictLookup(FunctionCallInfo fcinfo, const char *name)
{
	PredictCallCache *cc = fcinfo->flinfo->fn_extra;

	if (cc != NULL && cc->generation == ModelCacheGeneration() && cc->role == GetUserId() &&
		strcmp(cc->name, name) == 0)
		return cc->version;
	if (cc == NULL)
		cc = fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(PredictCallCache));
	cc->version = ModelCacheLookup(name);
	cc->generation = ModelCacheGeneration();
	cc->role = GetUserId();
	strlcpy(cc->name, name, NAMEDATALEN);
	return cc->version;
}

/* Fill row from an integer[], bigint[] or numeric[] of the forest's feature count */
static void *
PredictRowFromDatums(ArrayType *array, const Forest *forest, void *row)
{
	Oid			elemtype = ARR_ELEMTYPE(array);
	int16		elemlen;
	bool		elembyval;
	char		elemalign;
	Datum	   *items;
	bool	   *nulls;
	int			n;

	get_typlenbyvalalign(elemtype, &elemlen, &elembyval, &elemalign);
	deconstruct_array(array, elemtype, elemlen, elembyval, elemalign, &items, &nulls, &n);
	for (int i = 0; i < n; i++)
		FeaturePut(forest, row, i, items[i], nulls[i], elemtype);
	return row;
}

/*
 * Copy a one-dimensional array of numbers into row, of the forest's
 * precision and feature count (the scalar functions and the batch node)
 */
void *
PredictRowFill(ArrayType *array, const Forest *forest, const char *name, void *row)
{
	Oid			elemtype = ARR_ELEMTYPE(array);
	int			nitems = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	bits8	   *nulls = ARR_NULLBITMAP(array);
	char	   *data = ARR_DATA_PTR(array);

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features must be a one-dimensional array"),
				 errdetail("Argument \"features\" has %d dimensions.", ARR_NDIM(array))));
	if (nitems != forest->num_features)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wrong number of features for model \"%s\"", name),
				 errdetail("Expected %d features, got %d.", forest->num_features, nitems)));
	if (elemtype != FLOAT4OID && elemtype != FLOAT8OID)
		return PredictRowFromDatums(array, forest, row);
	for (int i = 0; i < nitems; i++)
	{
		double		x;

		if (nulls && !(nulls[i / 8] & (1 << (i % 8))))
			x = NAN;
		else if (elemtype == FLOAT4OID)
		{
			x = *(float4 *) data;
			data += sizeof(float4);
		}
		else
		{
			x = *(float8 *) data;
			data += sizeof(float8);
		}
		if (forest->precision == FOREST_FLOAT32)
			((float *) row)[i] = (float) x;
		else
			((double *) row)[i] = x;
	}
	return row;
}

/* Score one array of features; the shared body of every scalar function */
static Datum
PredictOne(FunctionCallInfo fcinfo, ScoreOutput output)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(1);
	ModelVersion *version = PredictLookup(fcinfo, name);
	Forest	   *forest = version->header;
	void	   *row;
	double	   *acc;
	double	   *margins;
	double	   *scratch;

	ScoreCheckOutput(version, output, name);
	row = PredictRowFill(array, forest, name,
						 palloc(ForestValueSize(forest) * forest->num_features));
	acc = palloc(sizeof(double) * forest->num_groups);
	margins = palloc(sizeof(double) * forest->num_groups);
	scratch = palloc(sizeof(double) * ForestOutputWidth(forest));
	ScoreBatch(version, 1, row, 1, acc, margins, false);
	return ScoreResultDatum(version, output, margins, scratch);
}

PG_FUNCTION_INFO_V1(silvan_predict_float4);
PG_FUNCTION_INFO_V1(silvan_predict_float8);
PG_FUNCTION_INFO_V1(silvan_predict_proba_float4);
PG_FUNCTION_INFO_V1(silvan_predict_proba_float8);
PG_FUNCTION_INFO_V1(silvan_predict_raw_float4);
PG_FUNCTION_INFO_V1(silvan_predict_raw_float8);

/* predict(model, float4[]) */
Datum
silvan_predict_float4(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_PREDICT);
}

/* predict(model, float8[]) */
Datum
silvan_predict_float8(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_PREDICT);
}

/* predict_proba(model, float4[]) */
Datum
silvan_predict_proba_float4(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_PROBA);
}

/* predict_proba(model, float8[]) */
Datum
silvan_predict_proba_float8(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_PROBA);
}

/* predict_raw(model, float4[]) */
Datum
silvan_predict_raw_float4(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_RAW);
}

/* predict_raw(model, float8[]) */
Datum
silvan_predict_raw_float8(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_RAW);
}

PG_FUNCTION_INFO_V1(silvan_predict_array);
PG_FUNCTION_INFO_V1(silvan_predict_proba_array);
PG_FUNCTION_INFO_V1(silvan_predict_raw_array);

/* predict(model, integer[] | bigint[] | numeric[]) */
Datum
silvan_predict_array(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_PREDICT);
}

/* predict_proba(model, integer[] | bigint[] | numeric[]) */
Datum
silvan_predict_proba_array(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_PROBA);
}

/* predict_raw(model, integer[] | bigint[] | numeric[]) */
Datum
silvan_predict_raw_array(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_RAW);
}

PG_FUNCTION_INFO_V1(silvan_predict_label_float4);
PG_FUNCTION_INFO_V1(silvan_predict_label_float8);
PG_FUNCTION_INFO_V1(silvan_predict_label_array);
PG_FUNCTION_INFO_V1(silvan_classify_float4);
PG_FUNCTION_INFO_V1(silvan_classify_float8);
PG_FUNCTION_INFO_V1(silvan_classify_array);

/* predict_label(model, float4[]) */
Datum
silvan_predict_label_float4(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_LABEL);
}

/* predict_label(model, float8[]) */
Datum
silvan_predict_label_float8(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_LABEL);
}

/* predict_label(model, integer[] | bigint[] | numeric[]) */
Datum
silvan_predict_label_array(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_LABEL);
}

/* classify(model, float4[]) */
Datum
silvan_classify_float4(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_CLASS);
}

/* classify(model, float8[]) */
Datum
silvan_classify_float8(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_CLASS);
}

/* classify(model, integer[] | bigint[] | numeric[]) */
Datum
silvan_classify_array(PG_FUNCTION_ARGS)
{
	return PredictOne(fcinfo, SCORE_CLASS);
}
