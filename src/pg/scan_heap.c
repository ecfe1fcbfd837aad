/*
 * scan_heap.c
 *		Reading a streamed scan's source a heap page at a time.
 *
 * predict_table's source is "SELECT key, features FROM table".  Run by the
 * executor, each of its rows passes through ExecutePlan, the sequential
 * scan's node, heap_getnextslot, a slot and the scan's receiver before
 * scan_rows.c copies its features.  On a small model that path costs the
 * backend more than the scoring does, and it is the backend's own serial
 * share that a second thread cannot take over: with silvan.max_threads = 2
 * the pipeline thread scores while the backend reads, and the backend
 * then sets the pace.
 *
 * So when the planned source is a bare sequential scan of a heap table (no
 * filter: row-level security's policies would be one; no projection; no
 * inheritance children, which would make it an Append; not a chunk of a
 * parallel scan, which is a TID range scan), the custom scan starts the
 * source's executor as always (the plan, its permission checks and locks,
 * the query's snapshot) but reads the table itself: a heap scan of its own
 * on that snapshot, heapgetpage for each page (visibility, pruning,
 * serializable checks and the predicate lock the executor's scan takes),
 * and each visible tuple straight into the batch.  When the features are
 * left in place for the pipeline thread (scan_rows.c: a pipelined scan of
 * the fixed layout), a page's tuples go in a run at a time
 * (ScanReadHeapRun), one tight loop over their line pointers.  A tuple
 * that is not of the fixed layout scan_rows.c reads in place (a NULL, an
 * array) goes through the sequential scan's slot and the general path.
 * The scan does not synchronize its start with other scans of the table,
 * so its rows come in page order; nothing else differs from the executor's
 * run.
 */
#include "scan.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"

struct ScanHeapReader
{
	ScanState  *node;			/* the source's sequential scan */
	TableScanDesc scan;			/* ours, on the source's snapshot */
	BlockNumber page;			/* the page being read */
	int			next;			/* its next visible tuple (index in rs_vistuples) */
	bool		on_page;		/* a page is read and not yet done */
	TupleDesc	desc;			/* the source's result, which the receiver checks */
	bool		started;		/* the receiver has checked it */
};

/*
 * Can the source be read a page at a time: is its plan one sequential scan
 * of a heap table, without a filter or a projection?
 */
bool
ScanHeapReadable(QueryDesc *source)
{
	PlanState  *ps = source->planstate;
	Relation	rel;

	if (ps == NULL || !IsA(ps, SeqScanState) || ps->plan->qual != NIL ||
		ps->ps_ProjInfo != NULL || ps->instrument != NULL)
		return false;
	rel = ((ScanState *) ps)->ss_currentRelation;
	return rel != NULL && rel->rd_tableam == GetHeapamTableAmRoutine() &&
		source->estate->es_snapshot != NULL && IsMVCCSnapshot(source->estate->es_snapshot);
}

/* Start reading a source ScanHeapReadable accepted */
ScanHeapReader *
ScanHeapBegin(QueryDesc *source)
{
	ScanHeapReader *reader = palloc0(sizeof(ScanHeapReader));
	ScanState  *node = (ScanState *) source->planstate;

	reader->node = node;
	/* (no synchronized start: the rows come in page order, as the tests see them) */
	reader->scan = table_beginscan_strat(node->ss_currentRelation, source->estate->es_snapshot,
										 0, NULL, true, false);
	/* page at a time, as on an MVCC snapshot (ScanHeapReadable) */
	Assert(reader->scan->rs_flags & SO_ALLOW_PAGEMODE);
	reader->desc = source->tupDesc;
	return reader;
}

/* Ask the caches for the tuple at visible index i of the page, if there is one */
static pg_attribute_always_inline void
ScanHeapPrefetch(HeapScanDesc scan, Page page, int i)
{
	ItemId		item;

	if (i >= scan->rs_ntuples)
		return;
	item = PageGetItemId(page, scan->rs_vistuples[i]);
	ScanPrefetchTuple((const char *) PageGetItem(page, item), ItemIdGetLength(item));
}

/*
 * Read up to wanted rows into state's batches (each full batch is scored
 * as the receiver scores it); true when the table is done
 */
bool
ScanHeapRead(ScanHeapReader *reader, BatchScan *state, int64 wanted)
{
	HeapScanDesc scan = (HeapScanDesc) reader->scan;
	Relation	rel = reader->scan->rs_rd;
	TupleTableSlot *slot = reader->node->ss_ScanTupleSlot;
	HeapTupleData tuple;

	/* the receiver checks the source's shape first, as at the start of an executor run */
	if (!reader->started)
	{
		state->pub.rStartup(&state->pub, CMD_SELECT, reader->desc);
		reader->started = true;
	}
	tuple.t_tableOid = RelationGetRelid(rel);
	while (wanted > 0)
	{
		Page		page;
		bool		runs;

		if (!reader->on_page)
		{
			if (reader->page >= scan->rs_nblocks)
				return true;
			/* (which answers a cancel first) */
			heapgetpage(reader->scan, reader->page);
			reader->next = 0;
			reader->on_page = true;
		}
		page = BufferGetPage(scan->rs_cbuf);
		TestForOldSnapshot(reader->scan->rs_snapshot, rel, page);
		runs = ScanReadsHeapRuns(state, slot->tts_tupleDescriptor);
		while (reader->next < scan->rs_ntuples && wanted > 0)
		{
			int			read = 0;

			if (runs)
				read = ScanReceiveHeapRun(state, slot->tts_tupleDescriptor, page, scan->rs_cbuf,
										  scan->rs_vistuples + reader->next,
										  Min(scan->rs_ntuples - reader->next, wanted));
			if (read == 0)
			{
				/* one tuple the general way */
				OffsetNumber offset = scan->rs_vistuples[reader->next];
				ItemId		item = PageGetItemId(page, offset);

				if (!state->defer_rows)
					ScanHeapPrefetch(scan, page, reader->next + SCAN_PREFETCH_AHEAD);
				tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
				tuple.t_len = ItemIdGetLength(item);
				ItemPointerSet(&tuple.t_self, reader->page, offset);
				ScanReceiveHeapTuple(state, &tuple, scan->rs_cbuf, slot);
				read = 1;
			}
			reader->next += read;
			wanted -= read;
		}
		if (reader->next >= scan->rs_ntuples)
		{
			reader->on_page = false;
			reader->page++;
		}
	}
	return false;
}

/* Stop reading: end our heap scan, and with it its page's pin */
void
ScanHeapEnd(ScanHeapReader *reader)
{
	ExecClearTuple(reader->node->ss_ScanTupleSlot);
	table_endscan(reader->scan);
	pfree(reader);
}
