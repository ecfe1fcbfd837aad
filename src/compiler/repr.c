/*
 * repr.c
 *		The registry of representations and the tables they share.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/repr.h"

/* Find a representation by its schedule name; NULL if unknown */
const Representation *
ReprLookup(const char *name)
{
	if (strcmp(name, ReprArray.name) == 0)
		return &ReprArray;
	return NULL;
}

/* Release what a representation built */
void
ReprBuffersFree(ReprBuffers *buffers)
{
	free(buffers->nodes);
	free(buffers->trees);
	free(buffers->category_words);
	free(buffers->category_sets);
	memset(buffers, 0, sizeof(ReprBuffers));
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
 * tree offsets), the category words, and room for one set per categorical
 * split.  The layout fills in the sets as it meets the splits.
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
	buffers->trees = calloc((size_t) hir->num_trees + 1, sizeof(ReprTree));
	buffers->num_category_words = forest->num_category_words;
	buffers->category_words = calloc((size_t) forest->num_category_words + 1,
									 sizeof(uint32_t));
	buffers->category_sets = calloc((size_t) num_sets + 1, sizeof(ReprCategorySet));
	if (buffers->trees == NULL || buffers->category_words == NULL ||
		buffers->category_sets == NULL)
		return StatusNoMemory(status, "the compiled model's tables");
	for (int32_t t = 0; t < hir->num_trees; t++)
	{
		const HirTree *tree = &hir->trees[t];

		buffers->trees[t] = (ReprTree) {
			.root = (int32_t) tree->first_node,
			.depth = tree->depth,
			.group = tree->group,
			.padded = tree->padded
		};
	}
	if (forest->num_category_words > 0)
		memcpy(buffers->category_words, forest->category_words,
			   sizeof(uint32_t) * (size_t) forest->num_category_words);
	buffers->num_category_sets = 0;
	return true;
}
