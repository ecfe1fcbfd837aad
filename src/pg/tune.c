/*
 * tune.c
 *		silvan.tune() and silvan.tune_async(): schedule exploration from SQL.
 *
 * A call is checked in full before any work (TuneRequestCheck): the model
 * exists and the caller may change it, the strategy, target, budget and
 * batch sizes are valid, a sample table is readable.  Then, in a session
 * (TuneBegin .. TuneEnd):
 *
 *   rows     up to silvan.tune_sample_rows rows of the sample (and no more
 *            than maintenance_work_mem holds with their margins): a table,
 *            its columns matched to the features as predict_table matches
 *            them, or a query read as predict_query reads it (the first
 *            column a key, ignored); without a sample, rows synthesized
 *            from the model's profile (splits and sides as often as the
 *            profiled rows took them) or, without one, from its splits.
 *   search   per batch size (TuneBatch): the iterator of tune_search.c
 *            over the space of tune_space.c, each candidate compiled and
 *            timed on the rows by tune_measure.c, until the space or the
 *            batch size's share of the budget is spent (the budget is
 *            shared equally by the batch sizes still to tune; the default
 *            schedule is always timed).  Unless the default was best, the
 *            top three are then timed again with the default, alternating,
 *            TUNE_CONFIRM_ROUNDS times each; the least median wins, and is
 *            kept only if it is silvan.tune_min_speedup times faster than
 *            the default's median (1.05; 0 keeps the best, even the
 *            default).
 *   store    (TuneStore) the kept schedules, origin 'tuned' with their
 *            provenance; a batch size where the default won loses an
 *            earlier tuned schedule (one set by hand stays).
 *
 * Targets: cpu candidates run on the host.  cuda and rocm candidates come
 * from the GPU space (Algorithm 1 by default; exact keeps one tree thread a
 * row, the library's order of summation), are compiled to device code and
 * timed on the backend's device, each batch copied over and back as a
 * scan's is, and are stored for that target.  Under silvan.gpu_emulation
 * they run on the emulated grid: slow, and the figures say nothing of a
 * GPU (for tests).  A job in the background worker opens the device there.
 *
 * Candidates' machine code is not kept in the disk code cache (it would
 * push out the code backends use); the winner is cached when first used.
 *
 * tune() runs all of it in the caller's transaction, so a cancel, a
 * statement timeout or any error stores nothing.  The compiled code stops
 * at the interrupt flag; the loop then runs CHECK_FOR_INTERRUPTS, and the
 * session's malloc'd state is released by TuneEnd in PG_FINALLY.  Progress
 * goes out as NOTICE, one per phase.  The worker (tune_worker.c) runs the
 * same steps with its own transactions around TuneBegin and TuneStore and
 * none around the search, so that its progress updates to the job row are
 * seen while it works.
 */
#include "silvan_pg.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "silvan/code_cache.h"
#include "silvan/jit.h"
#include "silvan/runtime.h"
#include "silvan/tune.h"

#include "batch.h"

#define TUNE_MAX_BATCH_SIZES	16
#define TUNE_MAX_BATCH			65536
#define TUNE_SYNTHESIZED_ROWS	4096
#define TUNE_CONFIRM_ROUNDS		3
#define TUNE_MAX_BUDGET			(24 * 3600.0)

/* What one batch size came to */
typedef struct TuneBatchResult
{
	int32		batch_size;
	char	   *schedule;		/* the best candidate's text */
	double		us_per_row;
	double		default_us_per_row;
	bool		stored;
	int32		timed;			/* candidates timed (fully or discarded), the default included */
	int32		discarded;
	int32		failed;
	int32		mismatched;
	double		seconds;
	bool		budget_spent;
	char	   *provenance;		/* jsonb text, when stored */
	char	   *default_text;	/* the default schedule's text */
	/* the scoring function end to end, with the schedule and the default; 0: not timed */
	double		end_to_end_us_per_row;
	double		default_end_to_end_us_per_row;
} TuneBatchResult;

struct TuneSession
{
	MemoryContext cxt;
	TuneRequest request;
	char	   *pinned;			/* the version tuned: 'churn@3' (model_ref.c) */
	int64		job;			/* 0: tune() in the foreground */
	ModelVersion *version;		/* pinned */
	int64		revision;
	char	   *rows;			/* num_rows rows of the forest's precision */
	int64		num_rows;
	const char *rows_from;		/* table, query, profile, synthesized */
	TuneBatchResult *results;
	double		started;
	int			threads;
	double		min_speedup;	/* silvan.tune_min_speedup when it began */
	CompileOptions target;		/* what candidates compile for */
	GpuDevice  *device;			/* cuda, rocm: where they run (not emulated) */
	char		device_name[256];	/* for the provenance: the device, or "emulated" */
};

/* ---- checking a request ---- */

/* The strategy named, or an error */
static int
TuneStrategyOf(const char *name)
{
	if (strcmp(name, "heuristic") == 0)
		return TUNE_HEURISTIC;
	if (strcmp(name, "exhaustive") == 0)
		return TUNE_EXHAUSTIVE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown tuning strategy \"%s\"", name),
			 errdetail("Argument \"strategy\" must be \"heuristic\" or \"exhaustive\".")));
	return TUNE_HEURISTIC;
}

/*
 * Error unless the target can be tuned here: a GPU target needs its
 * device (or silvan.gpu_emulation, where candidates run on the emulated grid)
 */
static void
TuneCheckTarget(const char *target)
{
	const Target *t;

	(void) SilvanCheckTarget(target, "target", true);
	t = SilvanTargetFor(target, true);
	if (t->gpu && t->output != TARGET_OUTPUT_JIT)
		(void) SilvanDevice(SilvanTargetKind(t), false);
}

/* The session's target: what candidates compile for and the device they run on */
static void
TuneOpenTarget(TuneSession *session)
{
	const Target *t = SilvanTargetFor(session->request.target, true);
	GpuDeviceInfo info;
	SilvanStatus status;

	TuneCheckTarget(session->request.target);
	SilvanCompileOptions(&session->target, t, SilvanTargetArch(t));
	strlcpy(session->device_name, t->gpu ? "emulated" : "", sizeof(session->device_name));
	if (t->output == TARGET_OUTPUT_JIT)
		return;
	session->device = SilvanDevice(SilvanTargetKind(t), false);
	if (GpuDeviceInfoGet(session->device->lib, session->device->ordinal, &info, &status))
		snprintf(session->device_name, sizeof(session->device_name), "%s (%s)", info.name,
				 info.arch);
}

/* The budget in seconds; error unless positive and at most a day */
static double
TuneBudgetSeconds(Datum budget)
{
	Interval   *span = DatumGetIntervalP(budget);
	double		seconds = span->time / 1e6 + span->day * 86400.0 + span->month * 30 * 86400.0;

	if (!(seconds > 0) || seconds > TUNE_MAX_BUDGET)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tuning budget must be positive and at most a day"),
				 errdetail("Argument \"budget\" is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out, budget)))));
	return seconds;
}

/* Ascending order of int32 */
static int
CompareInt32(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return x < y ? -1 : x > y;
}

/* The batch sizes, checked, sorted and without repeats */
static void
TuneBatchSizes(TuneRequest *request, ArrayType *array)
{
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			kept = 0;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch sizes must be a one-dimensional array"),
				 errdetail("Argument \"batch_sizes\" has %d dimensions.", ARR_NDIM(array))));
	deconstruct_array(array, INT4OID, 4, true, TYPALIGN_INT, &values, &nulls, &n);
	if (n < 1 || n > TUNE_MAX_BATCH_SIZES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("between 1 and %d batch sizes must be given", TUNE_MAX_BATCH_SIZES),
				 errdetail("Argument \"batch_sizes\" has %d elements.", n)));
	request->batch_sizes = palloc(sizeof(int32) * n);
	for (int i = 0; i < n; i++)
	{
		int32		b = nulls[i] ? 0 : DatumGetInt32(values[i]);

		if (nulls[i] || b < 1 || b > TUNE_MAX_BATCH)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch sizes must be between 1 and %d", TUNE_MAX_BATCH),
					 errdetail("Element %d of argument \"batch_sizes\" is %s.", i + 1,
							   nulls[i] ? "NULL" : psprintf("%d", b))));
		request->batch_sizes[i] = b;
	}
	qsort(request->batch_sizes, n, sizeof(int32), CompareInt32);
	for (int i = 0; i < n; i++)
		if (kept == 0 || request->batch_sizes[kept - 1] != request->batch_sizes[i])
			request->batch_sizes[kept++] = request->batch_sizes[i];
	request->num_batch_sizes = kept;
}

/*
 * The batch sizes scoring runs with, which tune() takes when the caller
 * names none: 1 (scalar calls), the batched calls' (silvan.batch_calls_size)
 * and the table functions' default (SILVAN_TABLE_BATCH_SIZE)
 */
static void
TuneScoringBatchSizes(TuneRequest *request)
{
	int32		sizes[3] = {1, silvan_batch_calls_size, SILVAN_TABLE_BATCH_SIZE};
	int			kept = 0;

	qsort(sizes, lengthof(sizes), sizeof(int32), CompareInt32);
	request->batch_sizes = palloc(sizeof(sizes));
	for (int i = 0; i < lengthof(sizes); i++)
		if (kept == 0 || request->batch_sizes[kept - 1] != sizes[i])
			request->batch_sizes[kept++] = sizes[i];
	request->num_batch_sizes = kept;
}

/*
 * Check a request before any work: the model and the caller's right to
 * change it, target, budget, and a sample table the caller can read
 */
void
TuneRequestCheck(TuneRequest *request)
{
	/* the target's name now; its device (a driver loaded) only after the permission checks */
	(void) SilvanCheckTarget(request->target, "target", true);
	request->budget_seconds = TuneBudgetSeconds(request->budget);
	(void) CatalogCheckOwned(request->model);
	if (OidIsValid(request->sample_relid))
	{
		AclResult	acl = pg_class_aclcheck(request->sample_relid, GetUserId(), ACL_SELECT);

		if (acl != ACLCHECK_OK)
			aclcheck_error(acl, get_relkind_objtype(get_rel_relkind(request->sample_relid)),
						   get_rel_name(request->sample_relid));
	}
	TuneCheckTarget(request->target);
}

/*
 * The request of load_model(..., tune => true): tune_async's defaults, no
 * sample (the caller has just stored the model, so may change it)
 */
void
TuneRequestDefaults(TuneRequest *request, const char *model)
{
	memset(request, 0, sizeof(TuneRequest));
	request->model = pstrdup(model);
	TuneScoringBatchSizes(request);
	request->target = "cpu";
	request->strategy = TUNE_HEURISTIC;
	request->budget = DirectFunctionCall3(interval_in, CStringGetDatum("2 minutes"),
										  ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	request->exact = true;
	request->budget_seconds = TuneBudgetSeconds(request->budget);
}

/* Error for a NULL argument that must be given */
static void
TuneRequire(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/*
 * Read the arguments of tune() and tune_async(): (model, sample regclass,
 * key_column, feature_columns, options), or of tune_query() and
 * tune_query_async(): (model, query, options); the options are
 * batch_sizes, target, strategy, budget, exact.  Checked in full.
 */
static void
TuneRequestFromCall(FunctionCallInfo fcinfo, bool query, TuneRequest *request)
{
	int			o = query ? 2 : 4;

	memset(request, 0, sizeof(TuneRequest));
	TuneRequire(fcinfo, 0, "model");
	request->model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (query)
	{
		TuneRequire(fcinfo, 1, "query");
		request->sample_query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	}
	else
	{
		request->sample_relid = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
		request->key_column = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
		request->feature_columns = PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3);
		if (!OidIsValid(request->sample_relid) && (request->key_column || request->feature_columns))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key_column and feature_columns need a sample"),
					 errdetail("Argument \"sample\" is NULL, so rows are drawn from the model itself.")));
	}
	TuneRequire(fcinfo, o + 1, "target");
	TuneRequire(fcinfo, o + 2, "strategy");
	TuneRequire(fcinfo, o + 3, "budget");
	TuneRequire(fcinfo, o + 4, "exact");
	if (PG_ARGISNULL(o))
		TuneScoringBatchSizes(request);
	else
		TuneBatchSizes(request, PG_GETARG_ARRAYTYPE_P(o));
	request->target = text_to_cstring(PG_GETARG_TEXT_PP(o + 1));
	request->strategy = TuneStrategyOf(text_to_cstring(PG_GETARG_TEXT_PP(o + 2)));
	request->budget = PG_GETARG_DATUM(o + 3);
	request->exact = PG_GETARG_BOOL(o + 4);
	TuneRequestCheck(request);
}

/* ---- a tuning session ---- */

/* Copy a request into the session's context */
static void
TuneCopyRequest(TuneSession *session, const TuneRequest *request)
{
	TuneRequest *copy = &session->request;

	*copy = *request;
	copy->model = pstrdup(request->model);
	copy->sample_query = request->sample_query ? pstrdup(request->sample_query) : NULL;
	copy->key_column = request->key_column ? pstrdup(request->key_column) : NULL;
	copy->feature_columns = request->feature_columns ?
		DatumGetArrayTypePCopy(PointerGetDatum(request->feature_columns)) : NULL;
	copy->batch_sizes = palloc(sizeof(int32) * request->num_batch_sizes);
	memcpy(copy->batch_sizes, request->batch_sizes, sizeof(int32) * request->num_batch_sizes);
	copy->target = pstrdup(request->target);
	copy->budget = PointerGetDatum(palloc(sizeof(Interval)));
	memcpy(DatumGetPointer(copy->budget), DatumGetPointer(request->budget), sizeof(Interval));
}

/*
 * Bytes a row of the sample takes while tuning: its features, and the
 * reference's and a candidate's margins.  Everything the tuner holds per
 * row fits in maintenance_work_mem.
 */
static Size
TuneBytesPerRow(const Forest *forest)
{
	return (Size) Max(forest->num_features, 1) * ForestValueSize(forest) +
		2 * (Size) forest->num_groups * ForestValueSize(forest);
}

/* Most rows maintenance_work_mem holds for a forest */
static int64
TuneRowsInBudget(const Forest *forest)
{
	return (int64) ((Size) maintenance_work_mem * 1024 / TuneBytesPerRow(forest));
}

/* Error unless a batch size's measurement rows fit in maintenance_work_mem */
static void
TuneCheckMemory(const TuneSession *session, int32 batch_size)
{
	int64		rows = TuneMeasureRows(batch_size);
	Size		need = (Size) rows * TuneBytesPerRow(ModelVersionForest(session->version));

	if (rows > TuneRowsInBudget(ModelVersionForest(session->version)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tuning model \"%s\" for batch size %d needs more memory than maintenance_work_mem allows",
						session->request.model, batch_size),
				 errdetail("Timing " INT64_FORMAT " rows of its features and margins takes %zu kB; maintenance_work_mem is %d kB.",
						   rows, (need + 1023) / 1024, maintenance_work_mem),
				 errhint("Raise maintenance_work_mem, or tune smaller batch sizes.")));
}

/* Rows synthesized from the model (its profile if any), copied into the session */
static void
TuneSynthesize(TuneSession *session)
{
	Forest	   *forest = ModelVersionForest(session->version);
	SilvanStatus status;
	int64		n = Min(TUNE_SYNTHESIZED_ROWS, Max(TuneRowsInBudget(forest), 1));
	Size		bytes = (Size) n * forest->num_features * ForestValueSize(forest);
	void	   *rows = TuneSynthesizeRows(forest, session->version->profile, n, 1, &status);

	if (rows == NULL)
		SilvanReportStatus(ERROR, &status);
	session->rows = MemoryContextAllocHuge(session->cxt, Max(bytes, 1));
	memcpy(session->rows, rows, bytes);
	free(rows);
	session->num_rows = n;
	session->rows_from = session->version->profile ? "profile" : "synthesized";
}

/* Read the sample's rows, or synthesize them */
static void
TuneReadRows(TuneSession *session)
{
	const TuneRequest *r = &session->request;

	if (!OidIsValid(r->sample_relid) && r->sample_query == NULL)
	{
		TuneSynthesize(session);
		return;
	}
	session->num_rows = ScanSample(session->pinned, r->sample_relid, r->key_column, r->feature_columns,
								   r->sample_query,
								   Min(silvan_tune_sample_rows,
									   Max(TuneRowsInBudget(ModelVersionForest(session->version)), 1)),
								   &session->rows);
	session->rows_from = r->sample_query ? "query" : "table";
	if (session->num_rows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tuning sample has no rows"),
				 r->sample_query ? errdetail("Argument \"query\" returned no rows with features.") :
				 errdetail("Argument \"sample\" (relation \"%s\") has no rows with features.",
						   get_rel_name(r->sample_relid)),
				 errhint("Pass a table or a query with rows, or no sample to tune on rows drawn from the model.")));
}

/*
 * Start a session (in a transaction): the model, pinned, and the rows.
 * Everything lives in a context of its own until TuneEnd.
 */
TuneSession *
TuneBegin(const TuneRequest *request, int64 job)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "silvan tuning",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	TuneSession *session = palloc0(sizeof(TuneSession));

	session->cxt = cxt;
	session->job = job;
	session->started = TuneClockSeconds();
	session->threads = RuntimeMaxThreads();
	session->min_speedup = silvan_tune_min_speedup;
	TuneCopyRequest(session, request);
	session->results = palloc0(sizeof(TuneBatchResult) * request->num_batch_sizes);
	PG_TRY();
	{
		/* tune the version deployed now, whatever is deployed meanwhile */
		session->pinned = MemoryContextStrdup(cxt, CatalogPinned(request->model));
		session->revision = CatalogCheckOwned(session->pinned);
		session->version = ModelCacheLookup(session->pinned);
		ModelVersionPin(session->version);
		if (session->version->revision != session->revision)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("model \"%s\" was changed by another session", request->model),
					 errhint("Run the call again.")));
		for (int i = 0; i < request->num_batch_sizes; i++)
			TuneCheckMemory(session, request->batch_sizes[i]);
		TuneOpenTarget(session);
		TuneReadRows(session);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		TuneEnd(session);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return session;
}

/* End a session: unpin the model, free everything */
void
TuneEnd(TuneSession *session)
{
	if (session == NULL)
		return;
	if (session->version)
		ModelVersionUnpin(session->version);
	MemoryContextDelete(session->cxt);
}

/* How many batch sizes a session tunes */
int
TuneBatchCount(const TuneSession *session)
{
	return session->request.num_batch_sizes;
}

/* ---- one batch size ---- */

/* The malloc'd state of one batch size's search, released on any exit */
typedef struct TuneBatchState
{
	TuneSample	sample;
	TuneSearch *search;
	char	   *default_text;
} TuneBatchState;

/* Time one candidate; repeats a measurement that a harmless interrupt stopped */
static void
TuneTime(TuneSession *session, TuneBatchState *state, int32 batch_size, const char *text,
		 double discard_above, double seconds, TuneTiming *timing)
{
	ModelVersion *v = session->version;

	while (!TuneMeasureOn(ModelVersionForest(v), v->profile, &session->target, session->device,
						  &state->sample, batch_size, text, session->request.exact,
						  discard_above, seconds, RuntimeInterruptFlag(), timing))
		CHECK_FOR_INTERRUPTS();
}

/* Report progress: NOTICE per phase in the foreground, the job row in the worker */
static bool
TuneProgressReport(TuneSession *session, int32 batch_size, TuneSearch *search,
				   const char **last_phase)
{
	TuneProgress p;

	TuneSearchProgressOf(search, &p);
	if (session->job > 0)
		return TuneWorkerProgress(session->job, batch_size, p.phase, p.done, p.planned,
								  p.best_us_per_row, p.default_us_per_row);
	if (*last_phase == NULL || strcmp(*last_phase, p.phase) != 0)
		ereport(NOTICE,
				(errmsg("tuning model \"%s\" for batch size %d: %s",
						session->request.model, batch_size, p.phase),
				 errdetail("%d of %d candidates timed so far.", p.done, p.planned)));
	*last_phase = p.phase;
	return true;
}

/* Median of n values (n <= 8), sorted in place */
static double
Median(double *values, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && values[j - 1] > values[j]; j--)
		{
			double		t = values[j];

			values[j] = values[j - 1];
			values[j - 1] = t;
		}
	return values[n / 2];
}

/*
 * Time the search's top candidates and the default again, alternating, in
 * TUNE_CONFIRM_ROUNDS rounds: the winner is the candidate with the least
 * median, so one lucky pass during the search (the more candidates, the
 * likelier) does not pick it.  Fills the result's schedule and figures.
 */
static void
TuneConfirm(TuneSession *session, TuneBatchState *state, TuneBatchResult *r,
			const TuneCandidate *const *top, int n, double seconds)
{
	double		times[TUNE_TOP + 1][TUNE_CONFIRM_ROUNDS];
	double		best = INFINITY;
	TuneTiming	timing;

	for (int round = 0; round < TUNE_CONFIRM_ROUNDS; round++)
		for (int c = 0; c <= n; c++)
		{
			TuneTime(session, state, r->batch_size, c == 0 ? state->default_text : top[c - 1]->text,
					 0, seconds, &timing);
			times[c][round] = timing.outcome == TUNE_TIMED ? timing.us_per_row : INFINITY;
		}
	r->default_us_per_row = Median(times[0], TUNE_CONFIRM_ROUNDS);
	for (int c = 1; c <= n; c++)
	{
		double		median = Median(times[c], TUNE_CONFIRM_ROUNDS);

		if (median < best)
		{
			best = median;
			r->schedule = MemoryContextStrdup(session->cxt, top[c - 1]->text);
		}
	}
	r->us_per_row = best;
}

/* The provenance of a stored schedule, as jsonb text */
static char *
TuneProvenance(TuneSession *session, const TuneBatchResult *r)
{
	static const char *const strategies[] = {"heuristic", "exhaustive"};
	StringInfoData out;

	initStringInfo(&out);
	appendStringInfo(&out, "{\"tuned_at\": ");
	escape_json(&out, timestamptz_to_str(GetCurrentTimestamp()));
	appendStringInfo(&out, ", \"strategy\": \"%s\", \"exact\": %s, \"us_per_row\": %.6g,"
					 " \"default_us_per_row\": %.6g, \"speedup\": %.4g, \"rows\": " INT64_FORMAT
					 ", \"rows_from\": \"%s\", \"candidates\": %d, \"seconds\": %.3g,"
					 " \"budget_spent\": %s,"
					 " \"threads\": %d, \"silvan\": \"%s\", \"cpu\": ",
					 strategies[session->request.strategy], session->request.exact ? "true" : "false",
					 r->us_per_row, r->default_us_per_row, r->default_us_per_row / r->us_per_row,
					 session->num_rows, session->rows_from, r->timed, r->seconds,
					 r->budget_spent ? "true" : "false", session->threads, SILVAN_VERSION);
	escape_json(&out, JitHostCpuName());
	appendStringInfoString(&out, ", \"cpu_features\": ");
	escape_json(&out, JitHostCpuFeatures());
	if (!session->target.target->gpu)
	{
		char		key[256];

		HostProfileKey(session->target.host, key, sizeof(key));
		appendStringInfoString(&out, ", \"host_profile\": ");
		escape_json(&out, key);
	}
	if (session->target.target->gpu)
	{
		appendStringInfoString(&out, ", \"target\": ");
		escape_json(&out, session->request.target);
		appendStringInfoString(&out, ", \"device\": ");
		escape_json(&out, session->device_name);
		if (session->target.arch != NULL)
		{
			appendStringInfoString(&out, ", \"arch\": ");
			escape_json(&out, session->target.arch);
		}
	}
	if (r->end_to_end_us_per_row > 0)
		appendStringInfo(&out, ", \"end_to_end_us_per_row\": %.6g,"
						 " \"default_end_to_end_us_per_row\": %.6g, \"end_to_end_speedup\": %.4g",
						 r->end_to_end_us_per_row, r->default_end_to_end_us_per_row,
						 r->default_end_to_end_us_per_row / r->end_to_end_us_per_row);
	appendStringInfoString(&out, "}");
	return out.data;
}

/* Search one batch size within its share of the budget; the result in session */
static void
TuneSearchBatch(TuneSession *session, TuneBatchState *state, TuneBatchResult *r,
				double share)
{
	const Forest *forest = ModelVersionForest(session->version);
	double		start = TuneClockSeconds();
	double		seconds = Min(Max(share / 300.0, 0.02), 0.25);
	const char *last_phase = NULL;
	const TuneCandidate *c;
	const TuneCandidate *def;
	const TuneCandidate *top[TUNE_TOP];
	int			n;
	TuneShape	shape;
	TuneOptions options = {
		.target = session->target.target->gpu ? TUNE_TARGET_GPU : TUNE_TARGET_CPU,
		.strategy = session->request.strategy, .default_text = state->default_text
	};
	SilvanStatus status;

	TuneShapeOf(forest, r->batch_size, session->threads, session->request.exact,
				session->version->profile != NULL, session->target.host, &shape);
	state->search = TuneSearchCreate(&shape, &options, &status);
	if (state->search == NULL)
		SilvanReportStatus(ERROR, &status);
	while ((c = TuneSearchNext(state->search)) != NULL)
	{
		TuneTiming	timing;

		if (c->id > 0 && TuneClockSeconds() - start > share)
		{
			r->budget_spent = true;
			ereport(NOTICE,
					(errmsg("the tuning budget stopped the search for batch size %d", r->batch_size),
					 errdetail("Its share of the budget was spent before the whole space was timed."),
					 errhint("A larger budget may find a faster schedule.")));
			break;
		}
		TuneTime(session, state, r->batch_size, c->text, TuneSearchDiscardAbove(state->search),
				 seconds, &timing);
		if (timing.outcome == TUNE_MISMATCH)
			ereport(WARNING,
					(errmsg("schedule candidate gave results that differ from the interpreter's"),
					 errdetail("Model \"%s\", batch size %d: %s. The candidate was not considered: %s",
							   session->request.model, r->batch_size, timing.why, c->text)));
		TuneSearchReport(state->search, c->id, timing.outcome, timing.us_per_row, timing.compile_ms);
		CHECK_FOR_INTERRUPTS();
		if (!TuneProgressReport(session, r->batch_size, state->search, &last_phase))
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("tuning job " INT64_FORMAT " was cancelled", session->job)));
	}
	def = TuneSearchDefault(state->search);
	if (def == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the default schedule of model \"%s\" could not be timed",
						session->request.model)));
	r->discarded = TuneSearchCount(state->search, TUNE_DISCARDED);
	r->timed = TuneSearchCount(state->search, TUNE_TIMED) + r->discarded;
	r->failed = TuneSearchCount(state->search, TUNE_FAILED);
	r->mismatched = TuneSearchCount(state->search, TUNE_MISMATCH);
	r->schedule = MemoryContextStrdup(session->cxt, state->default_text);
	r->us_per_row = r->default_us_per_row = def->us_per_row;
	n = TuneSearchTop(state->search, top);
	if (n > 0 && TuneSearchBest(state->search) != def)
		TuneConfirm(session, state, r, top, n, seconds);
	r->stored = r->us_per_row > 0 && r->us_per_row < INFINITY &&
		r->default_us_per_row / r->us_per_row >= session->min_speedup;
	if (!r->stored)
	{
		r->schedule = MemoryContextStrdup(session->cxt, state->default_text);
		r->us_per_row = r->default_us_per_row;
	}
	r->seconds = TuneClockSeconds() - start;
	if (r->stored)
	{
		MemoryContext old = MemoryContextSwitchTo(session->cxt);

		r->provenance = TuneProvenance(session, r);
		MemoryContextSwitchTo(old);
	}
}

/* Prepare a batch size's sample and default, then search (state freed by the caller) */
static pg_noinline void
TuneBatchSearch(TuneSession *session, TuneBatchState *state, TuneBatchResult *r, double share)
{
	const Forest *forest = ModelVersionForest(session->version);
	SilvanStatus status;
	Schedule	schedule;

	if (!TuneSampleInit(forest, session->rows, session->num_rows, r->batch_size,
						&state->sample, &status))
		SilvanReportStatus(ERROR, &status);
	if (session->target.target->gpu)
		ScheduleGpuDefault(forest, r->batch_size, &schedule);
	else
		SilvanDefaultSchedule(session->version, r->batch_size, &schedule);
	state->default_text = ScheduleToText(&schedule);
	if (state->default_text == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	TuneSearchBatch(session, state, r, share);
}

/*
 * Tune batch size number index (no transaction needed): its share of what
 * is left of the budget, the search, the confirmation
 */
void
TuneBatch(TuneSession *session, int index)
{
	TuneBatchResult *r = &session->results[index];
	double		left = session->request.budget_seconds - (TuneClockSeconds() - session->started);
	double		share = Max(left, 0) / (session->request.num_batch_sizes - index);
	TuneBatchState *state = palloc0(sizeof(TuneBatchState));

	r->batch_size = session->request.batch_sizes[index];
	CodeCacheSetStoring(false);
	PG_TRY();
	{
		TuneBatchSearch(session, state, r, share);
		r->default_text = MemoryContextStrdup(session->cxt, state->default_text);
	}
	PG_FINALLY();
	{
		CodeCacheSetStoring(true);
		TuneSearchFree(state->search);
		TuneSampleFree(&state->sample);
		free(state->default_text);
	}
	PG_END_TRY();
	pfree(state);
}

/* Rounds of end-to-end timing, interleaved: the schedule found, the default */
#define TUNE_END_TO_END_ROUNDS 3

/* The statement that scores the sample end to end, as its scoring function does ($1..$6) */
static char *
TuneEndToEndSql(const TuneSession *session)
{
	const TuneRequest *r = &session->request;
	Oid			key_type;

	if (r->sample_query == NULL)
		return "SELECT pg_catalog.count(*) FROM (SELECT 1 FROM silvan.predict_table($1, $2, $3, $4, $5)"
			" LIMIT $6) AS s";
	/* the query's key column type, for predict_query's column definition */
	if (SPI_execute(psprintf("SELECT * FROM (%s) AS q LIMIT 0", r->sample_query), true, 0) != SPI_OK_SELECT ||
		SPI_tuptable->tupdesc->natts < 1)
		elog(ERROR, "could not read the tuning query's columns");
	key_type = TupleDescAttr(SPI_tuptable->tupdesc, 0)->atttypid;
	return psprintf("SELECT pg_catalog.count(*) FROM (SELECT 1 FROM silvan.predict_query($1, $7, $5)"
					" AS p(key %s, prediction pg_catalog.float8) LIMIT $6) AS s",
					format_type_be_qualified(key_type));
}

/* Microseconds per row of one run of the statement with schedule text forced */
static double
TuneEndToEndRun(TuneSession *session, SPIPlanPtr plan, Datum *args, const char *nulls,
				const char *text)
{
	double		start;
	double		seconds;
	int64		rows;
	bool		isnull;

	ModelVersionForceSchedule(session->version->id, text);
	start = TuneClockSeconds();
	if (SPI_execute_plan(plan, args, nulls, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not time the scoring function end to end");
	seconds = TuneClockSeconds() - start;
	rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return rows > 0 ? seconds * 1e6 / rows : 0;
}

/*
 * Time the scoring function the sample came through (predict_table or
 * predict_query, streamed, on the sample's rows), with the schedule found
 * and with the default, in interleaved rounds after a warm-up of each;
 * what a user's query gains.  Foreground tune() of a cpu schedule that is
 * stored only (in its transaction); rows drawn from the model, and a table
 * Citus distributes, have no such path.
 */
static void
TuneEndToEnd(TuneSession *session, TuneBatchResult *r)
{
	const TuneRequest *req = &session->request;
	Oid			types[7] = {TEXTOID, REGCLASSOID, TEXTOID, TEXTARRAYOID, INT4OID, INT8OID, TEXTOID};
	Datum		args[7];
	char		nulls[8] = "       ";
	double		times[2][TUNE_END_TO_END_ROUNDS];
	SPIPlanPtr	plan;

	/* over a Citus distributed table predict_table refuses: the shards score */
	if (!r->stored || session->target.target->gpu || r->default_text == NULL ||
		(!OidIsValid(req->sample_relid) && req->sample_query == NULL) ||
		(OidIsValid(req->sample_relid) && CitusDistributedTable(req->sample_relid)))
		return;
	args[0] = CStringGetTextDatum(session->pinned);
	args[1] = ObjectIdGetDatum(req->sample_relid);
	args[2] = req->key_column ? CStringGetTextDatum(req->key_column) : (Datum) 0;
	nulls[2] = req->key_column ? ' ' : 'n';
	args[3] = PointerGetDatum(req->feature_columns);
	nulls[3] = req->feature_columns ? ' ' : 'n';
	args[4] = Int32GetDatum(r->batch_size);
	args[5] = Int64GetDatum(session->num_rows);
	args[6] = req->sample_query ? CStringGetTextDatum(req->sample_query) : (Datum) 0;
	nulls[6] = req->sample_query ? ' ' : 'n';
	SPI_connect();
	/* as the search, the timing leaves the code cache as it found it */
	CodeCacheSetStoring(false);
	PG_TRY();
	{
		plan = SPI_prepare(TuneEndToEndSql(session), 7, types);
		if (plan == NULL)
			elog(ERROR, "could not prepare the end-to-end timing: %s", SPI_result_code_string(SPI_result));
		(void) TuneEndToEndRun(session, plan, args, nulls, r->schedule);
		(void) TuneEndToEndRun(session, plan, args, nulls, r->default_text);
		for (int round = 0; round < TUNE_END_TO_END_ROUNDS; round++)
		{
			times[0][round] = TuneEndToEndRun(session, plan, args, nulls, r->default_text);
			times[1][round] = TuneEndToEndRun(session, plan, args, nulls, r->schedule);
		}
	}
	PG_FINALLY();
	{
		ModelVersionForceSchedule(0, NULL);
		CodeCacheSetStoring(true);
	}
	PG_END_TRY();
	SPI_finish();
	r->default_end_to_end_us_per_row = Median(times[0], TUNE_END_TO_END_ROUNDS);
	r->end_to_end_us_per_row = Median(times[1], TUNE_END_TO_END_ROUNDS);
	if (r->end_to_end_us_per_row > 0)
		r->provenance = TuneProvenance(session, r);
}

/* Store what the session found (in a transaction) */
void
TuneStore(TuneSession *session)
{
	for (int i = 0; i < session->request.num_batch_sizes; i++)
	{
		const TuneBatchResult *r = &session->results[i];

		CatalogStoreTuned(session->pinned, session->request.target, session->revision,
						  r->batch_size, r->stored ? r->schedule : NULL, r->provenance);
	}
}

/* The session's results as a jsonb array (text), for the job row */
char *
TuneResultJson(const TuneSession *session)
{
	StringInfoData out;

	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	for (int i = 0; i < session->request.num_batch_sizes; i++)
	{
		const TuneBatchResult *r = &session->results[i];

		appendStringInfo(&out, "%s{\"batch_size\": %d, \"schedule\": ", i ? ", " : "",
						 r->batch_size);
		escape_json(&out, r->schedule ? r->schedule : "");
		appendStringInfo(&out, ", \"us_per_row\": %.6g, \"default_us_per_row\": %.6g,"
						 " \"speedup\": %.4g, \"stored\": %s, \"candidates\": %d,"
						 " \"seconds\": %.3g, \"rows_from\": \"%s\"",
						 r->us_per_row, r->default_us_per_row,
						 r->us_per_row > 0 ? r->default_us_per_row / r->us_per_row : 1.0,
						 r->stored ? "true" : "false", r->timed, r->seconds, session->rows_from);
		if (r->end_to_end_us_per_row > 0)
			appendStringInfo(&out, ", \"end_to_end_us_per_row\": %.6g,"
							 " \"default_end_to_end_us_per_row\": %.6g, \"end_to_end_speedup\": %.4g",
							 r->end_to_end_us_per_row, r->default_end_to_end_us_per_row,
							 r->default_end_to_end_us_per_row / r->end_to_end_us_per_row);
		appendStringInfoChar(&out, '}');
	}
	appendStringInfoChar(&out, ']');
	return out.data;
}

/* ---- the SQL functions ---- */

/* Put the session's results into tune()'s result set */
static void
TuneEmit(const TuneSession *session, ReturnSetInfo *rsinfo)
{
	for (int i = 0; i < session->request.num_batch_sizes; i++)
	{
		const TuneBatchResult *r = &session->results[i];
		Datum		values[12];
		bool		nulls[12] = {0};

		values[0] = Int32GetDatum(r->batch_size);
		values[1] = CStringGetTextDatum(r->schedule);
		values[2] = Float8GetDatum(r->us_per_row);
		values[3] = Float8GetDatum(r->default_us_per_row);
		values[4] = Float8GetDatum(r->us_per_row > 0 ? r->default_us_per_row / r->us_per_row : 1.0);
		values[5] = BoolGetDatum(r->stored);
		values[6] = Int32GetDatum(r->timed);
		values[7] = Float8GetDatum(r->seconds);
		values[8] = CStringGetTextDatum(session->rows_from);
		values[9] = Float8GetDatum(r->end_to_end_us_per_row);
		values[10] = Float8GetDatum(r->default_end_to_end_us_per_row);
		values[11] = Float8GetDatum(r->end_to_end_us_per_row > 0 ?
									r->default_end_to_end_us_per_row / r->end_to_end_us_per_row : 0);
		for (int c = 9; c < 12; c++)
			nulls[c] = r->end_to_end_us_per_row <= 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* tune() in the foreground: search, store, return one row per batch size */
static Datum
TuneCall(FunctionCallInfo fcinfo, bool query)
{
	TuneRequest request;
	TuneSession *volatile session = NULL;

	TuneRequestFromCall(fcinfo, query, &request);
	InitMaterializedSRF(fcinfo, 0);
	PG_TRY();
	{
		session = TuneBegin(&request, 0);
		for (int i = 0; i < TuneBatchCount(session); i++)
			TuneBatch(session, i);
		for (int i = 0; i < TuneBatchCount(session); i++)
			TuneEndToEnd(session, &session->results[i]);
		TuneStore(session);
		TuneEmit(session, (ReturnSetInfo *) fcinfo->resultinfo);
	}
	PG_FINALLY();
	{
		TuneEnd(session);
	}
	PG_END_TRY();
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(silvan_tune_table);
PG_FUNCTION_INFO_V1(silvan_tune_query);
PG_FUNCTION_INFO_V1(silvan_tune_async_table);
PG_FUNCTION_INFO_V1(silvan_tune_async_query);

PG_FUNCTION_INFO_V1(silvan_cancel_tuning);

/* tune(model, sample regclass, key_column, feature_columns, batch_sizes, ...) */
Datum
silvan_tune_table(PG_FUNCTION_ARGS)
{
	return TuneCall(fcinfo, false);
}

/* tune_query(model, query, batch_sizes, ...) */
Datum
silvan_tune_query(PG_FUNCTION_ARGS)
{
	return TuneCall(fcinfo, true);
}

/* tune_async(...): check the arguments, queue a job, its id */
static Datum
TuneAsyncCall(FunctionCallInfo fcinfo, bool query)
{
	TuneRequest request;

	TuneRequestFromCall(fcinfo, query, &request);
	PG_RETURN_INT64(CatalogQueueTuning(&request));
}

/* tune_async(model, sample regclass, ...) */
Datum
silvan_tune_async_table(PG_FUNCTION_ARGS)
{
	return TuneAsyncCall(fcinfo, false);
}

/* tune_query_async(model, query, ...) */
Datum
silvan_tune_async_query(PG_FUNCTION_ARGS)
{
	return TuneAsyncCall(fcinfo, true);
}

/* cancel_tuning(job): true when a queued or running job was cancelled */
Datum
silvan_cancel_tuning(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(CatalogCancelTuning(PG_GETARG_INT64(0)));
}
