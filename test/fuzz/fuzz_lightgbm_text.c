/*
 * fuzz_lightgbm_text.c
 *		libFuzzer target: LightGBM save_model() text.
 *
 * The input is the model text, not NUL-terminated.  A model that fails
 * must fail cleanly, and no model may take heap out of proportion to its
 * text (HEAP_PER_BYTE, and the budget the reader holds itself to,
 * decode_budget.h); one that parses goes through FuzzCheckForest (binary
 * form, reload, interpreter on awkward rows).
 */
#include "fuzz.h"
#include "silvan/parse.h"

/* A leaf takes ten bytes of text at least, and ~170 heap bytes (node, scratch) */
#define HEAP_PER_BYTE	64

/* Parse one input as LightGBM text and check what comes out */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *) data;
	SilvanStatus status;
	Forest	   *forest;

	ModelFormatDetect(text, size);
	FuzzAllocBegin();
	forest = ParseModel(text, size, MODEL_FORMAT_LIGHTGBM_TEXT, NULL, &status);
	FuzzAllocEnd("parsing", size, HEAP_PER_BYTE, 0);
	FuzzCheckBudget("parsing", size);
	if (forest == NULL)
	{
		FuzzCheckStatus(&status, "LightGBM text");
		return 0;
	}
	FuzzCheckForest(forest);
	ForestFree(forest);
	return 0;
}
