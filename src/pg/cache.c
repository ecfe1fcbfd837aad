/*
 * cache.c
 *		Per-backend cache of loaded and compiled models.
 *
 * A backend keeps, per model name, the current ModelVersion: the Forest
 * read from the catalog's binary form and, once used with silvan.jit on,
 * its compiled code.  Entries are revalidated after any change to the
 * catalog: a statement trigger on silvan.model calls
 * CacheInvalidateRelcacheByRelid, which PostgreSQL delivers to every
 * backend at commit (and to this one at the next command).  Our relcache
 * callback only marks entries stale; the next lookup asks the catalog for
 * the model's revision and reuses the entry when it did not change.
 *
 * A version that is replaced while a scan still uses it (a pinned one) is
 * orphaned and freed when its last pin goes, so compiled code never
 * disappears under a running batch.
 */
#include "silvan_pg.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

typedef struct ModelCacheEntry
{
	char		name[NAMEDATALEN];	/* hash key */
	bool		stale;			/* revalidate against the catalog */
	ModelVersion *version;
} ModelCacheEntry;

static HTAB *model_cache = NULL;
static uint64 cache_generation = 1;
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

/* Free a version's forest and code */
static void
ModelVersionFree(ModelVersion *version)
{
	if (version->compiled)
		CompiledForestFree(version->compiled);
	ForestFree(version->forest);
	pfree(version);
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

/* Error for a model name that is not in the catalog */
static void
ReportUnknownModel(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("model \"%s\" does not exist", name),
			 errhint("Load it with silvan.load_model(); silvan.models lists the loaded models.")));
}

/* Build a version from the catalog's binary form */
static ModelVersion *
ModelVersionFromCatalog(int64 id, int64 revision, bytea *forest_bytes)
{
	SilvanStatus status;
	Forest	   *forest;
	ModelVersion *version;

	forest = ForestDeserialize((const uint8_t *) VARDATA_ANY(forest_bytes),
							   VARSIZE_ANY_EXHDR(forest_bytes), &status);
	if (forest == NULL)
		SilvanReportStatus(ERROR, &status);
	version = MemoryContextAllocZero(TopMemoryContext, sizeof(ModelVersion));
	version->id = id;
	version->revision = revision;
	version->forest = forest;
	return version;
}

/*
 * Read (id, revision) of a model, and its forest when the revision differs
 * from known_revision.  Returns NULL when the model does not exist.
 */
static ModelVersion *
ModelCatalogFetch(const char *name, int64 known_revision, bool *unchanged)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	ModelVersion *version = NULL;
	bool		isnull;
	int			ret;

	*unchanged = false;
	args[0] = CStringGetTextDatum(name);
	SPI_connect();
	ret = SPI_execute_with_args("SELECT id, revision FROM silvan.model WHERE name = $1",
								1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read silvan.model: %s", SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		int64		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		int64		revision = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));

		if (revision == known_revision)
			*unchanged = true;
		else
		{
			ret = SPI_execute_with_args("SELECT forest FROM silvan.model WHERE name = $1",
										1, argtypes, args, NULL, true, 1);
			if (ret != SPI_OK_SELECT || SPI_processed != 1)
				elog(ERROR, "model \"%s\" vanished while loading", name);
			version = ModelVersionFromCatalog(id, revision,
											  DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0],
																			SPI_tuptable->tupdesc, 1, &isnull)));
		}
	}
	SPI_finish();
	if (version == NULL && !*unchanged)
		ReportUnknownModel(name);
	return version;
}

/* Find a model by name: the current version, loading it when needed */
ModelVersion *
ModelCacheLookup(const char *name)
{
	ModelCacheEntry *entry;
	ModelVersion *fresh;
	bool		found;
	bool		unchanged;

	if (strlen(name) >= NAMEDATALEN)
		ReportUnknownModel(name);
	if (model_relid == InvalidOid)
		model_relid = SilvanCatalogRelid("model");
	entry = hash_search(model_cache, name, HASH_FIND, &found);
	if (found && !entry->stale && entry->version != NULL)
		return entry->version;
	fresh = ModelCatalogFetch(name, found && entry->version ? entry->version->revision : -1,
							  &unchanged);
	entry = hash_search(model_cache, name, HASH_ENTER, &found);
	if (!found)
		entry->version = NULL;
	if (!unchanged)
	{
		ModelVersionRetire(entry->version);
		entry->version = fresh;
	}
	entry->stale = false;
	return entry->version;
}
