/*
 * batch_node.c
 *		"Custom Scan (SilvanBatch)": scalar calls of predict(),
 *		predict_proba() and predict_raw() scored a batch of rows at a time.
 *
 * batch_plan.c puts the node where a plan computed the calls row by row.
 * It pulls a batch of rows from its child, puts each call's features of
 * every row into one dense buffer, scores the buffer with one run of the
 * compiled code (ScoreBatch), and then returns the batch's rows one at a
 * time: its scan tuple is the child's columns followed by the calls'
 * results, and its filter and projection are the moved ones.  When every
 * call reads its features from the child's columns (an ARRAY[...] of
 * them, or a table's row), the features are read as each row comes,
 * straight from the data of a heap tuple where the columns' places are
 * fixed (BatchHeapLayout: a scan that does not project hands the table's
 * tuples), and the node keeps of the row only the columns read above it
 * (batch_plan.c says which: its filter and projection, or the Agg above);
 * otherwise it keeps a copy of each row and evaluates the calls' features
 * over the copies.  With silvan.max_threads above 1 the node is a
 * two-stage pipeline over two batches (BatchAdvance): one is scored on the
 * pipeline thread (ScoreBatchStart) while the backend takes the next from
 * the child and hands on the rows of the one before; a batch's scoring in
 * flight is stopped (ScoreBatchAbandon) before its memory or its model's
 * pin goes, on an error too.  Batches start at 64 rows and double up
 * to silvan.batch_calls_size, so a LIMIT above it reads few rows more than
 * it needs.  Rows with a NULL features array or row get NULL, as the
 * strict function gives.  A call on a whole row matches the row's columns
 * to the features once per run (predict_row.c); a scanned table's row and
 * an ARRAY[...] of columns are read from the child's columns directly.
 *
 * The results equal the scalar path's bit for bit: the code runs the
 * schedule of the batch's size, which adds each row's trees in the
 * model's order, unless a schedule stored for that size adds them in
 * another order (ScheduleReordersSums); the batch then runs the code that
 * a scalar call runs.
 *
 * Below a Gather the node runs in each worker over its share of the rows
 * (batch_plan.c marks it parallel-aware): each worker adds what it scored
 * to the query's shared memory as it shuts down, and the leader's EXPLAIN
 * ANALYZE counts every participant's rows.
 *
 * What the executor checks for a function call, the node checks when it
 * starts: EXECUTE on each function.  Models are looked up and pinned at
 * the first batch of a run (a rescan starts a new run), as the caller,
 * and unpinned when the run's memory goes, on an error too.
 */
#include "silvan_pg.h"

#include "access/parallel.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "nodes/nodeFuncs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "silvan/runtime.h"

#include "batch.h"

#define BATCH_NAME			"SilvanBatch"
#define BATCH_FIRST_ROWS	64
/* Batches of fewer rows are scored on the backend's thread alone (BatchScoreRows) */
#define BATCH_THREADED_ROWS	8192

/* One call of the node */
typedef struct BatchCall
{
	ScoreOutput output;
	Oid			funcid;
	ExprState  *model;			/* the model's name: constant or parameter */
	ExprState  *features;		/* over the child's row */
	bool		whole_row;		/* features is a row, matched by name */
	AttrNumber *direct;			/* features is ARRAY[the child's columns]: them */
	int			num_direct;
	Oid			direct_type;	/* their type, float4 or float8 */
	RowExpr    *direct_row;		/* features is ROW(the child's columns) of a table's row */
	AttrNumber *columns;		/* this run's, read from columns: per feature, its child column */
	Oid		   *column_types;	/* and its type */
	bool		in_place;		/* the columns are the tuple data's, in the model's type */
	RowFeatures *row_map;		/* this run's match of its type */
	ModelVersion *version;		/* this run's, pinned; NULL before the first batch */
	char	   *model_name;
	int32		code_batch;		/* the batch size whose code scores it */
} BatchCall;

/* One call's part of a batch */
typedef struct BatchCallRows
{
	char	   *features;		/* the scored rows' features */
	int		   *which;			/* which row of the batch each is */
	int			num_scored;
	void	   *acc;			/* the scoring's sums, then margins */
	double	   *margins;
	ScoreTask	task;			/* pipelined: on the pipeline thread until finished */
	Datum	   *results;		/* per row of the batch */
	bool	   *result_nulls;
} BatchCallRows;

/* A batch of rows: taken from the child, scored, handed on */
typedef struct BatchRows
{
	MemoryContext cxt;			/* its features, sums and copied values */
	MemoryContextCallback gone; /* stops its scoring before cxt's memory goes */
	int			num_calls;
	int			num_rows;
	TupleTableSlot **copies;	/* not read_as_fetched: copies of the rows */
	Datum	   *kept_values;	/* read_as_fetched: the kept columns */
	bool	   *kept_nulls;
	BatchCallRows *calls;
} BatchRows;

/* What a parallel plan's workers scored, for the leader's EXPLAIN ANALYZE */
typedef struct BatchShared
{
	pg_atomic_uint64 rows_scored;
	pg_atomic_uint64 batches;
	pg_atomic_uint64 scoring_us;
} BatchShared;

typedef struct BatchState
{
	CustomScanState css;
	int			num_child;		/* the child's columns: the scan tuple's first */
	int			num_calls;
	BatchCall  *calls;
	TupleDesc	child_desc;
	bool	   *kept;			/* per child column: read above (batch_plan.c) */
	bool		read_as_fetched;	/* this run's calls read the child's columns */
	AttrNumber	last_read;		/* and the child's columns they and kept need */
	TupleDesc	heap_desc;		/* the child's heap tuples' last descriptor */
	bool		heap_layout;	/* has fixed offsets of the columns read */
	int32	   *heap_offsets;	/* per child column up to last_read */
	int			capacity;		/* rows a batch has room for: silvan.batch_calls_size */
	int			fill;			/* rows the next batch asks for */
	bool		pipelined;		/* this run's batches scored on the pipeline thread */
	BatchRows	batch_rows[2];	/* pipelined: one scored while the other is filled */
	BatchRows  *current;		/* the batch whose rows are handed on */
	BatchRows  *ahead;			/* pipelined: the batch being scored */
	int			next_row;		/* of current */
	bool		child_done;
	MemoryContext run_cxt;		/* this run: pins, released with it */
	int64		rows_scored;	/* for EXPLAIN ANALYZE */
	int64		batches;
	ScoreCosts	costs;			/* its share of scoring's */
	BatchShared *shared;		/* in a parallel plan, until it shuts down */
	int64		worker_rows;	/* the leader's: what the workers scored */
	int64		worker_batches;
	double		worker_scoring_ms;
} BatchState;

CustomScanMethods batch_plan_methods;
static CustomExecMethods batch_exec_methods;

/* CreateCustomScanState */
static Node *
BatchCreateState(CustomScan *cscan)
{
	BatchState *node = palloc0(sizeof(BatchState));

	NodeSetTag(node, T_CustomScanState);
	node->css.methods = &batch_exec_methods;
	return (Node *) node;
}

/*
 * Does a call take ARRAY[c1, ..., cn] of its child's float4 or float8
 * columns, or ROW(its columns) standing for a scanned table's row
 * (batch_plan.c leaves them so)?  Then the node reads the columns into
 * the batch's rows itself: the same values as through the array or the
 * row, without building one per row
 */
static void
BatchDirectColumns(BatchCall *call, Node *features)
{
	ArrayExpr  *array = (ArrayExpr *) features;
	ListCell   *lc;
	int			k = 0;

	if (IsA(features, RowExpr) && ((RowExpr *) features)->row_typeid != RECORDOID)
	{
		call->direct_row = (RowExpr *) features;
		return;
	}
	if (!IsA(features, ArrayExpr) || array->multidims ||
		(array->element_typeid != FLOAT4OID && array->element_typeid != FLOAT8OID))
		return;
	foreach(lc, array->elements)
	{
		Var		   *var = lfirst(lc);

		if (!IsA(var, Var) || var->varno != OUTER_VAR || var->varattno <= 0 ||
			var->vartype != array->element_typeid)
			return;
	}
	call->direct = palloc(sizeof(AttrNumber) * Max(list_length(array->elements), 1));
	foreach(lc, array->elements)
		call->direct[k++] = ((Var *) lfirst(lc))->varattno;
	call->num_direct = k;
	call->direct_type = array->element_typeid;
}

/*
 * A call on a table's row that batch_plan.c turned into ROW(its columns):
 * match the row type's columns to the model's features, once a run, and
 * note each feature's column of the child (a feature can only be a live
 * column, which is a Var)
 */
static void
BatchMatchRow(BatchState *node, BatchCall *call)
{
	const Forest *forest = call->version->header;
	MemoryContext old = MemoryContextSwitchTo(node->run_cxt);
	TupleDesc	desc = lookup_rowtype_tupdesc_copy(call->direct_row->row_typeid, -1);
	int		   *columns = FeaturesMatchRow(desc, format_type_be(call->direct_row->row_typeid),
										   forest, call->model_name);

	call->columns = palloc(sizeof(AttrNumber) * Max(forest->num_features, 1));
	call->column_types = palloc(sizeof(Oid) * Max(forest->num_features, 1));
	for (int32 i = 0; i < forest->num_features; i++)
	{
		Var		   *var = list_nth(call->direct_row->args, columns[i]);

		call->columns[i] = var->varattno;
		call->column_types[i] = TupleDescAttr(desc, columns[i])->atttypid;
	}
	MemoryContextSwitchTo(old);
}

/*
 * A call on ARRAY[the child's columns] (BatchDirectColumns) as long as the
 * model's features reads them as PredictRowFill reads the array; an array
 * of another length goes the array's way, which reports it
 */
static void
BatchMatchArray(BatchState *node, BatchCall *call)
{
	if (call->num_direct != call->version->header->num_features)
		return;
	call->columns = call->direct;
	call->column_types = MemoryContextAlloc(node->run_cxt, sizeof(Oid) * Max(call->num_direct, 1));
	for (int i = 0; i < call->num_direct; i++)
		call->column_types[i] = call->direct_type;
}

/* Stop a batch's scoring in flight, without raising: its memory or model is about to go */
static void
BatchRowsGone(void *arg)
{
	BatchRows  *rows = (BatchRows *) arg;

	for (int i = 0; i < rows->num_calls; i++)
		ScoreBatchAbandon(&rows->calls[i].task);
}

/* Set up a batch's room: per call, its results and which rows were scored */
static void
BatchRowsInit(BatchState *node, BatchRows *rows)
{
	rows->cxt = AllocSetContextCreate(CurrentMemoryContext, "silvan batch", ALLOCSET_DEFAULT_SIZES);
	rows->num_calls = node->num_calls;
	rows->calls = palloc0(sizeof(BatchCallRows) * Max(node->num_calls, 1));
	for (int i = 0; i < node->num_calls; i++)
	{
		rows->calls[i].results = palloc(sizeof(Datum) * node->capacity);
		rows->calls[i].result_nulls = palloc(sizeof(bool) * node->capacity);
		rows->calls[i].which = palloc(sizeof(int) * node->capacity);
	}
	rows->gone.func = BatchRowsGone;
	rows->gone.arg = rows;
}

/* BeginCustomScan: check EXECUTE, start the child, set up the calls and what the batch keeps */
static void
BatchBegin(CustomScanState *css, EState *estate, int eflags)
{
	BatchState *node = (BatchState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	List	   *outputs = lsecond(cscan->custom_private);
	List	   *funcids = lthird(cscan->custom_private);
	ListCell   *lc;

	node->num_child = intVal(linitial(cscan->custom_private));
	node->num_calls = list_length(outputs);
	node->calls = palloc0(sizeof(BatchCall) * node->num_calls);
	for (int i = 0; i < node->num_calls; i++)
	{
		BatchCall  *call = &node->calls[i];
		AclResult	acl;

		call->output = list_nth_int(outputs, i);
		call->funcid = list_nth_oid(funcids, i);
		acl = pg_proc_aclcheck(call->funcid, GetUserId(), ACL_EXECUTE);
		if (acl != ACLCHECK_OK)
			aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(call->funcid));
		InvokeFunctionExecuteHook(call->funcid);
		call->model = ExecInitExpr(list_nth(cscan->custom_exprs, 2 * i), &css->ss.ps);
		call->features = ExecInitExpr(list_nth(cscan->custom_exprs, 2 * i + 1), &css->ss.ps);
		call->whole_row = type_is_rowtype(exprType(list_nth(cscan->custom_exprs, 2 * i + 1)));
		BatchDirectColumns(call, list_nth(cscan->custom_exprs, 2 * i + 1));
	}
	outerPlanState(node) = ExecInitNode(outerPlan(cscan), estate, eflags);
	node->child_desc = ExecGetResultType(outerPlanState(node));
	node->kept = palloc0(sizeof(bool) * Max(node->num_child, 1));
	foreach(lc, lfourth(cscan->custom_private))
		node->kept[lfirst_int(lc) - 1] = true;
	node->capacity = silvan_batch_calls_size;
	for (int b = 0; b < lengthof(node->batch_rows); b++)
		BatchRowsInit(node, &node->batch_rows[b]);
	node->fill = Min(BATCH_FIRST_ROWS, node->capacity);
}

/* The run's memory goes: release the models' pins */
static void
BatchRunGone(void *arg)
{
	BatchState *node = (BatchState *) arg;

	for (int b = 0; b < lengthof(node->batch_rows); b++)
		BatchRowsGone(&node->batch_rows[b]);
	for (int i = 0; i < node->num_calls; i++)
	{
		if (node->calls[i].version != NULL)
			ModelVersionUnpin(node->calls[i].version);
		node->calls[i].version = NULL;
		node->calls[i].row_map = NULL;
		node->calls[i].columns = NULL;
	}
	node->run_cxt = NULL;
}

/*
 * The batch size whose code scores a call's batches: the node's, unless a
 * schedule stored for it adds trees out of order; then a scalar call's
 */
static int32
BatchCodeSize(ModelVersion *version, int32 batch_size)
{
	const char *target = SilvanBatchTarget(batch_size);
	const StoredSchedule *stored = ModelVersionStoredSchedule(version, batch_size, target);
	Schedule	schedule;
	SilvanStatus status;

	if (stored == NULL || stored == ModelVersionStoredSchedule(version, 1, target))
		return batch_size;
	if (!ScheduleParse(stored->text, &schedule, &status) || ScheduleReordersSums(&schedule))
		return 1;
	return batch_size;
}

/* Does a call, with this run's model, read its features from the child's columns (or nothing)? */
static bool
BatchCallReadsColumns(const BatchCall *call)
{
	return call->version == NULL || call->columns != NULL;
}

/*
 * How this run keeps its batches: the kept columns when every call reads
 * the child's columns (read_as_fetched), else copies of the rows; and the
 * child's columns read of each row
 */
static void
BatchChooseKeeping(BatchState *node)
{
	MemoryContext query_cxt = node->css.ss.ps.state->es_query_cxt;

	node->read_as_fetched = true;
	node->last_read = 0;
	for (int c = 0; c < node->num_child; c++)
		if (node->kept[c])
			node->last_read = c + 1;
	for (int i = 0; i < node->num_calls; i++)
	{
		BatchCall  *call = &node->calls[i];

		if (!BatchCallReadsColumns(call))
			node->read_as_fetched = false;
		if (call->columns == NULL)
			continue;
		for (int k = 0; k < call->version->header->num_features; k++)
			node->last_read = Max(node->last_read, call->columns[k]);
	}
	node->heap_desc = NULL;
	for (int b = 0; b < lengthof(node->batch_rows); b++)
	{
		BatchRows  *rows = &node->batch_rows[b];
		size_t		cells = (size_t) node->capacity * Max(node->num_child, 1);

		if (node->read_as_fetched && rows->kept_values == NULL)
		{
			rows->kept_values = MemoryContextAllocZero(query_cxt, sizeof(Datum) * cells);
			rows->kept_nulls = MemoryContextAlloc(query_cxt, sizeof(bool) * cells);
			memset(rows->kept_nulls, true, sizeof(bool) * cells);
		}
		if (!node->read_as_fetched && rows->copies == NULL)
		{
			rows->copies = MemoryContextAlloc(query_cxt, sizeof(TupleTableSlot *) * node->capacity);
			for (int r = 0; r < node->capacity; r++)
				rows->copies[r] = MakeSingleTupleTableSlot(node->child_desc, &TTSOpsMinimalTuple);
		}
	}
}

/* Look up and pin each call's model for this run, as the caller, and choose how to keep rows */
static void
BatchOpenRun(BatchState *node)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	MemoryContextCallback *callback;

	node->run_cxt = AllocSetContextCreate(node->css.ss.ps.state->es_query_cxt,
										  "silvan batch run", ALLOCSET_SMALL_SIZES);
	callback = MemoryContextAlloc(node->run_cxt, sizeof(MemoryContextCallback));
	callback->func = BatchRunGone;
	callback->arg = node;
	MemoryContextRegisterResetCallback(node->run_cxt, callback);
	for (int i = 0; i < node->num_calls; i++)
	{
		BatchCall  *call = &node->calls[i];
		bool		isnull;
		Datum		name = ExecEvalExpr(call->model, econtext, &isnull);

		if (isnull)
			continue;			/* every row gets NULL, as the strict function gives */
		call->model_name = MemoryContextStrdup(node->run_cxt, TextDatumGetCString(name));
		call->version = ModelCacheLookup(call->model_name);
		ModelVersionPin(call->version);
		ScoreCheckOutput(call->version, call->output, call->model_name);
		call->code_batch = BatchCodeSize(call->version, node->capacity);
		if (call->direct_row != NULL)
			BatchMatchRow(node, call);
		else if (call->direct != NULL)
			BatchMatchArray(node, call);
	}
	BatchChooseKeeping(node);
	/* in a parallel plan each participant scores its share on its own thread */
	node->pipelined = RuntimeMaxThreads() > 1 && !node->css.ss.ps.plan->parallel_aware;
}

/* Start a batch of up to node->fill rows: each call's room for their features */
static void
BatchStartRows(BatchState *node, BatchRows *rows)
{
	for (int i = 0; i < node->num_calls; i++)
	{
		BatchCall  *call = &node->calls[i];
		Forest	   *forest;

		rows->calls[i].num_scored = 0;
		if (call->version == NULL)
			continue;
		forest = call->version->header;
		rows->calls[i].features = MemoryContextAlloc(rows->cxt, (size_t) forest->num_features *
													 ForestValueSize(forest) * node->fill);
	}
}

/*
 * Where a row's columns are read: the slot's deformed values, or the data
 * of a heap tuple without NULLs at the layout's offsets (BatchHeapData)
 */
typedef struct BatchRowView
{
	TupleTableSlot *slot;
	const char *data;
	const int32 *offsets;
}			BatchRowView;

/* Column attno of a row */
static inline Datum
BatchColumn(const BatchRowView *view, AttrNumber attno, bool *isnull)
{
	Form_pg_attribute att;

	if (view->data == NULL)
	{
		*isnull = view->slot->tts_isnull[attno - 1];
		return view->slot->tts_values[attno - 1];
	}
	att = TupleDescAttr(view->slot->tts_tupleDescriptor, attno - 1);
	*isnull = false;
	return fetch_att(view->data + view->offsets[attno - 1], att->attbyval, att->attlen);
}

/*
 * Have the child's heap tuples of this descriptor fixed offsets for the
 * columns read (last_read), of the child's types?  Note them, and which
 * calls' features lie in the tuple as the model stores them (in_place).
 */
static bool
BatchHeapLayout(BatchState *node, TupleDesc desc)
{
	int32		offset = 0;

	if (desc->natts < node->last_read)
		return false;
	if (node->heap_offsets == NULL)
		node->heap_offsets = MemoryContextAlloc(node->css.ss.ps.state->es_query_cxt,
												sizeof(int32) * Max(node->num_child, 1));
	for (int a = 0; a < node->last_read; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped || att->attlen <= 0 ||
			att->atttypid != TupleDescAttr(node->child_desc, a)->atttypid)
			return false;
		offset = att_align_nominal(offset, att->attalign);
		node->heap_offsets[a] = offset;
		offset += att->attlen;
	}
	for (int i = 0; i < node->num_calls; i++)
	{
		BatchCall  *call = &node->calls[i];
		const Forest *forest = call->version ? call->version->header : NULL;
		Oid			model_type;

		call->in_place = forest != NULL && call->columns != NULL;
		if (!call->in_place)
			continue;
		model_type = forest->precision == FOREST_FLOAT32 ? FLOAT4OID : FLOAT8OID;
		for (int k = 0; k < forest->num_features && call->in_place; k++)
			call->in_place = call->column_types[k] == model_type &&
				node->heap_offsets[call->columns[k] - 1] ==
				node->heap_offsets[call->columns[0] - 1] + k * (int) ForestValueSize(forest);
	}
	return true;
}

/* The data of a child's row to read in place, or NULL: the slot must be deformed */
static const char *
BatchHeapData(BatchState *node, TupleTableSlot *slot)
{
	HeapTuple	tuple;

	if (!TTS_IS_BUFFERTUPLE(slot) && !TTS_IS_HEAPTUPLE(slot))
		return NULL;
	if (slot->tts_tupleDescriptor != node->heap_desc)
	{
		node->heap_desc = slot->tts_tupleDescriptor;
		node->heap_layout = BatchHeapLayout(node, node->heap_desc);
	}
	tuple = ((HeapTupleTableSlot *) slot)->tuple;
	if (!node->heap_layout || tuple == NULL || HeapTupleHasNulls(tuple) ||
		HeapTupleHeaderGetNatts(tuple->t_data) < node->last_read)
		return NULL;
	return (const char *) tuple->t_data + tuple->t_data->t_hoff;
}

/* Put batch row r's features for a call that reads the child's columns (BatchCallReadsColumns) */
static void
BatchReadRow(const BatchCall *call, BatchCallRows *part, const BatchRowView *view, int r)
{
	const Forest *forest;
	char	   *row;
	size_t		row_bytes;

	if (call->version == NULL)
	{
		part->result_nulls[r] = true;
		return;
	}
	forest = call->version->header;
	row_bytes = (size_t) forest->num_features * ForestValueSize(forest);
	row = part->features + part->num_scored * row_bytes;
	if (view->data != NULL && call->in_place)
		memcpy(row, view->data + view->offsets[call->columns[0] - 1], row_bytes);
	else
		for (int32 i = 0; i < forest->num_features; i++)
		{
			bool		isnull;
			Datum		value = BatchColumn(view, call->columns[i], &isnull);

			FeaturePut(forest, row, i, value, isnull, call->column_types[i]);
		}
	part->result_nulls[r] = false;
	part->which[part->num_scored++] = r;
}

/* Take the child's next row into the batch: its features and kept columns, or a copy */
static void
BatchTakeRow(BatchState *node, BatchRows *rows, TupleTableSlot *slot)
{
	int			r = rows->num_rows++;
	BatchRowView view = {slot, NULL, NULL};
	Datum	   *values;
	bool	   *nulls;

	if (!node->read_as_fetched)
	{
		ExecCopySlot(rows->copies[r], slot);
		return;
	}
	values = rows->kept_values + (size_t) r * node->num_child;
	nulls = rows->kept_nulls + (size_t) r * node->num_child;
	view.data = BatchHeapData(node, slot);
	view.offsets = node->heap_offsets;
	if (view.data == NULL)
		slot_getsomeattrs(slot, node->last_read);
	for (int i = 0; i < node->num_calls; i++)
		BatchReadRow(&node->calls[i], &rows->calls[i], &view, r);
	for (int c = 0; c < node->num_child; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(node->child_desc, c);

		if (!node->kept[c])
			continue;
		values[c] = BatchColumn(&view, c + 1, &nulls[c]);
		if (!nulls[c] && !attr->attbyval)
			values[c] = datumCopy(values[c], false, attr->attlen);
	}
}

/* Put a call's features of the batch's copied rows (not read_as_fetched) */
static void
BatchReadCopies(BatchState *node, BatchRows *rows, int i)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	BatchCall  *call = &node->calls[i];
	BatchCallRows *part = &rows->calls[i];
	Forest	   *forest = call->version->header;
	size_t		row_bytes = (size_t) forest->num_features * ForestValueSize(forest);

	for (int r = 0; r < rows->num_rows; r++)
	{
		bool		isnull;
		Datum		features;

		if (BatchCallReadsColumns(call))
		{
			BatchRowView view = {rows->copies[r], NULL, NULL};

			slot_getallattrs(rows->copies[r]);
			BatchReadRow(call, part, &view, r);
			continue;
		}
		econtext->ecxt_outertuple = rows->copies[r];
		features = ExecEvalExpr(call->features, econtext, &isnull);
		part->result_nulls[r] = isnull;
		if (isnull)
			continue;
		if (call->whole_row)
			PredictRowFromComposite(DatumGetHeapTupleHeader(features), forest, call->model_name,
									&call->row_map, node->run_cxt,
									part->features + part->num_scored * row_bytes);
		else
			PredictRowFill(DatumGetArrayTypeP(features), forest, call->model_name,
						   part->features + part->num_scored * row_bytes);
		part->which[part->num_scored++] = r;
	}
}

/*
 * Score a batch's rows on this thread alone when it is smaller than
 * BATCH_THREADED_ROWS: handing a part of a batch this small to a second
 * thread and waiting for it costs more than the part (docs/benchmarks.md)
 */
static void
BatchScoreRows(BatchCall *call, const char *rows, int n, void *acc, double *margins)
{
	int			threads = RuntimeMaxThreads();

	if (n >= BATCH_THREADED_ROWS || threads == 1)
	{
		ScoreBatch(call->version, call->code_batch, rows, n, acc, margins, false);
		return;
	}
	RuntimeSetMaxThreads(1);
	PG_TRY();
	{
		ScoreBatch(call->version, call->code_batch, rows, n, acc, margins, false);
	}
	PG_FINALLY();
	{
		RuntimeSetMaxThreads(threads);
	}
	PG_END_TRY();
}

/*
 * Score a batch: each call's features (evaluated now over copied rows)
 * started on the pipeline thread when pipelined, else scored here
 */
static void
BatchStartScoring(BatchState *node, BatchRows *rows)
{
	MemoryContext old = MemoryContextSwitchTo(rows->cxt);

	for (int i = 0; i < node->num_calls; i++)
	{
		BatchCall  *call = &node->calls[i];
		BatchCallRows *part = &rows->calls[i];
		Forest	   *forest;

		if (call->version == NULL)
		{
			memset(part->result_nulls, true, sizeof(bool) * rows->num_rows);
			continue;
		}
		if (!node->read_as_fetched)
			BatchReadCopies(node, rows, i);
		if (part->num_scored == 0)
			continue;
		forest = call->version->header;
		part->margins = palloc(sizeof(double) * part->num_scored * forest->num_groups);
		part->acc = palloc(ForestValueSize(forest) * part->num_scored * forest->num_groups);
		if (node->pipelined)
			ScoreBatchStart(&part->task, call->version, call->code_batch, part->features,
							part->num_scored, part->acc, part->margins, false, NULL);
		else
			BatchScoreRows(call, part->features, part->num_scored, part->acc, part->margins);
		node->rows_scored += part->num_scored;
	}
	node->batches++;
	MemoryContextSwitchTo(old);
}

/* Wait for a batch's scoring, and keep each row's results */
static void
BatchFinishScoring(BatchState *node, BatchRows *rows)
{
	MemoryContext old = MemoryContextSwitchTo(rows->cxt);

	for (int i = 0; i < node->num_calls; i++)
	{
		BatchCall  *call = &node->calls[i];
		BatchCallRows *part = &rows->calls[i];
		double	   *scratch;

		if (call->version == NULL || part->num_scored == 0)
			continue;
		ScoreBatchFinish(&part->task);
		scratch = palloc(sizeof(double) * ForestOutputWidth(call->version->header));
		for (int k = 0; k < part->num_scored; k++)
			part->results[part->which[k]] =
				ScoreResultDatum(call->version, call->output,
								 part->margins + (size_t) k * call->version->header->num_groups,
								 scratch);
	}
	MemoryContextSwitchTo(old);
}

/* Take the next batch of rows from the child into rows (none when it has no more) */
static void
BatchFillRows(BatchState *node, BatchRows *rows)
{
	PlanState  *child = outerPlanState(node);
	MemoryContext old;

	MemoryContextReset(rows->cxt);
	MemoryContextRegisterResetCallback(rows->cxt, &rows->gone);
	rows->num_rows = 0;
	while (!node->child_done && rows->num_rows < node->fill)
	{
		TupleTableSlot *slot = ExecProcNode(child);

		if (TupIsNull(slot))
		{
			node->child_done = true;
			break;
		}
		if (node->run_cxt == NULL)
			BatchOpenRun(node);
		if (rows->num_rows == 0)
			BatchStartRows(node, rows);
		old = MemoryContextSwitchTo(rows->cxt);
		BatchTakeRow(node, rows, slot);
		MemoryContextSwitchTo(old);
	}
	node->fill = Min(node->fill * 2, node->capacity);
}

/*
 * Make the next scored batch current; false when the child has no more
 * rows.  Pipelined, the batch ahead is scored on the pipeline thread while
 * the backend takes the next one from the child and then hands on the
 * rows of the one before.
 */
static bool
BatchAdvance(BatchState *node)
{
	ScoreCosts	mark;
	bool		found = false;

	ScoreCostsMark(&mark);
	node->current = NULL;
	node->next_row = 0;
	while (!found && !node->child_done)
	{
		BatchRows  *spare = node->ahead == &node->batch_rows[0] ? &node->batch_rows[1] : &node->batch_rows[0];
		BatchRows  *scored = node->ahead;

		BatchFillRows(node, spare);
		if (spare->num_rows == 0)
			break;
		if (!node->pipelined)
		{
			BatchStartScoring(node, spare);
			BatchFinishScoring(node, spare);
			node->current = spare;
			found = true;
			continue;
		}
		/* one batch at a time on the pipeline thread: the one before ends first */
		if (scored != NULL)
			BatchFinishScoring(node, scored);
		BatchStartScoring(node, spare);
		node->ahead = spare;
		node->current = scored;
		found = scored != NULL;
	}
	if (!found && node->ahead != NULL)
	{
		BatchFinishScoring(node, node->ahead);
		node->current = node->ahead;
		node->ahead = NULL;
		found = true;
	}
	ScoreCostsAdd(&node->costs, &mark);
	return found;
}

/* The scan tuple of batch row r: the child's columns, then the calls' results */
static TupleTableSlot *
BatchScanTuple(BatchState *node, BatchRows *rows, int r)
{
	TupleTableSlot *scan = node->css.ss.ss_ScanTupleSlot;

	ExecClearTuple(scan);
	if (node->read_as_fetched)
	{
		memcpy(scan->tts_values, rows->kept_values + (size_t) r * node->num_child,
			   sizeof(Datum) * node->num_child);
		memcpy(scan->tts_isnull, rows->kept_nulls + (size_t) r * node->num_child,
			   sizeof(bool) * node->num_child);
	}
	else
	{
		TupleTableSlot *row = rows->copies[r];

		slot_getallattrs(row);
		memcpy(scan->tts_values, row->tts_values, sizeof(Datum) * node->num_child);
		memcpy(scan->tts_isnull, row->tts_isnull, sizeof(bool) * node->num_child);
	}
	for (int i = 0; i < node->num_calls; i++)
	{
		scan->tts_values[node->num_child + i] = rows->calls[i].results[r];
		scan->tts_isnull[node->num_child + i] = rows->calls[i].result_nulls[r];
	}
	return ExecStoreVirtualTuple(scan);
}

/* ExecCustomScan: the next row of the batch that passes the filter, projected */
static TupleTableSlot *
BatchExec(CustomScanState *css)
{
	BatchState *node = (BatchState *) css;
	ExprContext *econtext = css->ss.ps.ps_ExprContext;
	ExprState  *qual = css->ss.ps.qual;
	ProjectionInfo *project = css->ss.ps.ps_ProjInfo;

	for (;;)
	{
		TupleTableSlot *scan;

		if (node->current == NULL || node->next_row >= node->current->num_rows)
		{
			if (!BatchAdvance(node))
				return NULL;
			continue;
		}
		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		scan = BatchScanTuple(node, node->current, node->next_row++);
		econtext->ecxt_scantuple = scan;
		if (qual != NULL && !ExecQual(qual, econtext))
		{
			InstrCountFiltered1(node, 1);
			continue;
		}
		return project ? ExecProject(project) : scan;
	}
}

/* Forget the batch and the run: the next row starts again */
static void
BatchReset(BatchState *node)
{
	/* (each batch's scoring in flight is stopped before its memory goes) */
	for (int b = 0; b < lengthof(node->batch_rows); b++)
	{
		MemoryContextReset(node->batch_rows[b].cxt);
		node->batch_rows[b].num_rows = 0;
	}
	if (node->run_cxt != NULL)
		MemoryContextDelete(node->run_cxt);
	node->current = NULL;
	node->ahead = NULL;
	node->next_row = 0;
	node->child_done = false;
	node->fill = Min(BATCH_FIRST_ROWS, node->capacity);
}

/* EndCustomScan */
static void
BatchEnd(CustomScanState *css)
{
	BatchState *node = (BatchState *) css;

	BatchReset(node);
	for (int b = 0; b < lengthof(node->batch_rows); b++)
		for (int r = 0; node->batch_rows[b].copies != NULL && r < node->capacity; r++)
			ExecDropSingleTupleTableSlot(node->batch_rows[b].copies[r]);
	ExecEndNode(outerPlanState(node));
}

/* ReScanCustomScan: a new run; the child is rescanned unless a parameter change will do it */
static void
BatchRescan(CustomScanState *css)
{
	BatchState *node = (BatchState *) css;

	BatchReset(node);
	if (outerPlanState(node)->chgParam == NULL)
		ExecReScan(outerPlanState(node));
}

/*
 * ExplainCustomScan: the calls and the batch size; after a run, rows
 * scored, batches, and how the code was had and how long it ran
 */
static void
BatchExplain(CustomScanState *css, List *ancestors, ExplainState *es)
{
	BatchState *node = (BatchState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, css->ss.ps.plan, ancestors);
	ListCell   *lc;
	int			i = 0;

	foreach(lc, cscan->custom_scan_tlist)
		if (++i > node->num_child)
			ExplainPropertyText("Call",
								deparse_expression((Node *) ((TargetEntry *) lfirst(lc))->expr,
												   context, false, false), es);
	ExplainPropertyInteger("Batch Size", NULL, node->capacity, es);
	if (es->analyze)
	{
		ScoreCosts	costs = node->costs;

		if (node->batches > 0)
			ExplainPropertyBool("Pipelined", node->pipelined, es);

		ExplainPropertyInteger("Rows Scored", NULL, node->rows_scored + node->worker_rows, es);
		ExplainPropertyInteger("Batches", NULL, node->batches + node->worker_batches, es);
		costs.scoring_ms += node->worker_scoring_ms;
		if (node->batches > 0)
			ScoreCostsExplain(&costs, es);
		else if (node->worker_batches > 0 && es->timing)
			ExplainPropertyFloat("Scoring Time", "ms", costs.scoring_ms, 3, es);
	}
}

/* ---- Parallel plans ---- */

/* EstimateDSMCustomScan: the workers' counts */
static Size
BatchEstimateDSM(CustomScanState *css, ParallelContext *pcxt)
{
	return sizeof(BatchShared);
}

/* InitializeDSMCustomScan (the leader) */
static void
BatchInitializeDSM(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	BatchShared *shared = coordinate;

	pg_atomic_init_u64(&shared->rows_scored, 0);
	pg_atomic_init_u64(&shared->batches, 0);
	pg_atomic_init_u64(&shared->scoring_us, 0);
	((BatchState *) css)->shared = shared;
}

/* InitializeWorkerCustomScan */
static void
BatchInitializeWorker(CustomScanState *css, shm_toc *toc, void *coordinate)
{
	((BatchState *) css)->shared = coordinate;
}

/*
 * ShutdownCustomScan, while the shared memory is there: a worker adds
 * what it scored (before the leader sees its end), the leader reads back
 * all the workers' (counted over every rescan's workers)
 */
static void
BatchShutdown(CustomScanState *css)
{
	BatchState *node = (BatchState *) css;

	if (node->shared == NULL)
		return;
	if (IsParallelWorker())
	{
		pg_atomic_add_fetch_u64(&node->shared->rows_scored, node->rows_scored);
		pg_atomic_add_fetch_u64(&node->shared->batches, node->batches);
		pg_atomic_add_fetch_u64(&node->shared->scoring_us, (uint64) (node->costs.scoring_ms * 1000));
	}
	else
	{
		node->worker_rows = pg_atomic_read_u64(&node->shared->rows_scored);
		node->worker_batches = pg_atomic_read_u64(&node->shared->batches);
		node->worker_scoring_ms = pg_atomic_read_u64(&node->shared->scoring_us) / 1000.0;
	}
	node->shared = NULL;
}

/* Register the node's methods (from BatchPlanInit) */
void
BatchNodeRegister(void)
{
	batch_plan_methods.CustomName = BATCH_NAME;
	batch_plan_methods.CreateCustomScanState = BatchCreateState;
	batch_exec_methods.CustomName = BATCH_NAME;
	batch_exec_methods.BeginCustomScan = BatchBegin;
	batch_exec_methods.ExecCustomScan = BatchExec;
	batch_exec_methods.EndCustomScan = BatchEnd;
	batch_exec_methods.ReScanCustomScan = BatchRescan;
	batch_exec_methods.ExplainCustomScan = BatchExplain;
	batch_exec_methods.EstimateDSMCustomScan = BatchEstimateDSM;
	batch_exec_methods.InitializeDSMCustomScan = BatchInitializeDSM;
	batch_exec_methods.InitializeWorkerCustomScan = BatchInitializeWorker;
	batch_exec_methods.ShutdownCustomScan = BatchShutdown;
	RegisterCustomScanMethods(&batch_plan_methods);
}
