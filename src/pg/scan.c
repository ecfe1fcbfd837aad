/*
 * scan.c
 *		Batched scoring of a table or a query: predict_table, predict_query
 *		and their proba/raw variants.
 *
 * How it works: the source becomes a query (predict_table writes
 * "SELECT key, features... FROM source"), planned and run through SPI with
 * our own DestReceiver.  The executor hands each row's slot to
 * ScanReceiveSlot, which deforms it straight into a dense row-major
 * feature buffer of the model's precision (SQL NULL becomes NaN, that is,
 * missing).  When batch_size rows are buffered the compiled batch function
 * runs once over them and one result row per source row goes into the
 * function's tuplestore.  No tuple is copied on the way in, permissions
 * and row-level security apply as for any query, and views, partitioned
 * and foreign tables work alike.  Interrupts are checked between batches.
 *
 * The model's ModelVersion stays pinned for the whole scan, so replacing
 * the model from inside the query cannot free code that is running.
 */
#include "silvan_pg.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "tcop/dest.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#define SCAN_MAX_BATCH	(1 << 20)

typedef struct BatchScan
{
	DestReceiver pub;			/* must be first */
	const char *model_name;
	ModelVersion *version;
	Forest	   *forest;
	ScoreOutput output;
	bool		integer_key;	/* predict_table: key becomes bigint */
	Oid			declared_key_type;	/* predict_query: the caller's key type */

	/* the shape of the source, set up at startup */
	int			num_columns;	/* feature columns after the key */
	bool		array_features; /* one array column holds all features */
	Oid		   *column_types;
	Oid			array_elemtype;
	int16		array_elemlen;
	bool		array_elembyval;
	char		array_elemalign;
	Oid			key_type;
	int16		key_typlen;
	bool		key_typbyval;

	/* the current batch */
	int			batch_size;
	int			batch_rows;
	char	   *rows;			/* batch_size * num_features values */
	void	   *acc;
	double	   *margins;
	double	   *scratch;
	Datum	   *keys;
	bool	   *key_nulls;
	bool	   *row_nulls;		/* whole feature array NULL: result NULL */
	MemoryContext batch_cxt;

	Tuplestorestate *tupstore;	/* NULL when profiling */
	TupleDesc	result_desc;
	int64	   *node_hits;		/* SCORE_PROFILE: hits per node */
	int64		rows_seen;
} BatchScan;

/* Error for a feature column of a type we cannot read */
static void
ReportColumnType(const char *column, Oid typid)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("feature column \"%s\" is not numeric", column),
			 errdetail("Column \"%s\" has type %s; features must be integer, floating-point, numeric or boolean, or one array of them.",
					   column, format_type_be(typid))));
}

/* Error for a feature count that does not match the model */
static void
ReportFeatureCount(const BatchScan *state, int got)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("wrong number of features for model \"%s\"", state->model_name),
			 errdetail("Expected %d features, got %d.", state->forest->num_features, got)));
}

/* Check the key column of the source against what we return */
static void
ScanCheckKey(BatchScan *state, TupleDesc desc)
{
	Form_pg_attribute key = TupleDescAttr(desc, 0);

	if (state->output == SCORE_PROFILE)
	{
		/* profiling ignores keys: any type, copied like predict_query's */
		state->integer_key = false;
		state->declared_key_type = key->atttypid;
	}
	if (state->integer_key)
	{
		if (key->atttypid != INT2OID && key->atttypid != INT4OID && key->atttypid != INT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key column \"%s\" must be of an integer type", NameStr(key->attname)),
					 errdetail("Column \"%s\" has type %s.", NameStr(key->attname),
							   format_type_be(key->atttypid)),
					 errhint("Use silvan.predict_query() for keys of other types.")));
	}
	else if (key->atttypid != state->declared_key_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key column type does not match the declared result type"),
				 errdetail("The query's first column has type %s but the column definition list declares %s.",
						   format_type_be(key->atttypid),
						   format_type_be(state->declared_key_type))));
	state->key_type = key->atttypid;
	get_typlenbyval(key->atttypid, &state->key_typlen, &state->key_typbyval);
}

/* An int2, int4 or int8 key as int64 */
static inline int64
ScanIntegerKey(Datum value, Oid typid)
{
	if (typid == INT2OID)
		return DatumGetInt16(value);
	if (typid == INT4OID)
		return DatumGetInt32(value);
	return DatumGetInt64(value);
}

/* Check the feature columns and decide between columns and one array */
static void
ScanCheckFeatures(BatchScan *state, TupleDesc desc)
{
	state->num_columns = desc->natts - 1;
	if (state->num_columns < 1)
		ReportFeatureCount(state, 0);
	state->column_types = palloc(sizeof(Oid) * state->num_columns);
	for (int c = 0; c < state->num_columns; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, c + 1);
		Oid			elemtype = get_element_type(att->atttypid);

		state->column_types[c] = att->atttypid;
		if (state->num_columns == 1 && OidIsValid(elemtype))
		{
			if (!OidIsValid(FeatureElementType(elemtype)))
				ReportColumnType(NameStr(att->attname), att->atttypid);
			state->array_features = true;
			state->array_elemtype = elemtype;
			get_typlenbyvalalign(elemtype, &state->array_elemlen,
								 &state->array_elembyval, &state->array_elemalign);
		}
		else if (!OidIsValid(FeatureElementType(att->atttypid)))
			ReportColumnType(NameStr(att->attname), att->atttypid);
	}
	if (!state->array_features && state->num_columns != state->forest->num_features)
		ReportFeatureCount(state, state->num_columns);
}

/* DestReceiver startup: validate the shape of the source */
static void
ScanStartup(DestReceiver *self, int operation, TupleDesc desc)
{
	BatchScan  *state = (BatchScan *) self;

	if (desc->natts < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source must return a key column and at least one feature column"),
				 errdetail("It returns %d column(s).", desc->natts)));
	ScanCheckKey(state, desc);
	ScanCheckFeatures(state, desc);
}

/* Store one feature value into the batch buffer */
static inline void
ScanPutFeature(BatchScan *state, int64 index, double x)
{
	if (state->forest->precision == FOREST_FLOAT32)
		((float *) state->rows)[index] = (float) x;
	else
		((double *) state->rows)[index] = x;
}

/* Copy a float4[]/float8[] without NULLs straight into the batch; false otherwise */
static bool
ScanPutFloatArray(BatchScan *state, int64 base, ArrayType *array)
{
	int			n = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	Oid			elemtype = ARR_ELEMTYPE(array);

	if (ARR_HASNULL(array) || (elemtype != FLOAT4OID && elemtype != FLOAT8OID))
		return false;
	if (n != state->forest->num_features)
		ReportFeatureCount(state, n);
	if (elemtype == FLOAT4OID)
	{
		const float4 *v = (const float4 *) ARR_DATA_PTR(array);

		for (int i = 0; i < n; i++)
			ScanPutFeature(state, base + i, v[i]);
	}
	else
	{
		const float8 *v = (const float8 *) ARR_DATA_PTR(array);

		for (int i = 0; i < n; i++)
			ScanPutFeature(state, base + i, v[i]);
	}
	return true;
}

/* Copy the features of a non-NULL array value into row r */
static void
ScanPutArray(BatchScan *state, int r, Datum value)
{
	ArrayType  *array = DatumGetArrayTypeP(value);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int64		base = (int64) r * state->forest->num_features;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features must be a one-dimensional array"),
				 errdetail("A feature array has %d dimensions.", ARR_NDIM(array))));
	if (ScanPutFloatArray(state, base, array))
		return;
	deconstruct_array(array, state->array_elemtype, state->array_elemlen,
					  state->array_elembyval, state->array_elemalign,
					  &elems, &nulls, &n);
	if (n != state->forest->num_features)
		ReportFeatureCount(state, n);
	for (int i = 0; i < n; i++)
		ScanPutFeature(state, base + i,
					   nulls[i] ? NAN : FeatureDatumToDouble(elems[i], state->array_elemtype));
}

/* Run the model over the buffered rows and emit their results */
static void
ScanFlush(BatchScan *state)
{
	int			groups = state->forest->num_groups;
	MemoryContext old;

	if (state->batch_rows == 0)
		return;
	state->rows_seen += state->batch_rows;
	if (state->output == SCORE_PROFILE)
	{
		ForestProfileAccumulate(state->forest, state->rows, state->batch_rows, state->node_hits);
		state->batch_rows = 0;
		MemoryContextReset(state->batch_cxt);
		CHECK_FOR_INTERRUPTS();
		return;
	}
	ScoreBatch(state->version, state->batch_size, state->rows, state->batch_rows,
			   state->acc, state->margins);
	old = MemoryContextSwitchTo(state->batch_cxt);
	for (int r = 0; r < state->batch_rows; r++)
	{
		Datum		values[2];
		bool		nulls[2];

		values[0] = state->keys[r];
		nulls[0] = state->key_nulls[r];
		nulls[1] = state->row_nulls[r];
		values[1] = nulls[1] ? (Datum) 0 :
			ScoreResultDatum(state->version, state->output,
							 state->margins + (int64) r * groups, state->scratch);
		tuplestore_putvalues(state->tupstore, state->result_desc, values, nulls);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->batch_cxt);
	state->batch_rows = 0;
	CHECK_FOR_INTERRUPTS();
}

/* A feature column's value as double; the common float types inline */
static inline double
ScanColumnValue(Datum value, bool isnull, Oid typid)
{
	if (isnull)
		return NAN;
	if (typid == FLOAT4OID)
		return DatumGetFloat4(value);
	if (typid == FLOAT8OID)
		return DatumGetFloat8(value);
	return FeatureDatumToDouble(value, typid);
}

/* DestReceiver: add one source row to the batch */
static bool
ScanReceiveSlot(TupleTableSlot *slot, DestReceiver *self)
{
	BatchScan  *state = (BatchScan *) self;
	int			r = state->batch_rows;
	int64		base = (int64) r * state->forest->num_features;
	MemoryContext old;

	slot_getallattrs(slot);
	state->key_nulls[r] = slot->tts_isnull[0];
	state->row_nulls[r] = false;
	old = MemoryContextSwitchTo(state->batch_cxt);
	if (slot->tts_isnull[0])
		state->keys[r] = (Datum) 0;
	else if (state->integer_key)
		state->keys[r] = Int64GetDatum(ScanIntegerKey(slot->tts_values[0], state->key_type));
	else
		state->keys[r] = datumCopy(slot->tts_values[0], state->key_typbyval, state->key_typlen);
	if (state->array_features)
	{
		if (slot->tts_isnull[1])
			state->row_nulls[r] = true;
		else
			ScanPutArray(state, r, slot->tts_values[1]);
	}
	else
		for (int c = 0; c < state->num_columns; c++)
			ScanPutFeature(state, base + c,
						   ScanColumnValue(slot->tts_values[c + 1], slot->tts_isnull[c + 1],
										   state->column_types[c]));
	MemoryContextSwitchTo(old);
	if (++state->batch_rows == state->batch_size)
		ScanFlush(state);
	return true;
}

/* DestReceiver shutdown and destroy: nothing to release here */
static void
ScanShutdown(DestReceiver *self)
{
}

static void
ScanDestroy(DestReceiver *self)
{
}

/* Allocate the batch buffers for batch_size rows */
static void
ScanAllocBatch(BatchScan *state)
{
	Forest	   *forest = state->forest;
	Size		n = state->batch_size;
	Size		value_size = ForestValueSize(forest);

	state->rows = MemoryContextAllocHuge(CurrentMemoryContext,
										 n * forest->num_features * value_size);
	state->acc = MemoryContextAllocHuge(CurrentMemoryContext, n * forest->num_groups * value_size);
	state->margins = MemoryContextAllocHuge(CurrentMemoryContext, n * forest->num_groups * sizeof(double));
	state->scratch = palloc(sizeof(double) * forest->num_groups);
	state->keys = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(Datum));
	state->key_nulls = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(bool));
	state->row_nulls = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(bool));
	state->batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "silvan batch",
											 ALLOCSET_DEFAULT_SIZES);
}

/* Check batch_size */
static int
ScanBatchSize(FunctionCallInfo fcinfo, int argno)
{
	int			batch_size = PG_ARGISNULL(argno) ? 4096 : PG_GETARG_INT32(argno);

	if (batch_size < 1 || batch_size > SCAN_MAX_BATCH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch size must be between 1 and %d", SCAN_MAX_BATCH),
				 errdetail("Argument \"batch_size\" is %d.", batch_size)));
	return batch_size;
}

/* Plan and run the query, feeding every row to the scan's receiver */
static void
ScanRunQuery(BatchScan *state, const char *query, bool read_only)
{
	SPIPlanPtr	plan;
	SPIExecuteOptions options;
	int			ret;

	SPI_connect();
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "could not prepare query: %s", SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("query must return rows"),
				 errdetail("Argument \"query\" must be a single SELECT, VALUES or TABLE statement.")));
	memset(&options, 0, sizeof(options));
	options.read_only = read_only;
	options.dest = &state->pub;
	ret = SPI_execute_plan_extended(plan, &options);
	if (ret < 0)
		elog(ERROR, "could not run query: %s", SPI_result_code_string(ret));
	ScanFlush(state);
	SPI_finish();
}

/* Look up the model, pin it, and run the scan with the pin released on any exit */
static void
ScanExecute(BatchScan *state, const char *query, bool read_only)
{
	state->version = ModelCacheLookup(state->model_name);
	state->forest = state->version->forest;
	ScoreCheckOutput(state->version, state->output, state->model_name);
	ScanAllocBatch(state);
	if (state->output == SCORE_PROFILE)
		state->node_hits = MemoryContextAllocHuge(CurrentMemoryContext,
												  sizeof(int64) * Max(state->forest->num_nodes, 1));
	if (state->node_hits)
		memset(state->node_hits, 0, sizeof(int64) * Max(state->forest->num_nodes, 1));
	ModelVersionPin(state->version);
	PG_TRY();
	{
		ScanRunQuery(state, query, read_only);
	}
	PG_FINALLY();
	{
		ModelVersionUnpin(state->version);
	}
	PG_END_TRY();
}

/* A receiver that batches rows for a model */
static BatchScan *
ScanCreate(ScoreOutput output, bool integer_key)
{
	BatchScan  *state = palloc0(sizeof(BatchScan));

	state->pub.receiveSlot = ScanReceiveSlot;
	state->pub.rStartup = ScanStartup;
	state->pub.rShutdown = ScanShutdown;
	state->pub.rDestroy = ScanDestroy;
	state->pub.mydest = DestNone;
	state->output = output;
	state->integer_key = integer_key;
	return state;
}

/* Set up the receiver and the result tuplestore of a set-returning scan */
static BatchScan *
ScanBegin(FunctionCallInfo fcinfo, ScoreOutput output, bool integer_key)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchScan  *state = ScanCreate(output, integer_key);

	InitMaterializedSRF(fcinfo, integer_key ? 0 : MAT_SRF_USE_EXPECTED_DESC);
	state->tupstore = rsinfo->setResult;
	state->result_desc = rsinfo->setDesc;
	if (state->result_desc->natts != 2)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("result must have two columns"),
				 errdetail("Declare it as (key <type>, %s).",
						   output == SCORE_PREDICT ? "prediction float8" : "result float8[]")));
	if (TupleDescAttr(state->result_desc, 1)->atttypid != (output == SCORE_PREDICT ? FLOAT8OID : FLOAT8ARRAYOID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("result column 2 must be of type %s", output == SCORE_PREDICT ? "float8" : "float8[]"),
				 errdetail("The column definition list declares %s.",
						   format_type_be(TupleDescAttr(state->result_desc, 1)->atttypid))));
	state->declared_key_type = TupleDescAttr(state->result_desc, 0)->atttypid;
	return state;
}

/* The name of a column of rel, checked to exist */
static const char *
ScanColumn(Relation rel, const char *column)
{
	if (get_attnum(RelationGetRelid(rel), column) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, RelationGetRelationName(rel))));
	return quote_identifier(column);
}

/* Build "SELECT key, features FROM source" for predict_table */
static char *
ScanTableQuery(Oid relid, const char *key_column, ArrayType *feature_columns)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s", ScanColumn(rel, key_column));
	if (feature_columns != NULL)
	{
		Datum	   *names;
		bool	   *nulls;
		int			n;

		deconstruct_array(feature_columns, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("feature column names must not be null")));
			appendStringInfo(&sql, ", %s", ScanColumn(rel, TextDatumGetCString(names[i])));
		}
	}
	else
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!att->attisdropped && strcmp(NameStr(att->attname), key_column) != 0)
				appendStringInfo(&sql, ", %s", quote_identifier(NameStr(att->attname)));
		}
	appendStringInfo(&sql, " FROM %s",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)));
	relation_close(rel, NoLock);
	return sql.data;
}

/* predict_table and its variants */
static Datum
ScanTable(FunctionCallInfo fcinfo, ScoreOutput output)
{
	BatchScan  *state;
	char	   *query;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model, source and key_column must not be null")));
	state = ScanBegin(fcinfo, output, true);
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = ScanBatchSize(fcinfo, 4);
	query = ScanTableQuery(PG_GETARG_OID(1), text_to_cstring(PG_GETARG_TEXT_PP(2)),
						   PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3));
	ScanExecute(state, query, true);
	return (Datum) 0;
}

/* predict_query and its variants */
static Datum
ScanQuery(FunctionCallInfo fcinfo, ScoreOutput output)
{
	BatchScan  *state;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model and query must not be null")));
	state = ScanBegin(fcinfo, output, false);
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = ScanBatchSize(fcinfo, 2);
	ScanExecute(state, text_to_cstring(PG_GETARG_TEXT_PP(1)), false);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(silvan_predict_table);
PG_FUNCTION_INFO_V1(silvan_predict_proba_table);
PG_FUNCTION_INFO_V1(silvan_predict_raw_table);
PG_FUNCTION_INFO_V1(silvan_predict_query);
PG_FUNCTION_INFO_V1(silvan_predict_proba_query);
PG_FUNCTION_INFO_V1(silvan_predict_raw_query);

/* predict_table(model, source, key_column, feature_columns, batch_size) */
Datum
silvan_predict_table(PG_FUNCTION_ARGS)
{
	return ScanTable(fcinfo, SCORE_PREDICT);
}

/* predict_proba_table(...): class probabilities per row */
Datum
silvan_predict_proba_table(PG_FUNCTION_ARGS)
{
	return ScanTable(fcinfo, SCORE_PROBA);
}

/* predict_raw_table(...): margins per row */
Datum
silvan_predict_raw_table(PG_FUNCTION_ARGS)
{
	return ScanTable(fcinfo, SCORE_RAW);
}

/* predict_query(model, query, batch_size) AS (key <type>, prediction float8) */
Datum
silvan_predict_query(PG_FUNCTION_ARGS)
{
	return ScanQuery(fcinfo, SCORE_PREDICT);
}

/* predict_proba_query(...) AS (key <type>, probabilities float8[]) */
Datum
silvan_predict_proba_query(PG_FUNCTION_ARGS)
{
	return ScanQuery(fcinfo, SCORE_PROBA);
}

/* predict_raw_query(...) AS (key <type>, margins float8[]) */
Datum
silvan_predict_raw_query(PG_FUNCTION_ARGS)
{
	return ScanQuery(fcinfo, SCORE_RAW);
}

/* Profile a model over the rows of a prepared scan and store the counts */
static Datum
ScanProfile(BatchScan *state, const char *query)
{
	int64		revision;

	ScanExecute(state, query, true);
	revision = state->version->revision;
	CatalogStoreProfile(state->model_name, revision, state->rows_seen,
						state->node_hits, state->forest->num_nodes);
	return Int64GetDatum(state->rows_seen);
}

PG_FUNCTION_INFO_V1(silvan_profile_table);
PG_FUNCTION_INFO_V1(silvan_profile_query);

/* profile(model, source, key_column, feature_columns): node hits over a table */
Datum
silvan_profile_table(PG_FUNCTION_ARGS)
{
	BatchScan  *state = ScanCreate(SCORE_PROFILE, true);

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model, source and key_column must not be null")));
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = 4096;
	return ScanProfile(state, ScanTableQuery(PG_GETARG_OID(1), text_to_cstring(PG_GETARG_TEXT_PP(2)),
											 PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3)));
}

/* profile(model, query): node hits over a query's rows (first column: a key) */
Datum
silvan_profile_query(PG_FUNCTION_ARGS)
{
	BatchScan  *state = ScanCreate(SCORE_PROFILE, false);

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model and query must not be null")));
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = 4096;
	return ScanProfile(state, text_to_cstring(PG_GETARG_TEXT_PP(1)));
}
