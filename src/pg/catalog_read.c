/*
 * catalog_read.c
 *		A model's state read from the catalog tables directly, without SQL.
 *
 * The model cache asks for a model's state at its first use in a backend
 * and after any change to the catalog.  Through SPI each of its queries
 * is parsed, analyzed and planned anew, and in a fresh backend that cold
 * work (the functions and operators of the queries looked up in syscaches
 * not filled yet) is most of the first prediction's time, more than
 * loading the machine code.  Here the rows are found
 * through the tables' own indexes, in the calling query's snapshot, the
 * way PostgreSQL's code reads its own catalogs (genam.c): silvan.model,
 * silvan.registry and silvan.model_alias by name (the version a reference
 * names, model_ref.c), silvan.schedule and silvan.profile by model id.
 *
 * The read is silvan's own, as the catalog's owner reads through SQL
 * (cache.c): the caller may not read a model's binary form, schedules or
 * profile, which scoring needs; whether it may use the model is decided
 * after the read, by the model's privileges and by row-level security on
 * silvan.model (cache.c).  Each index must be there and a snapshot active,
 * or the read is declined and goes through SQL.  Columns are found by
 * name, so a catalog of an older version
 * (the library updated before ALTER EXTENSION UPDATE) reads as it does
 * through SQL: an absent column is NULL.  A tuned schedule's provenance
 * is put in words as cache.c's query does.
 *
 * The state's fingerprint (what cache.c compares to reuse a version) holds
 * every cpu schedule's batch size, creation time and whole text, the
 * profile's row count and creation time, and the model's owner and
 * privileges; it starts with "index:" so that it never equals one made
 * through SQL.
 */
#include "silvan_pg.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* One catalog table, open, with the index its rows are found by */
typedef struct CatalogTable
{
	Relation	rel;
	Oid			index;			/* btree whose first column is the key */
	Oid			collation;		/* of that column in the index */
	AttrNumber	key;			/* the key column */
	Snapshot	snapshot;		/* what the scans see */
} CatalogTable;

/* A row of silvan.schedule, copied out of the scan */
typedef struct ScheduleRow
{
	char		target[8];
	int32		batch_size;
	char	   *text;
	bool		tuned;
	char	   *provenance;
} ScheduleRow;

/* The attribute number of a column; InvalidAttrNumber if the table lacks it */
static AttrNumber
ColumnOf(Relation rel, const char *name)
{
	return get_attnum(RelationGetRelid(rel), name);
}

/* A column of a tuple; NULL (*isnull) when the table lacks the column */
static Datum
ColumnValue(HeapTuple tuple, Relation rel, const char *name, bool *isnull)
{
	AttrNumber	attnum = ColumnOf(rel, name);

	if (attnum == InvalidAttrNumber)
	{
		*isnull = true;
		return (Datum) 0;
	}
	return heap_getattr(tuple, attnum, RelationGetDescr(rel), isnull);
}

/* A valid btree index of rel whose first column is attnum; InvalidOid if none */
static Oid
IndexOnColumn(Relation rel, AttrNumber attnum, Oid *collation)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			found = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (index->rd_rel->relam == BTREE_AM_OID && index->rd_index->indisvalid &&
			index->rd_index->indkey.values[0] == attnum)
		{
			found = RelationGetRelid(index);
			*collation = index->rd_indcollation[0];
		}
		index_close(index, AccessShareLock);
		if (OidIsValid(found))
			break;
	}
	list_free(indexes);
	return found;
}

/*
 * Open a catalog table for reading by its key column, as SQL would
 * (AccessShareLock); false, with nothing left open, when the read must go
 * through SQL instead (no such table or index)
 */
static bool
CatalogTableOpen(CatalogTable *table, const char *relname, const char *key)
{
	Oid			relid = SilvanCatalogReadRelid(relname);

	table->rel = NULL;
	if (!OidIsValid(relid))
		return false;
	table->rel = table_open(relid, AccessShareLock);
	table->key = ColumnOf(table->rel, key);
	table->index = table->key == InvalidAttrNumber ? InvalidOid :
		IndexOnColumn(table->rel, table->key, &table->collation);
	if (!OidIsValid(table->index))
	{
		table_close(table->rel, AccessShareLock);
		table->rel = NULL;
		return false;
	}
	return true;
}

/* Close the tables that were opened */
static void
CatalogTablesClose(CatalogTable *tables, int n)
{
	for (int i = 0; i < n; i++)
		if (tables[i].rel != NULL)
			table_close(tables[i].rel, AccessShareLock);
}

/*
 * Begin an index scan of a table for rows whose key equals value
 * (compared with eqproc), in the table's snapshot
 */
static SysScanDesc
CatalogScan(const CatalogTable *table, RegProcedure eqproc, Datum value, ScanKey key)
{
	ScanKeyEntryInitialize(key, 0, table->key, BTEqualStrategyNumber, InvalidOid,
						   table->collation, eqproc, value);
	return systable_beginscan(table->rel, table->index, true, table->snapshot, 1, key);
}

/* The text of a jsonb object's field as ->> gives it; "" for NULL or absent */
static const char *
JsonbFieldText(Jsonb *jsonb, const char *field)
{
	JsonbValue *value;

	if (jsonb == NULL || !JB_ROOT_IS_OBJECT(jsonb) ||
		(value = getKeyJsonValueFromContainer(&jsonb->root, field, strlen(field), NULL)) == NULL)
		return "";
	switch (value->type)
	{
		case jbvNull:
			return "";
		case jbvString:
			return pnstrdup(value->val.string.val, value->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(value->val.numeric)));
		case jbvBool:
			return value->val.boolean ? "true" : "false";
		default:
			return JsonbToCString(NULL, value->val.binary.data, value->val.binary.len);
	}
}

/* What the tuner measured for a tuned schedule, in cache.c's words */
static char *
ProvenanceText(Jsonb *provenance)
{
	return psprintf("%s search, %s; %s us/row against the default's %s; tuned %s on %s rows (%s)"
					" with %s thread(s)",
					JsonbFieldText(provenance, "strategy"),
					strcmp(JsonbFieldText(provenance, "exact"), "true") == 0 ?
					"exact sums" : "sums reordered (within float rounding)",
					JsonbFieldText(provenance, "us_per_row"),
					JsonbFieldText(provenance, "default_us_per_row"),
					JsonbFieldText(provenance, "tuned_at"),
					JsonbFieldText(provenance, "rows"),
					JsonbFieldText(provenance, "rows_from"),
					JsonbFieldText(provenance, "threads"));
}

/* One schedule row, if its target is one the catalog allows; false otherwise */
static bool
ScheduleRowRead(HeapTuple tuple, Relation rel, ScheduleRow *row, StringInfo fingerprint)
{
	bool		isnull;
	Datum		value = ColumnValue(tuple, rel, "target", &isnull);
	Datum		created;
	char	   *target = isnull ? "" : TextDatumGetCString(value);

	if (strcmp(target, "cpu") != 0 && strcmp(target, "cuda") != 0 && strcmp(target, "rocm") != 0)
		return false;
	strlcpy(row->target, target, sizeof(row->target));
	value = ColumnValue(tuple, rel, "batch_size", &isnull);
	row->batch_size = isnull ? 0 : DatumGetInt32(value);
	row->text = TextDatumGetCString(ColumnValue(tuple, rel, "schedule", &isnull));
	value = ColumnValue(tuple, rel, "origin", &isnull);
	row->tuned = !isnull && strcmp(TextDatumGetCString(value), "tuned") == 0;
	value = ColumnValue(tuple, rel, "provenance", &isnull);
	row->provenance = row->tuned ? ProvenanceText(isnull ? NULL : DatumGetJsonbP(value)) : NULL;
	created = ColumnValue(tuple, rel, "created", &isnull);
	appendStringInfo(fingerprint, "%s%d@%lld:%zu:%s,", row->target, row->batch_size,
					 isnull ? 0LL : (long long) DatumGetTimestampTz(created),
					 strlen(row->text), row->text);
	return true;
}

/* Order schedules by target, then batch size, all-sizes (0) first, as cache.c's query does */
static int
ScheduleRowCompare(const void *a, const void *b)
{
	const ScheduleRow *p = (const ScheduleRow *) a;
	const ScheduleRow *q = (const ScheduleRow *) b;
	int			c = strcmp(p->target, q->target);

	return c != 0 ? c : (p->batch_size > q->batch_size) - (p->batch_size < q->batch_size);
}

/* The model's schedules, in order, added to the fingerprint */
static ScheduleRow *
SchedulesRead(const CatalogTable *table, int64 id, int *count, StringInfo fingerprint)
{
	ScanKeyData key;
	SysScanDesc scan = CatalogScan(table, F_INT8EQ, Int64GetDatum(id), &key);
	HeapTuple	tuple;
	int			n = 0,
				cap = 4;
	ScheduleRow *rows = palloc(sizeof(ScheduleRow) * cap);

	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		if (n == cap)
			rows = repalloc(rows, sizeof(ScheduleRow) * (cap *= 2));
		if (ScheduleRowRead(tuple, table->rel, &rows[n], fingerprint))
			n++;
	}
	systable_endscan(scan);
	qsort(rows, n, sizeof(ScheduleRow), ScheduleRowCompare);
	*count = n;
	return rows;
}

/* The profile row of the model's current revision, copied; NULL if none */
static HeapTuple
ProfileRead(const CatalogTable *table, int64 id, int64 revision, StringInfo fingerprint)
{
	ScanKeyData key;
	SysScanDesc scan = CatalogScan(table, F_INT8EQ, Int64GetDatum(id), &key);
	HeapTuple	tuple;
	HeapTuple	found = NULL;
	bool		isnull;

	while (found == NULL && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Datum		value = ColumnValue(tuple, table->rel, "revision", &isnull);

		if (!isnull && DatumGetInt64(value) == revision)
			found = heap_copytuple(tuple);
	}
	systable_endscan(scan);
	if (found != NULL)
	{
		Datum		rows = ColumnValue(found, table->rel, "num_rows", &isnull);
		Datum		created = ColumnValue(found, table->rel, "created", &isnull);

		appendStringInfo(fingerprint, "/%lld@%lld", (long long) DatumGetInt64(rows),
						 isnull ? 0LL : (long long) DatumGetTimestampTz(created));
	}
	return found;
}

/* An int4 column of a tuple; 0 when NULL or absent */
static int32
ColumnInt32(HeapTuple tuple, Relation rel, const char *name)
{
	bool		isnull;
	Datum		value = ColumnValue(tuple, rel, name, &isnull);

	return isnull ? 0 : DatumGetInt32(value);
}

/*
 * The version number a reference names: given, or read from the
 * registry's row (deployed) or the alias's row; 0 when there is none.
 * MODEL_REF_LATEST is left to ModelRowRead.
 */
static int32
VersionNumberRead(const CatalogTable *registry, const CatalogTable *aliases, const ModelRef *ref)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int32		number = 0;
	bool		isnull;

	if (ref->kind == MODEL_REF_NUMBER)
		return ref->number;
	scan = CatalogScan(ref->kind == MODEL_REF_DEPLOYED ? registry : aliases, F_TEXTEQ,
					   CStringGetTextDatum(ref->name), &key);
	while (number == 0 && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		if (ref->kind == MODEL_REF_DEPLOYED)
			number = ColumnInt32(tuple, registry->rel, "version");
		else
		{
			Datum		alias = ColumnValue(tuple, aliases->rel, "alias", &isnull);

			if (!isnull && strcmp(TextDatumGetCString(alias), ref->alias) == 0)
				number = ColumnInt32(tuple, aliases->rel, "version");
		}
	}
	systable_endscan(scan);
	return number;
}

/* The privileges of a model's registry row (*isnull when none), added to the fingerprint */
static Datum
RegistryAclRead(const CatalogTable *registry, const char *name, bool *isnull, StringInfo fingerprint)
{
	ScanKeyData key;
	SysScanDesc scan = CatalogScan(registry, F_TEXTEQ, CStringGetTextDatum(name), &key);
	HeapTuple	tuple = systable_getnext(scan);
	Datum		acl = (Datum) 0;

	*isnull = true;
	if (HeapTupleIsValid(tuple))
	{
		acl = ColumnValue(tuple, registry->rel, "acl", isnull);
		if (!*isnull)
			acl = PointerGetDatum(DatumGetAclPCopy(acl));
	}
	systable_endscan(scan);
	appendStringInfoString(fingerprint, "/acl:");
	if (!*isnull)
		for (int i = 0; i < ACL_NUM(DatumGetAclP(acl)); i++)
			appendStringInfo(fingerprint, "%u=%u,", ACL_DAT(DatumGetAclP(acl))[i].ai_grantee,
							 (unsigned) ACLITEM_GET_PRIVS(ACL_DAT(DatumGetAclP(acl))[i]));
	return acl;
}

/*
 * The row a reference names, copied; NULL if there is none.  Before
 * versions (no registry) the name's one row.
 */
static HeapTuple
ModelRowRead(const CatalogTable *tables, bool versions, const ModelRef *ref)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	HeapTuple	copy = NULL;
	int32		number = 0;
	int32		best = 0;

	if (versions && ref->kind != MODEL_REF_LATEST &&
		(number = VersionNumberRead(&tables[3], &tables[4], ref)) == 0)
		return NULL;
	scan = CatalogScan(&tables[0], F_TEXTEQ, CStringGetTextDatum(ref->name), &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		int32		version = versions ? ColumnInt32(tuple, tables[0].rel, "version") : 0;

		if (versions && (ref->kind == MODEL_REF_LATEST ? version <= best : version != number))
			continue;
		if (copy != NULL)
			heap_freetuple(copy);
		copy = heap_copytuple(tuple);
		best = version;
		if (ref->kind != MODEL_REF_LATEST)
			break;
	}
	systable_endscan(scan);
	return copy;
}

/* Build a new version from the rows read */
static ModelVersion *
VersionFromRows(const char *name, const CatalogTable *tables, HeapTuple model,
				ScheduleRow *schedules, int num_schedules, HeapTuple profile,
				const char *fingerprint, Datum acl, bool acl_null, bool versions)
{
	Relation	rel = tables[0].rel;
	bool		isnull;
	int64		id = DatumGetInt64(ColumnValue(model, rel, "id", &isnull));
	int64		revision = DatumGetInt64(ColumnValue(model, rel, "revision", &isnull));
	ModelVersion *version = ModelVersionCreate(name, id, revision, fingerprint);

	version->number = Max(ColumnInt32(model, rel, "version"), 1);
	PG_TRY();
	{
		Datum		features[2];
		bool		features_null[2];

		ModelVersionSetAccess(version, name,
							  DatumGetObjectId(ColumnValue(model, rel, "owner", &isnull)),
							  acl, acl_null, versions);

		features[0] = ColumnValue(model, rel, "feature_names", &features_null[0]);
		features[1] = ColumnValue(model, rel, "feature_types", &features_null[1]);
		ModelVersionSetForest(version, ColumnValue(model, rel, "forest", &isnull), features,
							  features_null);
		ModelVersionAllocSchedules(version, num_schedules);
		for (int i = 0; i < num_schedules; i++)
			ModelVersionSetSchedule(version, i, schedules[i].target, schedules[i].batch_size,
									schedules[i].text,
									schedules[i].tuned, schedules[i].provenance);
		if (profile != NULL)
			ModelVersionSetProfile(version,
								   DatumGetInt64(ColumnValue(profile, tables[2].rel, "num_rows", &isnull)),
								   ColumnValue(profile, tables[2].rel, "node_hits", &isnull));
	}
	PG_CATCH();
	{
		ModelVersionDiscard(version);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return version;
}

/*
 * Read a model's state from the catalog's tables: false when the read
 * must go through SQL instead (see above).  Otherwise *found says whether
 * the model exists, *unchanged whether its state is known's, and the
 * result is a new version when neither (none with compare_only).  The
 * rows are those snapshot sees: the calling query's, or the latest
 * (cache.c asks whether a version read in an old snapshot is still the
 * current state).
 */
bool
CatalogReadModel(const ModelRef *ref, const char *name, const ModelVersion *known,
				 Snapshot snapshot, bool compare_only,
				 ModelVersion **version, bool *unchanged, bool *found)
{
	CatalogTable tables[5] = {{0}};
	HeapTuple	model;
	HeapTuple	profile;
	ScheduleRow *schedules;
	int			num_schedules;
	int64		id,
				revision;
	bool		isnull;
	bool		versions = CatalogHasVersions();
	int			num_tables = versions ? 5 : 3;
	StringInfoData fingerprint;

	*version = NULL;
	*unchanged = false;
	if (snapshot == NULL ||
		!CatalogTableOpen(&tables[0], "model", "name") ||
		!CatalogTableOpen(&tables[1], "schedule", "model_id") ||
		!CatalogTableOpen(&tables[2], "profile", "model_id") ||
		(versions && (!CatalogTableOpen(&tables[3], "registry", "name") ||
					  !CatalogTableOpen(&tables[4], "model_alias", "name"))))
	{
		CatalogTablesClose(tables, num_tables);
		return false;
	}
	for (int i = 0; i < num_tables; i++)
		tables[i].snapshot = snapshot;
	model = ModelRowRead(tables, versions, ref);
	*found = model != NULL;
	if (*found)
	{
		Datum		acl = (Datum) 0;
		bool		acl_null = true;

		id = DatumGetInt64(ColumnValue(model, tables[0].rel, "id", &isnull));
		revision = DatumGetInt64(ColumnValue(model, tables[0].rel, "revision", &isnull));
		initStringInfo(&fingerprint);
		appendStringInfo(&fingerprint, "index:owner:%u/",
						 DatumGetObjectId(ColumnValue(model, tables[0].rel, "owner", &isnull)));
		schedules = SchedulesRead(&tables[1], id, &num_schedules, &fingerprint);
		profile = ProfileRead(&tables[2], id, revision, &fingerprint);
		if (versions)
			acl = RegistryAclRead(&tables[3], ref->name, &acl_null, &fingerprint);
		if (known != NULL && known->id == id && known->revision == revision &&
			strcmp(known->fingerprint, fingerprint.data) == 0)
			*unchanged = true;
		else if (!compare_only)
			*version = VersionFromRows(name, tables, model, schedules, num_schedules, profile,
									   fingerprint.data, acl, acl_null, versions);
	}
	CatalogTablesClose(tables, num_tables);
	return true;
}
