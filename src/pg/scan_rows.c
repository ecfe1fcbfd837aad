/*
 * scan_rows.c
 *		Reading the rows of a batched scan's source into a batch.
 *
 * The source's first column is the key; the features follow, either one
 * column each (integer, floating-point, numeric or boolean) or as one
 * array.  Each row becomes num_features values of the model's precision in
 * a dense row-major batch; SQL NULL becomes NaN, which the model treats as
 * missing.
 *
 * The common case is read without deforming the tuple at all: when the
 * executor hands over a heap tuple (a plain table scanned with no
 * projection, as predict_table's query is when the key is the table's
 * first column) whose descriptor has only fixed-width by-value columns
 * with float4 or float8 features, and the tuple has no NULLs, every value
 * sits at an offset known from the descriptor alone.  ScanHeapLayout
 * works those offsets out once per descriptor; ScanHeapRow then copies
 * the features straight from the tuple, with one memcpy when they are
 * adjacent values of the model's own type.  Any other row takes the
 * general path through slot_getallattrs.
 */
#include "scan.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

/* Error for a feature count that does not match the model */
static void
ReportFeatureCount(const BatchScan *state, int got)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("wrong number of features for model \"%s\"", state->model_name),
			 errdetail("Expected %d features, got %d.", state->forest->num_features, got)));
}

/* Check the key column of the source against what we return */
static void
ScanCheckKey(BatchScan *state, TupleDesc desc)
{
	Form_pg_attribute key = TupleDescAttr(desc, 0);

	if (state->output == SCORE_PROFILE || state->output == SCORE_SAMPLE)
	{
		/* profiling and sampling ignore keys: any type, copied like predict_query's */
		state->integer_key = false;
		state->declared_key_type = key->atttypid;
	}
	if (state->integer_key)
	{
		if (key->atttypid != INT2OID && key->atttypid != INT4OID && key->atttypid != INT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key column \"%s\" must be of an integer type", NameStr(key->attname)),
					 errdetail("Column \"%s\" has type %s.", NameStr(key->attname),
							   format_type_be(key->atttypid)),
					 errhint("Use silvan.predict_query() for keys of other types.")));
	}
	else if (key->atttypid != state->declared_key_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key column type does not match the declared result type"),
				 errdetail("The query's first column has type %s but the column definition list declares %s.",
						   format_type_be(key->atttypid),
						   format_type_be(state->declared_key_type))));
	state->key_type = key->atttypid;
	get_typlenbyval(key->atttypid, &state->key_typlen, &state->key_typbyval);
}

/* An int2, int4 or int8 key as int64 */
static inline int64
ScanIntegerKey(Datum value, Oid typid)
{
	if (typid == INT2OID)
		return DatumGetInt16(value);
	if (typid == INT4OID)
		return DatumGetInt32(value);
	return DatumGetInt64(value);
}

/* Check the feature columns and decide between columns and one array */
static void
ScanCheckFeatures(BatchScan *state, TupleDesc desc)
{
	state->num_columns = desc->natts - 1;
	if (state->num_columns < 1)
		ReportFeatureCount(state, 0);
	state->column_types = palloc(sizeof(Oid) * state->num_columns);
	for (int c = 0; c < state->num_columns; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, c + 1);
		Oid			elemtype = get_element_type(att->atttypid);

		state->column_types[c] = att->atttypid;
		if (state->num_columns == 1 && OidIsValid(elemtype))
		{
			if (!OidIsValid(FeatureElementType(elemtype)))
				FeaturesReportColumnType(NameStr(att->attname), att->atttypid);
			state->array_features = true;
			state->array_elemtype = elemtype;
			get_typlenbyvalalign(elemtype, &state->array_elemlen,
								 &state->array_elembyval, &state->array_elemalign);
		}
		else if (!OidIsValid(FeatureElementType(att->atttypid)))
			FeaturesReportColumnType(NameStr(att->attname), att->atttypid);
	}
	if (!state->array_features && state->check_positions)
		FeaturesCheckPositions(desc, 1, state->forest, state->model_name);
	if (!state->array_features && state->num_columns != state->forest->num_features)
		ReportFeatureCount(state, state->num_columns);
}

/* Validate the shape of the source (the receiver's startup) */
void
ScanCheckSource(BatchScan *state, TupleDesc desc)
{
	if (desc->natts < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source must return a key column and at least one feature column"),
				 errdetail("It returns %d column(s).", desc->natts)));
	ScanCheckKey(state, desc);
	ScanCheckFeatures(state, desc);
}

/* Store one feature value into a batch */
static inline void
ScanPutFeature(BatchScan *state, ScanBuffer *buffer, int64 index, double x)
{
	if (state->forest->precision == FOREST_FLOAT32)
		((float *) buffer->rows)[index] = (float) x;
	else
		((double *) buffer->rows)[index] = x;
}

/* The buffer whose page holds the slot's tuple, or InvalidBuffer */
static inline Buffer
ScanSlotBuffer(TupleTableSlot *slot)
{
	return TTS_IS_BUFFERTUPLE(slot) ? ((BufferHeapTupleTableSlot *) slot)->buffer : InvalidBuffer;
}

/*
 * Keep the page of page_buffer pinned until the batch's rows are emitted
 * (a pinned page is never evicted, and its tuples do not move); false when
 * the scan holds its share of shared_buffers in pins already
 */
static bool
ScanPinPage(ScanBuffer *buffer, Buffer page_buffer)
{
	if (buffer->num_pins > 0 && buffer->pins[buffer->num_pins - 1] == page_buffer)
		return true;
	/* both batches together keep at most 1/16 of shared_buffers pinned */
	if (buffer->num_pins >= NBuffers / 32)
		return false;
	IncrBufferRefCount(page_buffer);
	buffer->pins[buffer->num_pins++] = page_buffer;
	return true;
}

/*
 * Leave row r's features, the model's type and adjacent at src, where they
 * are, for the pipeline thread to gather (defer_rows); false when they may
 * not outlive this call.  They may when they are in the batch's own memory
 * (a detoasted array, in_batch) or on the page of page_buffer, which
 * is then pinned until the batch is emitted: a pinned page is never
 * evicted, and its tuples do not move.  Past a share of shared_buffers in
 * pins, rows are copied as usual.
 */
static bool
ScanDeferRow(BatchScan *state, Buffer page_buffer, ScanBuffer *buffer, int r,
			 const char *src, bool in_batch)
{
	const char *page;
	size_t		bytes = (size_t) state->forest->num_features * ForestValueSize(state->forest);

	if (!state->defer_rows)
		return false;
	if (!in_batch)
	{
		if (!BufferIsValid(page_buffer))
			return false;
		page = (const char *) BufferGetPage(page_buffer);
		if (src < page || src + bytes > page + BLCKSZ || !ScanPinPage(buffer, page_buffer))
			return false;
	}
	buffer->sources[r] = src;
	buffer->any_deferred = true;
	return true;
}

/* Copy a float4[]/float8[] without NULLs straight into the batch; false otherwise */
static bool
ScanPutFloatArray(BatchScan *state, TupleTableSlot *slot, ScanBuffer *buffer, int r,
				  ArrayType *array, bool in_batch)
{
	int64		base = (int64) r * state->forest->num_features;
	int			n = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	Oid			elemtype = ARR_ELEMTYPE(array);

	if (ARR_HASNULL(array) || (elemtype != FLOAT4OID && elemtype != FLOAT8OID))
		return false;
	if (n != state->forest->num_features)
		ReportFeatureCount(state, n);
	if (elemtype == (state->forest->precision == FOREST_FLOAT32 ? FLOAT4OID : FLOAT8OID))
	{
		if (!ScanDeferRow(state, ScanSlotBuffer(slot), buffer, r, ARR_DATA_PTR(array), in_batch))
			memcpy(buffer->rows + base * ForestValueSize(state->forest), ARR_DATA_PTR(array),
				   (Size) n * ForestValueSize(state->forest));
	}
	else if (elemtype == FLOAT4OID)
	{
		const float4 *v = (const float4 *) ARR_DATA_PTR(array);

		for (int i = 0; i < n; i++)
			ScanPutFeature(state, buffer, base + i, v[i]);
	}
	else
	{
		const float8 *v = (const float8 *) ARR_DATA_PTR(array);

		for (int i = 0; i < n; i++)
			ScanPutFeature(state, buffer, base + i, v[i]);
	}
	return true;
}

/* Copy the features of a non-NULL array value into row r */
static void
ScanPutArray(BatchScan *state, TupleTableSlot *slot, ScanBuffer *buffer, int r, Datum value)
{
	ArrayType  *array = DatumGetArrayTypeP(value);
	bool		in_batch = (Pointer) array != DatumGetPointer(value);	/* detoasted here */
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int64		base = (int64) r * state->forest->num_features;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features must be a one-dimensional array"),
				 errdetail("A feature array has %d dimensions.", ARR_NDIM(array))));
	if (ScanPutFloatArray(state, slot, buffer, r, array, in_batch))
		return;
	deconstruct_array(array, state->array_elemtype, state->array_elemlen,
					  state->array_elembyval, state->array_elemalign,
					  &elems, &nulls, &n);
	if (n != state->forest->num_features)
		ReportFeatureCount(state, n);
	for (int i = 0; i < n; i++)
		ScanPutFeature(state, buffer, base + i,
					   nulls[i] ? NAN : FeatureDatumToDouble(elems[i], state->array_elemtype));
}

/* A feature column's value as double; the common float types inline */
static inline double
ScanColumnValue(Datum value, bool isnull, Oid typid)
{
	if (isnull)
		return NAN;
	if (typid == FLOAT4OID)
		return DatumGetFloat4(value);
	if (typid == FLOAT8OID)
		return DatumGetFloat8(value);
	return FeatureDatumToDouble(value, typid);
}

/*
 * Does a slot descriptor have the layout ScanHeapRow reads in place: the
 * query's own columns, all fixed-width and passed by value, the features
 * float4 or float8?  Fills state->heap_offsets (valid for tuples without
 * NULLs) and state->heap_contiguous.
 */
static bool
ScanHeapLayout(BatchScan *state, TupleDesc desc)
{
	int32		offset = 0;
	Oid			model_type = state->forest->precision == FOREST_FLOAT32 ? FLOAT4OID : FLOAT8OID;

	if (state->array_features || desc->natts != state->num_columns + 1)
		return false;
	if (state->heap_offsets == NULL)
		state->heap_offsets = MemoryContextAlloc(state->cxt, sizeof(int32) * desc->natts);
	state->heap_contiguous = true;
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		Oid			expected = a == 0 ? state->key_type : state->column_types[a - 1];

		if (att->attisdropped || att->attlen <= 0 || !att->attbyval ||
			att->atttypid != expected ||
			(a > 0 && expected != FLOAT4OID && expected != FLOAT8OID))
			return false;
		offset = att_align_nominal(offset, att->attalign);
		state->heap_offsets[a] = offset;
		if (a > 0 && (expected != model_type ||
					  offset != state->heap_offsets[1] + (a - 1) * att->attlen))
			state->heap_contiguous = false;
		offset += att->attlen;
	}
	return true;
}

/* Does descriptor desc have the fixed layout (ScanHeapLayout, worked out once per descriptor)? */
static bool
ScanHeapLayoutOf(BatchScan *state, TupleDesc desc)
{
	if (desc != state->heap_desc)
	{
		state->heap_desc = desc;
		state->heap_layout = ScanHeapLayout(state, desc);
	}
	return state->heap_layout;
}

/*
 * Read row r straight from a heap tuple of descriptor desc, on the page of
 * page_buffer (or InvalidBuffer), without deforming it; false (nothing
 * stored) when the tuple does not have the fixed layout: NULLs, or fewer
 * stored attributes than columns
 */
static bool
ScanHeapTupleRow(BatchScan *state, HeapTuple tuple, TupleDesc desc, Buffer page_buffer,
				 ScanBuffer *buffer, int r)
{
	HeapTupleHeader header;
	const char *data;
	int			n = state->num_columns;
	int64		base = (int64) r * n;

	if (!ScanHeapLayoutOf(state, desc) || tuple == NULL)
		return false;
	header = tuple->t_data;
	if (HeapTupleHasNulls(tuple) || HeapTupleHeaderGetNatts(header) < n + 1)
		return false;
	data = (const char *) header + header->t_hoff;
	buffer->key_nulls[r] = false;
	buffer->row_nulls[r] = false;
	buffer->keys[r] = fetch_att(data, true, TupleDescAttr(desc, 0)->attlen);
	if (state->integer_key)
		buffer->keys[r] = Int64GetDatum(ScanIntegerKey(buffer->keys[r], state->key_type));
	if (state->heap_contiguous)
	{
		if (!ScanDeferRow(state, page_buffer, buffer, r, data + state->heap_offsets[1], false))
			memcpy(buffer->rows + base * ForestValueSize(state->forest),
				   data + state->heap_offsets[1], n * ForestValueSize(state->forest));
	}
	else
		for (int c = 0; c < n; c++)
		{
			const char *v = data + state->heap_offsets[c + 1];

			ScanPutFeature(state, buffer, base + c, state->column_types[c] == FLOAT4OID ?
						   *(const float4 *) v : *(const float8 *) v);
		}
	return true;
}

/*
 * Can a page's tuples of descriptor desc go into the batch a run at a time
 * (ScanReadHeapRun): read in place, their features left where they are?
 */
bool
ScanReadsHeapRuns(BatchScan *state, TupleDesc desc)
{
	return ScanHeapLayoutOf(state, desc) && state->defer_rows && state->heap_contiguous;
}

/*
 * Read the visible tuples at offsets[0..count) of page (the page of
 * page_buffer) into the filling batch, as ScanReadHeapTuple reads one, for
 * a source ScanReadsHeapRuns accepts, up to the first that is not of the
 * fixed layout (NULLs, fewer stored attributes) or the end of the batch;
 * returns how many it read.  One tight loop over the page instead of a
 * tuple at a time through the receiver: with two threads the backend's
 * reading sets the pace of a small model's scan (lgbm_multiclass on two
 * threads: 4.8 instead of 5.1 ms for 100,000 rows).
 */
int
ScanReadHeapRun(BatchScan *state, TupleDesc desc, Page page, Buffer page_buffer,
				const OffsetNumber *offsets, int count)
{
	ScanBuffer *buffer = state->filling;
	int			natts = state->num_columns + 1;
	int16		key_length = TupleDescAttr(desc, 0)->attlen;
	int32		features = state->heap_offsets[1];
	Size		end = features + (Size) state->forest->num_features * ForestValueSize(state->forest);
	int			first = buffer->num_rows;
	int			r = first;

	count = Min(count, state->flush_rows - first);
	if (count <= 0 || !ScanPinPage(buffer, page_buffer))
		return 0;
	for (; r < first + count; r++)
	{
		ItemId		item = PageGetItemId(page, offsets[r - first]);
		HeapTupleHeader header = (HeapTupleHeader) PageGetItem(page, item);
		const char *data = (const char *) header + header->t_hoff;
		Datum		key;

		if ((header->t_infomask & HEAP_HASNULL) || HeapTupleHeaderGetNatts(header) < natts ||
			header->t_hoff + end > ItemIdGetLength(item))
			break;
		key = fetch_att(data, true, key_length);
		buffer->keys[r] = state->integer_key ?
			Int64GetDatum(ScanIntegerKey(key, state->key_type)) : key;
		buffer->key_nulls[r] = false;
		buffer->row_nulls[r] = false;
		buffer->sources[r] = data + features;
	}
	if (r > first)
		buffer->any_deferred = true;
	buffer->num_rows = r;
	return r - first;
}

/* ScanHeapTupleRow for the heap tuple in a slot; false for any other slot */
static bool
ScanHeapRow(BatchScan *state, TupleTableSlot *slot, ScanBuffer *buffer, int r)
{
	if (!TTS_IS_BUFFERTUPLE(slot) && !TTS_IS_HEAPTUPLE(slot))
		return false;
	return ScanHeapTupleRow(state, ((HeapTupleTableSlot *) slot)->tuple, slot->tts_tupleDescriptor,
							ScanSlotBuffer(slot), buffer, r);
}

/*
 * The tuple SCAN_PREFETCH_AHEAD line pointers after the slot's on the same
 * page, and its length; NULL when there is none.
 */
static const char *
ScanTupleAhead(TupleTableSlot *slot, Size *length)
{
	HeapTuple	tuple = ((HeapTupleTableSlot *) slot)->tuple;
	Buffer		page_buffer = ((BufferHeapTupleTableSlot *) slot)->buffer;
	OffsetNumber ahead;
	Page		page;
	ItemId		item;

	if (tuple == NULL || !BufferIsValid(page_buffer) || !ItemPointerIsValid(&tuple->t_self))
		return NULL;
	page = BufferGetPage(page_buffer);
	ahead = ItemPointerGetOffsetNumberNoCheck(&tuple->t_self) + SCAN_PREFETCH_AHEAD;
	if (ahead > PageGetMaxOffsetNumber(page))
		return NULL;
	item = PageGetItemId(page, ahead);
	if (!ItemIdIsNormal(item) || ItemIdGetOffset(item) + ItemIdGetLength(item) > BLCKSZ)
		return NULL;
	*length = ItemIdGetLength(item);
	return (const char *) page + ItemIdGetOffset(item);
}

/*
 * Ask the caches for a row we will read soon: a sequential scan returns a
 * page's tuples in line pointer order (scan.h: ScanPrefetchTuple)
 */
static pg_attribute_always_inline void
ScanPrefetchAhead(TupleTableSlot *slot)
{
	const char *ahead;
	Size		length = 0;

	if (TTS_IS_BUFFERTUPLE(slot) && (ahead = ScanTupleAhead(slot, &length)) != NULL)
		ScanPrefetchTuple(ahead, length);
}

/* Read row r of a batch from the slot's deformed values: any slot, any layout */
static void
ScanReadDeformed(BatchScan *state, TupleTableSlot *slot, ScanBuffer *buffer, int r)
{
	int64		base = (int64) r * state->forest->num_features;
	MemoryContext old;

	slot_getallattrs(slot);
	buffer->key_nulls[r] = slot->tts_isnull[0];
	buffer->row_nulls[r] = false;
	old = MemoryContextSwitchTo(buffer->cxt);
	if (slot->tts_isnull[0])
		buffer->keys[r] = (Datum) 0;
	else if (state->integer_key)
		buffer->keys[r] = Int64GetDatum(ScanIntegerKey(slot->tts_values[0], state->key_type));
	else
		buffer->keys[r] = datumCopy(slot->tts_values[0], state->key_typbyval, state->key_typlen);
	if (state->array_features)
	{
		if (slot->tts_isnull[1])
			buffer->row_nulls[r] = true;
		else
			ScanPutArray(state, slot, buffer, r, slot->tts_values[1]);
	}
	else
		for (int c = 0; c < state->num_columns; c++)
			ScanPutFeature(state, buffer, base + c,
						   ScanColumnValue(slot->tts_values[c + 1], slot->tts_isnull[c + 1],
										   state->column_types[c]));
	MemoryContextSwitchTo(old);
}

/* Read one source row into the next row of a batch */
void
ScanReadRow(BatchScan *state, TupleTableSlot *slot, ScanBuffer *buffer)
{
	int			r = buffer->num_rows;

	if (state->defer_rows)
		buffer->sources[r] = NULL;
	else
		ScanPrefetchAhead(slot);
	if (!ScanHeapRow(state, slot, buffer, r))
		ScanReadDeformed(state, slot, buffer, r);
	buffer->num_rows++;
}

/*
 * Read a heap tuple on the page of page_buffer into the next row of a
 * batch, as ScanReadRow reads a slot's: in place when it has the fixed
 * layout, else deformed in slot (a slot of the tuple's descriptor, left
 * empty)
 */
void
ScanReadHeapTuple(BatchScan *state, HeapTuple tuple, Buffer page_buffer, TupleTableSlot *slot,
				  ScanBuffer *buffer)
{
	int			r = buffer->num_rows;

	if (state->defer_rows)
		buffer->sources[r] = NULL;
	if (!ScanHeapTupleRow(state, tuple, slot->tts_tupleDescriptor, page_buffer, buffer, r))
	{
		ExecStoreBufferHeapTuple(tuple, slot, page_buffer);
		ScanReadDeformed(state, slot, buffer, r);
		ExecClearTuple(slot);
	}
	buffer->num_rows++;
}
