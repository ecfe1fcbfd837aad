/*
 * onnx_v5.c
 *		Convert a TreeEnsemble (ai.onnx.ml opset 5) into the layout of the
 *		old operators (TreeEnsembleRegressor and TreeEnsembleClassifier),
 *		which onnx_model.c builds the forest from.
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
 * Memory: the model's arrays are read into held arrays (onnx_model.h),
 * eight bytes a number; the conversion's arrays grow as nodes are
 * written, each growth charged to the budget, and the model's arrays are
 * given back once the conversion is done.  The loops poll for
 * cancellation every CANCEL_POLL_INTERVAL nodes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnx_model.h"

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
V5Free(OnnxEnsemble *e, OnnxV5 *v)
{
	const void *arrays[] = {v->splits.values, v->modes.values, v->members.values,
		v->leaf_weights.values, v->set_first, v->set_size, v->feature_ids, v->true_ids,
	v->false_ids, v->true_leafs, v->false_leafs, v->tracks_true, v->leaf_targets, v->roots};

	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
		OnnxUnhold(e, arrays[i]);
}

/* Read an int attribute within [lo, hi] */
static bool
AttrIntIn(const Onnx__AttributeProto *a, int64_t lo, int64_t hi, int64_t *out,
		  const char *op, SilvanStatus *status)
{
	if (!OnnxAttrType(a, ATTR_INT, op, status))
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
V5Attribute(const OnnxAttr *at, OnnxV5 *v, OnnxEnsemble *e, int64_t *counts,
			SilvanStatus *status)
{
	const Onnx__AttributeProto *a = at->pb;
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
			return OnnxAttrInts(at, e, node_targets[i], &n, status) &&
				V5Count(a, n, &counts[0], "nodes_*", status);
	if (tensor != NULL)
	{
		if (!OnnxAttrNumbers(at, true, tensor, e, status))
			return false;
		if (tensor == &v->members)
			return true;
		return V5Count(a, tensor->count, &counts[tensor == &v->leaf_weights ? 1 : 0],
					   tensor == &v->leaf_weights ? "leaf_*" : "nodes_*", status);
	}
	if (StrIs(a->name, "leaf_targetids"))
		return OnnxAttrInts(at, e, &v->leaf_targets, &n, status) &&
			V5Count(a, n, &counts[1], "leaf_*", status);
	if (StrIs(a->name, "tree_roots"))
		return OnnxAttrInts(at, e, &v->roots, &v->num_roots, status);
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
V5Read(const OnnxAttr *attrs, size_t num_attrs, OnnxV5 *v, OnnxEnsemble *e,
	   SilvanStatus *status)
{
	int64_t		counts[2] = {-1, -1};

	e->op = "TreeEnsemble";
	e->v5 = true;
	e->n_targets = -1;
	e->aggregate = 0;			/* SUM, the default */
	for (size_t i = 0; i < num_attrs; i++)
		if (!V5Attribute(&attrs[i], v, e, counts, status))
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
V5CheckIds(const OnnxV5 *v, OnnxEnsemble *e, SilvanStatus *status)
{
	for (int64_t i = 0; i < v->num_nodes; i++)
	{
		double		m = v->modes.values[i];
		int64_t		t_size = v->true_leafs[i] ? v->num_leaves : v->num_nodes;
		int64_t		f_size = v->false_leafs[i] ? v->num_leaves : v->num_nodes;

		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
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
V5Sets(OnnxV5 *v, OnnxEnsemble *e, SilvanStatus *status)
{
	int64_t		next = 0;

	if ((v->set_first = OnnxHold(e, v->num_nodes, sizeof(int64_t), "the membership sets",
								 status)) == NULL ||
		(v->set_size = OnnxHold(e, v->num_nodes, sizeof(int64_t), "the membership sets",
								status)) == NULL)
		return false;
	memset(v->set_first, 0, sizeof(int64_t) * (size_t) v->num_nodes);
	memset(v->set_size, 0, sizeof(int64_t) * (size_t) v->num_nodes);
	for (int64_t i = 0; i < v->num_nodes; i++)
	{
		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
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
V5CheckAcyclic(const OnnxV5 *v, OnnxEnsemble *e, SilvanStatus *status)
{
	/* color: 0 new, 1..3 on the path, 4 done */
	uint8_t    *color = OnnxHold(e, v->num_nodes, 1, "the walk of the trees", status);
	int64_t    *stack = color == NULL ? NULL :
		OnnxHold(e, v->num_nodes, sizeof(int64_t), "the walk of the trees", status);
	bool		ok = color != NULL && stack != NULL;

	if (ok)
		memset(color, 0, (size_t) v->num_nodes);
	for (int64_t t = 0; ok && t < v->num_roots; t++)
	{
		int64_t		sp = 0;

		if (CancelTick(&e->ticks))
		{
			ok = StatusCanceled(status, "parsing the model");
			break;
		}
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

			if (CancelTick(&e->ticks))
			{
				ok = StatusCanceled(status, "parsing the model");
				break;
			}
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
	OnnxUnhold(e, color);
	OnnxUnhold(e, stack);
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

	if (o->n >= o->budget)
		return V5TooLarge(e, o, status);
	if (o->n < o->cap)
		return true;
	cap = o->cap < 64 ? 64 : o->cap * 2;
	if (cap > o->budget)
		cap = o->budget;
	for (int k = 0; k < OWN_COUNT; k++)
		if (!OnnxRegrow(e, (void **) &e->owned[k], cap, sizeof(int64_t), "the converted trees",
						status))
			return false;
	if (!OnnxRegrow(e, (void **) &e->modes, cap, 1, "the converted trees", status) ||
		!OnnxRegrow(e, (void **) &e->values.values, cap, sizeof(double), "the converted trees",
					status) ||
		!OnnxRegrow(e, (void **) &e->weights.values, cap, sizeof(double), "the converted trees",
					status))
		return false;
	o->cap = cap;
	return true;
}

/* Push a child to write; each will write a node, so the budget bounds them */
static bool
V5Push(OnnxEnsemble *e, V5Out *o, V5Pending next, SilvanStatus *status)
{
	if (o->n + o->sp >= o->budget)
		return V5TooLarge(e, o, status);
	if (o->sp >= o->pending_cap)
	{
		int64_t		cap = o->pending_cap < 64 ? 64 : o->pending_cap * 2;

		if (!OnnxRegrow(e, (void **) &o->pending, cap, sizeof(V5Pending), "the trees' walk",
						status))
			return false;
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

		if (CancelTick(&e->ticks))
			return StatusCanceled(status, "parsing the model");
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
	OnnxUnhold(e, o.pending);
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

/*
 * Read a TreeEnsemble's attributes into e, in the old operators' layout;
 * the model's own arrays are given back once converted
 */
bool
OnnxReadTreeEnsemble(const OnnxAttr *attrs, size_t num_attrs, OnnxEnsemble *e,
					 SilvanStatus *status)
{
	OnnxV5		v = {0};
	bool		ok;

	ok = V5Read(attrs, num_attrs, &v, e, status) && V5CheckIds(&v, e, status) &&
		V5Sets(&v, e, status) && V5CheckAcyclic(&v, e, status) && V5Convert(&v, e, status);
	V5Free(e, &v);
	return ok;
}

