/*
 * silvan.c
 *		Entry points of the extension: module init, GUCs, error reporting,
 *		the catalog trigger and explain().
 */
#include "silvan_pg.h"

#include "batch.h"

#include "access/htup_details.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "utils/syscache.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "miscadmin.h"

#include "silvan/cancel.h"
#include "silvan/code_cache.h"
#include "silvan/gpu.h"
#include "silvan/jit.h"
#include "silvan/llvm_errors.h"
#include "silvan/runtime.h"

PG_MODULE_MAGIC;

bool		silvan_jit = true;
bool		silvan_vector_walk = true;
int			silvan_host_profile = SILVAN_HOST_PROFILE_MEASURED;

static const struct config_enum_entry silvan_host_profile_options[] = {
	{"measured", SILVAN_HOST_PROFILE_MEASURED, false},
	{"fallback", SILVAN_HOST_PROFILE_FALLBACK, false},
	{NULL, 0, false}
};
uint64		silvan_defaults_epoch = 0;	/* changes when default schedules may */
int			silvan_max_threads = 1;
int			silvan_max_threads_limit = 1;
bool		silvan_code_cache = true;
int			silvan_code_cache_entries = 1024;
int			silvan_code_cache_size = 1024 * 1024;	/* kB */
int			silvan_code_cache_entry_max_size = 64 * 1024;	/* kB */
int			silvan_tune_max_threads = 1;
int			silvan_tune_sample_rows = 16384;
double		silvan_tune_min_speedup = 1.05;
int			silvan_tune_max_jobs_per_role = 8;
int			silvan_tune_max_budget_per_role = 3600;
int			silvan_compile_max_instructions = COMPILE_MAX_INSTRUCTIONS_DEFAULT;
int			silvan_compile_max_function_instructions = COMPILE_MAX_FUNCTION_INSTRUCTIONS_DEFAULT;
int			silvan_compile_max_function_loops = COMPILE_MAX_FUNCTION_LOOPS_DEFAULT;

void		_PG_init(void);

#define SILVAN_MAX_THREADS 256

/* Give the runtime's thread pool silvan.max_threads, capped by silvan.max_threads_limit */
static void
SilvanSetThreads(int max_threads, int limit)
{
	RuntimeSetMaxThreads(Min(max_threads, limit));
}

/* Assign hook of silvan.max_threads */
static void
SilvanAssignMaxThreads(int newval, void *extra)
{
	SilvanSetThreads(newval, silvan_max_threads_limit);
}

/* Assign hook of silvan.max_threads_limit */
static void
SilvanAssignMaxThreadsLimit(int newval, void *extra)
{
	SilvanSetThreads(silvan_max_threads, newval);
}

/*
 * Point the runtime's disk cache of machine code at $PGDATA/silvan_code,
 * or at nothing when silvan.code_cache is off
 */
static void
SilvanSetCodeCache(bool enabled, int entries)
{
	char		dir[MAXPGPATH];

	if (!enabled || DataDir == NULL)
	{
		CodeCacheConfigure(NULL, 0);
		return;
	}
	snprintf(dir, sizeof(dir), "%s/silvan_code", DataDir);
	CodeCacheConfigure(dir, entries);
}

/* Assign hook of silvan.code_cache */
static void
SilvanAssignCodeCache(bool newval, void *extra)
{
	SilvanSetCodeCache(newval, silvan_code_cache_entries);
}

/*
 * Assign hook of silvan.vector_walk: default schedules walk rows as AVX-512
 * vectors where the CPU allows (on), or never (off); batches pick their
 * default again
 */
static void
SilvanAssignVectorWalk(bool newval, void *extra)
{
	silvan_defaults_epoch++;
}

/* Assign hook of silvan.host_profile: batches pick their default again */
static void
SilvanAssignHostProfile(int newval, void *extra)
{
	silvan_defaults_epoch++;
}

/* Assign hook of silvan.code_cache_size */
static void
SilvanAssignCodeCacheSize(int newval, void *extra)
{
	CodeCacheSetBudget((int64) newval * 1024, (int64) silvan_code_cache_entry_max_size * 1024);
}

/* Assign hook of silvan.code_cache_entry_max_size */
static void
SilvanAssignCodeCacheEntryMax(int newval, void *extra)
{
	CodeCacheSetBudget((int64) silvan_code_cache_size * 1024, (int64) newval * 1024);
}

/* Assign hook of silvan.code_cache_entries */
static void
SilvanAssignCodeCacheEntries(int newval, void *extra)
{
	SilvanSetCodeCache(silvan_code_cache, newval);
}

/*
 * An LLVM fatal error or out-of-memory inside LLVM: FATAL, which exits
 * through proc_exit without a longjmp across LLVM's frames
 */
static void
SilvanLlvmError(const char *message, bool out_of_memory)
{
	ereport(FATAL,
			(errcode(out_of_memory ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INTERNAL_ERROR),
			 errmsg("llvm error: %s", message),
			 errdetail("LLVM cannot continue after this error, so the session ends.")));
}

/*
 * The cancel check of the core's long phases (cancel.h): a pending query
 * cancel (statement_timeout, pg_cancel_backend) or session end
 * (pg_terminate_backend).  Only reads flags, so any thread may call it.
 */
static bool
SilvanCancelPending(void)
{
	return QueryCancelPending || ProcDiePending;
}

/*
 * Files silvan's helpers need (the AMDGPU linker's) go in private
 * directories under $PGDATA/silvan_tmp, which only the server's OS user
 * can reach (gpu_link.c)
 */
static void
SilvanSetWorkDirectory(void)
{
	char		dir[MAXPGPATH];

	if (DataDir == NULL)
		return;
	snprintf(dir, sizeof(dir), "%s/silvan_tmp", DataDir);
	GpuSetWorkDirectory(dir);
}

/* Define GUCs and set up the model cache */
void
_PG_init(void)
{
	DefineCustomBoolVariable("silvan.jit",
							 "Compile models to native code; off uses the reference interpreter.",
							 "Both give bit-identical results.",
							 &silvan_jit, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	silvan_max_threads = silvan_max_threads_limit = Min(RuntimeCoreCount(), SILVAN_MAX_THREADS);
	DefineCustomIntVariable("silvan.max_threads_limit",
							"Most threads any session's silvan.max_threads may use.",
							"Only superusers may change it; the default is the number of cores.",
							&silvan_max_threads_limit, silvan_max_threads_limit, 1, SILVAN_MAX_THREADS,
							PGC_SUSET, 0, NULL, SilvanAssignMaxThreadsLimit, NULL);
	DefineCustomIntVariable("silvan.max_threads",
							"Threads a parallel loop of compiled code may use; 1 runs serially.",
							"At most silvan.max_threads_limit threads are used whatever this says.",
							&silvan_max_threads, silvan_max_threads, 1, SILVAN_MAX_THREADS,
							PGC_USERSET, 0, NULL, SilvanAssignMaxThreads, NULL);
	DefineCustomEnumVariable("silvan.host_profile",
							 "Where default schedules take their machine-dependent choices from.",
							 "measured: probes run once per host and build, kept beside the code cache; fallback: the same plain choices on every host.",
							 &silvan_host_profile, SILVAN_HOST_PROFILE_MEASURED,
							 silvan_host_profile_options, PGC_USERSET, 0,
							 NULL, SilvanAssignHostProfile, NULL);
	DefineCustomBoolVariable("silvan.vector_walk",
							 "Default schedules walk rows as AVX-512 vectors where the CPU allows.",
							 "Off: they walk 16 rows in lock-step everywhere; margins are the same.",
							 &silvan_vector_walk, true, PGC_USERSET, 0,
							 NULL, SilvanAssignVectorWalk, NULL);
	DefineCustomBoolVariable("silvan.code_cache",
							 "Keep compiled machine code in $PGDATA/silvan_code for other backends.",
							 "A backend or parallel worker that needs code another one compiled loads it instead of compiling again.",
							 &silvan_code_cache, true, PGC_SUSET, 0,
							 NULL, SilvanAssignCodeCache, NULL);
	DefineCustomIntVariable("silvan.code_cache_entries",
							"Most entries kept in the code cache; the least recently used go first.",
							"The code cache, $PGDATA/silvan_code, is shared by every database of the server.",
							&silvan_code_cache_entries, 1024, 1, 1000000,
							PGC_SIGHUP, 0, NULL, SilvanAssignCodeCacheEntries, NULL);
	DefineCustomIntVariable("silvan.code_cache_size",
							"Most disk space the code cache may take; the least recently used entries go first.",
							"The code cache, $PGDATA/silvan_code, is shared by every database of the server.",
							&silvan_code_cache_size, 1024 * 1024, 1024, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, SilvanAssignCodeCacheSize, NULL);
	DefineCustomIntVariable("silvan.code_cache_entry_max_size",
							"Largest entry the code cache keeps; bigger machine code is compiled again by each backend.",
							NULL, &silvan_code_cache_entry_max_size, 64 * 1024, 64, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, SilvanAssignCodeCacheEntryMax, NULL);
	DefineCustomIntVariable("silvan.tune_max_threads",
							"Threads the tuning worker's compiled code may use.",
							"The background worker that runs tune_async() jobs times candidates with this many threads, at nice 10.",
							&silvan_tune_max_threads, 1, 1, SILVAN_MAX_THREADS,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.tune_sample_rows",
							"Most rows silvan.tune() reads from its sample.",
							"The first rows the sample table or query returns; the tuning worker uses the database's setting.",
							&silvan_tune_sample_rows, 16384, 64, 1048576,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("silvan.tune_min_speedup",
							 "How many times faster than the default a tuned schedule must be to be stored.",
							 "Measured again against the default after the search; 0 stores the best whatever it is.",
							 &silvan_tune_min_speedup, 1.05, 0, 100,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.tune_max_jobs_per_role",
							"Most tuning jobs one role may have queued or running.",
							"tune_async() beyond it is refused (SQLSTATE 53400); 0: no limit.",
							&silvan_tune_max_jobs_per_role, 8, 0, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.tune_max_budget_per_role",
							"Most budget one role's queued and running tuning jobs may have together.",
							"tune_async() beyond it is refused (SQLSTATE 53400); 0: no limit.",
							&silvan_tune_max_budget_per_role, 3600, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.compile_max_instructions",
							"Most LLVM IR instructions one compile of a model may generate.",
							"A schedule whose code is estimated, or counted before LLVM runs, above it is refused (SQLSTATE 54000); 0: no bound.",
							&silvan_compile_max_instructions, COMPILE_MAX_INSTRUCTIONS_DEFAULT,
							0, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.compile_max_function_instructions",
							"Most LLVM IR instructions one function of a compile may have.",
							"LLVM's time on a function grows faster than its size; a schedule over it is refused (SQLSTATE 54000); 0: no bound.",
							&silvan_compile_max_function_instructions,
							COMPILE_MAX_FUNCTION_INSTRUCTIONS_DEFAULT, 0, INT_MAX, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.compile_max_function_loops",
							"Most loops one function of a compile may have.",
							"LLVM's loop optimizations take time that grows with the square of a function's loops; a schedule over it is refused (SQLSTATE 54000); 0: no bound.",
							&silvan_compile_max_function_loops, COMPILE_MAX_FUNCTION_LOOPS_DEFAULT,
							0, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	SilvanDefineDeviceGucs();
	ScanNodeInit();
	BatchPlanInit();
	MarkGUCPrefixReserved("silvan");
	SilvanSetCodeCache(silvan_code_cache, silvan_code_cache_entries);
	CodeCacheSetBudget((int64) silvan_code_cache_size * 1024,
					   (int64) silvan_code_cache_entry_max_size * 1024);
	SilvanSetThreads(silvan_max_threads, silvan_max_threads_limit);
	RuntimeSetInterruptFlag(&InterruptPending);
	CancelSetCheck(SilvanCancelPending);
	SilvanSetWorkDirectory();
	ModelCacheInit();
	CatalogPlacementsInit();
	StatsInit();
	LlvmErrorsSetCallback(SilvanLlvmError);
	/* preloaded: every backend forked from here inherits a started JIT */
	if (process_shared_preload_libraries_in_progress)
		JitStartEarly();
}

/* Map a status kind to an errcode */
static int
StatusErrcode(SilvanErrorKind kind)
{
	switch (kind)
	{
		case SILVAN_ERROR_SYNTAX:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
		case SILVAN_ERROR_UNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case SILVAN_ERROR_INVALID:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case SILVAN_ERROR_OUT_OF_MEMORY:
			return ERRCODE_OUT_OF_MEMORY;
		case SILVAN_ERROR_CANCELED:
			return ERRCODE_QUERY_CANCELED;
		case SILVAN_ERROR_LIMIT:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		default:
			return ERRCODE_INTERNAL_ERROR;
	}
}

/*
 * Turn a core status into ereport.  A phase that stopped on a cancel
 * request first lets PostgreSQL service the interrupt, which raises its
 * own error (57014 for a cancel or statement_timeout, FATAL for
 * pg_terminate_backend); if the request is held off, the status itself
 * is the 57014.
 */
void
SilvanReportStatus(int elevel, const SilvanStatus *status)
{
	if (status->kind == SILVAN_ERROR_CANCELED && elevel >= ERROR)
		CHECK_FOR_INTERRUPTS();
	ereport(elevel,
			(errcode(StatusErrcode(status->kind)),
			 errmsg("%s", status->message),
			 status->detail[0] ? errdetail("%s", status->detail) : 0,
			 status->hint[0] ? errhint("%s", status->hint) : 0));
}

PG_FUNCTION_INFO_V1(silvan_catalog_changed);

/*
 * Statement trigger on the catalog tables: tell every backend to revalidate
 * its models.  Backends listen for silvan.model, so that is the relation
 * invalidated whichever table changed.  Fired by anything else (a direct
 * call, a trigger on another table) it refuses.
 */
Datum
silvan_catalog_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigger = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		RelationGetNamespace(trigger->tg_relation) != get_namespace_oid("silvan", false))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("silvan_internal.catalog_changed() may only be fired by the triggers on silvan's catalog"),
				 errdetail("It is a trigger function of the tables silvan.model, silvan.schedule and silvan.profile.")));
	CacheInvalidateRelcacheByRelid(SilvanCatalogRelid("model"));
	return PointerGetDatum(NULL);
}

PG_FUNCTION_INFO_V1(silvan_explain);

/*
 * Which schedule a batch size runs with and why: stored (tuned, with what
 * the tuner measured, or set by hand) for that size, for the nearest size
 * within a factor of 2, for every size; or the default
 */
static void
ExplainScheduleSource(StringInfo out, const ModelVersion *version, int32 batch_size,
					  const char *target)
{
	const StoredSchedule *s = ModelVersionStoredSchedule(version, batch_size, target);
	const char *origin = s == NULL ? "" : s->tuned ? " (tuned)" : " (set by hand)";

	if (s == NULL)
		appendStringInfoString(out, "schedule source: default\n");
	else if (s->batch_size == batch_size)
		appendStringInfo(out, "schedule source: stored for batch size %d%s\n",
						 s->batch_size, origin);
	else if (s->batch_size > 0)
		appendStringInfo(out, "schedule source: stored for batch size %d, the nearest within a factor of 2%s\n",
						 s->batch_size, origin);
	else
		appendStringInfo(out, "schedule source: stored for every batch size%s\n", origin);
	if (s != NULL && s->provenance != NULL)
		appendStringInfo(out, "tuned: %s\n", s->provenance);
}

/*
 * Text of every IR level for a model at a batch size: which schedule the
 * predict functions would use and why, the Forest IR summary, and the
 * compiler's HIR, MIR (and LLVM IR) for it.
 */
Datum
silvan_explain(PG_FUNCTION_ARGS)
{
	ModelVersion *version;
	CompiledVariant *variant;
	StringInfoData out;
	char	   *dump;
	int32		batch_size;
	const char *target;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	batch_size = PG_ARGISNULL(1) ? 4096 : PG_GETARG_INT32(1);
	if (batch_size < 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("batch size must be positive"),
						errdetail("Argument \"batch_size\" is %d.", batch_size)));
	target = SilvanCheckTarget(PG_ARGISNULL(2) ? "cpu" : text_to_cstring(PG_GETARG_TEXT_PP(2)),
							   "target", false);
	version = ModelCacheLookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	/* the trees and their code, as explain shows them, are the model's own */
	ModelVersionCheckPrivilege(version, ACL_SELECT, text_to_cstring(PG_GETARG_TEXT_PP(0)));
	variant = ModelVersionVariantFor(version, batch_size, target);
	initStringInfo(&out);
	ExplainScheduleSource(&out, version, batch_size, target);
	dump = ForestDump(ModelVersionForest(version), false);
	appendStringInfoString(&out, dump ? dump : "");
	free(dump);
	if (variant->code == NULL)
		appendStringInfoString(&out, "interpreted: the compiler declined this model\n");
	else
	{
		dump = CompiledForestExplainFor(variant->code, !PG_ARGISNULL(3) && PG_GETARG_BOOL(3),
										CatalogOwnsModel(version->id));
		appendStringInfoString(&out, dump ? dump : "");
		free(dump);
	}
	PG_RETURN_TEXT_P(cstring_to_text(out.data));
}

/*
 * The C symbol of a function of this library as installed (C, not
 * SECURITY DEFINER, no SET clause) with nargs arguments and retset; NULL
 * for any other function.  The planner hooks recognize calls by it.
 */
char *
SilvanFunctionSymbol(Oid funcid, int nargs, bool retset)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	Form_pg_proc proc;
	char	   *symbol = NULL;

	if (!HeapTupleIsValid(tuple))
		return NULL;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	if (proc->prolang == ClanguageId && proc->proretset == retset && !proc->prosecdef &&
		proc->pronargs == nargs && heap_attisnull(tuple, Anum_pg_proc_proconfig, NULL))
	{
		bool		src_null,
					bin_null;
		Datum		src = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &src_null);
		Datum		bin = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_probin, &bin_null);

		if (!src_null && !bin_null && strcmp(TextDatumGetCString(bin), "$libdir/silvan") == 0)
			symbol = TextDatumGetCString(src);
	}
	ReleaseSysCache(tuple);
	return symbol;
}
