/*
 * fuzz_forest_binary.c
 *		libFuzzer target: the binary form a backend loads from the catalog.
 *
 * ForestDeserialize must refuse bad bytes cleanly, allocating nothing the
 * bytes cannot account for; a forest it accepts goes through
 * FuzzCheckForest, whose re-serialization must then be stable, and is
 * lowered as a backend would compile it (fuzz_lower.c), under the
 * compiler's default schedule and a few that tile, reorder and pad.
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
		FuzzCheckStatus(&status, "loading the binary form");
		return 0;
	}
	FuzzCheckForest(forest);
	FuzzLowerForest(forest);
	ForestFree(forest);
	return 0;
}
