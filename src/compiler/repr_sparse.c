/*
 * repr_sparse.c
 *		The sparse representation (Treebeard section 3.8.2): split records
 *		with explicit child links, leaves in an array of their own.
 *
 * Each tree becomes a list of entries in breadth-first order in which a
 * node's two children are adjacent, as in the HIR; the twin copies of a
 * padding chain share their children, so padding stays linear.  Where a
 * leaf's sibling is a split, the leaf is replaced by a dummy split whose
 * two children are copies of it (an extra hop, as in Treebeard), so that
 * both children of every split are splits or both are leaves.  Split
 * entries are then numbered 0..N-1 in list order and stored as records in
 * the nodes array; leaf entries are numbered N.. and their values stored
 * in a separate array (aux[0]).  A split's link is the number of its first
 * child, so the leaf test is index >= N and needs no load, and a walk's
 * last hop never touches a leaf record.  No leaf moves above the level the
 * HIR padded to (a dummy only pushes a leaf one level down, never below the
 * tree's depth, because its sibling split has children).
 *
 * A checked walk may load at a lane that reached a leaf; load_node then
 * reads record 0 instead, whose outcome the walk discards.
 *
 * Tiled (tileTrees(n), n > 1), as Treebeard's sparse tiled layout: tile
 * records 0..N-1 and leaf values numbered from N.  A tile's n + 1 children
 * are adjacent: all in the leaf array when they are all leaves, otherwise
 * tile records, where a leaf child becomes a hop tile (an extra hop, whose
 * LUT row is all zeros and whose one child is the leaf).  A depth padding
 * tile named by all n + 1 children of the tile above gets n + 1 copies of
 * its record, which share one block of children.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/tiling.h"

/* Are all n + 1 children of tile g leaves? */
static bool
AllLeaves(const TiledForest *tiled, int64_t g)
{
	int32_t		n = tiled->tile_size;

	for (int32_t e = 0; e <= n; e++)
		if (!TILE_REF_IS_LEAF(tiled->tile_children[g * (n + 1) + e]))
			return false;
	return true;
}

/* Store a leaf value (of the forest's precision) at leaf number k */
static void
StoreLeafValue(const Hir *hir, ReprBuffers *buffers, int64_t k, double v)
{
	if (hir->forest->precision == FOREST_FLOAT32)
		((float *) buffers->aux[0])[k] = (float) v;
	else
		((double *) buffers->aux[0])[k] = v;
}

/* Count the tile records and leaves the layout needs */
static void
SparseTiledCount(const TiledForest *tiled, int64_t *num_tiles, int64_t *num_leaves)
{
	int32_t		n = tiled->tile_size;

	*num_tiles = *num_leaves = 0;
	for (int32_t t = 0; t < tiled->num_trees; t++)
	{
		const TiledTree *tt = &tiled->trees[t];

		if (TILE_REF_IS_LEAF(tt->root))
		{
			(*num_leaves)++;
			continue;
		}
		(*num_tiles)++;
		for (int64_t g = tt->first_tile; g < tt->first_tile + tt->num_tiles; g++)
		{
			if (AllLeaves(tiled, g))
			{
				*num_leaves += n + 1;
				continue;
			}
			*num_tiles += n + 1;
			for (int32_t e = 0; e <= n; e++)
				*num_leaves += TILE_REF_IS_LEAF(tiled->tile_children[g * (n + 1) + e]);
		}
	}
}

/* Lay out one tree breadth first; leaf and tile counters advance */
static void
SparseTiledTree(const Hir *hir, int32_t t, ReprTiles *tiles, ReprBuffers *buffers,
				int64_t *next_tile, int64_t *next_leaf, int64_t *queue, int32_t *level,
				int64_t *block)
{
	const TiledForest *tiled = hir->tiled;
	const TiledTree *tt = &tiled->trees[hir->trees[t].source];
	ReprTree   *rt = &buffers->trees[t];
	int32_t		n = tiled->tile_size;
	int64_t		nt = buffers->num_splits;
	int64_t		head = 0;
	int64_t		tail = 0;

	rt->depth = 0;
	rt->fixed = INT32_MAX;
	if (TILE_REF_IS_LEAF(tt->root))
	{
		StoreLeafValue(hir, buffers, *next_leaf, ReprTileRefValue(hir, t, tt->root));
		rt->root = (int32_t) (nt + (*next_leaf)++);
		rt->first = rt->count = rt->fixed = 0;
		return;
	}
	rt->root = rt->first = (int32_t) *next_tile;
	queue[tail * 2] = 0;
	queue[tail * 2 + 1] = (*next_tile)++;
	level[tail++] = 0;
	while (head < tail)
	{
		int64_t		g = tt->first_tile + queue[head * 2];
		int64_t		slot = queue[head * 2 + 1];
		int32_t		lv = level[head++];
		bool		leaves = AllLeaves(tiled, g);
		int64_t		base = block[g] >= 0 ? block[g] : leaves ? nt + *next_leaf : *next_tile;

		ReprStoreTile(tiles, buffers, slot, g, (int32_t) base, tiled->tile_lut_rows[g]);
		if (block[g] >= 0)
			continue;			/* a copy: its children are laid out already */
		block[g] = base;
		if (leaves)
			*next_leaf += n + 1;
		else
			*next_tile += n + 1;
		for (int32_t e = 0; e <= n; e++)
		{
			TileRef		ref = tiled->tile_children[g * (n + 1) + e];
			int32_t		hops = lv + 1;

			if (!TILE_REF_IS_LEAF(ref))
			{
				queue[tail * 2] = ref;
				queue[tail * 2 + 1] = base + e;
				level[tail++] = lv + 1;
				continue;
			}
			if (leaves)
				StoreLeafValue(hir, buffers, base - nt + e, ReprTileRefValue(hir, t, ref));
			else
			{
				/* a hop tile whose one child is the leaf */
				ReprStoreLeafTile(tiles, buffers, base + e, 0.0);
				ReprSetTileLink(tiles, buffers, base + e, (int32_t) (nt + *next_leaf),
								buffers->num_lut_rows);
				StoreLeafValue(hir, buffers, (*next_leaf)++, ReprTileRefValue(hir, t, ref));
				hops++;
			}
			rt->depth = hops > rt->depth ? hops : rt->depth;
			rt->fixed = hops < rt->fixed ? hops : rt->fixed;
		}
	}
	rt->count = (int32_t) (*next_tile - rt->first);
}

/* Lay out tiles and leaves */
static bool
SparseTiledBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	const TiledForest *tiled = hir->tiled;
	ReprTiles	tiles;
	int64_t		num_tiles;
	int64_t		num_leaves;
	int64_t		next_tile = 0;
	int64_t		next_leaf = 0;
	int64_t    *queue;
	int32_t    *level;
	int64_t    *block;
	size_t		n1 = (size_t) tiled->tile_size + 1;

	if (!ReprTilesBegin(hir, buffers, &tiles, status))
	{
		ReprTilesEnd(&tiles);
		return false;
	}
	SparseTiledCount(tiled, &num_tiles, &num_leaves);
	if (num_tiles + num_leaves > INT32_MAX)
	{
		ReprTilesEnd(&tiles);
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "model too large to compile",
						  "The sparse tiled layout would need more than %d entries.", INT32_MAX);
	}
	buffers->num_nodes = buffers->num_splits = num_tiles;
	buffers->num_leaves = num_leaves;
	ReprAlloc(buffers, REPR_BUFFER_NODES, (size_t) num_tiles + 1, buffers->node_size);
	ReprAlloc(buffers, REPR_BUFFER_AUX0, (size_t) num_leaves + 1, ForestValueSize(hir->forest));
	buffers->aux_count[0] = num_leaves;
	queue = malloc(sizeof(int64_t) * 2 * ((size_t) tiled->num_tiles * n1 + 1));
	level = malloc(sizeof(int32_t) * ((size_t) tiled->num_tiles * n1 + 1));
	block = malloc(sizeof(int64_t) * ((size_t) tiled->num_tiles + 1));
	if (buffers->nodes == NULL || buffers->aux[0] == NULL || queue == NULL || level == NULL ||
		block == NULL)
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
		SparseTiledTree(hir, t, &tiles, buffers, &next_tile, &next_leaf, queue, level, block);
	free(queue);
	free(level);
	free(block);
	ReprTilesEnd(&tiles);
	return true;
}

/* One entry of the list: an HIR node, or a dummy hop above a leaf */
typedef struct SparseEntry
{
	int64_t		hir;			/* HIR node (for a dummy: the leaf it repeats) */
	bool		dummy;
	bool		leaf;
} SparseEntry;

/* What building the list needs */
typedef struct SparseList
{
	SparseEntry *entries;
	ReprRecord *recs;
	int64_t		count;
	int64_t		cap;
} SparseList;

/* Append an entry; false when out of memory */
static bool
SparsePush(SparseList *list, int64_t hir, bool dummy, bool leaf)
{
	if (list->count == list->cap)
	{
		int64_t		cap = list->cap ? list->cap * 2 : 1024;
		SparseEntry *e = realloc(list->entries, sizeof(SparseEntry) * (size_t) cap);
		ReprRecord *r = e ? realloc(list->recs, sizeof(ReprRecord) * (size_t) cap) : NULL;

		if (e)
			list->entries = e;
		if (r == NULL)
			return false;
		list->recs = r;
		list->cap = cap;
	}
	list->entries[list->count++] = (SparseEntry) {
		.hir = hir, .dummy = dummy, .leaf = leaf
	};
	return true;
}

/* Is global HIR node i a leaf? */
static bool
HirIsLeaf(const Hir *hir, int64_t i)
{
	return !hir->nodes[i].padding &&
		hir->forest->nodes[hir->nodes[i].source].kind == FOREST_NODE_LEAF;
}

/*
 * The entries of one tree, breadth first from its root at list->count;
 * each split entry's record gets link = list index of its first child
 */
static bool
SparseTree(const Hir *hir, const HirTree *tree, ReprBuffers *buffers, SparseList *list)
{
	int64_t		start = list->count;

	if (!SparsePush(list, tree->first_node, false, HirIsLeaf(hir, tree->first_node)))
		return false;
	for (int64_t e = start; e < list->count; e++)
	{
		SparseEntry entry = list->entries[e];
		int64_t		c0;
		int64_t		c1;
		bool		leaf0;
		bool		leaf1;

		if (entry.dummy)
		{
			memset(&list->recs[e], 0, sizeof(ReprRecord));
			list->recs[e].link = (int32_t) list->count;
			list->recs[e].hir = -1;
			if (!SparsePush(list, entry.hir, false, true) ||
				!SparsePush(list, entry.hir, false, true))
				return false;
			continue;
		}
		ReprDescribe(hir, entry.hir, buffers, &list->recs[e]);
		if (entry.leaf)
			continue;
		if (hir->nodes[entry.hir].copy && e > start && !list->entries[e - 1].dummy &&
			list->entries[e - 1].hir + 1 == entry.hir)
		{
			/* the twin of a padding chain shares its sibling's children */
			list->recs[e].link = list->recs[e - 1].link;
			continue;
		}
		c0 = tree->first_node + hir->nodes[entry.hir].left;
		c1 = c0 + 1;
		leaf0 = HirIsLeaf(hir, c0);
		leaf1 = HirIsLeaf(hir, c1);
		list->recs[e].link = (int32_t) list->count;
		if (!SparsePush(list, c0, leaf0 && !leaf1, leaf0 && leaf1) ||
			!SparsePush(list, c1, leaf1 && !leaf0, leaf0 && leaf1))
			return false;
	}
	return true;
}

/* Number the entries: splits 0..N-1, leaves N.. in list order */
static int64_t *
SparseNumber(const SparseList *list, int64_t *num_splits)
{
	int64_t    *number = malloc(sizeof(int64_t) * (size_t) (list->count + 1));
	int64_t		splits = 0;
	int64_t		leaves = 0;

	if (number == NULL)
		return NULL;
	for (int64_t e = 0; e < list->count; e++)
		if (!list->recs[e].leaf)
			splits++;
	for (int64_t e = 0; e < list->count; e++)
		number[e] = list->recs[e].leaf ? splits + leaves++ : 0;
	splits = 0;
	for (int64_t e = 0; e < list->count; e++)
		if (!list->recs[e].leaf)
			number[e] = splits++;
	*num_splits = splits;
	return number;
}

/* Store the numbered entries: split records, then leaf values */
static bool
SparseStore(const Hir *hir, const SparseList *list, const int64_t *number,
			ReprBuffers *buffers, SilvanStatus *status)
{
	ForestPrecision precision = hir->forest->precision;
	int64_t		n = buffers->num_splits;

	buffers->num_leaves = list->count - n;
	buffers->num_nodes = n;
	ReprAlloc(buffers, REPR_BUFFER_NODES, (size_t) n + 1, buffers->node_size);
	ReprAlloc(buffers, REPR_BUFFER_AUX0, (size_t) buffers->num_leaves + 1, ForestValueSize(hir->forest));
	buffers->aux_count[0] = buffers->num_leaves;
	if (n + buffers->num_leaves > INT32_MAX)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "model too large to compile",
						  "The sparse layout would need more than %d entries.", INT32_MAX);
	if (buffers->nodes == NULL || buffers->aux[0] == NULL)
		return StatusNoMemory(status, "the compiled model's nodes");
	for (int64_t e = 0; e < list->count; e++)
	{
		const ReprRecord *rec = &list->recs[e];

		if (!rec->leaf)
			ReprStoreRecord(rec, buffers->layout, precision, buffers->nodes, number[e],
							(int32_t) number[rec->link]);
		else if (precision == FOREST_FLOAT32)
			((float *) buffers->aux[0])[number[e] - n] = (float) rec->threshold;
		else
			((double *) buffers->aux[0])[number[e] - n] = rec->threshold;
	}
	return true;
}

/* Lay out the HIR as split records and leaf values */
static bool
SparseBuild(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	SparseList	list = {0};
	int64_t    *first = NULL;
	int64_t    *number = NULL;
	bool		ok = false;

	if (hir->tiled != NULL)
		return SparseTiledBuild(hir, buffers, status);
	if (!ReprBuildTables(hir, buffers, status))
		return false;
	first = malloc(sizeof(int64_t) * ((size_t) hir->num_trees + 1));
	if (first == NULL)
		goto oom;
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		first[t] = list.count;
		if (!SparseTree(hir, &hir->trees[t], buffers, &list))
			goto oom;
	}
	ReprChooseLayout(list.recs, list.count, buffers, hir->forest->precision, true);
	number = SparseNumber(&list, &buffers->num_splits);
	if (number == NULL)
		goto oom;
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		int64_t		end = t + 1 < hir->num_trees ? first[t + 1] : list.count;
		int64_t		lo = INT64_MAX;
		int64_t		hi = -1;

		for (int64_t e = first[t]; e < end; e++)
			if (!list.recs[e].leaf)
			{
				lo = number[e] < lo ? number[e] : lo;
				hi = number[e] > hi ? number[e] : hi;
			}
		buffers->trees[t].root = (int32_t) number[first[t]];
		buffers->trees[t].first = hi >= 0 ? (int32_t) lo : 0;
		buffers->trees[t].count = hi >= 0 ? (int32_t) (hi - lo + 1) : 0;
	}
	ok = SparseStore(hir, &list, number, buffers, status) &&
		ReprAllocRecordOf(hir, buffers, status);
	/* by the records, not the entries: siblings may have swapped places */
	for (int64_t e = 0; ok && e < list.count; e++)
		if (list.recs[e].hir >= 0 && !list.recs[e].leaf &&
			buffers->record_of[list.recs[e].hir] < 0)
			buffers->record_of[list.recs[e].hir] = number[e];
	free(first);
	free(number);
	free(list.entries);
	free(list.recs);
	return ok;
oom:
	free(first);
	free(list.entries);
	free(list.recs);
	return StatusNoMemory(status, "the sparse layout");
}

/* Load record v_index; a leaf's index reads record 0 instead */
static void
SparseLoadNode(CodegenContext *cg, LLVMValueRef v_index, bool may_be_leaf, ReprNode *node)
{
	LLVMValueRef v_safe = v_index;

	if (may_be_leaf)
		v_safe = LLVMBuildSelect(cg->builder,
								 LLVMBuildICmp(cg->builder, LLVMIntULT, v_index,
											   CgInt64(cg, cg->buffers->num_splits), ""),
								 v_index, CgInt64(cg, 0), "v_safe_index");
	if (cg->buffers->tile_size > 1)
		ReprLoadTile(cg, v_safe, node);
	else
		ReprLoadSplit(cg, v_safe, false, node);
	node->v_index = v_index;
}

/* Index of the child the row leads to: link + (go right), or link + LUT */
static LLVMValueRef
SparseMoveToChild(CodegenContext *cg, const ReprNode *node, LLVMValueRef v_row)
{
	LLVMValueRef v_step = cg->buffers->tile_size > 1 ? ReprTileChild(cg, node, v_row) :
		LLVMBuildZExt(cg->builder, ReprGoRight(cg, node, v_row), cg->t_i64, "");

	return LLVMBuildAdd(cg->builder, node->v_link, v_step, "v_child");
}

/* Leaves are numbered after the splits */
static LLVMValueRef
SparseIsLeaf(CodegenContext *cg, const ReprNode *node)
{
	return LLVMBuildICmp(cg->builder, LLVMIntUGE, node->v_index,
						 CgInt64(cg, cg->buffers->num_splits), "v_is_leaf");
}

/* leaves[index - N] */
static LLVMValueRef
SparseLeafValue(CodegenContext *cg, LLVMValueRef v_index)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_leaves = LLVMBuildBitCast(b, cg->v_aux[0], LLVMPointerType(cg->t_value, 0),
											 "v_leaves");
	LLVMValueRef v_k = LLVMBuildSub(b, v_index, CgInt64(cg, cg->buffers->num_splits), "");

	return CgLoad(cg, cg->t_value, LLVMBuildGEP2(b, cg->t_value, v_leaves, &v_k, 1, ""),
				  "v_leaf");
}

const Representation ReprSparse = {
	.name = "sparse",
	.build = SparseBuild,
	.variant = ReprRecordVariant,
	.node_type = ReprRecordType,
	.load_node = SparseLoadNode,
	.move_to_child = SparseMoveToChild,
	.is_leaf = SparseIsLeaf,
	.leaf_value = SparseLeafValue,
	.cache_tree = ReprCacheRecords,
	.tree_tiles = true,
	.gpu = true
};
