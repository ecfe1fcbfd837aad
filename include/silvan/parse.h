/*
 * parse.h
 *		Readers that turn a trained model's text (or bytes) into a Forest.
 *
 * Each reader checks the text it is given (field presence, types, array
 * lengths against the node count) and reports the first problem in a
 * SilvanStatus that names the field.  ParseModel then runs ForestValidate,
 * so a Forest it returns is safe to interpret, serialize and compile.
 */
#ifndef SILVAN_PARSE_H
#define SILVAN_PARSE_H

#include "silvan/decode_budget.h"
#include "silvan/forest.h"

typedef enum ModelFormat
{
	MODEL_FORMAT_AUTO = 0,
	MODEL_FORMAT_XGBOOST_JSON,
	MODEL_FORMAT_LIGHTGBM_TEXT,
	MODEL_FORMAT_ONNX			/* binary: an ONNX ModelProto */
} ModelFormat;

/* Map a user-facing format name ("auto", "xgboost", "lightgbm", ...) */
extern bool ModelFormatFromName(const char *name, ModelFormat *format);

/* The canonical name stored in the catalog ("xgboost_json", "lightgbm_text", "onnx") */
extern const char *ModelFormatName(ModelFormat format);

/* Are the format's models bytes rather than text (ONNX)? */
extern bool ModelFormatIsBinary(ModelFormat format);

/* Guess the format from the text; MODEL_FORMAT_AUTO when unrecognized */
extern ModelFormat ModelFormatDetect(const char *text, size_t len);

/*
 * The readers: each charges what it holds to budget (decode_budget.h) and
 * returns a forest that stays charged, or NULL with a status
 */

/* xgboost_json.c: XGBoost save_model() JSON, 1.x and 2.x layouts */
extern Forest *ParseXgboostJson(const char *text, size_t len, DecodeBudget *budget,
								SilvanStatus *status);

/*
 * How the XGBoost reader reads trees; each gives the same forest or the
 * same error, so tests compare them.  FLAT (the default): the document
 * without its trees through json-c, then each tree straight from the text
 * where it has the usual shape, else through json-c; STREAM: each tree
 * through json-c; WHOLE: the whole document through json-c at once.
 */
typedef enum XgboostReadMode
{
	XGBOOST_READ_FLAT = 0,
	XGBOOST_READ_STREAM,
	XGBOOST_READ_WHOLE
} XgboostReadMode;

/* Tests: choose how the XGBoost reader reads trees */
extern void ParseXgboostReadMode(XgboostReadMode mode);

/* lightgbm_text.c: LightGBM save_model() text, v2 to v4 */
extern Forest *ParseLightgbmText(const char *text, size_t len, DecodeBudget *budget,
								 SilvanStatus *status);

/*
 * onnx_model.c: an ONNX model (protobuf bytes, not NUL-terminated) holding
 * one TreeEnsembleRegressor or TreeEnsembleClassifier, ai.onnx.ml opset
 * 1 to 3 (see the file's header for what is read and what is refused)
 */
extern Forest *ParseOnnx(const char *data, size_t len, DecodeBudget *budget,
						 SilvanStatus *status);

/* A decoded ONNX TensorProto (test data sets ship them as .pb files) */
typedef struct OnnxTensor
{
	int32_t		data_type;		/* TensorProto.DataType: 1 float, 11 double, ... */
	int32_t		num_dims;
	int64_t		dims[8];
	int64_t		count;			/* product of dims */
	double	   *values;			/* count values, malloc'd; free() it */
} OnnxTensor;

/* onnx_model.c: decode a serialized TensorProto of numbers */
extern bool OnnxTensorRead(const char *data, size_t len, OnnxTensor *tensor,
						   SilvanStatus *status);

/*
 * parse.c: detect (when AUTO), parse, validate; *detected gets the format.
 * text is len bytes: NUL-free text for the text formats, binary for ONNX.
 * The read is held to DecodeBudgetLimit(len) bytes (SILVAN_ERROR_LIMIT)
 * and stops on a cancel request (SILVAN_ERROR_CANCELED).
 */
extern Forest *ParseModel(const char *text, size_t len, ModelFormat format,
						  ModelFormat *detected, SilvanStatus *status);

#endif							/* SILVAN_PARSE_H */
