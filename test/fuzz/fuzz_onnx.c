/*
 * fuzz_onnx.c
 *		libFuzzer target: ONNX models (protobuf bytes).
 *
 * The input is a serialized ModelProto.  A model that fails must fail
 * cleanly; the heap it takes must stay in proportion to its bytes (the
 * decoder holds ~8 bytes per packed varint, and copying trees per class
 * is bounded by the reader to a few times the model's nodes and weights);
 * one that parses goes through FuzzCheckForest (binary form with class
 * labels, reload, interpreter on awkward rows).
 */
#include <stdlib.h>

#include "fuzz.h"
#include "silvan/parse.h"

/* A one-byte packed varint becomes 8 decoded bytes, then a few 56-byte forest nodes */
#define HEAP_PER_BYTE	1024
/* The reader's fixed allowance of copied nodes (1 << 16 of 56 bytes) */
#define HEAP_EXTRA		(8 << 20)

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
	FuzzAllocEnd("parsing", size, HEAP_PER_BYTE, HEAP_EXTRA);
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
