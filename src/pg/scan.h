/*
 * scan.h
 *		The state of a batched scan, shared by scan.c (the receiver, its
 *		batches and the set-returning functions) and scan_rows.c (reading
 *		source rows into a batch).
 */
#ifndef SILVAN_SCAN_H
#define SILVAN_SCAN_H

#include "silvan_pg.h"

#include "executor/execdesc.h"
#include "executor/tuptable.h"
#include "tcop/dest.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

/* One batch of source rows and the buffers its scoring writes */
typedef struct ScanBuffer
{
	int			num_rows;
	char	   *rows;			/* chunk_rows * num_features values */
	Size		rows_size;		/* bytes allocated for rows */
	void	   *acc;
	double	   *margins;
	Datum	   *keys;
	bool	   *key_nulls;
	bool	   *row_nulls;		/* whole feature array NULL: result NULL */
	MemoryContext cxt;			/* copied keys, detoasted arrays */
	ScoreTask	task;			/* its scoring, maybe on the pipeline thread */
	/* rows left in place until the pipeline thread gathers them (defer_rows) */
	const char **sources;		/* per row: where its features are, or NULL */
	bool		any_deferred;
	Buffer	   *pins;			/* pinned pages those rows are on */
	int			num_pins;
} ScanBuffer;

typedef struct BatchScan
{
	DestReceiver pub;			/* must be first */
	const char *model_name;
	ModelVersion *version;
	Forest	   *forest;
	ScoreOutput output;
	MemoryContext cxt;			/* the scan's own: what it works out about the source */
	bool		integer_key;	/* predict_table: key becomes bigint */
	bool		check_positions;	/* no column may bear another feature's name */

	/* predict_table's source: the query is built once the model is known */
	Oid			source_relid;
	char	   *key_column;
	ArrayType  *feature_columns;	/* NULL: match by name or position */
	Oid			declared_key_type;	/* predict_query: the caller's key type */

	/* the shape of the source, set up at startup (scan_rows.c) */
	int			num_columns;	/* feature columns after the key */
	bool		array_features; /* one array column holds all features */
	Oid		   *column_types;
	Oid			array_elemtype;
	int16		array_elemlen;
	bool		array_elembyval;
	char		array_elemalign;
	Oid			key_type;
	int16		key_typlen;
	bool		key_typbyval;

	/* rows read in place from heap tuples of a fixed layout (scan_rows.c) */
	TupleDesc	heap_desc;		/* the slot descriptor last checked */
	bool		heap_layout;	/* does heap_desc have the fixed layout? */
	bool		heap_contiguous;	/* features: adjacent values of the model's type */
	int32	   *heap_offsets;	/* per source column: offset in the tuple data */

	/* batches: one filling, and with more than one thread one being scored */
	int			batch_size;		/* the batch the code was compiled for */
	int			chunk_rows;		/* rows scored at a time: the batch or less */
	int			flush_rows;		/* rows of the filling batch that flush it */
	bool		pipelined;
	bool		on_device;		/* batches run on a GPU: two may be in flight */
	bool		defer_rows;		/* rows copied on the pipeline thread (pipelined) */
	ScanBuffer	buffers[2];
	ScanBuffer *filling;
	ScanBuffer *scoring;		/* started, results not yet emitted; or NULL */
	double	   *scratch;
	MemoryContext result_cxt;	/* one result row's Datums */

	Tuplestorestate *tupstore;	/* NULL when profiling */
	TupleDesc	result_desc;
	/* results of two fixed-width by-value columns: one tuple patched per row */
	MinimalTuple result_template;	/* NULL: form each result tuple */
	char	   *result_values[2];	/* where its two values are */
	TupleTableSlot *result_slot;
	int64	   *node_hits;		/* SCORE_PROFILE: hits per node */
	int64		rows_seen;
	ScoreCosts	costs;			/* its share of scoring's (EXPLAIN ANALYZE) */
	int64		row_limit;		/* stop the query after this many rows; 0: all */
	char	   *sample;			/* SCORE_SAMPLE: row_limit rows, malloc'd */
	int64		sample_rows;	/* rows kept so far */

	/*
	 * Streamed by the custom scan (scan_node.c): scored batches wait here,
	 * oldest first, until the node has returned their rows
	 */
	bool		streaming;
	ScanBuffer *ready[2];
	int			num_ready;
	bool		source_checked; /* the receiver's startup ran once */
	bool		pinned;			/* holds a pin on version */
	char	   *query;			/* the source query (predict_table's, built) */
} BatchScan;

/* scan.c: a scan streamed by the custom scan node */
extern int	ScanCheckBatchSize(bool isnull, int32 batch_size);
extern void ScanCheckTableArgs(bool model_null, bool source_null, bool key_null);
extern void ScanCheckQueryArgs(bool model_null, bool query_null);
extern void ScanCheckResultDesc(TupleDesc desc, ScoreOutput output);
extern void ScanCheckSourceQueries(int num_statements, List *queries);
extern BatchScan *ScanStreamOpen(ScoreOutput output, const char *model, Oid relid,
								 const char *key_column, ArrayType *feature_columns,
								 int batch_size);
extern BatchScan *ScanStreamOpenQuery(ScoreOutput output, const char *model, const char *query,
									  Oid key_type, int batch_size);
extern void ScanStreamStart(BatchScan *state);
extern int	ScanStreamWanted(const BatchScan *state);
extern void ScanStreamEnd(BatchScan *state);
extern void ScanStreamRelease(BatchScan *state);
extern void ScanClose(BatchScan *state);
extern void ScanStreamUnpin(BatchScan *state);
extern Datum ScanResult(const BatchScan *state, const ScanBuffer *buffer, int r);
extern int	ScanReceiveHeapRun(BatchScan *state, TupleDesc desc, Page page, Buffer page_buffer,
							   const OffsetNumber *offsets, int count);
extern void ScanReceiveHeapTuple(BatchScan *state, HeapTuple tuple, Buffer page_buffer,
								 TupleTableSlot *slot);

/*
 * Reading a table's tuples in order, a scan asks the caches for the tuple
 * SCAN_PREFETCH_AHEAD ahead, at most SCAN_PREFETCH_MAX_BYTES of it: ours is
 * the first touch of each one's memory, and without this the copy of a
 * wide row waits on memory one row at a time (year's 90 features: a tenth
 * of predict_table's time).
 */
#define SCAN_PREFETCH_AHEAD		2
#define SCAN_PREFETCH_MAX_BYTES	4096
/* x86's and most ARM cores' cache line (PG_CACHE_LINE_SIZE is 128, for padding) */
#define SCAN_PREFETCH_LINE		64

/*
 * Ask the caches for the first SCAN_PREFETCH_MAX_BYTES of a tuple of
 * length bytes.  Always inlined: GCC 12 at -O2 drops a prefetch loop in a
 * function of its own, call and all (with -fno-aggressive-loop-optimizations
 * it keeps it).
 */
static pg_attribute_always_inline void
ScanPrefetchTuple(const char *tuple, Size length)
{
	length = Min(length, SCAN_PREFETCH_MAX_BYTES);
	for (Size offset = 0; offset < length; offset += SCAN_PREFETCH_LINE)
		__builtin_prefetch(tuple + offset);
}

/* scan_rows.c */
extern void ScanCheckSource(BatchScan *state, TupleDesc desc);
extern void ScanReadRow(BatchScan *state, TupleTableSlot *slot, ScanBuffer *buffer);
extern bool ScanReadsHeapRuns(BatchScan *state, TupleDesc desc);
extern int	ScanReadHeapRun(BatchScan *state, TupleDesc desc, Page page, Buffer page_buffer,
							const OffsetNumber *offsets, int count);
extern void ScanReadHeapTuple(BatchScan *state, HeapTuple tuple, Buffer page_buffer,
							  TupleTableSlot *slot, ScanBuffer *buffer);

/* scan_heap.c: a bare sequential scan of a heap table, read a page at a time */
typedef struct ScanHeapReader ScanHeapReader;
extern bool ScanHeapReadable(QueryDesc *source);
extern ScanHeapReader *ScanHeapBegin(QueryDesc *source);
extern bool ScanHeapRead(ScanHeapReader *reader, BatchScan *state, int64 wanted);
extern void ScanHeapEnd(ScanHeapReader *reader);

#endif							/* SILVAN_SCAN_H */
