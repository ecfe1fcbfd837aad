/*
 * repr_array.c
 *		The array representation: one record per HIR node, in HIR order.
 *
 * A record holds the split's threshold in the forest's precision, the
 * global index of its left child (the right one is left + 1) and the split
 * feature.  Leaves hold their value in the threshold slot and point to
 * themselves, which is also the leaf test.  Each forest gets the smallest
 * of three layouts that can express its splits:
 *
 *   PLAIN {T threshold, int32 left, uint32 feature}: numeric splits that
 *     all send NaN the same way, or all read NaN as 0 (LightGBM's NONE).
 *     One compare per hop.
 *   SIGN {T threshold, int32 left, uint32 feature, T sign}: the same with
 *     NaN going both ways (XGBoost models trained with missing values).  A
 *     split that sends NaN left is stored mirrored: its children swapped,
 *     its feature read negated (x ^ sign) against nextafter(-b, +inf), so
 *     that every split is "go right iff y >= b or y is NaN".  This saves the
 *     flag tests of the FLAGS layout, about 40% of the kernel.
 *   FLAGS {T threshold, int32 left, uint32 feature_flags}: anything else.
 *     The feature sits in the low 24 bits and the rule flags above, and the
 *     code tests only the rules the forest uses.
 *
 * Every numeric split becomes a strict compare x < b first:
 *
 *   - LT against a double threshold t in a float forest: b is the smallest
 *     float >= t (for float x, x < t iff x < b);
 *   - LE: the smallest value of the precision above t (nextafter), except
 *     for t = +inf, where no bound exists: such splits get LE_INF and the
 *     code compares with <= for them;
 *   - NaN rule: go_left = default_left ? (x < b or unordered) : (x < b);
 *   - ZERO / NONE rules read NaN as 0 first; ZERO then sends |x| <= 1e-35
 *     to the default child.  Categorical splits test the row's category in
 *     the set's bitset after range checks, on a branch of their own.
 *
 * Whatever the model says, every load stays in bounds: features and
 * children were validated, set numbers are masked to 0 on other nodes, and
 * a category is range-checked before its word is loaded.
 */
#include <math.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"

/* The node records, as C sees them */
typedef struct ArrayNode32
{
	float		threshold;
	int32_t		left;
	uint32_t	feature_flags;
} ArrayNode32;

typedef struct ArrayNode64
{
	double		threshold;
	int32_t		left;
	uint32_t	feature_flags;
} ArrayNode64;

typedef struct ArraySignNode32
{
	float		threshold;
	int32_t		left;
	uint32_t	feature;
	float		sign;			/* -0.0f: read the feature negated */
} ArraySignNode32;

typedef struct ArraySignNode64
{
	double		threshold;
	int32_t		left;
	uint32_t	feature;
	double		sign;
} ArraySignNode64;

/* feature_flags bits */
#define ARRAY_FEATURE_MASK		0x00FFFFFFu
#define ARRAY_DEFAULT_LEFT		(1u << 24)
#define ARRAY_NAN_TO_ZERO		(1u << 26)
#define ARRAY_ZERO				(1u << 27)
#define ARRAY_LE_INF			(1u << 28)
#define ARRAY_CATEGORICAL		(1u << 29)
#define ARRAY_IN_LEFT			(1u << 30)

/* ReprBuffers.layout */
typedef enum ArrayLayout
{
	ARRAY_LAYOUT_PLAIN = 0,
	ARRAY_LAYOUT_SIGN = 1,
	ARRAY_LAYOUT_FLAGS = 2
} ArrayLayout;

/* One node's contents before they are stored in the precision's record */
typedef struct ArrayRecord
{
	double		threshold;		/* or leaf value */
	int32_t		set;			/* categorical: set number */
	int32_t		left;			/* leaves: set when stored */
	uint32_t	feature_flags;
	bool		leaf;
	bool		numeric;		/* numeric split with the NaN rule */
	bool		mirrored;		/* SIGN layout: children swapped, x negated */
} ArrayRecord;

/* Smallest float not below t */
static float
FloatAtOrAbove(double t)
{
	float		f;

	if (t > FLT_MAX)
		return INFINITY;
	if (t < -FLT_MAX)
		return t == -INFINITY ? -INFINITY : -FLT_MAX;
	f = (float) t;
	if ((double) f < t)
		f = nextafterf(f, INFINITY);
	return f;
}

/*
 * The strict bound b of a numeric split: for every non-NaN x of the
 * precision, x OP threshold iff x < b.  False for x <= +inf.
 */
static bool
ArrayStrictBound(const ForestNode *node, ForestPrecision precision, double *bound)
{
	double		t = node->threshold;

	if (node->compare == FOREST_CMP_LE && t == INFINITY)
	{
		*bound = INFINITY;
		return false;
	}
	if (precision == FOREST_FLOAT64)
		*bound = node->compare == FOREST_CMP_LT ? t : nextafter(t, INFINITY);
	else
	{
		float		f = FloatAtOrAbove(t);

		if (node->compare == FOREST_CMP_LE && (double) f == t)
			f = nextafterf(f, INFINITY);
		*bound = f;
	}
	return true;
}

/* Record of a numeric split; note the kinds of rule it needs */
static void
ArrayNumeric(const ForestNode *node, ForestPrecision precision, ArrayRecord *rec,
			 uint32_t *has)
{
	rec->feature_flags = (uint32_t) node->feature;
	if (!ArrayStrictBound(node, precision, &rec->threshold))
	{
		rec->feature_flags |= ARRAY_LE_INF;
		*has |= REPR_HAS_LE_INF;
	}
	if (node->default_left)
		rec->feature_flags |= ARRAY_DEFAULT_LEFT;
	if (node->missing == FOREST_MISSING_NAN)
	{
		rec->numeric = true;
		*has |= node->default_left ? REPR_HAS_DEFAULT_LEFT : REPR_HAS_DEFAULT_RIGHT;
	}
	else
	{
		rec->feature_flags |= ARRAY_NAN_TO_ZERO;
		*has |= REPR_HAS_NAN_TO_ZERO;
	}
	if (node->missing == FOREST_MISSING_ZERO)
	{
		rec->feature_flags |= ARRAY_ZERO;
		*has |= REPR_HAS_ZERO;
	}
	if (node->missing == FOREST_MISSING_NONE)
		*has |= REPR_HAS_NONE;
}

/* Record of a categorical split; its set joins the set table */
static void
ArrayCategorical(const ForestNode *node, ReprBuffers *buffers, ArrayRecord *rec)
{
	int32_t		set = buffers->num_category_sets++;
	int32_t		words = node->category_words;

	/* categories are below FOREST_MAX_CATEGORY; later words are unreachable */
	if (words > FOREST_MAX_CATEGORY / 32)
		words = FOREST_MAX_CATEGORY / 32;
	buffers->category_sets[set] = (ReprCategorySet) {
		.offset = (int32_t) node->category_offset,
		.num_words = words
	};
	rec->set = set;
	rec->feature_flags = (uint32_t) node->feature | ARRAY_CATEGORICAL;
	if (node->default_left)
		rec->feature_flags |= ARRAY_DEFAULT_LEFT;
	if (node->category_in_left)
		rec->feature_flags |= ARRAY_IN_LEFT;
	buffers->has |= REPR_HAS_CATEGORICAL;
}

/* Describe HIR node i (global) as a record */
static void
ArrayDescribe(const Hir *hir, int64_t base, int64_t i, ReprBuffers *buffers,
			  ArrayRecord *rec)
{
	const HirNode *hnode = &hir->nodes[i];
	const ForestNode *fnode = &hir->forest->nodes[hnode->source];

	memset(rec, 0, sizeof(ArrayRecord));
	rec->left = (int32_t) (base + hnode->left);
	if (hnode->padding)
		return;					/* both children are the same: any split */
	if (fnode->kind == FOREST_NODE_LEAF)
	{
		rec->threshold = fnode->leaf_value;
		rec->leaf = true;
	}
	else if (fnode->kind == FOREST_NODE_NUMERIC)
		ArrayNumeric(fnode, hir->forest->precision, rec, &buffers->has);
	else
		ArrayCategorical(fnode, buffers, rec);
}

/* Store a record at i in the FLAGS or PLAIN layout */
static void
ArrayStore(const ArrayRecord *rec, ForestPrecision precision, void *nodes, int64_t i)
{
	if (precision == FOREST_FLOAT32)
	{
		ArrayNode32 *node = &((ArrayNode32 *) nodes)[i];

		node->threshold = (float) rec->threshold;
		if (rec->feature_flags & ARRAY_CATEGORICAL)
			memcpy(&node->threshold, &rec->set, sizeof(int32_t));
		node->left = rec->leaf ? (int32_t) i : rec->left;
		node->feature_flags = rec->feature_flags;
	}
	else
	{
		ArrayNode64 *node = &((ArrayNode64 *) nodes)[i];
		int64_t		set = rec->set;

		node->threshold = rec->threshold;
		if (rec->feature_flags & ARRAY_CATEGORICAL)
			memcpy(&node->threshold, &set, sizeof(int64_t));
		node->left = rec->leaf ? (int32_t) i : rec->left;
		node->feature_flags = rec->feature_flags;
	}
}

/* Store a record at i in the SIGN layout */
static void
ArrayStoreSign(const ArrayRecord *rec, ForestPrecision precision, void *nodes, int64_t i)
{
	uint32_t	feature = rec->feature_flags & ARRAY_FEATURE_MASK;
	int32_t		left = rec->leaf ? (int32_t) i : rec->left;

	if (precision == FOREST_FLOAT32)
		((ArraySignNode32 *) nodes)[i] = (ArraySignNode32) {
			(float) rec->threshold, left, feature, rec->mirrored ? -0.0f : 0.0f
		};
	else
		((ArraySignNode64 *) nodes)[i] = (ArraySignNode64) {
			rec->threshold, left, feature, rec->mirrored ? -0.0 : 0.0
		};
}

/*
 * The bound of a NaN-left split read negated: -x >= b' iff x < b, so b'
 * is the next value of the precision above -b.  False when there is none
 * (b = -inf).  For x <= +inf (LE_INF), every number goes left: b' = -inf.
 */
static bool
ArrayMirrorBound(const ArrayRecord *rec, ForestPrecision precision, double *bound)
{
	if (rec->feature_flags & ARRAY_LE_INF)
		*bound = -INFINITY;
	else if (rec->threshold == -INFINITY)
		return false;
	else if (precision == FOREST_FLOAT32)
		*bound = nextafterf((float) -rec->threshold, INFINITY);
	else
		*bound = nextafter(-rec->threshold, INFINITY);
	return true;
}

/*
 * Pick the layout.  PLAIN needs no per-split rule: either every numeric
 * split reads NaN as 0 (NONE) or every one sends NaN the same way.  SIGN
 * needs every split numeric with the NaN rule and expressible as "go right
 * iff y >= b or NaN": a NaN-right split needs a bound (not LE_INF), a
 * NaN-left one a mirrored bound.
 */
static ArrayLayout
ArrayChooseLayout(const ArrayRecord *recs, int64_t num_nodes, uint32_t has,
				  ForestPrecision precision)
{
	uint32_t	both = REPR_HAS_DEFAULT_LEFT | REPR_HAS_DEFAULT_RIGHT;
	uint32_t	nan_rule = has & both;
	double		bound;

	if ((has & (REPR_HAS_ZERO | REPR_HAS_CATEGORICAL)) ||
		((has & REPR_HAS_NONE) && nan_rule))
		return ARRAY_LAYOUT_FLAGS;
	if (!(has & REPR_HAS_LE_INF) && nan_rule != both)
		return ARRAY_LAYOUT_PLAIN;
	if (has & REPR_HAS_NONE)
		return ARRAY_LAYOUT_FLAGS;
	for (int64_t i = 0; i < num_nodes; i++)
	{
		const ArrayRecord *rec = &recs[i];

		if (!rec->numeric)
			continue;
		if (rec->feature_flags & ARRAY_DEFAULT_LEFT ?
			!ArrayMirrorBound(rec, precision, &bound) :
			(rec->feature_flags & ARRAY_LE_INF) != 0)
			return ARRAY_LAYOUT_FLAGS;
	}
	return ARRAY_LAYOUT_SIGN;
}

/* Mirror every NaN-left split: negated bound, children swapped */
static void
ArrayMirror(ArrayRecord *recs, int64_t num_nodes, ForestPrecision precision)
{
	for (int64_t i = 0; i < num_nodes; i++)
	{
		ArrayRecord *rec = &recs[i];
		ArrayRecord swap;

		if (!rec->numeric || !(rec->feature_flags & ARRAY_DEFAULT_LEFT))
			continue;
		ArrayMirrorBound(rec, precision, &rec->threshold);
		rec->mirrored = true;
		swap = recs[rec->left];
		recs[rec->left] = recs[rec->left + 1];
		recs[rec->left + 1] = swap;
	}
}

/* Describe every HIR node as a record, noting which rules occur */
static ArrayRecord *
ArrayDescribeAll(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	ArrayRecord *recs = malloc(sizeof(ArrayRecord) * (size_t) (hir->num_nodes + 1));

	if (recs == NULL)
	{
		StatusNoMemory(status, "the compiled model's node records");
		return NULL;
	}
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		const HirTree *tree = &hir->trees[t];

		for (int64_t i = tree->first_node; i < tree->first_node + tree->num_nodes; i++)
			ArrayDescribe(hir, tree->first_node, i, buffers, &recs[i]);
	}
	return recs;
}

/* Lay out the HIR's nodes as records, in HIR order */
static bool
ArrayBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	ForestPrecision precision = hir->forest->precision;
	ArrayRecord *recs;
	ArrayLayout layout;

	if (!ReprBuildTables(hir, buffers, status))
		return false;
	recs = ArrayDescribeAll(hir, buffers, status);
	if (recs == NULL)
		return false;
	layout = ArrayChooseLayout(recs, hir->num_nodes, buffers->has, precision);
	if (layout == ARRAY_LAYOUT_SIGN)
		buffers->node_size = precision == FOREST_FLOAT32 ?
			sizeof(ArraySignNode32) : sizeof(ArraySignNode64);
	else
		buffers->node_size = precision == FOREST_FLOAT32 ?
			sizeof(ArrayNode32) : sizeof(ArrayNode64);
	buffers->layout = layout;
	buffers->num_nodes = hir->num_nodes;
	buffers->nodes = calloc((size_t) hir->num_nodes + 1, buffers->node_size);
	if (buffers->nodes == NULL)
	{
		free(recs);
		return StatusNoMemory(status, "the compiled model's nodes");
	}
	if (layout == ARRAY_LAYOUT_SIGN)
		ArrayMirror(recs, hir->num_nodes, precision);
	for (int64_t i = 0; i < hir->num_nodes; i++)
	{
		if (layout == ARRAY_LAYOUT_PLAIN)
			recs[i].feature_flags &= ARRAY_FEATURE_MASK;
		if (layout == ARRAY_LAYOUT_SIGN)
			ArrayStoreSign(&recs[i], precision, buffers->nodes, i);
		else
			ArrayStore(&recs[i], precision, buffers->nodes, i);
	}
	free(recs);
	return true;
}

/* Name of the layout build chose */
static const char *
ArrayVariant(const ReprBuffers *buffers)
{
	static const char *const names[] = {"plain", "sign", "flags"};

	return names[buffers->layout];
}

/* {threshold, left, feature or feature_flags[, sign]} */
static LLVMTypeRef
ArrayNodeType(CodegenContext *cg)
{
	LLVMTypeRef fields[4] = {cg->t_value, cg->t_i32, cg->t_i32, cg->t_value};

	return LLVMStructTypeInContext(cg->context, fields,
								   cg->buffers->layout == ARRAY_LAYOUT_SIGN ? 4 : 3, false);
}

/* Address of field f of node v_index */
static LLVMValueRef
ArrayFieldPtr(CodegenContext *cg, LLVMValueRef v_index, unsigned f)
{
	LLVMValueRef v_node = LLVMBuildGEP2(cg->builder, cg->t_node, cg->v_nodes,
										&v_index, 1, "v_node");

	return LLVMBuildStructGEP2(cg->builder, cg->t_node, v_node, f, "");
}

/* Load the node at v_index: threshold, left, feature_flags[, sign] */
static void
ArrayLoadNode(CodegenContext *cg, LLVMValueRef v_index, ReprNode *node)
{
	LLVMValueRef v_thr_ptr = ArrayFieldPtr(cg, v_index, 0);

	node->v_index = v_index;
	node->v_fields[0] = LLVMBuildLoad2(cg->builder, cg->t_value, v_thr_ptr, "v_threshold");
	node->v_fields[1] = LLVMBuildZExt(cg->builder,
									  LLVMBuildLoad2(cg->builder, cg->t_i32,
													 ArrayFieldPtr(cg, v_index, 1), ""),
									  cg->t_i64, "v_left");
	node->v_fields[2] = LLVMBuildLoad2(cg->builder, cg->t_i32,
									   ArrayFieldPtr(cg, v_index, 2), "v_fflags");
	node->v_fields[3] = v_thr_ptr;
	if (cg->buffers->layout == ARRAY_LAYOUT_SIGN)
		node->v_fields[4] = LLVMBuildLoad2(cg->builder, cg->t_value,
										   ArrayFieldPtr(cg, v_index, 3), "v_sign");
}

/* i1: is flag set in feature_flags? */
static LLVMValueRef
ArrayFlag(CodegenContext *cg, const ReprNode *node, uint32_t flag)
{
	LLVMValueRef v_bit = LLVMBuildAnd(cg->builder, node->v_fields[2],
									  CgInt32(cg, (int32_t) flag), "");

	return LLVMBuildICmp(cg->builder, LLVMIntNE, v_bit, CgInt32(cg, 0), "");
}

/* x < bound, with the NaN rule's default direction */
static LLVMValueRef
ArrayCompare(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x,
			 LLVMValueRef v_bound, bool or_equal)
{
	uint32_t	has = cg->buffers->has;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_ordered = LLVMBuildFCmp(b, or_equal ? LLVMRealOLE : LLVMRealOLT,
										   v_x, v_bound, "");
	LLVMValueRef v_unordered = LLVMBuildFCmp(b, or_equal ? LLVMRealULE : LLVMRealULT,
											 v_x, v_bound, "");

	if ((has & REPR_HAS_DEFAULT_LEFT) && (has & REPR_HAS_DEFAULT_RIGHT))
		return LLVMBuildSelect(b, ArrayFlag(cg, node, ARRAY_DEFAULT_LEFT),
							   v_unordered, v_ordered, "");
	return (has & REPR_HAS_DEFAULT_LEFT) ? v_unordered : v_ordered;
}

/* Is the row's category in the node's set?  (x not NaN) */
static LLVMValueRef
ArrayInSet(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	bool		xgboost = cg->forest->source == FOREST_SOURCE_XGBOOST;
	LLVMValueRef v_low = xgboost ?
		LLVMBuildFCmp(b, LLVMRealOGE, v_x, CgValue(cg, 0.0), "") :
		LLVMBuildFCmp(b, LLVMRealOGT, v_x, CgValue(cg, -1.0), "");
	LLVMValueRef v_high = LLVMBuildFCmp(b, LLVMRealOLT, v_x,
										CgValue(cg, (double) FOREST_MAX_CATEGORY), "");
	LLVMValueRef v_valid = LLVMBuildAnd(b, v_low, v_high, "v_valid");
	LLVMValueRef v_cat = LLVMBuildFPToSI(b, LLVMBuildSelect(b, v_valid, v_x, CgValue(cg, 0.0), ""),
										 cg->t_i32, "v_category");
	LLVMValueRef v_is_cat = ArrayFlag(cg, node, ARRAY_CATEGORICAL);
	LLVMValueRef v_set_ptr = LLVMBuildBitCast(b, node->v_fields[3],
											  LLVMPointerType(cg->t_i32, 0), "");
	LLVMValueRef v_set = LLVMBuildSelect(b, v_is_cat,
										 LLVMBuildLoad2(b, cg->t_i32, v_set_ptr, ""),
										 CgInt32(cg, 0), "v_set");
	LLVMValueRef v_set_idx = LLVMBuildZExt(b, v_set, cg->t_i64, "");
	LLVMValueRef v_set_rec = LLVMBuildGEP2(b, cg->t_set, cg->v_category_sets,
										   &v_set_idx, 1, "");
	LLVMValueRef v_offset = LLVMBuildLoad2(b, cg->t_i32,
										   LLVMBuildStructGEP2(b, cg->t_set, v_set_rec, 0, ""), "");
	LLVMValueRef v_words = LLVMBuildLoad2(b, cg->t_i32,
										  LLVMBuildStructGEP2(b, cg->t_set, v_set_rec, 1, ""), "");
	LLVMValueRef v_in_range = LLVMBuildAnd(b, v_valid,
										   LLVMBuildICmp(b, LLVMIntULT, v_cat,
														 LLVMBuildShl(b, v_words, CgInt32(cg, 5), ""), ""),
										   "v_in_range");
	LLVMValueRef v_word_idx = LLVMBuildAdd(b, v_offset,
										   LLVMBuildLShr(b, v_cat, CgInt32(cg, 5), ""), "");
	LLVMValueRef v_safe_idx = LLVMBuildZExt(b, LLVMBuildSelect(b, v_in_range, v_word_idx,
															   CgInt32(cg, 0), ""),
											cg->t_i64, "");
	LLVMValueRef v_word = LLVMBuildLoad2(b, cg->t_i32,
										 LLVMBuildGEP2(b, cg->t_i32, cg->v_category_words,
													   &v_safe_idx, 1, ""), "v_word");
	LLVMValueRef v_bit = LLVMBuildAnd(b, LLVMBuildLShr(b, v_word,
													   LLVMBuildAnd(b, v_cat, CgInt32(cg, 31), ""), ""),
									  CgInt32(cg, 1), "");

	return LLVMBuildAnd(b, v_in_range,
						LLVMBuildICmp(b, LLVMIntNE, v_bit, CgInt32(cg, 0), ""), "v_in_set");
}

/* Categorical rule: NaN -> default; in the set -> the "in" child */
static LLVMValueRef
ArrayCategoryGoLeft(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_nan = LLVMBuildFCmp(b, LLVMRealUNO, v_x, v_x, "");
	LLVMValueRef v_in = ArrayInSet(cg, node, v_x);
	LLVMValueRef v_in_left = ArrayFlag(cg, node, ARRAY_IN_LEFT);

	return LLVMBuildSelect(b, v_nan, ArrayFlag(cg, node, ARRAY_DEFAULT_LEFT),
						   LLVMBuildICmp(b, LLVMIntEQ, v_in, v_in_left, ""), "");
}

/* Is every numeric split's missing rule one of those in rules? */
static bool
ArrayOnlyRules(CodegenContext *cg, uint32_t rules)
{
	uint32_t	all = REPR_HAS_DEFAULT_LEFT | REPR_HAS_DEFAULT_RIGHT |
		REPR_HAS_ZERO | REPR_HAS_NONE;

	return (cg->buffers->has & all & ~rules) == 0;
}

/* ZERO / NONE rules: NaN reads as 0 (on the nodes that say so, if mixed) */
static LLVMValueRef
ArrayNanToZero(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_zero = LLVMBuildFCmp(b, LLVMRealUNO, v_x, v_x, "");

	if (!ArrayOnlyRules(cg, REPR_HAS_ZERO | REPR_HAS_NONE))
		v_zero = LLVMBuildAnd(b, v_zero, ArrayFlag(cg, node, ARRAY_NAN_TO_ZERO), "");
	return LLVMBuildSelect(b, v_zero, CgValue(cg, 0.0), v_x, "v_x");
}

/* ZERO rule: |x| <= 1e-35 takes the default child */
static LLVMValueRef
ArrayZeroDefault(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x,
				 LLVMValueRef v_go_left)
{
	LLVMBuilderRef b = cg->builder;
	double		eps = FOREST_ZERO_THRESHOLD;
	LLVMValueRef v_take = LLVMBuildAnd(b,
									   LLVMBuildFCmp(b, LLVMRealOGE, v_x, CgValue(cg, -eps), ""),
									   LLVMBuildFCmp(b, LLVMRealOLE, v_x, CgValue(cg, eps), ""), "");

	if (!ArrayOnlyRules(cg, REPR_HAS_ZERO))
		v_take = LLVMBuildAnd(b, v_take, ArrayFlag(cg, node, ARRAY_ZERO), "");
	return LLVMBuildSelect(b, v_take, ArrayFlag(cg, node, ARRAY_DEFAULT_LEFT),
						   v_go_left, "");
}

/*
 * Categorical splits branch off the numeric path: they are usually a small
 * share of the splits, and their set lookup costs more than a predicted
 * branch.
 */
static LLVMValueRef
ArrayCategoryBranch(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x,
					LLVMValueRef v_go_left)
{
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef b_cat = LLVMAppendBasicBlockInContext(cg->context, cg->function,
															 "b_categorical");
	LLVMBasicBlockRef b_join = LLVMAppendBasicBlockInContext(cg->context, cg->function,
															  "b_split_done");
	LLVMValueRef v_cat_left;
	LLVMValueRef v_phi;

	LLVMBuildCondBr(b, ArrayFlag(cg, node, ARRAY_CATEGORICAL), b_cat, b_join);
	LLVMPositionBuilderAtEnd(b, b_cat);
	v_cat_left = ArrayCategoryGoLeft(cg, node, v_x);
	b_cat = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, b_join);
	LLVMPositionBuilderAtEnd(b, b_join);
	v_phi = LLVMBuildPhi(b, cg->t_i1, "v_go_left");
	LLVMAddIncoming(v_phi, &v_go_left, &b_from, 1);
	LLVMAddIncoming(v_phi, &v_cat_left, &b_cat, 1);
	return v_phi;
}

/* i1: does the row go left at this node? */
static LLVMValueRef
ArrayGoLeft(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	uint32_t	has = cg->buffers->has;
	LLVMValueRef v_num = (has & REPR_HAS_NAN_TO_ZERO) ? ArrayNanToZero(cg, node, v_x) : v_x;
	LLVMValueRef v_go_left = ArrayCompare(cg, node, v_num, node->v_fields[0], false);

	if (has & REPR_HAS_LE_INF)
		v_go_left = LLVMBuildSelect(cg->builder, ArrayFlag(cg, node, ARRAY_LE_INF),
									ArrayCompare(cg, node, v_num, node->v_fields[0], true),
									v_go_left, "");
	if (has & REPR_HAS_ZERO)
		v_go_left = ArrayZeroDefault(cg, node, v_num, v_go_left);
	if (has & REPR_HAS_CATEGORICAL)
		v_go_left = ArrayCategoryBranch(cg, node, v_x, v_go_left);
	return v_go_left;
}

/*
 * x with the sign bit flipped where the node's sign is -0.0.  The xor is
 * done on one-lane vectors so that it stays in a floating point register
 * (a scalar integer xor costs a register move on the walk's critical path).
 */
static LLVMValueRef
ArrayApplySign(CodegenContext *cg, LLVMValueRef v_x, LLVMValueRef v_sign)
{
	LLVMBuilderRef b = cg->builder;
	unsigned	lanes = cg->forest->precision == FOREST_FLOAT32 ? 4 : 2;
	LLVMTypeRef t_vec = LLVMVectorType(cg->t_value, lanes);
	LLVMTypeRef t_bits = LLVMVectorType(LLVMIntTypeInContext(cg->context, 128 / lanes), lanes);
	LLVMValueRef v_zero = CgInt32(cg, 0);
	LLVMValueRef v_xv = LLVMBuildInsertElement(b, LLVMGetUndef(t_vec), v_x, v_zero, "");
	LLVMValueRef v_sv = LLVMBuildInsertElement(b, LLVMGetUndef(t_vec), v_sign, v_zero, "");
	LLVMValueRef v_bits = LLVMBuildXor(b, LLVMBuildBitCast(b, v_xv, t_bits, ""),
									   LLVMBuildBitCast(b, v_sv, t_bits, ""), "");

	return LLVMBuildExtractElement(b, LLVMBuildBitCast(b, v_bits, t_vec, ""), v_zero, "v_y");
}

/* i1: does the row take the right-hand slot of the node's children? */
static LLVMValueRef
ArrayGoRight(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	if (cg->buffers->layout == ARRAY_LAYOUT_SIGN)
		return LLVMBuildFCmp(cg->builder, LLVMRealUGE,
							 ArrayApplySign(cg, v_x, node->v_fields[4]),
							 node->v_fields[0], "v_go_right");
	return LLVMBuildNot(cg->builder, ArrayGoLeft(cg, node, v_x), "v_go_right");
}

/* Index of the child the row leads to: left + (go right) */
static LLVMValueRef
ArrayMoveToChild(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_bits = node->v_fields[2];
	LLVMValueRef v_feature;
	LLVMValueRef v_x;

	if (cg->buffers->layout == ARRAY_LAYOUT_FLAGS)
		v_bits = LLVMBuildAnd(b, v_bits, CgInt32(cg, ARRAY_FEATURE_MASK), "");
	v_feature = LLVMBuildZExt(b, v_bits, cg->t_i64, "v_feature");
	v_x = LLVMBuildLoad2(b, cg->t_value,
						 LLVMBuildGEP2(b, cg->t_value, v_row, &v_feature, 1, ""), "v_x");
	return LLVMBuildAdd(b, node->v_fields[1],
						LLVMBuildZExt(b, ArrayGoRight(cg, node, v_x), cg->t_i64, ""),
						"v_child");
}

/* Leaves point to themselves */
static LLVMValueRef
ArrayIsLeaf(CodegenContext *cg, const ReprNode *node)
{
	return LLVMBuildICmp(cg->builder, LLVMIntEQ, node->v_fields[1], node->v_index, "v_is_leaf");
}

/* A leaf's value sits in its threshold slot */
static LLVMValueRef
ArrayLeafValue(CodegenContext *cg, LLVMValueRef v_index)
{
	return LLVMBuildLoad2(cg->builder, cg->t_value, ArrayFieldPtr(cg, v_index, 0),
						  "v_leaf");
}

const Representation ReprArray = {
	.name = "array",
	.build = ArrayBuild,
	.variant = ArrayVariant,
	.node_type = ArrayNodeType,
	.load_node = ArrayLoadNode,
	.move_to_child = ArrayMoveToChild,
	.is_leaf = ArrayIsLeaf,
	.leaf_value = ArrayLeafValue
};
