/*
 * repr_split.c
 *		Split records shared by every layout: how a node's decision is
 *		stored, and the code that evaluates it.
 *
 * A record holds the split's threshold in the forest's precision, a 32-bit
 * link (the layout says what it means: a child index, a tree number) and
 * the split feature.  Leaves hold their value in the threshold slot.  Each
 * forest gets the smallest of three record layouts that can express its
 * splits:
 *
 *   PLAIN {T threshold, int32 link, uint32 feature}: numeric splits that
 *     all send NaN the same way, or all read NaN as 0 (LightGBM's NONE).
 *     One compare per hop.
 *   SIGN {T threshold, int32 link, uint32 feature, T sign}: the same with
 *     NaN going both ways (XGBoost models trained with missing values).  A
 *     split that sends NaN left is stored mirrored: its children swapped,
 *     its feature read negated (x ^ sign) against nextafter(-b, +inf), so
 *     that every split is "go right iff y >= b or y is NaN".  This saves the
 *     flag tests of the FLAGS layout, a large part of the kernel.
 *   FLAGS {T threshold, int32 link, uint32 feature_flags}: anything else.
 *     The feature sits in the low 24 bits and the rule flags above, and the
 *     code tests only the rules the forest uses.
 *
 * Splits arrive comparing with <, <= or == only (hir.c rewrote >=, > and
 * != exactly).  An == split is the one kind that is no strict bound, so
 * it carries its kind in the record: the EQ flag, FLAGS layout only, set
 * only on == splits and tested only in forests that have one.  Its record
 * holds t itself (a float forest's t that no float equals is stored as
 * NaN, which no value equals), and it goes left iff x is ordered-equal to
 * it; NaN (after the ZERO / NONE rules read it as 0) takes the default.
 *
 * Every other numeric split becomes a strict compare x < b first:
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
 * PLAIN records of scalar walks go one step further, so that the step to
 * the next node is link + one compare whose "unordered or less" outcome is
 * the processor's carry flag (an add-with-carry on x86, no flag-to-register
 * moves): with NaN going right everywhere, the record holds b' = the value
 * just below b and slot 1 is taken iff b' <u x (x >= b or NaN; b = -inf
 * stores NaN, which is always unordered); with NaN going left everywhere,
 * every split's children are swapped and slot 1 (now the left child) is
 * taken iff x <u b.  Tiled walks keep the plain go-left test.
 *
 * Layouts describe their nodes into a list of ReprRecord whose links point
 * at the first of two adjacent children in the same list; ReprChooseLayout
 * picks the record layout and mirrors NaN-left splits by swapping those
 * two list entries (which carry their own subtrees' links along), so each
 * layout can then place the records wherever it likes.
 *
 * Whatever the model says, every load stays in bounds: features and
 * children were validated, set numbers are masked to 0 on other nodes, and
 * a category is range-checked before its word is loaded.  Loads of model
 * data and rows are marked invariant: nothing the kernel stores aliases
 * them.
 */
#include <math.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"

/* feature_flags bits */
#define SPLIT_FEATURE_MASK		0x00FFFFFFu
#define SPLIT_DEFAULT_LEFT		(1u << 24)
#define SPLIT_EQ				(1u << 25)
#define SPLIT_NAN_TO_ZERO		(1u << 26)
#define SPLIT_ZERO				(1u << 27)
#define SPLIT_LE_INF			(1u << 28)
#define SPLIT_CATEGORICAL		(1u << 29)
#define SPLIT_IN_LEFT			(1u << 30)

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
SplitStrictBound(const ForestNode *node, ForestPrecision precision, double *bound)
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

/*
 * The value an == split's record holds: t, or in a float forest where no
 * float equals t, NaN (equal to nothing)
 */
static double
SplitEqualValue(const ForestNode *node, ForestPrecision precision)
{
	double		t = node->threshold;

	if (precision == FOREST_FLOAT32 && (double) (float) t != t)
		return NAN;
	return t;
}

/* Record of a numeric split; note the kinds of rule it needs */
static void
SplitNumeric(const ForestNode *node, ForestPrecision precision, ReprRecord *rec,
			 uint32_t *has)
{
	rec->feature_flags = (uint32_t) node->feature;
	if (node->compare == FOREST_CMP_EQ)
	{
		rec->threshold = SplitEqualValue(node, precision);
		rec->feature_flags |= SPLIT_EQ;
		*has |= REPR_HAS_EQ;
	}
	else if (!SplitStrictBound(node, precision, &rec->threshold))
	{
		rec->feature_flags |= SPLIT_LE_INF;
		*has |= REPR_HAS_LE_INF;
	}
	if (node->default_left)
		rec->feature_flags |= SPLIT_DEFAULT_LEFT;
	if (node->missing == FOREST_MISSING_NAN)
	{
		rec->numeric = true;
		*has |= node->default_left ? REPR_HAS_DEFAULT_LEFT : REPR_HAS_DEFAULT_RIGHT;
	}
	else
	{
		rec->feature_flags |= SPLIT_NAN_TO_ZERO;
		*has |= REPR_HAS_NAN_TO_ZERO;
	}
	if (node->missing == FOREST_MISSING_ZERO)
	{
		rec->feature_flags |= SPLIT_ZERO;
		*has |= REPR_HAS_ZERO;
	}
	if (node->missing == FOREST_MISSING_NONE)
		*has |= REPR_HAS_NONE;
}

/* Record of a categorical split; its set joins the set table */
static void
SplitCategorical(const ForestNode *node, ReprBuffers *buffers, ReprRecord *rec)
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
	rec->categorical = true;
	rec->feature_flags = (uint32_t) node->feature | SPLIT_CATEGORICAL;
	if (node->default_left)
		rec->feature_flags |= SPLIT_DEFAULT_LEFT;
	if (node->category_in_left)
		rec->feature_flags |= SPLIT_IN_LEFT;
	buffers->has |= REPR_HAS_CATEGORICAL;
}

/* Describe a Forest node as a record (link -1), noting the rules it uses */
void
ReprDescribeNode(const Forest *forest, const ForestNode *fnode, ReprBuffers *buffers,
				 ReprRecord *rec)
{
	memset(rec, 0, sizeof(ReprRecord));
	rec->link = -1;
	rec->hir = -1;
	if (fnode->kind == FOREST_NODE_LEAF)
	{
		rec->threshold = fnode->leaf_value;
		rec->leaf = true;
	}
	else if (fnode->kind == FOREST_NODE_NUMERIC)
		SplitNumeric(fnode, forest->precision, rec, &buffers->has);
	else
		SplitCategorical(fnode, buffers, rec);
}

/* Describe HIR node i (global index) as a record; the caller sets link */
void
ReprDescribe(const Hir *hir, int64_t i, ReprBuffers *buffers, ReprRecord *rec)
{
	const HirNode *hnode = &hir->nodes[i];

	if (hnode->padding)
	{
		/* both children are the same: any split */
		memset(rec, 0, sizeof(ReprRecord));
		rec->link = -1;
		rec->hir = i;
		return;
	}
	ReprDescribeNode(hir->forest, &hir->forest->nodes[hnode->source], buffers, rec);
	rec->hir = i;
}

/*
 * Every HIR node as a record at its global HIR index, a split's link the
 * list index of its left child (malloc'd; NULL and a status without memory)
 */
ReprRecord *
ReprDescribeHir(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	ReprRecord *recs = malloc(sizeof(ReprRecord) * (size_t) (hir->num_nodes + 1));

	if (recs == NULL)
	{
		StatusNoMemory(status, "the compiled model's node records");
		return NULL;
	}
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		const HirTree *tree = &hir->trees[t];

		for (int64_t i = tree->first_node; i < tree->first_node + tree->num_nodes; i++)
		{
			ReprDescribe(hir, i, buffers, &recs[i]);
			if (!recs[i].leaf)
				recs[i].link = (int32_t) (tree->first_node + hir->nodes[i].left);
		}
	}
	return recs;
}

/* Store a record in slot of the FLAGS or PLAIN layout */
static void
SplitStore(const ReprRecord *rec, ForestPrecision precision, void *nodes, int64_t slot,
		   int32_t link)
{
	if (precision == FOREST_FLOAT32)
	{
		ReprSplitNode32 *node = &((ReprSplitNode32 *) nodes)[slot];

		node->threshold = (float) rec->threshold;
		if (rec->feature_flags & SPLIT_CATEGORICAL)
			memcpy(&node->threshold, &rec->set, sizeof(int32_t));
		node->left = link;
		node->feature_flags = rec->feature_flags;
	}
	else
	{
		ReprSplitNode64 *node = &((ReprSplitNode64 *) nodes)[slot];
		int64_t		set = rec->set;

		node->threshold = rec->threshold;
		if (rec->feature_flags & SPLIT_CATEGORICAL)
			memcpy(&node->threshold, &set, sizeof(int64_t));
		node->left = link;
		node->feature_flags = rec->feature_flags;
	}
}

/* Store a record in slot of the SIGN layout */
static void
SplitStoreSign(const ReprRecord *rec, ForestPrecision precision, void *nodes,
			   int64_t slot, int32_t link)
{
	uint32_t	feature = rec->feature_flags & SPLIT_FEATURE_MASK;

	if (precision == FOREST_FLOAT32)
		((ReprSignNode32 *) nodes)[slot] = (ReprSignNode32) {
			(float) rec->threshold, link, feature, rec->mirrored ? -0.0f : 0.0f
		};
	else
		((ReprSignNode64 *) nodes)[slot] = (ReprSignNode64) {
			rec->threshold, link, feature, rec->mirrored ? -0.0 : 0.0
		};
}

/* Store a record in slot of the nodes array, with the layout's link */
void
ReprStoreRecord(const ReprRecord *rec, ReprSplitLayout layout, ForestPrecision precision,
				void *nodes, int64_t slot, int32_t link)
{
	if (layout == REPR_SPLIT_SIGN)
		SplitStoreSign(rec, precision, nodes, slot, link);
	else
		SplitStore(rec, precision, nodes, slot, link);
}

/*
 * Store a record without its link in slot of an array of ReprPerfect*
 * records (the perfect layout, whose children are implicit); a leaf keeps
 * its value and feature 0
 */
void
ReprStoreUnlinked(const ReprRecord *rec, ReprSplitLayout layout, ForestPrecision precision,
				  void *nodes, int64_t slot)
{
	uint32_t	fflags = rec->leaf ? 0 : rec->feature_flags;
	bool		set = !rec->leaf && (rec->feature_flags & SPLIT_CATEGORICAL) != 0;
	int64_t		set64 = rec->set;
	float		threshold32 = (float) rec->threshold;
	double		threshold64 = rec->threshold;

	if (set)
	{
		memcpy(&threshold32, &rec->set, sizeof(int32_t));
		memcpy(&threshold64, &set64, sizeof(int64_t));
	}
	if (layout == REPR_SPLIT_SIGN && precision == FOREST_FLOAT32)
		((ReprPerfectSign32 *) nodes)[slot] = (ReprPerfectSign32) {
			threshold32, fflags & SPLIT_FEATURE_MASK, rec->mirrored ? -0.0f : 0.0f
		};
	else if (layout == REPR_SPLIT_SIGN)
		((ReprPerfectSign64 *) nodes)[slot] = (ReprPerfectSign64) {
			threshold64, fflags & SPLIT_FEATURE_MASK, rec->mirrored ? -0.0 : 0.0
		};
	else if (precision == FOREST_FLOAT32)
		((ReprPerfectNode32 *) nodes)[slot] = (ReprPerfectNode32) {threshold32, fflags};
	else
		((ReprPerfectNode64 *) nodes)[slot] = (ReprPerfectNode64) {threshold64, fflags};
}

/* Bytes of one record without its link */
size_t
ReprUnlinkedSize(ReprSplitLayout layout, ForestPrecision precision)
{
	if (layout == REPR_SPLIT_SIGN)
		return precision == FOREST_FLOAT32 ? sizeof(ReprPerfectSign32) : sizeof(ReprPerfectSign64);
	return precision == FOREST_FLOAT32 ? sizeof(ReprPerfectNode32) : sizeof(ReprPerfectNode64);
}

/* Bytes of one record */
size_t
ReprRecordSize(ReprSplitLayout layout, ForestPrecision precision)
{
	if (layout == REPR_SPLIT_SIGN)
		return precision == FOREST_FLOAT32 ? sizeof(ReprSignNode32) : sizeof(ReprSignNode64);
	return precision == FOREST_FLOAT32 ? sizeof(ReprSplitNode32) : sizeof(ReprSplitNode64);
}

/* Name of a record layout */
const char *
ReprSplitName(ReprSplitLayout layout)
{
	static const char *const names[] = {"plain", "sign", "flags"};

	return names[layout];
}

/*
 * The bound of a NaN-left split read negated: -x >= b' iff x < b, so b'
 * is the next value of the precision above -b.  False when there is none
 * (b = -inf).  For x <= +inf (LE_INF), every number goes left: b' = -inf.
 */
static bool
SplitMirrorBound(const ReprRecord *rec, ForestPrecision precision, double *bound)
{
	if (rec->feature_flags & SPLIT_LE_INF)
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
 * Pick the layout.  == splits, the ZERO rule and categorical splits need
 * FLAGS.  PLAIN needs no per-split rule: either every numeric
 * split reads NaN as 0 (NONE) or every one sends NaN the same way.  SIGN
 * needs every split numeric with the NaN rule and expressible as "go right
 * iff y >= b or NaN": a NaN-right split needs a bound (not LE_INF), a
 * NaN-left one a mirrored bound.
 */
static ReprSplitLayout
SplitPickLayout(const ReprRecord *recs, int64_t num_nodes, uint32_t has,
				ForestPrecision precision)
{
	uint32_t	both = REPR_HAS_DEFAULT_LEFT | REPR_HAS_DEFAULT_RIGHT;
	uint32_t	nan_rule = has & both;
	double		bound;

	if ((has & (REPR_HAS_ZERO | REPR_HAS_CATEGORICAL | REPR_HAS_EQ)) ||
		((has & REPR_HAS_NONE) && nan_rule))
		return REPR_SPLIT_FLAGS;
	if (!(has & REPR_HAS_LE_INF) && nan_rule != both)
		return REPR_SPLIT_PLAIN;
	if (has & REPR_HAS_NONE)
		return REPR_SPLIT_FLAGS;
	for (int64_t i = 0; i < num_nodes; i++)
	{
		const ReprRecord *rec = &recs[i];

		if (!rec->numeric)
			continue;
		if (rec->feature_flags & SPLIT_DEFAULT_LEFT ?
			!SplitMirrorBound(rec, precision, &bound) :
			(rec->feature_flags & SPLIT_LE_INF) != 0)
			return REPR_SPLIT_FLAGS;
	}
	return REPR_SPLIT_SIGN;
}

/*
 * Mirror every NaN-left split: negated bound, and its children swapped in
 * the list when swap (tiles cannot swap: the walk flips the outcome)
 */
static void
SplitMirror(ReprRecord *recs, int64_t num_nodes, ForestPrecision precision, bool swap)
{
	for (int64_t i = 0; i < num_nodes; i++)
	{
		ReprRecord *rec = &recs[i];
		ReprRecord tmp;

		if (!rec->numeric || !(rec->feature_flags & SPLIT_DEFAULT_LEFT))
			continue;
		SplitMirrorBound(rec, precision, &rec->threshold);
		rec->mirrored = true;
		if (!swap)
			continue;
		tmp = recs[rec->link];
		recs[rec->link] = recs[rec->link + 1];
		recs[rec->link + 1] = tmp;
	}
}

/* The value just below b in the precision; NaN when there is none (b = -inf) */
static double
SplitBelow(double b, ForestPrecision precision)
{
	if (b == -INFINITY)
		return NAN;
	if (precision == FOREST_FLOAT32)
		return nextafterf((float) b, -INFINITY);
	return nextafter(b, -INFINITY);
}

/* Rewrite PLAIN records (links index the list) for the carry-flag step */
static ReprPlainForm
SplitPlainForm(ReprRecord *recs, int64_t num_records, uint32_t has,
			   ForestPrecision precision)
{
	bool		left = (has & REPR_HAS_DEFAULT_LEFT) != 0;

	if (has & (REPR_HAS_NAN_TO_ZERO | REPR_HAS_LE_INF | REPR_HAS_CATEGORICAL))
		return REPR_PLAIN_GO_LEFT;
	for (int64_t i = 0; i < num_records; i++)
	{
		ReprRecord *rec = &recs[i];
		ReprRecord tmp;

		if (!rec->numeric)
			continue;
		if (!left)
		{
			rec->threshold = SplitBelow(rec->threshold, precision);
			continue;
		}
		tmp = recs[rec->link];
		recs[rec->link] = recs[rec->link + 1];
		recs[rec->link + 1] = tmp;
	}
	return left ? REPR_PLAIN_X_BELOW : REPR_PLAIN_BELOW_X;
}

/*
 * Pick the record layout for a list of records (links index the list) and
 * rewrite the records for it: SIGN mirrors NaN-left splits (swapping their
 * children in the list when swap_children), PLAIN drops the flags.  Sets
 * buffers->layout and node_size.
 */
ReprSplitLayout
ReprChooseLayout(ReprRecord *recs, int64_t num_records, ReprBuffers *buffers,
				 ForestPrecision precision, bool swap_children)
{
	ReprSplitLayout layout = SplitPickLayout(recs, num_records, buffers->has, precision);

	if (layout == REPR_SPLIT_SIGN)
		SplitMirror(recs, num_records, precision, swap_children);
	if (layout == REPR_SPLIT_PLAIN)
		for (int64_t i = 0; i < num_records; i++)
			recs[i].feature_flags &= SPLIT_FEATURE_MASK;
	buffers->plain_form = layout == REPR_SPLIT_PLAIN && swap_children ?
		SplitPlainForm(recs, num_records, buffers->has, precision) : REPR_PLAIN_GO_LEFT;
	buffers->layout = layout;
	buffers->node_size = ReprRecordSize(layout, precision);
	return layout;
}

/* i1: is flag set in feature_flags? */
static LLVMValueRef
SplitFlag(CodegenContext *cg, const ReprNode *node, uint32_t flag)
{
	LLVMValueRef v_bit = LLVMBuildAnd(cg->builder, node->v_fflags,
									  CgInt32(cg, (int32_t) flag), "");

	return LLVMBuildICmp(cg->builder, LLVMIntNE, v_bit, CgInt32(cg, 0), "");
}

/* x < bound, with the NaN rule's default direction */
static LLVMValueRef
SplitCompare(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x,
			 LLVMValueRef v_bound, bool or_equal)
{
	uint32_t	has = cg->buffers->has;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_ordered = LLVMBuildFCmp(b, or_equal ? LLVMRealOLE : LLVMRealOLT,
										   v_x, v_bound, "");
	LLVMValueRef v_unordered = LLVMBuildFCmp(b, or_equal ? LLVMRealULE : LLVMRealULT,
											 v_x, v_bound, "");

	if ((has & REPR_HAS_DEFAULT_LEFT) && (has & REPR_HAS_DEFAULT_RIGHT))
		return LLVMBuildSelect(b, SplitFlag(cg, node, SPLIT_DEFAULT_LEFT),
							   v_unordered, v_ordered, "");
	return (has & REPR_HAS_DEFAULT_LEFT) ? v_unordered : v_ordered;
}

/* Is the row's category in the node's set?  (x not NaN) */
static LLVMValueRef
SplitInSet(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	bool		xgboost = cg->forest->category_rule == FOREST_CATEGORY_NONNEGATIVE;
	LLVMValueRef v_low = xgboost ?
		LLVMBuildFCmp(b, LLVMRealOGE, v_x, CgValue(cg, 0.0), "") :
		LLVMBuildFCmp(b, LLVMRealOGT, v_x, CgValue(cg, -1.0), "");
	LLVMValueRef v_high = LLVMBuildFCmp(b, LLVMRealOLT, v_x,
										CgValue(cg, (double) FOREST_MAX_CATEGORY), "");
	LLVMValueRef v_valid = LLVMBuildAnd(b, v_low, v_high, "v_valid");
	LLVMValueRef v_cat = LLVMBuildFPToSI(b, LLVMBuildSelect(b, v_valid, v_x, CgValue(cg, 0.0), ""),
										 cg->t_i32, "v_category");
	LLVMValueRef v_is_cat = SplitFlag(cg, node, SPLIT_CATEGORICAL);
	LLVMValueRef v_set_ptr = LLVMBuildBitCast(b, node->v_record,
											  LLVMPointerType(cg->t_i32, 0), "");
	LLVMValueRef v_set = LLVMBuildSelect(b, v_is_cat,
										 CgLoad(cg, cg->t_i32, v_set_ptr, ""),
										 CgInt32(cg, 0), "v_set");
	LLVMValueRef v_set_idx = LLVMBuildZExt(b, v_set, cg->t_i64, "");
	LLVMValueRef v_set_rec = LLVMBuildGEP2(b, cg->t_set, cg->v_category_sets,
										   &v_set_idx, 1, "");
	LLVMValueRef v_offset = CgLoad(cg, cg->t_i32,
								   LLVMBuildStructGEP2(b, cg->t_set, v_set_rec,
													   FIELDNO_REPRCATEGORYSET_OFFSET, ""), "");
	LLVMValueRef v_words = CgLoad(cg, cg->t_i32,
								  LLVMBuildStructGEP2(b, cg->t_set, v_set_rec,
													  FIELDNO_REPRCATEGORYSET_NUM_WORDS, ""), "");
	LLVMValueRef v_in_range = LLVMBuildAnd(b, v_valid,
										   LLVMBuildICmp(b, LLVMIntULT, v_cat,
														 LLVMBuildShl(b, v_words, CgInt32(cg, 5), ""), ""),
										   "v_in_range");
	LLVMValueRef v_word_idx = LLVMBuildAdd(b, v_offset,
										   LLVMBuildLShr(b, v_cat, CgInt32(cg, 5), ""), "");
	LLVMValueRef v_safe_idx = LLVMBuildZExt(b, LLVMBuildSelect(b, v_in_range, v_word_idx,
															   CgInt32(cg, 0), ""),
											cg->t_i64, "");
	LLVMValueRef v_word = CgLoad(cg, cg->t_i32,
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
SplitCategoryGoLeft(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_nan = LLVMBuildFCmp(b, LLVMRealUNO, v_x, v_x, "");
	LLVMValueRef v_in = SplitInSet(cg, node, v_x);
	LLVMValueRef v_in_left = SplitFlag(cg, node, SPLIT_IN_LEFT);

	return LLVMBuildSelect(b, v_nan, SplitFlag(cg, node, SPLIT_DEFAULT_LEFT),
						   LLVMBuildICmp(b, LLVMIntEQ, v_in, v_in_left, ""), "");
}

/* Is every numeric split's missing rule one of those in rules? */
static bool
SplitOnlyRules(CodegenContext *cg, uint32_t rules)
{
	uint32_t	all = REPR_HAS_DEFAULT_LEFT | REPR_HAS_DEFAULT_RIGHT |
		REPR_HAS_ZERO | REPR_HAS_NONE;

	return (cg->buffers->has & all & ~rules) == 0;
}

/* ZERO / NONE rules: NaN reads as 0 (on the nodes that say so, if mixed) */
static LLVMValueRef
SplitNanToZero(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_zero = LLVMBuildFCmp(b, LLVMRealUNO, v_x, v_x, "");

	if (!SplitOnlyRules(cg, REPR_HAS_ZERO | REPR_HAS_NONE))
		v_zero = LLVMBuildAnd(b, v_zero, SplitFlag(cg, node, SPLIT_NAN_TO_ZERO), "");
	return LLVMBuildSelect(b, v_zero, CgValue(cg, 0.0), v_x, "v_x");
}

/* ZERO rule: |x| <= 1e-35 takes the default child */
static LLVMValueRef
SplitZeroDefault(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x,
				 LLVMValueRef v_go_left)
{
	LLVMBuilderRef b = cg->builder;
	double		eps = FOREST_ZERO_THRESHOLD;
	LLVMValueRef v_take = LLVMBuildAnd(b,
									   LLVMBuildFCmp(b, LLVMRealOGE, v_x, CgValue(cg, -eps), ""),
									   LLVMBuildFCmp(b, LLVMRealOLE, v_x, CgValue(cg, eps), ""), "");

	if (!SplitOnlyRules(cg, REPR_HAS_ZERO))
		v_take = LLVMBuildAnd(b, v_take, SplitFlag(cg, node, SPLIT_ZERO), "");
	return LLVMBuildSelect(b, v_take, SplitFlag(cg, node, SPLIT_DEFAULT_LEFT),
						   v_go_left, "");
}

/*
 * Categorical splits branch off the numeric path: they are usually a small
 * share of the splits, and their set lookup costs more than a predicted
 * branch.
 */
static LLVMValueRef
SplitCategoryBranch(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x,
					LLVMValueRef v_go_left)
{
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef b_cat = LLVMAppendBasicBlockInContext(cg->context, cg->fn.function,
															 "b_categorical");
	LLVMBasicBlockRef b_join = LLVMAppendBasicBlockInContext(cg->context, cg->fn.function,
															  "b_split_done");
	LLVMValueRef v_cat_left;
	LLVMValueRef v_phi;

	LLVMBuildCondBr(b, SplitFlag(cg, node, SPLIT_CATEGORICAL), b_cat, b_join);
	LLVMPositionBuilderAtEnd(b, b_cat);
	v_cat_left = SplitCategoryGoLeft(cg, node, v_x);
	b_cat = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, b_join);
	LLVMPositionBuilderAtEnd(b, b_join);
	v_phi = LLVMBuildPhi(b, cg->t_i1, "v_go_left");
	LLVMAddIncoming(v_phi, &v_go_left, &b_from, 1);
	LLVMAddIncoming(v_phi, &v_cat_left, &b_cat, 1);
	return v_phi;
}

/* == split: NaN (not read as 0) takes the default, else x == t */
static LLVMValueRef
SplitEqualGoLeft(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_num,
				 LLVMValueRef v_go_left)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_eq = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, v_num, v_num, ""),
										SplitFlag(cg, node, SPLIT_DEFAULT_LEFT),
										LLVMBuildFCmp(b, LLVMRealOEQ, v_num,
													  node->v_threshold, ""), "v_equal");

	return LLVMBuildSelect(b, SplitFlag(cg, node, SPLIT_EQ), v_eq, v_go_left, "");
}

/* i1: does the row go left at this node? */
static LLVMValueRef
SplitGoLeft(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	uint32_t	has = cg->buffers->has;
	LLVMValueRef v_num = (has & REPR_HAS_NAN_TO_ZERO) ? SplitNanToZero(cg, node, v_x) : v_x;
	LLVMValueRef v_go_left = SplitCompare(cg, node, v_num, node->v_threshold, false);

	if (has & REPR_HAS_LE_INF)
		v_go_left = LLVMBuildSelect(cg->builder, SplitFlag(cg, node, SPLIT_LE_INF),
									SplitCompare(cg, node, v_num, node->v_threshold, true),
									v_go_left, "");
	if (has & REPR_HAS_EQ)
		v_go_left = SplitEqualGoLeft(cg, node, v_num, v_go_left);
	if (has & REPR_HAS_ZERO)
		v_go_left = SplitZeroDefault(cg, node, v_num, v_go_left);
	if (has & REPR_HAS_CATEGORICAL)
		v_go_left = SplitCategoryBranch(cg, node, v_x, v_go_left);
	return v_go_left;
}

/*
 * x with the sign bit flipped where the node's sign is -0.0.  The xor is
 * done on one-lane vectors so that it stays in a floating point register
 * (a scalar integer xor costs a register move on the walk's critical path).
 */
static LLVMValueRef
SplitApplySign(CodegenContext *cg, LLVMValueRef v_x, LLVMValueRef v_sign)
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

/*
 * The same where the bound and x are integer keys in float slots
 * (repr_keys.c): the PLAIN forms' compares, unsigned
 */
static LLVMValueRef
SplitKeysGoRight(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_x_key = LLVMBuildBitCast(b, v_x, cg->t_i32, "v_x_key");
	LLVMValueRef v_bound_key = LLVMBuildBitCast(b, node->v_threshold, cg->t_i32, "v_bound_key");

	if (cg->buffers->plain_form == REPR_PLAIN_BELOW_X)
		return LLVMBuildICmp(b, LLVMIntULT, v_bound_key, v_x_key, "v_go_right");
	return LLVMBuildICmp(b, LLVMIntULT, v_x_key, v_bound_key, "v_go_right");
}

/* i1: does the row take the right-hand slot of the node's children? */
static LLVMValueRef
SplitGoRight(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	if (cg->buffers->key_rows)
		return SplitKeysGoRight(cg, node, v_x);
	if (cg->buffers->plain_form == REPR_PLAIN_BELOW_X)
		return LLVMBuildFCmp(cg->builder, LLVMRealULT, node->v_threshold, v_x, "v_go_right");
	if (cg->buffers->plain_form == REPR_PLAIN_X_BELOW)
		return LLVMBuildFCmp(cg->builder, LLVMRealULT, v_x, node->v_threshold, "v_go_right");
	if (cg->buffers->layout == REPR_SPLIT_SIGN)
		return LLVMBuildFCmp(cg->builder, LLVMRealUGE,
							 SplitApplySign(cg, v_x, node->v_sign),
							 node->v_threshold, "v_go_right");
	return LLVMBuildNot(cg->builder, SplitGoLeft(cg, node, v_x), "v_go_right");
}

/* {T threshold, i32 feature or feature_flags[, T sign]}: ReprPerfect* */
LLVMTypeRef
ReprUnlinkedType(LLVMContextRef context, ForestPrecision precision, ReprSplitLayout layout)
{
	LLVMTypeRef t_value = precision == FOREST_FLOAT32 ?
		LLVMFloatTypeInContext(context) : LLVMDoubleTypeInContext(context);
	LLVMTypeRef fields[3];

	fields[FIELDNO_UNLINKED_THRESHOLD] = t_value;
	fields[FIELDNO_UNLINKED_FEATURE] = LLVMInt32TypeInContext(context);
	fields[FIELDNO_UNLINKED_SIGN] = t_value;
	return LLVMStructTypeInContext(context, fields, layout == REPR_SPLIT_SIGN ? 3 : 2, false);
}

/* {T threshold, i32 link, i32 feature or feature_flags[, T sign]} */
LLVMTypeRef
ReprSplitType(LLVMContextRef context, ForestPrecision precision, ReprSplitLayout layout)
{
	LLVMTypeRef t_value = precision == FOREST_FLOAT32 ?
		LLVMFloatTypeInContext(context) : LLVMDoubleTypeInContext(context);
	LLVMTypeRef fields[4];

	fields[FIELDNO_SPLIT_THRESHOLD] = t_value;
	fields[FIELDNO_SPLIT_LINK] = LLVMInt32TypeInContext(context);
	fields[FIELDNO_SPLIT_FEATURE] = LLVMInt32TypeInContext(context);
	fields[FIELDNO_SPLIT_SIGN] = t_value;
	return LLVMStructTypeInContext(context, fields, layout == REPR_SPLIT_SIGN ? 4 : 3, false);
}

/* Address of field f of record v_index */
static LLVMValueRef
SplitFieldPtr(CodegenContext *cg, LLVMValueRef v_record, unsigned f)
{
	return LLVMBuildStructGEP2(cg->builder, cg->t_node, v_record, f, "");
}

/*
 * Load record v_index: threshold, link (i64), feature_flags[, sign].  Link
 * and feature_flags are adjacent and come in one 64-bit load, split by a
 * shift: a hop then issues three loads instead of four (faster kernels on
 * the 6- and 12-deep bench models).
 */
void
ReprLoadSplit(CodegenContext *cg, LLVMValueRef v_index, bool signed_link, ReprNode *node)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_record = LLVMBuildGEP2(b, cg->t_node, cg->v_nodes, &v_index, 1, "v_node");
	LLVMValueRef v_pair_ptr = LLVMBuildBitCast(b,
											   SplitFieldPtr(cg, v_record, FIELDNO_SPLIT_LINK),
											   LLVMPointerType(cg->t_i64, 0), "");
	LLVMValueRef v_pair = CgLoad(cg, cg->t_i64, v_pair_ptr, "v_link_feature");
	LLVMValueRef v_low = LLVMBuildTrunc(b, v_pair, cg->t_i32, "");
	LLVMValueRef v_high = LLVMBuildTrunc(b, LLVMBuildLShr(b, v_pair, CgInt64(cg, 32), ""),
										 cg->t_i32, "");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	LLVMValueRef v_link = v_high;
	LLVMValueRef v_fflags = v_low;
#else
	LLVMValueRef v_link = v_low;
	LLVMValueRef v_fflags = v_high;
#endif

	LLVMSetAlignment(v_pair, 4);	/* records are 4-aligned */
	node->v_index = v_index;
	node->v_record = v_record;
	node->v_threshold = CgLoad(cg, cg->t_value,
							   SplitFieldPtr(cg, v_record, FIELDNO_SPLIT_THRESHOLD), "v_threshold");
	node->v_link = signed_link ? LLVMBuildSExt(b, v_link, cg->t_i64, "v_link") :
		LLVMBuildZExt(b, v_link, cg->t_i64, "v_link");
	node->v_fflags = v_fflags;
	node->v_sign = cg->buffers->layout == REPR_SPLIT_SIGN ?
		CgLoad(cg, cg->t_value, SplitFieldPtr(cg, v_record, FIELDNO_SPLIT_SIGN), "v_sign") :
		NULL;
}

/* The threshold slot of record v_index (a leaf's value) */
LLVMValueRef
ReprLoadThreshold(CodegenContext *cg, LLVMValueRef v_index)
{
	LLVMValueRef v_record = LLVMBuildGEP2(cg->builder, cg->t_node, cg->v_nodes,
										  &v_index, 1, "v_node");

	return CgLoad(cg, cg->t_value, SplitFieldPtr(cg, v_record, FIELDNO_SPLIT_THRESHOLD),
				  "v_leaf");
}

/* i1: does the row (pointer to its first value) take the right-hand child? */
LLVMValueRef
ReprGoRight(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_bits = node->v_fflags;
	LLVMValueRef v_feature;
	LLVMValueRef v_x;

	if (cg->buffers->layout == REPR_SPLIT_FLAGS)
		v_bits = LLVMBuildAnd(b, v_bits, CgInt32(cg, SPLIT_FEATURE_MASK), "");
	v_feature = LLVMBuildZExt(b, v_bits, cg->t_i64, "v_feature");
	v_x = CgLoad(cg, cg->t_value, LLVMBuildGEP2(b, cg->t_value, v_row, &v_feature, 1, ""),
				 "v_x");
	return SplitGoRight(cg, node, v_x);
}

/* i1: does a row whose split feature reads v_x take the right-hand child? */
LLVMValueRef
ReprSplitGoRightAt(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_x)
{
	return SplitGoRight(cg, node, v_x);
}
