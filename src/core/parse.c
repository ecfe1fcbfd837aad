/*
 * parse.c
 *		Model formats: their names, detecting them, and the one entry point.
 *
 * Users name a format loosely ("xgboost", "lgbm", "auto"); the catalog
 * stores a canonical name.  With "auto" we look at the text: XGBoost's
 * save_model() JSON is an object with a "learner" member; LightGBM's
 * save_model() text starts with a "tree" line followed by "version=", or
 * at least has "Tree=0" or "num_tree_per_iteration=" lines; an ONNX model
 * is protobuf that names "ai.onnx" or "TreeEnsemble" and does not start
 * like text.  Detection only picks a reader; the reader does the real
 * checking.
 *
 * Each format is one row of the registry below: its canonical name, how
 * to detect it and its reader (one file).  Adding a format is a reader
 * and a row (and a ModelFormat value and aliases).
 *
 * Formats we recognize but cannot read (a LightGBM or XGBoost JSON dump,
 * XGBoost's binary formats) get an UNSUPPORTED error whose detail says
 * what to save instead.  ParseModel runs ForestValidate on whatever
 * a reader returns, so its result is safe for every later stage.
 */
#include <string.h>
#include <strings.h>

#include "silvan/parse.h"

/* Accepted names and the format each means */
static const struct
{
	const char *name;
	ModelFormat format;
}			format_names[] = {
	{"auto", MODEL_FORMAT_AUTO},
	{"xgboost", MODEL_FORMAT_XGBOOST_JSON},
	{"xgboost_json", MODEL_FORMAT_XGBOOST_JSON},
	{"json", MODEL_FORMAT_XGBOOST_JSON},
	{"lightgbm", MODEL_FORMAT_LIGHTGBM_TEXT},
	{"lightgbm_text", MODEL_FORMAT_LIGHTGBM_TEXT},
	{"lgbm", MODEL_FORMAT_LIGHTGBM_TEXT},
	{"onnx", MODEL_FORMAT_ONNX},
};

static bool DetectXgboostJson(const char *text, size_t len);
static bool DetectLightgbmText(const char *text, size_t len);
static bool DetectOnnx(const char *text, size_t len);

/* The formats we read: canonical name, detection (in this order), reader */
static const struct
{
	ModelFormat format;
	const char *name;
	bool		binary;			/* bytes, not text */
	bool		(*detect) (const char *text, size_t len);
	const char *label;			/* for messages */
	Forest	   *(*parse) (const char *text, size_t len, DecodeBudget *budget,
						  SilvanStatus *status);
}			format_registry[] = {
	{MODEL_FORMAT_XGBOOST_JSON, "xgboost_json", false, DetectXgboostJson, "XGBoost JSON", ParseXgboostJson},
	{MODEL_FORMAT_LIGHTGBM_TEXT, "lightgbm_text", false, DetectLightgbmText, "LightGBM text", ParseLightgbmText},
	{MODEL_FORMAT_ONNX, "onnx", true, DetectOnnx, "ONNX", ParseOnnx},
};

#define NUM_FORMATS (sizeof(format_registry) / sizeof(format_registry[0]))

/* Map a user-facing format name, ignoring case */
bool
ModelFormatFromName(const char *name, ModelFormat *format)
{
	if (name == NULL)
		return false;
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (strcasecmp(name, format_names[i].name) == 0)
		{
			*format = format_names[i].format;
			return true;
		}
	return false;
}

/* Is the format binary (its models are bytes, not text)? */
bool
ModelFormatIsBinary(ModelFormat format)
{
	for (size_t i = 0; i < NUM_FORMATS; i++)
		if (format_registry[i].format == format)
			return format_registry[i].binary;
	return false;
}

/* The canonical name of a format */
const char *
ModelFormatName(ModelFormat format)
{
	if (format == MODEL_FORMAT_AUTO)
		return "auto";
	for (size_t i = 0; i < NUM_FORMATS; i++)
		if (format_registry[i].format == format)
			return format_registry[i].name;
	return "unknown";
}

/* Skip a UTF-8 byte order mark and whitespace; return the new offset */
static size_t
SkipBlanks(const char *text, size_t len)
{
	size_t		i = 0;

	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	while (i < len && (text[i] == ' ' || text[i] == '\t' ||
					   text[i] == '\r' || text[i] == '\n'))
		i++;
	return i;
}

/* Does the text contain the string s? */
static bool
Contains(const char *text, size_t len, const char *s)
{
	size_t		n = strlen(s);
	const char *end = text + len;

	for (const char *p = text; (p = memchr(p, s[0], end - p)) != NULL; p++)
		if ((size_t) (end - p) >= n && memcmp(p, s, n) == 0)
			return true;
	return false;
}

/* Does the text hold s at the start of some line? */
static bool
ContainsLine(const char *text, size_t len, const char *s)
{
	size_t		n = strlen(s);

	if (len >= n && memcmp(text, s, n) == 0)
		return true;
	for (const char *p = text; (p = memchr(p, '\n', text + len - p)) != NULL; p++)
		if ((size_t) (text + len - (p + 1)) >= n && memcmp(p + 1, s, n) == 0)
			return true;
	return false;
}

/* Is the text a "tree" line followed by a "version=" line? */
static bool
LightgbmPreamble(const char *text, size_t len)
{
	size_t		i = SkipBlanks(text, len);

	if (len - i < 4 || memcmp(text + i, "tree", 4) != 0)
		return false;
	i += 4;
	while (i < len && text[i] == '\r')
		i++;
	if (i >= len || text[i] != '\n')
		return false;
	i++;
	return len - i >= 8 && memcmp(text + i, "version=", 8) == 0;
}

/* XGBoost save_model() JSON: an object with a "learner" member */
static bool
DetectXgboostJson(const char *text, size_t len)
{
	size_t		i = SkipBlanks(text, len);

	return i < len && text[i] == '{' && Contains(text, len, "\"learner\"");
}

/* LightGBM save_model() text (not a JSON object) */
static bool
DetectLightgbmText(const char *text, size_t len)
{
	size_t		i = SkipBlanks(text, len);

	if (i < len && text[i] == '{')
		return false;
	return LightgbmPreamble(text, len) || ContainsLine(text, len, "Tree=0") ||
		ContainsLine(text, len, "num_tree_per_iteration=");
}

/*
 * An ONNX ModelProto: protobuf, whose first byte is a field tag (writers
 * put ir_version, field 1, first: 0x08), naming the ML domain or a tree
 * ensemble somewhere.  Text starts with a printable byte or whitespace.
 */
static bool
DetectOnnx(const char *text, size_t len)
{
	unsigned char c = len > 0 ? (unsigned char) text[0] : 0;

	return len > 0 && c < 0x20 && c != '\t' && c != '\n' && c != '\r' &&
		(Contains(text, len, "ai.onnx") || Contains(text, len, "TreeEnsemble"));
}

/* Guess the format from the text; MODEL_FORMAT_AUTO when unrecognized */
ModelFormat
ModelFormatDetect(const char *text, size_t len)
{
	if (text == NULL)
		return MODEL_FORMAT_AUTO;
	for (size_t i = 0; i < NUM_FORMATS; i++)
		if (format_registry[i].detect(text, len))
			return format_registry[i].format;
	return MODEL_FORMAT_AUTO;
}

/* Fail for text in no format we read, naming a known one where we can */
static bool
UnrecognizedFormat(const char *text, size_t len, SilvanStatus *status)
{
	size_t		i = SkipBlanks(text, len);

	if (i < len && text[i] == '{' && Contains(text, len, "\"tree_info\""))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
						  "This looks like a LightGBM JSON dump (dump_model()); save the model with save_model() as text and load that instead.");
	if ((i < len && text[i] == '[' && Contains(text, len, "\"nodeid\"")) ||
		Contains(text, len, "booster[0]") ||
		(len - i >= 3 && memcmp(text + i, "0:[", 3) == 0) ||
		(len - i >= 7 && memcmp(text + i, "0:leaf=", 7) == 0))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
						  "This looks like an XGBoost dump (dump_model()), which lacks the objective and base score; save the model with save_model(\"model.json\") instead.");
	if (len > 2 && text[0] == '{' && strchr("iUIlL", text[1]) != NULL &&
		text[1] != '\0' && Contains(text, len, "learner"))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
						  "This looks like XGBoost's binary UBJSON format; save the model with save_model(\"model.json\") instead.");
	if (len >= 4 && (memcmp(text, "binf", 4) == 0 || memcmp(text, "bs64", 4) == 0))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
						  "XGBoost's legacy binary format is not supported; save the model with save_model(\"model.json\") instead.");
	return StatusFail(status, SILVAN_ERROR_SYNTAX, "unrecognized model format",
					  "The text is neither XGBoost save_model() JSON nor LightGBM save_model() text.");
}

/*
 * Charge what validation holds besides the forest: three arrays of the
 * largest tree's nodes (validate.c)
 */
static bool
ChargeValidation(const Forest *forest, DecodeBudget *budget, SilvanStatus *status)
{
	int64_t		largest = 1;

	for (int32_t t = 0; t < forest->num_trees; t++)
		if (forest->trees[t].num_nodes > largest)
			largest = forest->trees[t].num_nodes;
	return DecodeCharge(budget, 9 * largest + 3 * DECODE_CHUNK_OVERHEAD,
						"validation scratch", status);
}

/* Detect (when AUTO), parse and validate a model */
Forest *
ParseModel(const char *text, size_t len, ModelFormat format,
		   ModelFormat *detected, SilvanStatus *status)
{
	Forest	   *forest = NULL;
	DecodeBudget budget;

	StatusClear(status);
	if (format == MODEL_FORMAT_AUTO)
		format = ModelFormatDetect(text, len);
	if (detected != NULL)
		*detected = format;
	if (text == NULL)
	{
		StatusFail(status, SILVAN_ERROR_SYNTAX, "empty model text", "No model text was given.");
		return NULL;
	}
	for (size_t i = 0; i < NUM_FORMATS; i++)
		if (format_registry[i].format == format)
		{
			DecodeBudgetInit(&budget, format_registry[i].label, len);
			forest = format_registry[i].parse(text, len, &budget, status);
		}
	if (forest == NULL && status->kind == SILVAN_OK)
		UnrecognizedFormat(text, len, status);
	if (forest != NULL &&
		(!ChargeValidation(forest, &budget, status) || !ForestValidate(forest, status)))
	{
		ForestFree(forest);
		forest = NULL;
	}
	return forest;
}
