/*
 * onnx_wire.h
 *		Decoding an ONNX ModelProto within a memory budget (onnx_wire.c).
 *
 * The reader (onnx_model.c) sees protobuf-c's structures for everything
 * but the attributes' repeated numbers and strings, which stay in the
 * model's bytes and are read with OnnxIter into arrays the reader sizes
 * (and charges) itself.
 */
#ifndef SILVAN_ONNX_WIRE_H
#define SILVAN_ONNX_WIRE_H

#include "silvan/decode_budget.h"
#include "onnx/onnx-ml-subset.pb-c.h"

/* AttributeProto's repeated fields kept on the wire */
#define ONNX_ATTR_FLOATS	7
#define ONNX_ATTR_INTS		8
#define ONNX_ATTR_STRINGS	9

/* protobuf-c's allocations, charged to a budget; polls for cancellation */
typedef struct OnnxAlloc
{
	ProtobufCAllocator base;
	DecodeBudget *budget;
	const char *what;			/* what is being decoded, for the budget */
	uint32_t	calls;
	uint32_t	ticks;			/* cancel polls of the walks (CancelTick) */
	bool		canceled;		/* decoding stopped on a cancel request */
} OnnxAlloc;

/*
 * An attribute: protobuf-c's decoding of its name, type, scalars and
 * tensors, and the wire bytes its floats, ints and strings are read from
 */
typedef struct OnnxAttr
{
	Onnx__AttributeProto *pb;
	const uint8_t *wire;		/* the AttributeProto's bytes */
	size_t		len;
	int64_t		n_floats;
	int64_t		n_ints;
	int64_t		n_strings;
} OnnxAttr;

/* A decoded model: the ModelProto, its graph's nodes' attributes beside it */
typedef struct OnnxDecoded
{
	Onnx__ModelProto *model;	/* its nodes have no attributes */
	size_t		num_nodes;		/* of model->graph */
	size_t	   *first_attr;		/* node i's are attrs[first_attr[i] .. first_attr[i + 1]) */
	OnnxAttr   *attrs;
	size_t		num_attrs;
	int64_t		charged;		/* for the arrays above */
} OnnxDecoded;

/* Set up an allocator charging budget */
extern void OnnxAllocInit(OnnxAlloc *alloc, DecodeBudget *budget);

/*
 * Decode a ModelProto; false with a status: a syntax error where
 * protobuf-c would refuse the bytes, SILVAN_ERROR_LIMIT past the budget,
 * SILVAN_ERROR_CANCELED on a cancel request
 */
extern bool OnnxDecodeModel(const uint8_t *data, size_t len, OnnxAlloc *alloc,
							OnnxDecoded *decoded, SilvanStatus *status);

/* Free a decoded model */
extern void OnnxDecodedFree(OnnxDecoded *decoded, OnnxAlloc *alloc);

/* The attributes of node (of decoded->model's graph) */
extern const OnnxAttr *OnnxNodeAttrs(const OnnxDecoded *decoded, const Onnx__NodeProto *node,
									 size_t *count);

/* Reads the elements of one repeated field of an attribute, in order */
typedef struct OnnxIter
{
	const uint8_t *p;			/* the next field of the attribute */
	const uint8_t *end;
	const uint8_t *packed;		/* inside a packed run: its next element */
	const uint8_t *packed_end;
	int			field;
} OnnxIter;

extern void OnnxIterStart(OnnxIter *it, const OnnxAttr *attr, int field);
extern bool OnnxIterInt(OnnxIter *it, int64_t *value);
extern bool OnnxIterFloat(OnnxIter *it, float *value);
extern bool OnnxIterBytes(OnnxIter *it, const uint8_t **data, size_t *len);

#endif							/* SILVAN_ONNX_WIRE_H */
