/*
 * scan_node.c
 *		A custom scan that streams the table functions' results: "Custom
 *		Scan (SilvanPredict)", parallel-aware over a table.
 *
 * A set-returning function in FROM is materialized: PostgreSQL calls
 * predict_table once, which scores the whole source into a tuplestore,
 * and only then reads the results back out of it.  On a small model that
 * tuplestore (a copy of every result row, and the fresh pages it is
 * written to) costs about as much as the scoring; and a LIMIT scores the
 * whole table before it stops.
 *
 * So the planner hook below replaces the function scan of a call to
 * predict_table or predict_query (or their proba and raw variants: the C
 * functions of this library, alone in their FROM item, without ORDINALITY
 * or LATERAL references, and with silvan.stream_scans on) by this node.
 * The node evaluates the call's arguments when first asked for a row,
 * plans the same source query the function would (scan.c builds
 * predict_table's; predict_query's is its argument, checked to only
 * read), and runs it itself, a batch of rows at a time, into the same
 * batches; it returns each scored batch's results one row at a time
 * straight from the batch, and reads the next batch only when they are
 * out.  With silvan.max_threads > 1 the batch after it is being scored on
 * the pipeline thread meanwhile.  A LIMIT stops it at the batch it needs.
 *
 * Parallel plans: over a table or materialized view (named by a constant,
 * without row-level security) the hook also offers a partial path.  Under
 * a Gather every participant runs the node; the shared state in the
 * query's dynamic shared memory cuts the table's pages into chunks, and
 * each participant claims chunks one at a time and runs the source query
 * limited to the chunk's pages (a TID range scan), into its own batches.
 * Rows a child table holds, or pages added after the cut, fall in the
 * first or last chunk, which are open-ended.  Each worker adds the rows it
 * scored to the shared state before it ends, for the leader's EXPLAIN
 * ANALYZE.
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
 * The functions' planner support functions load silvan when a call is
 * planned, so that even a session's first call is planned with the hook;
 * a call the hook does not take runs as the function, with the same
 * results.
 */
#include "scan.h"

#include "access/htup_details.h"
#include "access/parallel.h"
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
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/plancat.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/snapmgr.h"

#include "silvan/runtime.h"

#define PREDICT_SCAN_NAME	"SilvanPredict"
/* predict_table(model, source, key_column, feature_columns, batch_size) */
#define PREDICT_TABLE_NARGS	5
/* predict_query(model, query, batch_size) AS (key <type>, ...) */
#define PREDICT_QUERY_NARGS	3

bool		silvan_stream_scans = true;

/* The C functions the node replaces, their arguments, and what each returns per row */
static const struct
{
	const char *symbol;
	int			nargs;
	ScoreOutput output;
}			predict_scan_functions[] =
{
	{"silvan_predict_table", PREDICT_TABLE_NARGS, SCORE_PREDICT},
	{"silvan_predict_proba_table", PREDICT_TABLE_NARGS, SCORE_PROBA},
	{"silvan_predict_raw_table", PREDICT_TABLE_NARGS, SCORE_RAW},
	{"silvan_predict_query", PREDICT_QUERY_NARGS, SCORE_PREDICT},
	{"silvan_predict_proba_query", PREDICT_QUERY_NARGS, SCORE_PROBA},
	{"silvan_predict_raw_query", PREDICT_QUERY_NARGS, SCORE_RAW},
};

typedef struct PredictScanState
{
	CustomScanState css;
	ScoreOutput output;
	bool		query_source;	/* predict_query's: the source is the query argument */
	List	   *args;			/* ExprState of each argument of the call */
	MemoryContext run_cxt;		/* this run: its BatchScan, batches and source */
	BatchScan  *scan;			/* NULL until the first row is asked for */
	QueryDesc  *source;			/* the source query, run a batch at a time */
	ScanHeapReader *heap_reader;	/* or its table read a page at a time */
	bool		heap_read;		/* a run read its table a page at a time (EXPLAIN) */
	bool		source_done;
	int			next_row;		/* in the oldest ready batch */
	int64		rows_scored;	/* by earlier runs (rescans), for EXPLAIN ANALYZE */
	ScoreCosts	costs;			/* of earlier runs: how the code was had, how long it ran */
	/* a parallel scan: the source's pages, claimed a chunk at a time */
	struct PredictScanShared *shared;	/* NULL: the whole source, alone */
	bool		rows_reported;	/* a worker's rows are added to shared's */
	int			saved_threads;	/* silvan's thread cap before a parallel run lowered it */
	int64		worker_rows;	/* the workers', read back by the leader */
	double		worker_scoring_ms;	/* and the time their code ran */
	/* a projection of plain result columns, done by PredictScanExec itself */
	bool		direct;			/* rows go up without ExecScan */
	int			num_projected;	/* output columns, when projecting */
	AttrNumber *projected;		/* the result column (0 or 1) of each */
} PredictScanState;

/*
 * A parallel scan's shared state, in the query's dynamic shared memory:
 * the source table's pages in num_chunks ranges of chunk_blocks, the
 * first open below and the last above (rows a child table or a later
 * page holds go to them), each claimed by one participant
 */
typedef struct PredictScanShared
{
	Oid			relid;
	uint32		num_chunks;
	BlockNumber chunk_blocks;
	pg_atomic_uint32 next_chunk;
	pg_atomic_uint64 rows_scored;	/* by the workers, as each shuts down */
	pg_atomic_uint64 scoring_us;	/* the time their code ran */
} PredictScanShared;

/*
 * Chunks a parallel scan's source is cut into, at most: enough that the
 * participants finish close together, few enough that planning each
 * chunk's query costs nothing next to scoring its rows
 */
#define PREDICT_SCAN_CHUNKS		32

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static CustomPathMethods predict_path_methods;
static CustomScanMethods predict_plan_methods;
static CustomExecMethods predict_exec_methods;

/* ---- Planning ---- */

/*
 * What a call returns per row when it calls one of this library's
 * predict_*_table or predict_*_query functions as installed (no SET
 * clause, not SECURITY DEFINER); -1 for any other function
 */
static int
PredictScanFunction(FuncExpr *func)
{
	int			nargs = list_length(func->args);
	char	   *symbol;

	if (nargs != PREDICT_TABLE_NARGS && nargs != PREDICT_QUERY_NARGS)
		return -1;
	symbol = SilvanFunctionSymbol(func->funcid, nargs, true);
	if (symbol != NULL)
		for (int i = 0; i < lengthof(predict_scan_functions); i++)
			if (predict_scan_functions[i].nargs == nargs &&
				strcmp(symbol, predict_scan_functions[i].symbol) == 0)
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

/*
 * The pages of the source of a call that a parallel scan can divide: a
 * table or materialized view named by a constant (which every participant
 * evaluates alike), without row-level security (whose quals would come
 * before the pages' ranges), while TID range scans are enabled; 0 for any
 * other source
 */
static BlockNumber
PredictScanParallelPages(FuncExpr *func, Oid *relid)
{
	Node	   *source = lsecond(func->args);
	Relation	rel;
	BlockNumber pages = 0;

	if (!enable_tidscan || !IsA(source, Const) || ((Const *) source)->constisnull)
		return 0;
	*relid = DatumGetObjectId(((Const *) source)->constvalue);
	rel = try_relation_open(*relid, AccessShareLock);
	if (rel == NULL)
		return 0;
	if ((rel->rd_rel->relkind == RELKIND_RELATION || rel->rd_rel->relkind == RELKIND_MATVIEW) &&
		!rel->rd_rel->relrowsecurity)
		pages = RelationGetNumberOfBlocks(rel);
	relation_close(rel, AccessShareLock);
	return pages;
}

/*
 * The threads each participant of a parallel scan of workers workers
 * scores with: the backend's share of silvan.max_threads, at least one
 */
static int
PredictScanParticipantThreads(int workers)
{
	return Max(1, RuntimeMaxThreads() / (workers + 1));
}

/*
 * How many times faster than one thread a scan runs on threads threads,
 * as the cost model has it: its pipeline overlaps reading the source with
 * scoring the batch before, at most twice as fast
 */
static double
PredictScanThreadSpeed(int threads)
{
	return Min(threads, 2);
}

/*
 * A partial path of the node, each participant scoring chunks of the
 * source's pages, when the planner may run the call in parallel and its
 * source is big enough for workers (as a scan of it would be).
 *
 * Its cost weighs what the serial scan's threads already do: a serial
 * scan with silvan.max_threads > 1 is pipelined, and the participants of
 * a parallel one share those threads (PredictScanParticipantThreads), all
 * on the machine's cores.  So on two cores, where one pipelined backend
 * keeps both busy, a parallel plan costs more than the serial one; on
 * more cores, or with one thread, it costs less.
 */
static void
PredictScanAddPartialPath(PlannerInfo *root, RelOptInfo *rel, FuncExpr *func, int output,
						  Cost total)
{
	CustomPath *path;
	BlockNumber pages;
	Oid			relid;
	int			workers;
	double		divisor;
	double		cores = RuntimeCoreCount();
	double		serial_speed;
	double		parallel_speed;

	if (!rel->consider_parallel || max_parallel_workers_per_gather <= 0 ||
		(pages = PredictScanParallelPages(func, &relid)) == 0)
		return;
	workers = compute_parallel_worker(rel, pages, -1, max_parallel_workers_per_gather);
	if (workers <= 0)
		return;
	/* the participants' shares, as a parallel sequential scan divides its rows */
	divisor = workers;
	if (parallel_leader_participation && workers < 4)
		divisor += 1.0 - 0.3 * workers;
	serial_speed = Min(PredictScanThreadSpeed(RuntimeMaxThreads()), cores);
	parallel_speed = Min(divisor * PredictScanThreadSpeed(PredictScanParticipantThreads(workers)),
						 cores);

	path = makeNode(CustomPath);
	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.parallel_aware = true;
	path->path.parallel_safe = true;
	path->path.parallel_workers = workers;
	path->path.rows = clamp_row_est(rel->rows / divisor);
	path->path.startup_cost = 0;
	path->path.total_cost = total * serial_speed / parallel_speed;
	path->custom_private = list_make3(makeInteger(output), makeInteger((int) relid),
									  makeInteger(workers));
	path->methods = &predict_path_methods;
	add_partial_path(rel, &path->path);
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
	if (PredictScanWantsWholeRow(rel) || (output = PredictScanFunction(func)) < 0)
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
	if (list_length(func->args) == PREDICT_TABLE_NARGS)
		PredictScanAddPartialPath(root, rel, func, output, total);
}

/*
 * The node's scan tuple: the function's result columns (predict_query's
 * as its column definition list declares them), as Vars of its range
 * table entry
 */
static List *
PredictScanTupleList(Index relid, RangeTblFunction *rtfunc)
{
	TupleDesc	desc;
	List	   *tlist = NIL;

	if (rtfunc->funccolnames != NIL)
	{
		desc = BuildDescFromLists(rtfunc->funccolnames, rtfunc->funccoltypes,
								  rtfunc->funccoltypmods, rtfunc->funccolcollations);
	}
	else
		desc = get_expr_result_tupdesc(rtfunc->funcexpr, false);

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
	RangeTblFunction *rtfunc = linitial_node(RangeTblFunction, rte->functions);
	FuncExpr   *func = (FuncExpr *) rtfunc->funcexpr;

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	/* no relation to open: the scan tuple is described by custom_scan_tlist */
	cscan->scan.scanrelid = 0;
	cscan->custom_scan_tlist = PredictScanTupleList(rel->relid, rtfunc);
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

/*
 * Is the node's projection a choice of result columns, each a plain Var
 * (count(prediction) above the scan asks for the prediction alone)?  Then
 * note which column each output column is.
 */
static bool
PredictScanPlainProjection(PredictScanState *node)
{
	List	   *tlist = node->css.ss.ps.plan->targetlist;
	ListCell   *cell;
	int			i = 0;

	node->projected = palloc(Max(list_length(tlist), 1) * sizeof(AttrNumber));
	foreach(cell, tlist)
	{
		Var		   *var = (Var *) lfirst_node(TargetEntry, cell)->expr;

		if (!IsA(var, Var) || var->varattno < 1 || var->varattno > 2 || var->varlevelsup != 0)
			return false;
		node->projected[i++] = var->varattno - 1;
	}
	node->num_projected = i;
	return true;
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
	node->query_source = list_length(func->args) == PREDICT_QUERY_NARGS;
	node->args = ExecInitExprList(func->args, &css->ss.ps);
	node->direct = node->output == SCORE_PREDICT && css->ss.ps.qual == NULL &&
		(css->ss.ps.ps_ProjInfo == NULL || PredictScanPlainProjection(node));
}

/* Reset callback of a run's context: stop the batch in flight, unpin the model */
static void
PredictScanRunGone(void *arg)
{
	ScanClose((BatchScan *) arg);
}

/* Reset callback of a parallel run's context: the thread cap it lowered back */
static void
PredictScanThreadsBack(void *arg)
{
	RuntimeSetMaxThreads(((PredictScanState *) arg)->saved_threads);
}

/*
 * A participant of a parallel scan scores with its share of the threads
 * (PredictScanParticipantThreads), until the run's context goes
 */
static void
PredictScanShareThreads(PredictScanState *node)
{
	CustomScan *cscan = (CustomScan *) node->css.ss.ps.plan;
	MemoryContextCallback *callback = MemoryContextAlloc(node->run_cxt,
														 sizeof(MemoryContextCallback));

	node->saved_threads = RuntimeMaxThreads();
	callback->func = PredictScanThreadsBack;
	callback->arg = node;
	MemoryContextRegisterResetCallback(node->run_cxt, callback);
	RuntimeSetMaxThreads(PredictScanParticipantThreads(intVal(lthird(cscan->custom_private))));
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

/* Plan a source query (the scan's, or a chunk of it) and start its executor, its rows going to the scan */
static QueryDesc *
PredictScanStartSource(BatchScan *scan, const char *query)
{
	ErrorContextCallback context;
	List	   *statements;
	RawStmt    *raw;
	List	   *queries;
	PlannedStmt *plan;
	QueryDesc  *source;

	PredictScanPushContext(&context, scan);
	statements = pg_parse_query(query);
	if (list_length(statements) != 1)
		ScanCheckSourceQueries(list_length(statements), NIL);
	raw = linitial_node(RawStmt, statements);
	queries = pg_analyze_and_rewrite_fixedparams(raw, query, NULL, 0, NULL);
	ScanCheckSourceQueries(1, queries);
	if (list_length(queries) != 1)
		elog(ERROR, "source query of model \"%s\" was rewritten into %d queries",
			 scan->model_name, list_length(queries));
	plan = pg_plan_query(linitial_node(Query, queries), query, 0, NULL);
	source = CreateQueryDesc(plan, query, GetActiveSnapshot(), InvalidSnapshot,
							 &scan->pub, NULL, NULL, 0);
	ExecutorStart(source, 0);
	error_context_stack = context.previous;
	return source;
}

/*
 * Claim the next chunk of a parallel scan's source and start its query
 * (the source's, its pages limited to the chunk's); false when all are
 * claimed
 */
static bool
PredictScanStartChunk(PredictScanState *node)
{
	PredictScanShared *shared = node->shared;
	uint32		chunk = pg_atomic_fetch_add_u32(&shared->next_chunk, 1);
	StringInfoData query;
	MemoryContext old;

	if (chunk >= shared->num_chunks)
		return false;
	old = MemoryContextSwitchTo(node->run_cxt);
	initStringInfo(&query);
	appendStringInfoString(&query, node->scan->query);
	/* the source query is "SELECT ... FROM table", without a WHERE clause */
	appendStringInfoString(&query, " WHERE true");
	if (chunk > 0)
		appendStringInfo(&query, " AND ctid OPERATOR(pg_catalog.>=) '(%u,0)'::pg_catalog.tid",
						 chunk * shared->chunk_blocks);
	if (chunk + 1 < shared->num_chunks)
		appendStringInfo(&query, " AND ctid OPERATOR(pg_catalog.<) '(%u,0)'::pg_catalog.tid",
						 (chunk + 1) * shared->chunk_blocks);
	node->source = PredictScanStartSource(node->scan, query.data);
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * Start a run: evaluate the call's arguments and check them as the
 * function does, look the model up, and start the source (in a parallel
 * scan, its first chunk)
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
	if (node->query_source)
	{
		ScanCheckQueryArgs(nulls[0], nulls[1]);
		batch_size = ScanCheckBatchSize(nulls[2], nulls[2] ? 0 : DatumGetInt32(values[2]));
		ScanCheckResultDesc(node->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor, node->output);
	}
	else
	{
		ScanCheckTableArgs(nulls[0], nulls[1], nulls[2]);
		batch_size = ScanCheckBatchSize(nulls[4], nulls[4] ? 0 : DatumGetInt32(values[4]));
	}

	node->run_cxt = AllocSetContextCreate(node->css.ss.ps.state->es_query_cxt,
										  "silvan streamed scan", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(node->run_cxt);
	if (node->shared != NULL)
		PredictScanShareThreads(node);
	if (node->query_source)
		node->scan = ScanStreamOpenQuery(node->output, TextDatumGetCString(values[0]),
										 TextDatumGetCString(values[1]),
										 TupleDescAttr(node->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor, 0)->atttypid,
										 batch_size);
	else
		node->scan = ScanStreamOpen(node->output, TextDatumGetCString(values[0]),
									DatumGetObjectId(values[1]), TextDatumGetCString(values[2]),
									nulls[3] ? NULL : DatumGetArrayTypePCopy(values[3]), batch_size);
	callback = palloc0(sizeof(MemoryContextCallback));
	callback->func = PredictScanRunGone;
	callback->arg = node->scan;
	MemoryContextRegisterResetCallback(node->run_cxt, callback);
	ScanStreamStart(node->scan);
	if (node->shared == NULL)
	{
		node->source = PredictScanStartSource(node->scan, node->scan->query);
		if (ScanHeapReadable(node->source))
		{
			node->heap_reader = ScanHeapBegin(node->source);
			node->heap_read = true;
		}
	}
	else if (node->scan->source_relid != node->shared->relid)
		elog(ERROR, "parallel scan of relation %u given relation %u",
			 node->shared->relid, node->scan->source_relid);
	else if (!PredictScanStartChunk(node))
	{
		node->source_done = true;
		ScanStreamEnd(node->scan);
	}
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
	if (node->heap_reader != NULL)
		ScanHeapEnd(node->heap_reader);
	node->heap_reader = NULL;
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
		ScoreCostsCombine(&node->costs, &node->scan->costs);
		ScanClose(node->scan);
		ScanStreamUnpin(node->scan);
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
	if (node->heap_reader != NULL)
		done = ScanHeapRead(node->heap_reader, node->scan, wanted);
	else
	{
		ExecutorRun(node->source, ForwardScanDirection, wanted, false);
		/* (each run counts its own rows in es_processed) */
		done = node->source->estate->es_processed < (uint64) wanted;
	}
	error_context_stack = context.previous;
	if (!done)
		return;
	/* a chunk's rows are in the batches (their pages pinned): on to the next */
	if (node->shared != NULL)
	{
		PredictScanEndSource(node, true);
		if (PredictScanStartChunk(node))
			return;
	}
	node->source_done = true;
	ScanStreamEnd(node->scan);
	PredictScanEndSource(node, true);
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

/*
 * ExecCustomScan.  With no filter, no EvalPlanQual, a prediction (no array
 * in per-tuple memory) and no projection but a choice of columns, ExecScan
 * would only reset the per-tuple memory, hand on the row and run the
 * projection's expression: the row goes straight up, its columns chosen
 * here.
 */
static TupleTableSlot *
PredictScanExec(CustomScanState *css)
{
	PredictScanState *node = (PredictScanState *) css;
	TupleTableSlot *row;
	TupleTableSlot *result;

	if (!node->direct || css->ss.ps.state->es_epq_active != NULL)
		return ExecScan(&css->ss, PredictScanNext, PredictScanRecheck);
	row = PredictScanNext(&css->ss);
	if (css->ss.ps.ps_ProjInfo == NULL)
		return row;
	result = ExecClearTuple(css->ss.ps.ps_ResultTupleSlot);
	if (TupIsNull(row))
		return result;
	for (int i = 0; i < node->num_projected; i++)
	{
		result->tts_values[i] = row->tts_values[node->projected[i]];
		result->tts_isnull[i] = row->tts_isnull[node->projected[i]];
	}
	return ExecStoreVirtualTuple(result);
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

/* ---- Parallel scans ---- */

/* EstimateDSMCustomScan: the shared state */
static Size
PredictScanEstimateDSM(CustomScanState *css, ParallelContext *pcxt)
{
	return sizeof(PredictScanShared);
}

/*
 * Cut the source's pages into chunks, none claimed yet; a source that is
 * no longer a table (the plan was cached) is one chunk: all its rows
 */
static void
PredictScanResetShared(PredictScanShared *shared)
{
	Relation	rel = try_relation_open(shared->relid, AccessShareLock);
	BlockNumber pages = 0;

	/* (a source dropped since is reported by each participant, as when serial) */
	if (rel != NULL)
	{
		if (rel->rd_rel->relkind == RELKIND_RELATION || rel->rd_rel->relkind == RELKIND_MATVIEW)
			pages = RelationGetNumberOfBlocks(rel);
		relation_close(rel, AccessShareLock);
	}
	shared->chunk_blocks = Max(1, (pages + PREDICT_SCAN_CHUNKS - 1) / PREDICT_SCAN_CHUNKS);
	shared->num_chunks = Max(1, (pages + shared->chunk_blocks - 1) / shared->chunk_blocks);
	pg_atomic_write_u32(&shared->next_chunk, 0);
}

/* InitializeDSMCustomScan (the leader): the chunks of the source named in the plan */
static void
PredictScanInitializeDSM(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	PredictScanState *node = (PredictScanState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	PredictScanShared *shared = coordinate;

	shared->relid = (Oid) intVal(lsecond(cscan->custom_private));
	pg_atomic_init_u32(&shared->next_chunk, 0);
	pg_atomic_init_u64(&shared->rows_scored, 0);
	pg_atomic_init_u64(&shared->scoring_us, 0);
	PredictScanResetShared(shared);
	node->shared = shared;
}

/* ReInitializeDSMCustomScan (the leader, rescanning): every chunk again */
static void
PredictScanReInitializeDSM(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	PredictScanResetShared((PredictScanShared *) coordinate);
	((PredictScanState *) css)->shared = coordinate;
}

/* InitializeWorkerCustomScan */
static void
PredictScanInitializeWorker(CustomScanState *css, shm_toc *toc, void *coordinate)
{
	((PredictScanState *) css)->shared = coordinate;
}

/*
 * ShutdownCustomScan, while the shared memory is there: a worker adds
 * the rows it scored (before the leader sees its end), the leader reads
 * back all the workers' for EXPLAIN ANALYZE
 */
static void
PredictScanShutdown(CustomScanState *css)
{
	PredictScanState *node = (PredictScanState *) css;

	if (node->shared == NULL)
		return;
	if (IsParallelWorker())
	{
		ScoreCosts	costs = node->costs;

		if (node->scan != NULL)
			ScoreCostsCombine(&costs, &node->scan->costs);
		if (!node->rows_reported)
		{
			pg_atomic_add_fetch_u64(&node->shared->rows_scored,
									node->rows_scored + (node->scan ? node->scan->rows_seen : 0));
			pg_atomic_add_fetch_u64(&node->shared->scoring_us, (uint64) (costs.scoring_ms * 1000));
		}
		node->rows_reported = true;
	}
	else
	{
		node->worker_rows = pg_atomic_read_u64(&node->shared->rows_scored);
		node->worker_scoring_ms = pg_atomic_read_u64(&node->shared->scoring_us) / 1000.0;
	}
	node->shared = NULL;
}

/*
 * ExplainCustomScan: the call; after a run, the model, batch size,
 * pipelining, rows scored (by every participant of a parallel scan), how
 * the code was had and how long it ran (the workers' time added)
 */
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
		ExplainPropertyText("Source Read", node->heap_read ? "heap pages" : "executor", es);
	}
	if (es->analyze)
	{
		ScoreCosts	costs = node->costs;

		ExplainPropertyInteger("Rows Scored", NULL,
							   node->rows_scored + (node->scan ? node->scan->rows_seen : 0) +
							   node->worker_rows, es);
		if (node->scan != NULL)
			ScoreCostsCombine(&costs, &node->scan->costs);
		costs.scoring_ms += node->worker_scoring_ms;
		if (node->scan != NULL || costs.codes_obtained > 0)
			ScoreCostsExplain(&costs, es);
		else if (node->worker_rows > 0 && es->timing)
			ExplainPropertyFloat("Scoring Time", "ms", costs.scoring_ms, 3, es);
	}
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
	predict_exec_methods.EstimateDSMCustomScan = PredictScanEstimateDSM;
	predict_exec_methods.InitializeDSMCustomScan = PredictScanInitializeDSM;
	predict_exec_methods.ReInitializeDSMCustomScan = PredictScanReInitializeDSM;
	predict_exec_methods.InitializeWorkerCustomScan = PredictScanInitializeWorker;
	predict_exec_methods.ShutdownCustomScan = PredictScanShutdown;
	RegisterCustomScanMethods(&predict_plan_methods);

	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = PredictScanPathHook;
}
