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
 * TreeEnsemble (ai.onnx.ml opset 5) stores interior nodes (nodes_*) apart
 * from leaves (leaf_*): each branch names a node or a leaf (nodes_trueleafs,
 * nodes_falseleafs), tree_roots names each tree's root, and each leaf has
 * one weight for one target (leaf_targetids); integer attributes replace
 * the enum strings (aggregate_function AVERAGE=0 SUM=1 MIN=2 MAX=3;
 * post_transform NONE=0 SOFTMAX=1 LOGISTIC=2 SOFTMAX_ZERO=3 PROBIT=4;
 * nodes_modes a uint8 tensor, 6 = BRANCH_MEMBER) and there are no
 * base_values.  As ONNX Runtime does (tree_ensemble_attribute.h), we
 * convert it into the old operators' layout and build the forest from
 * that with the same code:
 *
 *   - tree t is the t-th entry of tree_roots; its nodes are written depth
 *     first from the root, numbered 0..n-1, each leaf as a LEAF node with
 *     its one weight.  A node or leaf reached twice (the format allows
 *     sharing) is written twice; cycles are refused, naming the node;
 *   - BRANCH_MEMBER (x in a set) tests exact equality, so it becomes a
 *     chain of BRANCH_EQ nodes, one per member: each true branch leads to
 *     its own copy of the true subtree, each false branch to the next test
 *     and the last to the false subtree.  Its sets are read from
 *     membership_values in node order, each ended by a NaN, as the
 *     specification says (ONNX Runtime agrees; onnx's reference evaluator
 *     reads them in walk order and stops a set at a 0.0, which we take for
 *     a bug).  A categorical split would not do: its category truncates,
 *     so 2.5 would match 2.  NaN is in no set: it takes the true branch only
 *     where nodes_missing_value_tracks_true says so, at every test of the
 *     chain, so the chain agrees;
 *   - a root whose two branches name the same leaf is a one-leaf tree;
 *     ONNX Runtime and onnx's reference then read leaf number root (the
 *     node's own index) instead of the leaf it names: refused unless the
 *     two are the same;
 *   - several targets become several groups, as a classifier's classes:
 *     the forest is a multi-class one without labels, its probabilities
 *     the transformed targets (the operator's output), predict the first
 *     largest target (what an ArgMax after it returns).  One target is a
 *     regressor, with the old regressor's rules;
 *   - AVERAGE divides the sum by the number of trees, and a target no tree
 *     reaches is 0 under MIN and MAX, as ONNX Runtime computes (onnx's
 *     reference adds each weight divided by the tree count and starts MIN
 *     and MAX at the largest and smallest floats, and ignores
 *     post_transform);
 *   - the output has the input's type: a double model's sums are double;
 *     a post_transform on a double model is refused (ONNX Runtime computes
 *     it in double, ours are in float).
 *
 * The expansion (copies of shared nodes and of true subtrees of sets) is
 * bounded like the per-class copies: at most ONNX_MAX_COPY_FACTOR times
 * the model's nodes, leaves and set members, else it is refused; ids,
 * modes, targets and tensor lengths are checked before anything is
 * indexed, and a set without its terminating NaN, an empty set or values
 * left after the last set are refused.
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

#include "silvan/parse.h"
#include "onnx/onnx-ml-subset.pb-c.h"

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

/* A list of numbers read from an attribute (floats, ints or a tensor) */
typedef struct OnnxNumbers
{
	int64_t		count;
	double	   *values;			/* malloc'd, or NULL when count is 0 */
	bool		doubles;		/* came from a double tensor */
} OnnxNumbers;

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
	uint8_t    *modes;			/* OnnxMode per node, malloc'd */
	OnnxNumbers values;

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
	char	  **labels;			/* malloc'd strings */
	size_t	   *label_lengths;

	bool		v5;				/* converted from TreeEnsemble (opset 5) */
	int64_t		model_entries;	/* what the model holds, bounding the copies */
	int64_t    *owned[9];		/* the arrays a conversion made, malloc'd */
} OnnxEnsemble;

/* Fail with a model-level syntax error */
static bool
OnnxSyntax(SilvanStatus *status, const char *detail)
{
	return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid onnx model", "%s", detail);
}

/* Is the protobuf string s equal to the C string c? */
static bool
StrIs(const char *s, const char *c)
{
	return s != NULL && strcmp(s, c) == 0;
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
			  SilvanStatus *status)
{
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
	out->values = malloc(sizeof(double) * (size_t) (n > 0 ? n : 1));
	if (out->values == NULL)
		return StatusNoMemory(status, "an onnx tensor");
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
static bool
AttrType(const Onnx__AttributeProto *a, int32_t type, const char *what, SilvanStatus *status)
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

/* Read an ints attribute */
static bool
AttrInts(const Onnx__AttributeProto *a, const int64_t **ints, int64_t *count,
		 const char *op, SilvanStatus *status)
{
	if (!AttrType(a, ATTR_INTS, op, status))
		return false;
	*ints = a->ints;
	*count = (int64_t) a->n_ints;
	return true;
}

/* Read a floats attribute (or, for *_as_tensor, a tensor) as doubles */
static bool
AttrNumbers(const Onnx__AttributeProto *a, bool tensor, OnnxNumbers *out,
			const char *op, SilvanStatus *status)
{
	char		what[128];

	free(out->values);
	memset(out, 0, sizeof(*out));
	if (tensor)
	{
		if (!AttrType(a, ATTR_TENSOR, op, status))
			return false;
		if (a->t == NULL)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
							  "Attribute \"%s\" of %s has no tensor.", a->name, op);
		snprintf(what, sizeof(what), "\"%.64s\"", a->name);
		return TensorNumbers(a->t, what, out, status);
	}
	if (!AttrType(a, ATTR_FLOATS, op, status))
		return false;
	out->count = (int64_t) a->n_floats;
	out->values = malloc(sizeof(double) * (a->n_floats > 0 ? a->n_floats : 1));
	if (out->values == NULL)
		return StatusNoMemory(status, "an onnx attribute");
	for (size_t i = 0; i < a->n_floats; i++)
		out->values[i] = a->floats[i];
	return true;
}

/* Read a string attribute as one of the given names; its index in *index */
static bool
AttrEnum(const Onnx__AttributeProto *a, const char *const *names, int count,
		 int *index, const char *op, SilvanStatus *status)
{
	if (!AttrType(a, ATTR_STRING, op, status))
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
AttrModes(const Onnx__AttributeProto *a, OnnxEnsemble *e, int64_t *count,
		  SilvanStatus *status)
{
	if (!AttrType(a, ATTR_STRINGS, e->op, status))
		return false;
	free(e->modes);
	e->modes = malloc(a->n_strings > 0 ? a->n_strings : 1);
	if (e->modes == NULL)
		return StatusNoMemory(status, "the node modes");
	*count = (int64_t) a->n_strings;
	for (size_t i = 0; i < a->n_strings; i++)
	{
		const ProtobufCBinaryData *s = &a->strings[i];
		int			m;

		for (m = 0; m <= MODE_LEAF; m++)
			if (s->len == strlen(mode_names[m]) && memcmp(s->data, mode_names[m], s->len) == 0)
				break;
		if (m > MODE_LEAF)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx node mode",
							  "Entry %zu of attribute \"nodes_modes\" of %s is \"%.*s\"; supported are BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ and LEAF.",
							  i, e->op, (int) (s->len > 64 ? 64 : s->len),
							  s->data ? (const char *) s->data : "");
		e->modes[i] = (uint8_t) m;
	}
	return true;
}

/* Read the class labels (int64s written in decimal, or strings) */
static bool
AttrLabels(const Onnx__AttributeProto *a, bool strings, OnnxEnsemble *e,
		   SilvanStatus *status)
{
	size_t		n = strings ? a->n_strings : a->n_ints;

	if (!AttrType(a, strings ? ATTR_STRINGS : ATTR_INTS, e->op, status))
		return false;
	if (e->labels != NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
						  "%s has both \"classlabels_strings\" and \"classlabels_int64s\".", e->op);
	e->labels = calloc(n > 0 ? n : 1, sizeof(char *));
	e->label_lengths = calloc(n > 0 ? n : 1, sizeof(size_t));
	if (e->labels == NULL || e->label_lengths == NULL)
		return StatusNoMemory(status, "the class labels");
	e->num_labels = (int64_t) n;
	for (size_t i = 0; i < n; i++)
	{
		char		digits[32];
		const char *src = digits;
		size_t		len;

		if (strings)
		{
			src = (const char *) a->strings[i].data;
			len = a->strings[i].len;
		}
		else
			len = (size_t) snprintf(digits, sizeof(digits), "%" PRId64, a->ints[i]);
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
ReadAttribute(const Onnx__AttributeProto *a, OnnxEnsemble *e, int64_t *counts,
			  SilvanStatus *status)
{
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
		if (!AttrInts(a, &(target), &n, e->op, status)) return false; \
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
		if (!AttrModes(a, e, &n, status))
			return false;
		if (counts[0] >= 0 && n != counts[0])
			goto node_count;
		counts[0] = n;
		return true;
	}
	if (StrIs(stem, "nodes_values"))
	{
		if (!AttrNumbers(a, tensor, &e->values, e->op, status))
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
			if (!AttrInts(a, target, &n, e->op, status))
				return false;
		}
		else if (StrIs(rest, "weights"))
		{
			if (!AttrNumbers(a, tensor, &e->weights, e->op, status))
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
		return AttrNumbers(a, tensor, &e->base, e->op, status);
	if (StrIs(stem, "post_transform") && !tensor)
		return AttrEnum(a, transform_names, 5, &e->post_transform, e->op, status);
	if (!e->classifier && StrIs(stem, "aggregate_function") && !tensor)
	{
		static const char *const names[] = {"SUM", "AVERAGE", "MIN", "MAX"};

		return AttrEnum(a, names, 4, &e->aggregate, e->op, status);
	}
	if (!e->classifier && StrIs(stem, "n_targets") && !tensor)
	{
		if (!AttrType(a, ATTR_INT, e->op, status))
			return false;
		e->n_targets = a->i;
		return true;
	}
	if (e->classifier && StrIs(stem, "classlabels_strings") && !tensor)
		return AttrLabels(a, true, e, status);
	if (e->classifier && StrIs(stem, "classlabels_int64s") && !tensor)
		return AttrLabels(a, false, e, status);
unknown:
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx attribute",
					  "%s has attribute \"%.64s\", which is not supported.", e->op, a->name);
node_count:
	return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
					  "Attribute \"%s\" of %s has %lld entries; the other nodes_* attributes have %lld.",
					  a->name, e->op, (long long) n, (long long) counts[0]);
}

/* Free what an OnnxEnsemble owns */
static void
EnsembleFree(OnnxEnsemble *e)
{
	free(e->modes);
	free(e->values.values);
	free(e->weights.values);
	free(e->base.values);
	for (int64_t i = 0; e->labels != NULL && i < e->num_labels; i++)
		free(e->labels[i]);
	free(e->labels);
	free(e->label_lengths);
	for (int i = 0; i < 9; i++)
		free(e->owned[i]);
}

/* Read every attribute and check the arrays are present and agree */
static bool
ReadEnsemble(const Onnx__NodeProto *node, OnnxEnsemble *e, SilvanStatus *status)
{
	int64_t		counts[2] = {-1, -1};

	e->op = e->classifier ? "TreeEnsembleClassifier" : "TreeEnsembleRegressor";
	e->n_targets = 1;
	e->aggregate = 0;
	for (size_t i = 0; i < node->n_attribute; i++)
		if (!ReadAttribute(node->attribute[i], e, counts, status))
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

/* Compare int64s, for qsort */
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

/* One weight, located: which tree (index), node (local), class */
typedef struct OnnxWeight
{
	int64_t		tree;
	int64_t		node;
	int64_t		cls;
	int64_t		order;			/* position in the attributes */
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
	int64_t    *slot_node;		/* slot (first[t] + node id) -> attribute index */
	OnnxWeight *weights;		/* sorted */
} OnnxLayout;

/* Free a layout */
static void
LayoutFree(OnnxLayout *l)
{
	free(l->tree_ids);
	free(l->first);
	free(l->slot_node);
	free(l->weights);
}

/* Group nodes by tree id; check node ids are 0..n-1 within each tree */
static bool
BuildLayout(const OnnxEnsemble *e, OnnxLayout *l, SilvanStatus *status)
{
	int64_t		n = e->num_nodes;
	int64_t		u = 0;

	l->tree_ids = malloc(sizeof(int64_t) * (size_t) n);
	l->first = calloc((size_t) n + 1, sizeof(int64_t));
	l->slot_node = malloc(sizeof(int64_t) * (size_t) n);
	if (l->tree_ids == NULL || l->first == NULL || l->slot_node == NULL)
		return StatusNoMemory(status, "the onnx trees");
	memcpy(l->tree_ids, e->tree_ids, sizeof(int64_t) * (size_t) n);
	qsort(l->tree_ids, (size_t) n, sizeof(int64_t), CompareInt64);
	for (int64_t i = 0; i < n; i++)
		if (i == 0 || l->tree_ids[i] != l->tree_ids[u - 1])
			l->tree_ids[u++] = l->tree_ids[i];
	l->num_trees = u;
	if (u > FOREST_MAX_TREES)
		return StatusFail(status, SILVAN_ERROR_INVALID, "too many trees",
						  "%s has %lld trees; at most %d are supported.",
						  e->op, (long long) u, FOREST_MAX_TREES);
	for (int64_t i = 0; i < n; i++)
		l->first[FindId(l->tree_ids, u, e->tree_ids[i]) + 1]++;
	for (int64_t t = 0; t < u; t++)
	{
		if (l->first[t + 1] > INT32_MAX)
			return StatusFail(status, SILVAN_ERROR_INVALID, "too many nodes",
							  "Tree %lld of %s has more than %d nodes.",
							  (long long) l->tree_ids[t], e->op, INT32_MAX);
		l->first[t + 1] += l->first[t];
	}
	for (int64_t i = 0; i < n; i++)
		l->slot_node[i] = -1;
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
		l->slot_node[l->first[t] + id] = i;
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
LocateWeights(const OnnxEnsemble *e, OnnxLayout *l, int64_t num_classes,
			  SilvanStatus *status)
{
	const char *prefix = e->classifier ? "class" : "target";

	l->weights = malloc(sizeof(OnnxWeight) * (size_t) (e->num_weights > 0 ? e->num_weights : 1));
	if (l->weights == NULL)
		return StatusNoMemory(status, "the onnx weights");
	for (int64_t i = 0; i < e->num_weights; i++)
	{
		OnnxWeight *w = &l->weights[i];
		int64_t		t = FindId(l->tree_ids, l->num_trees, e->w_tree[i]);
		int64_t		size;

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
		w->tree = t;
		w->node = e->w_node[i];
		w->cls = e->w_class[i];
		w->order = i;
	}
	qsort(l->weights, (size_t) e->num_weights, sizeof(OnnxWeight), CompareWeights);
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
	int64_t		t_child = e->true_ids[i];
	int64_t		f_child = e->false_ids[i];
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
	nan_true = (e->tracks_true != NULL && e->tracks_true[i] != 0) || mode == MODE_NEQ;
	node->kind = FOREST_NODE_NUMERIC;
	node->missing = FOREST_MISSING_NAN;
	node->feature = e->feature_ids[i] < 0 || e->feature_ids[i] > INT32_MAX ? -1 :
		(int32_t) e->feature_ids[i];
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

	for (int64_t t = 0; t < l->num_trees; t++)
	{
		int64_t		size = l->first[t + 1] - l->first[t];
		int64_t		leaves = 0;

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
						FillNode(e, forest, l->slot_node[l->first[t] + s], size, &nodes[s]);
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

/* Build the forest's trees from the ensemble */
static bool
BuildForest(const OnnxEnsemble *e, Forest *forest, int64_t num_features_hint,
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
	ok = ok && BuildLayout(e, &l, status) &&
		LocateWeights(e, &l, e->classifier ? e->num_labels : e->n_targets, status) &&
		EmitTrees(e, &l, forest, negated_twin, &num_trees, &num_nodes, status);
	if (ok && (num_trees > FOREST_MAX_TREES ||
			   num_nodes > e->model_entries * ONNX_MAX_COPY_FACTOR + ONNX_MIN_COPY_ALLOWANCE ||
			   num_nodes > FOREST_MAX_NODES))
		ok = StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "onnx model too large",
						"%s weights so many %s per tree that its %lld nodes would become %lld forest nodes in %lld trees; at most %d times the model's entries are supported.",
						e->op, e->classifier ? "classes" : "targets", (long long) e->num_nodes,
						(long long) num_nodes, (long long) num_trees, ONNX_MAX_COPY_FACTOR);
	for (int64_t i = 0; ok && i < e->num_nodes; i++)
		if (e->modes[i] != MODE_LEAF && e->feature_ids[i] > max_feature)
			max_feature = e->feature_ids[i];
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
		ok = ForestAllocTrees(forest, (int32_t) num_trees, status) &&
			ForestAllocNodes(forest, num_nodes, status) &&
			EmitTrees(e, &l, forest, negated_twin, &num_trees, &num_nodes, status);
	}
	LayoutFree(&l);
	return ok;
}

/* ---- TreeEnsemble (ai.onnx.ml opset 5) ---- */

/* The attributes of a TreeEnsemble, as read */
typedef struct OnnxV5
{
	int64_t		num_nodes;		/* interior nodes (nodes_*) */
	const int64_t *feature_ids;
	const int64_t *true_ids;
	const int64_t *false_ids;
	const int64_t *true_leafs;
	const int64_t *false_leafs;
	const int64_t *tracks_true; /* NULL: none */
	OnnxNumbers splits;
	OnnxNumbers modes;
	OnnxNumbers members;		/* membership_values */
	int64_t		num_leaves;
	const int64_t *leaf_targets;
	OnnxNumbers leaf_weights;
	int64_t		num_roots;
	const int64_t *roots;
	int64_t    *set_first;		/* per node: first member of its set */
	int64_t    *set_size;		/* per node: members (0: not BRANCH_MEMBER) */
} OnnxV5;

/* TreeEnsemble's nodes_modes values */
#define V5_MEMBER	6

/* Our OnnxMode for TreeEnsemble's modes 0 to 5 (the same order) */
static const uint8_t v5_modes[] = {MODE_LEQ, MODE_LT, MODE_GTE, MODE_GT, MODE_EQ, MODE_NEQ};

/* Free what an OnnxV5 owns */
static void
V5Free(OnnxV5 *v)
{
	free(v->splits.values);
	free(v->modes.values);
	free(v->members.values);
	free(v->leaf_weights.values);
	free(v->set_first);
	free(v->set_size);
}

/* Read an int attribute within [lo, hi] */
static bool
AttrIntIn(const Onnx__AttributeProto *a, int64_t lo, int64_t hi, int64_t *out,
		  const char *op, SilvanStatus *status)
{
	if (!AttrType(a, ATTR_INT, op, status))
		return false;
	if (a->i < lo || a->i > hi)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx attribute value",
						  "Attribute \"%s\" of %s is %lld; %lld to %lld are supported.",
						  a->name, op, (long long) a->i, (long long) lo, (long long) hi);
	*out = a->i;
	return true;
}

/* Check that an array attribute's length agrees with the others of its kind */
static bool
V5Count(const Onnx__AttributeProto *a, int64_t n, int64_t *count, const char *kind,
		SilvanStatus *status)
{
	if (*count >= 0 && n != *count)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
						  "Attribute \"%s\" of TreeEnsemble has %lld entries; the other %s attributes have %lld.",
						  a->name, (long long) n, kind, (long long) *count);
	*count = n;
	return true;
}

/* Read one attribute of a TreeEnsemble; counts: 0 nodes_*, 1 leaf_* */
static bool
V5Attribute(const Onnx__AttributeProto *a, OnnxV5 *v, OnnxEnsemble *e, int64_t *counts,
			SilvanStatus *status)
{
	static const char *const node_ints[] = {
		"nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids",
		"nodes_trueleafs", "nodes_falseleafs", "nodes_missing_value_tracks_true"
	};
	const int64_t **node_targets[] = {
		&v->feature_ids, &v->true_ids, &v->false_ids, &v->true_leafs, &v->false_leafs,
		&v->tracks_true
	};
	OnnxNumbers *tensor = StrIs(a->name, "nodes_splits") ? &v->splits :
		StrIs(a->name, "nodes_modes") ? &v->modes :
		StrIs(a->name, "membership_values") ? &v->members :
		StrIs(a->name, "leaf_weights") ? &v->leaf_weights : NULL;
	int64_t		n;
	int64_t		value;

	if (a->name == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx attribute",
						  "An attribute of TreeEnsemble has no name.");
	if (a->ref_attr_name != NULL)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx attribute",
						  "Attribute \"%s\" of TreeEnsemble refers to a function attribute.", a->name);
	for (int i = 0; i < 6; i++)
		if (StrIs(a->name, node_ints[i]))
			return AttrInts(a, node_targets[i], &n, e->op, status) &&
				V5Count(a, n, &counts[0], "nodes_*", status);
	if (tensor != NULL)
	{
		if (!AttrNumbers(a, true, tensor, e->op, status))
			return false;
		if (tensor == &v->members)
			return true;
		return V5Count(a, tensor->count, &counts[tensor == &v->leaf_weights ? 1 : 0],
					   tensor == &v->leaf_weights ? "leaf_*" : "nodes_*", status);
	}
	if (StrIs(a->name, "leaf_targetids"))
		return AttrInts(a, &v->leaf_targets, &n, e->op, status) &&
			V5Count(a, n, &counts[1], "leaf_*", status);
	if (StrIs(a->name, "tree_roots"))
		return AttrInts(a, &v->roots, &v->num_roots, e->op, status);
	if (StrIs(a->name, "nodes_hitrates"))
		return true;			/* statistics only */
	if (StrIs(a->name, "n_targets"))
		return AttrIntIn(a, 1, FOREST_MAX_GROUPS, &e->n_targets, e->op, status);
	if (StrIs(a->name, "post_transform"))
	{
		static const int ours[] = {0, 2, 1, 3, 4};	/* NONE SOFTMAX LOGISTIC ... */

		if (!AttrIntIn(a, 0, 4, &value, e->op, status))
			return false;
		e->post_transform = ours[value];
		return true;
	}
	if (StrIs(a->name, "aggregate_function"))
	{
		static const int ours[] = {1, 0, 2, 3};	/* AVERAGE SUM MIN MAX */

		if (!AttrIntIn(a, 0, 3, &value, e->op, status))
			return false;
		e->aggregate = ours[value];
		return true;
	}
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx attribute",
					  "TreeEnsemble has attribute \"%.64s\", which is not supported.", a->name);
}

/* Read a TreeEnsemble's attributes and check they are present and agree */
static bool
V5Read(const Onnx__NodeProto *node, OnnxV5 *v, OnnxEnsemble *e, SilvanStatus *status)
{
	int64_t		counts[2] = {-1, -1};

	e->op = "TreeEnsemble";
	e->v5 = true;
	e->n_targets = -1;
	e->aggregate = 0;			/* SUM, the default */
	for (size_t i = 0; i < node->n_attribute; i++)
		if (!V5Attribute(node->attribute[i], v, e, counts, status))
			return false;
	v->num_nodes = counts[0] < 0 ? 0 : counts[0];
	v->num_leaves = counts[1] < 0 ? 0 : counts[1];
	if (v->num_nodes == 0 || v->num_leaves == 0 || v->feature_ids == NULL ||
		v->true_ids == NULL || v->false_ids == NULL || v->true_leafs == NULL ||
		v->false_leafs == NULL || v->splits.values == NULL || v->modes.values == NULL ||
		v->leaf_targets == NULL || v->leaf_weights.values == NULL || v->roots == NULL ||
		v->num_roots == 0 || e->n_targets < 0)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx model",
						  "TreeEnsemble lacks one of nodes_featureids, nodes_splits, nodes_modes, nodes_truenodeids, nodes_falsenodeids, nodes_trueleafs, nodes_falseleafs, leaf_targetids, leaf_weights, tree_roots, n_targets, or has no nodes, leaves or trees.");
	if (v->num_nodes > FOREST_MAX_NODES || v->num_leaves > FOREST_MAX_NODES ||
		v->num_roots > FOREST_MAX_TREES)
		return StatusFail(status, SILVAN_ERROR_INVALID, "too many nodes",
						  "TreeEnsemble has %lld nodes, %lld leaves and %lld trees; at most %lld nodes or leaves and %d trees are supported.",
						  (long long) v->num_nodes, (long long) v->num_leaves,
						  (long long) v->num_roots, (long long) FOREST_MAX_NODES, FOREST_MAX_TREES);
	e->model_entries = v->num_nodes + v->num_leaves + v->members.count;
	return true;
}

/* Check modes, children, targets and roots; every id before it indexes */
static bool
V5CheckIds(const OnnxV5 *v, const OnnxEnsemble *e, SilvanStatus *status)
{
	for (int64_t i = 0; i < v->num_nodes; i++)
	{
		double		m = v->modes.values[i];
		int64_t		t_size = v->true_leafs[i] ? v->num_leaves : v->num_nodes;
		int64_t		f_size = v->false_leafs[i] ? v->num_leaves : v->num_nodes;

		if (!(m >= 0 && m <= V5_MEMBER) || m != (double) (int) m)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx node mode",
							  "Entry %lld of attribute \"nodes_modes\" of TreeEnsemble is %g; 0 (BRANCH_LEQ) to 6 (BRANCH_MEMBER) are supported.",
							  (long long) i, m);
		if (v->true_ids[i] < 0 || v->true_ids[i] >= t_size)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"nodes_truenodeids\" is %lld; it is a %s id and the model has %lld.",
							  (long long) i, (long long) v->true_ids[i],
							  v->true_leafs[i] ? "leaf" : "node", (long long) t_size);
		if (v->false_ids[i] < 0 || v->false_ids[i] >= f_size)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"nodes_falsenodeids\" is %lld; it is a %s id and the model has %lld.",
							  (long long) i, (long long) v->false_ids[i],
							  v->false_leafs[i] ? "leaf" : "node", (long long) f_size);
	}
	for (int64_t l = 0; l < v->num_leaves; l++)
		if (v->leaf_targets[l] < 0 || v->leaf_targets[l] >= e->n_targets)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"leaf_targetids\" is %lld; the model has %lld targets (n_targets).",
							  (long long) l, (long long) v->leaf_targets[l], (long long) e->n_targets);
	for (int64_t t = 0; t < v->num_roots; t++)
		if (v->roots[t] < 0 || v->roots[t] >= v->num_nodes)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "Entry %lld of \"tree_roots\" is %lld; the model has %lld nodes.",
							  (long long) t, (long long) v->roots[t], (long long) v->num_nodes);
	return true;
}

/*
 * Split membership_values into the sets of the BRANCH_MEMBER nodes, in
 * node order (as the specification says), each ended by a NaN.
 */
static bool
V5Sets(OnnxV5 *v, SilvanStatus *status)
{
	int64_t		next = 0;

	v->set_first = calloc((size_t) v->num_nodes, sizeof(int64_t));
	v->set_size = calloc((size_t) v->num_nodes, sizeof(int64_t));
	if (v->set_first == NULL || v->set_size == NULL)
		return StatusNoMemory(status, "the membership sets");
	for (int64_t i = 0; i < v->num_nodes; i++)
	{
		if (v->modes.values[i] != V5_MEMBER)
			continue;
		v->set_first[i] = next;
		while (next < v->members.count && !isnan(v->members.values[next]))
			next++;
		if (next >= v->members.count)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
							  "The set of BRANCH_MEMBER node %lld has no terminating NaN in \"membership_values\" (%lld values).",
							  (long long) i, (long long) v->members.count);
		v->set_size[i] = next - v->set_first[i];
		if (v->set_size[i] == 0)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx tree",
							  "The set of BRANCH_MEMBER node %lld in \"membership_values\" is empty.",
							  (long long) i);
		next++;					/* the NaN */
	}
	if (next != v->members.count)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
						  "Attribute \"membership_values\" has %lld values after the sets of the BRANCH_MEMBER nodes.",
						  (long long) (v->members.count - next));
	return true;
}

/*
 * Refuse cycles among the interior nodes reachable from the roots: an
 * iterative depth-first search, grey while on the path.  Nodes reached
 * twice without a cycle are fine: the expansion copies them.
 */
static bool
V5CheckAcyclic(const OnnxV5 *v, SilvanStatus *status)
{
	uint8_t    *color = calloc((size_t) v->num_nodes, 1);	/* 0 new, 1..3 on path, 4 done */
	int64_t    *stack = malloc(sizeof(int64_t) * (size_t) v->num_nodes);
	bool		ok = color != NULL && stack != NULL;

	if (!ok)
		StatusNoMemory(status, "the onnx trees");
	for (int64_t t = 0; ok && t < v->num_roots; t++)
	{
		int64_t		sp = 0;

		if (color[v->roots[t]] != 0)
			continue;
		stack[sp++] = v->roots[t];
		color[v->roots[t]] = 1;
		while (ok && sp > 0)
		{
			int64_t		i = stack[sp - 1];
			int			side = color[i]++;	/* 1: true child next, 2: false, 3: done */
			int64_t		c = side == 1 ? v->true_ids[i] : v->false_ids[i];
			bool		leaf = side == 1 ? v->true_leafs[i] != 0 : v->false_leafs[i] != 0;

			if (side == 3)
			{
				color[i] = 4;
				sp--;
				continue;
			}
			if (leaf || color[c] == 4)
				continue;
			if (color[c] != 0)
				ok = StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx tree",
								"Node %lld of TreeEnsemble is reached again below itself (a cycle through field \"nodes_%snodeids\" of node %lld).",
								(long long) c, side == 1 ? "true" : "false", (long long) i);
			else
			{
				color[c] = 1;
				stack[sp++] = c;
			}
		}
	}
	free(color);
	free(stack);
	return ok;
}

/* A child still to write: model node or leaf, and the id field to patch */
typedef struct V5Pending
{
	int64_t		id;
	bool		leaf;
	int64_t		patch;			/* converted node whose child it is, or -1 */
	bool		patch_true;
} V5Pending;

/* The conversion's progress; its arrays are OnnxEnsemble.owned */
typedef struct V5Out
{
	int64_t		n;				/* nodes written */
	int64_t		w;				/* weights written */
	int64_t		cap;			/* room in the arrays */
	int64_t		budget;			/* most nodes the expansion may write */
	int64_t		tree_start;		/* first node of the tree being written */
	V5Pending  *pending;			/* children still to write, a stack */
	int64_t		sp;
	int64_t		pending_cap;
} V5Out;

/* Indices into OnnxEnsemble.owned */
enum
{
	OWN_TREE, OWN_NODE, OWN_FEATURE, OWN_TRUE, OWN_FALSE, OWN_TRACKS,
	OWN_W_TREE, OWN_W_NODE, OWN_W_CLASS, OWN_COUNT
};

/* Refuse a model whose expansion would pass the budget */
static bool
V5TooLarge(const OnnxEnsemble *e, const V5Out *o, SilvanStatus *status)
{
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "onnx model too large",
					  "TreeEnsemble's shared nodes and membership sets would expand its %lld entries to more than %lld tree nodes; at most %d times the model's entries are supported.",
					  (long long) e->model_entries, (long long) o->budget, ONNX_MAX_COPY_FACTOR);
}

/* Make room for one more node (and its weight); refuse beyond the budget */
static bool
V5Grow(OnnxEnsemble *e, V5Out *o, SilvanStatus *status)
{
	int64_t		cap;
	uint8_t    *m;
	double	   *x;
	double	   *w;

	if (o->n >= o->budget)
		return V5TooLarge(e, o, status);
	if (o->n < o->cap)
		return true;
	cap = o->cap < 64 ? 64 : o->cap * 2;
	if (cap > o->budget)
		cap = o->budget;
	for (int k = 0; k < OWN_COUNT; k++)
	{
		int64_t    *p = realloc(e->owned[k], sizeof(int64_t) * (size_t) cap);

		if (p == NULL)
			return StatusNoMemory(status, "the onnx trees");
		e->owned[k] = p;
	}
	m = realloc(e->modes, (size_t) cap);
	if (m != NULL)
		e->modes = m;
	x = realloc(e->values.values, sizeof(double) * (size_t) cap);
	if (x != NULL)
		e->values.values = x;
	w = realloc(e->weights.values, sizeof(double) * (size_t) cap);
	if (w != NULL)
		e->weights.values = w;
	if (m == NULL || x == NULL || w == NULL)
		return StatusNoMemory(status, "the onnx trees");
	o->cap = cap;
	return true;
}

/* Push a child to write; each will write a node, so the budget bounds them */
static bool
V5Push(const OnnxEnsemble *e, V5Out *o, V5Pending next, SilvanStatus *status)
{
	if (o->n + o->sp >= o->budget)
		return V5TooLarge(e, o, status);
	if (o->sp >= o->pending_cap)
	{
		int64_t		cap = o->pending_cap < 64 ? 64 : o->pending_cap * 2;
		V5Pending  *p = realloc(o->pending, sizeof(V5Pending) * (size_t) cap);

		if (p == NULL)
			return StatusNoMemory(status, "the onnx trees");
		o->pending = p;
		o->pending_cap = cap;
	}
	o->pending[o->sp++] = next;
	return true;
}

/* Append a node of the tree being written; its tree-local id goes to *local */
static bool
V5Node(OnnxEnsemble *e, V5Out *o, int64_t t, int mode, int64_t feature, double value,
	   bool tracks, int64_t *local, SilvanStatus *status)
{
	int64_t		n;

	if (!V5Grow(e, o, status))
		return false;
	n = o->n++;
	*local = n - o->tree_start;
	e->owned[OWN_TREE][n] = t;
	e->owned[OWN_NODE][n] = *local;
	e->owned[OWN_FEATURE][n] = feature;
	e->owned[OWN_TRUE][n] = 0;
	e->owned[OWN_FALSE][n] = 0;
	e->owned[OWN_TRACKS][n] = tracks;
	e->modes[n] = (uint8_t) mode;
	e->values.values[n] = value;
	return true;
}

/* Append leaf l of the model, with its weight, to tree t */
static bool
V5Leaf(const OnnxV5 *v, OnnxEnsemble *e, V5Out *o, int64_t t, int64_t l, int64_t *local,
	   SilvanStatus *status)
{
	if (!V5Node(e, o, t, MODE_LEAF, 0, 0.0, false, local, status))
		return false;
	e->owned[OWN_W_TREE][o->w] = t;
	e->owned[OWN_W_NODE][o->w] = *local;
	e->owned[OWN_W_CLASS][o->w] = v->leaf_targets[l];
	e->weights.values[o->w] = v->leaf_weights.values[l];
	o->w++;
	return true;
}

/*
 * Write interior node i: its split or, for BRANCH_MEMBER, a chain of ==
 * splits, one per member, each true branch to its own copy of the true
 * subtree and each false branch to the next test, the last one's to the
 * false subtree.  NaN takes the true branch at every test when the node's
 * missing value tracks true, so the chain does too; else it falls through
 * to the false subtree, as x in {...} is false for NaN.  The children are
 * pushed to be written.
 */
static bool
V5Interior(const OnnxV5 *v, OnnxEnsemble *e, V5Out *o, int64_t t, int64_t i,
		   int64_t *local, SilvanStatus *status)
{
	int			m = (int) v->modes.values[i];
	int64_t		k = m == V5_MEMBER ? v->set_size[i] : 1;
	bool		tracks = v->tracks_true != NULL && v->tracks_true[i] != 0;

	for (int64_t j = 0; j < k; j++)
	{
		double		value = m == V5_MEMBER ? v->members.values[v->set_first[i] + j] :
			v->splits.values[i];
		int64_t		here;

		if (!V5Node(e, o, t, m == V5_MEMBER ? MODE_EQ : v5_modes[m], v->feature_ids[i],
					value, tracks, &here, status))
			return false;
		if (j == 0)
			*local = here;
		else
			e->owned[OWN_FALSE][o->n - 2] = here;
		if (!V5Push(e, o, (V5Pending) {v->true_ids[i], v->true_leafs[i] != 0, o->n - 1, true},
					status))
			return false;
	}
	return V5Push(e, o, (V5Pending) {v->false_ids[i], v->false_leafs[i] != 0, o->n - 1, false},
				  status);
}

/*
 * Write tree t (root node r) in the old layout, nodes numbered from 0 in
 * the order written.  A root whose two branches name the same leaf is a
 * one-leaf tree; ONNX Runtime and onnx's reference then read leaf number r
 * (the root's own index), the specification the leaf it names: refused
 * where the two differ.
 */
static bool
V5Tree(const OnnxV5 *v, OnnxEnsemble *e, V5Out *o, int64_t t, SilvanStatus *status)
{
	int64_t		r = v->roots[t];
	int64_t		local;

	o->tree_start = o->n;
	if (v->true_leafs[r] && v->false_leafs[r] && v->true_ids[r] == v->false_ids[r])
	{
		if (v->true_ids[r] != r)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx tree",
							  "Tree %lld of TreeEnsemble is one leaf, %lld, named by root node %lld; ONNX Runtime reads leaf %lld there instead, so silvan refuses it.",
							  (long long) t, (long long) v->true_ids[r], (long long) r, (long long) r);
		return V5Leaf(v, e, o, t, r, &local, status);
	}
	o->sp = 0;
	if (!V5Push(e, o, (V5Pending) {r, false, -1, false}, status))
		return false;
	while (o->sp > 0)
	{
		V5Pending	d = o->pending[--o->sp];
		bool		ok;

		ok = d.leaf ? V5Leaf(v, e, o, t, d.id, &local, status) :
			V5Interior(v, e, o, t, d.id, &local, status);
		if (!ok)
			return false;
		if (d.patch >= 0)
			e->owned[d.patch_true ? OWN_TRUE : OWN_FALSE][d.patch] = local;
	}
	return true;
}

/*
 * Convert the TreeEnsemble into the TreeEnsembleRegressor layout that
 * BuildForest reads, as ONNX Runtime does (tree_ensemble_attribute.h):
 * tree ids are positions in tree_roots, leaves become LEAF nodes with one
 * weight, BRANCH_MEMBER becomes == splits.  Nodes and leaves reached
 * twice are copied; all copies are bounded like BuildForest's.
 */
static bool
V5Convert(const OnnxV5 *v, OnnxEnsemble *e, SilvanStatus *status)
{
	V5Out		o = {0};
	bool		ok = true;

	o.budget = e->model_entries * ONNX_MAX_COPY_FACTOR + ONNX_MIN_COPY_ALLOWANCE;
	if (o.budget > FOREST_MAX_NODES)
		o.budget = FOREST_MAX_NODES;
	for (int64_t t = 0; ok && t < v->num_roots; t++)
		ok = V5Tree(v, e, &o, t, status);
	free(o.pending);
	if (!ok)
		return false;
	e->num_nodes = e->values.count = o.n;
	e->num_weights = e->weights.count = o.w;
	e->tree_ids = e->owned[OWN_TREE];
	e->node_ids = e->owned[OWN_NODE];
	e->feature_ids = e->owned[OWN_FEATURE];
	e->true_ids = e->owned[OWN_TRUE];
	e->false_ids = e->owned[OWN_FALSE];
	e->tracks_true = e->owned[OWN_TRACKS];
	e->w_tree = e->owned[OWN_W_TREE];
	e->w_node = e->owned[OWN_W_NODE];
	e->w_class = e->owned[OWN_W_CLASS];
	e->values.doubles = v->splits.doubles || v->members.doubles;
	e->weights.doubles = v->leaf_weights.doubles;
	return true;
}

/* Read a TreeEnsemble node into e, in the old operators' layout */
static bool
ReadTreeEnsemble(const Onnx__NodeProto *node, OnnxEnsemble *e, SilvanStatus *status)
{
	OnnxV5		v = {0};
	bool		ok;

	ok = V5Read(node, &v, e, status) && V5CheckIds(&v, e, status) &&
		V5Sets(&v, status) && V5CheckAcyclic(&v, status) && V5Convert(&v, e, status);
	V5Free(&v);
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
CastTarget(const Onnx__NodeProto *node)
{
	for (size_t i = 0; i < node->n_attribute; i++)
		if (StrIs(node->attribute[i]->name, "to"))
			return node->attribute[i]->i;
	return 0;
}

/*
 * Follow the ensemble's input back through Cast/Identity/Reshape/Flatten to
 * a graph input; report its element type (after the last Cast) and its
 * column count (-1 when unknown or reshaped).
 */
static bool
TraceInput(const Onnx__GraphProto *g, const Onnx__NodeProto *ensemble,
		   int64_t *elem_type, int64_t *columns, SilvanStatus *status)
{
	const char *name = ensemble->n_input > 0 ? ensemble->input[0] : NULL;
	bool		reshaped = false;

	*elem_type = 0;
	*columns = -1;
	for (size_t hops = 0; name != NULL && hops <= g->n_node; hops++)
	{
		const Onnx__NodeProto *p = Producer(g, name);

		if (p == NULL)
			break;
		if (!(StrIs(p->op_type, "Cast") || StrIs(p->op_type, "Identity") ||
			  StrIs(p->op_type, "Reshape") || StrIs(p->op_type, "Flatten")) || p->n_input < 1)
			return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx graph",
							  "The tree ensemble's input comes from a \"%.64s\" operator; only Cast, Identity, Reshape and Flatten may stand between it and the graph input.",
							  p->op_type ? p->op_type : "");
		if (StrIs(p->op_type, "Cast") && *elem_type == 0)
			*elem_type = CastTarget(p);
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

/* Read the graph's ensemble into forest */
static bool
ReadModel(const Onnx__ModelProto *model, Forest *forest, SilvanStatus *status)
{
	const Onnx__GraphProto *g = model->graph;
	const Onnx__NodeProto *node;
	OnnxEnsemble e = {0};
	int64_t		elem_type;
	int64_t		columns;
	int64_t		opset = MlOpset(model);
	bool		ok;

	if (g == NULL)
		return OnnxSyntax(status, "The model has no graph.");
	if (opset > 5)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported onnx opset",
						  "The model imports ai.onnx.ml opset %lld; opsets 1 to 5 are supported.",
						  (long long) opset);
	if (!FindEnsemble(g, &node, status) ||
		!TraceInput(g, node, &elem_type, &columns, status))
		return false;
	e.classifier = StrIs(node->op_type, "TreeEnsembleClassifier");
	if (StrIs(node->op_type, "TreeEnsemble") && opset != 5)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid onnx model",
						  "Operator TreeEnsemble is in ai.onnx.ml opset 5; the model imports opset %lld.",
						  (long long) opset);
	ok = StrIs(node->op_type, "TreeEnsemble") ? ReadTreeEnsemble(node, &e, status) :
		ReadEnsemble(node, &e, status);
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
		ok = ForestSetClassLabels(forest, (const char *const *) e.labels, e.label_lengths,
								  e.num_labels, status);
	EnsembleFree(&e);
	return ok;
}

/* Parse an ONNX ModelProto holding a tree ensemble */
Forest *
ParseOnnx(const char *data, size_t len, SilvanStatus *status)
{
	Onnx__ModelProto *model;
	Forest	   *forest;

	model = onnx__model_proto__unpack(NULL, len, (const uint8_t *) data);
	if (model == NULL)
	{
		OnnxSyntax(status, "The bytes are not an ONNX ModelProto (protobuf decoding failed: truncated, or a length or tag is wrong).");
		return NULL;
	}
	forest = ForestCreate(status);
	if (forest != NULL && !ReadModel(model, forest, status))
	{
		ForestFree(forest);
		forest = NULL;
	}
	onnx__model_proto__free_unpacked(model, NULL);
	return forest;
}

/* Decode a serialized TensorProto (an ONNX test's input_0.pb) into doubles */
bool
OnnxTensorRead(const char *data, size_t len, OnnxTensor *tensor, SilvanStatus *status)
{
	Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, (const uint8_t *) data);
	OnnxNumbers numbers;
	bool		ok;

	memset(tensor, 0, sizeof(*tensor));
	if (t == NULL)
		return OnnxSyntax(status, "The bytes are not an ONNX TensorProto.");
	ok = TensorNumbers(t, "\"tensor\"", &numbers, status);
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
	onnx__tensor_proto__free_unpacked(t, NULL);
	return ok;
}
