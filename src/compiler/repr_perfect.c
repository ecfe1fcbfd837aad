/*
 * repr_perfect.c
 *		The perfect representation: the forest as one implicit perfect
 *		binary tree, with the model's trees as disjoint subtrees whose
 *		leaves all sit on its last level.
 *
 * Records are numbered as a heap from 1 (record 0 is unused): record g has
 * its children at 2g and 2g + 1, for every g.  So a hop needs neither a
 * stored link nor the tree it is in, which makes the record only the
 * threshold and the feature (8 bytes for float forests, against 12 in the
 * other layouts), and the step a shift and an add of the compare:
 *
 *     array:    child = link(g) + (threshold(g) <u x[feature(g)])
 *     perfect:  child = 2g + (threshold(g) <u x[feature(g)])
 *
 * Each tree t of depth d_t is padded to d_t (a leaf above that is copied
 * down both ways under a dummy split, the zero record, whose two subtrees
 * agree, so whichever way it sends a row the row meets the same value),
 * and hangs at level H - d_t of the big tree of H + 1 levels, so that all
 * leaves are on level H: the leaf test is g >= 2^H whatever the tree, and
 * a tree takes its own d_t hops, not the deepest tree's.  Placing the
 * trees is buddy allocation of the 2^H leaf slots: tree t takes an aligned
 * block of 2^d_t of them, deepest trees first, so every block's start is
 * a multiple of its size; H is the least with sum 2^d_t <= 2^H.  A tree's
 * nodes of one level are a run of records, so the lanes of a walk over
 * one tree read neighbouring records level by level.  Leaves hold their
 * value in the threshold slot.  Records no tree uses stay zero: feature 0,
 * in bounds for any load.
 *
 * On higgs, airline and year (100 XGBoost trees of depth 8, 16 rows in
 * lock-step) the kernel walks a little faster than with array, and
 * clearly faster with 8 to 14 rows in lock-step, where array's longer hop
 * shows.
 *
 * The price is 2^(H+1) records, so the layout refuses forests whose
 * padding would cost more than PERFECT_MAX_RATIO records per node, or
 * more than PERFECT_MAX_RECORDS in all: it is for the depth-limited
 * forests of XGBoost and random forests, not LightGBM's leaf-wise trees.
 * Tiled trees (tileTrees(n > 1)) have their own layouts in array and reorg.
 *
 * The records are repr_split.c's decisions without the link
 * (ReprStoreUnlinked): PLAIN and FLAGS store {T threshold, u32
 * feature_flags}, SIGN adds {T sign}; the split code (ReprGoRight) reads
 * the same fields from them.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"

/* Most records the layout may take, and most per node of the forest */
#define PERFECT_MAX_RECORDS	(INT64_C(1) << 26)
#define PERFECT_MAX_RATIO	4

/* Placement state */
typedef struct PerfectPlace
{
	const ReprRecord *recs;
	ReprBuffers *buffers;
	ForestPrecision precision;
	int32_t		depth;			/* the tree's own depth */
} PerfectPlace;

/*
 * Place list entry e at record g, level d of its tree, and its subtree
 * below; a leaf above the tree's last level goes down both ways under a
 * dummy split (the zero record: feature 0)
 */
static void
PerfectPlaceNode(const PerfectPlace *pl, int64_t e, int64_t g, int32_t d)
{
	const ReprRecord *rec = &pl->recs[e];

	if (g >= pl->buffers->num_nodes)
		return;					/* cannot happen: the tree's depth bounds g */
	if (rec->leaf && d < pl->depth)
	{
		PerfectPlaceNode(pl, e, 2 * g, d + 1);
		PerfectPlaceNode(pl, e, 2 * g + 1, d + 1);
		return;
	}
	ReprStoreUnlinked(rec, pl->buffers->layout, pl->precision, pl->buffers->nodes, g);
	if (rec->leaf)
		return;
	if (rec->hir >= 0)
		pl->buffers->record_of[rec->hir] = g;
	PerfectPlaceNode(pl, rec->link, 2 * g, d + 1);
	PerfectPlaceNode(pl, rec->link + 1, 2 * g + 1, d + 1);
}

/* Records of the big tree whose leaves are on level h, with the unused record 0 */
static int64_t
PerfectRecords(int32_t h)
{
	return h < 40 ? INT64_C(2) << h : PERFECT_MAX_RECORDS + 1;
}

/* Would records be within the layout's bounds for a forest of num_nodes? */
static bool
PerfectRecordsFit(int64_t records, int64_t num_nodes)
{
	return records <= PERFECT_MAX_RECORDS && records <= PERFECT_MAX_RATIO * (num_nodes + 1024);
}

/*
 * Does a forest of num_trees trees of depth at most max_depth and
 * num_nodes nodes surely fit the layout?  (Every tree at max_depth is the
 * most records it can take; the tuner asks this before it times a point.)
 */
bool
ReprPerfectFits(int32_t num_trees, int32_t max_depth, int64_t num_nodes)
{
	int32_t		h = max_depth;

	if (max_depth < 0 || max_depth >= 40)
		return false;
	while (h < 40 && (INT64_C(1) << (h - max_depth)) < num_trees)
		h++;
	return PerfectRecordsFit(PerfectRecords(h), num_nodes);
}

/*
 * Is perfect the default schedule's layout for the forest?  Float forests
 * it surely fits (XGBoost's and ONNX's depth-limited trees, such as higgs,
 * airline and year, 100 trees of depth 8) walk a little faster in it than
 * in array at 16 rows in lock-step, bit for bit the same margins; the
 * adapter races it against sparse on the model itself (default_race.c).
 */
static bool
PerfectDefaultFor(const Forest *forest)
{
	return forest->precision == FOREST_FLOAT32 &&
		ReprPerfectFits(forest->num_trees, forest->max_depth, forest->num_nodes);
}

/*
 * The leaf level H: the least with sum 2^d_t <= 2^H; false (status set)
 * when the records it takes are more than the layout allows
 */
static bool
PerfectLeafLevel(const Hir *hir, int32_t *height, SilvanStatus *status)
{
	int64_t		slots = 0;
	int32_t		h = 0;
	int64_t		records;

	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		if (hir->trees[t].depth >= 40)
			slots = PERFECT_MAX_RECORDS;
		else
			slots += INT64_C(1) << hir->trees[t].depth;
		if (slots >= PERFECT_MAX_RECORDS)
			break;
	}
	while ((INT64_C(1) << h) < slots)
		h++;
	records = PerfectRecords(h);
	*height = h;
	if (PerfectRecordsFit(records, hir->num_nodes))
		return true;
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED,
					  "model too deep for the perfect representation",
					  "Its %d trees padded to their depths need %lld records for %lld nodes; "
					  "the perfect layout takes at most %d records per node and %lld in all. "
					  "Use representation(array) or representation(sparse).",
					  hir->num_trees, (long long) records, (long long) hir->num_nodes,
					  PERFECT_MAX_RATIO, (long long) PERFECT_MAX_RECORDS);
}

/* Hang tree t at leaf slot *slot (a multiple of 2^depth) and move past its block */
static void
PerfectPlaceTree(const Hir *hir, ReprBuffers *buffers, const ReprRecord *recs, int32_t height,
				 int32_t t, int64_t *slot)
{
	int32_t		d = hir->trees[t].depth;
	int64_t		root = (INT64_C(1) << (height - d)) + (*slot >> d);
	PerfectPlace pl = {
		.recs = recs, .buffers = buffers, .precision = hir->forest->precision, .depth = d
	};

	PerfectPlaceNode(&pl, hir->trees[t].first_node, root, 0);
	buffers->trees[t].root = (int32_t) root;
	buffers->trees[t].depth = d;
	buffers->trees[t].fixed = d;
	buffers->trees[t].first = (int32_t) root;
	buffers->trees[t].count = 0;
	*slot += INT64_C(1) << d;
}

/* Hang every tree in its block of leaf slots, deepest trees first */
static void
PerfectPlaceTrees(const Hir *hir, ReprBuffers *buffers, const ReprRecord *recs, int32_t height)
{
	int32_t		deepest = 0;
	int64_t		slot = 0;

	for (int32_t t = 0; t < hir->num_trees; t++)
		deepest = hir->trees[t].depth > deepest ? hir->trees[t].depth : deepest;
	for (int32_t d = deepest; d >= 0; d--)
		for (int32_t t = 0; t < hir->num_trees; t++)
			if (hir->trees[t].depth == d)
				PerfectPlaceTree(hir, buffers, recs, height, t, &slot);
}

/*
 * Where keys were asked for (buffers->key_rows), and the records are PLAIN
 * floats and the forest's hops repay the keys (repr_keys.c): every split
 * record's bound becomes its key; leaves, on the last level, keep their
 * values.  Else key_rows is cleared.
 */
static void
PerfectStoreKeys(const Hir *hir, ReprBuffers *buffers)
{
	int64_t		hops = 0;

	for (int32_t t = 0; t < buffers->num_trees; t++)
		hops += buffers->trees[t].depth;
	buffers->key_rows = ReprKeysFit(buffers, hir->forest->precision) &&
		ReprKeysPay(hops, hir->forest->num_features);
	for (int64_t g = 1; buffers->key_rows && g < buffers->num_nodes / 2; g++)
	{
		ReprPerfectNode32 *rec = &((ReprPerfectNode32 *) buffers->nodes)[g];
		uint32_t	key = ReprKeyOfBound(rec->threshold);

		memcpy(&rec->threshold, &key, sizeof(key));
	}
}

/* Lay out every tree as a subtree of one implicit perfect tree */
static bool
PerfectBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	int32_t		height;
	ReprRecord *recs;
	bool		ok;

	if (hir->tiled != NULL)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED,
						  "tiled trees have no perfect representation",
						  "representation(perfect) walks one node per hop; use tileTrees(1), "
						  "or representation(array) or representation(reorg) with tiles.");
	if (!ReprBuildTables(hir, buffers, status) || !PerfectLeafLevel(hir, &height, status))
		return false;
	recs = ReprDescribeHir(hir, buffers, status);
	if (recs == NULL)
		return false;
	ReprChooseLayout(recs, hir->num_nodes, buffers, hir->forest->precision, true);
	buffers->node_size = ReprUnlinkedSize(buffers->layout, hir->forest->precision);
	buffers->num_nodes = PerfectRecords(height);
	if (ReprAlloc(buffers, REPR_BUFFER_NODES, (size_t) buffers->num_nodes + 1,
				  buffers->node_size) == NULL)
	{
		free(recs);
		return StatusNoMemory(status, "the compiled model's nodes");
	}
	ok = ReprAllocRecordOf(hir, buffers, status);
	if (ok)
		PerfectPlaceTrees(hir, buffers, recs, height);
	free(recs);
	if (ok && buffers->key_rows)
		PerfectStoreKeys(hir, buffers);
	return ok;
}

/* {T threshold, i32 feature_flags[, T sign]} */
static LLVMTypeRef
PerfectRecordType(CodegenContext *cg)
{
	return ReprUnlinkedType(cg->context, cg->forest->precision, cg->buffers->layout);
}

/* Field f (of type) of the record at v_record */
static LLVMValueRef
PerfectField(CodegenContext *cg, LLVMValueRef v_record, unsigned f, LLVMTypeRef type,
			 const char *name)
{
	return CgLoad(cg, type, LLVMBuildStructGEP2(cg->builder, cg->t_node, v_record, f, ""), name);
}

/* Load record v_index: threshold, feature_flags[, sign] */
static void
PerfectLoadNode(CodegenContext *cg, LLVMValueRef v_index, bool may_be_leaf, ReprNode *node)
{
	LLVMValueRef v_record = LLVMBuildGEP2(cg->builder, cg->t_node, cg->v_nodes, &v_index, 1,
										  "v_node");

	memset(node, 0, sizeof(ReprNode));
	node->v_index = v_index;
	node->v_record = v_record;
	node->v_threshold = PerfectField(cg, v_record, FIELDNO_UNLINKED_THRESHOLD, cg->t_value,
									 "v_threshold");
	node->v_fflags = PerfectField(cg, v_record, FIELDNO_UNLINKED_FEATURE, cg->t_i32, "v_feature");
	if (cg->buffers->layout == REPR_SPLIT_SIGN)
		node->v_sign = PerfectField(cg, v_record, FIELDNO_UNLINKED_SIGN, cg->t_value, "v_sign");
}

/*
 * Child 2g + (goes right): where the host adds with carry cheaply
 * (buffers->carry_hops), or compares integer keys (key_rows: cmp and adc
 * make the shortest hop), as llvm.x86.addcarry.64(goes right, g, g), which
 * x86 emits as one adc on the compare's carry flag; else as shl and add,
 * which it emits as xor, setb and lea.  (Integer compares of the
 * threshold and feature loaded as one 64-bit word are no faster.)
 */
static LLVMValueRef
PerfectMoveToChild(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_right = ReprGoRight(cg, node, v_row);
	LLVMTypeRef t_i8 = LLVMInt8TypeInContext(cg->context);
	LLVMTypeRef t_sum[2] = {t_i8, cg->t_i64};
	LLVMTypeRef t_params[3] = {t_i8, cg->t_i64, cg->t_i64};
	LLVMTypeRef t_fn;
	LLVMValueRef args[3];

	if (!cg->buffers->carry_hops && !cg->buffers->key_rows)
		return LLVMBuildAdd(b, LLVMBuildShl(b, node->v_index, CgInt64(cg, 1), ""),
							LLVMBuildZExt(b, v_right, cg->t_i64, ""), "v_child");
	t_fn = LLVMFunctionType(LLVMStructTypeInContext(cg->context, t_sum, 2, false),
							t_params, 3, false);
	args[0] = LLVMBuildZExt(b, v_right, t_i8, "");
	args[1] = node->v_index;
	args[2] = node->v_index;
	return LLVMBuildExtractValue(b, LLVMBuildCall2(b, t_fn, CgDeclare(cg, "llvm.x86.addcarry.64", t_fn),
												   args, 3, ""),
								 1, "v_child");
}

/* The split layout, and how a hop adds */
static const char *
PerfectVariant(const ReprBuffers *buffers)
{
	static const char *const with_carry[] = {
		"plain, hops add with carry", "sign, hops add with carry", "flags, hops add with carry"
	};

	if (buffers->key_rows)
		return "plain, integer keys, hops add with carry";
	return buffers->carry_hops ? with_carry[buffers->layout] : ReprRecordVariant(buffers);
}

/* Leaves are the last level: from record num_nodes / 2 on */
static LLVMValueRef
PerfectIsLeaf(CodegenContext *cg, const ReprNode *node)
{
	return LLVMBuildICmp(cg->builder, LLVMIntSGE, node->v_index,
						 CgInt64(cg, cg->buffers->num_nodes / 2), "v_is_leaf");
}

/* The value in a leaf's threshold slot */
static LLVMValueRef
PerfectLeafValue(CodegenContext *cg, LLVMValueRef v_index)
{
	LLVMValueRef v_record = LLVMBuildGEP2(cg->builder, cg->t_node, cg->v_nodes, &v_index, 1,
										  "v_node");

	return PerfectField(cg, v_record, FIELDNO_UNLINKED_THRESHOLD, cg->t_value, "v_leaf");
}

/* cacheTrees: the tree's first four levels, each level's records in a run */
static void
PerfectCacheTree(CodegenContext *cg, LLVMValueRef v_tree)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_root = LLVMBuildZExt(b, CgLoadTreeField(cg, v_tree, FIELDNO_REPRTREE_ROOT, ""),
										cg->t_i64, "");
	LLVMValueRef v_first = v_root;

	for (int32_t d = 0; d < 4 && (INT64_C(2) << d) <= cg->buffers->num_nodes; d++)
	{
		LLVMValueRef v_rec = LLVMBuildGEP2(b, cg->t_node, cg->v_nodes, &v_first, 1, "");

		ReprPrefetch(cg, LLVMBuildBitCast(b, v_rec, cg->t_i8p, ""),
					 CgInt64(cg, (INT64_C(1) << d) * (int64_t) cg->buffers->node_size), 1);
		v_first = LLVMBuildShl(b, v_first, CgInt64(cg, 1), "");
	}
}

const Representation ReprPerfect = {
	.name = "perfect",
	.build = PerfectBuild,
	.variant = PerfectVariant,
	.node_type = PerfectRecordType,
	.load_node = PerfectLoadNode,
	.move_to_child = PerfectMoveToChild,
	.is_leaf = PerfectIsLeaf,
	.leaf_value = PerfectLeafValue,
	.cache_tree = PerfectCacheTree,
	.vector_rows = true,
	.integer_keys = true,
	.fits = ReprPerfectFits,
	.default_rank = 1,
	.default_for = PerfectDefaultFor,
	.race_against = "sparse"
};
