/*
 * fuzz_xgboost_json.c
 *		libFuzzer target: XGBoost save_model() JSON.
 *
 * The input is the model text, not NUL-terminated.  A model that fails
 * must fail cleanly, and no model may take more heap than the budget the
 * reader holds itself to (decode_budget.h: json-c's document is charged
 * at a bound taken from the text before json-c builds it, category sets
 * as they grow); one that parses goes through FuzzCheckForest (binary
 * form, reload, interpreter on awkward rows).  The reader's default way
 * (the document without its trees through json-c, then each tree straight
 * from the text) is then checked against json-c reading the whole
 * document at once, with a budget that lets json-c hold it: the same
 * forest, byte for byte, or the same error, word for word, unless the
 * default way ran out of its budget.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "silvan/parse.h"

/* Parse with json-c reading the whole document; compare with the default read */
static void
CompareWithWhole(const char *text, size_t size, const Forest *forest,
				 const SilvanStatus *status)
{
	SilvanStatus whole_status;
	Forest	   *whole;
	uint8_t    *a = NULL;
	uint8_t    *b = NULL;
	size_t		na = 0;
	size_t		nb = 0;

	if (status->kind == SILVAN_ERROR_LIMIT)
		return;
	ParseXgboostReadMode(XGBOOST_READ_WHOLE);
	DecodeBudgetOverride(INT64_C(1) << 30, 256);
	whole = ParseModel(text, size, MODEL_FORMAT_XGBOOST_JSON, NULL, &whole_status);
	DecodeBudgetOverride(0, 0);
	ParseXgboostReadMode(XGBOOST_READ_FLAT);
	if ((forest == NULL) != (whole == NULL))
		FuzzFail("read whole, the model %s: %s: %s", whole ? "parses" : "fails",
				 whole ? status->message : whole_status.message,
				 whole ? status->detail : whole_status.detail);
	if (forest == NULL &&
		(status->kind != whole_status.kind || strcmp(status->message, whole_status.message) != 0 ||
		 strcmp(status->detail, whole_status.detail) != 0))
		FuzzFail("read whole, the error differs:\n%s: %s\n%s: %s", status->message,
				 status->detail, whole_status.message, whole_status.detail);
	if (forest != NULL &&
		(!ForestSerialize(forest, &a, &na, &whole_status) ||
		 !ForestSerialize(whole, &b, &nb, &whole_status) ||
		 na != nb || memcmp(a, b, na) != 0))
		FuzzFail("read whole, the forest differs");
	free(a);
	free(b);
	ForestFree(whole);
}

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
	FuzzAllocEnd("parsing", size, DECODE_BUDGET_PER_BYTE, DECODE_BUDGET_FLOOR);
	CompareWithWhole(text, size, forest, &status);
	if (forest == NULL)
	{
		FuzzCheckStatus(&status, "XGBoost JSON");
		return 0;
	}
	FuzzCheckForest(forest);
	ForestFree(forest);
	return 0;
}
