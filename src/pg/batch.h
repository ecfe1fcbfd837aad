/*
 * batch.h
 *		Batched evaluation of scalar calls: the planner's rewrite
 *		(batch_plan.c) and the "Custom Scan (SilvanBatch)" node that runs
 *		it (batch_node.c).
 *
 * The node's plan: lefttree is the child; custom_scan_tlist the scan
 * tuple, the child's columns and then one column per call;
 * custom_exprs each call's model and features, in turn, over the child's
 * row (OUTER_VAR); custom_private the child's column count, each call's
 * ScoreOutput and function OID.
 */
#ifndef SILVAN_BATCH_H
#define SILVAN_BATCH_H

#include "nodes/extensible.h"

extern bool silvan_batch_calls;
extern int	silvan_batch_calls_size;
extern CustomScanMethods batch_plan_methods;

extern void BatchNodeRegister(void);
extern void BatchPlanInit(void);

#endif
