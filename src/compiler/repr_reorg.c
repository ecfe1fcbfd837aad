/*
 * repr_reorg.c
 *		The reorg representation (SilvanForge section 6, after RAPIDS FIL):
 *		trees as implicit complete binary trees, interleaved level by level.
 *
 * Position p of a tree has its children at 2p+1 and 2p+2, so no child
 * links are stored; position p of tree t (HIR order) is record
 * p * T + t for T trees, so all roots come first, then every tree's
 * position 1, and so on: the trees walked together in one loop step read
 * neighbouring records.  Every tree gets 2^(D+1) - 1 positions for the
 * deepest tree's depth D, which bounds the layout to shallow forests
 * (REORG_MAX_RECORDS); deeper ones are refused as unsupported.
 *
 * Records are repr_split.c's.  The link holds the tree's number on splits
 * (the walk needs t to step from p * T + t to (2p + 1 + right) * T + t)
 * and -1 on leaves, which is the leaf test.  Padding costs nothing here:
 * a padded leaf's positions below it exist anyway and get its copies.
 *
 * Tiled (tileTrees(n), n > 1): the same with complete (n+1)-ary trees of
 * tile records: position p's children are (n+1)p + 1 + e, leaves are leaf
 * records (link -1), and a tile's link is again its tree's number.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/tiling.h"

/* Most records the layout may take (positions times trees) */
#define REORG_MAX_RECORDS	(INT64_C(1) << 24)

/* Tiled placement state */
typedef struct ReorgTilePlace
{
	const Hir  *hir;
	ReprTiles  *tiles;
	ReprBuffers *buffers;
	int64_t		num_trees;
	int64_t		positions;
	int32_t		n;
} ReorgTilePlace;

/* Place tile ref (or leaf) at position p of tree t; track leaf hops */
static void
ReorgPlaceTile(const ReorgTilePlace *pl, int32_t t, const TiledTree *tt, TileRef ref,
			   int64_t p, int32_t level, ReprTree *rt)
{
	const TiledForest *tiled = pl->hir->tiled;
	int64_t		slot = p * pl->num_trees + t;
	int64_t		g;

	if (p >= pl->positions)
		return;					/* cannot happen: depth bounds positions */
	if (TILE_REF_IS_LEAF(ref))
	{
		ReprStoreLeafTile(pl->tiles, pl->buffers, slot, ReprTileRefValue(pl->hir, t, ref));
		rt->depth = level > rt->depth ? level : rt->depth;
		rt->fixed = level < rt->fixed ? level : rt->fixed;
		return;
	}
	g = tt->first_tile + ref;
	ReprStoreTile(pl->tiles, pl->buffers, slot, g, t, tiled->tile_lut_rows[g]);
	for (int32_t e = 0; e <= pl->n; e++)
		ReorgPlaceTile(pl, t, tt, tiled->tile_children[g * (pl->n + 1) + e],
					   (pl->n + 1) * p + 1 + e, level + 1, rt);
}

/* Lay out tiled trees at their implicit positions, interleaved */
static bool
ReorgTiledBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	const TiledForest *tiled = hir->tiled;
	int32_t		n = tiled->tile_size;
	int32_t		depth = 0;
	int64_t		positions = 0;
	int64_t		width = 1;
	ReprTiles	tiles;
	ReorgTilePlace pl;

	for (int32_t t = 0; t < tiled->num_trees; t++)
		depth = tiled->trees[t].depth > depth ? tiled->trees[t].depth : depth;
	for (int32_t l = 0; l <= depth && positions <= REORG_MAX_RECORDS; l++)
	{
		positions += width;
		width *= n + 1;
	}
	if (positions > REORG_MAX_RECORDS / (hir->num_trees > 0 ? hir->num_trees : 1))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED,
						  "model too deep for the reorg representation",
						  "Trees %d tiles deep need %lld positions each for %d trees; "
						  "the reorg layout holds at most %lld records. "
						  "Use representation(array) or representation(sparse).",
						  depth, (long long) positions, hir->num_trees,
						  (long long) REORG_MAX_RECORDS);
	if (!ReprTilesBegin(hir, buffers, &tiles, status))
	{
		ReprTilesEnd(&tiles);
		return false;
	}
	buffers->num_nodes = positions * hir->num_trees;
	ReprAlloc(buffers, REPR_BUFFER_NODES, (size_t) buffers->num_nodes + 1, buffers->node_size);
	if (buffers->nodes == NULL)
	{
		ReprTilesEnd(&tiles);
		return StatusNoMemory(status, "the compiled model's tiles");
	}
	pl = (ReorgTilePlace) {
		.hir = hir, .tiles = &tiles, .buffers = buffers,
		.num_trees = hir->num_trees, .positions = positions, .n = n
	};
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		const TiledTree *tt = &tiled->trees[hir->trees[t].source];
		ReprTree   *rt = &buffers->trees[t];

		rt->root = rt->first = t;
		rt->count = 0;
		rt->depth = 0;
		rt->fixed = INT32_MAX;
		ReorgPlaceTile(&pl, t, tt, tt->root, 0, 0, rt);
	}
	ReprTilesEnd(&tiles);
	return true;
}

/* Placement state */
typedef struct ReorgPlace
{
	const ReprRecord *recs;
	const ReprBuffers *buffers;
	ForestPrecision precision;
	int64_t		num_trees;
	int64_t		positions;
} ReorgPlace;

/* Store list entry e at position p of tree t, and its subtree below */
static void
ReorgPlaceNode(const ReorgPlace *pl, int64_t e, int64_t p, int32_t t)
{
	const ReprRecord *rec = &pl->recs[e];

	if (p >= pl->positions)
		return;					/* cannot happen: depth bounds positions */
	ReprStoreRecord(rec, pl->buffers->layout, pl->precision, pl->buffers->nodes,
					p * pl->num_trees + t, rec->leaf ? -1 : t);
	if (rec->hir >= 0)
		pl->buffers->record_of[rec->hir] = p * pl->num_trees + t;
	if (rec->leaf)
		return;
	ReorgPlaceNode(pl, rec->link, 2 * p + 1, t);
	ReorgPlaceNode(pl, rec->link + 1, 2 * p + 2, t);
}

/* Lay out every tree at its implicit positions, interleaved */
static bool
ReorgBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	ForestPrecision precision = hir->forest->precision;
	int32_t		depth = 0;
	int64_t		positions;
	ReprRecord *recs;
	ReorgPlace	pl;

	if (hir->tiled != NULL)
		return ReorgTiledBuild(hir, buffers, status);
	if (!ReprBuildTables(hir, buffers, status))
		return false;
	for (int32_t t = 0; t < hir->num_trees; t++)
		depth = hir->trees[t].depth > depth ? hir->trees[t].depth : depth;
	positions = depth < 40 ? (INT64_C(2) << depth) - 1 : REORG_MAX_RECORDS + 1;
	if (positions > REORG_MAX_RECORDS / (hir->num_trees > 0 ? hir->num_trees : 1))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED,
						  "model too deep for the reorg representation",
						  "Trees of depth %d need %lld positions each for %d trees; "
						  "the reorg layout holds at most %lld records. "
						  "Use representation(array) or representation(sparse).",
						  depth, (long long) positions, hir->num_trees,
						  (long long) REORG_MAX_RECORDS);
	if ((recs = ReprDescribeHir(hir, buffers, status)) == NULL)
		return false;
	ReprChooseLayout(recs, hir->num_nodes, buffers, precision, true);
	buffers->num_nodes = positions * hir->num_trees;
	ReprAlloc(buffers, REPR_BUFFER_NODES, (size_t) buffers->num_nodes + 1, buffers->node_size);
	if (buffers->nodes == NULL)
	{
		free(recs);
		return StatusNoMemory(status, "the compiled model's nodes");
	}
	if (!ReprAllocRecordOf(hir, buffers, status))
	{
		free(recs);
		return false;
	}
	pl = (ReorgPlace) {
		.recs = recs, .buffers = buffers, .precision = precision,
		.num_trees = hir->num_trees, .positions = positions
	};
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		ReorgPlaceNode(&pl, hir->trees[t].first_node, 0, t);
		buffers->trees[t].root = t;
		buffers->trees[t].first = t;
		buffers->trees[t].count = 0;
	}
	free(recs);
	return true;
}

/* Load the record at v_index (leaves are records too); link is signed */
static void
ReorgLoadNode(CodegenContext *cg, LLVMValueRef v_index, bool may_be_leaf, ReprNode *node)
{
	if (cg->buffers->tile_size > 1)
		ReprLoadTile(cg, v_index, node);
	else
		ReprLoadSplit(cg, v_index, true, node);
}

/*
 * Child e of position p of tree t is ((k p + 1 + e) T + t) for k children
 * per node: from index = p T + t, that is k * index - (k - 1) t + (1 + e) T
 */
static LLVMValueRef
ReorgMoveToChild(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMBuilderRef b = cg->builder;
	int64_t		k = cg->buffers->tile_size > 1 ? cg->buffers->tile_size + 1 : 2;
	LLVMValueRef v_trees = CgInt64(cg, cg->buffers->num_trees);
	LLVMValueRef v_e = cg->buffers->tile_size > 1 ? ReprTileChild(cg, node, v_row) :
		LLVMBuildZExt(b, ReprGoRight(cg, node, v_row), cg->t_i64, "");
	LLVMValueRef v_scaled = LLVMBuildSub(b, LLVMBuildMul(b, node->v_index, CgInt64(cg, k), ""),
										 LLVMBuildMul(b, node->v_link, CgInt64(cg, k - 1), ""),
										 "");

	return LLVMBuildAdd(b, v_scaled,
						LLVMBuildMul(b, LLVMBuildAdd(b, v_e, CgInt64(cg, 1), ""),
									 v_trees, ""), "v_child");
}

/* Leaves link to -1 (split records and tile records alike) */
static LLVMValueRef
ReorgIsLeaf(CodegenContext *cg, const ReprNode *node)
{
	if (cg->buffers->tile_size > 1)
		return ReprTileIsLeafRecord(cg, node);
	return LLVMBuildICmp(cg->builder, LLVMIntSLT, node->v_link, CgInt64(cg, 0), "v_is_leaf");
}

/* The value in a leaf's threshold slot */
static LLVMValueRef
ReorgLeafValue(CodegenContext *cg, LLVMValueRef v_index)
{
	if (cg->buffers->tile_size > 1)
		return ReprTileLeafValue(cg, v_index);
	return ReprLoadThreshold(cg, v_index);
}

/* cacheTrees: the tree's first four levels, one record each, strided */
static void
ReorgCacheTree(CodegenContext *cg, LLVMValueRef v_tree)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_t = LLVMBuildZExt(b, CgLoadTreeField(cg, v_tree, FIELDNO_REPRTREE_FIRST, ""),
									 cg->t_i64, "");
	int64_t		positions = cg->buffers->num_trees > 0 ?
		cg->buffers->num_nodes / cg->buffers->num_trees : 0;

	for (int64_t p = 0; p < 15 && p < positions; p++)
	{
		LLVMValueRef v_idx = LLVMBuildAdd(b, v_t, CgInt64(cg, p * cg->buffers->num_trees), "");
		LLVMValueRef v_rec = LLVMBuildGEP2(b, cg->t_node, cg->v_nodes, &v_idx, 1, "");

		ReprPrefetch(cg, LLVMBuildBitCast(b, v_rec, cg->t_i8p, ""), CgInt64(cg, 1), 1);
	}
}

const Representation ReprReorg = {
	.name = "reorg",
	.build = ReorgBuild,
	.variant = ReprRecordVariant,
	.node_type = ReprRecordType,
	.load_node = ReorgLoadNode,
	.move_to_child = ReorgMoveToChild,
	.is_leaf = ReorgIsLeaf,
	.leaf_value = ReorgLeafValue,
	.cache_tree = ReorgCacheTree,
	.tree_tiles = true,
	.gpu = true
};
