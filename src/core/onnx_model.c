/*
 * onnx_model.c
 *		Read an ONNX model holding a TreeEnsembleRegressor or
 *		TreeEnsembleClassifier (ai.onnx.ml opsets 1 to 3) or a TreeEnsemble
 *		(opset 5) into a Forest.
 *
 * The bytes are a ModelProto, decoded by protobuf-c with the code generated
 * from onnx/onnx-ml-subset.proto.  The graph must hold exactly one tree
 * ensemble; around it we accept what converters (skl2onnx, onnxmltools)
 * put there: Cast, Identity, Reshape and Flatten between the graph input
 * and the ensemble, ZipMap, Cast and Identity after it.  Any other operator
 * is refused, naming it.  The ensemble's input must come from one graph
 * input (a tensor of num_features columns); its name names the whole row,
 * not a column, so the forest gets no feature names and its columns are
 * matched by position.
 *
 * Semantics follow the ONNX specification, and ONNX Runtime where the
 * specification is vague (tree_ensemble_aggregator.h, ml_common.h):
 *
 *   - a node goes to its true child when x MODE value; NaN goes to the true
 *     child when nodes_missing_value_tracks_true is set (or for BRANCH_NEQ,
 *     since NaN != value), else to the false child.  BRANCH_GTE and
 *     BRANCH_GT become < and <= with the children swapped (the NaN child
 *     kept), so models using only LEQ/LT/GTE/GT compile; EQ and NEQ stay
 *     and are interpreted;
 *   - trees are taken in ascending tree id; leaves add their weights per
 *     target or class, aggregated by SUM, AVERAGE (divided by the number
 *     of trees), MIN or MAX; base_values are added after that;
 *   - the sums are in float unless the ensemble's input is double or a
 *     *_as_tensor attribute holds doubles (then FLOAT64);
 *   - post transforms are ONNX Runtime's, in float.
 *
 * A leaf may give weights to several classes.  The Forest has one value
 * per leaf, so each (tree, class) pair that has weights becomes a Forest
 * tree: the tree's structure, copied, with that class's weights at its
 * leaves (0 where a leaf has none).  The copies are bounded: at most
 * ONNX_MAX_COPY_FACTOR times the nodes plus weights of the model (plus
 * ONNX_MIN_COPY_ALLOWANCE), else the model is refused.
 *
 * Classifiers: predict returns the index of the class with the largest
 * score (class_labels[index] names it, int64 labels written in decimal);
 * probabilities are the transformed scores.  A two-class model whose
 * weights all go to class 0 (a "binary" booster, as onnxmltools writes
 * XGBoost's binary:logistic) gets scores {-s, s} as ONNX Runtime computes
 * them: the class-0 trees are copied again with negated leaves (exact:
 * negation commutes with rounding).
 *
 * TreeEnsemble (ai.onnx.ml opset 5) is converted into the old operators'
 * layout and built by the same code (onnx_v5.c).
 *
 * Refused, with the reason in the status: multi-target
 * TreeEnsembleRegressors, LOGISTIC/SOFTMAX on a one-target regressor
 * (ONNX Runtime ignores them there, the specification applies them), two
 * weights for one (leaf, class), MIN/MAX where a tree leaves some leaves
 * without a weight (for TreeEnsemble: a tree whose leaves go to several
 * targets), and the two-class shapes whose ONNX Runtime result is an
 * accident of its implementation (all-positive binary weights,
 * base_values beside two weighted classes, SOFTMAX or PROBIT on a binary
 * booster).
 *
 * Nothing here trusts the model: every id and count is checked before it
 * indexes anything, and ParseModel validates the resulting forest (which
 * catches cycles and shared or unreachable nodes).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_model.h"

/* ONNX node modes' names, in OnnxMode's order */
static const char *const mode_names[] = {
	"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF"
};

/* post_transform values, in our order, and the forest's transforms for them */
static const char *const transform_names[] = {
	"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"
};
static const ForestTransform onnx_transforms[] = {
	FOREST_TRANSFORM_IDENTITY, FOREST_TRANSFORM_ONNX_LOGISTIC,
	FOREST_TRANSFORM_ONNX_SOFTMAX, FOREST_TRANSFORM_ONNX_SOFTMAX_ZERO,
	FOREST_TRANSFORM_ONNX_PROBIT
};

/* Fail with a model-level syntax error */
static bool
OnnxSyntax(SilvanStatus *status, const char *detail)
{
	return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid onnx model", "%s", detail);
}

/*
 * Allocate count elements of size bytes (at least one) for the reader,
 * charged to e's budget and held until OnnxUnhold or EnsembleFree; with
 * no ensemble, plain malloc.  NULL with a status.
 */
void *
OnnxHold(OnnxEnsemble *e, int64_t count, size_t size, const char *what, SilvanStatus *status)
{
	int64_t		bytes;
	void	   *p;

	if (count < 1)
		count = 1;
	bytes = count * (int64_t) size + DECODE_CHUNK_OVERHEAD;
	if (e != NULL && e->num_held >= ONNX_MAX_HELD)
	{
		StatusFail(status, SILVAN_ERROR_INTERNAL, "onnx reader holds too many arrays",
				   "Reading %s needed more than %d arrays.", what, ONNX_MAX_HELD);
		return NULL;
	}
	if (e != NULL && !DecodeCharge(e->budget, bytes, what, status))
		return NULL;
	if ((p = malloc((size_t) (bytes - DECODE_CHUNK_OVERHEAD))) == NULL)
	{
		if (e != NULL)
			DecodeRelease(e->budget, bytes);
		StatusNoMemory(status, what);
		return NULL;
	}
	if (e != NULL)
		e->held[e->num_held++] = (OnnxHeld) {p, bytes};
	return p;
}

/* Resize a held array (NULL: make one) to count elements, charging the difference */
bool
OnnxRegrow(OnnxEnsemble *e, void **p, int64_t count, size_t size, const char *what,
		   SilvanStatus *status)
{
	int64_t		bytes = (count < 1 ? 1 : count) * (int64_t) size + DECODE_CHUNK_OVERHEAD;
	void	   *grown;

	for (int i = 0; *p != NULL && i < e->num_held; i++)
		if (e->held[i].p == *p)
		{
			if (bytes > e->held[i].bytes &&
				!DecodeCharge(e->budget, bytes - e->held[i].bytes, what, status))
				return false;
			if ((grown = realloc(*p, (size_t) (bytes - DECODE_CHUNK_OVERHEAD))) == NULL)
			{
				if (bytes > e->held[i].bytes)
					DecodeRelease(e->budget, bytes - e->held[i].bytes);
				return StatusNoMemory(status, what);
			}
			if (bytes < e->held[i].bytes)
				DecodeRelease(e->budget, e->held[i].bytes - bytes);
			e->held[i] = (OnnxHeld) {grown, bytes};
			*p = grown;
			return true;
		}
	return (*p = OnnxHold(e, count, size, what, status)) != NULL;
}

/* Free a held array (NULL, or one not held: nothing), giving back its charge */
void
OnnxUnhold(OnnxEnsemble *e, const void *p)
{
	for (int i = 0; p != NULL && i < e->num_held; i++)
		if (e->held[i].p == p)
		{
			free(e->held[i].p);
			DecodeRelease(e->budget, e->held[i].bytes);
			e->held[i] = e->held[--e->num_held];
			return;
		}
}

/* Bytes of one element of a tensor type we read */
static size_t
ElemSize(int32_t type)
{
	return type == TENSOR_UINT8 ? 1 : type == TENSOR_FLOAT || type == TENSOR_INT32 ? 4 : 8;
}

/* Read n little-endian values of a tensor's raw_data */
static bool
RawValues(const ProtobufCBinaryData *raw, int32_t type, double *out, int64_t n)
{
	size_t		size = ElemSize(type);

	if (raw->len != (size_t) n * size)
		return false;
	for (int64_t i = 0; i < n; i++)
	{
		const uint8_t *p = raw->data + (size_t) i * size;
		uint64_t	bits = 0;

		for (size_t b = 0; b < size; b++)
			bits |= (uint64_t) p[b] << (8 * b);
		if (type == TENSOR_FLOAT)
		{
			uint32_t	b32 = (uint32_t) bits;
			float		f;

			memcpy(&f, &b32, 4);
			out[i] = f;
		}
		else if (type == TENSOR_DOUBLE)
			memcpy(&out[i], &bits, 8);
		else if (type == TENSOR_INT32)
			out[i] = (double) (int32_t) (uint32_t) bits;
		else if (type == TENSOR_UINT8)
			out[i] = (double) bits;
		else
			out[i] = (double) (int64_t) bits;
	}
	return true;
}

/*
 * Read a tensor's numbers (float, double, uint8, int32 or int64, typed
 * fields or raw_data; uint8 is kept in int32_data) as doubles; what names
 * the tensor in messages.
 */
static bool
TensorNumbers(const Onnx__TensorProto *t, const char *what, OnnxNumbers *out,
			  OnnxEnsemble *e, SilvanStatus *status)
{
	char		held[96];
	int64_t		n = 1;
	int32_t		type = t->data_type;

	memset(out, 0, sizeof(*out));
	if (t->data_location != 0)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx tensor",
						  "Tensor %s keeps its data in an external file.", what);
	for (size_t d = 0; d < t->n_dims; d++)
	{
		if (t->dims[d] < 0 || (t->dims[d] > 0 && n > FOREST_MAX_NODES / t->dims[d]))
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tensor",
							  "Field \"dims\" of tensor %s is negative or too large.", what);
		n *= t->dims[d];
	}
	if (type != TENSOR_FLOAT && type != TENSOR_DOUBLE && type != TENSOR_INT32 &&
		type != TENSOR_INT64 && type != TENSOR_UINT8)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx tensor",
						  "Tensor %s has element type %d; float, double, uint8, int32 or int64 was expected.",
						  what, type);
	if (t->raw_data.len > 0 &&
		(t->raw_data.len % ElemSize(type) != 0 || t->raw_data.len / ElemSize(type) != (size_t) n))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tensor",
						  "Field \"raw_data\" of tensor %s has %zu bytes for %lld values.",
						  what, t->raw_data.len, (long long) n);
	if (t->raw_data.len == 0)
	{
		size_t		have = type == TENSOR_FLOAT ? t->n_float_data :
			type == TENSOR_DOUBLE ? t->n_double_data :
			type == TENSOR_INT32 || type == TENSOR_UINT8 ? t->n_int32_data : t->n_int64_data;

		if (have != (size_t) n)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tensor",
							  "Tensor %s holds %zu values; its dims say %lld.",
							  what, have, (long long) n);
	}
	out->count = n;
	out->doubles = type == TENSOR_DOUBLE;
	snprintf(held, sizeof(held), "tensor %s", what);
	if ((out->values = OnnxHold(e, n, sizeof(double), held, status)) == NULL)
		return false;
	if (t->raw_data.len > 0)
		return RawValues(&t->raw_data, type, out->values, n);
	for (int64_t i = 0; i < n; i++)
		out->values[i] = type == TENSOR_FLOAT ? (double) t->float_data[i] :
			type == TENSOR_DOUBLE ? t->double_data[i] :
			type == TENSOR_INT32 || type == TENSOR_UINT8 ? (double) t->int32_data[i] :
			(double) t->int64_data[i];
	return true;
}

/* Check an attribute's declared type (0: not declared, as old writers did) */
bool
OnnxAttrType(const Onnx__AttributeProto *a, int32_t type, const char *what, SilvanStatus *status)
{
	static const char *const names[] = {
		"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS"
	};

	if (a->type == 0 || a->type == type)
		return true;
	return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
					  "Attribute \"%s\" of %s has type %d; %s was expected.",
					  a->name, what, a->type, names[type]);
}

/*
 * Read an ints attribute into a held array (NULL when it has none, as
 * protobuf-c gives an empty repeated field), replacing *ints
 */
bool
OnnxAttrInts(const OnnxAttr *a, OnnxEnsemble *e, const int64_t **ints, int64_t *count,
			 SilvanStatus *status)
{
	OnnxIter	it;
	int64_t    *v;
	char		what[96];

	if (!OnnxAttrType(a->pb, ATTR_INTS, e->op, status))
		return false;
	OnnxUnhold(e, *ints);
	*ints = NULL;
	*count = a->n_ints;
	if (a->n_ints == 0)
		return true;
	snprintf(what, sizeof(what), "attribute \"%.64s\"", a->pb->name);
	if ((v = OnnxHold(e, a->n_ints, sizeof(int64_t), what, status)) == NULL)
		return false;
	OnnxIterStart(&it, a, ONNX_ATTR_INTS);
	for (int64_t i = 0; i < a->n_ints; i++)
	{
		if (CancelTick(&e->ticks))
		{
			OnnxUnhold(e, v);
			return StatusCanceled(status, "parsing the model");
		}
		OnnxIterInt(&it, &v[i]);
	}
	*ints = v;
	return true;
}

/* Read a floats attribute (or, for *_as_tensor, a tensor) as doubles */
bool
OnnxAttrNumbers(const OnnxAttr *a, bool tensor, OnnxNumbers *out, OnnxEnsemble *e,
				SilvanStatus *status)
{
	char		what[128];
	OnnxIter	it;
	const char *op = e->op;
	const char *name = a->pb->name;

	OnnxUnhold(e, out->values);
	memset(out, 0, sizeof(*out));
	if (tensor)
	{
		if (!OnnxAttrType(a->pb, ATTR_TENSOR, op, status))
			return false;
		if (a->pb->t == NULL)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
							  "Attribute \"%s\" of %s has no tensor.", name, op);
		snprintf(what, sizeof(what), "\"%.64s\"", name);
		return TensorNumbers(a->pb->t, what, out, e, status);
	}
	if (!OnnxAttrType(a->pb, ATTR_FLOATS, op, status))
		return false;
	out->count = a->n_floats;
	snprintf(what, sizeof(what), "attribute \"%.64s\"", name);
	if ((out->values = OnnxHold(e, a->n_floats, sizeof(double), what, status)) == NULL)
		return false;
	OnnxIterStart(&it, a, ONNX_ATTR_FLOATS);
	for (int64_t i = 0; i < a->n_floats; i++)
	{
		float		f;

		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
		OnnxIterFloat(&it, &f);
		out->values[i] = f;
	}
	return true;
}

/* Read a string attribute as one of the given names; its index in *index */
static bool
AttrEnum(const Onnx__AttributeProto *a, const char *const *names, int count,
		 int *index, const char *op, SilvanStatus *status)
{
	if (!OnnxAttrType(a, ATTR_STRING, op, status))
		return false;
	for (int i = 0; i < count; i++)
		if (a->s.len == strlen(names[i]) && memcmp(a->s.data, names[i], a->s.len) == 0)
		{
			*index = i;
			return true;
		}
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx attribute value",
					  "Attribute \"%s\" of %s is \"%.*s\", which is not supported.",
					  a->name, op, (int) (a->s.len > 64 ? 64 : a->s.len),
					  a->s.data ? (const char *) a->s.data : "");
}

/* Read nodes_modes into OnnxMode values */
static bool
AttrModes(const OnnxAttr *a, OnnxEnsemble *e, int64_t *count, SilvanStatus *status)
{
	OnnxIter	it;

	if (!OnnxAttrType(a->pb, ATTR_STRINGS, e->op, status))
		return false;
	OnnxUnhold(e, e->modes);
	if ((e->modes = OnnxHold(e, a->n_strings, 1, "attribute \"nodes_modes\"", status)) == NULL)
		return false;
	*count = a->n_strings;
	OnnxIterStart(&it, a, ONNX_ATTR_STRINGS);
	for (int64_t i = 0; i < a->n_strings; i++)
	{
		const uint8_t *s;
		size_t		len;
		int			m;

		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
		OnnxIterBytes(&it, &s, &len);
		for (m = 0; m <= MODE_LEAF; m++)
			if (len == strlen(mode_names[m]) && memcmp(s, mode_names[m], len) == 0)
				break;
		if (m > MODE_LEAF)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx node mode",
							  "Entry %lld of attribute \"nodes_modes\" of %s is \"%.*s\"; supported are BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ and LEAF.",
							  (long long) i, e->op, (int) (len > 64 ? 64 : len), (const char *) s);
		e->modes[i] = (uint8_t) m;
	}
	return true;
}

/* Read the class labels (int64s written in decimal, or strings) */
static bool
AttrLabels(const OnnxAttr *a, bool strings, OnnxEnsemble *e, SilvanStatus *status)
{
	int64_t		n = strings ? a->n_strings : a->n_ints;
	OnnxIter	it;

	if (!OnnxAttrType(a->pb, strings ? ATTR_STRINGS : ATTR_INTS, e->op, status))
		return false;
	if (e->labels != NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
						  "%s has both \"classlabels_strings\" and \"classlabels_int64s\".", e->op);
	if ((e->labels = OnnxHold(e, n, sizeof(char *), "the class labels", status)) == NULL ||
		(e->label_lengths = OnnxHold(e, n, sizeof(size_t), "the class labels", status)) == NULL)
		return false;
	memset(e->labels, 0, sizeof(char *) * (size_t) (n > 0 ? n : 1));
	e->num_labels = n;
	OnnxIterStart(&it, a, strings ? ONNX_ATTR_STRINGS : ONNX_ATTR_INTS);
	for (int64_t i = 0; i < n; i++)
	{
		char		digits[32];
		const char *src = digits;
		size_t		len;

		if (strings)
		{
			const uint8_t *data;

			OnnxIterBytes(&it, &data, &len);
			src = (const char *) data;
		}
		else
		{
			int64_t		v;

			OnnxIterInt(&it, &v);
			len = (size_t) snprintf(digits, sizeof(digits), "%" PRId64, v);
		}
		if (!DecodeCharge(e->budget, (int64_t) len + 1 + DECODE_CHUNK_OVERHEAD,
						  "the class labels", status))
			return false;
		e->labels[i] = malloc(len + 1);
		if (e->labels[i] == NULL)
			return StatusNoMemory(status, "the class labels");
		memcpy(e->labels[i], src, len);
		e->labels[i][len] = '\0';
		e->label_lengths[i] = len;
	}
	return true;
}

/* Does the attribute name end in "_as_tensor"?  Its stem goes to stem */
static bool
AsTensor(const char *name, char *stem, size_t size)
{
	size_t		n = strlen(name);

	snprintf(stem, size, "%s", name);
	if (n > 10 && strcmp(name + n - 10, "_as_tensor") == 0)
	{
		if (n - 10 < size)
			stem[n - 10] = '\0';
		return true;
	}
	return false;
}

/* Read one attribute of the ensemble into e */
static bool
ReadAttribute(const OnnxAttr *at, OnnxEnsemble *e, int64_t *counts, SilvanStatus *status)
{
	const Onnx__AttributeProto *a = at->pb;
	char		stem[64];
	bool		tensor;
	const char *prefix = e->classifier ? "class_" : "target_";
	int64_t		n = 0;

	if (a->name == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
						  "An attribute of %s has no name.", e->op);
	if (a->ref_attr_name != NULL)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx attribute",
						  "Attribute \"%s\" of %s refers to a function attribute.", a->name, e->op);
	tensor = AsTensor(a->name, stem, sizeof(stem));
	/* counts: 0 nodes arrays, 1 weight arrays */
#define NODE_INTS(field, target) \
	if (StrIs(stem, field) && !tensor) \
	{ \
		if (!OnnxAttrInts(at, e, &(target), &n, status)) return false; \
		if (counts[0] >= 0 && n != counts[0]) goto node_count; \
		counts[0] = n; \
		return true; \
	}
	NODE_INTS("nodes_treeids", e->tree_ids);
	NODE_INTS("nodes_nodeids", e->node_ids);
	NODE_INTS("nodes_featureids", e->feature_ids);
	NODE_INTS("nodes_truenodeids", e->true_ids);
	NODE_INTS("nodes_falsenodeids", e->false_ids);
	NODE_INTS("nodes_missing_value_tracks_true", e->tracks_true);
#undef NODE_INTS
	if (StrIs(stem, "nodes_modes") && !tensor)
	{
		if (!AttrModes(at, e, &n, status))
			return false;
		if (counts[0] >= 0 && n != counts[0])
			goto node_count;
		counts[0] = n;
		return true;
	}
	if (StrIs(stem, "nodes_values"))
	{
		if (!OnnxAttrNumbers(at, tensor, &e->values, e, status))
			return false;
		if (counts[0] >= 0 && e->values.count != counts[0])
			goto node_count;
		counts[0] = e->values.count;
		return true;
	}
	if (StrIs(stem, "nodes_hitrates"))
		return true;			/* statistics only */
	if (strncmp(stem, prefix, strlen(prefix)) == 0)
	{
		const char *rest = stem + strlen(prefix);
		const int64_t **target = StrIs(rest, "treeids") ? &e->w_tree :
			StrIs(rest, "nodeids") ? &e->w_node : StrIs(rest, "ids") ? &e->w_class : NULL;

		if (target != NULL && !tensor)
		{
			if (!OnnxAttrInts(at, e, target, &n, status))
				return false;
		}
		else if (StrIs(rest, "weights"))
		{
			if (!OnnxAttrNumbers(at, tensor, &e->weights, e, status))
				return false;
			n = e->weights.count;
		}
		else
			goto unknown;
		if (counts[1] >= 0 && n != counts[1])
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
							  "Attribute \"%s\" of %s has %lld entries; the other %s* attributes have %lld.",
							  a->name, e->op, (long long) n, prefix, (long long) counts[1]);
		counts[1] = n;
		return true;
	}
	if (StrIs(stem, "base_values"))
		return OnnxAttrNumbers(at, tensor, &e->base, e, status);
	if (StrIs(stem, "post_transform") && !tensor)
		return AttrEnum(a, transform_names, 5, &e->post_transform, e->op, status);
	if (!e->classifier && StrIs(stem, "aggregate_function") && !tensor)
	{
		static const char *const names[] = {"SUM", "AVERAGE", "MIN", "MAX"};

		return AttrEnum(a, names, 4, &e->aggregate, e->op, status);
	}
	if (!e->classifier && StrIs(stem, "n_targets") && !tensor)
	{
		if (!OnnxAttrType(a, ATTR_INT, e->op, status))
			return false;
		e->n_targets = a->i;
		return true;
	}
	if (e->classifier && StrIs(stem, "classlabels_strings") && !tensor)
		return AttrLabels(at, true, e, status);
	if (e->classifier && StrIs(stem, "classlabels_int64s") && !tensor)
		return AttrLabels(at, false, e, status);
unknown:
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx attribute",
					  "%s has attribute \"%.64s\", which is not supported.", e->op, a->name);
node_count:
	return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
					  "Attribute \"%s\" of %s has %lld entries; the other nodes_* attributes have %lld.",
					  a->name, e->op, (long long) n, (long long) counts[0]);
}

/* Free what an OnnxEnsemble holds, giving back its charge */
static void
EnsembleFree(OnnxEnsemble *e)
{
	for (int64_t i = 0; e->labels != NULL && i < e->num_labels && e->labels[i] != NULL; i++)
	{
		DecodeRelease(e->budget, (int64_t) e->label_lengths[i] + 1 + DECODE_CHUNK_OVERHEAD);
		free(e->labels[i]);
	}
	while (e->num_held > 0)
		OnnxUnhold(e, e->held[0].p);
}

/* Read every attribute and check the arrays are present and agree */
static bool
ReadEnsemble(const OnnxAttr *attrs, size_t num_attrs, OnnxEnsemble *e, SilvanStatus *status)
{
	int64_t		counts[2] = {-1, -1};

	e->op = e->classifier ? "TreeEnsembleClassifier" : "TreeEnsembleRegressor";
	e->n_targets = 1;
	e->aggregate = 0;
	for (size_t i = 0; i < num_attrs; i++)
		if (!ReadAttribute(&attrs[i], e, counts, status))
			return false;
	e->num_nodes = counts[0] < 0 ? 0 : counts[0];
	e->num_weights = counts[1] < 0 ? 0 : counts[1];
	if (e->num_nodes == 0 || e->tree_ids == NULL || e->node_ids == NULL ||
		e->modes == NULL || e->true_ids == NULL || e->false_ids == NULL ||
		e->feature_ids == NULL || e->values.values == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx model",
						  "%s lacks one of nodes_treeids, nodes_nodeids, nodes_modes, nodes_featureids, nodes_values, nodes_truenodeids, nodes_falsenodeids, or has no nodes.",
						  e->op);
	if (e->num_weights > 0 &&
		(e->w_tree == NULL || e->w_node == NULL || e->w_class == NULL || e->weights.values == NULL))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx model",
						  "%s lacks one of the %streeids, %snodeids, %sids, %sweights attributes.",
						  e->op, e->classifier ? "class_" : "target_", e->classifier ? "class_" : "target_",
						  e->classifier ? "class_" : "target_", e->classifier ? "class_" : "target_");
	if (e->num_nodes > FOREST_MAX_NODES || e->num_weights > FOREST_MAX_NODES)
		return StatusFail(status, SILVAN_ERROR_INVALID, "too many nodes",
						  "%s has %lld nodes and %lld weights; at most %lld of each are supported.",
						  e->op, (long long) e->num_nodes, (long long) e->num_weights,
						  (long long) FOREST_MAX_NODES);
	e->model_entries = e->num_nodes + e->num_weights;
	return true;
}

/* Compare int64s, for sorting */
static int
CompareInt64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* Index of id in the sorted unique ids, or -1 */
static int64_t
FindId(const int64_t *ids, int64_t n, int64_t id)
{
	const int64_t *p = bsearch(&id, ids, (size_t) n, sizeof(int64_t), CompareInt64);

	return p == NULL ? -1 : p - ids;
}

/*
 * One weight, located: which tree (index), node (local), class; each is
 * checked to fit before it is stored
 */
typedef struct OnnxWeight
{
	int32_t		tree;
	int32_t		node;
	int32_t		cls;
	int32_t		order;			/* position in the attributes */
} OnnxWeight;

/* Order weights by tree, class, node, then position */
static int
CompareWeights(const void *a, const void *b)
{
	const OnnxWeight *x = a;
	const OnnxWeight *y = b;

	if (x->tree != y->tree)
		return (x->tree > y->tree) - (x->tree < y->tree);
	if (x->cls != y->cls)
		return (x->cls > y->cls) - (x->cls < y->cls);
	if (x->node != y->node)
		return (x->node > y->node) - (x->node < y->node);
	return (x->order > y->order) - (x->order < y->order);
}

/* The layout of the ONNX trees: sorted tree ids and each node's slot */
typedef struct OnnxLayout
{
	int64_t		num_trees;
	int64_t    *tree_ids;		/* sorted unique */
	int64_t    *first;			/* first slot of each tree (num_trees + 1) */
	int32_t    *slot_node;		/* slot (first[t] + node id) -> attribute index */
	OnnxWeight *weights;		/* sorted */
} OnnxLayout;

/* Free a layout */
static void
LayoutFree(OnnxEnsemble *e, OnnxLayout *l)
{
	OnnxUnhold(e, l->tree_ids);
	OnnxUnhold(e, l->first);
	OnnxUnhold(e, l->slot_node);
	OnnxUnhold(e, l->weights);
}

/*
 * Group nodes by tree id; check node ids are 0..n-1 within each tree.  The
 * tree ids are sorted in a copy, kept once duplicates are gone; a slot
 * takes four bytes (n is at most FOREST_MAX_NODES).
 */
static bool
BuildLayout(OnnxEnsemble *e, OnnxLayout *l, SilvanStatus *status)
{
	int64_t		n = e->num_nodes;
	int64_t		u = 0;

	if ((l->tree_ids = OnnxHold(e, n, sizeof(int64_t), "the tree ids", status)) == NULL)
		return false;
	memcpy(l->tree_ids, e->tree_ids, sizeof(int64_t) * (size_t) n);
	if (!DecodeSort(l->tree_ids, (size_t) n, sizeof(int64_t), CompareInt64))
		return StatusCanceled(status, "parsing the model");
	for (int64_t i = 0; i < n; i++)
	{
		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
		if (i == 0 || l->tree_ids[i] != l->tree_ids[u - 1])
			l->tree_ids[u++] = l->tree_ids[i];
	}
	l->num_trees = u;
	if (u > FOREST_MAX_TREES)
		return StatusFail(status, SILVAN_ERROR_INVALID, "too many trees",
						  "%s has %lld trees; at most %d are supported.",
						  e->op, (long long) u, FOREST_MAX_TREES);
	if (!OnnxRegrow(e, (void **) &l->tree_ids, u, sizeof(int64_t), "the tree ids", status) ||
		(l->first = OnnxHold(e, u + 1, sizeof(int64_t), "the trees", status)) == NULL ||
		(l->slot_node = OnnxHold(e, n, sizeof(int32_t), "the node slots", status)) == NULL)
		return false;
	memset(l->first, 0, sizeof(int64_t) * (size_t) (u + 1));
	for (int64_t i = 0; i < n; i++)
	{
		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
		l->first[FindId(l->tree_ids, u, e->tree_ids[i]) + 1]++;
	}
	for (int64_t t = 0; t < u; t++)
	{
		if (l->first[t + 1] > INT32_MAX)
			return StatusFail(status, SILVAN_ERROR_INVALID, "too many nodes",
							  "Tree %lld of %s has more than %d nodes.",
							  (long long) l->tree_ids[t], e->op, INT32_MAX);
		l->first[t + 1] += l->first[t];
	}
	for (int64_t i = 0; i < n; i++)
	{
		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
		l->slot_node[i] = -1;
	}
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		t = FindId(l->tree_ids, u, e->tree_ids[i]);
		int64_t		size = l->first[t + 1] - l->first[t];
		int64_t		id = e->node_ids[i];

		if (id < 0 || id >= size)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"nodes_nodeids\" is %lld; tree %lld has %lld nodes, numbered from 0.",
							  (long long) i, (long long) id, (long long) e->tree_ids[i], (long long) size);
		if (l->slot_node[l->first[t] + id] >= 0)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Node %lld of tree %lld is defined twice (field \"nodes_nodeids\").",
							  (long long) id, (long long) e->tree_ids[i]);
		l->slot_node[l->first[t] + id] = (int32_t) i;
	}
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		t = FindId(l->tree_ids, u, e->tree_ids[i]);
		int64_t		size = l->first[t + 1] - l->first[t];

		if (e->modes[i] == MODE_LEAF)
			continue;
		if (e->true_ids[i] < 0 || e->true_ids[i] >= size ||
			e->false_ids[i] < 0 || e->false_ids[i] >= size)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"nodes_truenodeids\" or \"nodes_falsenodeids\" (%lld, %lld) is no node of tree %lld, which has %lld.",
							  (long long) i, (long long) e->true_ids[i], (long long) e->false_ids[i],
							  (long long) e->tree_ids[i], (long long) size);
		if (e->feature_ids[i] < 0)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"nodes_featureids\" is %lld.",
							  (long long) i, (long long) e->feature_ids[i]);
	}
	return true;
}

/* Locate every weight: its tree must exist and its node be a leaf */
static bool
LocateWeights(OnnxEnsemble *e, OnnxLayout *l, int64_t num_classes, SilvanStatus *status)
{
	const char *prefix = e->classifier ? "class" : "target";

	if ((l->weights = OnnxHold(e, e->num_weights, sizeof(OnnxWeight), "the weights",
							   status)) == NULL)
		return false;
	for (int64_t i = 0; i < e->num_weights; i++)
	{
		OnnxWeight *w = &l->weights[i];
		int64_t		t = FindId(l->tree_ids, l->num_trees, e->w_tree[i]);
		int64_t		size;

		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
		if (t < 0)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"%s_treeids\" is %lld, which is no tree of the model.",
							  (long long) i, prefix, (long long) e->w_tree[i]);
		size = l->first[t + 1] - l->first[t];
		if (e->w_node[i] < 0 || e->w_node[i] >= size ||
			e->modes[l->slot_node[l->first[t] + e->w_node[i]]] != MODE_LEAF)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"%s_nodeids\" is %lld, which is no leaf of tree %lld.",
							  (long long) i, prefix, (long long) e->w_node[i], (long long) e->w_tree[i]);
		if (e->w_class[i] < 0 || e->w_class[i] >= num_classes)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"%s_ids\" is %lld; the model has %lld %ss.",
							  (long long) i, prefix, (long long) e->w_class[i],
							  (long long) num_classes, prefix);
		w->tree = (int32_t) t;
		w->node = (int32_t) e->w_node[i];
		w->cls = (int32_t) e->w_class[i];
		w->order = (int32_t) i;
	}
	if (!DecodeSort(l->weights, (size_t) e->num_weights, sizeof(OnnxWeight), CompareWeights))
		return StatusCanceled(status, "parsing the model");
	for (int64_t i = 1; i < e->num_weights; i++)
		if (CompareWeights(&(OnnxWeight) {l->weights[i].tree, l->weights[i].node, l->weights[i].cls, 0},
						   &(OnnxWeight) {l->weights[i - 1].tree, l->weights[i - 1].node, l->weights[i - 1].cls, 0}) == 0)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx tree",
							  "Leaf %lld of tree %lld has two weights for %s %lld (fields \"%s_nodeids\", \"%s_ids\").",
							  (long long) l->weights[i].node, (long long) l->tree_ids[l->weights[i].tree],
							  prefix, (long long) l->weights[i].cls, prefix, prefix);
	return true;
}

/* Fill node slot of a Forest tree from ONNX node i */
static void
FillNode(const OnnxEnsemble *e, const Forest *forest, int64_t i, int64_t tree_size,
		 ForestNode *node)
{
	int			mode = e->modes[i];
	bool		nan_true;
	int64_t		t_child = e->true32[i];
	int64_t		f_child = e->false32[i];
	double		v = e->values.values[i];

	memset(node, 0, sizeof(*node));
	if (mode == MODE_LEAF)
	{
		node->kind = FOREST_NODE_LEAF;
		node->feature = node->left = node->right = -1;
		return;
	}
	/* out-of-range children are left for ForestValidate to report */
	if (t_child < 0 || t_child >= tree_size)
		t_child = -1;
	if (f_child < 0 || f_child >= tree_size)
		f_child = -1;
	nan_true = (e->tracks8 != NULL && e->tracks8[i] != 0) || mode == MODE_NEQ;
	node->kind = FOREST_NODE_NUMERIC;
	node->missing = FOREST_MISSING_NAN;
	node->feature = e->feature32[i];
	node->threshold = forest->precision == FOREST_FLOAT32 ? (double) (float) v : v;
	if (mode == MODE_GTE || mode == MODE_GT)
	{
		/* x >= t is !(x < t), x > t is !(x <= t): swap the children */
		node->compare = mode == MODE_GTE ? FOREST_CMP_LT : FOREST_CMP_LE;
		node->left = (int32_t) f_child;
		node->right = (int32_t) t_child;
		node->default_left = !nan_true;
	}
	else
	{
		node->compare = mode == MODE_LEQ ? FOREST_CMP_LE : mode == MODE_LT ? FOREST_CMP_LT :
			mode == MODE_EQ ? FOREST_CMP_EQ : FOREST_CMP_NE;
		node->left = (int32_t) t_child;
		node->right = (int32_t) f_child;
		node->default_left = nan_true;
	}
}

/*
 * The Forest trees the model becomes: for each tree (ascending id), one
 * per class it weights (ascending); for a binary booster, also a negated
 * copy for class 0.  Counts only (trees, nodes) when forest->trees is NULL.
 */
static bool
EmitTrees(const OnnxEnsemble *e, const OnnxLayout *l, Forest *forest,
		  bool negated_twin, int64_t *num_trees, int64_t *num_nodes,
		  SilvanStatus *status)
{
	int64_t		w = 0;
	int64_t		tree_out = 0;
	int64_t		node_out = 0;
	bool		minmax = e->aggregate >= 2;
	uint32_t	ticks = 0;

	for (int64_t t = 0; t < l->num_trees; t++)
	{
		int64_t		size = l->first[t + 1] - l->first[t];
		int64_t		leaves = 0;

		if (CancelTickN(&ticks, (uint32_t) (size >> 2)))
			return StatusCanceled(status, "parsing the model");
		for (int64_t s = 0; s < size; s++)
			leaves += e->modes[l->slot_node[l->first[t] + s]] == MODE_LEAF;
		while (w < e->num_weights && l->weights[w].tree == t)
		{
			int64_t		cls = l->weights[w].cls;
			int64_t		start = w;

			while (w < e->num_weights && l->weights[w].tree == t && l->weights[w].cls == cls)
				w++;
			if (minmax && w - start != leaves)
				return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx tree",
								  "Tree %lld gives %lld of its %lld leaves a weight for target %lld; MIN and MAX aggregation need all or none.",
								  (long long) l->tree_ids[t], (long long) (w - start),
								  (long long) leaves, (long long) cls);
			for (int copy = 0; copy < (negated_twin ? 2 : 1); copy++)
			{
				if (forest->trees != NULL)
				{
					ForestTree *ft = &forest->trees[tree_out];
					ForestNode *nodes = forest->nodes + node_out;

					ft->first_node = node_out;
					ft->num_nodes = (int32_t) size;
					ft->group = negated_twin ? (copy == 0 ? 1 : 0) : (int32_t) cls;
					for (int64_t s = 0; s < size; s++)
					{
						if (CancelTick(&ticks))
							return StatusCanceled(status, "parsing the model");
						FillNode(e, forest, l->slot_node[l->first[t] + s], size, &nodes[s]);
					}
					for (int64_t k = start; k < w; k++)
					{
						double		v = e->weights.values[l->weights[k].order];

						if (forest->precision == FOREST_FLOAT32)
							v = (float) v;
						nodes[l->weights[k].node].leaf_value = copy == 0 ? v : -v;
					}
				}
				tree_out++;
				node_out += size;
			}
		}
	}
	*num_trees = tree_out;
	*num_nodes = node_out;
	return true;
}

/* Set task, groups, transform and base margins of a classifier */
static bool
ClassifierShape(const OnnxEnsemble *e, Forest *forest, bool *negated_twin,
				SilvanStatus *status)
{
	int64_t		k = e->num_labels;
	bool		weighted[2] = {false, false};
	bool		all_positive = true;

	*negated_twin = false;
	if (k < 2 || k > FOREST_MAX_GROUPS)
		return StatusFail(status, k < 2 ? SILVAN_ERROR_INVALID : SILVAN_ERROR_UNSUPPORTED,
						  "invalid number of classes",
						  "%s has %lld class labels; 2 to %d are supported.",
						  e->op, (long long) k, FOREST_MAX_GROUPS);
	if (e->base.count != 0 && e->base.count != k && !(k == 2 && e->base.count == 1))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
						  "Attribute \"base_values\" of %s has %lld entries; the model has %lld classes.",
						  e->op, (long long) e->base.count, (long long) k);
	forest->task = FOREST_TASK_MULTICLASS;
	forest->num_classes = (int32_t) k;
	forest->transform = onnx_transforms[e->post_transform];
	if (!ForestAllocBaseMargin(forest, (int32_t) k, status))
		return false;
	for (int64_t i = 0; i < e->num_weights; i++)
	{
		if (e->w_class[i] >= 0 && e->w_class[i] < 2)
			weighted[e->w_class[i]] = true;
		if (e->weights.values[i] < 0)
			all_positive = false;
	}
	if (k == 2 && weighted[0] && !weighted[1])
	{
		/* a binary booster: ONNX Runtime's scores are {-s, s} */
		if (all_positive)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx classifier",
							  "%s has two classes, weights for class 0 only, and no negative weight; ONNX Runtime then reports {1-s, s}, which silvan does not implement.",
							  e->op);
		if (e->post_transform != 0 && e->post_transform != 1)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx classifier",
							  "%s weights one of two classes with post_transform %s; only NONE and LOGISTIC are supported there.",
							  e->op, transform_names[e->post_transform]);
		if (e->base.count == 2)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx classifier",
							  "%s weights one of two classes and has two base_values; give one.", e->op);
		*negated_twin = true;
		if (e->base.count == 1)
		{
			forest->base_margin[1] = e->base.values[0];
			forest->base_margin[0] = -e->base.values[0];
		}
		return true;
	}
	if (k == 2 && !weighted[0] && weighted[1])
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx classifier",
						  "%s has two classes and weights for class 1 only, which is not supported.", e->op);
	if (k == 2 && e->base.count == 2)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx classifier",
						  "%s weights both of two classes and has two base_values; ONNX Runtime then ignores class 1's weights, which silvan does not imitate.",
						  e->op);
	for (int64_t c = 0; c < e->base.count; c++)
		forest->base_margin[c] = e->base.values[c];
	return true;
}

/* The forest's aggregate for the ensemble's aggregate_function */
static uint8_t
ForestAggregateOf(const OnnxEnsemble *e)
{
	return e->aggregate == 2 ? FOREST_AGGREGATE_MIN :
		e->aggregate == 3 ? FOREST_AGGREGATE_MAX : FOREST_AGGREGATE_SUM;
}

/*
 * Set task, groups, transform and aggregation of a TreeEnsemble with
 * several targets: one group per target, predict = the first largest
 * (as an ArgMax after it would), the transformed targets as probabilities.
 */
static bool
TargetsShape(const OnnxEnsemble *e, Forest *forest, SilvanStatus *status)
{
	if (e->n_targets > FOREST_MAX_GROUPS)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx model",
						  "Attribute \"n_targets\" of %s is %lld; at most %d are supported.",
						  e->op, (long long) e->n_targets, FOREST_MAX_GROUPS);
	forest->task = FOREST_TASK_MULTICLASS;
	forest->num_classes = (int32_t) e->n_targets;
	forest->transform = onnx_transforms[e->post_transform];
	forest->aggregate = ForestAggregateOf(e);
	return ForestAllocBaseMargin(forest, (int32_t) e->n_targets, status);
}

/* Set task, groups, transform, aggregation and base margin of a regressor */
static bool
RegressorShape(const OnnxEnsemble *e, Forest *forest, SilvanStatus *status)
{
	if (e->n_targets != 1)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx regressor",
						  "Attribute \"n_targets\" of %s is %lld; only one target is supported.",
						  e->op, (long long) e->n_targets);
	if (e->post_transform == 1 || e->post_transform == 2 || e->post_transform == 3)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx regressor",
						  "Attribute \"post_transform\" of %s is %s; on a one-target regressor ONNX Runtime ignores it while the specification applies it, so silvan refuses it.",
						  e->op, transform_names[e->post_transform]);
	if (e->base.count > 1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
						  "Attribute \"base_values\" of %s has %lld entries; the model has one target.",
						  e->op, (long long) e->base.count);
	forest->task = FOREST_TASK_REGRESSION;
	forest->num_classes = 1;
	forest->transform = e->post_transform == 4 ? FOREST_TRANSFORM_ONNX_PROBIT :
		FOREST_TRANSFORM_IDENTITY;
	if (!ForestAllocBaseMargin(forest, 1, status))
		return false;
	if (e->base.count == 1)
		forest->base_margin[0] = e->base.values[0];
	forest->aggregate = ForestAggregateOf(e);
	return true;
}

/*
 * Narrow a held array of int64s in place to int32s, a value outside
 * [0, INT32_MAX] becoming -1 (or, as flags, to bytes, non-zero becoming
 * 1), and shrink it; the wide pointer is cleared
 */
static bool
NarrowArray(OnnxEnsemble *e, const int64_t **wide, void **narrow, bool flags,
			SilvanStatus *status)
{
	int64_t    *src = (int64_t *) *wide;
	void	   *p = src;

	*narrow = NULL;
	if (src == NULL)
		return true;
	for (int64_t i = 0; i < e->num_nodes; i++)
	{
		int64_t		v = src[i];

		if (flags)
			((uint8_t *) p)[i] = v != 0;
		else
			((int32_t *) p)[i] = v < 0 || v > INT32_MAX ? -1 : (int32_t) v;
	}
	*wide = NULL;
	if (!OnnxRegrow(e, &p, e->num_nodes, flags ? 1 : sizeof(int32_t), "the nodes", status))
		return false;
	*narrow = p;
	return true;
}

/*
 * Once the layout has checked every split's children and feature, all
 * FillNode needs of them fits 32 bits (features past INT32_MAX are
 * refused before any node is filled): narrow them, four bytes a node
 * instead of eight, tracks one
 */
static bool
NarrowNodes(OnnxEnsemble *e, SilvanStatus *status)
{
	return NarrowArray(e, &e->feature_ids, (void **) &e->feature32, false, status) &&
		NarrowArray(e, &e->true_ids, (void **) &e->true32, false, status) &&
		NarrowArray(e, &e->false_ids, (void **) &e->false32, false, status) &&
		NarrowArray(e, &e->tracks_true, (void **) &e->tracks8, true, status);
}

/*
 * Build the forest's trees from the ensemble.  Arrays are given back as
 * soon as nothing reads them, and narrowed, before the forest's nodes
 * are allocated: the forest and what it is built from peak together.
 */
static bool
BuildForest(OnnxEnsemble *e, Forest *forest, int64_t num_features_hint,
			SilvanStatus *status)
{
	OnnxLayout	l = {0};
	bool		negated_twin = false;
	int64_t		num_trees;
	int64_t		num_nodes;
	int64_t		max_feature = -1;
	bool		ok;

	ok = e->classifier ? ClassifierShape(e, forest, &negated_twin, status)
		: e->v5 && e->n_targets > 1 ? TargetsShape(e, forest, status)
		: RegressorShape(e, forest, status);
	ok = ok && BuildLayout(e, &l, status);
	for (int64_t i = 0; ok && i < e->num_nodes; i++)
		if (e->modes[i] != MODE_LEAF && e->feature_ids[i] > max_feature)
			max_feature = e->feature_ids[i];
	if (ok)
	{
		/* the layout replaces these; the located weights the weights' ids */
		OnnxUnhold(e, e->tree_ids);
		OnnxUnhold(e, e->node_ids);
		e->tree_ids = e->node_ids = NULL;
		ok = LocateWeights(e, &l, e->classifier ? e->num_labels : e->n_targets, status);
	}
	if (ok)
	{
		OnnxUnhold(e, e->w_tree);
		OnnxUnhold(e, e->w_node);
		OnnxUnhold(e, e->w_class);
		e->w_tree = e->w_node = e->w_class = NULL;
		ok = NarrowNodes(e, status) &&
			EmitTrees(e, &l, forest, negated_twin, &num_trees, &num_nodes, status);
	}
	if (ok && (num_trees > FOREST_MAX_TREES ||
			   num_nodes > e->model_entries * ONNX_MAX_COPY_FACTOR + ONNX_MIN_COPY_ALLOWANCE ||
			   num_nodes > FOREST_MAX_NODES))
		ok = StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "onnx model too large",
						"%s weights so many %s per tree that its %lld nodes would become %lld forest nodes in %lld trees; at most %d times the model's entries are supported.",
						e->op, e->classifier ? "classes" : "targets", (long long) e->num_nodes,
						(long long) num_nodes, (long long) num_trees, ONNX_MAX_COPY_FACTOR);
	if (ok && num_features_hint >= 0 && max_feature >= num_features_hint)
		ok = StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
						"%s splits on feature %lld; its input has %lld columns.",
						e->op, (long long) max_feature, (long long) num_features_hint);
	if (ok && (max_feature >= FOREST_MAX_FEATURES ||
			   num_features_hint > FOREST_MAX_FEATURES))
		ok = StatusFail(status, SILVAN_ERROR_INVALID, "invalid number of features",
						"%s uses feature %lld; at most %d features are supported.",
						e->op, (long long) (max_feature > num_features_hint ? max_feature : num_features_hint),
						FOREST_MAX_FEATURES);
	if (ok)
	{
		forest->num_features = (int32_t) (num_features_hint > max_feature ? num_features_hint
										  : max_feature + 1);
		if (forest->num_features < 1)
			forest->num_features = 1;
		forest->average_output = e->aggregate == 1;
		forest->average_divisor = (int32_t) (l.num_trees > 0 ? l.num_trees : 1);
		ok = DecodeCharge(e->budget, (int64_t) sizeof(ForestTree) * num_trees +
						  (int64_t) sizeof(ForestNode) * num_nodes + 2 * DECODE_CHUNK_OVERHEAD,
						  "the forest's trees", status) &&
			ForestAllocTrees(forest, (int32_t) num_trees, status) &&
			ForestAllocNodes(forest, num_nodes, status) &&
			EmitTrees(e, &l, forest, negated_twin, &num_trees, &num_nodes, status);
	}
	LayoutFree(e, &l);
	return ok;
}

/* The ml opset of the model (0 when it imports none) */
static int64_t
MlOpset(const Onnx__ModelProto *model)
{
	for (size_t i = 0; i < model->n_opset_import; i++)
		if (StrIs(model->opset_import[i]->domain, "ai.onnx.ml"))
			return model->opset_import[i]->version;
	return 0;
}

/* Operators we accept around the ensemble */
static bool
WrapperOp(const char *op)
{
	return StrIs(op, "Cast") || StrIs(op, "Identity") || StrIs(op, "Reshape") ||
		StrIs(op, "Flatten") || StrIs(op, "ZipMap") || StrIs(op, "Constant");
}

/* The node that outputs value name, or NULL */
static const Onnx__NodeProto *
Producer(const Onnx__GraphProto *g, const char *name)
{
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t j = 0; j < g->node[i]->n_output; j++)
			if (StrIs(g->node[i]->output[j], name))
				return g->node[i];
	return NULL;
}

/* Element type a Cast node converts to (0 if not said) */
static int64_t
CastTarget(const OnnxDecoded *d, const Onnx__NodeProto *node)
{
	size_t		n;
	const OnnxAttr *attrs = OnnxNodeAttrs(d, node, &n);

	for (size_t i = 0; i < n; i++)
		if (StrIs(attrs[i].pb->name, "to"))
			return attrs[i].pb->i;
	return 0;
}

/*
 * Follow the ensemble's input back through Cast/Identity/Reshape/Flatten to
 * a graph input; report its element type (after the last Cast) and its
 * column count (-1 when unknown or reshaped).
 */
static bool
TraceInput(const OnnxDecoded *d, const Onnx__GraphProto *g, const Onnx__NodeProto *ensemble,
		   int64_t *elem_type, int64_t *columns, SilvanStatus *status)
{
	const char *name = ensemble->n_input > 0 ? ensemble->input[0] : NULL;
	bool		reshaped = false;
	uint32_t	ticks = 0;

	*elem_type = 0;
	*columns = -1;
	for (size_t hops = 0; name != NULL && hops <= g->n_node; hops++)
	{
		const Onnx__NodeProto *p;

		/* each hop looks at every node */
		if (CancelTickN(&ticks, (uint32_t) (g->n_node < UINT32_MAX ? g->n_node : UINT32_MAX)))
			return StatusCanceled(status, "parsing the model");
		if ((p = Producer(g, name)) == NULL)
			break;
		if (!(StrIs(p->op_type, "Cast") || StrIs(p->op_type, "Identity") ||
			  StrIs(p->op_type, "Reshape") || StrIs(p->op_type, "Flatten")) || p->n_input < 1)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx graph",
							  "The tree ensemble's input comes from a \"%.64s\" operator; only Cast, Identity, Reshape and Flatten may stand between it and the graph input.",
							  p->op_type ? p->op_type : "");
		if (StrIs(p->op_type, "Cast") && *elem_type == 0)
			*elem_type = CastTarget(d, p);
		if (!StrIs(p->op_type, "Cast") && !StrIs(p->op_type, "Identity"))
			reshaped = true;
		name = p->input[0];
	}
	for (size_t i = 0; name != NULL && i < g->n_input; i++)
	{
		const Onnx__ValueInfoProto *in = g->input[i];
		const Onnx__TypeProto__Tensor *tt;

		if (!StrIs(in->name, name))
			continue;
		tt = in->type != NULL && in->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ?
			in->type->tensor_type : NULL;
		if (tt != NULL && *elem_type == 0)
			*elem_type = tt->elem_type;
		if (tt != NULL && tt->shape != NULL && tt->shape->n_dim == 2 && !reshaped &&
			tt->shape->dim[1]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			*columns = tt->shape->dim[1]->dim_value;
		return true;
	}
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx graph",
					  "The tree ensemble's input \"%.64s\" is not one of the graph's inputs.",
					  name ? name : "");
}

/* Find the one tree ensemble; refuse other operators */
static bool
FindEnsemble(const Onnx__GraphProto *g, const Onnx__NodeProto **found,
			 SilvanStatus *status)
{
	*found = NULL;
	for (size_t i = 0; i < g->n_node; i++)
	{
		const Onnx__NodeProto *node = g->node[i];
		const char *op = node->op_type ? node->op_type : "";

		if (StrIs(op, "TreeEnsembleRegressor") || StrIs(op, "TreeEnsembleClassifier") ||
			StrIs(op, "TreeEnsemble"))
		{
			if (*found != NULL)
				return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx graph",
								  "The graph holds more than one tree ensemble.");
			if (node->domain == NULL || !StrIs(node->domain, "ai.onnx.ml"))
				return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx graph",
								  "Operator %s is in domain \"%.64s\", not \"ai.onnx.ml\".",
								  op, node->domain ? node->domain : "");
			*found = node;
		}
		else if (!WrapperOp(op))
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx operator",
							  "Node \"%.64s\" is a \"%.64s\" operator; only a TreeEnsemble, TreeEnsembleRegressor or TreeEnsembleClassifier, with Cast, Identity, Reshape, Flatten and ZipMap around it, is supported.",
							  node->name && node->name[0] ? node->name : "(unnamed)", op);
	}
	if (*found == NULL)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx graph",
						  "The graph holds no TreeEnsemble, TreeEnsembleRegressor or TreeEnsembleClassifier.");
	return true;
}

/* Charge the forest's copy of the class labels and the sorted pointers that check it */
static bool
ChargeLabels(const OnnxEnsemble *e, SilvanStatus *status)
{
	int64_t		bytes = 2 * DECODE_CHUNK_OVERHEAD;

	for (int64_t i = 0; i < e->num_labels; i++)
		bytes += 2 * (int64_t) sizeof(char *) + (int64_t) e->label_lengths[i] + 1;
	return DecodeCharge(e->budget, bytes, "the class labels", status);
}

/* Read the graph's ensemble into forest */
static bool
ReadModel(const OnnxDecoded *d, Forest *forest, DecodeBudget *budget, SilvanStatus *status)
{
	const Onnx__ModelProto *model = d->model;
	const Onnx__GraphProto *g = model->graph;
	const Onnx__NodeProto *node;
	OnnxEnsemble e = {0};
	int64_t		elem_type;
	int64_t		columns;
	int64_t		opset = MlOpset(model);
	bool		ok;
	const OnnxAttr *attrs;
	size_t		num_attrs;

	if (g == NULL)
		return OnnxSyntax(status, "The model has no graph.");
	if (opset > 5)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx opset",
						  "The model imports ai.onnx.ml opset %lld; opsets 1 to 5 are supported.",
						  (long long) opset);
	if (!FindEnsemble(g, &node, status) ||
		!TraceInput(d, g, node, &elem_type, &columns, status))
		return false;
	e.budget = budget;
	e.classifier = StrIs(node->op_type, "TreeEnsembleClassifier");
	attrs = OnnxNodeAttrs(d, node, &num_attrs);
	if (StrIs(node->op_type, "TreeEnsemble") && opset != 5)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx model",
						  "Operator TreeEnsemble is in ai.onnx.ml opset 5; the model imports opset %lld.",
						  (long long) opset);
	ok = StrIs(node->op_type, "TreeEnsemble") ?
		OnnxReadTreeEnsemble(attrs, num_attrs, &e, status) :
		ReadEnsemble(attrs, num_attrs, &e, status);
	if (ok)
	{
		forest->source = FOREST_SOURCE_ONNX;
		forest->precision = elem_type == TENSOR_DOUBLE || e.values.doubles ||
			e.weights.doubles || e.base.doubles ? FOREST_FLOAT64 : FOREST_FLOAT32;
		if (e.v5 && forest->precision == FOREST_FLOAT64 && e.post_transform != 0)
			ok = StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx model",
							"Attribute \"post_transform\" of TreeEnsemble is %s on double values; ONNX Runtime then transforms in double, silvan in float.",
							transform_names[e.post_transform]);
	}
	if (ok)
	{
		forest->base_margin_last = true;
		forest->category_rule = FOREST_CATEGORY_NONNEGATIVE;
		snprintf(forest->objective, sizeof(forest->objective), "%s", e.op);
		ok = BuildForest(&e, forest, columns, status);
	}
	if (ok && e.classifier)
		ok = ChargeLabels(&e, status) &&
			ForestSetClassLabels(forest, (const char *const *) e.labels, e.label_lengths,
								 e.num_labels, status);
	EnsembleFree(&e);
	return ok;
}

/*
 * Parse an ONNX ModelProto holding a tree ensemble: decode it within the
 * budget (onnx_wire.c), read it, and keep the forest's charge
 */
Forest *
ParseOnnx(const char *data, size_t len, DecodeBudget *budget, SilvanStatus *status)
{
	OnnxAlloc	alloc;
	OnnxDecoded decoded;
	Forest	   *forest;

	StatusClear(status);
	OnnxAllocInit(&alloc, budget);
	if (!OnnxDecodeModel((const uint8_t *) data, len, &alloc, &decoded, status))
		return NULL;
	forest = ForestCreate(status);
	if (forest != NULL && !ReadModel(&decoded, forest, budget, status))
	{
		ForestFree(forest);
		forest = NULL;
	}
	OnnxDecodedFree(&decoded, &alloc);
	return forest;
}

/* Decode a serialized TensorProto (an ONNX test's input_0.pb) into doubles */
bool
OnnxTensorRead(const char *data, size_t len, OnnxTensor *tensor, SilvanStatus *status)
{
	DecodeBudget budget;
	OnnxAlloc	alloc;
	Onnx__TensorProto *t;
	OnnxNumbers numbers;
	bool		ok;

	memset(tensor, 0, sizeof(*tensor));
	DecodeBudgetInit(&budget, "ONNX tensor", len);
	OnnxAllocInit(&alloc, &budget);
	t = onnx__tensor_proto__unpack(&alloc.base, len, (const uint8_t *) data);
	if (t == NULL && budget.refused)
		return DecodeBudgetFail(&budget, status);
	if (t == NULL)
		return OnnxSyntax(status, "The bytes are not an ONNX TensorProto.");
	ok = TensorNumbers(t, "\"tensor\"", &numbers, NULL, status);
	if (ok && t->n_dims > 8)
	{
		free(numbers.values);
		ok = StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx tensor",
						"The tensor has %zu dimensions; at most 8 are supported.", t->n_dims);
	}
	if (ok)
	{
		tensor->data_type = t->data_type;
		tensor->num_dims = (int32_t) t->n_dims;
		for (size_t d = 0; d < t->n_dims; d++)
			tensor->dims[d] = t->dims[d];
		tensor->count = numbers.count;
		tensor->values = numbers.values;
	}
	onnx__tensor_proto__free_unpacked(t, &alloc.base);
	return ok;
}
