/*
 * fuzz_xgboost_json.c
 *		libFuzzer target: XGBoost save_model() JSON.
 *
 * The input is the model text, not NUL-terminated.  A model that fails
 * must fail cleanly, and no model may take heap out of proportion to its
 * text; one that parses goes through FuzzCheckForest (binary form,
 * reload, interpreter on awkward rows).
 */
#include "fuzz.h"
#include "silvan/parse.h"

/*
 * json-c's document costs up to ~100 heap bytes per input byte (an empty
 * array takes ~300 bytes for its three bytes "[],"); the forest adds less,
 * but for its category sets: a bitset holding category c takes c / 32
 * words whatever the length of its list, as in XGBoost itself
 */
#define HEAP_PER_BYTE	256

/* Parse one input as XGBoost JSON and check what comes out */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *) data;
	SilvanStatus status;
	Forest	   *forest;

	ModelFormatDetect(text, size);
	FuzzAllocBegin();
	forest = ParseModel(text, size, MODEL_FORMAT_XGBOOST_JSON, NULL, &status);
	FuzzAllocEnd("parsing", size, HEAP_PER_BYTE,
				 forest ? 4 * forest->num_category_words : 0);
	if (forest == NULL)
	{
		FuzzCheckStatus(&status, "XGBoost JSON");
		return 0;
	}
	FuzzCheckForest(forest);
	ForestFree(forest);
	return 0;
}
