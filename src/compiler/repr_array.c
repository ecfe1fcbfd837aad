/*
 * repr_array.c
 *		The array representation: one record per HIR node, in HIR order.
 *
 * Records are repr_split.c's, one per HIR node at the HIR node's global
 * index, so a tree's nodes are contiguous, level by level, with siblings
 * adjacent.  A split's link is the global index of its left child (the
 * right one is link + 1).  A leaf holds its value in the threshold slot and
 * links to itself, which is also the leaf test; a walk that keeps moving
 * from a leaf would leave it, which is why the checked walk keeps lanes at
 * leaves.  Padding nodes are splits whose two children are the same.
 *
 * Tiled (tileTrees(n), n > 1): every tree is a root record followed, tile
 * by tile in breadth-first order, by the n + 1 records of each tile's
 * children, so a tile links to its first child and the walk moves to
 * link + LUT[row][mask].  Leaves are records too (link -1), one per
 * child slot that names them, which is the leaf test.  A depth padding
 * tile is named by all n + 1 child slots of the tile above it; each slot
 * gets a copy of its record, and the copies share one block of children.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/tiling.h"

/* Lay out every tree as its root record and its tiles' children */
static bool
ArrayTiledBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	const TiledForest *tiled = hir->tiled;
	int32_t		n = tiled->tile_size;
	ReprTiles	tiles;
	int64_t		slots = 0;
	int64_t		next = 0;
	int64_t    *queue = NULL;
	int32_t    *level = NULL;
	int64_t    *block = NULL;

	if (!ReprTilesBegin(hir, buffers, &tiles, status))
	{
		ReprTilesEnd(&tiles);
		return false;
	}
	for (int32_t t = 0; t < tiled->num_trees; t++)
		slots += 1 + (int64_t) tiled->trees[t].num_tiles * (n + 1);
	if (slots > INT32_MAX)
	{
		ReprTilesEnd(&tiles);
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "model too large to compile",
						  "The tiled layout would need more than %d records.", INT32_MAX);
	}
	buffers->num_nodes = slots;
	ReprAlloc(buffers, REPR_BUFFER_NODES, (size_t) slots + 1, buffers->node_size);
	queue = malloc(sizeof(int64_t) * 2 * ((size_t) tiled->num_tiles * (n + 1) + 1));
	level = malloc(sizeof(int32_t) * ((size_t) tiled->num_tiles * (n + 1) + 1));
	block = malloc(sizeof(int64_t) * ((size_t) tiled->num_tiles + 1));
	if (buffers->nodes == NULL || queue == NULL || level == NULL || block == NULL)
	{
		free(queue);
		free(level);
		free(block);
		ReprTilesEnd(&tiles);
		return StatusNoMemory(status, "the compiled model's tiles");
	}
	for (int64_t g = 0; g < tiled->num_tiles; g++)
		block[g] = -1;
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		const TiledTree *tt = &tiled->trees[hir->trees[t].source];
		ReprTree   *rt = &buffers->trees[t];
		int64_t		head = 0;
		int64_t		tail = 0;

		rt->root = rt->first = (int32_t) next;
		rt->depth = 0;
		rt->fixed = INT32_MAX;
		if (TILE_REF_IS_LEAF(tt->root))
		{
			ReprStoreLeafTile(&tiles, buffers, next++, ReprTileRefValue(hir, t, tt->root));
			rt->fixed = 0;
		}
		else
		{
			queue[tail * 2] = 0;
			queue[tail * 2 + 1] = next++;
			level[tail++] = 0;
		}
		while (head < tail)
		{
			int64_t		g = tt->first_tile + queue[head * 2];
			int64_t		slot = queue[head * 2 + 1];
			int32_t		lv = level[head++];
			int64_t		base = block[g] >= 0 ? block[g] : next;

			ReprStoreTile(&tiles, buffers, slot, g, (int32_t) base, tiled->tile_lut_rows[g]);
			if (block[g] >= 0)
				continue;		/* a copy: its children are laid out already */
			block[g] = base;
			next += n + 1;
			for (int32_t e = 0; e <= n; e++)
			{
				TileRef		ref = tiled->tile_children[g * (n + 1) + e];

				if (TILE_REF_IS_LEAF(ref))
				{
					ReprStoreLeafTile(&tiles, buffers, base + e, ReprTileRefValue(hir, t, ref));
					rt->depth = lv + 1 > rt->depth ? lv + 1 : rt->depth;
					rt->fixed = lv + 1 < rt->fixed ? lv + 1 : rt->fixed;
					continue;
				}
				queue[tail * 2] = ref;
				queue[tail * 2 + 1] = base + e;
				level[tail++] = lv + 1;
			}
		}
		rt->count = (int32_t) (next - rt->first);
	}
	free(queue);
	free(level);
	free(block);
	ReprTilesEnd(&tiles);
	return true;
}

/* Lay out the HIR's nodes as records, in HIR order */
static bool
ArrayBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	ForestPrecision precision = hir->forest->precision;
	ReprRecord *recs;

	if (hir->tiled != NULL)
		return ArrayTiledBuild(hir, buffers, status);
	if (!ReprBuildTables(hir, buffers, status))
		return false;
	if ((recs = ReprDescribeHir(hir, buffers, status)) == NULL)
		return false;
	ReprChooseLayout(recs, hir->num_nodes, buffers, precision, true);
	buffers->num_nodes = hir->num_nodes;
	ReprAlloc(buffers, REPR_BUFFER_NODES, (size_t) hir->num_nodes + 1, buffers->node_size);
	if (buffers->nodes == NULL)
	{
		free(recs);
		return StatusNoMemory(status, "the compiled model's nodes");
	}
	for (int64_t i = 0; i < hir->num_nodes; i++)
		ReprStoreRecord(&recs[i], buffers->layout, precision, buffers->nodes, i,
						recs[i].leaf ? (int32_t) i : recs[i].link);
	if (!ReprAllocRecordOf(hir, buffers, status))
	{
		free(recs);
		return false;
	}
	/* siblings may have swapped places (ReprChooseLayout): follow the records */
	for (int64_t i = 0; i < hir->num_nodes; i++)
		if (recs[i].hir >= 0)
			buffers->record_of[recs[i].hir] = i;
	free(recs);
	return true;
}

/* Load the record at v_index; leaves are records too, so always safe */
static void
ArrayLoadNode(CodegenContext *cg, LLVMValueRef v_index, bool may_be_leaf, ReprNode *node)
{
	if (cg->buffers->tile_size > 1)
		ReprLoadTile(cg, v_index, node);
	else
		ReprLoadSplit(cg, v_index, false, node);
}

/* Index of the child the row leads to: link + (go right), or link + LUT */
static LLVMValueRef
ArrayMoveToChild(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMValueRef v_step = cg->buffers->tile_size > 1 ? ReprTileChild(cg, node, v_row) :
		LLVMBuildZExt(cg->builder, ReprGoRight(cg, node, v_row), cg->t_i64, "");

	return LLVMBuildAdd(cg->builder, node->v_link, v_step, "v_child");
}

/* Leaves link to themselves; leaf tile records link to -1 */
static LLVMValueRef
ArrayIsLeaf(CodegenContext *cg, const ReprNode *node)
{
	if (cg->buffers->tile_size > 1)
		return ReprTileIsLeafRecord(cg, node);
	return LLVMBuildICmp(cg->builder, LLVMIntEQ, node->v_link, node->v_index, "v_is_leaf");
}

/* The value in a leaf's threshold slot */
static LLVMValueRef
ArrayLeafValue(CodegenContext *cg, LLVMValueRef v_index)
{
	if (cg->buffers->tile_size > 1)
		return ReprTileLeafValue(cg, v_index);
	return ReprLoadThreshold(cg, v_index);
}

const Representation ReprArray = {
	.name = "array",
	.build = ArrayBuild,
	.variant = ReprRecordVariant,
	.node_type = ReprRecordType,
	.load_node = ArrayLoadNode,
	.move_to_child = ArrayMoveToChild,
	.is_leaf = ArrayIsLeaf,
	.leaf_value = ArrayLeafValue,
	.cache_tree = ReprCacheRecords,
	.tree_tiles = true,
	.gpu = true,
	.default_rank = 2,			/* every forest's, where perfect does not fit */
	.race_against = "sparse"
};
