/*
 * onnx_model.h
 *		What the ONNX reader's parts share: onnx_model.c reads the graph and
 *		the old tree ensemble operators and builds the forest, onnx_v5.c
 *		converts TreeEnsemble (opset 5) into the old operators' layout, and
 *		onnx_wire.c decodes the bytes.
 *
 * Every array the reader makes is held through OnnxHold, which charges it
 * to the read's budget before allocating it and gives the charge back
 * when it is freed (OnnxUnhold, or EnsembleFree at the end).
 */
#ifndef SILVAN_ONNX_MODEL_H
#define SILVAN_ONNX_MODEL_H

#include <string.h>

#include "silvan/cancel.h"
#include "silvan/parse.h"
#include "onnx_wire.h"

/*
 * Forest nodes from copying (per class or target, and TreeEnsemble's shared
 * nodes and sets) may be at most this many times the model's entries
 */
#define ONNX_MAX_COPY_FACTOR	4
/* ... plus this many, so small models with many classes always load */
#define ONNX_MIN_COPY_ALLOWANCE	(1 << 16)

/* AttributeProto.type values */
#define ATTR_FLOAT		1
#define ATTR_INT		2
#define ATTR_STRING		3
#define ATTR_TENSOR		4
#define ATTR_FLOATS		6
#define ATTR_INTS		7
#define ATTR_STRINGS	8

/* TensorProto.data_type values */
#define TENSOR_FLOAT	1
#define TENSOR_UINT8	2
#define TENSOR_INT32	6
#define TENSOR_INT64	7
#define TENSOR_DOUBLE	11

/* ONNX node modes, in our order */
typedef enum OnnxMode
{
	MODE_LEQ, MODE_LT, MODE_GTE, MODE_GT, MODE_EQ, MODE_NEQ, MODE_LEAF
} OnnxMode;

/* A list of numbers read from an attribute (floats, ints or a tensor) */
typedef struct OnnxNumbers
{
	int64_t		count;
	double	   *values;			/* held, or NULL when absent */
	bool		doubles;		/* came from a double tensor */
} OnnxNumbers;

/* An array the reader holds and the bytes charged for it */
typedef struct OnnxHeld
{
	void	   *p;
	int64_t		bytes;
} OnnxHeld;

/* Most arrays held at once: one per attribute read, the layout's, the conversion's */
#define ONNX_MAX_HELD	64

/* What the reader takes from the ensemble's attributes */
typedef struct OnnxEnsemble
{
	const char *op;				/* operator name, for messages */
	bool		classifier;
	int64_t		num_nodes;
	const int64_t *tree_ids;
	const int64_t *node_ids;
	const int64_t *feature_ids;
	const int64_t *true_ids;
	const int64_t *false_ids;
	const int64_t *tracks_true; /* NULL: none */
	uint8_t    *modes;			/* OnnxMode per node, held */
	OnnxNumbers values;

	/*
	 * Once the layout is checked, feature, child and tracks arrays are
	 * narrowed in place (NarrowNodes) to these, which FillNode reads
	 */
	int32_t    *feature32;
	int32_t    *true32;
	int32_t    *false32;
	uint8_t    *tracks8;		/* NULL: none */

	int64_t		num_weights;
	const int64_t *w_tree;
	const int64_t *w_node;
	const int64_t *w_class;
	OnnxNumbers weights;
	OnnxNumbers base;

	int64_t		n_targets;
	int			aggregate;		/* 0 SUM, 1 AVERAGE, 2 MIN, 3 MAX */
	int			post_transform; /* index into transform_names */

	int64_t		num_labels;
	char	  **labels;			/* held, each label malloc'd */
	size_t	   *label_lengths;

	bool		v5;				/* converted from TreeEnsemble (opset 5) */
	int64_t		model_entries;	/* what the model holds, bounding the copies */
	int64_t    *owned[9];		/* the arrays a conversion made, held */

	DecodeBudget *budget;
	OnnxHeld	held[ONNX_MAX_HELD];
	int			num_held;
	uint32_t	ticks;			/* cancel polls (CancelTick) */
} OnnxEnsemble;

/* Is the protobuf string s equal to the C string c? */
static inline bool
StrIs(const char *s, const char *c)
{
	return s != NULL && strcmp(s, c) == 0;
}

/* onnx_model.c: arrays charged to the budget */
extern void *OnnxHold(OnnxEnsemble *e, int64_t count, size_t size, const char *what,
					  SilvanStatus *status);
extern bool OnnxRegrow(OnnxEnsemble *e, void **p, int64_t count, size_t size,
					   const char *what, SilvanStatus *status);
extern void OnnxUnhold(OnnxEnsemble *e, const void *p);

/* onnx_model.c: attributes */
extern bool OnnxAttrType(const Onnx__AttributeProto *a, int32_t type, const char *what,
						 SilvanStatus *status);
extern bool OnnxAttrInts(const OnnxAttr *a, OnnxEnsemble *e, const int64_t **ints,
						 int64_t *count, SilvanStatus *status);
extern bool OnnxAttrNumbers(const OnnxAttr *a, bool tensor, OnnxNumbers *out,
							OnnxEnsemble *e, SilvanStatus *status);

/* onnx_v5.c: read a TreeEnsemble's attributes into e, in the old layout */
extern bool OnnxReadTreeEnsemble(const OnnxAttr *attrs, size_t num_attrs, OnnxEnsemble *e,
								 SilvanStatus *status);

#endif							/* SILVAN_ONNX_MODEL_H */
