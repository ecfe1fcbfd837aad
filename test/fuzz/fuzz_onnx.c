/*
 * fuzz_onnx.c
 *		libFuzzer target: ONNX models (protobuf bytes).
 *
 * The input is a serialized ModelProto.  A model that fails must fail
 * cleanly; the heap its parse takes, counted by the sanitizer's hooks,
 * must stay within the budget the reader holds itself to (8 MB plus 4
 * bytes per byte of the model, decode_budget.h): protobuf-c decodes
 * through a bounded allocator, and everything the reader makes is charged
 * before it is allocated, so a parse that passes the budget is a charge
 * missed or undercounted.  One that parses goes through FuzzCheckForest
 * (binary form with class labels, reload, interpreter on awkward rows).
 */
#include <stdlib.h>

#include "fuzz.h"
#include "silvan/parse.h"

/* Parse one input as ONNX and check what comes out */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *bytes = (const char *) data;
	SilvanStatus status;
	Forest	   *forest;
	OnnxTensor	tensor;

	ModelFormatDetect(bytes, size);
	FuzzAllocBegin();
	forest = ParseModel(bytes, size, MODEL_FORMAT_ONNX, NULL, &status);
	FuzzAllocEnd("parsing", size, DECODE_BUDGET_PER_BYTE, DECODE_BUDGET_FLOOR);
	if (forest == NULL)
		FuzzCheckStatus(&status, "ONNX");
	else
	{
		FuzzCheckForest(forest);
		ForestFree(forest);
	}
	if (OnnxTensorRead(bytes, size, &tensor, &status))
		free(tensor.values);
	else
		FuzzCheckStatus(&status, "ONNX tensor");
	return 0;
}
