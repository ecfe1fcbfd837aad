/*
 * batch_plan.c
 *		Planning batched evaluation of scalar calls: where in a finished
 *		plan a "Custom Scan (SilvanBatch)" goes.
 *
 * A call of silvan.predict(), predict_proba() or predict_raw() costs a
 * function call, a model lookup and a one-row run of the compiled code per
 * row.  The planner hook below looks through every finished plan for such
 * calls whose model argument is a constant or an external parameter and
 * moves them into a batch node (batch_node.c), which pulls a batch of rows
 * from below it, scores them in one run and hands each row on with its
 * results.  Two placements cover the SQL people write:
 *
 *   above: a node that projects (a scan, a join, a Result, a Gather) and
 *     computes the calls in its target list or filter.  It is given a new
 *     target list that computes each call's features and passes through
 *     what the rest of its expressions read; the batch node above it
 *     scores, filters with the moved conjuncts and projects the original
 *     target list, entry for entry, so the node's parent sees the same
 *     columns.  SELECT c.*, predict(...) FROM t WHERE ...; UPDATE t SET
 *     score = predict(...); INSERT ... SELECT; CREATE TABLE AS.
 *
 *   below: an Agg whose aggregates (or HAVING) read the calls over its
 *     input rows.  The batch node goes between the Agg and its input,
 *     passes every input column through and adds one column per call; the
 *     Agg reads those columns instead.  SELECT count(predict(...)) ...,
 *     and a parallel plan's partial aggregate in each worker.
 *
 * Where a node's position is read by something else the plan is left as
 * it was, and the calls stay scalar (same results, one row at a time): a
 * merge join's inner side (it marks and restores), a Gather Merge (its
 * sort keys index its own target list), grouping sets, and the plans of
 * scrollable cursors (the node does not scan backwards).
 *
 * The plan is finished (set_plan_references has run), so every expression
 * is already in its executor form: Vars of a scan's relation, or
 * OUTER_VAR, INNER_VAR and INDEX_VAR references.  Expressions moved within
 * one node keep their form; the batch node's own expressions read its
 * scan tuple (INDEX_VAR), whose columns custom_scan_tlist describes as the
 * child's outputs (OUTER_VAR) and the calls themselves, so EXPLAIN prints
 * them as written.
 */
#include "silvan_pg.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_language.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "access/parallel.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "batch.h"

bool		silvan_batch_calls = true;
int			silvan_batch_calls_size = 1024;

static planner_hook_type prev_planner_hook = NULL;
static ExecutorStart_hook_type prev_executor_start_hook = NULL;

/* The next statement to start may have been planned before the hooks existed */
static bool batch_first_statement = false;

/* The scalar C functions of this library, and what each returns */
static const struct
{
	const char *symbol;
	ScoreOutput output;
}			batch_functions[] =
{
	{"silvan_predict_float4", SCORE_PREDICT},
	{"silvan_predict_float8", SCORE_PREDICT},
	{"silvan_predict_array", SCORE_PREDICT},
	{"silvan_predict_proba_float4", SCORE_PROBA},
	{"silvan_predict_proba_float8", SCORE_PROBA},
	{"silvan_predict_proba_array", SCORE_PROBA},
	{"silvan_predict_raw_float4", SCORE_RAW},
	{"silvan_predict_raw_float8", SCORE_RAW},
	{"silvan_predict_raw_array", SCORE_RAW},
	{"silvan_predict_row", SCORE_PREDICT},
	{"silvan_predict_proba_row", SCORE_PROBA},
	{"silvan_predict_raw_row", SCORE_RAW},
	{"silvan_predict_label_float4", SCORE_LABEL},
	{"silvan_predict_label_float8", SCORE_LABEL},
	{"silvan_predict_label_array", SCORE_LABEL},
	{"silvan_predict_label_row", SCORE_LABEL},
	{"silvan_classify_float4", SCORE_CLASS},
	{"silvan_classify_float8", SCORE_CLASS},
	{"silvan_classify_array", SCORE_CLASS},
	{"silvan_classify_row", SCORE_CLASS},
};

/* Calls found in one node, and the child target list being built for them */
typedef struct BatchRewrite
{
	List	   *calls;			/* FuncExpr of each call, in column order */
	List	   *child_tlist;	/* "above": the projecting node's new target list */
	int			num_child;		/* "below": columns of the child passed through */
	bool		above;
	Index		scanrelid;		/* "above" a scan: the relation it scans, else 0 */
} BatchRewrite;

/*
 * What a function returns when it is one of this library's scalar
 * functions as installed (C, not SECURITY DEFINER, no SET clause); -1
 * for any other
 */
static int
BatchFunctionOutput(Oid funcid)
{
	char	   *symbol = SilvanFunctionSymbol(funcid, 2, false);

	if (symbol != NULL)
		for (int i = 0; i < lengthof(batch_functions); i++)
			if (strcmp(symbol, batch_functions[i].symbol) == 0)
				return batch_functions[i].output;
	return -1;
}

/* Is node a call the batch node can evaluate: model constant or a parameter of the statement? */
static bool
BatchIsCall(Node *node)
{
	FuncExpr   *call = (FuncExpr *) node;
	Node	   *model;

	int			output;

	if (node == NULL || !IsA(node, FuncExpr) || list_length(call->args) != 2 || call->funcretset)
		return false;
	model = linitial(call->args);
	if (!(IsA(model, Const) && !((Const *) model)->constisnull) &&
		!(IsA(model, Param) && ((Param *) model)->paramkind == PARAM_EXTERN))
		return false;
	output = BatchFunctionOutput(call->funcid);
	return output >= 0 && call->funcresulttype == ScoreOutputType((ScoreOutput) output);
}

/* Does the expression hold a call the batch node can evaluate? */
static bool
BatchHasCall(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (BatchIsCall(node))
		return true;
	return expression_tree_walker(node, BatchHasCall, context);
}

/* Does the expression read anything but the child's columns (below an Agg)? */
static bool
BatchReadsBeyondOuter(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno != OUTER_VAR;
	if (IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, GroupingFunc) ||
		IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
		return true;
	return expression_tree_walker(node, BatchReadsBeyondOuter, context);
}

/* The column of the child's new target list that computes expr, added if new (1-based) */
static AttrNumber
BatchChildColumn(BatchRewrite *rw, Expr *expr)
{
	ListCell   *lc;
	TargetEntry *tle;

	foreach(lc, rw->child_tlist)
	{
		tle = lfirst(lc);
		if (equal(tle->expr, expr))
			return tle->resno;
	}
	tle = makeTargetEntry((Expr *) copyObject(expr), list_length(rw->child_tlist) + 1, NULL, false);
	rw->child_tlist = lappend(rw->child_tlist, tle);
	return tle->resno;
}

/* A Var of the batch node's scan tuple (INDEX_VAR) standing for expr at attno */
static Var *
BatchScanVar(Expr *expr, AttrNumber attno, Index varno)
{
	return makeVar(varno, attno, exprType((Node *) expr), exprTypmod((Node *) expr),
				   exprCollation((Node *) expr), 0);
}

/*
 * Is expr the whole row of the relation the child scans (p in predict(m, p)
 * over FROM t p), of the relation's own row type?  A scan's row is never
 * NULL as a whole, unlike a row from an outer join's nullable side.
 */
static bool
BatchIsScannedRow(BatchRewrite *rw, Expr *expr)
{
	Var		   *var = (Var *) expr;

	return rw->scanrelid != 0 && IsA(expr, Var) && var->varno == rw->scanrelid &&
		var->varattno == 0 && var->varlevelsup == 0 && OidIsValid(get_typ_typrelid(var->vartype));
}

/*
 * The whole row of the scanned relation as ROW(its columns), each a column
 * of the child, so that the node reads the columns without forming the
 * row (BatchDirectRow); a dropped column is a NULL, as a row type has it
 */
static Expr *
BatchRowOverChild(BatchRewrite *rw, Var *whole)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(whole->vartype, -1);
	RowExpr    *row = makeNode(RowExpr);

	row->row_typeid = whole->vartype;
	row->row_format = COERCE_IMPLICIT_CAST;
	row->location = -1;
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		Var		   *column;

		row->colnames = lappend(row->colnames, makeString(pstrdup(NameStr(att->attname))));
		if (att->attisdropped)
		{
			row->args = lappend(row->args, makeNullConst(INT4OID, -1, InvalidOid));
			continue;
		}
		column = makeVar(whole->varno, att->attnum, att->atttypid, att->atttypmod,
						 att->attcollation, 0);
		row->args = lappend(row->args,
							BatchScanVar((Expr *) column, BatchChildColumn(rw, (Expr *) column),
										 OUTER_VAR));
	}
	ReleaseTupleDesc(desc);
	return (Expr *) row;
}

/* Are features an ARRAY[...] of float4 or float8 columns (read without building it)? */
static bool
BatchIsColumnArray(Expr *features)
{
	ArrayExpr  *array = (ArrayExpr *) features;
	ListCell   *lc;

	if (!IsA(features, ArrayExpr) || array->multidims ||
		(array->element_typeid != FLOAT4OID && array->element_typeid != FLOAT8OID))
		return false;
	foreach(lc, array->elements)
		if (!IsA(lfirst(lc), Var) || ((Var *) lfirst(lc))->vartype != array->element_typeid)
			return false;
	return true;
}

/* Does any call in node take features other than its columns (an array of them, its row)? */
static bool
BatchCallComputesFeatures(Node *node, BatchRewrite *rw)
{
	if (node == NULL)
		return false;
	if (BatchIsCall(node))
	{
		Expr	   *features = lsecond(((FuncExpr *) node)->args);

		return !BatchIsColumnArray(features) && !BatchIsScannedRow(rw, features);
	}
	return expression_tree_walker(node, BatchCallComputesFeatures, rw);
}

/*
 * A call's features as the batch node reads them from its child: an
 * ARRAY[...] of float4 or float8 columns stays an ARRAY over the child's
 * columns, which the node reads without building the array
 * (BatchDirectColumns); any other expression is a column the child
 * computes
 */
static Expr *
BatchFeaturesOverChild(BatchRewrite *rw, Expr *features)
{
	ArrayExpr  *array = (ArrayExpr *) features;
	ArrayExpr  *over_child;
	ListCell   *lc;

	if (BatchIsScannedRow(rw, features))
		return BatchRowOverChild(rw, (Var *) features);
	if (!BatchIsColumnArray(features))
		return (Expr *) BatchScanVar(features, BatchChildColumn(rw, features), OUTER_VAR);
	over_child = copyObject(array);
	over_child->elements = NIL;
	foreach(lc, array->elements)
		over_child->elements = lappend(over_child->elements,
									   BatchScanVar(lfirst(lc), BatchChildColumn(rw, lfirst(lc)),
													OUTER_VAR));
	return (Expr *) over_child;
}

/*
 * Rewrite an expression of a projecting node for the batch node above it:
 * each call becomes its result's column, each Var the column passing it
 * through (the child's columns are the batch node's first columns)
 */
static Node *
BatchMutateAbove(Node *node, BatchRewrite *rw)
{
	if (node == NULL)
		return NULL;
	if (BatchIsCall(node))
	{
		int			k = 0;
		ListCell   *lc;

		/* the result's column is numbered once the child's are known: -k is call k */
		foreach(lc, rw->calls)
		{
			k++;
			if (equal(lfirst(lc), node))
				return (Node *) BatchScanVar((Expr *) node, -k, INDEX_VAR);
		}
		rw->calls = lappend(rw->calls, copyObject(node));
		return (Node *) BatchScanVar((Expr *) node, -list_length(rw->calls), INDEX_VAR);
	}
	if (IsA(node, Var))
		return (Node *) BatchScanVar((Expr *) node, BatchChildColumn(rw, (Expr *) node), INDEX_VAR);
	return expression_tree_mutator(node, BatchMutateAbove, rw);
}

/* Number the calls' result columns after the child's: attno -k is call k */
static bool
BatchNumberResults(Node *node, BatchRewrite *rw)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR && ((Var *) node)->varattno < 0)
		((Var *) node)->varattno = list_length(rw->child_tlist) - ((Var *) node)->varattno;
	return expression_tree_walker(node, BatchNumberResults, rw);
}

/* Rewrite an Agg's expression: each call over its input becomes the batch node's column */
static Node *
BatchMutateBelow(Node *node, BatchRewrite *rw)
{
	if (node == NULL)
		return NULL;
	if (BatchIsCall(node) && !BatchReadsBeyondOuter(lsecond(((FuncExpr *) node)->args), NULL))
	{
		rw->calls = lappend(rw->calls, copyObject(node));
		return (Node *) BatchScanVar((Expr *) node, rw->num_child + list_length(rw->calls),
									 OUTER_VAR);
	}
	return expression_tree_mutator(node, BatchMutateBelow, rw);
}

/* Add to *columns each of the child's columns (1 to num_child) that a Var of varno in expr reads */
static void
BatchColumnsRead(Node *expr, int varno, int num_child, List **columns)
{
	List	   *vars = pull_var_clause(expr, PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
									   PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	foreach(lc, vars)
	{
		Var		   *var = lfirst(lc);

		if (var->varno != varno || var->varattno > num_child)
			continue;
		if (var->varattno == InvalidAttrNumber)
			for (int c = 1; c <= num_child; c++)
				*columns = list_append_unique_int(*columns, c);
		else if (var->varattno > 0)
			*columns = list_append_unique_int(*columns, var->varattno);
	}
}

/*
 * The batch node over child: its scan tuple is the child's columns and then
 * one column per call (custom_scan_tlist), features are read by
 * feature_exprs (OUTER_VAR: the child's row); the node and its parent read
 * only the child's columns in reads (the node keeps no others)
 */
static CustomScan *
BatchMakeNode(Plan *child, List *calls, List *feature_exprs, List *tlist, List *qual, List *reads)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;
	List	   *outputs = NIL;
	List	   *funcids = NIL;
	List	   *exprs = NIL;
	ListCell   *lc,
			   *lf;
	int			n = 0;

	foreach(lc, child->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) BatchScanVar(tle->expr, tle->resno, OUTER_VAR),
											 ++n, NULL, false));
	}
	forboth(lc, calls, lf, feature_exprs)
	{
		FuncExpr   *call = copyObject(lfirst(lc));

		/* as EXPLAIN shows it: the call over the child's columns */
		call->args = list_make2(linitial(call->args), lfirst(lf));
		scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr *) call, ++n, NULL, false));
		outputs = lappend_int(outputs, BatchFunctionOutput(call->funcid));
		funcids = lappend_oid(funcids, call->funcid);
		exprs = lappend(exprs, linitial(call->args));
		exprs = lappend(exprs, lfirst(lf));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = qual;
	cscan->scan.plan.lefttree = child;
	cscan->scan.plan.startup_cost = child->startup_cost;
	cscan->scan.plan.total_cost = child->total_cost;
	cscan->scan.plan.plan_rows = child->plan_rows;
	cscan->scan.plan.plan_width = child->plan_width;
	cscan->scan.plan.parallel_aware = false;
	cscan->scan.plan.parallel_safe = child->parallel_safe;
	cscan->scan.plan.extParam = bms_copy(child->extParam);
	cscan->scan.plan.allParam = bms_copy(child->allParam);
	cscan->scan.scanrelid = 0;
	cscan->flags = 0;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_exprs = exprs;
	cscan->custom_private = list_make4(makeInteger(list_length(child->targetlist)), outputs,
									   funcids, reads);
	cscan->methods = &batch_plan_methods;
	return cscan;
}

/*
 * A scan's child target list to start from when every call reads the
 * table's columns: the table's columns in order, so that the scan, not
 * projecting, hands the batch node its heap tuples to read the features
 * of in place; NIL where the table has dropped columns (the scan projects
 * anyway) or is not a table
 */
static List *
BatchPhysicalColumns(Index scanrelid, List *rtable)
{
	RangeTblEntry *rte = rt_fetch(scanrelid, rtable);
	List	   *tlist = NIL;
	Relation	rel;
	TupleDesc	desc;

	if (rte->rtekind != RTE_RELATION ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW))
		return NIL;
	rel = table_open(rte->relid, NoLock);
	desc = RelationGetDescr(rel);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
		{
			list_free_deep(tlist);
			tlist = NIL;
			break;
		}
		tlist = lappend(tlist, makeTargetEntry((Expr *) makeVar(scanrelid, att->attnum, att->atttypid,
																att->atttypmod, att->attcollation, 0),
											   a + 1, NULL, false));
	}
	table_close(rel, NoLock);
	return tlist;
}

/* Put a batch node above a projecting node that computes calls; plan itself if it has none */
static Plan *
BatchAbove(Plan *plan, List *rtable)
{
	BatchRewrite rw = {0};
	List	   *tlist = NIL;
	List	   *qual = NIL;
	List	   *kept = NIL;
	List	   *feature_exprs = NIL;
	List	   *reads = NIL;
	ListCell   *lc;

	if (!BatchHasCall((Node *) plan->targetlist, NULL) && !BatchHasCall((Node *) plan->qual, NULL))
		return plan;
	rw.above = true;
	if (IsA(plan, SeqScan) || IsA(plan, SampleScan) || IsA(plan, IndexScan) ||
		IsA(plan, IndexOnlyScan) || IsA(plan, BitmapHeapScan) || IsA(plan, TidScan) ||
		IsA(plan, TidRangeScan))
	{
		rw.scanrelid = ((Scan *) plan)->scanrelid;
		if (!IsA(plan, IndexOnlyScan) &&
			!BatchCallComputesFeatures((Node *) plan->targetlist, &rw) &&
			!BatchCallComputesFeatures((Node *) plan->qual, &rw))
			rw.child_tlist = BatchPhysicalColumns(rw.scanrelid, rtable);
	}
	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = flatCopyTargetEntry(lfirst(lc));

		/* calls become their results, columns pass through; the node computes a constant */
		if (BatchHasCall((Node *) tle->expr, NULL))
			tle->expr = (Expr *) BatchMutateAbove((Node *) tle->expr, &rw);
		else if (contain_var_clause((Node *) tle->expr))
			tle->expr = (Expr *) BatchScanVar(tle->expr, BatchChildColumn(&rw, tle->expr), INDEX_VAR);
		tlist = lappend(tlist, tle);
	}
	foreach(lc, plan->qual)
	{
		if (BatchHasCall(lfirst(lc), NULL))
			qual = lappend(qual, BatchMutateAbove(lfirst(lc), &rw));
		else
			kept = lappend(kept, lfirst(lc));
	}
	/* each call's features: a column of the child, or an ARRAY of its columns */
	foreach(lc, rw.calls)
		feature_exprs = lappend(feature_exprs,
								BatchFeaturesOverChild(&rw, lsecond(((FuncExpr *) lfirst(lc))->args)));
	BatchNumberResults((Node *) tlist, &rw);
	BatchNumberResults((Node *) qual, &rw);
	plan->targetlist = rw.child_tlist;
	plan->qual = kept;
	BatchColumnsRead((Node *) tlist, INDEX_VAR, list_length(rw.child_tlist), &reads);
	BatchColumnsRead((Node *) qual, INDEX_VAR, list_length(rw.child_tlist), &reads);
	return (Plan *) BatchMakeNode(plan, rw.calls, feature_exprs, tlist, qual, reads);
}

/* The columns 1 to num_columns of its input that an Agg reads */
static List *
BatchAggReads(Agg *agg, int num_columns)
{
	List	   *reads = NIL;

	BatchColumnsRead((Node *) agg->plan.targetlist, OUTER_VAR, num_columns, &reads);
	BatchColumnsRead((Node *) agg->plan.qual, OUTER_VAR, num_columns, &reads);
	for (int i = 0; i < agg->numCols; i++)
		if (agg->grpColIdx[i] <= num_columns)
			reads = list_append_unique_int(reads, agg->grpColIdx[i]);
	return reads;
}

/*
 * A batch node below an Agg outputs only what the Agg reads (count(*)
 * reads nothing): its other columns become NULL, those after the last
 * read go, and the node keeps only what is left and its filter read
 */
static void
BatchTrimBelowAgg(Agg *agg)
{
	CustomScan *cscan = (CustomScan *) outerPlan(agg);
	List	   *reads = BatchAggReads(agg, list_length(cscan->scan.plan.targetlist));
	List	   *tlist = NIL;
	List	   *kept = NIL;
	int			last = 0;
	ListCell   *lc;

	foreach(lc, reads)
		last = Max(last, lfirst_int(lc));
	foreach(lc, cscan->scan.plan.targetlist)
	{
		TargetEntry *tle = flatCopyTargetEntry(lfirst(lc));

		if (tle->resno > last)
			break;
		if (!list_member_int(reads, tle->resno))
			tle->expr = (Expr *) makeNullConst(exprType((Node *) tle->expr), exprTypmod((Node *) tle->expr),
											   exprCollation((Node *) tle->expr));
		tlist = lappend(tlist, tle);
	}
	cscan->scan.plan.targetlist = tlist;
	BatchColumnsRead((Node *) tlist, INDEX_VAR, intVal(linitial(cscan->custom_private)), &kept);
	BatchColumnsRead((Node *) cscan->scan.plan.qual, INDEX_VAR,
					 intVal(linitial(cscan->custom_private)), &kept);
	lfourth(cscan->custom_private) = kept;
}

/* Put a batch node between an Agg and its input when the Agg reads calls over its rows */
static bool
BatchBelowAgg(Agg *agg)
{
	BatchRewrite rw = {0};
	Plan	   *child = outerPlan(agg);
	List	   *tlist = NIL;
	List	   *feature_exprs = NIL;
	List	   *tlist_new;
	List	   *qual_new;
	List	   *reads = NIL;
	ListCell   *lc;
	int			n = 0;

	if (child == NULL || agg->groupingSets != NIL || agg->chain != NIL)
		return false;
	if (!BatchHasCall((Node *) agg->plan.targetlist, NULL) &&
		!BatchHasCall((Node *) agg->plan.qual, NULL))
		return false;
	rw.num_child = list_length(child->targetlist);
	tlist_new = (List *) BatchMutateBelow((Node *) agg->plan.targetlist, &rw);
	qual_new = (List *) BatchMutateBelow((Node *) agg->plan.qual, &rw);
	if (rw.calls == NIL)
		return false;
	foreach(lc, rw.calls)
		feature_exprs = lappend(feature_exprs, lsecond(((FuncExpr *) lfirst(lc))->args));
	/* the batch node's output is its scan tuple as it is, of which the Agg reads these */
	agg->plan.targetlist = tlist_new;
	agg->plan.qual = qual_new;
	reads = BatchAggReads(agg, rw.num_child);
	for (int i = 1; i <= rw.num_child + list_length(rw.calls); i++)
	{
		Expr	   *column = i <= rw.num_child ?
			((TargetEntry *) list_nth(child->targetlist, i - 1))->expr :
			(Expr *) list_nth(rw.calls, i - rw.num_child - 1);

		n++;
		tlist = lappend(tlist, makeTargetEntry((Expr *) BatchScanVar(column, n, INDEX_VAR),
											   n, NULL, false));
	}
	outerPlan(agg) = (Plan *) BatchMakeNode(child, rw.calls, feature_exprs, tlist, NIL, reads);
	return true;
}

/* What BatchPushIntoScan's mutator works with */
typedef struct BatchPush
{
	Plan	   *scan;			/* the Agg's input, a scan of a table */
	BatchRewrite rw;			/* its scanrelid, for BatchIsScannedRow */
	int			in_aggref;		/* within an aggregate's arguments */
	bool		pushed;			/* a call was moved */
	bool		unresolved;		/* BatchOverScan met a column the scan lacks */
} BatchPush;

/* BatchOverScan's mutator: each Var of the Agg's input (OUTER_VAR) as the scan computes it */
static Node *
BatchOverScanMutator(Node *node, BatchPush *push)
{
	if (node != NULL && IsA(node, Var) && ((Var *) node)->varno == OUTER_VAR)
	{
		TargetEntry *tle = get_tle_by_resno(push->scan->targetlist, ((Var *) node)->varattno);

		if (tle == NULL)
		{
			push->unresolved = true;
			return node;
		}
		return copyObject((Node *) tle->expr);
	}
	return expression_tree_mutator(node, BatchOverScanMutator, push);
}

/* An expression over an Agg's input (OUTER_VAR) as the scan below computes it; NULL if it cannot */
static Expr *
BatchOverScan(Node *node, BatchPush *push)
{
	Node	   *over;

	push->unresolved = false;
	over = BatchOverScanMutator(node, push);
	return push->unresolved ? NULL : (Expr *) over;
}

/*
 * Move a call in an aggregate's arguments whose features are the scanned
 * table's row or an ARRAY[...] of its columns into the scan's target list
 * (once per distinct call), and read its result there
 */
static Node *
BatchPushMutator(Node *node, BatchPush *push)
{
	Node	   *result;

	if (node == NULL)
		return NULL;
	if (push->in_aggref > 0 && BatchIsCall(node))
	{
		FuncExpr   *call = (FuncExpr *) node;
		Expr	   *features = BatchOverScan(lsecond(call->args), push);
		FuncExpr   *pushed;
		TargetEntry *tle;

		if (features == NULL ||
			(!BatchIsScannedRow(&push->rw, features) && !BatchIsColumnArray(features)))
			return expression_tree_mutator(node, BatchPushMutator, push);
		pushed = copyObject(call);
		pushed->args = list_make2(linitial(call->args), features);
		if ((tle = tlist_member((Expr *) pushed, push->scan->targetlist)) == NULL)
		{
			tle = makeTargetEntry((Expr *) pushed, list_length(push->scan->targetlist) + 1,
								  NULL, false);
			push->scan->targetlist = lappend(push->scan->targetlist, tle);
		}
		push->pushed = true;
		return (Node *) makeVar(OUTER_VAR, tle->resno, call->funcresulttype, -1, InvalidOid, 0);
	}
	if (IsA(node, Aggref))
	{
		push->in_aggref++;
		result = expression_tree_mutator(node, BatchPushMutator, push);
		push->in_aggref--;
		return result;
	}
	return expression_tree_mutator(node, BatchPushMutator, push);
}

/* A plan's columns that no one reads (not in reads) become NULL: nothing computes them */
static void
BatchUnreadNull(Plan *plan, List *reads)
{
	ListCell   *lc;

	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		if (!list_member_int(reads, tle->resno) && !tle->resjunk)
			tle->expr = (Expr *) makeNullConst(exprType((Node *) tle->expr),
											   exprTypmod((Node *) tle->expr),
											   exprCollation((Node *) tle->expr));
	}
}

/*
 * Before the Agg's input is rewritten: when it scans a table, the calls in
 * the aggregates' arguments that read the table's row or columns are
 * computed by the scan instead, so that the batch node above the scan
 * reads their features from the table's tuples in place (BatchAbove), and
 * the scan forms no row values for the Agg to pass to the calls
 */
static void
BatchPushIntoScan(Agg *agg)
{
	Plan	   *scan = outerPlan(agg);
	BatchPush	push = {0};

	if (scan == NULL || agg->groupingSets != NIL || agg->chain != NIL ||
		!(IsA(scan, SeqScan) || IsA(scan, SampleScan) || IsA(scan, IndexScan) ||
		  IsA(scan, BitmapHeapScan) || IsA(scan, TidScan) || IsA(scan, TidRangeScan)))
		return;
	push.scan = scan;
	push.rw.scanrelid = ((Scan *) scan)->scanrelid;
	agg->plan.targetlist = (List *) BatchPushMutator((Node *) agg->plan.targetlist, &push);
	if (push.pushed)
		BatchUnreadNull(scan, BatchAggReads(agg, list_length(scan->targetlist)));
}

/* The largest plan_node_id in a plan tree, so that new nodes get ids of their own */
static int
BatchMaxNodeId(Plan *plan)
{
	int			most;
	ListCell   *lc;

	if (plan == NULL)
		return -1;
	most = Max(plan->plan_node_id, Max(BatchMaxNodeId(plan->lefttree), BatchMaxNodeId(plan->righttree)));
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			most = Max(most, BatchMaxNodeId(lfirst(lc)));
	if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			most = Max(most, BatchMaxNodeId(lfirst(lc)));
	if (IsA(plan, SubqueryScan))
		most = Max(most, BatchMaxNodeId(((SubqueryScan *) plan)->subplan));
	if (IsA(plan, CustomScan))
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			most = Max(most, BatchMaxNodeId(lfirst(lc)));
	return most;
}

/* A statement's plan trees being rewritten */
typedef struct BatchPlanWalk
{
	List	   *rtable;
	int			last_id;		/* the largest plan_node_id so far */
	int			gathers;		/* Gathers above the node being rewritten */
} BatchPlanWalk;

/*
 * A new batch node gets its id; below a Gather it runs in each worker, and
 * is parallel-aware so that the workers can tell the leader what they
 * scored (batch_node.c)
 */
static void
BatchNumberNode(Plan *batched, BatchPlanWalk *walk)
{
	batched->plan_node_id = ++walk->last_id;
	batched->parallel_aware = walk->gathers > 0;
}

/* Rewrite a plan tree bottom up; inner_marks: its parent marks and restores it */
static Plan *
BatchRewritePlan(Plan *plan, bool inner_marks, BatchPlanWalk *walk)
{
	ListCell   *lc;
	Plan	   *batched;

	if (plan == NULL)
		return NULL;
	if (IsA(plan, Agg))
		BatchPushIntoScan((Agg *) plan);
	walk->gathers += IsA(plan, Gather) || IsA(plan, GatherMerge);
	plan->lefttree = BatchRewritePlan(plan->lefttree, false, walk);
	walk->gathers -= IsA(plan, Gather) || IsA(plan, GatherMerge);
	plan->righttree = BatchRewritePlan(plan->righttree, IsA(plan, MergeJoin), walk);
	switch (nodeTag(plan))
	{
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				lfirst(lc) = BatchRewritePlan(lfirst(lc), false, walk);
			break;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				lfirst(lc) = BatchRewritePlan(lfirst(lc), false, walk);
			break;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				BatchRewritePlan(((SubqueryScan *) plan)->subplan, false, walk);
			break;
		default:
			break;
	}
	switch (nodeTag(plan))
	{
		case T_Agg:
			if (BatchBelowAgg((Agg *) plan))
				BatchNumberNode(plan->lefttree, walk);
			else if (((Agg *) plan)->groupingSets == NIL && ((Agg *) plan)->chain == NIL &&
					 plan->lefttree != NULL && IsA(plan->lefttree, CustomScan) &&
					 ((CustomScan *) plan->lefttree)->methods == &batch_plan_methods)
				BatchTrimBelowAgg((Agg *) plan);
			return plan;
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_SubqueryScan:
		case T_FunctionScan:
		case T_ValuesScan:
		case T_CteScan:
		case T_NamedTuplestoreScan:
		case T_WorkTableScan:
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
		case T_Result:
		case T_Gather:
			/* a Result without input is one row, and PL/pgSQL's simple expressions */
			if (IsA(plan, Result) && plan->lefttree == NULL)
				return plan;
			if (inner_marks || (batched = BatchAbove(plan, walk->rtable)) == plan)
				return plan;
			BatchNumberNode(batched, walk);
			return batched;
		default:
			return plan;
	}
}

/* Batch the scalar calls of a planned statement, in place; false if it has none to batch */
static bool
BatchRewriteStmt(PlannedStmt *stmt)
{
	ListCell   *lc;
	BatchPlanWalk walk = {stmt->rtable, 0, 0};
	int			first_new;

	if (!silvan_batch_calls || stmt->commandType == CMD_UTILITY)
		return false;
	walk.last_id = BatchMaxNodeId(stmt->planTree);
	foreach(lc, stmt->subplans)
		walk.last_id = Max(walk.last_id, BatchMaxNodeId(lfirst(lc)));
	first_new = walk.last_id;
	stmt->planTree = BatchRewritePlan(stmt->planTree, false, &walk);
	foreach(lc, stmt->subplans)
		lfirst(lc) = BatchRewritePlan(lfirst(lc), false, &walk);
	return walk.last_id > first_new;
}

/* planner_hook: plan as usual, then batch the scalar calls of the plan */
static PlannedStmt *
BatchPlanner(Query *parse, const char *query_string, int cursor_options, ParamListInfo params)
{
	PlannedStmt *stmt = prev_planner_hook ?
		prev_planner_hook(parse, query_string, cursor_options, params) :
		standard_planner(parse, query_string, cursor_options, params);

	if (!(cursor_options & CURSOR_OPT_SCROLL))
		(void) BatchRewriteStmt(stmt);
	return stmt;
}

/*
 * ExecutorStart_hook: the statement silvan was loaded while planning (the
 * first of a session that calls predict(), whose support function loads
 * the library) was planned before the planner hook existed.  Its plan is
 * batched here, in a copy, before the executor starts, so that the first
 * query of a session runs like the later ones.  Only that statement is
 * looked at: every later one was planned through the hook.  A scroll
 * cursor's plan is left as the planner hook leaves it.
 */
static void
BatchExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (batch_first_statement)
	{
		PlannedStmt *copy;

		batch_first_statement = false;
		if (!IsParallelWorker() && !(eflags & EXEC_FLAG_BACKWARD) &&
			queryDesc->plannedstmt->commandType != CMD_UTILITY && silvan_batch_calls)
		{
			copy = copyObject(queryDesc->plannedstmt);
			if (BatchRewriteStmt(copy))
				queryDesc->plannedstmt = copy;
		}
	}
	if (prev_executor_start_hook)
		prev_executor_start_hook(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

PG_FUNCTION_INFO_V1(silvan_predict_calls_support);

/*
 * The planner support function of the scalar predict(), predict_proba()
 * and predict_raw(), and of predict_query and its variants: it answers no
 * request (NULL); that the planner calls it is what counts, as calling it
 * loads silvan while the first such query of a session is planned (the
 * hooks then batch it: BatchExecutorStart, and scan_node.c's path hook)
 */
Datum
silvan_predict_calls_support(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(NULL);
}

/* Install the planner hook (from _PG_init) */
void
BatchPlanInit(void)
{
	DefineCustomBoolVariable("silvan.batch_calls",
							 "Evaluate scalar predict() calls of a query in batches.",
							 "Calls whose model is a constant or a parameter are scored a batch of rows at a time by a \"Custom Scan (SilvanBatch)\"; off: one row at a time. Results are the same.",
							 &silvan_batch_calls, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.batch_calls_size",
							"Most rows a batch of scalar calls holds.",
							"Batches start small and grow to this, so that a LIMIT reads few rows more than it returns.",
							&silvan_batch_calls_size, 1024, 1, 65536, PGC_USERSET, 0,
							NULL, NULL, NULL);
	BatchNodeRegister();
	prev_planner_hook = planner_hook;
	planner_hook = BatchPlanner;
	prev_executor_start_hook = ExecutorStart_hook;
	ExecutorStart_hook = BatchExecutorStart;
	/* loaded by a session, maybe while it plans a statement that calls predict() */
	batch_first_statement = !process_shared_preload_libraries_in_progress;
}
