/*
 * fuzz_forest_binary.c
 *		libFuzzer target: the binary form a backend loads from the catalog.
 *
 * ForestDeserialize must refuse bad bytes cleanly, allocating nothing the
 * bytes cannot account for; a forest it accepts goes through
 * FuzzCheckForest, whose re-serialization must then be stable, and is
 * lowered as a backend would compile it (fuzz_lower.c), under the
 * compiler's default schedule and a few that tile, reorder and pad.  The
 * header alone (ForestDeserializeHeader) must refuse bad bytes as
 * cleanly, and agree with the whole read wherever that one succeeds.
 */
#include "fuzz.h"

/* A node takes five bytes at least, and 56 in the forest plus validation scratch */
#define HEAP_PER_BYTE	32

/* Load one input as a stored forest and check what comes out */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	SilvanStatus status;
	Forest	   *forest;

	FuzzAllocBegin();
	forest = ForestDeserialize(data, size, &status);
	FuzzAllocEnd("loading", size, HEAP_PER_BYTE, 0);
	if (forest == NULL)
	{
		int64_t		stored_nodes;
		Forest	   *header;

		FuzzCheckStatus(&status, "loading the binary form");
		header = ForestDeserializeHeader(data, size, &stored_nodes, &status);
		if (header == NULL)
			FuzzCheckStatus(&status, "loading the binary form's header");
		ForestFree(header);
		return 0;
	}
	/* what reads it whole reads its header alike (a header may be read from a bad body) */
	{
		int64_t		stored_nodes = -1;
		Forest	   *header = ForestDeserializeHeader(data, size, &stored_nodes, &status);

		if (header == NULL)
			FuzzFail("the header of a form read whole was refused: %s", status.detail);
		if (!ForestSameHeader(header, forest) || header->num_trees != 0 ||
			header->num_nodes != 0 || header->trees != NULL || header->nodes != NULL ||
			stored_nodes < forest->num_nodes)
			FuzzFail("the header read alone differs from the forest read whole");
		ForestFree(header);
	}
	FuzzCheckForest(forest);
	FuzzLowerForest(forest);
	ForestFree(forest);
	return 0;
}
