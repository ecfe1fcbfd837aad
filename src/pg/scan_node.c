/*
 * scan_node.c
 *		A custom scan that streams predict_table's results: "Custom Scan
 *		(SilvanPredict)".
 *
 * A set-returning function in FROM is materialized: PostgreSQL calls
 * predict_table once, which scores the whole source into a tuplestore,
 * and only then reads the results back out of it.  On a small model that
 * tuplestore (a copy of every result row, and the fresh pages it is
 * written to) costs about as much as the scoring; and a LIMIT scores the
 * whole table before it stops.
 *
 * So the planner hook below replaces the function scan of a call to
 * predict_table, predict_proba_table or predict_raw_table (the C functions
 * of this library, alone in their FROM item, without ORDINALITY or LATERAL
 * references, and with silvan.stream_scans on) by this node.  The node
 * evaluates the call's arguments when first asked for a row, plans the
 * same source query the function would (scan.c), and runs it itself, a
 * batch of rows at a time, into the same batches; it returns each scored
 * batch's results one row at a time straight from the batch, and reads the
 * next batch only when they are out.  With silvan.max_threads > 1 the
 * batch after it is being scored on the pipeline thread meanwhile.  A
 * LIMIT stops it at the batch it needs.
 *
 * What the function checks, the node checks: EXECUTE on the function
 * (when the plan starts, as the executor does for a function scan), the
 * arguments, and the caller's rights on the source (the source query runs
 * as the caller, with row-level security, as any query).  Everything a
 * run holds (the model's pin, the batch in flight, the source's executor)
 * lives in one memory context whose reset callback stops the batch in
 * flight: an error anywhere in the query, the node's own or not, deletes
 * it before the batches' memory goes.
 *
 * Calls the hook does not see (the first in a session that has not loaded
 * the library yet: see shared_preload_libraries in the README) run as the
 * function, with the same results.
 */
#include "scan.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/plancat.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#define PREDICT_SCAN_NAME	"SilvanPredict"
/* predict_table(model, source, key_column, feature_columns, batch_size) */
#define PREDICT_TABLE_NARGS	5

bool		silvan_stream_scans = true;

/* The C functions the node replaces, and what each returns per row */
static const struct
{
	const char *symbol;
	ScoreOutput output;
}			predict_scan_functions[] =
{
	{"silvan_predict_table", SCORE_PREDICT},
	{"silvan_predict_proba_table", SCORE_PROBA},
	{"silvan_predict_raw_table", SCORE_RAW},
};

typedef struct PredictScanState
{
	CustomScanState css;
	ScoreOutput output;
	List	   *args;			/* ExprState of each argument of the call */
	MemoryContext run_cxt;		/* this run: its BatchScan, batches and source */
	BatchScan  *scan;			/* NULL until the first row is asked for */
	QueryDesc  *source;			/* the source query, run a batch at a time */
	bool		source_done;
	int			next_row;		/* in the oldest ready batch */
	int64		rows_scored;	/* by earlier runs (rescans), for EXPLAIN ANALYZE */
} PredictScanState;

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static CustomPathMethods predict_path_methods;
static CustomScanMethods predict_plan_methods;
static CustomExecMethods predict_exec_methods;

/* ---- Planning ---- */

/*
 * What a function returns per row when it is one of this library's
 * predict_*_table functions as installed (no SET clause, not SECURITY
 * DEFINER); -1 for any other function
 */
static int
PredictScanFunction(Oid funcid)
{
	char	   *symbol = SilvanFunctionSymbol(funcid, PREDICT_TABLE_NARGS, true);

	if (symbol != NULL)
		for (int i = 0; i < lengthof(predict_scan_functions); i++)
			if (strcmp(symbol, predict_scan_functions[i].symbol) == 0)
				return predict_scan_functions[i].output;
	return -1;
}

/* Does the query want the function's row as a whole (a whole-row Var) or a system column? */
static bool
PredictScanWantsWholeRow(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->reltarget->exprs)
	{
		Node	   *expr = lfirst(lc);

		if (!IsA(expr, Var) || ((Var *) expr)->varattno <= 0)
			return true;
	}
	return false;
}

/*
 * The rows a scan of relid returns, from its statistics, as the planner
 * estimates a scan of it (its current size times the density ANALYZE or
 * VACUUM measured); -1 when it has no storage of its own and no count
 */
static double
PredictScanSourceRows(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	char		relkind;
	double		rows;

	if (!HeapTupleIsValid(tuple))
		return -1;
	form = (Form_pg_class) GETSTRUCT(tuple);
	relkind = form->relkind;
	rows = form->reltuples;
	ReleaseSysCache(tuple);
	if (relkind == RELKIND_RELATION || relkind == RELKIND_MATVIEW)
	{
		Relation	rel = try_relation_open(relid, AccessShareLock);
		BlockNumber pages;
		double		allvisfrac;

		if (rel == NULL)
			return -1;
		estimate_rel_size(rel, NULL, &pages, &rows, &allvisfrac);
		relation_close(rel, AccessShareLock);
	}
	return rows;
}

PG_FUNCTION_INFO_V1(silvan_predict_table_support);

/*
 * The planner support function of predict_table and its variants: one
 * row per row of the source, when the source is a constant (a table,
 * view or materialized view with statistics); else the function's ROWS
 */
Datum
silvan_predict_table_support(PG_FUNCTION_ARGS)
{
	Node	   *request = (Node *) PG_GETARG_POINTER(0);
	SupportRequestRows *rows_request;
	Node	   *source;
	double		rows;

	if (!IsA(request, SupportRequestRows))
		PG_RETURN_POINTER(NULL);
	rows_request = (SupportRequestRows *) request;
	if (!is_funcclause(rows_request->node) ||
		list_length(((FuncExpr *) rows_request->node)->args) != PREDICT_TABLE_NARGS)
		PG_RETURN_POINTER(NULL);
	source = lsecond(((FuncExpr *) rows_request->node)->args);
	if (rows_request->root != NULL)
		source = estimate_expression_value(rows_request->root, source);
	if (!IsA(source, Const) || ((Const *) source)->constisnull ||
		(rows = PredictScanSourceRows(DatumGetObjectId(((Const *) source)->constvalue))) < 0)
		PG_RETURN_POINTER(NULL);
	rows_request->rows = Max(rows, 1);
	PG_RETURN_POINTER(rows_request);
}

/*
 * set_rel_pathlist_hook: a FROM item that is one call of predict_table (or
 * its proba or raw variant) is scanned by the node instead of the function
 */
static void
PredictScanPathHook(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *func;
	CustomPath *path;
	Cost		total = 0;
	ListCell   *lc;
	int			output;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (!silvan_stream_scans || !SilvanTargetIsCpu() || rte->rtekind != RTE_FUNCTION ||
		list_length(rte->functions) != 1 || rte->funcordinality ||
		!bms_is_empty(rel->lateral_relids) || IS_DUMMY_REL(rel) || rel->pathlist == NIL)
		return;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr))
		return;
	func = (FuncExpr *) rtfunc->funcexpr;
	if (list_length(func->args) != PREDICT_TABLE_NARGS || PredictScanWantsWholeRow(rel) ||
		(output = PredictScanFunction(func->funcid)) < 0)
		return;

	foreach(lc, rel->pathlist)
		total = Max(total, ((Path *) lfirst(lc))->total_cost);
	path = makeNode(CustomPath);
	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.rows = rel->rows;
	/* rows come as batches are scored, and nothing is materialized */
	path->path.startup_cost = 0;
	path->path.total_cost = total;
	path->custom_private = list_make1(makeInteger(output));
	path->methods = &predict_path_methods;
	rel->pathlist = NIL;
	add_path(rel, &path->path);
}

/*
 * The node's scan tuple: the function's result columns, as Vars of its
 * range table entry
 */
static List *
PredictScanTupleList(Index relid, FuncExpr *func)
{
	TupleDesc	desc = get_expr_result_tupdesc((Node *) func, false);
	List	   *tlist = NIL;

	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		Var		   *var = makeVar(relid, a + 1, att->atttypid, att->atttypmod,
								  att->attcollation, 0);

		tlist = lappend(tlist, makeTargetEntry((Expr *) var, a + 1,
											   pstrdup(NameStr(att->attname)), false));
	}
	return tlist;
}

/* PlanCustomPath: the CustomScan, carrying the call and its quals */
static Plan *
PredictScanPlan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
				List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	FuncExpr   *func = (FuncExpr *) linitial_node(RangeTblFunction, rte->functions)->funcexpr;

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	/* no relation to open: the scan tuple is described by custom_scan_tlist */
	cscan->scan.scanrelid = 0;
	cscan->custom_scan_tlist = PredictScanTupleList(rel->relid, func);
	cscan->custom_exprs = list_make1(copyObject(func));
	cscan->custom_private = best_path->custom_private;
	cscan->flags = best_path->flags;
	cscan->methods = &predict_plan_methods;
	return &cscan->scan.plan;
}

/* ---- Execution ---- */

/* CreateCustomScanState */
static Node *
PredictScanCreateState(CustomScan *cscan)
{
	PredictScanState *node = palloc0(sizeof(PredictScanState));

	NodeSetTag(node, T_CustomScanState);
	node->css.methods = &predict_exec_methods;
	return (Node *) node;
}

/* BeginCustomScan: check EXECUTE on the function, as a function scan would, and set up the arguments */
static void
PredictScanBegin(CustomScanState *css, EState *estate, int eflags)
{
	PredictScanState *node = (PredictScanState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	FuncExpr   *func = linitial_node(FuncExpr, cscan->custom_exprs);
	AclResult	aclresult = pg_proc_aclcheck(func->funcid, GetUserId(), ACL_EXECUTE);

	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(func->funcid));
	InvokeFunctionExecuteHook(func->funcid);
	node->output = (ScoreOutput) intVal(linitial(cscan->custom_private));
	node->args = ExecInitExprList(func->args, &css->ss.ps);
}

/* Reset callback of a run's context: stop the batch in flight, unpin the model */
static void
PredictScanRunGone(void *arg)
{
	ScanClose((BatchScan *) arg);
}

/* Error context of the source query's planning and running, as SPI's */
static void
PredictScanSourceContext(void *arg)
{
	errcontext("SQL statement \"%s\"", ((BatchScan *) arg)->query);
}

/* Push that context for scan */
static void
PredictScanPushContext(ErrorContextCallback *callback, BatchScan *scan)
{
	callback->callback = PredictScanSourceContext;
	callback->arg = scan;
	callback->previous = error_context_stack;
	error_context_stack = callback;
}

/* Plan the source query and start its executor, its rows going to the scan */
static QueryDesc *
PredictScanStartSource(BatchScan *scan)
{
	ErrorContextCallback context;
	RawStmt    *raw;
	List	   *queries;
	PlannedStmt *plan;
	QueryDesc  *source;

	PredictScanPushContext(&context, scan);
	raw = linitial_node(RawStmt, pg_parse_query(scan->query));
	queries = pg_analyze_and_rewrite_fixedparams(raw, scan->query, NULL, 0, NULL);
	if (list_length(queries) != 1)
		elog(ERROR, "source query of model \"%s\" was rewritten into %d queries",
			 scan->model_name, list_length(queries));
	plan = pg_plan_query(linitial_node(Query, queries), scan->query, 0, NULL);
	source = CreateQueryDesc(plan, scan->query, GetActiveSnapshot(), InvalidSnapshot,
							 &scan->pub, NULL, NULL, 0);
	ExecutorStart(source, 0);
	error_context_stack = context.previous;
	return source;
}

/*
 * Start a run: evaluate the call's arguments and check them as the
 * function does, look the model up, and start the source
 */
static void
PredictScanOpen(PredictScanState *node)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	Datum		values[PREDICT_TABLE_NARGS];
	bool		nulls[PREDICT_TABLE_NARGS];
	MemoryContextCallback *callback;
	MemoryContext old;
	ListCell   *lc;
	int			i = 0;
	int			batch_size;

	foreach(lc, node->args)
	{
		values[i] = ExecEvalExpr((ExprState *) lfirst(lc), econtext, &nulls[i]);
		i++;
	}
	ScanCheckTableArgs(nulls[0], nulls[1], nulls[2]);
	batch_size = ScanCheckBatchSize(nulls[4], nulls[4] ? 0 : DatumGetInt32(values[4]));

	node->run_cxt = AllocSetContextCreate(node->css.ss.ps.state->es_query_cxt,
										  "silvan streamed scan", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(node->run_cxt);
	node->scan = ScanStreamOpen(node->output, TextDatumGetCString(values[0]),
								DatumGetObjectId(values[1]), TextDatumGetCString(values[2]),
								nulls[3] ? NULL : DatumGetArrayTypePCopy(values[3]), batch_size);
	callback = palloc0(sizeof(MemoryContextCallback));
	callback->func = PredictScanRunGone;
	callback->arg = node->scan;
	MemoryContextRegisterResetCallback(node->run_cxt, callback);
	ScanStreamStart(node->scan);
	node->source = PredictScanStartSource(node->scan);
	MemoryContextSwitchTo(old);
}

/*
 * End the source query's executor, if it runs.  Ended while the outer
 * query runs (the source is done), its end is nested in that run, as
 * pg_stat_statements counts nesting.  Ended from the outer query's end (a
 * LIMIT stopped it early), it would be counted as a top-level statement
 * of its own, its time twice: the instrumentation statistics hooks keep
 * for it (totaltime) is dropped first, so that none records it.
 */
static void
PredictScanEndSource(PredictScanState *node, bool in_run)
{
	if (node->source == NULL)
		return;
	if (!in_run)
		node->source->totaltime = NULL;
	ExecutorFinish(node->source);
	ExecutorEnd(node->source);
	FreeQueryDesc(node->source);
	node->source = NULL;
}

/* End a run, if one started: stop its batch in flight, end its source, free it all */
static void
PredictScanClose(PredictScanState *node)
{
	if (node->scan != NULL)
	{
		node->rows_scored += node->scan->rows_seen;
		ScanClose(node->scan);
	}
	PredictScanEndSource(node, false);
	if (node->run_cxt != NULL)
		MemoryContextDelete(node->run_cxt);
	node->run_cxt = NULL;
	node->scan = NULL;
	node->source = NULL;
	node->source_done = false;
	node->next_row = 0;
}

/*
 * Read the source until the filling batch is full (then scored, and the
 * batch before it queued) or the source is done (then the rest is scored)
 */
static void
PredictScanFetch(PredictScanState *node)
{
	int			wanted = ScanStreamWanted(node->scan);
	ErrorContextCallback context;
	bool		done;

	PredictScanPushContext(&context, node->scan);
	ExecutorRun(node->source, ForwardScanDirection, wanted, false);
	error_context_stack = context.previous;
	/* (each run counts its own rows in es_processed) */
	done = node->source->estate->es_processed < (uint64) wanted;
	if (done)
	{
		node->source_done = true;
		ScanStreamEnd(node->scan);
		PredictScanEndSource(node, true);
	}
}

/* One result row of a scored batch, its array (if any) in per-tuple memory */
static TupleTableSlot *
PredictScanStore(PredictScanState *node, TupleTableSlot *slot, ScanBuffer *batch, int r)
{
	ExecClearTuple(slot);
	slot->tts_values[0] = batch->keys[r];
	slot->tts_isnull[0] = batch->key_nulls[r];
	slot->tts_isnull[1] = batch->row_nulls[r];
	if (batch->row_nulls[r])
		slot->tts_values[1] = (Datum) 0;
	else if (node->output == SCORE_PREDICT)
		slot->tts_values[1] = ScanResult(node->scan, batch, r);
	else
	{
		MemoryContext old =
			MemoryContextSwitchTo(node->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory);

		slot->tts_values[1] = ScanResult(node->scan, batch, r);
		MemoryContextSwitchTo(old);
	}
	return ExecStoreVirtualTuple(slot);
}

/* ExecScan's access method: the next result row, reading and scoring as needed */
static TupleTableSlot *
PredictScanNext(ScanState *ss)
{
	PredictScanState *node = (PredictScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;

	if (node->scan == NULL)
		PredictScanOpen(node);
	for (;;)
	{
		BatchScan  *scan = node->scan;

		if (scan->num_ready > 0)
		{
			if (node->next_row < scan->ready[0]->num_rows)
				return PredictScanStore(node, slot, scan->ready[0], node->next_row++);
			ScanStreamRelease(scan);
			node->next_row = 0;
			continue;
		}
		if (node->source_done)
			return ExecClearTuple(slot);
		PredictScanFetch(node);
	}
}

/* ExecScan's recheck method: no row is ever fetched again */
static bool
PredictScanRecheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

/* ExecCustomScan */
static TupleTableSlot *
PredictScanExec(CustomScanState *css)
{
	return ExecScan(&css->ss, PredictScanNext, PredictScanRecheck);
}

/* EndCustomScan */
static void
PredictScanEnd(CustomScanState *css)
{
	PredictScanClose((PredictScanState *) css);
}

/* ReScanCustomScan: the next row starts a new run */
static void
PredictScanRescan(CustomScanState *css)
{
	PredictScanClose((PredictScanState *) css);
	ExecScanReScan(&css->ss);
}

/* ExplainCustomScan: the call; after a run, the model, batch size, pipelining and rows scored */
static void
PredictScanExplain(CustomScanState *css, List *ancestors, ExplainState *es)
{
	PredictScanState *node = (PredictScanState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, css->ss.ps.plan, ancestors);

	ExplainPropertyText("Function",
						deparse_expression(linitial(cscan->custom_exprs), context, false, false),
						es);
	if (node->scan != NULL)
	{
		ExplainPropertyText("Model", node->scan->model_name, es);
		ExplainPropertyInteger("Batch Size", NULL, node->scan->batch_size, es);
		ExplainPropertyBool("Pipelined", node->scan->pipelined, es);
	}
	if (es->analyze)
		ExplainPropertyInteger("Rows Scored", NULL,
							   node->rows_scored + (node->scan ? node->scan->rows_seen : 0), es);
}

/* Register the node and install the planner hook (from _PG_init) */
void
ScanNodeInit(void)
{
	DefineCustomBoolVariable("silvan.stream_scans",
							 "Scan predict_table's FROM items with a custom scan that streams results.",
							 "Off: the function materializes all its results before the first is returned.",
							 &silvan_stream_scans, true, PGC_USERSET, 0, NULL, NULL, NULL);

	predict_path_methods.CustomName = PREDICT_SCAN_NAME;
	predict_path_methods.PlanCustomPath = PredictScanPlan;
	predict_plan_methods.CustomName = PREDICT_SCAN_NAME;
	predict_plan_methods.CreateCustomScanState = PredictScanCreateState;
	predict_exec_methods.CustomName = PREDICT_SCAN_NAME;
	predict_exec_methods.BeginCustomScan = PredictScanBegin;
	predict_exec_methods.ExecCustomScan = PredictScanExec;
	predict_exec_methods.EndCustomScan = PredictScanEnd;
	predict_exec_methods.ReScanCustomScan = PredictScanRescan;
	predict_exec_methods.ExplainCustomScan = PredictScanExplain;
	RegisterCustomScanMethods(&predict_plan_methods);

	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = PredictScanPathHook;
}
