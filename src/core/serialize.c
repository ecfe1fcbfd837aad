/*
 * serialize.c
 *		The compact binary form of a validated Forest, stored in the catalog.
 *
 * A backend loads a model from this form without re-parsing its JSON or
 * text.  Layout (host byte order; the catalog never leaves the machine's
 * architecture in practice, and the magic catches a mismatch):
 *
 *   "SLVF" u32 version
 *   header: source task transform precision average_output (u8 each),
 *           objective (64 bytes), sigmoid_alpha f64, num_features
 *           num_groups num_classes average_divisor num_trees (i32),
 *           num_nodes num_category_words (i64), base_margin f64 x groups
 *   v2:     aggregate base_margin_last category_rule has_labels (u8 each)
 *   trees:  num_nodes i32, group i32 (first_node follows from the order)
 *   nodes:  kind u8, then
 *           leaf:        value (f32 for FLOAT32 forests, else f64)
 *           numeric:     flags u8, feature left right i32, threshold (f32|f64)
 *           categorical: flags u8, feature left right i32, offset i64, words i32
 *   words:  u32 x num_category_words
 *   v2, has_labels: num_classes x (u32 length, bytes): the class labels
 *
 * Node flags: bit 0 compare & 1, bits 1-2 missing, bit 3 default_left, bit
 * 4 category_in_left, bits 5-6 compare >> 1 (v2; zero for < and <=).
 *
 * Versions: 1 (silvan up to 0.2) had no v2 fields; its forests are all
 * XGBoost or LightGBM ones, so a version 1 form loads with SUM
 * aggregation, base margins first, and the category rule of its source
 * (the one place where the source still decides a rule).  The writer
 * always writes version 2, whose XGBoost and LightGBM nodes are byte for
 * byte those of version 1: the new fields sit after the base margins and
 * at the end, so a v1 form's offsets are a v2 form's.
 *
 * The transform byte is a ForestTransform.  A new transform takes a new
 * value (EXP_DOUBLE, 12) rather than a stored value changing its meaning.
 * One stored value is read as another: an XGBoost survival:aft form stored
 * with EXP (expf) before EXP_DOUBLE existed reads with EXP_DOUBLE, the
 * transform XGBoost computes for it (exp in double, rounded to float), so
 * that its predictions equal XGBoost's from the upgrade on.  A new value
 * needs no new version: a reader that lacks it refuses the form in
 * ForestValidateHeader ("out of range").
 *
 * Reading trusts nothing: the counts together are checked against the
 * bytes left before anything is allocated, and the result goes through
 * ForestValidate.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "silvan/forest.h"

#define FOREST_MAGIC		"SLVF"
#define FOREST_FORMAT_VERSION	2
#define FOREST_FORMAT_VERSION_V1	1

/* A growable output buffer */
typedef struct Writer
{
	uint8_t    *data;
	size_t		size;
	size_t		capacity;
	bool		failed;
} Writer;

/* A bounds-checked input cursor */
typedef struct Reader
{
	const uint8_t *data;
	size_t		size;
	size_t		pos;
	bool		failed;
} Reader;

/* Append bytes, growing the buffer as needed */
static void
WriteBytes(Writer *w, const void *bytes, size_t n)
{
	if (w->failed)
		return;
	if (w->size + n > w->capacity)
	{
		size_t		cap = w->capacity ? w->capacity : 4096;
		uint8_t    *grown;

		while (cap < w->size + n)
			cap *= 2;
		grown = realloc(w->data, cap);
		if (grown == NULL)
		{
			w->failed = true;
			return;
		}
		w->data = grown;
		w->capacity = cap;
	}
	memcpy(w->data + w->size, bytes, n);
	w->size += n;
}

#define WRITE(w, type, value) \
	do { type v_ = (type) (value); WriteBytes((w), &v_, sizeof(v_)); } while (0)

/* Consume bytes, or mark the reader failed when too few remain */
static bool
ReadBytes(Reader *r, void *bytes, size_t n)
{
	if (r->failed || r->size - r->pos < n)
	{
		r->failed = true;
		memset(bytes, 0, n);
		return false;
	}
	memcpy(bytes, r->data + r->pos, n);
	r->pos += n;
	return true;
}

/* Read a value of the given type */
#define READ_AS(r, type, target) \
	do { type v_; ReadBytes((r), &v_, sizeof(v_)); (target) = v_; } while (0)

/* Write a value in the forest's precision */
static void
WriteValue(Writer *w, const Forest *forest, double value)
{
	if (forest->precision == FOREST_FLOAT32)
		WRITE(w, float, value);
	else
		WRITE(w, double, value);
}

/* Read a value in the forest's precision */
static double
ReadValue(Reader *r, const Forest *forest)
{
	double		value;

	if (forest->precision == FOREST_FLOAT32)
		READ_AS(r, float, value);
	else
		READ_AS(r, double, value);
	return value;
}

/* Write the forest-wide header */
static void
WriteHeader(Writer *w, const Forest *forest)
{
	WriteBytes(w, FOREST_MAGIC, 4);
	WRITE(w, uint32_t, FOREST_FORMAT_VERSION);
	WRITE(w, uint8_t, forest->source);
	WRITE(w, uint8_t, forest->task);
	WRITE(w, uint8_t, forest->transform);
	WRITE(w, uint8_t, forest->precision);
	WRITE(w, uint8_t, forest->average_output);
	WriteBytes(w, forest->objective, sizeof(forest->objective));
	WRITE(w, double, forest->sigmoid_alpha);
	WRITE(w, int32_t, forest->num_features);
	WRITE(w, int32_t, forest->num_groups);
	WRITE(w, int32_t, forest->num_classes);
	WRITE(w, int32_t, forest->average_divisor);
	WRITE(w, int32_t, forest->num_trees);
	WRITE(w, int64_t, forest->num_nodes);
	WRITE(w, int64_t, forest->num_category_words);
	for (int32_t g = 0; g < forest->num_groups; g++)
		WRITE(w, double, forest->base_margin[g]);
	WRITE(w, uint8_t, forest->aggregate);
	WRITE(w, uint8_t, forest->base_margin_last);
	WRITE(w, uint8_t, forest->category_rule);
	WRITE(w, uint8_t, forest->class_labels != NULL);
}

/* Write the class labels, if any (v2) */
static void
WriteClassLabels(Writer *w, const Forest *forest)
{
	if (forest->class_labels == NULL)
		return;
	for (int32_t c = 0; c < forest->num_classes; c++)
	{
		size_t		n = strlen(forest->class_labels[c]);

		WRITE(w, uint32_t, n);
		WriteBytes(w, forest->class_labels[c], n);
	}
}

/* Write one node */
static void
WriteNode(Writer *w, const Forest *forest, const ForestNode *node)
{
	WRITE(w, uint8_t, node->kind);
	if (node->kind == FOREST_NODE_LEAF)
	{
		WriteValue(w, forest, node->leaf_value);
		return;
	}
	WRITE(w, uint8_t, (node->compare & 1) | (node->missing << 1) |
		  (node->default_left << 3) | (node->category_in_left << 4) |
		  ((node->compare >> 1) << 5));
	WRITE(w, int32_t, node->feature);
	WRITE(w, int32_t, node->left);
	WRITE(w, int32_t, node->right);
	if (node->kind == FOREST_NODE_NUMERIC)
		WriteValue(w, forest, node->threshold);
	else
	{
		WRITE(w, int64_t, node->category_offset);
		WRITE(w, int32_t, node->category_words);
	}
}

/* Serialize a validated forest into a malloc'd buffer */
bool
ForestSerialize(const Forest *forest, uint8_t **data, size_t *size,
				SilvanStatus *status)
{
	Writer		w = {0};
	uint32_t	ticks = 0;

	WriteHeader(&w, forest);
	for (int32_t t = 0; t < forest->num_trees; t++)
	{
		WRITE(&w, int32_t, forest->trees[t].num_nodes);
		WRITE(&w, int32_t, forest->trees[t].group);
	}
	for (int64_t n = 0; n < forest->num_nodes; n++)
	{
		if (CancelTick(&ticks))
		{
			free(w.data);
			return StatusCanceled(status, "writing the model's binary form");
		}
		WriteNode(&w, forest, &forest->nodes[n]);
	}
	if (forest->num_category_words > 0)
		WriteBytes(&w, forest->category_words,
				   sizeof(uint32_t) * (size_t) forest->num_category_words);
	WriteClassLabels(&w, forest);
	if (w.failed)
	{
		free(w.data);
		return StatusNoMemory(status, "the serialized model");
	}
	*data = w.data;
	*size = w.size;
	return true;
}

/*
 * Do the counts fit in the bytes left?  A base margin and a tree take 8
 * bytes each, a node at least 1 + 4 (a float leaf; 1 + 8 for a double
 * one), a category word 4.  Each term is at most the bytes left, so the
 * sum cannot overflow.
 */
static bool
CountsFit(const Reader *r, const Forest *forest, int64_t groups, int64_t trees,
		  int64_t nodes, int64_t words, uint64_t extra)
{
	uint64_t	left = r->size - r->pos;
	uint64_t	node_bytes = forest->precision == FOREST_FLOAT32 ? 5 : 9;

	if (left < extra)			/* the v2 fields after the base margins */
		return false;
	left -= extra;

	if ((uint64_t) groups > left / 8 || (uint64_t) trees > left / 8 ||
		(uint64_t) nodes > left / node_bytes || (uint64_t) words > left / 4)
		return false;
	return (uint64_t) groups * 8 + (uint64_t) trees * 8 +
		(uint64_t) nodes * node_bytes + (uint64_t) words * 4 <= left;
}

/* Read the header into a fresh forest; counts are checked against the bytes left */
static bool
ReadHeader(Reader *r, Forest *forest, int64_t *num_nodes, int64_t *num_words,
		   int32_t *num_trees, bool *has_labels, SilvanStatus *status)
{
	char		magic[4];
	uint32_t	version;
	int32_t		groups;

	ReadBytes(r, magic, 4);
	READ_AS(r, uint32_t, version);
	if (r->failed || memcmp(magic, FOREST_MAGIC, 4) != 0 ||
		(version != FOREST_FORMAT_VERSION && version != FOREST_FORMAT_VERSION_V1))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid stored model",
						  "The stored model does not start with a known header.");
	READ_AS(r, uint8_t, forest->source);
	READ_AS(r, uint8_t, forest->task);
	READ_AS(r, uint8_t, forest->transform);
	READ_AS(r, uint8_t, forest->precision);
	READ_AS(r, uint8_t, forest->average_output);
	ReadBytes(r, forest->objective, sizeof(forest->objective));
	forest->objective[sizeof(forest->objective) - 1] = '\0';
	if (forest->source == FOREST_SOURCE_XGBOOST && forest->transform == FOREST_TRANSFORM_EXP &&
		strcmp(forest->objective, "survival:aft") == 0)
		forest->transform = FOREST_TRANSFORM_EXP_DOUBLE;	/* stored before it existed */
	READ_AS(r, double, forest->sigmoid_alpha);
	READ_AS(r, int32_t, forest->num_features);
	READ_AS(r, int32_t, groups);
	READ_AS(r, int32_t, forest->num_classes);
	READ_AS(r, int32_t, forest->average_divisor);
	READ_AS(r, int32_t, *num_trees);
	READ_AS(r, int64_t, *num_nodes);
	READ_AS(r, int64_t, *num_words);
	if (r->failed || groups < 1 || groups > FOREST_MAX_GROUPS ||
		*num_trees < 0 || *num_nodes < 0 || *num_words < 0 ||
		!CountsFit(r, forest, groups, *num_trees, *num_nodes, *num_words,
				   version == FOREST_FORMAT_VERSION_V1 ? 0 : 4))
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid stored model",
						  "The stored model's counts do not match its size.");
	if (!ForestAllocBaseMargin(forest, groups, status))
		return false;
	for (int32_t g = 0; g < groups; g++)
		READ_AS(r, double, forest->base_margin[g]);
	*has_labels = false;
	if (version == FOREST_FORMAT_VERSION_V1)
	{
		forest->category_rule = forest->source == FOREST_SOURCE_XGBOOST ?
			FOREST_CATEGORY_NONNEGATIVE : FOREST_CATEGORY_TRUNCATE;
		return true;
	}
	READ_AS(r, uint8_t, forest->aggregate);
	READ_AS(r, uint8_t, forest->base_margin_last);
	READ_AS(r, uint8_t, forest->category_rule);
	READ_AS(r, uint8_t, *has_labels);
	return true;
}

/* Read num_classes class labels (v2), each checked by ForestSetClassLabels */
static bool
ReadClassLabels(Reader *r, Forest *forest, SilvanStatus *status)
{
	int32_t		n = forest->num_classes;
	const char **labels;
	size_t	   *lengths;
	bool		ok = true;

	if (n < 1 || (size_t) n > (r->size - r->pos) / 4)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid stored model",
						  "The stored model's class labels do not match its size.");
	labels = malloc(sizeof(char *) * n);
	lengths = malloc(sizeof(size_t) * n);
	if (labels == NULL || lengths == NULL)
		ok = StatusNoMemory(status, "the class labels");
	for (int32_t c = 0; ok && c < n; c++)
	{
		uint32_t	len;

		READ_AS(r, uint32_t, len);
		if (r->failed || len > r->size - r->pos)
		{
			ok = StatusFail(status, SILVAN_ERROR_INVALID, "invalid stored model",
							"The stored model's class labels do not match its size.");
			break;
		}
		labels[c] = (const char *) r->data + r->pos;
		lengths[c] = len;
		r->pos += len;
	}
	if (ok)
		ok = ForestSetClassLabels(forest, labels, lengths, n, status);
	free(labels);
	free(lengths);
	return ok;
}

/* The most bytes a node takes: categorical, kind flags feature left right offset words */
#define NODE_MAX_BYTES	(2 + 3 * sizeof(int32_t) + sizeof(int64_t) + sizeof(int32_t))

/* A node's rule flags into its fields */
static void
SetNodeFlags(ForestNode *node, uint8_t flags)
{
	node->compare = (flags & 1) | (((flags >> 5) & 3) << 1);
	node->missing = (flags >> 1) & 3;
	node->default_left = (flags >> 3) & 1;
	node->category_in_left = (flags >> 4) & 1;
}

/* The value of value_size bytes (float or double) at p */
static double
ValueAt(const uint8_t *p, size_t value_size)
{
	float		f;
	double		d;

	if (value_size == sizeof(float))
	{
		memcpy(&f, p, sizeof(f));
		return f;
	}
	memcpy(&d, p, sizeof(d));
	return d;
}

/*
 * Read one node from at least NODE_MAX_BYTES bytes, without checking each
 * field: the same bytes and result as ReadNode's checked reads, at a
 * fraction of their cost (a 50,000-node model is read when a backend first
 * uses it)
 */
static void
ReadNodeUnchecked(Reader *r, const Forest *forest, ForestNode *node)
{
	const uint8_t *p = r->data + r->pos;
	size_t		value_size = forest->precision == FOREST_FLOAT32 ? sizeof(float) : sizeof(double);

	node->kind = p[0];
	node->feature = node->left = node->right = -1;
	if (node->kind == FOREST_NODE_LEAF)
	{
		node->leaf_value = ValueAt(p + 1, value_size);
		r->pos += 1 + value_size;
		return;
	}
	SetNodeFlags(node, p[1]);
	memcpy(&node->feature, p + 2, sizeof(int32_t));
	memcpy(&node->left, p + 6, sizeof(int32_t));
	memcpy(&node->right, p + 10, sizeof(int32_t));
	if (node->kind == FOREST_NODE_NUMERIC)
	{
		node->threshold = ValueAt(p + 14, value_size);
		r->pos += 14 + value_size;
		return;
	}
	memcpy(&node->category_offset, p + 14, sizeof(int64_t));
	memcpy(&node->category_words, p + 22, sizeof(int32_t));
	r->pos += 26;
}

/* Read one node */
static void
ReadNode(Reader *r, const Forest *forest, ForestNode *node)
{
	uint8_t		flags;

	if (!r->failed && r->size - r->pos >= NODE_MAX_BYTES)
	{
		ReadNodeUnchecked(r, forest, node);
		return;
	}
	READ_AS(r, uint8_t, node->kind);
	node->feature = node->left = node->right = -1;
	if (node->kind == FOREST_NODE_LEAF)
	{
		node->leaf_value = ReadValue(r, forest);
		return;
	}
	READ_AS(r, uint8_t, flags);
	SetNodeFlags(node, flags);
	READ_AS(r, int32_t, node->feature);
	READ_AS(r, int32_t, node->left);
	READ_AS(r, int32_t, node->right);
	if (node->kind == FOREST_NODE_NUMERIC)
		node->threshold = ReadValue(r, forest);
	else
	{
		READ_AS(r, int64_t, node->category_offset);
		READ_AS(r, int32_t, node->category_words);
	}
}

/* Read trees, nodes and category words after the header */
static bool
ReadBody(Reader *r, Forest *forest, int32_t num_trees, int64_t num_nodes,
		 int64_t num_words, bool has_labels, SilvanStatus *status)
{
	int64_t		first = 0;
	uint32_t	ticks = 0;

	if (!ForestAllocTrees(forest, num_trees, status) ||
		!ForestAllocNodes(forest, num_nodes, status) ||
		!ForestAllocCategoryWords(forest, num_words, status))
		return false;
	for (int32_t t = 0; t < num_trees; t++)
	{
		forest->trees[t].first_node = first;
		READ_AS(r, int32_t, forest->trees[t].num_nodes);
		READ_AS(r, int32_t, forest->trees[t].group);
		if (forest->trees[t].num_nodes > 0)
			first += forest->trees[t].num_nodes;
	}
	for (int64_t n = 0; n < num_nodes && !r->failed; n++)
	{
		if (CancelTick(&ticks))
			return StatusCanceled(status, "reading the stored model");
		ReadNode(r, forest, &forest->nodes[n]);
	}
	if (num_words > 0)
		ReadBytes(r, forest->category_words, sizeof(uint32_t) * (size_t) num_words);
	if (!r->failed && has_labels && !ReadClassLabels(r, forest, status))
		return false;
	if (r->failed || r->pos != r->size)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid stored model",
						  "The stored model is truncated or has trailing bytes.");
	return true;
}

/* Step over one node without reading it; marks the reader failed when too few bytes remain */
static void
SkipNode(Reader *r, size_t value_size)
{
	uint8_t		kind;
	size_t		n;

	READ_AS(r, uint8_t, kind);
	n = kind == FOREST_NODE_LEAF ? value_size :
		kind == FOREST_NODE_NUMERIC ? 1 + 3 * sizeof(int32_t) + value_size :
		1 + 3 * sizeof(int32_t) + sizeof(int64_t) + sizeof(int32_t);
	if (r->failed || r->size - r->pos < n)
		r->failed = true;
	else
		r->pos += n;
}

/*
 * Read a serialized forest's header, class labels and digest, but not its
 * trees: the result has no trees, nodes or category words (counts zero,
 * arrays absent), so whatever reads trees sees an empty forest, never
 * memory it does not own.  *stored_nodes gets the form's node count.  For
 * a backend whose code cache already has the model's machine code and
 * buffers: margins, transforms, outputs and feature names need only this.
 * The header is checked as ForestDeserialize checks it (ReadHeader,
 * ForestValidateHeader); the trees are checked when they are read.
 */
Forest *
ForestDeserializeHeader(const uint8_t *data, size_t size, int64_t *stored_nodes,
						SilvanStatus *status)
{
	Reader		r = {data, size, 0, false};
	Forest	   *forest = ForestCreate(status);
	int64_t		num_nodes = 0;
	int64_t		num_words = 0;
	int32_t		num_trees = 0;
	bool		has_labels = false;
	bool		ok;

	if (forest == NULL)
		return NULL;
	ok = ReadHeader(&r, forest, &num_nodes, &num_words, &num_trees, &has_labels, status);
	if (ok && has_labels)
	{
		/* the labels follow the trees, nodes and words (ReadHeader checked their counts) */
		size_t		value_size = forest->precision == FOREST_FLOAT32 ? sizeof(float) : sizeof(double);

		uint32_t	ticks = 0;
		bool		canceled = false;

		r.pos += (size_t) num_trees * 2 * sizeof(int32_t);
		for (int64_t n = 0; n < num_nodes && !r.failed && !canceled; n++)
		{
			canceled = CancelTick(&ticks);
			SkipNode(&r, value_size);
		}
		if (!r.failed && (uint64_t) num_words > (r.size - r.pos) / sizeof(uint32_t))
			r.failed = true;
		else if (!r.failed)
			r.pos += (size_t) num_words * sizeof(uint32_t);
		ok = canceled ? StatusCanceled(status, "reading the stored model") :
			!r.failed ? ReadClassLabels(&r, forest, status) :
			StatusFail(status, SILVAN_ERROR_INVALID, "invalid stored model",
					   "The stored model is truncated.");
	}
	if (!ok || !ForestValidateHeader(forest, status))
	{
		ForestFree(forest);
		return NULL;
	}
	*stored_nodes = num_nodes;
	Sha256Hex(data, size, forest->digest);
	return forest;
}

/* Rebuild and validate a forest from its serialized form, with the form's digest */
Forest *
ForestDeserialize(const uint8_t *data, size_t size, SilvanStatus *status)
{
	Reader		r = {data, size, 0, false};
	Forest	   *forest = ForestCreate(status);
	int64_t		num_nodes = 0;
	int64_t		num_words = 0;
	int32_t		num_trees = 0;
	bool		has_labels = false;

	if (forest == NULL)
		return NULL;
	if (!ReadHeader(&r, forest, &num_nodes, &num_words, &num_trees, &has_labels, status) ||
		!ReadBody(&r, forest, num_trees, num_nodes, num_words, has_labels, status) ||
		!ForestDropUnreached(forest, status) ||
		!ForestValidate(forest, status))
	{
		ForestFree(forest);
		return NULL;
	}
	Sha256Hex(data, size, forest->digest);
	return forest;
}
