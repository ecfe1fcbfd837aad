/*
 * repr_tiled.c
 *		Tiles (Treebeard section 3): records that hold several splits,
 *		evaluated together, with a lookup table giving the child.
 *
 * Preconditions: hir->tiled is a TiledForest of the HIR's forest (tiling.c
 * made it and checked it), tile size n in 2..8.
 *
 * A tile record is
 *
 *   { T thresholds[n]; int32 features[n]; [T signs[n];] int32 link; int32 lut_row }
 *
 * with C (ReprTileLayout) and LLVM (ReprTileType) agreeing on the layout:
 * natural alignment, signs only in the SIGN record layout; test_layout.c
 * checks it.  Slot k holds the split of the tile's k-th node
 * in level order, described exactly like a scalar split (repr_split.c);
 * padding slots repeat a split whose outcome never matters.  A leaf
 * record links to -1, has its value in thresholds[0] and the all-zero LUT
 * row.  Otherwise the link and where children go are the layout's business.
 *
 * Evaluating a tile: gather the n features of the row (a masked gather
 * where the host CPU has AVX2 or AVX-512, n scalar loads otherwise),
 * compare them with the thresholds in one vector compare, and pack the
 * outcomes (bit k set: slot k goes left) into the mask that indexes the
 * LUT row: LUT[lut_row][mask] is the child 0..n the walk takes.
 *
 *   PLAIN  left = x < b (unordered when NaN goes left), NaN read as 0 first
 *          for forests of the NONE rule
 *   SIGN   r = (x ^ sign) >= b or NaN, the scalar SIGN test; a mirrored
 *          split (NaN left, stored negated) cannot swap its children inside
 *          a tile, so its outcome is flipped instead: left = (r == mirrored)
 *   FLAGS  (categorical splits, the ZERO rule, mixed rules) each slot is
 *          evaluated by the scalar split code and the bits inserted
 *
 * The LUT is the tiling's compacted table (rows for the shapes in use)
 * copied to aux[1], plus one row of zeros after them that layouts use for
 * a tile that must always take its first child.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/tiling.h"

/* Round up to a multiple of a */
static size_t
AlignUp(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

/* Where the fields of a tile record lie (natural alignment, as LLVM lays it out) */
ReprTileOffsets
ReprTileLayout(int32_t n, ReprSplitLayout layout, ForestPrecision precision)
{
	size_t		t = precision == FOREST_FLOAT32 ? 4 : 8;
	ReprTileOffsets o;

	o.thresholds = 0;
	o.features = (size_t) n * t;
	o.signs = AlignUp(o.features + 4 * (size_t) n, t);
	o.link = layout == REPR_SPLIT_SIGN ? o.signs + (size_t) n * t : o.features + 4 * (size_t) n;
	o.link = AlignUp(o.link, 4);
	o.lut_row = o.link + 4;
	o.size = AlignUp(o.lut_row + 4, t);
	return o;
}

/*
 * Describe every slot of every tile and set up the tables, the record
 * layout, the node size and the LUT; the layout then places the records
 */
bool
ReprTilesBegin(const Hir *hir, ReprBuffers *buffers, ReprTiles *tiles, SilvanStatus *status)
{
	const TiledForest *tiled = hir->tiled;
	const Forest *forest = hir->forest;
	int32_t		n = tiled->tile_size;
	int64_t		slots = tiled->num_tiles * n;
	size_t		lut_bytes = ((size_t) tiled->num_lut_rows + 1) << n;

	memset(tiles, 0, sizeof(ReprTiles));
	tiles->hir = hir;
	tiles->n = n;
	if (!ReprBuildTables(hir, buffers, status))
		return false;
	/* padding slots repeat splits: room for a set per categorical slot */
	if (ReprRealloc(buffers, REPR_BUFFER_CATEGORY_SETS, (size_t) slots + 1,
					sizeof(ReprCategorySet)) == NULL)
		return StatusNoMemory(status, "the compiled model's category sets");
	tiles->recs = malloc(sizeof(ReprRecord) * (size_t) (slots + 1));
	if (tiles->recs == NULL || ReprAlloc(buffers, REPR_BUFFER_AUX0 + 1, lut_bytes, 1) == NULL)
		return StatusNoMemory(status, "the compiled model's tiles");
	for (int32_t t = 0; t < tiled->num_trees; t++)
	{
		const TiledTree *tt = &tiled->trees[t];
		const ForestNode *nodes = forest->nodes + forest->trees[tt->source].first_node;

		for (int64_t g = tt->first_tile; g < tt->first_tile + tt->num_tiles; g++)
			for (int32_t k = 0; k < n; k++)
				ReprDescribeNode(forest, &nodes[tiled->tile_nodes[g * n + k]], buffers,
								 &tiles->recs[g * n + k]);
	}
	ReprChooseLayout(tiles->recs, slots, buffers, forest->precision, false);
	buffers->tile_size = n;
	buffers->node_size = ReprTileLayout(n, buffers->layout, forest->precision).size;
	buffers->num_lut_rows = tiled->num_lut_rows;
	buffers->aux_count[1] = (int64_t) lut_bytes;
	memcpy(buffers->aux[1], tiled->lut, (size_t) tiled->num_lut_rows << n);
	return true;
}

/* Release the slot descriptions */
void
ReprTilesEnd(ReprTiles *tiles)
{
	free(tiles->recs);
	tiles->recs = NULL;
}

/* Store a value of the forest's precision at p */
static void
StoreValue(ForestPrecision precision, char *p, double v)
{
	if (precision == FOREST_FLOAT32)
	{
		float		f = (float) v;

		memcpy(p, &f, sizeof(f));
	}
	else
		memcpy(p, &v, sizeof(v));
}

/* Store tile (global number) in record slot, with the layout's link */
void
ReprStoreTile(const ReprTiles *tiles, ReprBuffers *buffers, int64_t slot, int64_t tile,
			  int32_t link, int32_t lut_row)
{
	ForestPrecision precision = tiles->hir->forest->precision;
	ReprTileOffsets o = ReprTileLayout(tiles->n, buffers->layout, precision);
	size_t		t = precision == FOREST_FLOAT32 ? 4 : 8;
	char	   *rec = (char *) buffers->nodes + (size_t) slot * buffers->node_size;

	for (int32_t k = 0; k < tiles->n; k++)
	{
		const ReprRecord *r = &tiles->recs[tile * tiles->n + k];
		uint32_t	ff = r->feature_flags;

		StoreValue(precision, rec + o.thresholds + k * t, r->threshold);
		if (r->categorical)		/* the set number in the threshold slot */
		{
			int64_t		set = r->set;

			memset(rec + o.thresholds + k * t, 0, t);
			memcpy(rec + o.thresholds + k * t, &set, t == 4 ? 4 : 8);
		}
		if (buffers->layout != REPR_SPLIT_FLAGS)
			ff &= 0x00FFFFFFu;
		memcpy(rec + o.features + 4 * k, &ff, 4);
		if (buffers->layout == REPR_SPLIT_SIGN)
			StoreValue(precision, rec + o.signs + k * t, r->mirrored ? -0.0 : 0.0);
	}
	memcpy(rec + o.link, &link, 4);
	memcpy(rec + o.lut_row, &lut_row, 4);
}

/*
 * Store a leaf record: link -1, the value in the first threshold, and the
 * all-zero LUT row, so that a walk evaluating it (a lane that stays at its
 * leaf) reads in bounds
 */
void
ReprStoreLeafTile(const ReprTiles *tiles, ReprBuffers *buffers, int64_t slot, double value)
{
	ForestPrecision precision = tiles->hir->forest->precision;
	ReprTileOffsets o = ReprTileLayout(tiles->n, buffers->layout, precision);
	char	   *rec = (char *) buffers->nodes + (size_t) slot * buffers->node_size;
	int32_t		minus_one = -1;
	int32_t		zero_row = buffers->num_lut_rows;

	memset(rec, 0, buffers->node_size);
	StoreValue(precision, rec + o.thresholds, value);
	memcpy(rec + o.link, &minus_one, 4);
	memcpy(rec + o.lut_row, &zero_row, 4);
}

/* Point a stored record elsewhere: a hop tile that always takes child 0 */
void
ReprSetTileLink(const ReprTiles *tiles, ReprBuffers *buffers, int64_t slot, int32_t link,
				int32_t lut_row)
{
	ReprTileOffsets o = ReprTileLayout(tiles->n, buffers->layout,
									   tiles->hir->forest->precision);
	char	   *rec = (char *) buffers->nodes + (size_t) slot * buffers->node_size;

	memcpy(rec + o.link, &link, 4);
	memcpy(rec + o.lut_row, &lut_row, 4);
}

/* Value of the leaf a TileRef names, in the tree at HIR position hir_tree */
double
ReprTileRefValue(const Hir *hir, int32_t hir_tree, int32_t ref)
{
	const Forest *forest = hir->forest;
	const ForestTree *ftree = &forest->trees[hir->trees[hir_tree].source];

	return forest->nodes[ftree->first_node + TILE_REF_LEAF(ref)].leaf_value;
}

/* {[n x T] thresholds, [n x i32] features, [[n x T] signs,] i32 link, i32 lut_row} */
LLVMTypeRef
ReprTileType(LLVMContextRef context, ForestPrecision precision, ReprSplitLayout layout,
			 int32_t n)
{
	LLVMTypeRef t_value = precision == FOREST_FLOAT32 ?
		LLVMFloatTypeInContext(context) : LLVMDoubleTypeInContext(context);
	LLVMTypeRef t_i32 = LLVMInt32TypeInContext(context);
	LLVMTypeRef fields[5];

	fields[FIELDNO_TILE_THRESHOLDS] = LLVMArrayType(t_value, (unsigned) n);
	fields[FIELDNO_TILE_FEATURES] = LLVMArrayType(t_i32, (unsigned) n);
	if (layout == REPR_SPLIT_SIGN)
		fields[FIELDNO_TILE_SIGNS] = LLVMArrayType(t_value, (unsigned) n);
	fields[FIELDNO_TILE_LINK(layout)] = t_i32;
	fields[FIELDNO_TILE_LUT_ROW(layout)] = t_i32;
	return LLVMStructTypeInContext(context, fields, FIELDNO_TILE_LUT_ROW(layout) + 1, false);
}

/* Load an array field of a tile record as a vector */
static LLVMValueRef
LoadVector(CodegenContext *cg, LLVMValueRef v_record, unsigned field, LLVMTypeRef t_elem,
		   const char *name)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_vec = LLVMVectorType(t_elem, (unsigned) cg->buffers->tile_size);
	LLVMValueRef v_ptr = LLVMBuildBitCast(b, LLVMBuildStructGEP2(b, cg->t_node, v_record,
																  field, ""),
										  LLVMPointerType(t_vec, 0), "");
	LLVMValueRef v = CgLoad(cg, t_vec, v_ptr, name);

	LLVMSetAlignment(v, t_elem == cg->t_i32 ? 4 : (unsigned) ForestValueSize(cg->forest));
	return v;
}

/* Load tile record v_index: thresholds, features, signs, link (i64), LUT row */
void
ReprLoadTile(CodegenContext *cg, LLVMValueRef v_index, ReprNode *node)
{
	LLVMBuilderRef b = cg->builder;
	ReprSplitLayout layout = cg->buffers->layout;
	LLVMValueRef v_record = LLVMBuildGEP2(b, cg->t_node, cg->v_nodes, &v_index, 1, "v_tile");

	memset(node, 0, sizeof(ReprNode));
	node->v_index = v_index;
	node->v_record = v_record;
	node->v_thresholds = LoadVector(cg, v_record, FIELDNO_TILE_THRESHOLDS, cg->t_value,
									"v_thresholds");
	node->v_features = LoadVector(cg, v_record, FIELDNO_TILE_FEATURES, cg->t_i32, "v_features");
	if (layout == REPR_SPLIT_SIGN)
		node->v_signs = LoadVector(cg, v_record, FIELDNO_TILE_SIGNS, cg->t_value, "v_signs");
	node->v_link = LLVMBuildSExt(b, CgLoad(cg, cg->t_i32,
										   LLVMBuildStructGEP2(b, cg->t_node, v_record,
															   FIELDNO_TILE_LINK(layout), ""),
										   ""), cg->t_i64, "v_link");
	node->v_lut_row = CgLoad(cg, cg->t_i32,
							 LLVMBuildStructGEP2(b, cg->t_node, v_record,
												 FIELDNO_TILE_LUT_ROW(layout), ""),
							 "v_lut_row");
}

/* The n features the tile's slots read: a gather, or n scalar loads */
static LLVMValueRef
GatherFeatures(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	unsigned	n = (unsigned) cg->buffers->tile_size;
	LLVMTypeRef t_vec = LLVMVectorType(cg->t_value, n);
	LLVMValueRef v_index = LLVMBuildZExt(b, node->v_features, LLVMVectorType(cg->t_i64, n), "");
	LLVMValueRef v_x = LLVMGetUndef(t_vec);

	if (cg->buffers->gather)
		return CgMaskedGather(cg, cg->t_value,
							  LLVMBuildGEP2(b, cg->t_value, v_row, &v_index, 1, "v_feature_ptrs"),
							  n, "v_x");
	for (unsigned k = 0; k < n; k++)
	{
		LLVMValueRef v_k = CgInt32(cg, k);
		LLVMValueRef v_f = LLVMBuildExtractElement(b, v_index, v_k, "");
		LLVMValueRef v_load = CgLoad(cg, cg->t_value,
									 LLVMBuildGEP2(b, cg->t_value, v_row, &v_f, 1, ""), "");

		v_x = LLVMBuildInsertElement(b, v_x, v_load, v_k, "v_x");
	}
	return v_x;
}

/* <n x i1>: which slots go left, evaluated one by one (FLAGS records) */
static LLVMValueRef
SlotsGoLeft(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	unsigned	n = (unsigned) cg->buffers->tile_size;
	LLVMValueRef v_left = LLVMGetUndef(LLVMVectorType(cg->t_i1, n));
	LLVMValueRef v_thr_array = LLVMBuildStructGEP2(b, cg->t_node, node->v_record,
												   FIELDNO_TILE_THRESHOLDS, "");

	for (unsigned k = 0; k < n; k++)
	{
		ReprNode	slot = {0};
		LLVMValueRef v_k = CgInt32(cg, k);
		LLVMValueRef v_idx[2] = {CgInt32(cg, 0), v_k};

		slot.v_index = node->v_index;
		slot.v_threshold = LLVMBuildExtractElement(b, node->v_thresholds, v_k, "");
		slot.v_fflags = LLVMBuildExtractElement(b, node->v_features, v_k, "");
		slot.v_record = LLVMBuildGEP2(b, LLVMArrayType(cg->t_value, n), v_thr_array,
									  v_idx, 2, "");
		v_left = LLVMBuildInsertElement(b, v_left,
										LLVMBuildNot(b, ReprGoRight(cg, &slot, v_row), ""),
										v_k, "v_left");
	}
	return v_left;
}

/* <n x i1>: which slots go left, in one vector compare (PLAIN, SIGN) */
static LLVMValueRef
VectorGoLeft(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	unsigned	n = (unsigned) cg->buffers->tile_size;
	uint32_t	has = cg->buffers->has;
	LLVMValueRef v_x = GatherFeatures(cg, node, v_row);

	if (cg->buffers->layout == REPR_SPLIT_SIGN)
	{
		LLVMTypeRef t_bits = LLVMVectorType(LLVMIntTypeInContext(cg->context,
																 (unsigned) ForestValueSize(cg->forest) * 8), n);
		LLVMValueRef v_sign_bits = LLVMBuildBitCast(b, node->v_signs, t_bits, "");
		LLVMValueRef v_y = LLVMBuildBitCast(b, LLVMBuildXor(b, LLVMBuildBitCast(b, v_x, t_bits, ""),
															v_sign_bits, ""),
											LLVMTypeOf(v_x), "v_y");
		LLVMValueRef v_right = LLVMBuildFCmp(b, LLVMRealUGE, v_y, node->v_thresholds, "");
		LLVMValueRef v_mirrored = LLVMBuildICmp(b, LLVMIntNE, v_sign_bits,
												LLVMConstNull(t_bits), "");

		return LLVMBuildICmp(b, LLVMIntEQ, v_right, v_mirrored, "v_left");
	}
	if (has & REPR_HAS_NAN_TO_ZERO)
		v_x = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, v_x, v_x, ""),
							  LLVMConstNull(LLVMTypeOf(v_x)), v_x, "v_x");
	return LLVMBuildFCmp(b, (has & REPR_HAS_DEFAULT_LEFT) ? LLVMRealULT : LLVMRealOLT,
						 v_x, node->v_thresholds, "v_left");
}

/* The child (i64, 0..n) the row leaves the loaded tile by: LUT[row][mask] */
LLVMValueRef
ReprTileChild(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	unsigned	n = (unsigned) cg->buffers->tile_size;
	LLVMValueRef v_left = cg->buffers->layout == REPR_SPLIT_FLAGS ?
		SlotsGoLeft(cg, node, v_row) : VectorGoLeft(cg, node, v_row);
	LLVMValueRef v_mask = LLVMBuildZExt(b, LLVMBuildBitCast(b, v_left,
															LLVMIntTypeInContext(cg->context, n), ""),
										cg->t_i64, "v_mask");
	LLVMValueRef v_entry = LLVMBuildOr(b, LLVMBuildShl(b, LLVMBuildZExt(b, node->v_lut_row,
																		cg->t_i64, ""),
													   CgInt64(cg, n), ""),
									   v_mask, "v_lut_entry");
	LLVMTypeRef t_i8 = LLVMInt8TypeInContext(cg->context);

	return LLVMBuildZExt(b, CgLoad(cg, t_i8, LLVMBuildGEP2(b, t_i8, cg->v_aux[1], &v_entry, 1, ""),
								   "v_lut"), cg->t_i64, "v_child_number");
}

/* Leaf records link to -1 */
LLVMValueRef
ReprTileIsLeafRecord(CodegenContext *cg, const ReprNode *node)
{
	return LLVMBuildICmp(cg->builder, LLVMIntSLT, node->v_link, CgInt64(cg, 0), "v_is_leaf");
}

/* A leaf record's value: its first threshold */
LLVMValueRef
ReprTileLeafValue(CodegenContext *cg, LLVMValueRef v_index)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_record = LLVMBuildGEP2(b, cg->t_node, cg->v_nodes, &v_index, 1, "v_tile");
	LLVMValueRef v_ptr = LLVMBuildBitCast(b, LLVMBuildStructGEP2(b, cg->t_node, v_record,
																  FIELDNO_TILE_THRESHOLDS, ""),
										  LLVMPointerType(cg->t_value, 0), "");

	return CgLoad(cg, cg->t_value, v_ptr, "v_leaf");
}

/* Name of the record layout build chose */
const char *
ReprRecordVariant(const ReprBuffers *buffers)
{
	return ReprSplitName(buffers->layout);
}

/* Split records, or tile records */
LLVMTypeRef
ReprRecordType(CodegenContext *cg)
{
	const ReprBuffers *b = cg->buffers;

	if (b->tile_size > 1)
		return ReprTileType(cg->context, cg->forest->precision, b->layout, b->tile_size);
	return ReprSplitType(cg->context, cg->forest->precision, b->layout);
}
