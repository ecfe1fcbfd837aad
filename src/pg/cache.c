/*
 * cache.c
 *		Per-backend cache of loaded and compiled models.
 *
 * A backend keeps, per model name, the current ModelVersion: the Forest
 * read from the catalog's binary form and, once used with silvan.jit on,
 * its compiled code.  The form is first read for its header only
 * (ForestDeserializeHeader): when the code cache has the model's default
 * schedule, machine code and buffers, scoring needs nothing more, and a
 * fresh backend never reads, checks or compacts the trees of a big model
 * (a noticeable part of its first prediction).  ModelVersionForest
 * reads them on the first need.  Entries are revalidated after any change to the
 * catalog: a statement trigger on silvan.model calls
 * CacheInvalidateRelcacheByRelid, which PostgreSQL delivers to every
 * backend at commit (and to this one at the next command).  Our relcache
 * callback only marks entries stale; the next lookup asks the catalog for
 * the model's revision and reuses the entry when it did not change.
 *
 * A version that is replaced while a scan still uses it (a pinned one) is
 * orphaned and freed when its last pin goes, so compiled code never
 * disappears under a running batch.
 *
 * Entries of dropped models go too: the first lookup after a change to the
 * catalog asks in one query which of the cached names still exist and
 * retires the others, so a backend that scores many short-lived models
 * keeps only the living ones.
 *
 * A state read in an old snapshot (a REPEATABLE READ transaction that
 * began before a model was replaced or dropped, or a statement whose
 * snapshot predates a commit whose invalidation it received) is right for
 * that snapshot but not for the statements after it.  So every read of
 * the catalog is followed by the same comparison in the latest snapshot
 * (ModelCatalogCurrent); when they differ the entry serves the read's
 * version now but stays stale, and the next lookup reads again: after a
 * drop or replace commits, every backend's next statement (its next
 * transaction's, under REPEATABLE READ) sees it.
 *
 * Who may use a model is the model's privileges' to say (USAGE,
 * privileges.c), and row-level security on silvan.model may hide its row:
 * a read is silvan's own (as the catalog's owner: the caller may not read
 * a model's binary form or schedules), and the entry holds the roles it
 * has admitted since it was read (seen_by).  Any other role (mallory
 * calling predict() herself after alice's SECURITY DEFINER function loaded
 * the model) is checked before the entry serves her: the row read as her,
 * when row-level security is on, and USAGE on the model.  A grant or a
 * revoke changes the version's fingerprint, so every role is checked
 * again.
 */
#include "silvan_pg.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

/* Roles an entry remembers having shown the model to */
#define MODEL_CACHE_ROLES	4

typedef struct ModelCacheEntry
{
	char		name[NAMEDATALEN];	/* hash key */
	bool		stale;			/* revalidate against the catalog */
	ModelVersion *version;
	int			num_seen;		/* roles that saw its row since it was read */
	Oid			seen_by[MODEL_CACHE_ROLES];
} ModelCacheEntry;

static HTAB *model_cache = NULL;
static uint64 cache_generation = 1;
static bool cache_sweep_needed = false;	/* some cached model may be gone */
static Oid	model_relid = InvalidOid;

/* Mark every entry stale after a change to silvan.model (or a full reset) */
static void
ModelCacheInvalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS scan;
	ModelCacheEntry *entry;

	if (model_cache == NULL)
		return;
	if (relid != InvalidOid && relid != model_relid && model_relid != InvalidOid)
		return;
	hash_seq_init(&scan, model_cache);
	while ((entry = hash_seq_search(&scan)) != NULL)
		entry->stale = true;
	cache_generation++;
	cache_sweep_needed = true;
	if (relid == InvalidOid)
		model_relid = InvalidOid;
}

/* Create the hash table and register for invalidations */
void
ModelCacheInit(void)
{
	HASHCTL		ctl;

	ctl.keysize = NAMEDATALEN;
	ctl.entrysize = sizeof(ModelCacheEntry);
	ctl.hcxt = TopMemoryContext;
	model_cache = hash_create("silvan model cache", 64, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(ModelCacheInvalidate, (Datum) 0);
}

/* Changes whenever any entry may have become stale */
uint64
ModelCacheGeneration(void)
{
	return cache_generation;
}

/* OID of a table of the silvan schema */
Oid
SilvanCatalogRelid(const char *relname)
{
	Oid			nsp = get_namespace_oid("silvan", false);

	return get_relname_relid(relname, nsp);
}

/* Free a version: its compiled code, forest and memory */
static void
ModelVersionFree(ModelVersion *version)
{
	StatsFlushVersion(version);
	ModelVersionFreeVariants(version);
	ForestFree(version->header);
	ForestFree(version->whole);
	MemoryContextDelete(version->cxt);
}

/* Retire a version: free now, or at its last unpin */
static void
ModelVersionRetire(ModelVersion *version)
{
	if (version == NULL)
		return;
	if (version->pins > 0)
		version->orphaned = true;
	else
		ModelVersionFree(version);
}

/* Keep a version alive while a scan uses it */
void
ModelVersionPin(ModelVersion *version)
{
	version->pins++;
}

/* Release a pin; free an orphaned version at its last one */
void
ModelVersionUnpin(ModelVersion *version)
{
	Assert(version->pins > 0);
	if (--version->pins == 0 && version->orphaned)
		ModelVersionFree(version);
}

/*
 * What identifies a model's state besides its revision: its schedules (of
 * every target), the profile stored for this revision, and the model's
 * owner and privileges.  Any change makes a new version.  The statement
 * also returns the version's number, owner and privileges.  Like every
 * statement on the catalog, these run under a locked search_path with
 * every name qualified (catalog_sql.c).
 */
static const char *const fetch_sql_format =
"SELECT m.id, m.revision, pg_catalog.concat("
" (SELECT pg_catalog.string_agg(pg_catalog.concat(s.target, s.batch_size, ':',"
"                                                 pg_catalog.md5(s.schedule), '@', s.created), ','"
"                               ORDER BY s.target, s.batch_size NULLS FIRST)"
"    FROM silvan.schedule s WHERE s.model_id OPERATOR(pg_catalog.=) m.id),"
" '/',"
" (SELECT pg_catalog.concat(p.num_rows, '@', p.created) FROM silvan.profile p"
"   WHERE p.model_id OPERATOR(pg_catalog.=) m.id AND p.revision OPERATOR(pg_catalog.=) m.revision),"
" '/owner:', m.owner::pg_catalog.oid, '/acl:', %s),"
" %s, m.owner::pg_catalog.oid, %s"
" FROM silvan.model m WHERE %s";

/* The statement that reads a reference's id, revision, fingerprint and version number */
static char *
FetchSql(void)
{
	bool		versions = CatalogHasVersions();
	const char *acl = "(SELECT r.acl FROM silvan.registry r WHERE r.name OPERATOR(pg_catalog.=) m.name)";

	return psprintf(fetch_sql_format, versions ? acl : "NULL", versions ? "m.version" : "1",
					versions ? acl : "NULL::pg_catalog.aclitem[]", ModelRefWhere());
}

/* Run a read of the row a reference names, in snapshot (InvalidSnapshot: the query's) */
static void
CacheQueryRef(const ModelRef *ref, const char *query, Snapshot snapshot)
{
	Oid			types[3];
	Datum		args[3];
	char		nulls[4] = "   ";
	SPIPlanPtr	plan;
	int			ret;

	ModelRefArgs(ref, types, args, nulls);
	query = CatalogLocalQuery(query);
	if (snapshot == InvalidSnapshot)
		ret = SPI_execute_with_args(query, 3, types, args, nulls, true, 0);
	else if ((plan = SPI_prepare(query, 3, types)) == NULL)
		ret = SPI_result;
	else
		ret = SPI_execute_snapshot(plan, args, nulls, snapshot, InvalidSnapshot, true, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the silvan catalog: %s", SPI_result_code_string(ret));
}

/* Run a one-parameter read of the catalog (as silvan: ModelCatalogFetch) */
static void
CacheQuery(const CatalogSql *sql, const char *query, Oid argtype, Datum arg)
{
	CatalogSqlRun(sql, query, 1, &argtype, &arg, NULL, SPI_OK_SELECT);
}

/*
 * Set a version's forest from the catalog's binary form (the column's
 * Datum), with its feature names and types: its header now
 * (ForestDeserializeHeader), the trees when something asks for them
 * (ModelVersionForest), from the form detoasted once into the version's
 * context
 */
void
ModelVersionSetForest(ModelVersion *version, Datum form, const Datum *features,
					  const bool *features_null)
{
	SilvanStatus status;
	MemoryContext old = MemoryContextSwitchTo(version->cxt);

	version->stored = DatumGetByteaPCopy(form);
	MemoryContextSwitchTo(old);
	version->header = ForestDeserializeHeader((const uint8_t *) VARDATA(version->stored),
											  VARSIZE(version->stored) - VARHDRSZ,
											  &version->stored_nodes, &status);
	if (version->header == NULL)
		SilvanReportStatus(ERROR, &status);
	for (int f = 0; f < 2; f++)
		if (!features_null[f])
			FeaturesFromArray(version->header, f == 0 ? FOREST_FEATURE_NAMES : FOREST_FEATURE_TYPES,
							  features[f]);
}

/* Give to the feature names or types of from (if any) */
static void
CopyFeatureStrings(Forest *to, const Forest *from, ForestFeatureField field)
{
	char	  **strings = field == FOREST_FEATURE_NAMES ? from->feature_names : from->feature_types;
	size_t	   *lengths;
	SilvanStatus status;
	bool		ok;

	if (strings == NULL)
		return;
	lengths = palloc(sizeof(size_t) * Max(from->num_features, 1));
	for (int32 f = 0; f < from->num_features; f++)
		lengths[f] = strlen(strings[f]);
	ok = ForestSetFeatureStrings(to, field, (const char *const *) strings, lengths,
								 from->num_features, &status);
	pfree(lengths);
	if (!ok)
		SilvanReportStatus(ERROR, &status);
}

/*
 * The whole forest of a version, trees included: read from the stored
 * form and checked (ForestDeserialize) on first use, with the header's
 * feature names and types
 */
Forest *
ModelVersionForest(ModelVersion *version)
{
	SilvanStatus status;
	Forest	   *whole;

	if (version->whole != NULL)
		return version->whole;
	whole = ForestDeserialize((const uint8_t *) VARDATA(version->stored),
							  VARSIZE(version->stored) - VARHDRSZ, &status);
	if (whole == NULL)
		SilvanReportStatus(ERROR, &status);
	PG_TRY();
	{
		CopyFeatureStrings(whole, version->header, FOREST_FEATURE_NAMES);
		CopyFeatureStrings(whole, version->header, FOREST_FEATURE_TYPES);
	}
	PG_CATCH();
	{
		ForestFree(whole);
		PG_RE_THROW();
	}
	PG_END_TRY();
	elog(DEBUG1, "silvan: read the trees of model %lld (revision %lld)",
		 (long long) version->id, (long long) version->revision);
	version->whole = whole;
	pfree(version->stored);		/* read once: the whole forest has all it held */
	version->stored = NULL;
	return whole;
}

/* Load the forest of a version from the catalog's binary form, with its feature names */
static void
CacheLoadForest(const CatalogSql *sql, ModelVersion *version)
{
	bool		isnull;
	HeapTuple	tuple;
	TupleDesc	desc;
	Datum		features[2];
	bool		features_null[2];

	CacheQuery(sql, FeaturesInCatalog() ?
			   "SELECT forest, feature_names, feature_types FROM silvan.model"
			   " WHERE id OPERATOR(pg_catalog.=) $1" :
			   "SELECT forest, NULL, NULL FROM silvan.model WHERE id OPERATOR(pg_catalog.=) $1",
			   INT8OID, Int64GetDatum(version->id));
	if (SPI_processed != 1)
		elog(ERROR, "model %lld vanished while loading", (long long) version->id);
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	for (int f = 0; f < 2; f++)
		features[f] = SPI_getbinval(tuple, desc, 2 + f, &features_null[f]);
	ModelVersionSetForest(version, SPI_getbinval(tuple, desc, 1, &isnull), features,
						  features_null);
}

/* A model's schedules, with what the tuner measured for tuned ones, in words */
static const char *const schedules_sql =
"SELECT COALESCE(batch_size, 0), schedule,"
" origin OPERATOR(pg_catalog.=) 'tuned'::pg_catalog.text,"
" pg_catalog.format('%s search, %s; %s us/row against the default''s %s; tuned %s"
" on %s rows (%s) with %s thread(s)',"
"  provenance OPERATOR(pg_catalog.->>) 'strategy',"
"  CASE WHEN provenance OPERATOR(pg_catalog.->>) 'exact' OPERATOR(pg_catalog.=) 'true'"
"   THEN 'exact sums' ELSE 'sums reordered (within float rounding)' END,"
"  provenance OPERATOR(pg_catalog.->>) 'us_per_row',"
"  provenance OPERATOR(pg_catalog.->>) 'default_us_per_row',"
"  provenance OPERATOR(pg_catalog.->>) 'tuned_at',"
"  provenance OPERATOR(pg_catalog.->>) 'rows',"
"  provenance OPERATOR(pg_catalog.->>) 'rows_from',"
"  provenance OPERATOR(pg_catalog.->>) 'threads'), target"
" FROM silvan.schedule"
" WHERE model_id OPERATOR(pg_catalog.=) $1 ORDER BY target, 1";

/* Load the schedules stored for a version's model */
static void
CacheLoadSchedules(const CatalogSql *sql, ModelVersion *version)
{
	bool		isnull;
	char	   *provenance;

	/* a catalog before 0.3.0 (the library updated first) has no origin */
	if (get_attnum(SilvanCatalogRelid("schedule"), "origin") == InvalidAttrNumber)
		CacheQuery(sql, "SELECT COALESCE(batch_size, 0), schedule, false, NULL::pg_catalog.text,"
				   " target FROM silvan.schedule WHERE model_id OPERATOR(pg_catalog.=) $1"
				   " ORDER BY target, 1",
				   INT8OID, Int64GetDatum(version->id));
	else
		CacheQuery(sql, schedules_sql, INT8OID, Int64GetDatum(version->id));
	ModelVersionAllocSchedules(version, SPI_processed);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		provenance = SPI_getvalue(tuple, desc, 4);
		ModelVersionSetSchedule(version, i, SPI_getvalue(tuple, desc, 5),
								DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull)),
								SPI_getvalue(tuple, desc, 2),
								DatumGetBool(SPI_getbinval(tuple, desc, 3, &isnull)), provenance);
	}
}

/* Room for n schedules of a version */
void
ModelVersionAllocSchedules(ModelVersion *version, uint64 n)
{
	version->num_schedules = (int) n;
	version->schedules = MemoryContextAllocZero(version->cxt, sizeof(StoredSchedule) * (n + 1));
}

/* Set schedule i of a version, for a target (provenance: what the tuner measured, kept for tuned ones) */
void
ModelVersionSetSchedule(ModelVersion *version, uint64 i, const char *target, int32 batch_size,
						const char *text, bool tuned, const char *provenance)
{
	StoredSchedule *s = &version->schedules[i];

	strlcpy(s->target, target, sizeof(s->target));
	s->batch_size = batch_size;
	s->text = MemoryContextStrdup(version->cxt, text);
	s->tuned = tuned;
	s->provenance = provenance && tuned ? MemoryContextStrdup(version->cxt, provenance) : NULL;
}

/* Set a version's profile from its row count and node_hits array, if consistent */
void
ModelVersionSetProfile(ModelVersion *version, int64 num_rows, Datum node_hits)
{
	Datum	   *hits;
	bool	   *nulls;
	int			n;
	ForestProfile *profile;

	deconstruct_array(DatumGetArrayTypeP(node_hits), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &hits, &nulls, &n);
	/* the stored count is the whole forest's unless reading dropped unreached nodes */
	if (n != version->stored_nodes && n != ModelVersionForest(version)->num_nodes)
		return;
	profile = MemoryContextAllocZero(version->cxt, sizeof(ForestProfile));
	profile->num_rows = num_rows;
	profile->num_nodes = n;
	profile->node_hits = MemoryContextAlloc(version->cxt, sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
		profile->node_hits[i] = nulls[i] ? 0 : DatumGetInt64(hits[i]);
	version->profile = profile;
}

/* Load the node hit counts profiled for this revision, if any and consistent */
static void
CacheLoadProfile(const CatalogSql *sql, ModelVersion *version)
{
	bool		isnull;

	CacheQuery(sql, "SELECT p.num_rows, p.node_hits FROM silvan.profile p, silvan.model m"
			   " WHERE m.id OPERATOR(pg_catalog.=) p.model_id AND p.model_id OPERATOR(pg_catalog.=) $1"
			   " AND p.revision OPERATOR(pg_catalog.=) m.revision",
			   INT8OID, Int64GetDatum(version->id));
	if (SPI_processed != 1)
		return;
	ModelVersionSetProfile(version,
						   DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)),
						   SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
}

/* A new, empty version in a memory context of its own */
ModelVersion *
ModelVersionCreate(const char *name, int64 id, int64 revision, const char *fingerprint)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "silvan model",
											  ALLOCSET_SMALL_SIZES);
	ModelVersion *version = MemoryContextAllocZero(cxt, sizeof(ModelVersion));

	/* pg_backend_memory_contexts names the model of each cached version */
	MemoryContextSetIdentifier(cxt, MemoryContextStrdup(cxt, name));
	version->cxt = cxt;
	version->id = id;
	version->revision = revision;
	version->fingerprint = MemoryContextStrdup(cxt, fingerprint);
	version->last_variant = -1;
	return version;
}

/* Free a version that was being built when an error came */
void
ModelVersionDiscard(ModelVersion *version)
{
	StatsFlushVersion(version);
	ForestFree(version->header);
	ForestFree(version->whole);
	MemoryContextDelete(version->cxt);
}

/* Build a version through SQL: forest, schedules and profile */
static ModelVersion *
CacheLoadVersion(const CatalogSql *sql, const char *name, int64 id, int64 revision,
				 int32 number, const char *fingerprint, Oid owner, Datum acl, bool acl_null)
{
	ModelVersion *version = ModelVersionCreate(name, id, revision, fingerprint);

	version->number = number;
	PG_TRY();
	{
		ModelVersionSetAccess(version, name, owner, acl, acl_null, CatalogHasVersions());
		CacheLoadForest(sql, version);
		CacheLoadSchedules(sql, version);
		CacheLoadProfile(sql, version);
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
 * Is what a read found (found, and then the state of version) the
 * model's state in the latest snapshot too?  Compared the way the read
 * was made: through the tables' indexes, or through SQL.
 */
static bool
ModelCatalogCurrent(const ModelRef *ref, const char *name, bool found,
					const ModelVersion *version)
{
	Snapshot	latest = RegisterSnapshot(GetLatestSnapshot());
	ModelVersion *ignored;
	bool		unchanged = false;
	bool		exists = false;
	bool		current;

	if (CatalogReadModel(ref, name, version, latest, true, &ignored, &unchanged, &exists))
		current = exists == found && (!found || unchanged);
	else
	{
		CatalogSql	sql;
		bool		isnull;

		CatalogSqlBegin(&sql);
		CatalogSqlBecomeOwner(&sql);
		CacheQueryRef(ref, FetchSql(), latest);
		exists = SPI_processed == 1;
		current = exists == found;
		if (current && found)
			current = version->id == DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) &&
				version->revision == DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)) &&
				strcmp(version->fingerprint, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3)) == 0;
		CatalogSqlEnd(&sql);
	}
	UnregisterSnapshot(latest);
	return current;
}

/*
 * Read a model's state from the catalog; a new version unless it matches
 * known (then *unchanged).  NULL with *found false when it does not exist.
 */
static ModelVersion *
ModelCatalogFetch(const ModelRef *ref, const char *name, const ModelVersion *known,
				  bool *unchanged, bool *found)
{
	ModelVersion *version = NULL;
	CatalogSql	sql;
	bool		isnull;

	/* straight from the tables' indexes when nothing asks for SQL */
	if (ActiveSnapshotSet() &&
		CatalogReadModel(ref, name, known, GetActiveSnapshot(), false, &version, unchanged, found))
		return version;
	*unchanged = false;
	/* silvan's own read, as the catalog's owner: who may use the model is checked after */
	CatalogSqlBegin(&sql);
	CatalogSqlBecomeOwner(&sql);
	CacheQueryRef(ref, FetchSql(), InvalidSnapshot);
	*found = SPI_processed == 1;
	if (*found)
	{
		HeapTuple	tuple = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		int64		id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		int64		revision = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
		char	   *fingerprint = SPI_getvalue(tuple, desc, 3);
		int32		number = DatumGetInt32(SPI_getbinval(tuple, desc, 4, &isnull));
		Oid			owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 5, &isnull));
		bool		acl_null;
		Datum		acl = SPI_getbinval(tuple, desc, 6, &acl_null);

		if (known != NULL && known->id == id && known->revision == revision &&
			strcmp(known->fingerprint, fingerprint) == 0)
			*unchanged = true;
		else
			version = CacheLoadVersion(&sql, name, id, revision, number, fingerprint,
									   owner, acl, acl_null);
	}
	CatalogSqlEnd(&sql);
	return version;
}

/* Forget a cached name: retire its version, remove its entry */
static void
ModelCacheForget(ModelCacheEntry *entry)
{
	ModelVersionRetire(entry->version);
	entry->version = NULL;
	hash_search(model_cache, entry->name, HASH_REMOVE, NULL);
}

/*
 * Forget every cached model that is no longer in the catalog (one query
 * for all of them), after a change to the catalog.  When the only cached
 * model is the one being looked up, its own lookup is the check.
 */
static void
ModelCacheSweep(bool only_this_one)
{
	HASH_SEQ_STATUS scan;
	ModelCacheEntry *entry;
	Datum	   *names;
	int			n = 0;
	CatalogSql	sql;
	Oid			argtype = TEXTARRAYOID;
	Datum		arg;

	cache_sweep_needed = false;
	if (hash_get_num_entries(model_cache) == 0 || only_this_one)
		return;
	names = palloc(sizeof(Datum) * 2 * hash_get_num_entries(model_cache));
	hash_seq_init(&scan, model_cache);
	while ((entry = hash_seq_search(&scan)) != NULL)
	{
		ModelRef	ref;

		(void) ModelRefSplit(entry->name, &ref);
		names[n++] = CStringGetTextDatum(ref.name);
		names[n++] = CStringGetTextDatum(entry->name);
	}
	arg = PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
	CatalogSqlBegin(&sql);
	CatalogSqlRun(&sql, "SELECT name FROM silvan.model WHERE name OPERATOR(pg_catalog.=) ANY ($1)",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	hash_seq_init(&scan, model_cache);
	while ((entry = hash_seq_search(&scan)) != NULL)
	{
		bool		alive = false;
		ModelRef	ref;

		(void) ModelRefSplit(entry->name, &ref);
		for (uint64 i = 0; i < SPI_processed && !alive; i++)
			alive = strcmp(entry->name, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1)) == 0 ||
				strcmp(ref.name, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1)) == 0;
		if (!alive)
			ModelCacheForget(entry);
	}
	CatalogSqlEnd(&sql);
}

/* Has role seen the entry's model since it was read? */
static bool
ModelSeenBy(const ModelCacheEntry *entry, Oid role)
{
	for (int i = 0; i < entry->num_seen; i++)
		if (entry->seen_by[i] == role)
			return true;
	return false;
}

/* Remember that role may see the entry's model (the oldest role goes when full) */
static void
ModelSeen(ModelCacheEntry *entry, Oid role)
{
	if (ModelSeenBy(entry, role))
		return;
	if (entry->num_seen == MODEL_CACHE_ROLES)
	{
		memmove(&entry->seen_by[0], &entry->seen_by[1], sizeof(Oid) * (MODEL_CACHE_ROLES - 1));
		entry->num_seen--;
	}
	entry->seen_by[entry->num_seen++] = role;
}

/*
 * May the current role see the cached model's row?  Without row-level
 * security on silvan.model its SELECT privilege says; with it, the row is
 * read as the role (a role without SELECT gets SQL's error)
 */
static bool
ModelVisible(const ModelCacheEntry *entry)
{
	CatalogSql	sql;
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(entry->version->id);
	bool		visible;

	if (check_enable_rls(model_relid, InvalidOid, true) != RLS_ENABLED)
		return true;
	CatalogSqlBegin(&sql);
	CatalogSqlRun(&sql, "SELECT 1 FROM silvan.model WHERE id OPERATOR(pg_catalog.=) $1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	visible = SPI_processed == 1;
	CatalogSqlEnd(&sql);
	return visible;
}

/*
 * Let role use a cached model, or raise the error it gets: a row that
 * row-level security hides from it does not exist for it; without USAGE
 * on the model it is refused
 */
static void
ModelAdmit(ModelCacheEntry *entry, const char *name, Oid role)
{
	if (!ModelVisible(entry))
		CatalogReportNoModel(name);
	ModelVersionCheckPrivilege(entry->version, ACL_USAGE, name);
	ModelSeen(entry, role);
}

/* Find a model by name: the current version, loading it when needed */
ModelVersion *
ModelCacheLookup(const char *name)
{
	ModelCacheEntry *entry;
	ModelVersion *fresh;
	bool		found;
	bool		unchanged;
	bool		exists;
	Oid			role = GetUserId();
	ModelRef	ref;

	if (strlen(name) >= NAMEDATALEN)
		CatalogReportNoModel(name);
	if (model_relid == InvalidOid)
		model_relid = SilvanCatalogRelid("model");
	entry = hash_search(model_cache, name, HASH_FIND, &found);
	if (found && !entry->stale && entry->version != NULL)
	{
		if (!ModelSeenBy(entry, role))
			ModelAdmit(entry, name, role);
		return entry->version;
	}
	if (cache_sweep_needed)
	{
		ModelCacheSweep(found && hash_get_num_entries(model_cache) == 1);
		entry = hash_search(model_cache, name, HASH_FIND, &found);
	}
	if (!ModelRefParse(name, &ref))
		CatalogReportNoModel(name);
	ModelRefCheckCatalog(&ref, name);
	fresh = ModelCatalogFetch(&ref, name, found ? entry->version : NULL, &unchanged, &exists);
	if (!exists)
	{
		if (found)
			ModelCacheForget(entry);
		CatalogReportNoModel(name);
	}
	entry = hash_search(model_cache, name, HASH_ENTER, &found);
	if (!found)
	{
		entry->version = NULL;
		entry->num_seen = 0;
	}
	if (!unchanged)
	{
		ModelVersionRetire(entry->version);
		entry->version = fresh;
		entry->num_seen = 0;
	}
	/*
	 * Read as silvan: may this role use it?  Read in an old snapshot: read
	 * again next time.  A parallel query cannot take the latest snapshot,
	 * so what it reads is read again after it.
	 */
	if (!ModelSeenBy(entry, role))
		ModelAdmit(entry, name, role);
	entry->stale = IsInParallelMode() || !ModelCatalogCurrent(&ref, name, true, entry->version);
	return entry->version;
}
