/*
 * predict_row.c
 *		Scoring a whole row: predict(model, c), predict_proba(model, c),
 *		predict_raw(model, c) for a row of a table or any composite.
 *
 * The row's columns are matched to the model's features as predict_table
 * matches a table's (FeaturesMatchRow: by name, else by position for a
 * model without real names), once per row type and model: the match is
 * kept with the call site (the scalar functions' fn_extra, the batch
 * node's call) and made again when the row's type or the model cache
 * changes.  A NULL column is a missing value, as in an array.
 */
#include <math.h>

#include "silvan_pg.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

/* A row type matched to a model's features */
struct RowFeatures
{
	Oid			typid;			/* the row type and typmod it was made for */
	int32		typmod;
	const Forest *forest;		/* ... and the forest, while the cache holds */
	uint64		generation;
	TupleDesc	desc;			/* a copy */
	int		   *columns;		/* per feature: its attribute index */
	Oid		   *types;			/* per feature: its column's type */
	Datum	   *values;			/* a deformed row */
	bool	   *nulls;
};

/* Is map the match of this row type and forest? */
static bool
RowFeaturesHold(const RowFeatures *map, Oid typid, int32 typmod, const Forest *forest)
{
	return map != NULL && map->typid == typid && map->typmod == typmod &&
		map->forest == forest && map->generation == ModelCacheGeneration();
}

/* Match a row type to the forest's features, in cxt */
static RowFeatures *
RowFeaturesMake(Oid typid, int32 typmod, const Forest *forest, const char *model,
				MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	RowFeatures *map = palloc0(sizeof(RowFeatures));
	char	   *type_name = typid == RECORDOID ? "record" : format_type_be(typid);

	map->typid = typid;
	map->typmod = typmod;
	map->forest = forest;
	map->generation = ModelCacheGeneration();
	map->desc = lookup_rowtype_tupdesc_copy(typid, typmod);
	map->columns = FeaturesMatchRow(map->desc, type_name, forest, model);
	map->types = palloc(sizeof(Oid) * Max(forest->num_features, 1));
	for (int32 i = 0; i < forest->num_features; i++)
		map->types[i] = TupleDescAttr(map->desc, map->columns[i])->atttypid;
	map->values = palloc(sizeof(Datum) * Max(map->desc->natts, 1));
	map->nulls = palloc(sizeof(bool) * Max(map->desc->natts, 1));
	MemoryContextSwitchTo(old);
	return map;
}

/*
 * Fill row (the forest's precision and feature count) from a composite
 * value; *map is the call site's match, made or made again in cxt as needed
 */
void
PredictRowFromComposite(HeapTupleHeader tuple, const Forest *forest, const char *model,
						RowFeatures **map, MemoryContext cxt, void *row)
{
	Oid			typid = HeapTupleHeaderGetTypeId(tuple);
	int32		typmod = HeapTupleHeaderGetTypMod(tuple);
	HeapTupleData tmptup;
	RowFeatures *m = *map;

	if (!RowFeaturesHold(m, typid, typmod, forest))
		m = *map = RowFeaturesMake(typid, typmod, forest, model, cxt);
	tmptup.t_len = HeapTupleHeaderGetDatumLength(tuple);
	ItemPointerSetInvalid(&tmptup.t_self);
	tmptup.t_tableOid = InvalidOid;
	tmptup.t_data = tuple;
	heap_deform_tuple(&tmptup, m->desc, m->values, m->nulls);
	for (int32 i = 0; i < forest->num_features; i++)
	{
		int			a = m->columns[i];

		FeaturePut(forest, row, i, m->values[a], m->nulls[a], m->types[i]);
	}
}

/* What a whole-row call site keeps between calls */
typedef struct PredictRowCache
{
	RowFeatures *map;
} PredictRowCache;

/* Score one row; the shared body of the whole-row functions */
static Datum
PredictWholeRow(FunctionCallInfo fcinfo, ScoreOutput output)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	HeapTupleHeader tuple = PG_GETARG_HEAPTUPLEHEADER(1);
	ModelVersion *version = ModelCacheLookup(name);
	Forest	   *forest = version->header;
	PredictRowCache *cc = fcinfo->flinfo->fn_extra;
	void	   *row;
	double	   *margins;

	ScoreCheckOutput(version, output, name);
	if (cc == NULL)
		cc = fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(PredictRowCache));
	row = palloc(ForestValueSize(forest) * Max(forest->num_features, 1));
	PredictRowFromComposite(tuple, forest, name, &cc->map, fcinfo->flinfo->fn_mcxt, row);
	margins = palloc(sizeof(double) * forest->num_groups);
	ScoreBatch(version, 1, row, 1, palloc(sizeof(double) * forest->num_groups), margins, false);
	return ScoreResultDatum(version, output, margins,
							palloc(sizeof(double) * ForestOutputWidth(forest)));
}

PG_FUNCTION_INFO_V1(silvan_predict_row);
PG_FUNCTION_INFO_V1(silvan_predict_proba_row);
PG_FUNCTION_INFO_V1(silvan_predict_raw_row);

/* predict(model, record) */
Datum
silvan_predict_row(PG_FUNCTION_ARGS)
{
	return PredictWholeRow(fcinfo, SCORE_PREDICT);
}

/* predict_proba(model, record) */
Datum
silvan_predict_proba_row(PG_FUNCTION_ARGS)
{
	return PredictWholeRow(fcinfo, SCORE_PROBA);
}

/* predict_raw(model, record) */
Datum
silvan_predict_raw_row(PG_FUNCTION_ARGS)
{
	return PredictWholeRow(fcinfo, SCORE_RAW);
}

PG_FUNCTION_INFO_V1(silvan_predict_label_row);
PG_FUNCTION_INFO_V1(silvan_classify_row);

/* predict_label(model, record) */
Datum
silvan_predict_label_row(PG_FUNCTION_ARGS)
{
	return PredictWholeRow(fcinfo, SCORE_LABEL);
}

/* classify(model, record) */
Datum
silvan_classify_row(PG_FUNCTION_ARGS)
{
	return PredictWholeRow(fcinfo, SCORE_CLASS);
}
