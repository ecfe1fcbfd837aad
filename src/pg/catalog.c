/*
 * catalog.c
 *		Writing the catalog: load_model(), drop_model(), set_schedule() and
 *		the profiles stored by silvan.profile().
 *
 * Parsing and validation happen before the catalog is touched, so a bad
 * model leaves nothing behind.  Everyone may read the catalog; writes
 * happen as the catalog's owner after checking that the caller owns the
 * model being replaced or dropped (or is a superuser), in the style of
 * PostgreSQL's own SECURITY_LOCAL_USERID_CHANGE sections.
 */
#include "silvan_pg.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "silvan/parse.h"

/* What a caller is allowed and who writes */
typedef struct CatalogWriter
{
	Oid			caller;
	Oid			saved_user;
	int			saved_context;
} CatalogWriter;

/* Become the catalog's owner for the writes that follow */
static void
CatalogWriteBegin(CatalogWriter *writer)
{
	Relation	rel = table_open(SilvanCatalogRelid("model"), AccessShareLock);
	Oid			owner = rel->rd_rel->relowner;

	table_close(rel, AccessShareLock);
	GetUserIdAndSecContext(&writer->saved_user, &writer->saved_context);
	writer->caller = writer->saved_user;
	SetUserIdAndSecContext(owner, writer->saved_context | SECURITY_LOCAL_USERID_CHANGE);
	SPI_connect();
}

/* Return to the caller's identity */
static void
CatalogWriteEnd(CatalogWriter *writer)
{
	SPI_finish();
	SetUserIdAndSecContext(writer->saved_user, writer->saved_context);
}

/* Error unless the caller may change a model owned by owner */
static void
CheckModelOwner(const CatalogWriter *writer, Oid owner, const char *name)
{
	if (!has_privs_of_role(writer->caller, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of model \"%s\"", name),
				 errdetail("Only the model's owner or a superuser may replace or drop it.")));
}

/* Find a model's id and owner (locking its row); false when absent */
static bool
CatalogFindModel(const char *name, int64 *id, Oid *owner)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	bool		isnull;

	if (SPI_execute_with_args("SELECT id, owner::oid FROM silvan.model WHERE name = $1 FOR UPDATE",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read silvan.model");
	if (SPI_processed == 0)
		return false;
	*id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	return true;
}

/* Parse and validate a model's text, with errors for the user */
static Forest *
CatalogParse(const char *model_text, const char *format_name, ModelFormat *format)
{
	SilvanStatus status;
	Forest	   *forest;
	ModelFormat requested;

	if (!ModelFormatFromName(format_name, &requested))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown model format \"%s\"", format_name),
				 errdetail("Argument \"format\" must be one of auto, xgboost, lightgbm.")));
	forest = ParseModel(model_text, strlen(model_text), requested, format, &status);
	if (forest == NULL)
		SilvanReportStatus(ERROR, &status);
	return forest;
}

/* Insert a new row or update the existing one; returns the model id */
static int64
CatalogStore(const char *name, const char *model_text, ModelFormat format,
			 Forest *forest, bytea *bytes, Oid caller, bool exists, int64 id)
{
	Oid			argtypes[11] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	INT4OID, INT4OID, BYTEAOID, TEXTOID, OIDOID};
	Datum		args[11];
	bool		isnull;
	const char *sql;

	args[0] = CStringGetTextDatum(name);
	args[1] = CStringGetTextDatum(ModelFormatName(format));
	args[2] = CStringGetTextDatum(forest->objective);
	args[3] = CStringGetTextDatum(ForestTaskName(forest->task));
	args[4] = Int32GetDatum(forest->num_features);
	args[5] = Int32GetDatum(forest->task == FOREST_TASK_MULTICLASS || forest->task == FOREST_TASK_BINARY
							? forest->num_classes : 0);
	args[6] = Int32GetDatum(forest->num_trees);
	args[7] = Int32GetDatum(forest->max_depth);
	args[8] = PointerGetDatum(bytes);
	args[9] = CStringGetTextDatum(model_text);
	args[10] = ObjectIdGetDatum(caller);
	if (exists)
	{
		sql = "UPDATE silvan.model SET format = $2, objective = $3, task = $4, "
			"num_features = $5, num_classes = $6, num_trees = $7, max_depth = $8, "
			"forest = $9, source = $10, created = now(), "
			"revision = nextval('silvan.model_revision_seq') WHERE name = $1 RETURNING id";
		if (SPI_execute_with_args("DELETE FROM silvan.schedule WHERE model_id = "
								  "(SELECT id FROM silvan.model WHERE name = $1)",
								  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE ||
			SPI_execute_with_args("DELETE FROM silvan.profile WHERE model_id = "
								  "(SELECT id FROM silvan.model WHERE name = $1)",
								  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not clear schedules and profile of model \"%s\"", name);
	}
	else
		sql = "INSERT INTO silvan.model (name, format, objective, task, num_features, "
			"num_classes, num_trees, max_depth, forest, source, owner) "
			"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::regrole) RETURNING id";
	/* no row limit: a limited INSERT ... RETURNING skips statement triggers */
	if (SPI_execute_with_args(sql, 11, argtypes, args, NULL, false, 0) != (exists ? SPI_OK_UPDATE_RETURNING : SPI_OK_INSERT_RETURNING) ||
		SPI_processed != 1)
		elog(ERROR, "could not store model \"%s\"", name);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* Serialize a forest into a bytea; frees the forest */
static bytea *
CatalogSerialize(Forest *forest)
{
	SilvanStatus status;
	uint8_t    *data;
	size_t		size;
	bytea	   *bytes;
	bool		ok = ForestSerialize(forest, &data, &size, &status);

	if (!ok)
		SilvanReportStatus(ERROR, &status);
	bytes = palloc(VARHDRSZ + size);
	SET_VARSIZE(bytes, VARHDRSZ + size);
	memcpy(VARDATA(bytes), data, size);
	free(data);
	return bytes;
}

/* Error for a NULL argument that must not be NULL */
static void
RequireArgument(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
}

PG_FUNCTION_INFO_V1(silvan_load_model);

/* load_model(name, model, format, replace): parse, validate, store */
Datum
silvan_load_model(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *model_text;
	char	   *format_name;
	bool		replace;
	ModelFormat format;
	Forest	   *forest;
	Forest		summary;
	bytea	   *volatile bytes = NULL;
	CatalogWriter writer;
	int64		id = 0;
	Oid			owner;
	bool		exists;

	RequireArgument(fcinfo, 0, "name");
	RequireArgument(fcinfo, 1, "model");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	model_text = text_to_cstring(PG_GETARG_TEXT_PP(1));
	format_name = PG_ARGISNULL(2) ? "auto" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	replace = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	if (strlen(name) < 1 || strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid model name"),
				 errdetail("Argument \"name\" must have 1 to %d bytes.", NAMEDATALEN - 1)));

	forest = CatalogParse(model_text, format_name, &format);
	summary = *forest;
	PG_TRY();
	{
		bytes = CatalogSerialize(forest);
	}
	PG_FINALLY();
	{
		ForestFree(forest);
	}
	PG_END_TRY();

	CatalogWriteBegin(&writer);
	exists = CatalogFindModel(name, &id, &owner);
	if (exists && !replace)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", name),
				 errhint("Pass replace => true to replace it.")));
	if (exists)
		CheckModelOwner(&writer, owner, name);
	id = CatalogStore(name, model_text, format, &summary, bytes, writer.caller, exists, id);
	CatalogWriteEnd(&writer);
	PG_RETURN_INT64(id);
}

PG_FUNCTION_INFO_V1(silvan_drop_model);

/* drop_model(name): true when a model was dropped, false when none had the name */
Datum
silvan_drop_model(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CatalogWriter writer;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	int64		id;
	Oid			owner;
	bool		exists;

	CatalogWriteBegin(&writer);
	exists = CatalogFindModel(name, &id, &owner);
	if (exists)
	{
		CheckModelOwner(&writer, owner, name);
		if (SPI_execute_with_args("DELETE FROM silvan.model WHERE name = $1",
								  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not drop model \"%s\"", name);
	}
	CatalogWriteEnd(&writer);
	PG_RETURN_BOOL(exists);
}

/* The id of a model the caller may change; errors when absent or not owned */
static int64
CatalogOwnedModel(const CatalogWriter *writer, const char *name)
{
	int64		id;
	Oid			owner;

	if (!CatalogFindModel(name, &id, &owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name)));
	CheckModelOwner(writer, owner, name);
	return id;
}

/* Error unless a batch size argument is NULL or positive */
static int32
CatalogBatchSize(FunctionCallInfo fcinfo, int argno)
{
	int32		batch_size;

	if (PG_ARGISNULL(argno))
		return 0;
	batch_size = PG_GETARG_INT32(argno);
	if (batch_size < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch size must be positive"),
				 errdetail("Argument \"batch_size\" is %d; pass NULL for every batch size.",
						   batch_size)));
	return batch_size;
}

/* Parse a schedule and compile it for the model once, so a bad one is never stored */
static void
CatalogCheckSchedule(const char *name, const char *schedule_text)
{
	SilvanStatus status;
	Schedule	schedule;
	ModelVersion *version = ModelCacheLookup(name);
	CompiledForest *code;

	if (!ScheduleParse(schedule_text, &schedule, &status))
		SilvanReportStatus(ERROR, &status);
	code = CompileForest(version->forest, &schedule, version->profile, &status);
	if (code == NULL)
		SilvanReportStatus(ERROR, &status);
	CompiledForestFree(code);
}

PG_FUNCTION_INFO_V1(silvan_set_schedule);

/* set_schedule(model, schedule, target, batch_size): store, replace or (NULL) remove */
Datum
silvan_set_schedule(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *target;
	int32		batch_size = CatalogBatchSize(fcinfo, 3);
	CatalogWriter writer;
	Oid			argtypes[4] = {INT8OID, TEXTOID, INT4OID, TEXTOID};
	Datum		args[4];
	int64		id;

	RequireArgument(fcinfo, 0, "model");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	target = PG_ARGISNULL(2) ? "cpu" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (strcmp(target, "cpu") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unsupported target \"%s\"", target),
				 errdetail("Argument \"target\" must be \"cpu\"; GPU targets are not built yet.")));
	if (!PG_ARGISNULL(1))
		CatalogCheckSchedule(name, text_to_cstring(PG_GETARG_TEXT_PP(1)));

	CatalogWriteBegin(&writer);
	id = CatalogOwnedModel(&writer, name);
	args[0] = Int64GetDatum(id);
	args[1] = CStringGetTextDatum(target);
	args[2] = Int32GetDatum(batch_size);
	if (SPI_execute_with_args("DELETE FROM silvan.schedule WHERE model_id = $1 AND target = $2"
							  " AND coalesce(batch_size, 0) = $3",
							  3, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not update silvan.schedule");
	if (!PG_ARGISNULL(1))
	{
		args[3] = PG_GETARG_DATUM(1);
		if (SPI_execute_with_args("INSERT INTO silvan.schedule (model_id, target, batch_size, schedule)"
								  " VALUES ($1, $2, nullif($3, 0), $4)",
								  4, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not update silvan.schedule");
	}
	CatalogWriteEnd(&writer);
	PG_RETURN_VOID();
}

/* Store the node hit counts of a profiling scan for the model's current revision */
void
CatalogStoreProfile(const char *name, int64 revision, int64 num_rows,
					const int64 *node_hits, int64 num_nodes)
{
	CatalogWriter writer;
	Oid			argtypes[4] = {INT8OID, INT8OID, INT8OID, INT8ARRAYOID};
	Datum		args[4];
	Datum	   *hits = palloc(sizeof(Datum) * Max(num_nodes, 1));
	int64		id;

	for (int64 i = 0; i < num_nodes; i++)
		hits[i] = Int64GetDatum(node_hits[i]);
	CatalogWriteBegin(&writer);
	id = CatalogOwnedModel(&writer, name);
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(revision);
	args[2] = Int64GetDatum(num_rows);
	args[3] = PointerGetDatum(construct_array(hits, num_nodes, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	if (SPI_execute_with_args("DELETE FROM silvan.profile WHERE model_id = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("INSERT INTO silvan.profile (model_id, revision, num_rows, node_hits)"
							  " VALUES ($1, $2, $3, $4)",
							  4, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not store the profile of model \"%s\"", name);
	CatalogWriteEnd(&writer);
}
