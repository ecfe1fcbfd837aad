/*
 * score.c
 *		Running a batch through a model, and shaping its results as Datums.
 *
 * Used by the scalar functions (batches of one row) and by the batched
 * scans.  With silvan.jit on the model is compiled on first use and the
 * code is kept with its ModelVersion; with it off the reference
 * interpreter runs.  Both add the same values in the same order.  A batch
 * runs on the target silvan.target picks for its size (devices.c): on a
 * GPU it runs in the backend, synchronously, since the driver's
 * calls return statuses that only this process may turn into errors.
 * A pipelined scan's batch on a GPU is submitted to the device's driver
 * from the backend (ScoreBatchStart) and collected later (ScoreBatchFinish),
 * so the device scores it while the backend reads the next batch, whose
 * copies then overlap its kernel on the device's other stream.
 */
#include "silvan_pg.h"

#include <time.h>

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "silvan/runtime.h"

/*
 * The largest range of rows a pipelined batch is split into (ScoreTaskRun);
 * ranges shrink from it to the code's CompiledForestSplitRows at the end
 * of the batch
 */
#define SCORE_PIECE_MAX_ROWS	256

/*
 * Margins of num_rows rows, with the code compiled for batches of nominal
 * size batch_size.  rows are of the forest's precision; acc is scratch of
 * num_rows * num_groups values of that precision; margins gets num_rows *
 * num_groups doubles, or with predict the rows' predict() values (the
 * first num_rows).  Compiled code stops early when an interrupt is
 * pending: the interrupt is serviced here (a cancel raises) and the batch
 * runs again, or is interpreted when interrupts are held off.
 */
void
ScoreBatch(ModelVersion *version, int32 batch_size, const void *rows,
		   int64 num_rows, void *acc, double *margins, bool predict)
{
	Forest	   *forest = version->header;
	CompiledVariant *variant = silvan_jit ?
		ModelVersionVariantFor(version, batch_size, SilvanBatchTarget(batch_size)) : NULL;
	CompiledForest *code = variant ? variant->code : NULL;
	/* a scalar call's one row is no node's: two clock reads would be a few percent of it */
	bool		timed = num_rows > 1;
	instr_time	start;
	instr_time	duration;

	if (timed)
		INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		ForestMarginsInit(forest, acc, num_rows);
		if (code != NULL && variant->target->output != TARGET_OUTPUT_JIT)
		{
			SilvanRunOnDevice(variant, rows, num_rows, acc);
			break;
		}
		if (code == NULL)
		{
			ForestInterpretAccumulate(ModelVersionForest(version), rows, num_rows, acc);
			break;
		}
		CompiledForestAccumulate(code, rows, num_rows, acc);
		if (!RuntimeInterrupted())
			break;
		/* interrupts held off: finish this batch without early exits */
		if (!INTERRUPTS_CAN_BE_PROCESSED())
			code = NULL;
		CHECK_FOR_INTERRUPTS();
	}
	ForestMarginsFinish(forest, acc, num_rows, margins);
	if (predict)
		ForestPredictRows(forest, margins, num_rows);
	if (timed)
	{
		INSTR_TIME_SET_CURRENT(duration);
		INSTR_TIME_SUBTRACT(duration, start);
		score_costs.scoring_ms += INSTR_TIME_GET_MILLISEC(duration);
	}
	StatsScored(version, num_rows, timed, timed ? INSTR_TIME_GET_MILLISEC(duration) : 0);
}

/* The time now, in milliseconds: for the pipeline thread, which calls no PostgreSQL code */
static double
ScoreClockMs(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1000.0 + now.tv_nsec / 1e6;
}

/* Copy rows [begin, end) of a gather into place: a parallel loop body, plain C */
static void
ScoreGatherRows(void *context, int64_t begin, int64_t end, int64_t chunk)
{
	const ScoreGather *gather = (const ScoreGather *) context;

	for (int64_t r = begin; r < end; r++)
		if (gather->sources[r] != NULL)
			memcpy(gather->rows + r * gather->row_bytes, gather->sources[r], gather->row_bytes);
}

/*
 * Score rows [begin, end) of a pipelined batch whose code splits by rows:
 * gather them if they were left in place, then margins, then (one margin a
 * row) predict()'s values, all in the range's own slices of the buffers.
 * A body of a guided parallel loop: plain C.
 */
static void
ScorePieceRun(void *context, int64_t begin, int64_t end, int64_t chunk)
{
	ScoreTask  *task = (ScoreTask *) context;
	const Forest *forest = task->version->header;
	int64		groups = forest->num_groups;
	size_t		row_bytes = (size_t) forest->num_features * ForestValueSize(forest);
	char	   *acc = (char *) task->acc + begin * groups * ForestValueSize(forest);

	if (task->stop != 0)
	{
		__atomic_store_n(&task->stopped, true, __ATOMIC_RELAXED);
		return;
	}
	if (task->gather.sources != NULL)
		ScoreGatherRows(&task->gather, begin, end, chunk);
	ForestMarginsInit(forest, acc, end - begin);
	if (!CompiledForestRun(task->code, (const char *) task->rows + begin * row_bytes, end - begin,
						   acc, &task->stop))
	{
		__atomic_store_n(&task->stopped, true, __ATOMIC_RELAXED);
		return;
	}
	ForestMarginsFinish(forest, acc, end - begin, task->margins + begin * groups);
	if (task->predict && groups == 1)
		ForestPredictRows(forest, task->margins + begin, end - begin);
}

/*
 * The body of a pipelined batch, on the pipeline thread: plain C only, no
 * PostgreSQL calls (runtime.h).
 *
 * Code that splits by rows runs as a guided loop over ranges of rows,
 * which the backend joins once it has read the next batch
 * (RuntimeTaskWait): this thread takes ranges from the front of the batch,
 * the backend from the back, the ranges shrink as the batch runs out, and
 * whoever scored a range finishes its margins and predictions.  The
 * compiled code's own parallel loop would split a batch by its tiles (128
 * or 256 rows) and hand them out in turn: the backend, which joins late,
 * would then wait for this thread's last tile (half a tile a batch on
 * average), and both threads would score alternate tiles slower than runs
 * of their own (threads.c).  A model with several margins a row turns them into
 * predictions after the loop: a row's prediction takes the place of its
 * first margin, which another range's margins may still occupy.
 *
 * Other code (privatized sums) runs whole, its own parallel loops helped;
 * rows left where the scan found them are gathered first, by this thread
 * and the helping backend.
 */
static void
ScoreTaskRun(void *context)
{
	ScoreTask  *task = (ScoreTask *) context;
	const Forest *forest = task->version->header;
	int64		split_rows = CompiledForestSplitRows(task->code);
	double		start = ScoreClockMs();

	if (split_rows > 0)
	{
		RuntimeParallelForGuided(ScorePieceRun, task, 0, task->num_rows,
								 split_rows, Max(split_rows, SCORE_PIECE_MAX_ROWS));
		task->completed = !__atomic_load_n(&task->stopped, __ATOMIC_RELAXED);
		if (task->completed && task->predict && forest->num_groups > 1)
			ForestPredictRows(forest, task->margins, task->num_rows);
		task->run_ms = ScoreClockMs() - start;
		return;
	}
	if (task->gather.sources != NULL)
		RuntimeParallelFor(ScoreGatherRows, &task->gather, 0, task->num_rows,
						   RUNTIME_ANY_CHUNKS);
	ForestMarginsInit(forest, task->acc, task->num_rows);
	task->completed = CompiledForestRun(task->code, task->rows, task->num_rows,
										task->acc, &task->stop);
	if (task->completed)
	{
		ForestMarginsFinish(forest, task->acc, task->num_rows, task->margins);
		if (task->predict)
			ForestPredictRows(forest, task->margins, task->num_rows);
	}
	task->run_ms = ScoreClockMs() - start;
}

/* Whether batches of this nominal size run on a GPU (not on the host) */
bool
ScoreBatchOnDevice(int32 batch_size)
{
	return silvan_jit && !silvan_gpu_emulation &&
		strcmp(SilvanBatchTarget(batch_size), "cpu") != 0;
}

/* Start a batch on the backend's GPU: the device scores it until ScoreBatchFinish */
static void
ScoreDeviceStart(ScoreTask *task, CompiledVariant *variant)
{
	if (task->gather.sources != NULL)
		ScoreGatherRows(&task->gather, 0, task->num_rows, 0);
	ForestMarginsInit(task->version->header, task->acc, task->num_rows);
	task->device_slot = SilvanDeviceSubmit(variant, task->rows, task->num_rows, task->acc);
	task->device = variant;
	task->in_flight = true;
}

/*
 * Start scoring a batch on the pipeline thread, as ScoreBatch would, or on
 * the GPU; the buffers must stay untouched until ScoreBatchFinish.  Runs the
 * batch here and now when the model is interpreted, when silvan.max_threads
 * is 1, or when the thread cannot be had.
 */
void
ScoreBatchStart(ScoreTask *task, ModelVersion *version, int32 batch_size,
				const void *rows, int64 num_rows, void *acc, double *margins,
				bool predict, const ScoreGather *gather)
{
	CompiledVariant *variant = silvan_jit ?
		ModelVersionVariantFor(version, batch_size, SilvanBatchTarget(batch_size)) : NULL;
	CompiledForest *code = variant && variant->target->output == TARGET_OUTPUT_JIT ?
		variant->code : NULL;

	*task = (ScoreTask) {
		.version = version, .batch_size = batch_size, .code = code,
		.rows = rows, .num_rows = num_rows, .acc = acc, .margins = margins,
		.predict = predict
	};
	if (gather != NULL)
		task->gather = *gather;
	if (variant != NULL && variant->code != NULL &&
		variant->target->output != TARGET_OUTPUT_JIT)
	{
		ScoreDeviceStart(task, variant);
		return;
	}
	if (code != NULL && RuntimeMaxThreads() > 1 && version->busy_code == NULL &&
		RuntimeTaskStart(ScoreTaskRun, task))
	{
		task->in_flight = true;
		version->busy_code = code;
		return;
	}
	if (gather != NULL && gather->sources != NULL)
		ScoreGatherRows(&task->gather, 0, num_rows, 0);
	ScoreBatch(version, batch_size, rows, num_rows, acc, margins, predict);
	task->completed = true;
}

/* Wait for a started batch; an interrupt that stopped it early is serviced and the batch rerun */
void
ScoreBatchFinish(ScoreTask *task)
{
	if (!task->in_flight)
		return;
	if (task->device != NULL)
	{
		task->in_flight = false;
		SilvanDeviceCollect(task->device, task->device_slot);
		ForestMarginsFinish(task->version->header, task->acc, task->num_rows, task->margins);
		if (task->predict)
			ForestPredictRows(task->version->header, task->margins, task->num_rows);
		task->completed = true;
		StatsScored(task->version, task->num_rows, false, 0);
		return;
	}
	RuntimeTaskWait(&task->stop);
	task->in_flight = false;
	task->version->busy_code = NULL;
	score_costs.scoring_ms += task->run_ms;
	if (task->completed)
	{
		StatsScored(task->version, task->num_rows, true, task->run_ms);
		return;
	}
	CHECK_FOR_INTERRUPTS();
	ScoreBatch(task->version, task->batch_size, task->rows, task->num_rows,
			   task->acc, task->margins, task->predict);
	task->completed = true;
}

ScoreCosts	score_costs;

/* Where score_costs stands now, before a node's scoring */
void
ScoreCostsMark(ScoreCosts *mark)
{
	*mark = score_costs;
}

/* Add to a node's share what its scoring cost since mark */
void
ScoreCostsAdd(ScoreCosts *share, const ScoreCosts *mark)
{
	share->scoring_ms += score_costs.scoring_ms - mark->scoring_ms;
	share->code_ms += score_costs.code_ms - mark->code_ms;
	if (score_costs.codes_obtained != mark->codes_obtained)
	{
		share->codes_obtained += score_costs.codes_obtained - mark->codes_obtained;
		share->code_origin = score_costs.code_origin;
	}
}

/* Add one share to another (a node's runs, or its participants) */
void
ScoreCostsCombine(ScoreCosts *into, const ScoreCosts *from)
{
	into->scoring_ms += from->scoring_ms;
	into->code_ms += from->code_ms;
	if (from->codes_obtained > 0)
	{
		into->codes_obtained += from->codes_obtained;
		into->code_origin = from->code_origin;
	}
}

/*
 * EXPLAIN ANALYZE's lines of a node's share: how its code was had (and
 * how long that took) or that it was in memory already, and the time the
 * code ran (on the pipeline thread, when pipelined: beside the scan)
 */
void
ScoreCostsExplain(const ScoreCosts *share, ExplainState *es)
{
	if (share->codes_obtained > 0)
	{
		ExplainPropertyText("Code", share->code_origin, es);
		if (es->timing)
			ExplainPropertyFloat("Code Time", "ms", share->code_ms, 3, es);
	}
	else
		ExplainPropertyText("Code", "in memory", es);
	if (es->timing)
		ExplainPropertyFloat("Scoring Time", "ms", share->scoring_ms, 3, es);
}

/* On an error: stop a started batch and wait for it, without raising */
void
ScoreBatchAbandon(ScoreTask *task)
{
	if (!task->in_flight)
		return;
	if (task->device != NULL)
	{
		task->in_flight = false;
		SilvanDeviceCancel(task->device, task->device_slot);
		return;
	}
	task->stop = 1;
	RuntimeTaskWait(&task->stop);
	task->in_flight = false;
	task->version->busy_code = NULL;
}

/* Error unless the model can produce the requested output */
void
ScoreCheckOutput(ModelVersion *version, ScoreOutput output, const char *name)
{
	if ((output == SCORE_LABEL || output == SCORE_CLASS) && !ForestHasProbabilities(version->header))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" is not a classifier", name),
				 errdetail("Its objective \"%s\" is a %s objective; only binary and multi-class models predict a class.",
						   version->header->objective,
						   ForestTaskName(version->header->task)),
				 errhint("Use silvan.predict().")));
	if (output == SCORE_PROBA && !ForestHasProbabilities(version->header))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" does not produce class probabilities", name),
				 errdetail("Its objective \"%s\" is a %s objective.",
						   version->header->objective,
						   ForestTaskName(version->header->task)),
				 errhint("Use silvan.predict() or silvan.predict_raw().")));
}

/* Build a float8[] Datum */
static Datum
Float8ArrayDatum(const double *values, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * n);

	for (int i = 0; i < n; i++)
		elems[i] = Float8GetDatum(values[i]);
	return PointerGetDatum(construct_array(elems, n, FLOAT8OID, sizeof(float8),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* The label of a class: the model's (class_labels), or the index in decimal */
static Datum
ClassLabelDatum(const Forest *forest, int32 index)
{
	if (forest->class_labels != NULL && index >= 0 && index < forest->num_classes)
		return CStringGetTextDatum(forest->class_labels[index]);
	return CStringGetTextDatum(psprintf("%d", index));
}

/* The type silvan.classification: (label text, class_index integer, probabilities float8[]) */
static Oid
ClassificationType(void)
{
	Oid			type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
									   CStringGetDatum("classification"),
									   ObjectIdGetDatum(get_namespace_oid("silvan", false)));

	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("silvan's catalog has no type silvan.classification yet"),
				 errhint("Run ALTER EXTENSION silvan UPDATE.")));
	return type;
}

/* One row's silvan.classification */
static Datum
ClassificationDatum(const Forest *forest, const double *margins, double *scratch)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(ClassificationType(), -1);
	int32		index = ForestClassOfRow(forest, margins);
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	HeapTuple	tuple;

	values[0] = ClassLabelDatum(forest, index);
	values[1] = Int32GetDatum(index);
	values[2] = Float8ArrayDatum(scratch, ForestProbaRow(forest, margins, scratch));
	tuple = heap_form_tuple(desc, values, nulls);
	ReleaseTupleDesc(desc);
	return HeapTupleGetDatum(tuple);
}

/* The type of the Datum an output kind yields */
Oid
ScoreOutputType(ScoreOutput output)
{
	switch (output)
	{
		case SCORE_PREDICT:
			return FLOAT8OID;
		case SCORE_PROBA:
		case SCORE_RAW:
			return FLOAT8ARRAYOID;
		case SCORE_LABEL:
			return TEXTOID;
		case SCORE_CLASS:
			return ClassificationType();
		case SCORE_PROFILE:
		case SCORE_SAMPLE:
			break;
	}
	return InvalidOid;
}

/* The Datum one row yields for an output kind; scratch holds ForestOutputWidth doubles */
Datum
ScoreResultDatum(ModelVersion *version, ScoreOutput output,
				 const double *margins, double *scratch)
{
	Forest	   *forest = version->header;

	switch (output)
	{
		case SCORE_PREDICT:
			return Float8GetDatum(ForestPredictRow(forest, margins));
		case SCORE_PROBA:
			return Float8ArrayDatum(scratch, ForestProbaRow(forest, margins, scratch));
		case SCORE_RAW:
			return Float8ArrayDatum(margins, forest->num_groups);
		case SCORE_LABEL:
			return ClassLabelDatum(forest, ForestClassOfRow(forest, margins));
		case SCORE_CLASS:
			return ClassificationDatum(forest, margins, scratch);
		case SCORE_PROFILE:
		case SCORE_SAMPLE:
			break;
	}
	return (Datum) 0;
}

/* The scalar type a feature column or array element must have; InvalidOid if none */
Oid
FeatureElementType(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case BOOLOID:
			return typid;
		default:
			return InvalidOid;
	}
}

/* Convert a numeric Datum of a supported type to double */
double
FeatureDatumToDouble(Datum value, Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return (double) DatumGetInt64(value);
		case FLOAT4OID:
			return DatumGetFloat4(value);
		case FLOAT8OID:
			return DatumGetFloat8(value);
		case NUMERICOID:
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, value));
		case BOOLOID:
			return DatumGetBool(value) ? 1.0 : 0.0;
	}
	elog(ERROR, "unsupported feature type %u", typid);
	return 0.0;
}
