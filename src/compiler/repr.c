/*
 * repr.c
 *		The registry of representations and what they share: the tree and
 *		category tables, and prefetching for tree caching.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"

/*
 * The layouts, one file each.  A layout's position is its number in the
 * tuner's points; the schedule language, the default schedule and the
 * tuner read names and properties from here.
 */
static const Representation *const layouts[] = {&ReprArray, &ReprSparse, &ReprReorg, &ReprPerfect};

#define NUM_LAYOUTS ((int) (sizeof(layouts) / sizeof(layouts[0])))

/* Find a representation by its schedule name; NULL if unknown */
const Representation *
ReprLookup(const char *name)
{
	int			i = ReprIndex(name);

	return i >= 0 ? layouts[i] : NULL;
}

/* How many layouts there are */
int
ReprCount(void)
{
	return NUM_LAYOUTS;
}

/* Layout i of the table; NULL out of range */
const Representation *
ReprAt(int i)
{
	return i >= 0 && i < NUM_LAYOUTS ? layouts[i] : NULL;
}

/* Position of the named layout in the table; -1 if none */
int
ReprIndex(const char *name)
{
	for (int i = 0; name != NULL && i < NUM_LAYOUTS; i++)
		if (strcmp(name, layouts[i]->name) == 0)
			return i;
	return -1;
}

/* The layouts' names as a list ("a, b or c"), for messages */
const char *
ReprNamesText(char *text, size_t size)
{
	size_t		n = 0;

	if (size > 0)
		text[0] = '\0';
	for (int i = 0; i < NUM_LAYOUTS && n < size; i++)
		n += (size_t) snprintf(text + n, size - n, "%s%s",
							   i == 0 ? "" : i + 1 == NUM_LAYOUTS ? " or " : ", ",
							   layouts[i]->name);
	return text;
}

/* The layout the default schedule takes for a forest: the best ranked that says yes */
const Representation *
ReprDefaultFor(const Forest *forest)
{
	const Representation *best = NULL;

	for (int i = 0; i < NUM_LAYOUTS; i++)
	{
		const Representation *r = layouts[i];

		if (r->default_rank > 0 && (best == NULL || r->default_rank < best->default_rank) &&
			(r->default_for == NULL || r->default_for(forest)))
			best = r;
	}
	return best != NULL ? best : layouts[0];
}

/* Release what a representation built */
void
ReprBuffersFree(ReprBuffers *buffers)
{
	if (!buffers->borrowed)
	{
		free(buffers->nodes);
		free(buffers->trees);
		free(buffers->category_words);
		free(buffers->category_sets);
		for (int i = 0; i < REPR_MAX_AUX; i++)
			free(buffers->aux[i]);
	}
	free(buffers->record_of);
	memset(buffers, 0, sizeof(ReprBuffers));
}

/* Where buffer id's pointer is kept */
void	  **
ReprBufferSlot(ReprBuffers *buffers, ReprBufferId id)
{
	switch (id)
	{
		case REPR_BUFFER_NODES:
			return &buffers->nodes;
		case REPR_BUFFER_TREES:
			return (void **) &buffers->trees;
		case REPR_BUFFER_CATEGORY_WORDS:
			return (void **) &buffers->category_words;
		case REPR_BUFFER_CATEGORY_SETS:
			return (void **) &buffers->category_sets;
		default:
			return &buffers->aux[id - REPR_BUFFER_AUX0];
	}
}

/* Allocate buffer id as count zeroed elements of size, noting its bytes; NULL without memory */
void *
ReprAlloc(ReprBuffers *buffers, ReprBufferId id, size_t count, size_t size)
{
	void	  **slot = ReprBufferSlot(buffers, id);

	*slot = calloc(count, size);
	buffers->bytes[id] = *slot != NULL ? count * size : 0;
	return *slot;
}

/* Grow buffer id to count elements of size (the old contents kept); NULL without memory */
void *
ReprRealloc(ReprBuffers *buffers, ReprBufferId id, size_t count, size_t size)
{
	void	  **slot = ReprBufferSlot(buffers, id);
	void	   *grown = realloc(*slot, count * size);

	if (grown == NULL)
		return NULL;
	*slot = grown;
	buffers->bytes[id] = count * size;
	return grown;
}

/* Allocate the record index of every HIR node, all -1 (unknown) */
bool
ReprAllocRecordOf(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	buffers->record_of = malloc(sizeof(int64_t) * (size_t) (hir->num_nodes + 1));
	if (buffers->record_of == NULL)
		return StatusNoMemory(status, "the compiled model's node index");
	for (int64_t i = 0; i <= hir->num_nodes; i++)
		buffers->record_of[i] = -1;
	return true;
}

/* Count the categorical splits the HIR reaches */
static int64_t
ReprCountCategorical(const Hir *hir)
{
	int64_t		count = 0;

	for (int64_t i = 0; i < hir->num_nodes; i++)
		if (!hir->nodes[i].padding &&
			hir->forest->nodes[hir->nodes[i].source].kind == FOREST_NODE_CATEGORICAL)
			count++;
	return count;
}

/*
 * Build the tables every layout shares: the tree table (roots at the HIR's
 * tree offsets, which a layout may renumber), the category words, and room
 * for one set per categorical split.  ReprDescribe fills in the sets as it
 * meets the splits.
 */
bool
ReprBuildTables(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status)
{
	const Forest *forest = hir->forest;
	int64_t		num_sets = ReprCountCategorical(hir);

	if (num_sets > INT32_MAX - 1)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "model too large to compile",
						  "The model has more than %d categorical splits.", INT32_MAX - 1);
	buffers->num_trees = hir->num_trees;
	buffers->num_category_words = forest->num_category_words;
	if (ReprAlloc(buffers, REPR_BUFFER_TREES, (size_t) hir->num_trees + 1, sizeof(ReprTree)) == NULL ||
		ReprAlloc(buffers, REPR_BUFFER_CATEGORY_WORDS, (size_t) forest->num_category_words + 1,
				  sizeof(uint32_t)) == NULL ||
		ReprAlloc(buffers, REPR_BUFFER_CATEGORY_SETS, (size_t) num_sets + 1,
				  sizeof(ReprCategorySet)) == NULL)
		return StatusNoMemory(status, "the compiled model's tables");
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		const HirTree *tree = &hir->trees[t];

		buffers->trees[t] = (ReprTree) {
			.root = (int32_t) tree->first_node,
			.depth = tree->depth,
			.group = tree->group,
			.fixed = tree->fixed,
			.first = (int32_t) tree->first_node,
			.count = tree->num_nodes
		};
	}
	if (forest->num_category_words > 0)
		memcpy(buffers->category_words, forest->category_words,
			   sizeof(uint32_t) * (size_t) forest->num_category_words);
	buffers->num_category_sets = 0;
	return true;
}

/* llvm.prefetch(ptr, read, high locality, data cache), declared once */
static LLVMValueRef
PrefetchFunction(CodegenContext *cg, LLVMTypeRef *type)
{
	LLVMTypeRef params[4] = {cg->t_i8p, cg->t_i32, cg->t_i32, cg->t_i32};

	*type = LLVMFunctionType(LLVMVoidTypeInContext(cg->context), params, 4, false);
	return CgDeclare(cg, "llvm.prefetch.p0i8", *type);
}

/* Prefetch v_bytes (i64) from v_base (i8*), one line in 64 bytes, at most max_lines */
void
ReprPrefetch(CodegenContext *cg, LLVMValueRef v_base, LLVMValueRef v_bytes,
			 int32_t max_lines)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_fn;
	LLVMValueRef fn = PrefetchFunction(cg, &t_fn);
	LLVMBasicBlockRef b_from = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef b_head = CgNewBlock(cg, "b_prefetch_head");
	LLVMBasicBlockRef b_body = CgNewBlock(cg, "b_prefetch_body");
	LLVMBasicBlockRef b_done = CgNewBlock(cg, "b_prefetch_done");
	LLVMValueRef v_cap = CgInt64(cg, (int64_t) max_lines * 64);
	LLVMValueRef v_end = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, v_bytes, v_cap, ""),
										 v_bytes, v_cap, "");
	LLVMValueRef v_off;
	LLVMValueRef v_next;
	LLVMValueRef v_zero = CgInt64(cg, 0);
	LLVMValueRef args[4];

	LLVMBuildBr(b, b_head);
	LLVMPositionBuilderAtEnd(b, b_head);
	v_off = LLVMBuildPhi(b, cg->t_i64, "v_off");
	LLVMAddIncoming(v_off, &v_zero, &b_from, 1);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, v_off, v_end, ""), b_body, b_done);
	LLVMPositionBuilderAtEnd(b, b_body);
	args[0] = LLVMBuildGEP2(b, LLVMInt8TypeInContext(cg->context), v_base, &v_off, 1, "");
	args[1] = CgInt32(cg, 0);
	args[2] = CgInt32(cg, 3);
	args[3] = CgInt32(cg, 1);
	LLVMBuildCall2(b, t_fn, fn, args, 4, "");
	v_next = LLVMBuildAdd(b, v_off, CgInt64(cg, 64), "");
	LLVMAddIncoming(v_off, &v_next, &b_body, 1);
	LLVMBuildBr(b, b_head);
	LLVMPositionBuilderAtEnd(b, b_done);
}

/* cacheTrees for layouts that keep a tree's records together (first, count) */
void
ReprCacheRecords(CodegenContext *cg, LLVMValueRef v_tree)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_first = LLVMBuildZExt(b, CgLoadTreeField(cg, v_tree, FIELDNO_REPRTREE_FIRST,
															""), cg->t_i64, "");
	LLVMValueRef v_count = LLVMBuildZExt(b, CgLoadTreeField(cg, v_tree, FIELDNO_REPRTREE_COUNT,
															""), cg->t_i64, "");
	LLVMValueRef v_base = LLVMBuildGEP2(b, cg->t_node, cg->v_nodes, &v_first, 1, "");

	ReprPrefetch(cg, LLVMBuildBitCast(b, v_base, cg->t_i8p, ""),
				 LLVMBuildMul(b, v_count, CgInt64(cg, (int64_t) cg->buffers->node_size), ""),
				 64);
}
