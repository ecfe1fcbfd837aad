/*
 * scan.c
 *		Batched scoring of a table or a query: predict_table, predict_query
 *		and their proba/raw variants.
 *
 * How it works: the source becomes a query (predict_table writes
 * "SELECT key, features... FROM source"), planned and run through SPI with
 * our own DestReceiver.  The executor hands each row's slot to
 * ScanReceiveSlot, which reads it straight into a dense row-major feature
 * buffer of the model's precision (scan_rows.c).  When batch_size rows are
 * buffered (or fewer, when a batch would hold more than SCAN_CHUNK_BYTES of
 * features) the code compiled for that batch size runs once over them and
 * one result row per source row goes into the function's tuplestore.  No tuple is
 * copied on the way in, permissions and row-level security apply as for
 * any query, and views, partitioned and foreign tables work alike.
 * Interrupts are checked between batches.
 *
 * With silvan.max_threads > 1 the scan is a two-stage pipeline over two
 * batch buffers (of SCAN_PIPELINE_ROWS rows when batch_size is smaller:
 * batch_size then picks the code that scores them, compiled and tuned for
 * it): a full batch is handed to the pipeline thread
 * (ScoreBatchStart), the backend goes on reading the next batch into the
 * other buffer, and only when that one is full does it wait for the first
 * (ScoreBatchFinish), hand over the second, and emit the first's results
 * while the second is scored.  The first batches are smaller (an eighth,
 * then doubling), so that scoring starts early.  Results keep the source's
 * order.  On any error the batch in flight is stopped and waited for before
 * its buffers can go away (ScanExecute).
 *
 * The model's ModelVersion stays pinned for the whole scan, so replacing
 * the model from inside the query cannot free code that is running.
 *
 * A call of predict_table (or its variants) in FROM is usually streamed
 * instead (scan_node.c): the custom scan runs the same source query
 * itself, a batch at a time, with this receiver and these batches, and a
 * scored batch is queued for it (ScanStream*) instead of emitted into a
 * tuplestore.  A scan that only predicts has each batch's predictions
 * computed with its scoring, on the pipeline thread when there is one:
 * margins[r] is then row r's prediction (ScanResult).
 */
#include "scan.h"

#include "access/relation.h"
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"

#include "silvan/runtime.h"

#define SCAN_MAX_BATCH	(1 << 20)
/* Smaller batches are not pipelined: the handover would cost more than it saves */
#define SCAN_PIPELINE_MIN_BATCH	512
/*
 * A batch of more feature bytes than this is scored in chunks of this size,
 * so that the rows the scan writes are still in the caches when the code
 * reads them (a 500-feature model at batch 8192 has 16 MB of features).
 * Each row's result is the same whatever rows share its chunk.
 */
#define SCAN_CHUNK_BYTES	(2 * 1024 * 1024)
/*
 * A pipelined scan's first chunk is this fraction of the others (at least
 * SCAN_PIPELINE_MIN_BATCH rows), and each chunk after it doubles until
 * chunk_rows: the pipeline thread starts scoring after a few hundred rows
 * instead of a whole batch, which the backend would otherwise scan alone
 */
#define SCAN_RAMP_PARTS		8
/*
 * A pipelined scan on the CPU hands the pipeline thread at least this many
 * rows at a time (scored by the code compiled for batch_size, a range at a
 * time: ScoreTaskRun): each handover costs both threads some microseconds
 * of cache lines passed between their cores (the task, the loop's state,
 * the rows' addresses, the results), which batches of 1,024 rows of a small
 * model paid a hundred times a scan (lgbm_multiclass on two threads: 5.65
 * ms for 100,000 rows in batches of 1,024, 5.24 in 4,096, 5.61 in 8,192,
 * where the last batch's tail shows).  Each row's result is the same.
 */
#define SCAN_PIPELINE_ROWS	4096

/*
 * Feature buffers of finished scans, kept for the next scan of the backend:
 * two of up to SCAN_CHUNK_BYTES each, in TopMemoryContext.  Freshly
 * allocated, their pages would come from the kernel again every scan (glibc
 * returns big freed blocks to it), costing a page fault per 4 kB written,
 * a noticeable part of a pipelined scan of wide rows.
 */
typedef struct ScanRowsBlock
{
	char	   *data;
	Size		size;
} ScanRowsBlock;

static ScanRowsBlock scan_rows_kept[2];

/* A feature buffer of at least size bytes: a kept one if one fits */
static char *
ScanTakeRows(Size size, Size *allocated)
{
	for (int i = 0; i < lengthof(scan_rows_kept); i++)
	{
		ScanRowsBlock *kept = &scan_rows_kept[i];

		if (kept->data != NULL && kept->size >= size)
		{
			char	   *data = kept->data;

			*allocated = kept->size;
			kept->data = NULL;
			return data;
		}
	}
	*allocated = size;
	return MemoryContextAllocHuge(TopMemoryContext, size);
}

/* Keep a scan's feature buffer for the next scan (in place of a smaller one), or free it */
static void
ScanKeepRows(char *data, Size size)
{
	ScanRowsBlock *slot = &scan_rows_kept[0];

	if (data == NULL)
		return;
	for (int i = 1; i < lengthof(scan_rows_kept) && slot->data != NULL; i++)
		if (scan_rows_kept[i].data == NULL || scan_rows_kept[i].size < slot->size)
			slot = &scan_rows_kept[i];
	if (size > SCAN_CHUNK_BYTES || (slot->data != NULL && slot->size >= size))
	{
		pfree(data);
		return;
	}
	if (slot->data != NULL)
		pfree(slot->data);
	slot->data = data;
	slot->size = size;
}

/* DestReceiver startup: validate the shape of the source */
static void
ScanStartup(DestReceiver *self, int operation, TupleDesc desc)
{
	BatchScan  *state = (BatchScan *) self;

	MemoryContext old;

	/* a streamed scan's source runs a batch at a time: each run starts the receiver */
	if (state->source_checked)
		return;
	/* (not the source's executor memory: a streamed scan may run several sources) */
	old = MemoryContextSwitchTo(state->cxt);
	ScanCheckSource(state, desc);
	MemoryContextSwitchTo(old);
	state->source_checked = true;
}

/*
 * When both result columns are fixed-width and passed by value (a bigint or
 * other scalar key, a float8 prediction), form one result tuple now and
 * only patch its two values per row: the tuplestore then copies it.
 */
static void
ScanPrepareResultTemplate(BatchScan *state)
{
	TupleDesc	desc = state->result_desc;
	Datum		values[2] = {0, 0};
	bool		nulls[2] = {false, false};
	int32		offset = 0;
	char	   *data;

	for (int a = 0; a < 2; a++)
		if (TupleDescAttr(desc, a)->attlen <= 0 || !TupleDescAttr(desc, a)->attbyval)
			return;
	state->result_template = heap_form_minimal_tuple(desc, values, nulls);
	data = (char *) state->result_template - MINIMAL_TUPLE_OFFSET +
		state->result_template->t_hoff;
	for (int a = 0; a < 2; a++)
	{
		offset = att_align_nominal(offset, TupleDescAttr(desc, a)->attalign);
		state->result_values[a] = data + offset;
		offset += TupleDescAttr(desc, a)->attlen;
	}
	state->result_slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
}

/* Put one result row with two non-NULL values through the template */
static inline void
ScanPutResult(BatchScan *state, Datum key, Datum value)
{
	store_att_byval(state->result_values[0], key, TupleDescAttr(state->result_desc, 0)->attlen);
	store_att_byval(state->result_values[1], value, TupleDescAttr(state->result_desc, 1)->attlen);
	ExecStoreMinimalTuple(state->result_template, state->result_slot, false);
	tuplestore_puttupleslot(state->tupstore, state->result_slot);
}

/*
 * Row r's result in a scored batch: its prediction (which scoring left in
 * margins[r]), or an array of its probabilities or margins, palloc'd
 */
Datum
ScanResult(const BatchScan *state, const ScanBuffer *buffer, int r)
{
	if (state->output == SCORE_PREDICT)
		return Float8GetDatum(buffer->margins[r]);
	return ScoreResultDatum(state->version, state->output,
							buffer->margins + (int64) r * state->forest->num_groups, state->scratch);
}

/* Release the pages a batch's deferred rows pin */
static void
ScanReleasePins(ScanBuffer *buffer)
{
	for (int p = 0; p < buffer->num_pins; p++)
		ReleaseBuffer(buffer->pins[p]);
	buffer->num_pins = 0;
	buffer->any_deferred = false;
}

/* Empty a batch whose results are out: its copied values, its rows' pinned pages */
static void
ScanRelease(ScanBuffer *buffer)
{
	MemoryContextReset(buffer->cxt);
	buffer->num_rows = 0;
	ScanReleasePins(buffer);
}

/*
 * Emit the results of a scored batch and empty it; or, streamed, queue it
 * for the custom scan to return its rows.  A row's result Datum (an array
 * of as many values as the model has classes) lives in result_cxt only
 * until the tuplestore has copied it.
 */
static void
ScanEmit(BatchScan *state, ScanBuffer *buffer)
{
	MemoryContext old;

	if (state->streaming)
	{
		Assert(state->num_ready < lengthof(state->ready));
		state->ready[state->num_ready++] = buffer;
		return;
	}
	old = MemoryContextSwitchTo(state->result_cxt);
	for (int r = 0; r < buffer->num_rows; r++)
	{
		Datum		values[2];
		bool		nulls[2];

		if (state->result_template && !buffer->key_nulls[r] && !buffer->row_nulls[r])
		{
			ScanPutResult(state, buffer->keys[r], ScanResult(state, buffer, r));
			MemoryContextReset(state->result_cxt);
			continue;
		}
		values[0] = buffer->keys[r];
		nulls[0] = buffer->key_nulls[r];
		nulls[1] = buffer->row_nulls[r];
		values[1] = nulls[1] ? (Datum) 0 : ScanResult(state, buffer, r);
		tuplestore_putvalues(state->tupstore, state->result_desc, values, nulls);
		MemoryContextReset(state->result_cxt);
	}
	MemoryContextSwitchTo(old);
	ScanRelease(buffer);
}

/* Wait for the batch being scored, if any, and emit its results */
static void
ScanDrain(BatchScan *state)
{
	ScanBuffer *buffer = state->scoring;
	ScoreCosts	mark;

	if (buffer == NULL)
		return;
	ScoreCostsMark(&mark);
	ScoreBatchFinish(&buffer->task);
	ScoreCostsAdd(&state->costs, &mark);
	state->scoring = NULL;
	ScanEmit(state, buffer);
}

/* Keep a batch's rows (not those whose feature array is NULL) in the sample */
static void
ScanKeepSample(BatchScan *state, ScanBuffer *buffer)
{
	Size		row_bytes = (Size) state->forest->num_features * ForestValueSize(state->forest);

	for (int r = 0; r < buffer->num_rows && state->sample_rows < state->row_limit; r++)
		if (!buffer->row_nulls[r])
			memcpy(state->sample + row_bytes * state->sample_rows++, buffer->rows + row_bytes * r,
				   row_bytes);
	buffer->num_rows = 0;
	MemoryContextReset(buffer->cxt);
}

/*
 * Score the filling batch: profile it, or score and emit it, or (pipelined)
 * emit the batch scored before it and start this one on the pipeline thread
 */
static void
ScanFlush(BatchScan *state)
{
	ScanBuffer *buffer = state->filling;
	ScoreCosts	mark;

	if (buffer->num_rows == 0)
		return;
	state->rows_seen += buffer->num_rows;
	state->flush_rows = Min(state->flush_rows * 2, state->chunk_rows);
	if (state->output == SCORE_PROFILE)
	{
		ForestProfileAccumulate(state->forest, buffer->rows, buffer->num_rows, state->node_hits);
		buffer->num_rows = 0;
		MemoryContextReset(buffer->cxt);
	}
	else if (state->output == SCORE_SAMPLE)
		ScanKeepSample(state, buffer);
	else if (!state->pipelined)
	{
		ScoreCostsMark(&mark);
		ScoreBatch(state->version, state->batch_size, buffer->rows, buffer->num_rows,
				   buffer->acc, buffer->margins, state->output == SCORE_PREDICT);
		ScoreCostsAdd(&state->costs, &mark);
		ScanEmit(state, buffer);
	}
	else
	{
		ScanBuffer *scored = state->scoring;
		ScoreGather gather = {
			.rows = buffer->rows, .sources = buffer->any_deferred ? buffer->sources : NULL,
			.row_bytes = (size_t) state->forest->num_features * ForestValueSize(state->forest)
		};

		/*
		 * Wait for the batch before, start this one, then emit the one
		 * before.  On a GPU this one starts first: its copies overlap the
		 * kernel of the one before, on the device's other stream.
		 */
		ScoreCostsMark(&mark);
		if (scored != NULL && !state->on_device)
			ScoreBatchFinish(&scored->task);
		ScoreBatchStart(&buffer->task, state->version, state->batch_size, buffer->rows,
						buffer->num_rows, buffer->acc, buffer->margins,
						state->output == SCORE_PREDICT, &gather);
		state->scoring = buffer;
		if (scored != NULL)
			ScoreBatchFinish(&scored->task);
		ScoreCostsAdd(&state->costs, &mark);
		state->filling = buffer == &state->buffers[0] ? &state->buffers[1] : &state->buffers[0];
		if (scored != NULL)
			ScanEmit(state, scored);
	}
	CHECK_FOR_INTERRUPTS();
}

/* DestReceiver: add one source row to the batch */
static bool
ScanReceiveSlot(TupleTableSlot *slot, DestReceiver *self)
{
	BatchScan  *state = (BatchScan *) self;

	ScanReadRow(state, slot, state->filling);
	if (state->filling->num_rows == state->flush_rows)
		ScanFlush(state);
	return true;
}

/*
 * Add a heap tuple that a direct read of the source found (scan_heap.c) to
 * the batch, as the receiver adds a slot's row; slot is the source scan's,
 * for a tuple not of the layout read in place
 */
void
ScanReceiveHeapTuple(BatchScan *state, HeapTuple tuple, Buffer page_buffer, TupleTableSlot *slot)
{
	ScanReadHeapTuple(state, tuple, page_buffer, slot, state->filling);
	if (state->filling->num_rows == state->flush_rows)
		ScanFlush(state);
}

/* Add a run of a page's visible tuples to the batch (ScanReadHeapRun), flushing it when full */
int
ScanReceiveHeapRun(BatchScan *state, TupleDesc desc, Page page, Buffer page_buffer,
				   const OffsetNumber *offsets, int count)
{
	int			read = ScanReadHeapRun(state, desc, page, page_buffer, offsets, count);

	if (state->filling->num_rows == state->flush_rows)
		ScanFlush(state);
	return read;
}

/*
 * DestReceiver shutdown, at the end of each run of a source: the layout
 * worked out for its slots' descriptor is forgotten, since the next run
 * may be another source's (a chunk of a parallel scan), whose descriptor
 * may lie where this one did
 */
static void
ScanShutdown(DestReceiver *self)
{
	((BatchScan *) self)->heap_desc = NULL;
}

/* DestReceiver destroy: nothing to release here */

static void
ScanDestroy(DestReceiver *self)
{
}

/*
 * size bytes in CurrentMemoryContext, starting on a cache line: threads
 * that score neighbouring ranges of a batch then write its sums on lines
 * of their own (freed with the context)
 */
static void *
ScanAllocCacheAligned(Size size)
{
	char	   *block = MemoryContextAllocHuge(CurrentMemoryContext, size + PG_CACHE_LINE_SIZE);

	return (void *) TYPEALIGN(PG_CACHE_LINE_SIZE, block);
}

/* Allocate one batch's buffers for chunk_rows rows */
static void
ScanAllocBuffer(BatchScan *state, ScanBuffer *buffer)
{
	Forest	   *forest = state->forest;
	Size		n = state->chunk_rows;
	Size		value_size = ForestValueSize(forest);

	buffer->num_rows = 0;
	buffer->rows = ScanTakeRows(n * Max(forest->num_features, 1) * value_size, &buffer->rows_size);
	buffer->acc = ScanAllocCacheAligned(n * forest->num_groups * value_size);
	buffer->margins = ScanAllocCacheAligned(n * forest->num_groups * sizeof(double));
	buffer->keys = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(Datum));
	buffer->key_nulls = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(bool));
	buffer->row_nulls = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(bool));
	buffer->cxt = AllocSetContextCreate(CurrentMemoryContext, "silvan batch",
										ALLOCSET_DEFAULT_SIZES);
	if (state->defer_rows)
	{
		buffer->sources = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(char *));
		buffer->pins = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(Buffer));
	}
	buffer->num_pins = 0;
	buffer->any_deferred = false;
}

/*
 * Bytes a batch needs per row: its features, its margins in the forest's
 * precision and as doubles, one slice per thread for privatized sums,
 * and the key, flags and gather pointer
 */
static Size
ScanBytesPerRow(const BatchScan *state)
{
	const Forest *forest = state->forest;
	Size		value_size = ForestValueSize(forest);

	return (Size) Max(forest->num_features, 1) * value_size +
		(Size) forest->num_groups * (value_size * RuntimeMaxThreads() + sizeof(double)) +
		sizeof(Datum) + 2 * sizeof(bool) + sizeof(char *) + sizeof(Buffer);
}

/*
 * Rows per chunk, up to wanted_rows, within a memory budget for the
 * chunk's buffers; errors (53200) when not even one row fits
 */
static int
ScanChunkRows(const BatchScan *state, Size budget, int wanted_rows)
{
	Size		per_row = ScanBytesPerRow(state);
	Size		feature_bytes = (Size) Max(state->forest->num_features, 1) *
		ForestValueSize(state->forest);

	if (per_row > budget)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("a row of model \"%s\" needs more memory than work_mem allows",
						state->model_name),
				 errdetail("Scoring one row takes %zu kB of buffers (%d features, %d margins); work_mem is %d kB.",
						   (per_row + 1023) / 1024, state->forest->num_features,
						   state->forest->num_groups, work_mem),
				 errhint("Raise work_mem to at least %zu kB.", (per_row + 1023) / 1024)));
	return (int) Min(Min((Size) wanted_rows, budget / per_row),
					 Max(SCAN_CHUNK_BYTES / feature_bytes, 1));
}

/*
 * Allocate the batches: two when batches are scored on the pipeline thread
 * (silvan.max_threads > 1, compiled code, results wanted, and batches big
 * enough to pay for handing them over), else one.  Each holds a chunk of
 * at most SCAN_CHUNK_BYTES of features, and all of them together fit in
 * work_mem: a batch of a model with many classes is scored a few rows at a
 * time.
 */
static void
ScanAllocBatches(BatchScan *state)
{
	Size		budget = (Size) work_mem * 1024;

	state->chunk_rows = ScanChunkRows(state, budget, state->batch_size);
	state->on_device = state->output != SCORE_PROFILE && state->output != SCORE_SAMPLE &&
		ScoreBatchOnDevice(state->batch_size);
	/*
	 * A streamed scan returns between batches, so another scan of the
	 * backend may run then: on a GPU it scores one batch at a time, holding
	 * none of the device's streams across that
	 */
	state->pipelined = state->output != SCORE_PROFILE && state->output != SCORE_SAMPLE && silvan_jit &&
		(RuntimeMaxThreads() > 1 || (state->on_device && !state->streaming)) &&
		state->chunk_rows >= SCAN_PIPELINE_MIN_BATCH;
	if (state->pipelined)
	{
		state->chunk_rows = ScanChunkRows(state, budget / 2, state->on_device ? state->batch_size :
										  Max(state->batch_size, SCAN_PIPELINE_ROWS));
		state->pipelined = state->chunk_rows >= SCAN_PIPELINE_MIN_BATCH;
		if (!state->pipelined)
			state->chunk_rows = ScanChunkRows(state, budget, state->batch_size);
	}
	/*
	 * Pipelined rows are not copied by the backend: it notes where each
	 * row's features are (pinning their pages) and the pipeline thread,
	 * helped by the backend, gathers them before scoring (scan_rows.c).
	 * The backend's own time is what a small model's pipelined scan waits
	 * on: a copy of even 104 bytes a row (13 doubles) was a tenth of it.
	 */
	state->defer_rows = state->pipelined;
	state->flush_rows = state->pipelined ?
		Min(state->chunk_rows, Max(state->chunk_rows / SCAN_RAMP_PARTS, SCAN_PIPELINE_MIN_BATCH)) :
		state->chunk_rows;
	ScanAllocBuffer(state, &state->buffers[0]);
	if (state->pipelined)
		ScanAllocBuffer(state, &state->buffers[1]);
	state->filling = &state->buffers[0];
	state->scoring = NULL;
	state->scratch = palloc(sizeof(double) * ForestOutputWidth(state->forest));
	state->result_cxt = AllocSetContextCreate(CurrentMemoryContext, "silvan result row",
											  ALLOCSET_DEFAULT_SIZES);
}

/* Check batch_size (NULL: 4096) */
int
ScanCheckBatchSize(bool isnull, int32 batch_size)
{
	if (isnull)
		batch_size = SILVAN_TABLE_BATCH_SIZE;
	if (batch_size < 1 || batch_size > SCAN_MAX_BATCH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch size must be between 1 and %d", SCAN_MAX_BATCH),
				 errdetail("Argument \"batch_size\" is %d.", batch_size)));
	return batch_size;
}

/* Error: predict_query's query returns no rows, or is more than one statement */
static void
ScanErrorNoRows(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("query must return rows"),
			 errdetail("Argument \"query\" must be a single SELECT, VALUES or TABLE statement.")));
}

/*
 * Error unless each of a query's rewritten statements only reads: a
 * SELECT (VALUES, TABLE) without data-modifying WITH clauses or row
 * locks.  Functions it calls are the caller's business, as in any query
 * the caller could run.
 */
static void
ScanCheckQueriesRead(List *queries)
{
	ListCell   *lq;

	foreach(lq, queries)
	{
		Query	   *q = lfirst_node(Query, lq);

		if (q->commandType != CMD_SELECT || q->hasModifyingCTE || q->rowMarks != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
					 errmsg("query must only read"),
					 errdetail("Argument \"query\" must be a SELECT, VALUES or TABLE statement without data-modifying WITH clauses or FOR UPDATE/SHARE.")));
	}
}

/* Error unless a prepared query returns rows and only reads */
static void
ScanCheckReadOnly(SPIPlanPtr plan)
{
	ListCell   *lc;

	if (!SPI_is_cursor_plan(plan))
		ScanErrorNoRows();
	foreach(lc, SPI_plan_get_plan_sources(plan))
		ScanCheckQueriesRead(((CachedPlanSource *) lfirst(lc))->query_list);
}

/*
 * The same checks of a query the streamed scan parsed (num_statements
 * statements) and rewrote into queries
 */
void
ScanCheckSourceQueries(int num_statements, List *queries)
{
	Query	   *q;

	if (num_statements != 1 || list_length(queries) < 1)
		ScanErrorNoRows();
	q = linitial_node(Query, queries);
	if (q->commandType == CMD_UTILITY ? !UtilityReturnsTuples(q->utilityStmt) :
		q->commandType != CMD_SELECT && q->returningList == NIL)
		ScanErrorNoRows();
	ScanCheckQueriesRead(queries);
}

/* Plan and run the query, feeding every row to the scan's receiver */
static void
ScanRunQuery(BatchScan *state, const char *query, bool read_only)
{
	SPIPlanPtr	plan;
	SPIExecuteOptions options;
	int			ret;

	SPI_connect();
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "could not prepare query: %s", SPI_result_code_string(SPI_result));
	ScanCheckReadOnly(plan);
	memset(&options, 0, sizeof(options));
	options.read_only = read_only;
	options.dest = &state->pub;
	options.tcount = state->row_limit;
	ret = SPI_execute_plan_extended(plan, &options);
	if (ret < 0)
		elog(ERROR, "could not run query: %s", SPI_result_code_string(ret));
	ScanFlush(state);
	ScanDrain(state);
	SPI_finish();
}

/* The name of a column of rel, checked to exist */
static const char *
ScanColumn(Relation rel, const char *column)
{
	if (get_attnum(RelationGetRelid(rel), column) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, RelationGetRelationName(rel))));
	return quote_identifier(column);
}

/*
 * Refuse a table Citus distributes: reading it here would bring every row
 * to the coordinator.  The hint is the query that scores on the shards,
 * with the features as the call named them.
 */
static void
ScanRefuseDistributed(BatchScan *state, Relation rel)
{
	StringInfoData features;
	const char *key = state->key_column ? state->key_column : "key";

	initStringInfo(&features);
	if (state->feature_columns == NULL)
		appendStringInfoString(&features, "t");
	else
	{
		Datum	   *names;
		bool	   *nulls;
		int			n;

		deconstruct_array(state->feature_columns, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
		if (n != 1)
			appendStringInfoString(&features, "ROW(");
		for (int i = 0; i < n; i++)
			appendStringInfo(&features, "%st.%s", i > 0 ? ", " : "",
							 nulls[i] ? "NULL" : quote_identifier(TextDatumGetCString(names[i])));
		if (n != 1)
			appendStringInfoChar(&features, ')');
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("silvan's table functions do not score a distributed table"),
			 errdetail("Argument \"source\" names %s, which Citus distributes: every row would travel to the coordinator to be scored there.",
					   RelationGetRelationName(rel)),
			 errhint("Score in the query instead, where Citus runs silvan.predict() on every shard: SELECT t.%s, silvan.predict('%s', %s) FROM %s AS t.",
					 quote_identifier(key), state->model_name, features.data,
					 RelationGetRelationName(rel))));
}

/*
 * Build "SELECT key, features FROM source" for predict_table: the features
 * named by feature_columns, else matched by name or position (features.c)
 */
static char *
ScanTableQuery(BatchScan *state)
{
	Relation	rel = try_relation_open(state->source_relid, AccessShareLock);
	TupleDesc	desc;
	const char *key = state->key_column ? state->key_column : "";	/* no column is "" */
	StringInfoData sql;

	/* an OID that names no relation (dropped, or made up) */
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", state->source_relid),
				 errdetail("Argument \"source\" names no relation.")));
	if (state->output != SCORE_PROFILE && state->output != SCORE_SAMPLE &&
		CitusDistributedTable(state->source_relid))
		ScanRefuseDistributed(state, rel);
	desc = RelationGetDescr(rel);
	initStringInfo(&sql);
	if (state->key_column != NULL)
		appendStringInfo(&sql, "SELECT %s", ScanColumn(rel, state->key_column));
	else
		appendStringInfoString(&sql, "SELECT 0::pg_catalog.int8");
	if (state->feature_columns != NULL)
	{
		Datum	   *names;
		bool	   *nulls;
		int			n;

		deconstruct_array(state->feature_columns, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("feature column names must not be null")));
			appendStringInfo(&sql, ", %s", ScanColumn(rel, TextDatumGetCString(names[i])));
		}
		state->check_positions = false;		/* the caller said which is which */
	}
	else if (!FeaturesSelectList(&sql, rel, key, state->forest, state->model_name))
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!att->attisdropped && strcmp(NameStr(att->attname), key) != 0)
				appendStringInfo(&sql, ", %s", quote_identifier(NameStr(att->attname)));
		}
	appendStringInfo(&sql, " FROM %s",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)));
	relation_close(rel, NoLock);
	return sql.data;
}

/* Record predict_table's source, matched to the model once it is looked up */
static void
ScanSetTable(BatchScan *state, FunctionCallInfo fcinfo)
{
	state->source_relid = PG_GETARG_OID(1);
	state->key_column = text_to_cstring(PG_GETARG_TEXT_PP(2));
	state->feature_columns = PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3);
}

/* Look up the model and check that it can give the scan's output */
static void
ScanLookup(BatchScan *state)
{
	state->version = ModelCacheLookup(state->model_name);
	/* profiling interprets the trees; scoring needs only the header */
	state->forest = state->output == SCORE_PROFILE ? ModelVersionForest(state->version) :
		state->version->header;
	ScoreCheckOutput(state->version, state->output, state->model_name);
	if (state->output == SCORE_PROFILE)
		state->node_hits = MemoryContextAllocHuge(CurrentMemoryContext,
												  sizeof(int64) * Max(state->forest->num_nodes, 1));
	if (state->node_hits)
		memset(state->node_hits, 0, sizeof(int64) * Max(state->forest->num_nodes, 1));
}

/*
 * Stop the batches in flight, then release the feature buffers and the
 * model's pin; again does nothing.  Runs on error paths (a streamed scan's
 * memory context callback among them): it never raises.
 */
void
ScanClose(BatchScan *state)
{
	/* on a GPU both batches may be in flight */
	for (int b = 0; b < lengthof(state->buffers); b++)
		ScoreBatchAbandon(&state->buffers[b].task);
	for (int b = 0; b < lengthof(state->buffers); b++)
	{
		ScanKeepRows(state->buffers[b].rows, state->buffers[b].rows_size);
		state->buffers[b].rows = NULL;
	}
	state->num_ready = 0;
	if (state->pinned)
		ModelVersionUnpin(state->version);
	state->pinned = false;
}

/*
 * A streamed scan ends (or starts again) normally: release the pages its
 * batches' deferred rows still pin, once ScanClose has stopped the batches
 * in flight.  Not from ScanClose, which also runs after an error, when the
 * resource owner has released them already.
 */
void
ScanStreamUnpin(BatchScan *state)
{
	for (int b = 0; b < lengthof(state->buffers); b++)
		ScanReleasePins(&state->buffers[b]);
}

/* Pin the model for the scan: ScanClose unpins it */
static void
ScanPin(BatchScan *state)
{
	ModelVersionPin(state->version);
	state->pinned = true;
}

/* Pin the model and run the scan's query, with the pin released on any exit */
static void
ScanRun(BatchScan *state, const char *query, bool read_only)
{
	ScanPin(state);
	PG_TRY();
	{
		ScanAllocBatches(state);
		ScanRunQuery(state, query, read_only);
	}
	PG_FINALLY();
	{
		ScanClose(state);
	}
	PG_END_TRY();
}

/*
 * Look up the model and run the scan: query, or with NULL predict_table's
 * source, whose columns are matched to the model's features
 */
static void
ScanExecute(BatchScan *state, const char *query, bool read_only)
{
	ScanLookup(state);
	ScanRun(state, query != NULL ? query : ScanTableQuery(state), read_only);
}

/* A receiver that batches rows for a model */
static BatchScan *
ScanCreate(ScoreOutput output, bool integer_key)
{
	BatchScan  *state = palloc0(sizeof(BatchScan));

	state->cxt = CurrentMemoryContext;
	state->check_positions = true;
	state->pub.receiveSlot = ScanReceiveSlot;
	state->pub.rStartup = ScanStartup;
	state->pub.rShutdown = ScanShutdown;
	state->pub.rDestroy = ScanDestroy;
	state->pub.mydest = DestNone;
	state->output = output;
	state->integer_key = integer_key;
	return state;
}

/*
 * Streaming (scan_node.c): the custom scan runs the source itself, a batch
 * at a time, and returns each scored batch's rows before it reads on.
 * ScanStreamOpen looks the model up and builds the source's query;
 * ScanStreamStart pins the model and allocates the batches (the caller has
 * made sure that ScanClose runs on any exit).  The source's rows go
 * to the scan as its DestReceiver, ScanStreamWanted of them at a time: the
 * last of them fills the batch, which is scored (or started, and the batch
 * before it finished), and a scored batch is queued in ready instead of
 * emitted.  ScanStreamEnd scores what is left when the source is done;
 * ScanStreamRelease empties the oldest ready batch once its rows are out.
 */
BatchScan *
ScanStreamOpen(ScoreOutput output, const char *model, Oid relid, const char *key_column,
			   ArrayType *feature_columns, int batch_size)
{
	BatchScan  *state = ScanCreate(output, true);

	state->streaming = true;
	state->model_name = pstrdup(model);
	state->batch_size = batch_size;
	state->source_relid = relid;
	state->key_column = pstrdup(key_column);
	state->feature_columns = feature_columns;
	ScanLookup(state);
	state->query = ScanTableQuery(state);
	return state;
}

/* The same for predict_query's query, its key of the declared type */
BatchScan *
ScanStreamOpenQuery(ScoreOutput output, const char *model, const char *query, Oid key_type,
					int batch_size)
{
	BatchScan  *state = ScanCreate(output, false);

	state->streaming = true;
	state->model_name = pstrdup(model);
	state->batch_size = batch_size;
	state->declared_key_type = key_type;
	ScanLookup(state);
	state->query = pstrdup(query);
	return state;
}

/* Pin the model and allocate the batches of a streamed scan */
void
ScanStreamStart(BatchScan *state)
{
	ScanPin(state);
	ScanAllocBatches(state);
}

/* How many more source rows fill the filling batch (at least one) */
int
ScanStreamWanted(const BatchScan *state)
{
	return state->flush_rows - state->filling->num_rows;
}

/* The source is done: score the rows left and queue every batch not yet returned */
void
ScanStreamEnd(BatchScan *state)
{
	ScanFlush(state);
	ScanDrain(state);
}

/* The oldest ready batch's rows are out: empty it for reuse */
void
ScanStreamRelease(BatchScan *state)
{
	Assert(state->num_ready > 0);
	ScanRelease(state->ready[0]);
	state->ready[0] = state->ready[1];
	state->num_ready--;
}

/* Set up the receiver and the result tuplestore of a set-returning scan */
static BatchScan *
ScanBegin(FunctionCallInfo fcinfo, ScoreOutput output, bool integer_key)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchScan  *state = ScanCreate(output, integer_key);

	InitMaterializedSRF(fcinfo, integer_key ? 0 : MAT_SRF_USE_EXPECTED_DESC);
	state->tupstore = rsinfo->setResult;
	state->result_desc = rsinfo->setDesc;
	ScanCheckResultDesc(state->result_desc, output);
	state->declared_key_type = TupleDescAttr(state->result_desc, 0)->atttypid;
	ScanPrepareResultTemplate(state);
	return state;
}

/* Error unless a result descriptor is (key <any type>, prediction float8 or float8[]) */
void
ScanCheckResultDesc(TupleDesc desc, ScoreOutput output)
{
	if (desc->natts != 2)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("result must have two columns"),
				 errdetail("Declare it as (key <type>, %s).",
						   output == SCORE_PREDICT ? "prediction float8" : "result float8[]")));
	if (TupleDescAttr(desc, 1)->atttypid != (output == SCORE_PREDICT ? FLOAT8OID : FLOAT8ARRAYOID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("result column 2 must be of type %s", output == SCORE_PREDICT ? "float8" : "float8[]"),
				 errdetail("The column definition list declares %s.",
						   format_type_be(TupleDescAttr(desc, 1)->atttypid))));
}

/* Error when predict_table's model, source or key column is NULL */
void
ScanCheckTableArgs(bool model_null, bool source_null, bool key_null)
{
	if (model_null || source_null || key_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model, source and key_column must not be null")));
}

/* predict_table and its variants */
static Datum
ScanTable(FunctionCallInfo fcinfo, ScoreOutput output)
{
	BatchScan  *state;

	ScanCheckTableArgs(PG_ARGISNULL(0), PG_ARGISNULL(1), PG_ARGISNULL(2));
	state = ScanBegin(fcinfo, output, true);
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = ScanCheckBatchSize(PG_ARGISNULL(4), PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4));
	ScanSetTable(state, fcinfo);
	ScanExecute(state, NULL, true);
	return (Datum) 0;
}

/* Error when predict_query's model or query is NULL */
void
ScanCheckQueryArgs(bool model_null, bool query_null)
{
	if (model_null || query_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model and query must not be null")));
}

/* predict_query and its variants */
static Datum
ScanQuery(FunctionCallInfo fcinfo, ScoreOutput output)
{
	BatchScan  *state;

	ScanCheckQueryArgs(PG_ARGISNULL(0), PG_ARGISNULL(1));
	state = ScanBegin(fcinfo, output, false);
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = ScanCheckBatchSize(PG_ARGISNULL(2), PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2));
	ScanExecute(state, text_to_cstring(PG_GETARG_TEXT_PP(1)), false);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(silvan_predict_table);
PG_FUNCTION_INFO_V1(silvan_predict_proba_table);
PG_FUNCTION_INFO_V1(silvan_predict_raw_table);
PG_FUNCTION_INFO_V1(silvan_predict_query);
PG_FUNCTION_INFO_V1(silvan_predict_proba_query);
PG_FUNCTION_INFO_V1(silvan_predict_raw_query);

/* predict_table(model, source, key_column, feature_columns, batch_size) */
Datum
silvan_predict_table(PG_FUNCTION_ARGS)
{
	return ScanTable(fcinfo, SCORE_PREDICT);
}

/* predict_proba_table(...): class probabilities per row */
Datum
silvan_predict_proba_table(PG_FUNCTION_ARGS)
{
	return ScanTable(fcinfo, SCORE_PROBA);
}

/* predict_raw_table(...): margins per row */
Datum
silvan_predict_raw_table(PG_FUNCTION_ARGS)
{
	return ScanTable(fcinfo, SCORE_RAW);
}

/* predict_query(model, query, batch_size) AS (key <type>, prediction float8) */
Datum
silvan_predict_query(PG_FUNCTION_ARGS)
{
	return ScanQuery(fcinfo, SCORE_PREDICT);
}

/* predict_proba_query(...) AS (key <type>, probabilities float8[]) */
Datum
silvan_predict_proba_query(PG_FUNCTION_ARGS)
{
	return ScanQuery(fcinfo, SCORE_PROBA);
}

/* predict_raw_query(...) AS (key <type>, margins float8[]) */
Datum
silvan_predict_raw_query(PG_FUNCTION_ARGS)
{
	return ScanQuery(fcinfo, SCORE_RAW);
}

/*
 * Up to limit rows of a model's features (palloc'd, the forest's precision,
 * row-major) from a table, matched to the features as predict_table does
 * (key_column may be NULL: then no column is a key), or from a query read
 * as predict_query reads it (the first column a key, ignored); the count
 */
int64
ScanSample(const char *model, Oid relid, const char *key_column, ArrayType *feature_columns,
		   const char *query, int64 limit, char **rows)
{
	BatchScan  *state = ScanCreate(SCORE_SAMPLE, false);

	state->model_name = model;
	state->batch_size = SILVAN_TABLE_BATCH_SIZE;
	state->row_limit = limit;
	state->source_relid = relid;
	state->key_column = key_column ? pstrdup(key_column) : NULL;
	state->feature_columns = feature_columns;
	ScanLookup(state);
	state->sample = MemoryContextAllocHuge(CurrentMemoryContext,
										   (Size) limit * Max(state->forest->num_features, 1) *
										   ForestValueSize(state->forest));
	ScanRun(state, query != NULL ? query : ScanTableQuery(state), query == NULL);
	*rows = state->sample;
	return state->sample_rows;
}

/* Profile a model over the rows of a prepared scan and store the counts */
static Datum
ScanProfile(BatchScan *state, const char *query)
{
	int64		revision;

	ScanExecute(state, query, true);
	revision = state->version->revision;
	CatalogStoreProfile(state->model_name, revision, state->rows_seen,
						state->node_hits, state->forest->num_nodes);
	return Int64GetDatum(state->rows_seen);
}

PG_FUNCTION_INFO_V1(silvan_profile_table);
PG_FUNCTION_INFO_V1(silvan_profile_query);

/* profile(model, source, key_column, feature_columns): node hits over a table */
Datum
silvan_profile_table(PG_FUNCTION_ARGS)
{
	BatchScan  *state = ScanCreate(SCORE_PROFILE, true);

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model, source and key_column must not be null")));
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = SILVAN_TABLE_BATCH_SIZE;
	/* nothing is scanned for a caller that could not store the profile */
	(void) CatalogCheckOwned(state->model_name);
	ScanSetTable(state, fcinfo);
	return ScanProfile(state, NULL);
}

/* profile(model, query): node hits over a query's rows (first column: a key) */
Datum
silvan_profile_query(PG_FUNCTION_ARGS)
{
	BatchScan  *state = ScanCreate(SCORE_PROFILE, false);

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model and query must not be null")));
	state->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	state->batch_size = SILVAN_TABLE_BATCH_SIZE;
	(void) CatalogCheckOwned(state->model_name);
	return ScanProfile(state, text_to_cstring(PG_GETARG_TEXT_PP(1)));
}
