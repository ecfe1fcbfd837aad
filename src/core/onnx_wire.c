/*
 * onnx_wire.c
 *		Decode an ONNX ModelProto within a memory budget.
 *
 * protobuf-c decodes a message whole, with no limits: every field it
 * meets costs a 32-byte record while it scans, every message its struct
 * (168 bytes for an AttributeProto), every string its own allocation,
 * every unknown field a copy, and every number of a repeated field eight
 * bytes however few it took on the wire: 30 MB of empty attributes
 * would take it 3 GB.  Real models are mostly the ensemble's attributes,
 * repeated varints of one or two bytes and short strings, which
 * protobuf-c alone inflates four to five times.
 *
 * So the model is decoded in three steps, each within the read's budget
 * (decode_budget.h):
 *
 *   1. A walk over the wire, allocating only what it writes, copies the
 *      ModelProto without its nodes' attributes (the skeleton) and notes
 *      where each node's attributes lie.  The counts of nodes and
 *      attributes are then checked against the budget before anything is
 *      decoded.
 *   2. protobuf-c decodes the skeleton through a bounded allocator
 *      (OnnxAlloc): each allocation is charged to the budget, one past it
 *      fails, and protobuf-c, which checks every allocation, fails
 *      cleanly.  The allocator also polls for cancellation.
 *   3. Each attribute is checked and decoded on its own: its repeated
 *      floats, ints and strings are checked here as protobuf-c would
 *      check them and counted, but left on the wire; protobuf-c decodes
 *      the rest (name, type, scalars, tensors) from a copy without them.
 *      The reader reads the repeated fields with OnnxIter into arrays it
 *      sizes and charges itself.
 *
 * The walk checks each field as protobuf-c's scan does (tags, varints of
 * at most ten bytes, lengths within the message and below 2 GB, wire
 * types 0, 1, 2 and 5), and everything it does not take apart goes to
 * protobuf-c, so a model protobuf-c would refuse is refused, with the
 * same syntax error.  Nested lengths in the skeleton are written as
 * five-byte varints, which protobuf-c reads like any other.  A ModelProto
 * whose graph field appears twice is merged by protobuf-c, nodes
 * concatenated in order: the walk numbers nodes across both, in order.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "onnx_wire.h"

/* Bytes before each block the allocator hands out: its size */
#define ONNX_ALLOC_HEADER	16

/* Model and graph fields the walk descends into, and the node field it takes out */
#define MODEL_GRAPH		7
#define GRAPH_NODE		1
#define NODE_ATTRIBUTE	5

/* Wire types */
#define WIRE_VARINT		0
#define WIRE_64BIT		1
#define WIRE_LEN		2
#define WIRE_32BIT		5

/* A field as protobuf-c's scan reads it */
typedef struct WireField
{
	uint32_t	number;
	uint8_t		wire;
	const uint8_t *start;		/* its tag */
	size_t		tag_len;
	const uint8_t *value;		/* its value (after a length prefix) */
	size_t		len;
	const uint8_t *end;
} WireField;

/* A growing buffer charged to the budget */
typedef struct WireBuf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
} WireBuf;

/* Where an attribute's bytes lie */
typedef struct WireSpan
{
	const uint8_t *data;
	size_t		len;
} WireSpan;

/* The skeleton walk's state */
typedef struct Strip
{
	DecodeBudget *budget;
	WireBuf		out;			/* the skeleton */
	WireSpan   *spans;			/* each attribute's bytes, node by node */
	size_t		num_spans;
	size_t		span_cap;
	size_t	   *first;			/* first span of each node */
	size_t		num_nodes;
	size_t		node_cap;
	int64_t		charged;
	uint32_t	ticks;
	bool		canceled;
	bool		refused;
} Strip;

/* Allocate and charge a block for protobuf-c */
static void *
OnnxAllocAlloc(void *data, size_t size)
{
	OnnxAlloc  *a = data;
	int64_t		charge = (int64_t) size + ONNX_ALLOC_HEADER + DECODE_CHUNK_OVERHEAD;
	uint8_t    *p;

	if (a->canceled)
		return NULL;
	if ((++a->calls & 4095) == 0 && CancelRequested())
	{
		a->canceled = true;
		return NULL;
	}
	if (size > ((size_t) 1 << 40) || !DecodeTake(a->budget, charge, a->what))
		return NULL;
	if ((p = malloc(size + ONNX_ALLOC_HEADER)) == NULL)
	{
		DecodeRelease(a->budget, charge);
		return NULL;
	}
	memcpy(p, &size, sizeof(size));
	return p + ONNX_ALLOC_HEADER;
}

/* Free a block of OnnxAllocAlloc's and give back its charge */
static void
OnnxAllocFree(void *data, void *pointer)
{
	OnnxAlloc  *a = data;
	uint8_t    *p = pointer;
	size_t		size;

	if (p == NULL)
		return;
	p -= ONNX_ALLOC_HEADER;
	memcpy(&size, p, sizeof(size));
	DecodeRelease(a->budget, (int64_t) size + ONNX_ALLOC_HEADER + DECODE_CHUNK_OVERHEAD);
	free(p);
}

/* Set up an allocator charging budget */
void
OnnxAllocInit(OnnxAlloc *alloc, DecodeBudget *budget)
{
	memset(alloc, 0, sizeof(*alloc));
	alloc->base.alloc = OnnxAllocAlloc;
	alloc->base.free = OnnxAllocFree;
	alloc->base.allocator_data = alloc;
	alloc->budget = budget;
	alloc->what = "the ONNX model";
}

/* Read the field at *p as protobuf-c's scan does; false where it would fail */
static bool
WireNext(const uint8_t **p, const uint8_t *end, WireField *f)
{
	const uint8_t *at = *p;
	size_t		rem = (size_t) (end - at);
	unsigned	max_rv = rem > 5 ? 5 : (unsigned) rem;
	uint32_t	tag;
	unsigned	shift = 4;
	unsigned	used = 0;

	if (rem == 0 || (at[0] & 0xf8) == 0)
		return false;
	f->wire = at[0] & 7;
	tag = (at[0] & 0x7f) >> 3;
	if ((at[0] & 0x80) == 0)
		used = 1;
	for (unsigned rv = 1; used == 0 && rv < max_rv; rv++)
	{
		if (at[rv] & 0x80)
		{
			tag |= (uint32_t) (at[rv] & 0x7f) << shift;
			shift += 7;
		}
		else
		{
			tag |= (uint32_t) at[rv] << shift;
			used = rv + 1;
		}
	}
	if (used == 0)
		return false;
	f->number = tag;
	f->start = at;
	f->tag_len = used;
	at += used;
	rem -= used;
	switch (f->wire)
	{
		case WIRE_VARINT:
			{
				unsigned	max_len = rem < 10 ? (unsigned) rem : 10;
				unsigned	i;

				for (i = 0; i < max_len; i++)
					if ((at[i] & 0x80) == 0)
						break;
				if (i == max_len)
					return false;
				f->value = at;
				f->len = i + 1;
				break;
			}
		case WIRE_64BIT:
		case WIRE_32BIT:
			f->len = f->wire == WIRE_64BIT ? 8 : 4;
			if (rem < f->len)
				return false;
			f->value = at;
			break;
		case WIRE_LEN:
			{
				unsigned	hdr_max = rem < 5 ? (unsigned) rem : 5;
				size_t		val = 0;
				unsigned	i;

				for (i = 0; i < hdr_max; i++)
				{
					val |= ((size_t) at[i] & 0x7f) << (7 * i);
					if ((at[i] & 0x80) == 0)
						break;
				}
				if (i == hdr_max || val > INT_MAX || i + 1 + val > rem)
					return false;
				f->value = at + i + 1;
				f->len = val;
				break;
			}
		default:
			return false;
	}
	f->end = f->value + f->len;
	*p = f->end;
	return true;
}

/* Make room for n more entries of size bytes in a growing array, charged */
static bool
StripGrow(Strip *s, void **array, size_t *cap, size_t used, size_t n, size_t size,
		  const char *what)
{
	size_t		want = *cap < 64 ? 64 : *cap;
	void	   *grown;

	if (used + n <= *cap)
		return true;
	while (want < used + n)
		want *= 2;
	/* realloc may hold the old array and the new one at once: both are charged meanwhile */
	if (!DecodeTake(s->budget, (int64_t) (want * size), what))
	{
		s->refused = true;
		return false;
	}
	if ((grown = realloc(*array, want * size)) == NULL)
	{
		DecodeRelease(s->budget, (int64_t) (want * size));
		s->refused = true;
		return false;
	}
	DecodeRelease(s->budget, (int64_t) (*cap * size));
	s->charged += (int64_t) ((want - *cap) * size);
	*array = grown;
	*cap = want;
	return true;
}

/* Append bytes to the skeleton */
static bool
StripWrite(Strip *s, const void *bytes, size_t n)
{
	if (!StripGrow(s, (void **) &s->out.data, &s->out.cap, s->out.len, n, 1, "the ONNX graph"))
		return false;
	memcpy(s->out.data + s->out.len, bytes, n);
	s->out.len += n;
	return true;
}

/*
 * Copy a message (level 0 a ModelProto, 1 a GraphProto, 2 a NodeProto) to
 * the skeleton, descending into the graph and its nodes, noting the
 * nodes' attributes instead of copying them
 */
static bool
StripMessage(Strip *s, const uint8_t *p, const uint8_t *end, int level)
{
	while (p < end)
	{
		WireField	f;

		if (CancelTick(&s->ticks))
		{
			s->canceled = true;
			return false;
		}
		if (!WireNext(&p, end, &f))
			return false;
		if (f.wire == WIRE_LEN && ((level == 0 && f.number == MODEL_GRAPH) ||
								   (level == 1 && f.number == GRAPH_NODE)))
		{
			size_t		at;
			uint8_t		prefix[5];
			size_t		n;

			if (level == 1)
			{
				if (!StripGrow(s, (void **) &s->first, &s->node_cap, s->num_nodes, 2,
							   sizeof(size_t), "the nodes of the graph"))
					return false;
				s->first[s->num_nodes++] = s->num_spans;
			}
			if (!StripWrite(s, f.start, f.tag_len) || !StripWrite(s, "\0\0\0\0\0", 5))
				return false;
			at = s->out.len;
			if (!StripMessage(s, f.value, f.end, level + 1))
				return false;
			n = s->out.len - at;
			for (int i = 0; i < 5; i++)
				prefix[i] = (uint8_t) (((n >> (7 * i)) & 0x7f) | (i < 4 ? 0x80 : 0));
			memcpy(s->out.data + at - 5, prefix, 5);
		}
		else if (f.wire == WIRE_LEN && level == 2 && f.number == NODE_ATTRIBUTE)
		{
			if (!StripGrow(s, (void **) &s->spans, &s->span_cap, s->num_spans, 1,
						   sizeof(WireSpan), "the attributes of the graph's nodes"))
				return false;
			s->spans[s->num_spans].data = f.value;
			s->spans[s->num_spans++].len = f.len;
		}
		else if (!StripWrite(s, f.start, (size_t) (f.end - f.start)))
			return false;
	}
	return true;
}

/* Check and count an attribute's repeated field f as protobuf-c would parse it */
static bool
CountRepeated(const WireField *f, OnnxAttr *attr)
{
	switch (f->number)
	{
		case ONNX_ATTR_FLOATS:
			if (f->wire == WIRE_32BIT)
				attr->n_floats++;
			else if (f->wire == WIRE_LEN && f->len % 4 == 0)
				attr->n_floats += (int64_t) (f->len / 4);
			else
				return false;
			return true;
		case ONNX_ATTR_INTS:
			if (f->wire == WIRE_VARINT)
				attr->n_ints++;
			else if (f->wire == WIRE_LEN)
			{
				const uint8_t *q = f->value;

				while (q < f->end)
				{
					size_t		rem = (size_t) (f->end - q);
					size_t		max_len = rem < 10 ? rem : 10;
					size_t		i;

					for (i = 0; i < max_len; i++)
						if ((q[i] & 0x80) == 0)
							break;
					if (i == max_len)
						return false;
					q += i + 1;
					attr->n_ints++;
				}
			}
			else
				return false;
			return true;
		case ONNX_ATTR_STRINGS:
			if (f->wire != WIRE_LEN)
				return false;
			attr->n_strings++;
			return true;
	}
	return true;
}

/*
 * Decode one attribute: count and check its repeated fields, have
 * protobuf-c decode the rest (from a copy without them, where it has any)
 */
static bool
DecodeAttr(const uint8_t *data, size_t len, OnnxAlloc *alloc, OnnxAttr *attr)
{
	const uint8_t *p = data;
	const uint8_t *end = data + len;
	bool		repeated = false;
	uint8_t    *copy = NULL;
	size_t		copied = 0;

	memset(attr, 0, sizeof(*attr));
	attr->wire = data;
	attr->len = len;
	while (p < end)
	{
		WireField	f;

		if (CancelTick(&alloc->ticks))
		{
			alloc->canceled = true;
			return false;
		}
		if (!WireNext(&p, end, &f))
			return false;
		if (f.number == ONNX_ATTR_FLOATS || f.number == ONNX_ATTR_INTS ||
			f.number == ONNX_ATTR_STRINGS)
		{
			if (!CountRepeated(&f, attr))
				return false;
			repeated = true;
		}
	}
	if (!repeated)
		return (attr->pb = onnx__attribute_proto__unpack(&alloc->base, len, data)) != NULL;
	if ((copy = alloc->base.alloc(alloc, len)) == NULL)
		return false;
	for (p = data; p < end;)
	{
		WireField	f;

		if (CancelTick(&alloc->ticks))
		{
			alloc->canceled = true;
			alloc->base.free(alloc, copy);
			return false;
		}
		WireNext(&p, end, &f);
		if (f.number != ONNX_ATTR_FLOATS && f.number != ONNX_ATTR_INTS &&
			f.number != ONNX_ATTR_STRINGS)
		{
			memcpy(copy + copied, f.start, (size_t) (f.end - f.start));
			copied += (size_t) (f.end - f.start);
		}
	}
	attr->pb = onnx__attribute_proto__unpack(&alloc->base, copied, copy);
	alloc->base.free(alloc, copy);
	return attr->pb != NULL;
}

/* Fill in status for a decoding that failed */
static bool
DecodeFailed(const OnnxAlloc *alloc, const Strip *s, SilvanStatus *status)
{
	if (alloc->canceled || (s != NULL && s->canceled))
		return StatusCanceled(status, "parsing the model");
	if (alloc->budget->refused)
		return DecodeBudgetFail(alloc->budget, status);
	return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid onnx model",
					  "The bytes are not an ONNX ModelProto (protobuf decoding failed: truncated, or a length or tag is wrong).");
}

/* Free the walk's arrays, giving back their charge */
static void
StripFree(Strip *s)
{
	free(s->out.data);
	free(s->spans);
	free(s->first);
	DecodeRelease(s->budget, s->charged);
}

/* Decode every attribute of every node */
static bool
DecodeAttrs(const Strip *s, OnnxAlloc *alloc, OnnxDecoded *d)
{
	int64_t		bytes = (int64_t) (s->num_spans + 1) * (int64_t) sizeof(OnnxAttr) +
		(int64_t) (s->num_nodes + 1) * (int64_t) sizeof(size_t) + 2 * DECODE_CHUNK_OVERHEAD;
	if (!DecodeTake(alloc->budget, bytes, "the attributes of the graph's nodes"))
		return false;
	d->charged = bytes;
	d->attrs = calloc(s->num_spans + 1, sizeof(OnnxAttr));
	d->first_attr = calloc(s->num_nodes + 1, sizeof(size_t));
	if (d->attrs == NULL || d->first_attr == NULL)
		return false;
	if (s->num_nodes > 0)
		memcpy(d->first_attr, s->first, s->num_nodes * sizeof(size_t));
	d->first_attr[s->num_nodes] = s->num_spans;
	for (size_t i = 0; i < s->num_spans; i++)
	{
		if (CancelTick(&alloc->ticks))
		{
			alloc->canceled = true;
			return false;
		}
		if (!DecodeAttr(s->spans[i].data, s->spans[i].len, alloc, &d->attrs[i]))
			return false;
		d->num_attrs = i + 1;
	}
	return true;
}

/*
 * Decode a ModelProto within alloc's budget: the skeleton by protobuf-c,
 * then each attribute
 */
bool
OnnxDecodeModel(const uint8_t *data, size_t len, OnnxAlloc *alloc,
				OnnxDecoded *decoded, SilvanStatus *status)
{
	Strip		s = {0};
	char		what[96];
	size_t		nodes;
	int64_t		estimate;

	memset(decoded, 0, sizeof(*decoded));
	s.budget = alloc->budget;
	if (!StripMessage(&s, data, data + len, 0))
	{
		StripFree(&s);
		return DecodeFailed(alloc, &s, status);
	}

	/* what protobuf-c will hold for the nodes and attributes, before it decodes any */
	snprintf(what, sizeof(what), "the %zu nodes and %zu attributes of the graph",
			 s.num_nodes, s.num_spans);
	estimate = (int64_t) s.num_nodes *
		(int64_t) (sizeof(Onnx__NodeProto) + sizeof(void *) + 32 + ONNX_ALLOC_HEADER +
				   DECODE_CHUNK_OVERHEAD) +
		(int64_t) s.num_spans *
		(int64_t) (sizeof(Onnx__AttributeProto) + sizeof(OnnxAttr) + ONNX_ALLOC_HEADER +
				   DECODE_CHUNK_OVERHEAD);
	if (!DecodeCharge(alloc->budget, estimate, what, status))
	{
		StripFree(&s);
		return false;
	}
	DecodeRelease(alloc->budget, estimate);

	alloc->what = "the ONNX graph";
	decoded->model = onnx__model_proto__unpack(&alloc->base, s.out.len, s.out.data);
	nodes = decoded->model == NULL || decoded->model->graph == NULL ? 0 :
		decoded->model->graph->n_node;
	if (decoded->model != NULL && nodes != s.num_nodes)
	{
		StripFree(&s);
		OnnxDecodedFree(decoded, alloc);
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "onnx reader lost its place",
						  "The graph has %zu nodes; the walk over its bytes found %zu.",
						  nodes, s.num_nodes);
	}
	alloc->what = "the attributes of the graph's nodes";
	if (decoded->model == NULL || !DecodeAttrs(&s, alloc, decoded))
	{
		StripFree(&s);
		OnnxDecodedFree(decoded, alloc);
		return DecodeFailed(alloc, NULL, status);
	}
	decoded->num_nodes = s.num_nodes;
	StripFree(&s);
	return true;
}

/* Free a decoded model */
void
OnnxDecodedFree(OnnxDecoded *decoded, OnnxAlloc *alloc)
{
	for (size_t i = 0; i < decoded->num_attrs; i++)
		onnx__attribute_proto__free_unpacked(decoded->attrs[i].pb, &alloc->base);
	free(decoded->attrs);
	free(decoded->first_attr);
	DecodeRelease(alloc->budget, decoded->charged);
	if (decoded->model != NULL)
		onnx__model_proto__free_unpacked(decoded->model, &alloc->base);
	memset(decoded, 0, sizeof(*decoded));
}

/* The attributes of node (of decoded->model's graph) */
const OnnxAttr *
OnnxNodeAttrs(const OnnxDecoded *decoded, const Onnx__NodeProto *node, size_t *count)
{
	const Onnx__GraphProto *g = decoded->model->graph;

	for (size_t i = 0; g != NULL && i < decoded->num_nodes; i++)
		if (g->node[i] == node)
		{
			*count = decoded->first_attr[i + 1] - decoded->first_attr[i];
			return decoded->attrs + decoded->first_attr[i];
		}
	*count = 0;
	return NULL;
}

/* Start reading field (ONNX_ATTR_*) of an attribute */
void
OnnxIterStart(OnnxIter *it, const OnnxAttr *attr, int field)
{
	it->p = attr->wire;
	it->end = attr->wire + attr->len;
	it->packed = it->packed_end = NULL;
	it->field = field;
}

/*
 * The next element's bytes: from a packed run, or a field of its own
 * (the attribute was checked when it was decoded)
 */
static bool
IterNext(OnnxIter *it, const uint8_t **value, size_t *len)
{
	for (;;)
	{
		WireField	f;

		if (it->packed < it->packed_end)
		{
			size_t		n = 4;

			if (it->field == ONNX_ATTR_INTS)
				for (n = 1; n < 10 && (it->packed[n - 1] & 0x80); n++)
					;
			*value = it->packed;
			*len = n;
			it->packed += n;
			return true;
		}
		if (it->p >= it->end || !WireNext(&it->p, it->end, &f))
			return false;
		if (f.number != (uint32_t) it->field)
			continue;
		if (f.wire == WIRE_LEN && it->field != ONNX_ATTR_STRINGS)
		{
			it->packed = f.value;
			it->packed_end = f.end;
			continue;
		}
		*value = f.value;
		*len = f.len;
		return true;
	}
}

/* The next int of an ints field, as protobuf-c reads a varint into an int64 */
bool
OnnxIterInt(OnnxIter *it, int64_t *value)
{
	const uint8_t *p;
	size_t		n;
	uint64_t	v = 0;

	if (!IterNext(it, &p, &n))
		return false;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t) (p[i] & 0x7f) << (7 * i);
	*value = (int64_t) v;
	return true;
}

/* The next float of a floats field */
bool
OnnxIterFloat(OnnxIter *it, float *value)
{
	const uint8_t *p;
	size_t		n;

	if (!IterNext(it, &p, &n))
		return false;
	memcpy(value, p, sizeof(float));
	return true;
}

/* The next string of a strings field (not NUL-terminated) */
bool
OnnxIterBytes(OnnxIter *it, const uint8_t **data, size_t *len)
{
	return IterNext(it, data, len);
}
