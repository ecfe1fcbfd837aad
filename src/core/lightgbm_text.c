/*
 * lightgbm_text.c
 *		Read LightGBM's save_model() text format (v2 to v4) into a Forest.
 *
 * The file is a header of key=value lines ("num_class=3",
 * "objective=binary sigmoid:1", a bare "average_output"), then one block
 * per tree ("Tree=N" followed by key=value lines up to a blank line), then
 * "end of trees" and parameters we do not need.  A tree of L leaves lists
 * its L-1 internal nodes column-wise: split_feature, threshold,
 * decision_type, left_child, right_child, each with L-1 space-separated
 * entries, and leaf_value with L.  A child c >= 0 is internal node c; a
 * child c < 0 is leaf ~c.  We lay a tree out as its internal nodes
 * 0..L-2 followed by its leaves, so leaf j becomes node L-1+j.
 *
 * decision_type packs three things: bit 0 marks a categorical split, bit 1
 * sends missing values left, bits 2-3 say what counts as missing (none,
 * zero or NaN).  Numeric splits go left iff x <= threshold, in double.  A
 * categorical split's threshold is an index k into cat_boundaries; its
 * set is the bitset words cat_threshold[cat_boundaries[k] ..
 * cat_boundaries[k+1]), whose members go left and NaN goes right.
 *
 * The text is read in two passes over the tree blocks: the first sizes the
 * node and category arrays (and rejects linear trees early), the second
 * parses every field and fills in the nodes.  The text need not end in a
 * NUL, so numbers are copied into a small buffer before strtod sees them.
 * Every count is range-checked, and checked against the number of
 * entries its arrays really have in the text, before it sizes anything.
 * Truncation shows up as text ending inside the trees (before "end of
 * trees" or, in old files, "feature importances:"), or as fewer trees
 * than the header's "tree_sizes" lists.
 *
 * Objectives follow LightGBM's ObjectiveFunction::ConvertOutput; "none"
 * and "custom" (no objective at prediction time) give raw scores.
 *
 * Memory: nothing is sized before the text backs it, and what is sized is
 * charged to the read's budget (decode_budget.h) first: the forest's
 * arrays (48 bytes a node, two nodes a leaf), the scratch for the largest
 * tree (seven numbers a leaf) and the feature names.  LightGBM writes
 * some 100 bytes a leaf, so its models take about twice their size; a
 * tree written in fewer bytes than any writer uses (a leaf in 20 bytes)
 * would take seven times its size, and is refused.  Category words are
 * read straight into the forest.  The readers poll for cancellation every
 * CANCEL_POLL_INTERVAL lines, entries or nodes.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "silvan/parse.h"

/* Longest number token we accept */
#define LGB_MAX_TOKEN	128

/* Most leaves in one tree: keeps 2 * leaves - 1 nodes inside int32 */
#define LGB_MAX_LEAVES	(1 << 30)

/* A piece of the text (not NUL-terminated) */
typedef struct LgbSpan
{
	const char *p;
	size_t		len;
} LgbSpan;

/* A position in the text, advanced line by line */
typedef struct LgbCursor
{
	const char *p;
	const char *end;
	int64_t		line;			/* 1-based number of the next line */
} LgbCursor;

/* The tree fields we read */
typedef enum LgbField
{
	LGB_NUM_LEAVES,
	LGB_NUM_CAT,
	LGB_SPLIT_FEATURE,
	LGB_THRESHOLD,
	LGB_DECISION_TYPE,
	LGB_LEFT_CHILD,
	LGB_RIGHT_CHILD,
	LGB_LEAF_VALUE,
	LGB_CAT_BOUNDARIES,
	LGB_CAT_THRESHOLD,
	LGB_IS_LINEAR,
	LGB_NUM_FIELDS
} LgbField;

static const char *const lgb_field_names[LGB_NUM_FIELDS] = {
	"num_leaves", "num_cat", "split_feature", "threshold", "decision_type",
	"left_child", "right_child", "leaf_value", "cat_boundaries",
	"cat_threshold", "is_linear"
};

/* One tree block: where each field's value is */
typedef struct LgbTreeText
{
	int32_t		index;
	bool		present[LGB_NUM_FIELDS];
	LgbSpan		value[LGB_NUM_FIELDS];
	int64_t		num_leaves;		/* set by LgbTreeCounts */
	int64_t		num_cat;
	int64_t		num_cat_words;
} LgbTreeText;

/* The header's fields */
typedef struct LgbHeader
{
	int64_t		num_class;
	int64_t		num_tree_per_iteration;
	int64_t		max_feature_idx;
	bool		has_num_class;
	bool		has_num_tree_per_iteration;
	bool		has_max_feature_idx;
	bool		has_objective;
	bool		average_output;
	LgbSpan		objective;
	bool		has_feature_names;
	LgbSpan		feature_names;	/* blank-separated, one per feature */
	int64_t		num_tree_sizes; /* entries of "tree_sizes", -1 if absent */
} LgbHeader;

/* Scratch arrays for one tree's fields, sized for the largest tree */
typedef struct LgbScratch
{
	int64_t    *split_feature;
	int64_t    *decision_type;
	int64_t    *left;
	int64_t    *right;
	int64_t    *cat_boundaries;
	double	   *threshold;
	double	   *leaf_value;
	uint32_t	ticks;			/* cancel polls (CancelTick) */
} LgbScratch;

/* What one LightGBM objective means for prediction */
typedef struct LgbObjective
{
	const char *name;
	ForestTask	task;
	ForestTransform transform;
} LgbObjective;

static const LgbObjective lgb_objectives[] = {
	{"regression", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"regression_l1", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"huber", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"fair", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"quantile", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"mape", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"mean_absolute_percentage_error", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"none", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"null", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"custom", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"na", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_IDENTITY},
	{"lambdarank", FOREST_TASK_RANKING, FOREST_TRANSFORM_IDENTITY},
	{"rank_xendcg", FOREST_TASK_RANKING, FOREST_TRANSFORM_IDENTITY},
	{"poisson", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP},
	{"gamma", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP},
	{"tweedie", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_EXP},
	{"binary", FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID},
	{"cross_entropy", FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID},
	{"xentropy", FOREST_TASK_BINARY, FOREST_TRANSFORM_SIGMOID},
	{"cross_entropy_lambda", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_LOG1P_EXP},
	{"xentlambda", FOREST_TASK_REGRESSION, FOREST_TRANSFORM_LOG1P_EXP},
	{"multiclass", FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SOFTMAX},
	{"multiclassova", FOREST_TASK_MULTICLASS, FOREST_TRANSFORM_SIGMOID_OVA},
};

/* Does the span equal the NUL-terminated string s? */
static bool
LgbSpanIs(LgbSpan span, const char *s)
{
	return span.len == strlen(s) && memcmp(span.p, s, span.len) == 0;
}

/* Does the span start with the NUL-terminated string s? */
static bool
LgbSpanStarts(LgbSpan span, const char *s)
{
	size_t		n = strlen(s);

	return span.len >= n && memcmp(span.p, s, n) == 0;
}

/* Take the next line, without its "\n" or "\r\n"; false at the end */
static bool
LgbNextLine(LgbCursor *cur, LgbSpan *line)
{
	const char *nl;

	if (cur->p >= cur->end)
		return false;
	nl = memchr(cur->p, '\n', cur->end - cur->p);
	line->p = cur->p;
	line->len = (nl ? nl : cur->end) - cur->p;
	cur->p = nl ? nl + 1 : cur->end;
	cur->line++;
	while (line->len > 0 && line->p[line->len - 1] == '\r')
		line->len--;
	return true;
}

/* Is the line empty or only blanks? */
static bool
LgbBlank(LgbSpan line)
{
	for (size_t i = 0; i < line.len; i++)
		if (line.p[i] != ' ' && line.p[i] != '\t')
			return false;
	return true;
}

/* Split "key=value" at the first '='; false if there is none */
static bool
LgbSplitKeyValue(LgbSpan line, LgbSpan *key, LgbSpan *value)
{
	const char *eq = memchr(line.p, '=', line.len);

	if (eq == NULL)
		return false;
	key->p = line.p;
	key->len = eq - line.p;
	value->p = eq + 1;
	value->len = line.len - key->len - 1;
	return true;
}

/*
 * Take the next blank-separated token of a span, NUL-terminated in buf;
 * false at the end of the span or (with *too_long set) for a huge token.
 */
static bool
LgbNextToken(LgbSpan *span, char *buf, bool *too_long)
{
	size_t		n = 0;

	*too_long = false;
	while (span->len > 0 && (*span->p == ' ' || *span->p == '\t'))
		span->p++, span->len--;
	if (span->len == 0)
		return false;
	while (n < span->len && span->p[n] != ' ' && span->p[n] != '\t')
		n++;
	if (n >= LGB_MAX_TOKEN)
	{
		*too_long = true;
		return false;
	}
	memcpy(buf, span->p, n);
	buf[n] = '\0';
	span->p += n;
	span->len -= n;
	return true;
}

/* Count the blank-separated tokens of a span */
static int64_t
LgbCountTokens(LgbSpan span)
{
	int64_t		n = 0;
	bool		in_token = false;

	for (size_t i = 0; i < span.len; i++)
	{
		bool		blank = span.p[i] == ' ' || span.p[i] == '\t';

		n += (!blank && !in_token);
		in_token = !blank;
	}
	return n;
}

/* Parse a whole token as a decimal integer */
static bool
LgbTokenToInt64(const char *token, int64_t *out)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(token, &end, 10);
	if (end == token || *end != '\0' || errno != 0)
		return false;
	*out = v;
	return true;
}

/* Parse a whole token as a double */
static bool
LgbTokenToDouble(const char *token, double *out)
{
	char	   *end;

	*out = strtod(token, &end);
	return end != token && *end == '\0';
}

/* Parse a span holding exactly one integer, within [lo, hi] */
static bool
LgbSpanInt(LgbSpan span, const char *key, const char *where, int64_t lo,
		   int64_t hi, int64_t *out, SilvanStatus *status)
{
	char		buf[LGB_MAX_TOKEN];
	bool		too_long;

	if (!LgbNextToken(&span, buf, &too_long) || !LgbTokenToInt64(buf, out) ||
		LgbCountTokens(span) != 0)
		return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid LightGBM model text",
						  "Field \"%s\" of %s is not an integer.", key, where);
	if (*out < lo || *out > hi)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Field \"%s\" of %s is %lld; expected %lld to %lld.", key,
						  where, (long long) *out, (long long) lo, (long long) hi);
	return true;
}

/* Record one header line */
static bool
LgbHeaderLine(LgbSpan line, LgbHeader *header, SilvanStatus *status)
{
	LgbSpan		key,
				value;

	if (!LgbSplitKeyValue(line, &key, &value))
	{
		if (LgbSpanIs(line, "average_output"))
			header->average_output = true;
		return true;			/* "tree" and other bare words */
	}
	if (LgbSpanIs(key, "num_class"))
	{
		header->has_num_class = true;
		return LgbSpanInt(value, "num_class", "the header", 1, FOREST_MAX_GROUPS,
						  &header->num_class, status);
	}
	if (LgbSpanIs(key, "num_tree_per_iteration"))
	{
		header->has_num_tree_per_iteration = true;
		return LgbSpanInt(value, "num_tree_per_iteration", "the header", 1,
						  FOREST_MAX_GROUPS, &header->num_tree_per_iteration, status);
	}
	if (LgbSpanIs(key, "max_feature_idx"))
	{
		header->has_max_feature_idx = true;
		return LgbSpanInt(value, "max_feature_idx", "the header", 0,
						  FOREST_MAX_FEATURES - 1, &header->max_feature_idx, status);
	}
	if (LgbSpanIs(key, "tree_sizes"))
		header->num_tree_sizes = LgbCountTokens(value);
	if (LgbSpanIs(key, "objective"))
	{
		header->has_objective = true;
		header->objective = value;
	}
	if (LgbSpanIs(key, "feature_names"))
	{
		header->has_feature_names = true;
		header->feature_names = value;
	}
	return true;
}

/* Read header lines up to the first "Tree=" (or "end of trees") line */
static bool
LgbReadHeader(LgbCursor *cur, LgbHeader *header, SilvanStatus *status)
{
	LgbCursor	before = *cur;
	LgbSpan		line;
	uint32_t	ticks = 0;

	memset(header, 0, sizeof(*header));
	header->num_tree_sizes = -1;
	while (LgbNextLine(cur, &line))
	{
		if (CancelTickN(&ticks, 1 + (uint32_t) (line.len >> 6)))
			return StatusCanceled(status, "parsing the model");
		if (LgbSpanStarts(line, "Tree=") || LgbSpanIs(line, "end of trees"))
		{
			*cur = before;		/* leave it for the tree reader */
			break;
		}
		if (!LgbHeaderLine(line, header, status))
			return false;
		before = *cur;
	}
	if (!header->has_max_feature_idx || !header->has_num_class)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Field \"%s\" is missing from the header.",
						  header->has_num_class ? "max_feature_idx" : "num_class");
	if (!header->has_num_tree_per_iteration)
		header->num_tree_per_iteration = header->num_class;
	return true;
}

/* Store one key=value line of a tree block */
static bool
LgbTreeLine(LgbSpan line, int64_t line_no, LgbTreeText *tree, SilvanStatus *status)
{
	LgbSpan		key,
				value;

	if (!LgbSplitKeyValue(line, &key, &value))
		return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid LightGBM model text",
						  "Line %lld (in tree %d) is not a key=value line.",
						  (long long) line_no, tree->index);
	for (int f = 0; f < LGB_NUM_FIELDS; f++)
		if (LgbSpanIs(key, lgb_field_names[f]))
		{
			tree->present[f] = true;
			tree->value[f] = value;
			break;
		}
	return true;
}

/* Parse "Tree=N" and check N is the expected index */
static bool
LgbTreeHeader(LgbSpan line, int64_t line_no, int32_t index, SilvanStatus *status)
{
	LgbSpan		key,
				value;
	int64_t		n;
	char		where[64];

	snprintf(where, sizeof(where), "line %lld", (long long) line_no);
	LgbSplitKeyValue(line, &key, &value);
	if (!LgbSpanInt(value, "Tree", where, 0, INT32_MAX, &n, status))
		return false;
	if (n != index)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Line %lld is \"Tree=%lld\"; expected \"Tree=%d\".",
						  (long long) line_no, (long long) n, index);
	return true;
}

/*
 * Read the next tree block into *tree, or set *done when the trees end:
 * at "end of trees" or, in old files without it, at the first other line
 * ("feature importances:", "parameters:").  Running out of text first
 * means the text was truncated.
 */
static bool
LgbNextTree(LgbCursor *cur, int32_t index, LgbTreeText *tree, bool *done,
			SilvanStatus *status)
{
	LgbSpan		line;

	*done = false;
	do
	{
		if (!LgbNextLine(cur, &line))
			return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid LightGBM model text",
							  "The text ends after %d trees without an \"end of trees\" line; it may be truncated.",
							  index);
	} while (LgbBlank(line));
	if (!LgbSpanStarts(line, "Tree="))
		return (*done = true);
	memset(tree, 0, sizeof(*tree));
	tree->index = index;
	if (!LgbTreeHeader(line, cur->line - 1, index, status))
		return false;
	while (LgbNextLine(cur, &line) && !LgbBlank(line))
		if (!LgbTreeLine(line, cur->line - 1, tree, status))
			return false;
	return true;
}

/* Require a tree field to be present */
static bool
LgbRequire(const LgbTreeText *tree, LgbField field, SilvanStatus *status)
{
	if (tree->present[field])
		return true;
	return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
					  "Field \"%s\" is missing from tree %d.",
					  lgb_field_names[field], tree->index);
}

/* Check a field has exactly n entries */
static bool
LgbCheckCount(const LgbTreeText *tree, LgbField field, int64_t n,
			  SilvanStatus *status)
{
	int64_t		have;

	if (!LgbRequire(tree, field, status))
		return false;
	have = LgbCountTokens(tree->value[field]);
	if (have != n)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Field \"%s\" of tree %d has %lld entries; expected %lld.",
						  lgb_field_names[field], tree->index, (long long) have,
						  (long long) n);
	return true;
}

/*
 * Check a tree's arrays hold as many entries as its counts say.  A count
 * is only a claim until the text backs it: nothing is sized by num_leaves
 * or num_cat before this passes.
 */
static bool
LgbCheckArrays(const LgbTreeText *tree, SilvanStatus *status)
{
	static const LgbField splits[] = {LGB_SPLIT_FEATURE, LGB_THRESHOLD,
	LGB_LEFT_CHILD, LGB_RIGHT_CHILD};
	int64_t		inner = tree->num_leaves - 1;

	if (!LgbCheckCount(tree, LGB_LEAF_VALUE, tree->num_leaves, status))
		return false;
	if (inner == 0)
		return true;
	for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++)
		if (!LgbCheckCount(tree, splits[i], inner, status))
			return false;
	if (tree->present[LGB_DECISION_TYPE] &&
		!LgbCheckCount(tree, LGB_DECISION_TYPE, inner, status))
		return false;
	return tree->num_cat == 0 ||
		LgbCheckCount(tree, LGB_CAT_BOUNDARIES, tree->num_cat + 1, status);
}

/* Read a tree's sizes: leaves, category sets, category words */
static bool
LgbTreeCounts(LgbTreeText *tree, SilvanStatus *status)
{
	char		where[64];
	int64_t		is_linear = 0;

	snprintf(where, sizeof(where), "tree %d", tree->index);
	tree->num_cat = 0;
	tree->num_cat_words = 0;
	if (!LgbRequire(tree, LGB_NUM_LEAVES, status) ||
		!LgbSpanInt(tree->value[LGB_NUM_LEAVES], "num_leaves", where, 1,
					LGB_MAX_LEAVES, &tree->num_leaves, status) ||
		(tree->present[LGB_IS_LINEAR] &&
		 !LgbSpanInt(tree->value[LGB_IS_LINEAR], "is_linear", where, 0, 1,
					 &is_linear, status)))
		return false;
	if (is_linear)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported LightGBM model",
						  "Tree %d is a linear tree (is_linear=1); models trained with linear_tree are not supported.",
						  tree->index);
	if (tree->num_leaves == 1)
		return true;
	if (tree->present[LGB_NUM_CAT] &&
		!LgbSpanInt(tree->value[LGB_NUM_CAT], "num_cat", where, 0,
					tree->num_leaves - 1, &tree->num_cat, status))
		return false;
	if (tree->num_cat > 0)
	{
		if (!LgbRequire(tree, LGB_CAT_BOUNDARIES, status) ||
			!LgbRequire(tree, LGB_CAT_THRESHOLD, status))
			return false;
		tree->num_cat_words = LgbCountTokens(tree->value[LGB_CAT_THRESHOLD]);
	}
	return true;
}

/* Name the field for a token that is not a number */
static bool
LgbBadToken(const LgbTreeText *tree, LgbField field, int64_t i, bool too_long,
			SilvanStatus *status)
{
	return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid LightGBM model text",
					  "Entry %lld of field \"%s\" of tree %d is %s.",
					  (long long) i, lgb_field_names[field], tree->index,
					  too_long ? "too long" : "not a number");
}

/*
 * Parse a field of exactly n integers, each within [lo, hi], into out or,
 * when out is NULL, into the 32-bit words out32
 */
static bool
LgbIntFieldAs(const LgbTreeText *tree, LgbField field, int64_t n, int64_t lo,
			  int64_t hi, int64_t *out, uint32_t *out32, uint32_t *ticks,
			  SilvanStatus *status)
{
	LgbSpan		span = tree->value[field];
	char		buf[LGB_MAX_TOKEN];
	bool		too_long = false;

	if (!LgbCheckCount(tree, field, n, status))
		return false;
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		v;

		if (CancelTick(ticks))
			return StatusCanceled(status, "parsing the model");
		if (!LgbNextToken(&span, buf, &too_long) || !LgbTokenToInt64(buf, &v))
			return LgbBadToken(tree, field, i, too_long, status);
		if (v < lo || v > hi)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
							  "Entry %lld of field \"%s\" of tree %d is %lld; expected %lld to %lld.",
							  (long long) i, lgb_field_names[field], tree->index,
							  (long long) v, (long long) lo, (long long) hi);
		if (out != NULL)
			out[i] = v;
		else
			out32[i] = (uint32_t) v;
	}
	return true;
}

/* Parse a field of exactly n integers, each within [lo, hi] */
static bool
LgbIntField(const LgbTreeText *tree, LgbField field, int64_t n, int64_t lo,
			int64_t hi, int64_t *out, uint32_t *ticks, SilvanStatus *status)
{
	return LgbIntFieldAs(tree, field, n, lo, hi, out, NULL, ticks, status);
}

/* Parse a field of exactly n doubles, none of them NaN */
static bool
LgbDoubleField(const LgbTreeText *tree, LgbField field, int64_t n, double *out,
			   uint32_t *ticks, SilvanStatus *status)
{
	LgbSpan		span = tree->value[field];
	char		buf[LGB_MAX_TOKEN];
	bool		too_long = false;

	if (!LgbCheckCount(tree, field, n, status))
		return false;
	for (int64_t i = 0; i < n; i++)
	{
		if (CancelTick(ticks))
			return StatusCanceled(status, "parsing the model");
		if (!LgbNextToken(&span, buf, &too_long) || !LgbTokenToDouble(buf, &out[i]))
			return LgbBadToken(tree, field, i, too_long, status);
		if (isnan(out[i]))
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
							  "Entry %lld of field \"%s\" of tree %d is NaN.",
							  (long long) i, lgb_field_names[field], tree->index);
	}
	return true;
}

/*
 * Parse every array field of a tree with more than one leaf; its category
 * words go straight to words
 */
static bool
LgbParseSplits(const Forest *forest, const LgbTreeText *tree, LgbScratch *s,
			   uint32_t *words, SilvanStatus *status)
{
	int64_t		inner = tree->num_leaves - 1;

	if (!LgbIntField(tree, LGB_SPLIT_FEATURE, inner, 0, forest->num_features - 1,
					 s->split_feature, &s->ticks, status) ||
		!LgbDoubleField(tree, LGB_THRESHOLD, inner, s->threshold, &s->ticks, status) ||
		!LgbIntField(tree, LGB_LEFT_CHILD, inner, -tree->num_leaves, inner - 1,
					 s->left, &s->ticks, status) ||
		!LgbIntField(tree, LGB_RIGHT_CHILD, inner, -tree->num_leaves, inner - 1,
					 s->right, &s->ticks, status))
		return false;
	if (!tree->present[LGB_DECISION_TYPE])
		memset(s->decision_type, 0, sizeof(int64_t) * inner);
	else if (!LgbIntField(tree, LGB_DECISION_TYPE, inner, 0, 15,
						  s->decision_type, &s->ticks, status))
		return false;
	if (tree->num_cat == 0)
		return true;
	return LgbIntField(tree, LGB_CAT_BOUNDARIES, tree->num_cat + 1, 0,
					   tree->num_cat_words, s->cat_boundaries, &s->ticks, status) &&
		LgbIntFieldAs(tree, LGB_CAT_THRESHOLD, tree->num_cat_words, 0, UINT32_MAX,
					  NULL, words, &s->ticks, status);
}

/* Check cat_boundaries runs from 0 up to the number of cat_threshold words */
static bool
LgbCheckBoundaries(const LgbTreeText *tree, const LgbScratch *s,
				   SilvanStatus *status)
{
	if (s->cat_boundaries[0] != 0 ||
		s->cat_boundaries[tree->num_cat] != tree->num_cat_words)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Field \"cat_boundaries\" of tree %d must run from 0 to %lld, the number of \"cat_threshold\" entries.",
						  tree->index, (long long) tree->num_cat_words);
	for (int64_t k = 0; k < tree->num_cat; k++)
		if (s->cat_boundaries[k] > s->cat_boundaries[k + 1])
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
							  "Field \"cat_boundaries\" of tree %d decreases at entry %lld.",
							  tree->index, (long long) k + 1);
	return true;
}

/* Map a LightGBM child reference to a node of our layout */
static int32_t
LgbChild(int64_t child, int64_t num_leaves)
{
	return (int32_t) (child >= 0 ? child : (num_leaves - 1) + ~child);
}

/* Fill in a categorical split: its set is category list k */
static bool
LgbFillCategorical(const LgbTreeText *tree, const LgbScratch *s, int64_t i,
				   int64_t first_word, ForestNode *node, SilvanStatus *status)
{
	double		t = s->threshold[i];
	int64_t		k;

	if (!(t >= 0.0 && t < (double) tree->num_cat) || t != floor(t))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Entry %lld of field \"threshold\" of tree %d is %g; a categorical split needs a category list index from 0 to %lld.",
						  (long long) i, tree->index, t, (long long) tree->num_cat - 1);
	k = (int64_t) t;
	node->kind = FOREST_NODE_CATEGORICAL;
	node->missing = FOREST_MISSING_NAN;
	node->default_left = 0;
	node->category_in_left = 1;
	node->category_offset = first_word + s->cat_boundaries[k];
	node->category_words = (int32_t) (s->cat_boundaries[k + 1] - s->cat_boundaries[k]);
	node->threshold = 0.0;
	return true;
}

/* Fill in internal node i of a tree */
static bool
LgbFillSplit(const LgbTreeText *tree, const LgbScratch *s, int64_t i,
			 int64_t first_word, ForestNode *node, SilvanStatus *status)
{
	int64_t		type = s->decision_type[i];
	int64_t		missing = (type >> 2) & 3;

	node->feature = (int32_t) s->split_feature[i];
	node->left = LgbChild(s->left[i], tree->num_leaves);
	node->right = LgbChild(s->right[i], tree->num_leaves);
	if (type & 1)
		return LgbFillCategorical(tree, s, i, first_word, node, status);
	if (missing == 3)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Entry %lld of field \"decision_type\" of tree %d is %lld, an unknown missing-value type.",
						  (long long) i, tree->index, (long long) type);
	node->kind = FOREST_NODE_NUMERIC;
	node->compare = FOREST_CMP_LE;
	node->missing = missing == 0 ? FOREST_MISSING_NONE :
		missing == 1 ? FOREST_MISSING_ZERO : FOREST_MISSING_NAN;
	node->default_left = (type & 2) ? 1 : 0;
	node->threshold = s->threshold[i];
	return true;
}

/* Fill in every node of one tree */
static bool
LgbFillTree(Forest *forest, const LgbTreeText *tree, LgbScratch *s,
			int64_t first_word, SilvanStatus *status)
{
	ForestTree *ftree = &forest->trees[tree->index];
	ForestNode *nodes = forest->nodes + ftree->first_node;
	int64_t		inner = tree->num_leaves - 1;

	if (!LgbDoubleField(tree, LGB_LEAF_VALUE, tree->num_leaves, s->leaf_value, &s->ticks,
						status))
		return false;
	if (inner > 0 && (!LgbParseSplits(forest, tree, s, forest->category_words + first_word,
									  status) ||
					  (tree->num_cat > 0 && !LgbCheckBoundaries(tree, s, status))))
		return false;
	for (int64_t i = 0; i < inner; i++)
	{
		if (CancelTick(&s->ticks))
			return StatusCanceled(status, "parsing the model");
		if (!LgbFillSplit(tree, s, i, first_word, &nodes[i], status))
			return false;
	}
	for (int64_t j = 0; j < tree->num_leaves; j++)
	{
		ForestNode *leaf = &nodes[inner + j];

		if (CancelTick(&s->ticks))
			return StatusCanceled(status, "parsing the model");
		leaf->kind = FOREST_NODE_LEAF;
		leaf->feature = -1;
		leaf->left = -1;
		leaf->right = -1;
		leaf->leaf_value = s->leaf_value[j];
	}
	return true;
}

/* Sizes gathered by the first pass */
typedef struct LgbSizes
{
	int32_t		num_trees;
	int64_t		num_nodes;
	int64_t		num_words;
	int64_t		max_leaves;
	int64_t		max_cat;
} LgbSizes;

/*
 * First pass: count trees, nodes and category words, and check every
 * tree's arrays against its counts.  A tree whose arrays disagree is
 * reported once the trees end, so that text cut off inside a tree is
 * reported as truncated.
 */
static bool
LgbScanTrees(LgbCursor cur, LgbSizes *sizes, SilvanStatus *status)
{
	LgbTreeText tree;
	bool		done = false;
	SilvanStatus arrays;
	uint32_t	ticks = 0;

	memset(sizes, 0, sizeof(*sizes));
	StatusClear(&arrays);
	while (true)
	{
		const char *start = cur.p;

		if (sizes->num_trees >= FOREST_MAX_TREES)
			return StatusFail(status, SILVAN_ERROR_INVALID, "too many trees",
							  "The model has more than %d trees.", FOREST_MAX_TREES);
		if (!LgbNextTree(&cur, sizes->num_trees, &tree, &done, status))
			return false;
		if (CancelTickN(&ticks, 1 + (uint32_t) ((cur.p - start) >> 6)))
			return StatusCanceled(status, "parsing the model");
		if (done)
		{
			*status = arrays;
			return arrays.kind == SILVAN_OK;
		}
		if (!LgbTreeCounts(&tree, status))
			return false;
		sizes->num_trees++;
		if (arrays.kind != SILVAN_OK || !LgbCheckArrays(&tree, &arrays))
			continue;			/* only look for the end of the trees now */
		sizes->num_nodes += 2 * tree.num_leaves - 1;
		sizes->num_words += tree.num_cat_words;
		if (sizes->num_nodes > FOREST_MAX_NODES ||
			sizes->num_words > FOREST_MAX_CATEGORY_WORDS)
			return StatusFail(status, SILVAN_ERROR_INVALID, "model too large",
							  "The model has more than %lld nodes or %lld category words.",
							  (long long) FOREST_MAX_NODES,
							  (long long) FOREST_MAX_CATEGORY_WORDS);
		sizes->max_leaves = tree.num_leaves > sizes->max_leaves ? tree.num_leaves : sizes->max_leaves;
		sizes->max_cat = tree.num_cat > sizes->max_cat ? tree.num_cat : sizes->max_cat;
	}
}

/* Check the trees found against the header's "tree_sizes" list */
static bool
LgbCheckTreeCount(const LgbHeader *header, const LgbSizes *sizes,
				  SilvanStatus *status)
{
	if (header->num_tree_sizes < 0 || header->num_tree_sizes == sizes->num_trees)
		return true;
	if (header->num_tree_sizes > sizes->num_trees)
		return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid LightGBM model text",
						  "Field \"tree_sizes\" lists %lld trees but only %d were found; the text may be truncated.",
						  (long long) header->num_tree_sizes, sizes->num_trees);
	return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
					  "Field \"tree_sizes\" lists %lld trees but %d were found.",
					  (long long) header->num_tree_sizes, sizes->num_trees);
}

/* Free the scratch arrays */
static void
LgbFreeScratch(LgbScratch *s)
{
	free(s->split_feature);
	free(s->decision_type);
	free(s->left);
	free(s->right);
	free(s->cat_boundaries);
	free(s->threshold);
	free(s->leaf_value);
}

/* Allocate scratch arrays big enough for the largest tree */
static bool
LgbAllocScratch(LgbScratch *s, const LgbSizes *sizes, SilvanStatus *status)
{
	size_t		leaves = (size_t) sizes->max_leaves + 1;

	s->split_feature = malloc(sizeof(int64_t) * leaves);
	s->decision_type = malloc(sizeof(int64_t) * leaves);
	s->left = malloc(sizeof(int64_t) * leaves);
	s->right = malloc(sizeof(int64_t) * leaves);
	s->cat_boundaries = malloc(sizeof(int64_t) * ((size_t) sizes->max_cat + 1));
	s->threshold = malloc(sizeof(double) * leaves);
	s->leaf_value = malloc(sizeof(double) * leaves);
	if (s->split_feature && s->decision_type && s->left && s->right &&
		s->cat_boundaries && s->threshold && s->leaf_value)
		return true;
	return StatusNoMemory(status, "scratch space for reading trees");
}

/* Bytes of the scratch arrays for the largest tree (LgbAllocScratch) */
static int64_t
LgbScratchBytes(const LgbSizes *sizes)
{
	return (int64_t) (6 * sizeof(int64_t)) * (sizes->max_leaves + 1) +
		(int64_t) sizeof(int64_t) * (sizes->max_cat + 1) + 7 * DECODE_CHUNK_OVERHEAD;
}

/*
 * Second pass: allocate the forest's arrays and fill in every tree.  The
 * arrays are charged first; the forest's stay charged, the scratch's are
 * given back.
 */
static bool
LgbFillTrees(Forest *forest, LgbCursor cur, const LgbSizes *sizes,
			 int64_t per_iteration, DecodeBudget *budget, SilvanStatus *status)
{
	LgbScratch	scratch = {0};
	int64_t		node = 0;
	int64_t		word = 0;
	bool		ok;

	ok = DecodeCharge(budget, (int64_t) sizeof(ForestTree) * sizes->num_trees +
					  (int64_t) sizeof(ForestNode) * sizes->num_nodes +
					  (int64_t) sizeof(uint32_t) * sizes->num_words + 3 * DECODE_CHUNK_OVERHEAD,
					  "the trees", status) &&
		DecodeCharge(budget, LgbScratchBytes(sizes), "the largest tree", status) &&
		ForestAllocTrees(forest, sizes->num_trees, status) &&
		ForestAllocNodes(forest, sizes->num_nodes, status) &&
		ForestAllocCategoryWords(forest, sizes->num_words, status) &&
		LgbAllocScratch(&scratch, sizes, status);
	for (int32_t t = 0; ok && t < sizes->num_trees; t++)
	{
		LgbTreeText tree;
		bool		done;

		ok = LgbNextTree(&cur, t, &tree, &done, status) &&
			LgbTreeCounts(&tree, status);
		if (ok && done)
			ok = StatusFail(status, SILVAN_ERROR_INTERNAL, "LightGBM reader lost its place",
							"Tree %d was counted but not found again.", t);
		if (ok && CancelTickN(&scratch.ticks, (uint32_t) tree.num_leaves))
			ok = StatusCanceled(status, "parsing the model");
		if (!ok)
			break;
		forest->trees[t].first_node = node;
		forest->trees[t].num_nodes = (int32_t) (2 * tree.num_leaves - 1);
		forest->trees[t].group = (int32_t) (t % per_iteration);
		ok = LgbFillTree(forest, &tree, &scratch, word, status);
		node += forest->trees[t].num_nodes;
		word += tree.num_cat_words;
	}
	LgbFreeScratch(&scratch);
	if (ok)
		DecodeRelease(budget, LgbScratchBytes(sizes));
	return ok;
}

/* Find the value of "key:value" among the objective's parameters */
static bool
LgbObjectiveParam(LgbSpan objective, const char *key, double *out,
				  SilvanStatus *status)
{
	char		buf[LGB_MAX_TOKEN];
	size_t		klen = strlen(key);
	bool		too_long;

	while (LgbNextToken(&objective, buf, &too_long))
		if (strncmp(buf, key, klen) == 0 && buf[klen] == ':')
		{
			if (LgbTokenToDouble(buf + klen + 1, out) && isfinite(*out) && *out > 0.0)
				return true;
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
							  "Parameter \"%s\" of field \"objective\" is \"%s\"; expected a positive number.",
							  key, buf + klen + 1);
		}
	return true;
}

/* Does the objective have the bare parameter word (like "sqrt")? */
static bool
LgbObjectiveFlag(LgbSpan objective, const char *word)
{
	char		buf[LGB_MAX_TOKEN];
	bool		too_long;

	while (LgbNextToken(&objective, buf, &too_long))
		if (strcmp(buf, word) == 0)
			return true;
	return false;
}

/* Look up the objective's first word */
static const LgbObjective *
LgbFindObjective(const char *name)
{
	for (size_t i = 0; i < sizeof(lgb_objectives) / sizeof(lgb_objectives[0]); i++)
		if (strcmp(lgb_objectives[i].name, name) == 0)
			return &lgb_objectives[i];
	return NULL;
}

/* Check the group and class counts agree with the task */
static bool
LgbSetGroups(Forest *forest, const LgbHeader *header, SilvanStatus *status)
{
	int64_t		groups = header->num_tree_per_iteration;

	if (forest->task == FOREST_TASK_MULTICLASS)
	{
		if (groups != header->num_class)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
							  "Field \"num_tree_per_iteration\" is %lld but field \"num_class\" is %lld.",
							  (long long) groups, (long long) header->num_class);
		forest->num_classes = (int32_t) header->num_class;
	}
	else if (groups != 1 || header->num_class != 1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Objective \"%s\" has one output but fields \"num_class\" and \"num_tree_per_iteration\" are %lld and %lld.",
						  forest->objective, (long long) header->num_class, (long long) groups);
	else
		forest->num_classes = forest->task == FOREST_TASK_BINARY ? 2 : 1;
	return ForestAllocBaseMargin(forest, (int32_t) groups, status);
}

/* Set task, transform, sigmoid scale and groups from the objective line */
static bool
LgbApplyObjective(Forest *forest, const LgbHeader *header, SilvanStatus *status)
{
	const LgbObjective *obj;
	char		name[LGB_MAX_TOKEN] = "regression";
	LgbSpan		rest = header->objective;
	bool		too_long = false;

	if (header->has_objective && !LgbNextToken(&rest, name, &too_long))
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported LightGBM objective",
						  too_long ? "Field \"objective\" is too long." :
						  "Field \"objective\" is empty.");
	if ((obj = LgbFindObjective(name)) == NULL)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported LightGBM objective",
						  "Objective \"%.64s\" is not supported.", name);
	snprintf(forest->objective, sizeof(forest->objective), "%s", obj->name);
	forest->task = obj->task;
	forest->transform = obj->transform;
	forest->sigmoid_alpha = 1.0;
	if (obj->transform == FOREST_TRANSFORM_IDENTITY && forest->task == FOREST_TASK_REGRESSION &&
		LgbObjectiveFlag(rest, "sqrt"))
		forest->transform = FOREST_TRANSFORM_SIGNED_SQUARE;
	if ((strcmp(obj->name, "binary") == 0 || strcmp(obj->name, "multiclassova") == 0) &&
		!LgbObjectiveParam(rest, "sigmoid", &forest->sigmoid_alpha, status))
		return false;
	return LgbSetGroups(forest, header, status);
}

/* Explain text that is not LightGBM's text format */
static bool
LgbNotText(const char *text, size_t len, SilvanStatus *status)
{
	size_t		i = 0;

	while (i < len && strchr(" \t\r\n", text[i]) && text[i] != '\0')
		i++;
	if (i < len && text[i] == '{')
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "unsupported model format",
						  "This looks like JSON, such as a LightGBM JSON dump (dump_model()); save the model with save_model() as text and load that instead.");
	return StatusFail(status, SILVAN_ERROR_SYNTAX, "invalid LightGBM model text",
					  "The text has no \"Tree=\" or \"end of trees\" line; it is not a LightGBM save_model() text file.");
}

/*
 * Give the forest the names of the header's "feature_names=" line, if any.
 * Charged: the pointers and lengths here, the forest's copy (a pointer and
 * the text) and the sorted pointers that check it; the copy stays charged.
 */
static bool
LgbApplyFeatureNames(Forest *forest, const LgbHeader *header, DecodeBudget *budget,
					 SilvanStatus *status)
{
	LgbSpan		rest = header->feature_names;
	int64_t		n;
	const char **strings;
	size_t	   *lengths;
	bool		ok;

	if (!header->has_feature_names)
		return true;
	n = LgbCountTokens(rest);
	if (n != forest->num_features)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid LightGBM model",
						  "Field \"feature_names\" has %lld names; field \"max_feature_idx\" makes %d features.",
						  (long long) n, forest->num_features);
	if (!DecodeCharge(budget, 32 * n + (int64_t) rest.len + n + 4 * DECODE_CHUNK_OVERHEAD,
					  "field \"feature_names\"", status))
		return false;
	strings = malloc(sizeof(char *) * (n > 0 ? n : 1));
	lengths = malloc(sizeof(size_t) * (n > 0 ? n : 1));
	if (strings == NULL || lengths == NULL)
		ok = StatusNoMemory(status, "the feature names");
	else
	{
		uint32_t	ticks = 0;

		for (int64_t i = 0; i < n; i++)
		{
			if (CancelTick(&ticks))
			{
				free(strings);
				free(lengths);
				return StatusCanceled(status, "reading the feature names");
			}
			while (*rest.p == ' ' || *rest.p == '\t')
				rest.p++, rest.len--;
			strings[i] = rest.p;
			for (lengths[i] = 0; lengths[i] < rest.len &&
				 rest.p[lengths[i]] != ' ' && rest.p[lengths[i]] != '\t'; lengths[i]++)
				;
			rest.p += lengths[i];
			rest.len -= lengths[i];
		}
		ok = ForestSetFeatureStrings(forest, FOREST_FEATURE_NAMES, strings, lengths, n, status);
	}
	free(strings);
	free(lengths);
	if (ok)
		DecodeRelease(budget, 24 * n + 3 * DECODE_CHUNK_OVERHEAD);
	return ok;
}

/* Read the header's counts into the forest */
static bool
LgbApplyHeader(Forest *forest, const LgbHeader *header, DecodeBudget *budget,
			   SilvanStatus *status)
{
	forest->source = FOREST_SOURCE_LIGHTGBM;
	forest->precision = FOREST_FLOAT64;
	forest->category_rule = FOREST_CATEGORY_TRUNCATE;
	forest->aggregate = FOREST_AGGREGATE_SUM;
	forest->base_margin_last = false;
	forest->num_features = (int32_t) header->max_feature_idx + 1;
	forest->average_output = header->average_output;
	forest->average_divisor = 1;
	return LgbApplyFeatureNames(forest, header, budget, status) &&
		LgbApplyObjective(forest, header, status);
}

/* Parse LightGBM save_model() text into a forest */
Forest *
ParseLightgbmText(const char *text, size_t len, DecodeBudget *budget, SilvanStatus *status)
{
	LgbCursor	cur = {text, text + len, 1};
	LgbHeader	header;
	LgbSizes	sizes;
	Forest	   *forest;

	StatusClear(status);
	if (!LgbReadHeader(&cur, &header, status))
	{
		if (cur.p >= cur.end && status->kind != SILVAN_ERROR_CANCELED)	/* never found a tree */
			LgbNotText(text, len, status);
		return NULL;
	}
	if (cur.p >= cur.end)
	{
		LgbNotText(text, len, status);
		return NULL;
	}
	if ((forest = ForestCreate(status)) == NULL)
		return NULL;
	if (LgbApplyHeader(forest, &header, budget, status) &&
		LgbScanTrees(cur, &sizes, status) &&
		LgbCheckTreeCount(&header, &sizes, status) &&
		LgbFillTrees(forest, cur, &sizes, header.num_tree_per_iteration, budget, status))
	{
		if (forest->average_output)
			forest->average_divisor = (int32_t) (forest->num_trees / header.num_tree_per_iteration);
		return forest;
	}
	ForestFree(forest);
	return NULL;
}
