/*
 * stats.c
 *		Usage statistics per model version: batches and rows scored, time
 *		scoring, compiles and code cache loads, last use
 *		(silvan.model_stats).
 *
 * Scoring counts into the version's own ModelUsage (cache.c's
 * ModelVersion), a few additions per batch and nothing shared; at the end
 * of each transaction, and when a version is freed, what a backend
 * counted is added to the store:
 *
 *	- preloaded (shared_preload_libraries = 'silvan'): a hash table in
 *	  shared memory, by database and model version id, of at most
 *	  silvan.stats_max_versions entries, so that every backend's scoring
 *	  adds up; its lock is taken shared to add to an entry (each entry has
 *	  a spinlock, as pg_stat_statements does) and exclusive only to create
 *	  one.  A version that finds the table full is not counted, and the
 *	  view says how many were not.
 *	- not preloaded: a hash table of this backend's own, so the view shows
 *	  what the current connection scored, and says so.
 *
 * Statistics live until the server stops or reset_model_stats(); entries
 * of dropped versions are not shown (the view joins silvan.model).
 */
#include "silvan_pg.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* A version of a model in a database */
typedef struct StatsKey
{
	Oid			dbid;
	int64		model_id;
} StatsKey;

typedef struct StatsEntry
{
	StatsKey	key;			/* hash key */
	slock_t		mutex;			/* shared: protects the counts */
	ModelUsage	usage;
	TimestampTz last_used;
} StatsEntry;

/* The shared store's header */
typedef struct StatsShared
{
	LWLock	   *lock;			/* the hash table's */
	int64		not_counted;	/* versions that found the table full */
} StatsShared;

int			silvan_stats_max_versions = 1000;

static StatsShared *stats_shared = NULL;
static HTAB *stats_hash = NULL;	/* shared when stats_shared, else this backend's */
static dlist_head stats_pending = DLIST_STATIC_INIT(stats_pending);
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Reserve the shared store (preloading) */
static void
StatsShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(MAXALIGN(sizeof(StatsShared)),
									hash_estimate_size(silvan_stats_max_versions,
													   sizeof(StatsEntry))));
	RequestNamedLWLockTranche("silvan_stats", 1);
}

/* Create or attach to the shared store */
static void
StatsShmemStartup(void)
{
	HASHCTL		ctl;
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	stats_shared = ShmemInitStruct("silvan stats", sizeof(StatsShared), &found);
	if (!found)
	{
		stats_shared->lock = &(GetNamedLWLockTranche("silvan_stats"))->lock;
		stats_shared->not_counted = 0;
	}
	ctl.keysize = sizeof(StatsKey);
	ctl.entrysize = sizeof(StatsEntry);
	stats_hash = ShmemInitHash("silvan stats hash", silvan_stats_max_versions,
							   silvan_stats_max_versions, &ctl, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/* The backend's own store, when not preloaded */
static HTAB *
StatsLocalHash(void)
{
	HASHCTL		ctl;

	if (stats_hash != NULL)
		return stats_hash;
	ctl.keysize = sizeof(StatsKey);
	ctl.entrysize = sizeof(StatsEntry);
	ctl.hcxt = TopMemoryContext;
	stats_hash = hash_create("silvan stats", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return stats_hash;
}

/* Are the statistics the server's (silvan preloaded)? */
bool
StatsAreServerWide(void)
{
	return stats_shared != NULL;
}

/* Add one usage to another */
static void
UsageAdd(ModelUsage *into, const ModelUsage *from)
{
	into->batches += from->batches;
	into->rows += from->rows;
	into->scoring_ms += from->scoring_ms;
	into->timed_rows += from->timed_rows;
	into->compiles += from->compiles;
	into->cache_loads += from->cache_loads;
}

/* Add what a version counted to the shared store */
static void
StatsFlushShared(const StatsKey *key, const ModelUsage *usage, TimestampTz now)
{
	StatsEntry *entry;
	bool		found;

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	entry = hash_search(stats_hash, key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		LWLockRelease(stats_shared->lock);
		LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
		if (hash_get_num_entries(stats_hash) >= silvan_stats_max_versions &&
			hash_search(stats_hash, key, HASH_FIND, NULL) == NULL)
		{
			stats_shared->not_counted++;
			LWLockRelease(stats_shared->lock);
			return;
		}
		entry = hash_search(stats_hash, key, HASH_ENTER_NULL, &found);
		if (entry == NULL)
		{
			stats_shared->not_counted++;
			LWLockRelease(stats_shared->lock);
			return;
		}
		if (!found)
		{
			memset(&entry->usage, 0, sizeof(ModelUsage));
			entry->last_used = 0;
			SpinLockInit(&entry->mutex);
		}
	}
	SpinLockAcquire(&entry->mutex);
	UsageAdd(&entry->usage, usage);
	entry->last_used = Max(entry->last_used, now);
	SpinLockRelease(&entry->mutex);
	LWLockRelease(stats_shared->lock);
}

/* Add what a version counted to the store; nothing is pending after */
void
StatsFlushVersion(ModelVersion *version)
{
	StatsKey	key;
	TimestampTz now;

	if (!version->usage_pending)
		return;
	dlist_delete(&version->usage_node);
	version->usage_pending = false;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.model_id = version->id;
	now = GetCurrentTimestamp();
	if (stats_shared != NULL)
		StatsFlushShared(&key, &version->usage, now);
	else
	{
		bool		found;
		StatsEntry *entry = hash_search(StatsLocalHash(), &key, HASH_ENTER, &found);

		if (!found)
		{
			memset(&entry->usage, 0, sizeof(ModelUsage));
			entry->last_used = 0;
		}
		UsageAdd(&entry->usage, &version->usage);
		entry->last_used = Max(entry->last_used, now);
	}
	memset(&version->usage, 0, sizeof(ModelUsage));
}

/* Mark a version as having counts to add at the end of the transaction */
static inline void
StatsPending(ModelVersion *version)
{
	if (!version->usage_pending)
	{
		dlist_push_tail(&stats_pending, &version->usage_node);
		version->usage_pending = true;
	}
}

/* Count a scored batch of rows (timed: ms is its time) */
void
StatsScored(ModelVersion *version, int64 rows, bool timed, double ms)
{
	version->usage.batches++;
	version->usage.rows += rows;
	if (timed)
	{
		version->usage.scoring_ms += ms;
		version->usage.timed_rows += rows;
	}
	StatsPending(version);
}

/* Count machine code obtained for a version: compiled, or loaded from the code cache */
void
StatsCode(ModelVersion *version, bool from_cache)
{
	if (from_cache)
		version->usage.cache_loads++;
	else
		version->usage.compiles++;
	StatsPending(version);
}

/* At the end of every transaction, committed or not: add what was counted */
static void
StatsXactCallback(XactEvent event, void *arg)
{
	dlist_mutable_iter iter;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	dlist_foreach_modify(iter, &stats_pending)
		StatsFlushVersion(dlist_container(ModelVersion, usage_node, iter.cur));
}

/* Define the setting, reserve shared memory when preloading, flush at transaction ends (_PG_init) */
void
StatsInit(void)
{
	/* a server setting: it exists only when silvan is preloaded, as the store does */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomIntVariable("silvan.stats_max_versions",
								"Most model versions whose usage statistics the server keeps.",
								"Kept in shared memory, which silvan takes when it is preloaded; each takes about 100 bytes.",
								&silvan_stats_max_versions, 1000, 16, 1000000,
								PGC_POSTMASTER, 0, NULL, NULL, NULL);
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = StatsShmemRequest;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = StatsShmemStartup;
	}
	RegisterXactCallback(StatsXactCallback, NULL);
}

/*
 * What the store holds for a version of this database, this backend's
 * counts of the transaction included; false when nothing was counted
 */
bool
StatsOfVersion(int64 model_id, ModelUsage *usage)
{
	StatsKey	key;
	StatsEntry *entry;
	dlist_mutable_iter iter;
	bool		found = false;

	dlist_foreach_modify(iter, &stats_pending)
		StatsFlushVersion(dlist_container(ModelVersion, usage_node, iter.cur));
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.model_id = model_id;
	if (stats_shared == NULL)
	{
		entry = hash_search(StatsLocalHash(), &key, HASH_FIND, NULL);
		if (entry != NULL)
			*usage = entry->usage;
		return entry != NULL;
	}
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	entry = hash_search(stats_hash, &key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		SpinLockAcquire(&entry->mutex);
		*usage = entry->usage;
		SpinLockRelease(&entry->mutex);
		found = true;
	}
	LWLockRelease(stats_shared->lock);
	return found;
}

PG_FUNCTION_INFO_V1(silvan_model_stats_rows);

/*
 * model_stats_rows(): the statistics of this database's model versions,
 * one row per version id, and where they are kept ("server", or
 * "session" when silvan is not preloaded)
 */
Datum
silvan_model_stats_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS scan;
	StatsEntry *entry;
	int64		not_counted = 0;
	dlist_mutable_iter iter;

	InitMaterializedSRF(fcinfo, 0);
	/* this backend's counts of the current transaction first */
	dlist_foreach_modify(iter, &stats_pending)
		StatsFlushVersion(dlist_container(ModelVersion, usage_node, iter.cur));
	if (stats_shared == NULL)
	{
		ereport(NOTICE,
				(errmsg("silvan.model_stats counts the scoring of the current connection only"),
				 errhint("Add silvan to shared_preload_libraries to count every session's.")));
		(void) StatsLocalHash();
	}
	else
		LWLockAcquire(stats_shared->lock, LW_SHARED);
	hash_seq_init(&scan, stats_hash);
	while ((entry = hash_seq_search(&scan)) != NULL)
	{
		Datum		values[8];
		bool		nulls[8] = {false};
		ModelUsage	usage;
		TimestampTz last_used;

		if (entry->key.dbid != MyDatabaseId)
			continue;
		if (stats_shared != NULL)
			SpinLockAcquire(&entry->mutex);
		usage = entry->usage;
		last_used = entry->last_used;
		if (stats_shared != NULL)
			SpinLockRelease(&entry->mutex);
		values[0] = Int64GetDatum(entry->key.model_id);
		values[1] = Int64GetDatum(usage.batches);
		values[2] = Int64GetDatum(usage.rows);
		values[3] = Float8GetDatum(usage.scoring_ms);
		values[4] = Int64GetDatum(usage.compiles);
		values[5] = Int64GetDatum(usage.cache_loads);
		values[6] = TimestampTzGetDatum(last_used);
		nulls[6] = last_used == 0;
		values[7] = CStringGetTextDatum(stats_shared != NULL ? "server" : "session");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (stats_shared != NULL)
	{
		not_counted = stats_shared->not_counted;
		LWLockRelease(stats_shared->lock);
	}
	if (not_counted > 0)
		ereport(NOTICE,
				(errmsg("%lld model versions were not counted: silvan.stats_max_versions are kept",
						(long long) not_counted),
				 errhint("Raise silvan.stats_max_versions, or clear the statistics with silvan.reset_model_stats().")));
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(silvan_reset_model_stats);

/* reset_model_stats(): forget every version's statistics (of every database when shared) */
Datum
silvan_reset_model_stats(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS scan;
	StatsEntry *entry;
	int64		removed = 0;

	if (stats_shared != NULL)
		LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	else
		(void) StatsLocalHash();
	hash_seq_init(&scan, stats_hash);
	while ((entry = hash_seq_search(&scan)) != NULL)
		if (hash_search(stats_hash, &entry->key, HASH_REMOVE, NULL) != NULL)
			removed++;
	if (stats_shared != NULL)
	{
		stats_shared->not_counted = 0;
		LWLockRelease(stats_shared->lock);
	}
	PG_RETURN_INT64(removed);
}
