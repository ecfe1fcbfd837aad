/*
 * catalog.c
 *		Writing the catalog: load_model(), drop_model(), set_schedule(),
 *		reassign_models() and the profiles stored by silvan.profile().
 *		What concerns a model's versions as a whole (deploy, rollback,
 *		aliases, renaming, dropping) is registry.c's.
 *
 * Parsing and validation happen before the catalog is touched, so a bad
 * model leaves nothing behind.  Everyone may read the catalog; a write
 * goes in three steps (catalog_sql.c):
 *
 *	1. as the caller: read the row of the version a model reference names
 *	   (model_ref.c; for a load, the name's row of the registry) and check
 *	   that the caller may change it (UPDATE on the model, privileges.c;
 *	   its owner, a role with the owner's privileges, or, for a model whose
 *	   owner role was dropped, the database's owner, hold every privilege);
 *	2. only then become the catalog's owner, lock the row (FOR UPDATE) and
 *	   check again, since the row may have changed in between;
 *	3. write, in as few statements as the change needs.
 *
 * Every statement runs under search_path "pg_catalog, pg_temp" with every
 * name schema-qualified.  A new name that another session inserts first
 * makes this one's insert do nothing (ON CONFLICT), which is reported as
 * the model existing, never as a unique violation.  A catalog older than
 * 0.11.0 (the library updated first) has one row per name and no
 * registry; there a load with replace overwrites the row, as it did then.
 */
#include "silvan_pg.h"

#include <signal.h>

#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "silvan/parse.h"

#include "catalog.h"

static void CatalogCheckTuningQuota(const CatalogSql *sql, const TuneRequest *request);
static int64 CatalogInsertTuning(const CatalogSql *sql, int64 model_id,
								 const TuneRequest *request);

/*
 * Read the row a model reference names (locked FOR UPDATE when running as
 * the owner); false when absent
 */
bool
CatalogFindModel(const CatalogSql *sql, const char *reference, CatalogModel *model)
{
	ModelRef	ref;
	Oid			types[3];
	Datum		args[3];
	char		nulls[4] = "   ";
	bool		isnull;
	HeapTuple	tuple;
	TupleDesc	desc;
	Datum		acl;

	if (!ModelRefParse(reference, &ref))
		return false;
	ModelRefCheckCatalog(&ref, reference);
	ModelRefArgs(&ref, types, args, nulls);
	CatalogSqlRun(sql, psprintf("SELECT m.id, m.owner::pg_catalog.oid, m.revision, %s"
								" FROM silvan.model m WHERE %s%s",
								CatalogHasVersions() ?
								"m.version, (SELECT r.acl FROM silvan.registry r"
								" WHERE r.name OPERATOR(pg_catalog.=) m.name)" : "1, NULL",
								ModelRefWhere(), sql->as_owner ? " FOR UPDATE OF m" : ""),
				  3, types, args, nulls, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	model->id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	model->owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
	model->revision = DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull));
	model->version = DatumGetInt32(SPI_getbinval(tuple, desc, 4, &isnull));
	acl = SPI_getbinval(tuple, desc, 5, &isnull);
	model->acl = isnull ? NULL : DatumGetAclPCopy(acl);
	strlcpy(model->name, ref.name, sizeof(model->name));
	return true;
}

/* Does a role exist? */
static bool
RoleExists(Oid role)
{
	return SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role));
}

/*
 * May caller change what owner owns: with the owner's privileges, or as
 * the database's owner when the owner role no longer exists
 */
bool
CatalogMayManage(Oid caller, Oid owner)
{
	if (has_privs_of_role(caller, owner))
		return true;
	return !RoleExists(owner) && pg_database_ownercheck(MyDatabaseId, caller);
}

/* Error unless the caller may change a model owned by owner */
void
CatalogCheckManage(Oid caller, Oid owner, const char *name)
{
	if (!CatalogMayManage(caller, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of model \"%s\"", name),
				 errdetail("Only the model's owner, a member of the owner role, or a superuser may change it.")));
}

/*
 * Error unless the caller holds need on a model (ACL_NO_RIGHTS: unless it
 * has the owner's rights, which hold every privilege)
 */
void
CatalogCheckPrivilege(Oid caller, Oid owner, const Acl *acl, AclMode need, const char *name)
{
	if (need == ACL_NO_RIGHTS || !CatalogHasVersions())
	{
		CatalogCheckManage(caller, owner, name);
		return;
	}
	if (!ModelAclAllows(acl, owner, caller, need))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for model \"%s\"", name),
				 errdetail("Changing a model (a new version, a deploy, its schedules, a tuning) takes its owner's rights or the UPDATE privilege on it.")));
}

/* Error unless the caller may change a model: its owner's rights, or UPDATE on it */
static void
CheckModelOwner(const CatalogSql *sql, const CatalogModel *model, const char *name)
{
	CatalogCheckPrivilege(sql->caller, model->owner, model->acl, ACL_UPDATE, name);
}

/* Error for a reference to a version that a model does not have */
static void
ReportNoVersion(const ModelRef *ref)
{
	if (ref->kind == MODEL_REF_NUMBER)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" has no version %d", ref->name, ref->number),
				 errhint("silvan.model_versions lists the versions of every model.")));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("model \"%s\" has no alias \"%s\"", ref->name, ref->alias),
			 errhint("Name a version with silvan.set_alias(); silvan.model_versions lists the aliases.")));
}

/*
 * Error for a model that is not in the catalog: for a version of a model
 * that exists, which version is missing; otherwise suggest a name that
 * differs only in case (any caller may read the catalog)
 */
void
CatalogReportNoModel(const char *name)
{
	CatalogSql	sql;
	Oid			argtype = TEXTOID;
	Datum		arg;
	char	   *similar = NULL;
	bool		exists = false;
	ModelRef	ref;
	MemoryContext outer = CurrentMemoryContext;

	if (!ModelRefSplit(name, &ref) || !CatalogHasVersions())
	{
		strlcpy(ref.name, name, sizeof(ref.name));
		ref.kind = MODEL_REF_DEPLOYED;
	}
	arg = CStringGetTextDatum(ref.name);
	CatalogSqlBegin(&sql);
	CatalogSqlRun(&sql, "SELECT name, name OPERATOR(pg_catalog.=) $1 FROM silvan.model"
				  " WHERE pg_catalog.lower(name) OPERATOR(pg_catalog.=) pg_catalog.lower($1)"
				  " ORDER BY 2 DESC, name LIMIT 1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		similar = MemoryContextStrdup(outer,
									  SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		exists = strcmp(similar, ref.name) == 0;
	}
	CatalogSqlEnd(&sql);
	if (exists && ref.kind != MODEL_REF_DEPLOYED)
		ReportNoVersion(&ref);
	if (similar != NULL && !exists)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name),
				 errhint("Did you mean model \"%s\"?  Model names are case-sensitive.", similar)));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("model \"%s\" does not exist", name),
			 errhint("Load it with silvan.load_model(); silvan.models lists the loaded models.")));
}

/* Error for a model that changed between the check and the write */
void
CatalogReportConcurrentChange(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("model \"%s\" was changed by another session", name),
			 errdetail("It was replaced or dropped while this call worked on it."),
			 errhint("Run the call again.")));
}

/*
 * As the owner: lock a model's row and check the caller's rights again;
 * false when the row is gone
 */
static bool
CatalogLockModel(const CatalogSql *sql, const char *name, CatalogModel *model)
{
	Assert(sql->as_owner);
	if (!CatalogFindModel(sql, name, model))
		return false;
	CheckModelOwner(sql, model, name);
	return true;
}

/*
 * Steps 1 and 2 for a model that must exist: check as the caller, become
 * the owner, lock and check again; the row must still be at revision
 */
void
CatalogTakeModel(CatalogSql *sql, const char *name, CatalogModel *model)
{
	CatalogModel locked;

	if (!CatalogFindModel(sql, name, model))
		CatalogReportNoModel(name);
	CheckModelOwner(sql, model, name);
	CatalogSqlBecomeOwner(sql);
	if (!CatalogLockModel(sql, name, &locked) || locked.id != model->id ||
		locked.revision != model->revision)
		CatalogReportConcurrentChange(name);
}

/*
 * CatalogTakeModel for work that CatalogCheckOwned came before: the row
 * must still be at the revision that work saw
 */
static void
CatalogTakeModelAt(CatalogSql *sql, const char *name, int64 revision, CatalogModel *model)
{
	CatalogTakeModel(sql, name, model);
	if (model->revision != revision)
		CatalogReportConcurrentChange(name);
}

/*
 * Check, as the caller, that a model exists and that the caller may change
 * it; returns its revision.  For work that comes before the write (a
 * profiling scan, compiling a schedule), so nothing runs for a caller
 * that could not store its result.
 */
int64
CatalogCheckOwned(const char *name)
{
	CatalogSql	sql;
	CatalogModel model;

	CatalogSqlBegin(&sql);
	if (!CatalogFindModel(&sql, name, &model))
		CatalogReportNoModel(name);
	CheckModelOwner(&sql, &model, name);
	CatalogSqlEnd(&sql);
	return model.revision;
}

/*
 * The reference of the version a reference names now ('churn' -> 'churn@3'),
 * for work that must stay with that version whatever is deployed while it
 * runs (tuning); the reference itself before versions or when it names
 * nothing (the work's own check reports that)
 */
char *
CatalogPinned(const char *reference)
{
	CatalogSql	sql;
	CatalogModel model;
	char	   *pinned = pstrdup(reference);
	MemoryContext outer = CurrentMemoryContext;

	if (!CatalogHasVersions())
		return pinned;
	CatalogSqlBegin(&sql);
	if (CatalogFindModel(&sql, reference, &model))
		pinned = MemoryContextStrdup(outer, psprintf("%s@%d", model.name, model.version));
	CatalogSqlEnd(&sql);
	return pinned;
}

/* Parse and validate a model's text or bytes, with errors for the user */
static Forest *
CatalogParse(const char *model_text, size_t len, bool binary, const char *format_name,
			 ModelFormat *format)
{
	SilvanStatus status;
	Forest	   *forest;
	ModelFormat requested;

	if (!ModelFormatFromName(format_name, &requested))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown model format \"%s\"", format_name),
				 errdetail("Argument \"format\" must be one of auto, xgboost, lightgbm, onnx.")));
	if (!binary && ModelFormatIsBinary(requested))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s models must be loaded as bytea", ModelFormatName(requested)),
				 errdetail("Argument \"model\" is text; %s models are binary.", ModelFormatName(requested)),
				 errhint("Pass the model's bytes, for example pg_read_binary_file('/path/model.onnx').")));
	forest = ParseModel(model_text, len, requested, format, &status);
	if (forest == NULL)
		SilvanReportStatus(ERROR, &status);
	return forest;
}

/*
 * The columns of a model's row, as statement parameters $1..$14, and
 * $15 for the owner (insert) or the id (replace); with versions, $16 the
 * version, $17 the source's digest, $18 the description, $19 the
 * metadata, $20 the role that loads it and $21 the source's size (given
 * apart: each use of the source's parameter in the statement would copy it)
 */
#define MODEL_COLUMNS 14
#define MODEL_PARAMS 21

/*
 * A model as given: text, or bytes (of a binary format, or of a text
 * format's text); not NUL-terminated.  text is the argument itself when
 * it was text, stored as it is, without a copy.
 */
typedef struct ModelSource
{
	const char *data;
	size_t		len;
	bool		binary;
	text	   *text;
} ModelSource;

typedef struct ModelRowArgs
{
	Oid			types[MODEL_PARAMS];
	Datum		values[MODEL_PARAMS];
	char		nulls[MODEL_PARAMS + 1];	/* ' ' or 'n' per parameter */
	bool		with_features;	/* the catalog has feature_names (0.3.0) */
} ModelRowArgs;

/* What a load gives a version besides the model: from load_model()'s arguments */
typedef struct LoadOptions
{
	bool		replace;
	bool		deploy;
	text	   *description;	/* NULL: none */
	Datum		metadata;		/* jsonb; (Datum) 0: none */
	ArrayType  *class_labels;	/* NULL: the file's, if any */
} LoadOptions;

/* The SHA-256 of a model as loaded, in hex */
static text *
SourceDigest(const char *data, size_t len)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	char		hex[PG_SHA256_DIGEST_LENGTH * 2 + 1];

	if (pg_cryptohash_init(ctx) < 0 || pg_cryptohash_update(ctx, (const uint8 *) data, len) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute the SHA-256 of a model: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	return cstring_to_text(hex);
}

/* Fill the parameters of a model's row; the forest's names are checked here */
static void
CatalogModelArgs(ModelRowArgs *row, const char *name, const ModelSource *source,
				 ModelFormat format, const Forest *forest, bytea *bytes)
{
	static const Oid types[MODEL_COLUMNS] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID,
	INT4OID, INT4OID, INT4OID, BYTEAOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, BYTEAOID,
	TEXTARRAYOID};
	bool		isnull;

	memcpy(row->types, types, sizeof(types));
	memset(row->nulls, ' ', sizeof(row->nulls) - 1);
	row->nulls[MODEL_PARAMS] = '\0';
	row->values[0] = CStringGetTextDatum(name);
	row->values[1] = CStringGetTextDatum(ModelFormatName(format));
	row->values[2] = CStringGetTextDatum(forest->objective);
	row->values[3] = CStringGetTextDatum(ForestTaskName(forest->task));
	row->values[4] = Int32GetDatum(forest->num_features);
	row->values[5] = Int32GetDatum(forest->task == FOREST_TASK_MULTICLASS || forest->task == FOREST_TASK_BINARY
								   ? forest->num_classes : 0);
	row->values[6] = Int32GetDatum(forest->num_trees);
	row->values[7] = Int32GetDatum(forest->max_depth);
	row->values[8] = PointerGetDatum(bytes);
	row->values[10] = FeaturesToArray(forest, FOREST_FEATURE_NAMES, false, &isnull);
	row->nulls[10] = isnull ? 'n' : ' ';
	row->values[11] = FeaturesToArray(forest, FOREST_FEATURE_TYPES, false, &isnull);
	row->nulls[11] = isnull ? 'n' : ' ';
	row->values[13] = FeaturesClassLabels(forest, &isnull);
	row->nulls[13] = isnull ? 'n' : ' ';
	if (source->binary)
	{
		bytea	   *copy = palloc(VARHDRSZ + source->len);

		SET_VARSIZE(copy, VARHDRSZ + source->len);
		memcpy(VARDATA(copy), source->data, source->len);
		row->values[12] = PointerGetDatum(copy);
		row->nulls[9] = 'n';
	}
	else
	{
		row->values[9] = PointerGetDatum(source->text ? source->text :
										 cstring_to_text_with_len(source->data, source->len));
		row->nulls[12] = 'n';
	}
	row->types[16] = TEXTOID;
	row->values[16] = PointerGetDatum(SourceDigest(source->data, source->len));
	row->types[20] = INT4OID;
	row->values[20] = Int32GetDatum((int32) Min(source->len, (size_t) PG_INT32_MAX));
	row->with_features = FeaturesInCatalog();
	if (source->binary && !row->with_features)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("silvan's catalog cannot store binary models yet"),
				 errdetail("The catalog was created by an older version of silvan."),
				 errhint("Run ALTER EXTENSION silvan UPDATE.")));
}

/* Insert a new model row owned by the caller; false when another has the name */
static bool
CatalogInsertModel(const CatalogSql *sql, ModelRowArgs *row, int64 *id)
{
	bool		isnull;

	row->types[MODEL_COLUMNS] = REGROLEOID;
	row->values[MODEL_COLUMNS] = ObjectIdGetDatum(sql->caller);
	/* no row limit: a limited INSERT ... RETURNING skips statement triggers */
	CatalogSqlRun(sql, row->with_features ?
				  "INSERT INTO silvan.model (name, format, objective, task, num_features,"
				  " num_classes, num_trees, max_depth, forest, source, feature_names,"
				  " feature_types, source_binary, class_labels, owner)"
				  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
				  " ON CONFLICT (name) DO NOTHING RETURNING id" :
				  "INSERT INTO silvan.model (name, format, objective, task, num_features,"
				  " num_classes, num_trees, max_depth, forest, source, owner)"
				  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $15)"
				  " ON CONFLICT (name) DO NOTHING RETURNING id",
				  MODEL_COLUMNS + 1, row->types, row->values, row->nulls,
				  SPI_OK_INSERT_RETURNING);
	if (SPI_processed != 1)
		return false;
	*id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return true;
}

/* Replace a locked model row: new forest and revision, its schedules and profile gone */
static void
CatalogReplaceModel(const CatalogSql *sql, ModelRowArgs *row, int64 id)
{
	row->types[MODEL_COLUMNS] = INT8OID;
	row->values[MODEL_COLUMNS] = Int64GetDatum(id);
	CatalogSqlRun(sql, row->with_features ?
				  "WITH schedules AS (DELETE FROM silvan.schedule"
				  "                    WHERE model_id OPERATOR(pg_catalog.=) $15),"
				  "     profiles AS (DELETE FROM silvan.profile"
				  "                   WHERE model_id OPERATOR(pg_catalog.=) $15)"
				  " UPDATE silvan.model SET format = $2, objective = $3, task = $4,"
				  " num_features = $5, num_classes = $6, num_trees = $7, max_depth = $8,"
				  " forest = $9, source = $10, feature_names = $11, feature_types = $12,"
				  " source_binary = $13, class_labels = $14, created = pg_catalog.now(),"
				  " revision = pg_catalog.nextval('silvan.model_revision_seq'::pg_catalog.regclass)"
				  " WHERE id OPERATOR(pg_catalog.=) $15 AND name OPERATOR(pg_catalog.=) $1" :
				  "WITH schedules AS (DELETE FROM silvan.schedule"
				  "                    WHERE model_id OPERATOR(pg_catalog.=) $15),"
				  "     profiles AS (DELETE FROM silvan.profile"
				  "                   WHERE model_id OPERATOR(pg_catalog.=) $15)"
				  " UPDATE silvan.model SET format = $2, objective = $3, task = $4,"
				  " num_features = $5, num_classes = $6, num_trees = $7, max_depth = $8,"
				  " forest = $9, source = $10, created = pg_catalog.now(),"
				  " revision = pg_catalog.nextval('silvan.model_revision_seq'::pg_catalog.regclass)"
				  " WHERE id OPERATOR(pg_catalog.=) $15 AND name OPERATOR(pg_catalog.=) $1",
				  MODEL_COLUMNS + 1, row->types, row->values, row->nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		elog(ERROR, "could not replace a locked model row");
}

/* Serialize a forest into a bytea */
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
void
CatalogRequireArgument(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
}

/* Error for a load of a name that is taken, without replace */
static void
ReportModelExists(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_DUPLICATE_OBJECT),
			 errmsg("model \"%s\" already exists", name),
			 errhint("Pass replace => true to load a new version of it.")));
}

/* Insert a model row as a version of a name in the registry; its id */
static int64
CatalogInsertVersion(const CatalogSql *sql, ModelRowArgs *row, int32 version, Oid owner)
{
	bool		isnull;

	row->types[14] = REGROLEOID;
	row->values[14] = ObjectIdGetDatum(owner);
	row->types[15] = INT4OID;
	row->values[15] = Int32GetDatum(version);
	row->types[19] = REGROLEOID;
	row->values[19] = ObjectIdGetDatum(sql->caller);
	/* no row limit: a limited INSERT ... RETURNING skips statement triggers */
	CatalogSqlRun(sql,
				  "INSERT INTO silvan.model (name, format, objective, task, num_features,"
				  " num_classes, num_trees, max_depth, forest, source, feature_names,"
				  " feature_types, source_binary, class_labels, owner, version, source_sha256,"
				  " description, metadata, loaded_by, source_bytes)"
				  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,"
				  " $16, $17, $18, $19, $20, $21) RETURNING id",
				  MODEL_PARAMS, row->types, row->values, row->nulls, SPI_OK_INSERT_RETURNING);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* A forest from the catalog's binary form (a bytea Datum) */
static Forest *
CatalogForestOf(Datum form)
{
	bytea	   *bytes = DatumGetByteaPP(form);
	SilvanStatus status;
	Forest	   *forest = ForestDeserialize((const uint8_t *) VARDATA_ANY(bytes),
										   VARSIZE_ANY_EXHDR(bytes), &status);

	if (forest == NULL)
		SilvanReportStatus(ERROR, &status);
	return forest;
}

/*
 * As the owner, under the name's lock: give a new version the schedules of
 * the version deployed before it, when both forests have the same shape
 * (ForestSameShape: every schedule means the same for both); a tuned one's
 * provenance says which version it was tuned for.  Profiles stay: they
 * count the visits of the old trees' thresholds.
 */
static void
CatalogCarrySchedules(const CatalogSql *sql, const char *name, int32 from_version,
					  int64 to_id, Datum to_form)
{
	Oid			argtypes[3] = {TEXTOID, INT4OID, INT8OID};
	Datum		args[3] = {CStringGetTextDatum(name), Int32GetDatum(from_version), Int64GetDatum(to_id)};
	bool		isnull;
	Forest	   *from;
	Forest	   *to;
	bool		same;

	CatalogSqlRun(sql, "SELECT m.forest FROM silvan.model m WHERE m.name OPERATOR(pg_catalog.=) $1"
				  " AND m.version OPERATOR(pg_catalog.=) $2"
				  " AND EXISTS (SELECT 1 FROM silvan.schedule s WHERE s.model_id OPERATOR(pg_catalog.=) m.id)",
				  2, argtypes, args, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return;
	from = CatalogForestOf(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	to = CatalogForestOf(to_form);
	same = ForestSameShape(from, to);
	ForestFree(from);
	ForestFree(to);
	if (!same)
		return;
	CatalogSqlRun(sql, "INSERT INTO silvan.schedule (model_id, target, batch_size, schedule, origin, provenance)"
				  " SELECT $3, s.target, s.batch_size, s.schedule, s.origin,"
				  "  s.provenance OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('carried_from_version', $2)"
				  " FROM silvan.schedule s JOIN silvan.model m ON m.id OPERATOR(pg_catalog.=) s.model_id"
				  " WHERE m.name OPERATOR(pg_catalog.=) $1 AND m.version OPERATOR(pg_catalog.=) $2",
				  3, argtypes, args, NULL, SPI_OK_INSERT);
}

/*
 * Store a parsed model as a new version of name: version 1 of a new name,
 * or the next of a name that exists when replace allows (deployed unless
 * deploy is false).  The registry's row of the name is the lock; as
 * CatalogStoreModel, a name that appears or disappears under the first
 * pass sends it round once more.
 */
static int64
CatalogStoreVersion(const char *name, ModelRowArgs *row, const LoadOptions *options)
{
	CatalogSql	sql;
	RegistryName entry = {0};
	bool		exists;
	int64		id;

	CatalogSqlBegin(&sql);
	exists = RegistryFind(&sql, name, &entry);
	if (exists && !options->replace)
		ReportModelExists(name);
	if (!exists)
		CatalogCheckNewName(name, "name");
	if (exists)
		CatalogCheckPrivilege(sql.caller, entry.owner, entry.acl, ACL_UPDATE, name);
	CatalogSqlBecomeOwner(&sql);
	for (int attempt = 0;; attempt++)
	{
		if (!exists && RegistryInsert(&sql, name))
		{
			id = CatalogInsertVersion(&sql, row, 1, sql.caller);
			break;
		}
		if (!exists && !options->replace)
			ReportModelExists(name);
		exists = RegistryFind(&sql, name, &entry);
		if (exists)
		{
			CatalogCheckPrivilege(sql.caller, entry.owner, entry.acl, ACL_UPDATE, name);
			id = CatalogInsertVersion(&sql, row, entry.last_version + 1,
									  OidIsValid(entry.owner) ? entry.owner : sql.caller);
			CatalogCarrySchedules(&sql, name, entry.deployed, id, row->values[8]);
			RegistryAddVersion(&sql, name, entry.last_version + 1, options->deploy);
			break;
		}
		if (attempt == 2)
			CatalogReportConcurrentChange(name);
	}
	CatalogSqlEnd(&sql);
	return id;
}

/*
 * Store a parsed model under name: insert it, or replace the existing row
 * when replace allows.  The first pass decides from what step 1 saw; a
 * row that appears or disappears under it sends it round once more.
 */
static int64
CatalogStoreModel(const char *name, ModelRowArgs *row, bool replace)
{
	CatalogSql	sql;
	CatalogModel model = {0};
	bool		exists;

	CatalogSqlBegin(&sql);
	exists = CatalogFindModel(&sql, name, &model);
	if (exists && !replace)
		ReportModelExists(name);
	if (exists)
		CheckModelOwner(&sql, &model, name);
	CatalogSqlBecomeOwner(&sql);
	for (int attempt = 0;; attempt++)
	{
		if (!exists && CatalogInsertModel(&sql, row, &model.id))
			break;
		if (!exists && !replace)
			ReportModelExists(name);
		exists = CatalogLockModel(&sql, name, &model);
		if (exists)
		{
			CatalogReplaceModel(&sql, row, model.id);
			break;
		}
		if (attempt == 2)
			CatalogReportConcurrentChange(name);
	}
	CatalogSqlEnd(&sql);
	return model.id;
}

/*
 * Error unless name may be given to a new model: 1 to 63 bytes, and no
 * "@", which separates a model from its version in references
 */
void
CatalogCheckNewName(const char *name, const char *argname)
{
	if (strlen(name) < 1 || strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid model name"),
				 errdetail("Argument \"%s\" must have 1 to %d bytes.", argname, NAMEDATALEN - 1)));
	if (strchr(name, '@') != NULL && CatalogHasVersions())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid model name \"%s\"", name),
				 errdetail("Argument \"%s\" must not contain \"@\", which separates a model's name from its version, as in churn@3.",
						   argname)));
}

/*
 * Give a parsed classifier the class labels of load_model's argument, one
 * per class, when its file names none
 */
static void
CatalogSetClassLabels(Forest *forest, ArrayType *labels)
{
	Datum	   *items;
	bool	   *nulls;
	int			n;
	const char **strings;
	size_t	   *lengths;
	SilvanStatus status;

	if (forest->task != FOREST_TASK_BINARY && forest->task != FOREST_TASK_MULTICLASS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a %s model has no classes to label", ForestTaskName(forest->task)),
				 errdetail("Argument \"class_labels\" is given; only binary and multi-class models predict a class.")));
	if (forest->class_labels != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the model's file names its classes already"),
				 errdetail("Argument \"class_labels\" is given for a model whose file has class labels.")));
	deconstruct_array(labels, TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &n);
	if (ARR_NDIM(labels) > 1 || n != forest->num_classes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wrong number of class labels"),
				 errdetail("Argument \"class_labels\" has %d labels; the model has %d classes.",
						   n, forest->num_classes)));
	strings = palloc(sizeof(char *) * n);
	lengths = palloc(sizeof(size_t) * n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("class labels must not be null"),
					 errdetail("Element %d of argument \"class_labels\" is null.", i + 1)));
		strings[i] = TextDatumGetCString(items[i]);
		lengths[i] = strlen(strings[i]);
	}
	if (!ForestSetClassLabels(forest, strings, lengths, n, &status))
		SilvanReportStatus(ERROR, &status);
}

/* Parse, validate and store a model given as text or bytes */
static int64
CatalogLoad(const char *name, ModelSource *source, const char *format_name,
			const LoadOptions *options)
{
	ModelFormat format;
	Forest	   *forest;
	ModelRowArgs row;

	if (strlen(name) < 1 || strlen(name) >= NAMEDATALEN)
		CatalogCheckNewName(name, "name");
	forest = CatalogParse(source->data, source->len, source->binary, format_name, &format);
	PG_TRY();
	{
		/* bytes of a text format are kept as text, which they must then be */
		if (source->binary && !ModelFormatIsBinary(format))
		{
			if (memchr(source->data, '\0', source->len) != NULL ||
				!pg_verifymbstr(source->data, (int) source->len, true))
				ereport(ERROR,
						(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
						 errmsg("invalid model text"),
						 errdetail("Argument \"model\" holds a %s model that is not valid text in encoding \"%s\".",
								   ModelFormatName(format), GetDatabaseEncodingName())));
			source->binary = false;
		}
		if (options->class_labels != NULL)
			CatalogSetClassLabels(forest, options->class_labels);
		CatalogModelArgs(&row, name, source, format, forest, CatalogSerialize(forest));
	}
	PG_FINALLY();
	{
		ForestFree(forest);
	}
	PG_END_TRY();
	if (!CatalogHasVersions())
		return CatalogStoreModel(name, &row, options->replace);
	row.types[17] = TEXTOID;
	row.values[17] = PointerGetDatum(options->description);
	row.nulls[17] = options->description ? ' ' : 'n';
	row.types[18] = JSONBOID;
	row.values[18] = options->metadata;
	row.nulls[18] = options->metadata ? ' ' : 'n';
	return CatalogStoreVersion(name, &row, options);
}

/*
 * The shared body of both load_model() forms: the other arguments, then
 * load; with tune (0.4.0 on), queue a tuning job with tune_async's
 * defaults for the version loaded
 */
static int64
CatalogLoadCall(FunctionCallInfo fcinfo, ModelSource *source)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	LoadOptions options;
	int64		id;

	options.replace = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	options.deploy = PG_NARGS() <= 5 || PG_ARGISNULL(5) || PG_GETARG_BOOL(5);
	options.description = PG_NARGS() > 6 && !PG_ARGISNULL(6) ? PG_GETARG_TEXT_PP(6) : NULL;
	options.metadata = PG_NARGS() > 7 && !PG_ARGISNULL(7) ? PG_GETARG_DATUM(7) : (Datum) 0;
	options.class_labels = PG_NARGS() > 8 && !PG_ARGISNULL(8) ? PG_GETARG_ARRAYTYPE_P(8) : NULL;
	id = CatalogLoad(name, source,
					 PG_ARGISNULL(2) ? "auto" : text_to_cstring(PG_GETARG_TEXT_PP(2)), &options);
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4) && PG_GETARG_BOOL(4))
	{
		TuneRequest request;
		CatalogSql	sql;

		/* the caller stored the model just now: queue as the owner, who sees it */
		TuneRequestDefaults(&request, name);
		CatalogSqlBegin(&sql);
		CatalogSqlBecomeOwner(&sql);
		(void) CatalogInsertTuning(&sql, id, &request);
		CatalogSqlEnd(&sql);
	}
	return id;
}

PG_FUNCTION_INFO_V1(silvan_load_model);
PG_FUNCTION_INFO_V1(silvan_load_model_bytes);

/* load_model(name, model text, format, replace): parse, validate, store */
Datum
silvan_load_model(PG_FUNCTION_ARGS)
{
	ModelSource source;

	CatalogRequireArgument(fcinfo, 0, "name");
	CatalogRequireArgument(fcinfo, 1, "model");
	/* the readers take text by its length: no copy (a big model's bytes count) */
	source.text = PG_GETARG_TEXT_PP(1);
	source.data = VARDATA_ANY(source.text);
	source.len = VARSIZE_ANY_EXHDR(source.text);
	source.binary = false;
	PG_RETURN_INT64(CatalogLoadCall(fcinfo, &source));
}

/* load_model(name, model bytea, format, replace): the same for a model's bytes */
Datum
silvan_load_model_bytes(PG_FUNCTION_ARGS)
{
	bytea	   *model;
	ModelSource source;

	CatalogRequireArgument(fcinfo, 0, "name");
	CatalogRequireArgument(fcinfo, 1, "model");
	model = PG_GETARG_BYTEA_PP(1);
	source.len = VARSIZE_ANY_EXHDR(model);
	source.data = VARDATA_ANY(model);
	source.binary = true;
	source.text = NULL;
	PG_RETURN_INT64(CatalogLoadCall(fcinfo, &source));
}

PG_FUNCTION_INFO_V1(silvan_drop_model);

/*
 * drop_model(reference): drop a model, or one version of it (registry.c);
 * true when dropped, false when there was none.  Before versions, the
 * model's row.
 */
Datum
silvan_drop_model(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CatalogSql	sql;
	CatalogModel model;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	bool		exists;

	if (CatalogHasVersions())
	{
		CatalogSqlBegin(&sql);
		exists = RegistryDrop(&sql, name);
		CatalogSqlEnd(&sql);
		PG_RETURN_BOOL(exists);
	}
	CatalogSqlBegin(&sql);
	exists = CatalogFindModel(&sql, name, &model);
	if (exists)
	{
		CheckModelOwner(&sql, &model, name);
		CatalogSqlBecomeOwner(&sql);
		exists = CatalogLockModel(&sql, name, &model);
	}
	if (exists)
	{
		args[0] = Int64GetDatum(model.id);
		CatalogSqlRun(&sql, "DELETE FROM silvan.model WHERE id OPERATOR(pg_catalog.=) $1",
					  1, argtypes, args, NULL, SPI_OK_DELETE);
	}
	CatalogSqlEnd(&sql);
	PG_RETURN_BOOL(exists);
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

/*
 * Parse a schedule and compile it for the model once, so a bad one is
 * never stored; the model must still be at revision
 */
static void
CatalogCheckSchedule(const char *name, const char *schedule_text, const char *target,
					 int64 revision)
{
	SilvanStatus status;
	Schedule	schedule;
	ModelVersion *version;
	CompiledForest *code;
	CompileOptions options;

	if (!ScheduleParse(schedule_text, &schedule, &status))
		SilvanReportStatus(ERROR, &status);
	SilvanCompileOptions(&options, SilvanTargetFor(target, false), NULL);
	version = ModelCacheLookup(name);
	if (version->revision != revision)
		CatalogReportConcurrentChange(name);
	/* a cuda schedule is checked by emitting its PTX (for sm_80): no device needed */
	code = CompileForestFor(ModelVersionForest(version), &schedule, version->profile, &options,
							&status);
	if (code == NULL)
		SilvanReportStatus(ERROR, &status);
	CompiledForestFree(code);
}

PG_FUNCTION_INFO_V1(silvan_set_schedule);

/*
 * set_schedule(model, schedule, target, batch_size): store, replace or
 * (NULL) remove; true when something was stored or removed
 */
Datum
silvan_set_schedule(PG_FUNCTION_ARGS)
{
	char	   *name;
	const char *target;
	int32		batch_size = CatalogBatchSize(fcinfo, 3);
	CatalogSql	sql;
	CatalogModel model;
	Oid			argtypes[4] = {INT8OID, TEXTOID, INT4OID, TEXTOID};
	Datum		args[4];
	char		nulls[4] = {' ', ' ', batch_size == 0 ? 'n' : ' ', ' '};
	int64		revision;
	bool		changed;

	CatalogRequireArgument(fcinfo, 0, "model");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	target = SilvanCheckTarget(PG_ARGISNULL(2) ? "cpu" : text_to_cstring(PG_GETARG_TEXT_PP(2)),
							   "target", false);
	revision = CatalogCheckOwned(name);
	if (!PG_ARGISNULL(1))
		CatalogCheckSchedule(name, text_to_cstring(PG_GETARG_TEXT_PP(1)), target, revision);

	CatalogSqlBegin(&sql);
	CatalogTakeModelAt(&sql, name, revision, &model);
	args[0] = Int64GetDatum(model.id);
	args[1] = CStringGetTextDatum(target);
	args[2] = Int32GetDatum(batch_size);
	CatalogSqlRun(&sql,
				  "DELETE FROM silvan.schedule WHERE model_id OPERATOR(pg_catalog.=) $1"
				  " AND target OPERATOR(pg_catalog.=) $2"
				  " AND COALESCE(batch_size, 0) OPERATOR(pg_catalog.=) COALESCE($3, 0)",
				  3, argtypes, args, nulls, SPI_OK_DELETE);
	changed = SPI_processed > 0;
	if (!PG_ARGISNULL(1))
	{
		args[3] = PG_GETARG_DATUM(1);
		CatalogSqlRun(&sql,
					  "INSERT INTO silvan.schedule (model_id, target, batch_size, schedule)"
					  " VALUES ($1, $2, $3, $4)",
					  4, argtypes, args, nulls, SPI_OK_INSERT);
		changed = true;
	}
	CatalogSqlEnd(&sql);
	PG_RETURN_BOOL(changed);
}

PG_FUNCTION_INFO_V1(silvan_reset_schedules);

/*
 * reset_schedules(model, target): remove every stored schedule of the
 * model, tuned or set by hand, for one target (NULL: all); how many went
 */
Datum
silvan_reset_schedules(PG_FUNCTION_ARGS)
{
	char	   *name;
	CatalogSql	sql;
	CatalogModel model;
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', PG_ARGISNULL(1) ? 'n' : ' '};
	int64		revision;
	uint64		removed;

	CatalogRequireArgument(fcinfo, 0, "model");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
		args[1] = CStringGetTextDatum(SilvanCheckTarget(text_to_cstring(PG_GETARG_TEXT_PP(1)),
														"target", false));
	revision = CatalogCheckOwned(name);
	CatalogSqlBegin(&sql);
	CatalogTakeModelAt(&sql, name, revision, &model);
	args[0] = Int64GetDatum(model.id);
	CatalogSqlRun(&sql,
				  "DELETE FROM silvan.schedule WHERE model_id OPERATOR(pg_catalog.=) $1"
				  " AND ($2 IS NULL OR target OPERATOR(pg_catalog.=) $2)",
				  2, argtypes, args, nulls, SPI_OK_DELETE);
	removed = SPI_processed;
	CatalogSqlEnd(&sql);
	PG_RETURN_INT32((int32) removed);
}

/*
 * Store the schedule the tuner found for a model at revision, a target and
 * a batch size, replacing what is stored for that size; with schedule NULL,
 * remove an earlier tuned schedule for it (one set by hand stays)
 */
void
CatalogStoreTuned(const char *name, const char *target, int64 revision, int32 batch_size,
				  const char *schedule, const char *provenance)
{
	CatalogSql	sql;
	CatalogModel model;
	Oid			argtypes[5] = {INT8OID, INT4OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[5];

	CatalogSqlBegin(&sql);
	CatalogTakeModelAt(&sql, name, revision, &model);
	args[0] = Int64GetDatum(model.id);
	args[1] = Int32GetDatum(batch_size);
	args[2] = CStringGetTextDatum(target);
	CatalogSqlRun(&sql, schedule != NULL ?
				  "DELETE FROM silvan.schedule WHERE model_id OPERATOR(pg_catalog.=) $1"
				  " AND target OPERATOR(pg_catalog.=) $3"
				  " AND batch_size OPERATOR(pg_catalog.=) $2" :
				  "DELETE FROM silvan.schedule WHERE model_id OPERATOR(pg_catalog.=) $1"
				  " AND target OPERATOR(pg_catalog.=) $3"
				  " AND batch_size OPERATOR(pg_catalog.=) $2"
				  " AND origin OPERATOR(pg_catalog.=) 'tuned'::pg_catalog.text",
				  3, argtypes, args, NULL, SPI_OK_DELETE);
	if (schedule != NULL)
	{
		args[3] = CStringGetTextDatum(schedule);
		args[4] = CStringGetTextDatum(provenance);
		CatalogSqlRun(&sql,
					  "INSERT INTO silvan.schedule (model_id, target, batch_size, schedule, origin,"
					  " provenance) VALUES ($1, $3, $2, $4, 'tuned', $5::pg_catalog.jsonb)",
					  5, argtypes, args, NULL, SPI_OK_INSERT);
	}
	CatalogSqlEnd(&sql);
}

/* An int4[] of n values */
static Datum
Int4ArrayDatum(const int32 *values, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = Int32GetDatum(values[i]);
	return PointerGetDatum(construct_array(elems, n, INT4OID, 4, true, TYPALIGN_INT));
}

/* Insert a tuning job for a model (as the catalog's owner); its id */
static int64
CatalogInsertTuning(const CatalogSql *sql, int64 model_id, const TuneRequest *request)
{
	static const char *const strategies[] = {"heuristic", "exhaustive"};
	Oid			argtypes[11] = {INT8OID, OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTARRAYOID,
	INT4ARRAYOID, TEXTOID, TEXTOID, INTERVALOID, BOOLOID};
	Datum		args[11];
	char		nulls[11] = "           ";
	bool		isnull;

	Assert(sql->as_owner);
	CatalogCheckTuningQuota(sql, request);
	args[0] = Int64GetDatum(model_id);
	args[1] = ObjectIdGetDatum(sql->caller);
	args[2] = ObjectIdGetDatum(request->sample_relid);
	nulls[2] = OidIsValid(request->sample_relid) ? ' ' : 'n';
	args[3] = request->sample_query ? CStringGetTextDatum(request->sample_query) : (Datum) 0;
	nulls[3] = request->sample_query ? ' ' : 'n';
	args[4] = request->key_column ? CStringGetTextDatum(request->key_column) : (Datum) 0;
	nulls[4] = request->key_column ? ' ' : 'n';
	args[5] = PointerGetDatum(request->feature_columns);
	nulls[5] = request->feature_columns ? ' ' : 'n';
	args[6] = Int4ArrayDatum(request->batch_sizes, request->num_batch_sizes);
	args[7] = CStringGetTextDatum(request->target);
	args[8] = CStringGetTextDatum(strategies[request->strategy]);
	args[9] = request->budget;
	args[10] = BoolGetDatum(request->exact);
	CatalogSqlRun(sql,
				  "INSERT INTO silvan.tuning_job (model_id, owner, sample_relation, sample_query,"
				  " key_column, feature_columns, batch_sizes, target, strategy, budget, exact)"
				  " VALUES ($1, $2::pg_catalog.regrole, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
				  " RETURNING id",
				  11, argtypes, args, nulls, SPI_OK_INSERT_RETURNING);
	TuneLaunchAtCommit();
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Queue a tuning job for a model the caller may change; its id.  The
 * worker is started when the transaction commits (tune_worker.c).
 */
int64
CatalogQueueTuning(const TuneRequest *request)
{
	CatalogSql	sql;
	CatalogModel model;
	int64		id;

	CatalogSqlBegin(&sql);
	CatalogTakeModel(&sql, request->model, &model);
	id = CatalogInsertTuning(&sql, model.id, request);
	CatalogSqlEnd(&sql);
	return id;
}

/*
 * Has the caller the rights of the owner of model id (or may it manage
 * the models of an owner that is gone)?  false when it cannot see the row
 */
bool
CatalogOwnsModel(int64 id)
{
	CatalogSql	sql;
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(id);
	bool		isnull;
	bool		owns = false;

	CatalogSqlBegin(&sql);
	CatalogSqlRun(&sql, "SELECT owner::pg_catalog.oid FROM silvan.model WHERE id OPERATOR(pg_catalog.=) $1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		owns = CatalogMayManage(sql.caller,
								DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
															   SPI_tuptable->tupdesc, 1, &isnull)));
	CatalogSqlEnd(&sql);
	return owns;
}

/*
 * Refuse a job that would take the caller past its share of the tuning
 * worker: silvan.tune_max_jobs_per_role jobs queued or running, and
 * silvan.tune_max_budget_per_role of budget among them (0: no limit).
 * Jobs queued at the same moment by other sessions of the role are not
 * seen, so the limits hold within a few jobs.
 */
static void
CatalogCheckTuningQuota(const CatalogSql *sql, const TuneRequest *request)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(sql->caller)};
	bool		isnull;
	int64		jobs;
	double		seconds;

	CatalogSqlRun(sql,
				  "SELECT pg_catalog.count(*), COALESCE(pg_catalog.sum(pg_catalog.date_part('epoch',"
				  " budget)), 0) FROM silvan.tuning_job WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1"
				  " AND state OPERATOR(pg_catalog.=) ANY ('{queued,running}'::pg_catalog.text[])",
				  1, argtypes, args, NULL, SPI_OK_SELECT);
	jobs = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	seconds = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (silvan_tune_max_jobs_per_role > 0 && jobs >= silvan_tune_max_jobs_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many tuning jobs queued by role \"%s\"", GetUserNameFromId(sql->caller, false)),
				 errdetail("The role has %lld jobs queued or running; silvan.tune_max_jobs_per_role is %d.",
						   (long long) jobs, silvan_tune_max_jobs_per_role),
				 errhint("Wait for them to finish, cancel some with silvan.cancel_tuning(), or ask a superuser to raise the limit.")));
	if (silvan_tune_max_budget_per_role > 0 &&
		seconds + request->budget_seconds > silvan_tune_max_budget_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("tuning budget of role \"%s\" exceeded", GetUserNameFromId(sql->caller, false)),
				 errdetail("The role's queued and running jobs have %.0f s of budget and this one %.0f s; silvan.tune_max_budget_per_role is %d s.",
						   seconds, request->budget_seconds, silvan_tune_max_budget_per_role),
				 errhint("Give the job a smaller budget, wait for the role's jobs to finish, or ask a superuser to raise the limit.")));
}

/*
 * Stop the tuning worker running a job: a query cancel, sent while the
 * caller holds the job's row, so that the worker is still on this job
 * (it cannot record its end before the caller commits).  Only a pid that
 * is a silvan tuning worker's gets the signal.
 */
static void
CatalogStopWorker(int32 pid)
{
	const char *type = GetBackgroundWorkerTypeByPid((pid_t) pid);

	if (type != NULL && strcmp(type, "silvan tuning worker") == 0 && kill(pid, SIGINT) != 0)
		ereport(WARNING,
				(errmsg("could not signal the tuning worker with pid %d: %m", pid),
				 errdetail("The job is cancelled; the worker stores nothing and stops at its next candidate.")));
}

/*
 * Cancel a queued or running tuning job: a running one's worker gets a
 * query cancel and stops whatever it is doing (its sample query, a
 * compile, a timing) and stores nothing; true when it was queued or
 * running.  The job's owner, or whoever may change its model, may cancel
 * it.
 */
bool
CatalogCancelTuning(int64 job)
{
	CatalogSql	sql;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(job)};
	bool		isnull;
	bool		running;
	Oid			job_owner;
	Oid			model_owner;
	int32		pid;
	bool		changed;

	CatalogSqlBegin(&sql);
	CatalogSqlBecomeOwner(&sql);
	CatalogSqlRun(&sql,
				  "SELECT j.owner::pg_catalog.oid, m.owner::pg_catalog.oid,"
				  " j.state OPERATOR(pg_catalog.=) 'running', j.worker_pid"
				  " FROM silvan.tuning_job j JOIN silvan.model m ON m.id OPERATOR(pg_catalog.=) j.model_id"
				  " WHERE j.id OPERATOR(pg_catalog.=) $1 FOR UPDATE OF j",
				  1, argtypes, args, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tuning job %lld does not exist", (long long) job),
				 errhint("silvan.tuning_jobs lists the jobs you may see.")));
	job_owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	model_owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	running = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	pid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	if (isnull)
		pid = 0;
	if (!has_privs_of_role(sql.caller, job_owner) && !CatalogMayManage(sql.caller, model_owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of tuning job %lld", (long long) job),
				 errdetail("Only the job's owner, the model's owner, a member of their roles, or a superuser may cancel it.")));
	CatalogSqlRun(&sql,
				  "UPDATE silvan.tuning_job SET state = 'cancelled', finished = pg_catalog.now()"
				  " WHERE id OPERATOR(pg_catalog.=) $1"
				  " AND state OPERATOR(pg_catalog.=) ANY ('{queued,running}'::pg_catalog.text[])",
				  1, argtypes, args, NULL, SPI_OK_UPDATE);
	changed = SPI_processed > 0;
	if (changed && running && pid > 0)
		CatalogStopWorker(pid);
	CatalogSqlEnd(&sql);
	return changed;
}

/* Store the node hit counts of a profiling scan of revision of a model */
void
CatalogStoreProfile(const char *name, int64 revision, int64 num_rows,
					const int64 *node_hits, int64 num_nodes)
{
	CatalogSql	sql;
	CatalogModel model;
	Oid			argtypes[4] = {INT8OID, INT8OID, INT8OID, INT8ARRAYOID};
	Datum		args[4];
	Datum	   *hits = palloc(sizeof(Datum) * Max(num_nodes, 1));

	for (int64 i = 0; i < num_nodes; i++)
		hits[i] = Int64GetDatum(node_hits[i]);
	CatalogSqlBegin(&sql);
	CatalogTakeModelAt(&sql, name, revision, &model);
	args[0] = Int64GetDatum(model.id);
	args[1] = Int64GetDatum(revision);
	args[2] = Int64GetDatum(num_rows);
	args[3] = PointerGetDatum(construct_array(hits, num_nodes, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	CatalogSqlRun(&sql,
				  "INSERT INTO silvan.profile (model_id, revision, num_rows, node_hits, created)"
				  " VALUES ($1, $2, $3, $4, pg_catalog.now()) ON CONFLICT (model_id) DO UPDATE"
				  " SET revision = excluded.revision, num_rows = excluded.num_rows,"
				  " node_hits = excluded.node_hits, created = excluded.created",
				  4, argtypes, args, NULL, SPI_OK_INSERT);
	CatalogSqlEnd(&sql);
}

/* Error unless a role (given by OID, as regrole) exists */
static void
CheckRoleExists(Oid role, const char *argname)
{
	if (!RoleExists(role))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role with OID %u does not exist", role),
				 errdetail("Argument \"%s\" must name an existing role.", argname)));
}

PG_FUNCTION_INFO_V1(silvan_reassign_models);

/*
 * reassign_models(old_owner, new_owner): give every model of old_owner to
 * new_owner; returns how many.  As REASSIGN OWNED, the caller needs the
 * privileges of both roles; the models of a dropped role (given by OID)
 * may be reassigned by the database's owner.
 */
Datum
silvan_reassign_models(PG_FUNCTION_ARGS)
{
	Oid			old_owner = PG_GETARG_OID(0);
	Oid			new_owner = PG_GETARG_OID(1);
	CatalogSql	sql;
	Oid			argtypes[2] = {OIDOID, REGROLEOID};
	Datum		args[2] = {ObjectIdGetDatum(old_owner), ObjectIdGetDatum(new_owner)};
	int64		reassigned;
	bool		isnull;

	CheckRoleExists(new_owner, "new_owner");
	CatalogSqlBegin(&sql);
	if (!CatalogMayManage(sql.caller, old_owner) || !has_privs_of_role(sql.caller, new_owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to reassign models"),
				 errdetail("Only roles with privileges of both argument \"old_owner\" and argument \"new_owner\" may reassign models; the database's owner may reassign the models of a dropped role.")));
	CatalogSqlBecomeOwner(&sql);
	/* every version of a model has its owner: count the models */
	CatalogSqlRun(&sql,
				  "WITH moved AS (UPDATE silvan.model SET owner = $2"
				  "               WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1 RETURNING name)"
				  " SELECT pg_catalog.count(DISTINCT name) FROM moved",
				  2, argtypes, args, NULL, SPI_OK_SELECT);
	reassigned = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	CatalogSqlEnd(&sql);
	PG_RETURN_INT64(reassigned);
}
