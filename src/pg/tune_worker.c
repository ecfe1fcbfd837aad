/*
 * tune_worker.c
 *		The background worker that runs queued tuning jobs.
 *
 * tune_async() inserts a job into silvan.tuning_job and asks for a worker
 * when its transaction commits (so the worker sees the row); nothing needs
 * shared_preload_libraries: the worker is a dynamic background worker of
 * this library, connected to the job's database.  At most one works per
 * database.  What says so is the job table itself, under a lock no user
 * can take: a worker claims a job in a transaction that first locks
 * silvan.tuning_job in SHARE UPDATE EXCLUSIVE mode (self-exclusive, so
 * claims take turns; users' inserts and updates do not wait for it, and
 * LOCK TABLE on the table needs privileges no role but the catalog's
 * owner has), and there takes the oldest queued job only if no other
 * live tuning worker has one running; otherwise it leaves, and that
 * worker takes the job after its own.  No advisory lock is involved, so
 * nothing user SQL can take or release (a job's own sample query
 * included) stalls the queue or lets a second worker in.
 *
 * A job runs as its owner (the role that queued it), under search_path
 * "pg_catalog, pg_temp", with the rights checked again as that role
 * before any work (it must still be able to change the model and read the
 * sample), in a security-restricted operation whose settings are undone
 * after it (a query's set_config cannot reach the next job, which may be
 * another role's).  The worker runs at nice 10 with silvan.tune_max_threads
 * threads.  Its transactions:
 *
 *   claim     jobs of workers that are gone are marked failed; the oldest
 *             queued job becomes running, with the worker's pid, unless
 *             another live worker has a job running
 *   begin     rights, the model (pinned), the sample rows (tune.c)
 *   search    no transaction: each candidate's progress is written in a
 *             short one of its own, which also tells that the job was
 *             cancelled (or its model dropped): then the job stops
 *   store     the schedules found and the job's result, in one transaction
 *
 * The sample query runs under a statement timeout of the job's budget.
 * cancel_tuning() marks the job cancelled and, while it still holds the
 * job's row (so the worker cannot have moved on to another job), sends
 * the worker a query cancel: whatever the job is doing (its sample query,
 * a compile, a timing) stops within moments.  Any error marks the job
 * failed with the error's message, unless it was cancelled.  A worker that
 * dies (a crash, a restart, SIGTERM) leaves its job running with a pid
 * that is no longer a tuning worker's: the tuning_jobs view shows such
 * jobs as failed, and the next worker marks them so in the table.
 */
#include "silvan_pg.h"

#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "silvan/tune.h"

#define TUNE_WORKER_NICE		10
#define TUNE_PROGRESS_SECONDS	0.5
#define TUNE_WORKER_TYPE		"silvan tuning worker"

PGDLLEXPORT void silvan_tune_worker_main(Datum arg);

static bool launch_pending = false;
static bool callback_registered = false;

/* Ask the postmaster for a worker for this database */
static void
TuneLaunchWorker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	snprintf(worker.bgw_name, BGW_MAXLEN, TUNE_WORKER_TYPE);
	snprintf(worker.bgw_type, BGW_MAXLEN, TUNE_WORKER_TYPE);
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "silvan");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "silvan_tune_worker_main");
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	if (!RegisterDynamicBackgroundWorker(&worker, NULL))
		ereport(WARNING,
				(errmsg("could not start a silvan tuning worker"),
				 errdetail("No background worker slot is free (max_worker_processes)."),
				 errhint("The job stays queued and runs when the next tuning job is queued.")));
}

/* At commit, start a worker if this transaction queued a job */
static void
TuneXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && launch_pending)
	{
		launch_pending = false;
		TuneLaunchWorker();
	}
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		launch_pending = false;
}

/* Start a worker when the current transaction commits */
void
TuneLaunchAtCommit(void)
{
	if (!callback_registered)
	{
		RegisterXactCallback(TuneXactCallback, NULL);
		callback_registered = true;
	}
	launch_pending = true;
}

/* Run a statement of the worker (between WorkerBegin and WorkerCommit) */
static void
WorkerSql(const char *query, int nargs, Oid *argtypes, Datum *args, const char *nulls,
		  int expected)
{
	int			ret;

	ret = SPI_execute_with_args(query, nargs, argtypes, args, nulls, false, 0);
	if (ret != expected)
		elog(ERROR, "silvan tuning worker: could not run a statement: %s",
			 SPI_result_code_string(ret));
}

/* Begin and end a transaction of the worker, with a snapshot and SPI */
static void
WorkerBegin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
}

static void
WorkerCommit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/* A claimed job: its id, owner and request */
typedef struct WorkerJob
{
	int64		id;
	Oid			owner;
	TuneRequest request;
} WorkerJob;

/* Text of column c of the claimed row, or NULL */
static char *
JobText(int c)
{
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, c);
}

/* What a claim came to */
typedef enum WorkerClaimed
{
	CLAIMED_JOB,				/* a job to run */
	CLAIMED_NONE,				/* nothing queued */
	CLAIMED_BUSY				/* another live worker has a job running */
} WorkerClaimed;

/*
 * Is a job running in another live tuning worker?  (A pid that is no
 * worker of ours, or no process at all, is a worker that is gone.)
 */
#define TUNE_LIVE_WORKER \
	"EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a" \
	" WHERE a.pid OPERATOR(pg_catalog.=) worker_pid" \
	" AND a.backend_type OPERATOR(pg_catalog.=) '" TUNE_WORKER_TYPE "')"

/*
 * Claim the oldest queued job, in a transaction of its own that takes
 * turns with every other worker's claim (see above): jobs of dead workers
 * are marked failed, and the oldest queued job becomes this worker's
 * unless another live worker has one running
 */
static WorkerClaimed
WorkerClaim(WorkerJob *job, MemoryContext cxt)
{
	HeapTuple	tuple;
	TupleDesc	desc;
	bool		isnull;
	MemoryContext old;

	WorkerBegin();
	WorkerSql("LOCK TABLE silvan.tuning_job IN SHARE UPDATE EXCLUSIVE MODE",
			  0, NULL, NULL, NULL, SPI_OK_UTILITY);
	WorkerSql("UPDATE silvan.tuning_job SET state = 'failed', finished = pg_catalog.now(),"
			  " error = 'the tuning worker exited before finishing the job'"
			  " WHERE state OPERATOR(pg_catalog.=) 'running'"
			  " AND worker_pid IS DISTINCT FROM pg_catalog.pg_backend_pid()"
			  " AND NOT " TUNE_LIVE_WORKER,
			  0, NULL, NULL, NULL, SPI_OK_UPDATE);
	WorkerSql("SELECT 1 FROM silvan.tuning_job WHERE state OPERATOR(pg_catalog.=) 'running'"
			  " AND worker_pid IS DISTINCT FROM pg_catalog.pg_backend_pid()",
			  0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		WorkerCommit();
		return CLAIMED_BUSY;
	}
	/*
	 * with versions, the job tunes its version: 'churn@3' (made here: Citus
	 * takes only IMMUTABLE functions in the RETURNING of a statement that
	 * joins its reference tables)
	 */
	WorkerSql(psprintf("UPDATE silvan.tuning_job j SET state = 'running', started = pg_catalog.now(),"
					   " worker_pid = pg_catalog.pg_backend_pid(), phase = 'starting'"
					   " FROM silvan.model m WHERE m.id OPERATOR(pg_catalog.=) j.model_id"
					   " AND j.id OPERATOR(pg_catalog.=) (SELECT id FROM silvan.tuning_job"
					   "   WHERE state OPERATOR(pg_catalog.=) 'queued' ORDER BY id LIMIT 1)"
					   " RETURNING j.id, j.owner::pg_catalog.oid, m.name, j.sample_relation,"
					   " j.sample_query, j.key_column, j.feature_columns, j.batch_sizes, j.target,"
					   " j.strategy, j.budget, j.exact, %s",
					   CatalogHasVersions() ? "m.version" : "NULL::pg_catalog.int4"),
			  0, NULL, NULL, NULL, SPI_OK_UPDATE_RETURNING);
	if (SPI_processed != 1)
	{
		WorkerCommit();
		return CLAIMED_NONE;
	}
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	old = MemoryContextSwitchTo(cxt);
	memset(job, 0, sizeof(WorkerJob));
	job->id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	job->owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
	job->request.model = JobText(3);
	job->request.sample_relid = DatumGetObjectId(SPI_getbinval(tuple, desc, 4, &isnull));
	if (isnull)
		job->request.sample_relid = InvalidOid;
	job->request.sample_query = JobText(5);
	job->request.key_column = JobText(6);
	{
		Datum		columns = SPI_getbinval(tuple, desc, 7, &isnull);

		job->request.feature_columns = isnull ? NULL : DatumGetArrayTypePCopy(columns);
	}
	{
		ArrayType  *sizes = DatumGetArrayTypePCopy(SPI_getbinval(tuple, desc, 8, &isnull));
		Datum	   *values;
		bool	   *nulls;
		int			n;

		deconstruct_array(sizes, INT4OID, 4, true, TYPALIGN_INT, &values, &nulls, &n);
		job->request.batch_sizes = palloc(sizeof(int32) * Max(n, 1));
		for (int i = 0; i < n; i++)
			job->request.batch_sizes[i] = DatumGetInt32(values[i]);
		job->request.num_batch_sizes = n;
	}
	job->request.target = JobText(9);
	job->request.strategy = strcmp(JobText(10), "exhaustive") == 0 ? TUNE_EXHAUSTIVE : TUNE_HEURISTIC;
	job->request.budget = datumCopy(SPI_getbinval(tuple, desc, 11, &isnull), false, sizeof(Interval));
	job->request.exact = DatumGetBool(SPI_getbinval(tuple, desc, 12, &isnull));
	{
		int32		version = DatumGetInt32(SPI_getbinval(tuple, desc, 13, &isnull));

		if (!isnull)
			job->request.model = psprintf("%s@%d", job->request.model, version);
	}
	MemoryContextSwitchTo(old);
	WorkerCommit();
	return CLAIMED_JOB;
}

/*
 * Progress of a job (from the search, outside a transaction): written at
 * most every TUNE_PROGRESS_SECONDS or at a new phase; false when the job
 * is no longer running (cancelled, or its model dropped)
 */
bool
TuneWorkerProgress(int64 job, int32 batch_size, const char *phase, int32 done, int32 planned,
				   double best, double default_us)
{
	static TimestampTz last = 0;
	static const char *last_phase = NULL;
	TimestampTz now = GetCurrentTimestamp();
	Oid			argtypes[7] = {INT8OID, TEXTOID, INT4OID, INT4OID, INT4OID, FLOAT8OID, FLOAT8OID};
	Datum		args[7];
	char		nulls[7] = "       ";
	bool		running;

	if (last_phase == phase && !TimestampDifferenceExceeds(last, now, TUNE_PROGRESS_SECONDS * 1000))
		return true;
	last = now;
	last_phase = phase;
	args[0] = Int64GetDatum(job);
	args[1] = CStringGetTextDatum(phase);
	args[2] = Int32GetDatum(batch_size);
	args[3] = Int32GetDatum(done);
	args[4] = Int32GetDatum(planned);
	args[5] = Float8GetDatum(best);
	args[6] = Float8GetDatum(default_us);
	nulls[5] = best > 0 ? ' ' : 'n';
	nulls[6] = default_us > 0 ? ' ' : 'n';
	WorkerBegin();
	WorkerSql("UPDATE silvan.tuning_job SET phase = $2, batch_size = $3, candidates_done = $4,"
			  " candidates_planned = $5, best_us_per_row = $6, default_us_per_row = $7"
			  " WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'running'",
			  7, argtypes, args, nulls, SPI_OK_UPDATE);
	running = SPI_processed == 1;
	WorkerCommit();
	return running;
}

/*
 * Become the job's owner, in a security-restricted operation under the
 * locked search_path, in a GUC nest level of its own: whatever the job's
 * query sets (set_config(..., false) included) is undone by
 * WorkerLeaveOwner, so that it cannot reach the jobs after it.  Error if
 * the role is gone.
 */
static int
WorkerBecomeOwner(const WorkerJob *job)
{
	int			nest;

	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(job->owner)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the role that queued tuning job " INT64_FORMAT " no longer exists", job->id)));
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	SetUserIdAndSecContext(job->owner, SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	return nest;
}

/* Back to the worker's own role and settings */
static void
WorkerLeaveOwner(Oid worker_user, int nest)
{
	SetUserIdAndSecContext(worker_user, 0);
	AtEOXact_GUC(false, nest);
}

/* Store a finished job's schedules and result, unless it was cancelled meanwhile */
static void
WorkerFinish(const WorkerJob *job, TuneSession *session, Oid worker_user)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	int			nest;

	WorkerBegin();
	nest = WorkerBecomeOwner(job);
	TuneStore(session);
	WorkerLeaveOwner(worker_user, nest);
	args[0] = Int64GetDatum(job->id);
	args[1] = CStringGetTextDatum(TuneResultJson(session));
	WorkerSql("UPDATE silvan.tuning_job SET state = 'done', phase = 'done',"
			  " result = $2::pg_catalog.jsonb, finished = pg_catalog.now()"
			  " WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'running'",
			  2, argtypes, args, NULL, SPI_OK_UPDATE);
	if (SPI_processed != 1)
	{
		/* cancelled after the last progress check: store nothing */
		SPI_finish();
		PopActiveSnapshot();
		AbortCurrentTransaction();
		return;
	}
	WorkerCommit();
}

/* Record a job's failure (its state stays cancelled if it was cancelled) */
static void
WorkerFail(int64 id, const char *message)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		args[2] = {Int64GetDatum(id), CStringGetTextDatum(message)};

	WorkerBegin();
	WorkerSql("UPDATE silvan.tuning_job SET finished = pg_catalog.now(),"
			  " state = CASE WHEN state OPERATOR(pg_catalog.=) 'running' THEN 'failed' ELSE state END,"
			  " error = CASE WHEN state OPERATOR(pg_catalog.=) 'running' THEN $2 ELSE error END"
			  " WHERE id OPERATOR(pg_catalog.=) $1",
			  2, argtypes, args, NULL, SPI_OK_UPDATE);
	WorkerCommit();
}

/* Run one claimed job to its end: done, failed or cancelled */
static void
WorkerRunJob(WorkerJob *job, MemoryContext cxt)
{
	TuneSession *volatile session = NULL;
	Oid			worker_user = GetUserId();

	PG_TRY();
	{
		int			nest;

		WorkerBegin();
		nest = WorkerBecomeOwner(job);
		TuneRequestCheck(&job->request);
		/* the sample query may take the job's budget, no more */
		enable_timeout_after(STATEMENT_TIMEOUT,
							 (int) Min(Max(job->request.budget_seconds, 1.0) * 1000.0, INT_MAX));
		session = TuneBegin(&job->request, job->id);
		disable_timeout(STATEMENT_TIMEOUT, false);
		WorkerLeaveOwner(worker_user, nest);
		WorkerCommit();
		for (int i = 0; i < TuneBatchCount(session); i++)
			TuneBatch(session, i);
		WorkerFinish(job, session, worker_user);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* a cancel was for this job (cancel_tuning) or its timeout: it is handled */
		QueryCancelPending = false;
		AbortCurrentTransaction();
		SetUserIdAndSecContext(worker_user, 0);
		TuneEnd(session);
		session = NULL;
		WorkerFail(job->id, edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	TuneEnd(session);
}

/*
 * The worker: lower priority, the locked search_path, the tuning thread
 * count; then queued jobs one at a time, as long as it can claim them
 */
void
silvan_tune_worker_main(Datum arg)
{
	MemoryContext cxt;
	char		threads[16];
	WorkerJob	job;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	errno = 0;
	if (nice(TUNE_WORKER_NICE) == -1 && errno != 0)
		elog(LOG, "silvan tuning worker: could not lower its priority: %m");
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	snprintf(threads, sizeof(threads), "%d", silvan_tune_max_threads);
	SetConfigOption("silvan.max_threads", threads, PGC_SUSET, PGC_S_OVERRIDE);
	pgstat_report_appname(TUNE_WORKER_TYPE);
	cxt = AllocSetContextCreate(TopMemoryContext, "silvan tuning job", ALLOCSET_DEFAULT_SIZES);
	while (WorkerClaim(&job, cxt) == CLAIMED_JOB)
	{
		WorkerRunJob(&job, cxt);
		MemoryContextReset(cxt);
		/* SIGTERM ends the worker; a late cancel of the job just run is moot */
		QueryCancelPending = false;
		CHECK_FOR_INTERRUPTS();
	}
	proc_exit(0);
}
