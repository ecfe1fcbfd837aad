/*
 * fuzz_forest.c
 *		The checks every model target makes of a forest its reader accepted.
 *
 * A forest that parsed (and so passed ForestValidate) must survive the
 * trip through the catalog: its binary form must load again, the reloaded
 * forest must serialize to the very same bytes and dump to the same text,
 * and the reference interpreter must give both forests the same margins,
 * predictions and probabilities, bit for bit.  The rows are awkward on
 * purpose: NaN, signed zeros, infinities, the largest, smallest and
 * denormal values, a negative fraction (LightGBM's category 0, no XGBoost
 * category), a value beyond every category set, and rows made of the
 * forest's own thresholds (and the next value up), where < and <= part,
 * and of a member of each category set.
 *
 * Dumps and rows are only compared for forests of at most
 * FUZZ_MAX_ROW_VALUES features and output groups together, so that a
 * small model declaring 16 million features or 65536 classes costs the
 * harness no more than the parser (the code is the same for smaller
 * counts).
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/allocator_interface.h>

#include "fuzz.h"

#define SPECIAL_ROWS	10
#define EDGE_ROWS		4
#define NUM_ROWS		(SPECIAL_ROWS + EDGE_ROWS)

/* Heap accounting between FuzzAllocBegin and FuzzAllocEnd */
static bool alloc_tracking = false;
static int64_t alloc_live = 0;
static int64_t alloc_peak = 0;

/* Report a broken invariant and abort */
void
FuzzFail(const char *fmt,...)
{
	va_list		args;

	fprintf(stderr, "fuzz check failed: ");
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fputc('\n', stderr);
	abort();
}

/* A failed stage must leave a clean status: a kind (not internal), a message, a detail */
void
FuzzCheckStatus(const SilvanStatus *status, const char *stage)
{
	size_t		mlen = strnlen(status->message, SILVAN_MESSAGE_LEN);
	size_t		dlen = strnlen(status->detail, SILVAN_DETAIL_LEN);

	/* nothing registers a cancel check here, so nothing may be cancelled */
	if (status->kind <= SILVAN_OK || status->kind > SILVAN_ERROR_LIMIT ||
		status->kind == SILVAN_ERROR_CANCELED)
		FuzzFail("%s failed with status kind %d", stage, (int) status->kind);
	if (status->kind == SILVAN_ERROR_INTERNAL)
		FuzzFail("%s failed with an internal error: %s: %s", stage,
				 status->message, status->detail);
	if (mlen == 0 || mlen == SILVAN_MESSAGE_LEN || !islower((unsigned char) status->message[0]) ||
		status->message[mlen - 1] == '.')
		FuzzFail("%s failed with a malformed message \"%.*s\"", stage,
				 (int) mlen, status->message);
	if (dlen == 0 || dlen == SILVAN_DETAIL_LEN)
		FuzzFail("%s failed (%s) without a detail", stage, status->message);
}

/* Sanitizer hook: count an allocation */
static void
AllocHook(const volatile void *ptr, size_t size)
{
	if (!alloc_tracking)
		return;
	alloc_live += (int64_t) size;
	if (alloc_live > alloc_peak)
		alloc_peak = alloc_live;
}

/* Sanitizer hook: uncount a free (the block is still allocated here) */
static void
FreeHook(const volatile void *ptr)
{
	if (alloc_tracking && ptr != NULL)
		alloc_live -= (int64_t) __sanitizer_get_allocated_size(ptr);
}

/* Start counting the heap bytes a stage holds at its peak */
void
FuzzAllocBegin(void)
{
	static bool installed = false;

	if (!installed && __sanitizer_install_malloc_and_free_hooks(AllocHook, FreeHook) == 0)
		FuzzFail("cannot install the malloc hooks");
	installed = true;
	alloc_live = 0;
	alloc_peak = 0;
	alloc_tracking = true;
}

/* Stop counting; fail when the peak is out of proportion to the input */
void
FuzzAllocEnd(const char *stage, size_t input_size, int64_t per_byte,
			 int64_t extra)
{
	int64_t		allowed = per_byte * (int64_t) input_size + extra + FUZZ_ALLOC_SLACK;

	alloc_tracking = false;
	if (alloc_peak > allowed)
		FuzzFail("%s held %lld heap bytes for %zu input bytes; at most %lld allowed",
				 stage, (long long) alloc_peak, input_size, (long long) allowed);
}

/* The peak of the stage FuzzAllocEnd stopped counting must fit a read's budget */
void
FuzzCheckBudget(const char *stage, size_t input_size)
{
	int64_t		allowed = DecodeBudgetLimit(input_size) + FUZZ_ALLOC_SLACK;

	if (alloc_peak > allowed)
		FuzzFail("%s held %lld heap bytes for %zu input bytes; its budget (decode_budget.h) is %lld",
				 stage, (long long) alloc_peak, input_size, (long long) allowed);
}

/* Allocate or abort */
static void *
MustAlloc(size_t size)
{
	void	   *p = calloc(1, size > 0 ? size : 1);

	if (p == NULL)
		FuzzFail("out of memory for %zu bytes", size);
	return p;
}

/* Serialize a forest, which must succeed for a validated one */
static uint8_t *
MustSerialize(const Forest *forest, size_t *size)
{
	uint8_t    *data = NULL;
	SilvanStatus status;

	if (!ForestSerialize(forest, &data, size, &status))
		FuzzFail("serialize: %s: %s", status.message, status.detail);
	return data;
}

/* Value of special row r, in the forest's precision */
static double
SpecialValue(const Forest *forest, int r)
{
	bool		f32 = forest->precision == FOREST_FLOAT32;

	switch (r)
	{
		case 0:
			return NAN;
		case 1:
			return 0.0;
		case 2:
			return -0.0;
		case 3:
			return INFINITY;
		case 4:
			return -INFINITY;
		case 5:
			return f32 ? FLT_MAX : DBL_MAX;
		case 6:
			return f32 ? -FLT_MAX : -DBL_MAX;
		case 7:
			return f32 ? FLT_TRUE_MIN : DBL_TRUE_MIN;
		case 8:
			return -0.5;
		default:
			return 3e7;
	}
}

/* Store x as feature f of row r */
static void
SetValue(const Forest *forest, void *rows, int r, int32_t f, double x)
{
	size_t		i = (size_t) r * (size_t) forest->num_features + (size_t) f;

	if (forest->precision == FOREST_FLOAT32)
		((float *) rows)[i] = (float) x;
	else
		((double *) rows)[i] = x;
}

/* A value at the edge of a split: its threshold or the next one up, or a member of its set */
static double
EdgeValue(const Forest *forest, const ForestNode *node, bool above)
{
	if (node->kind == FOREST_NODE_NUMERIC)
	{
		if (!above)
			return node->threshold;
		if (forest->precision == FOREST_FLOAT32)
			return nextafterf((float) node->threshold, INFINITY);
		return nextafter(node->threshold, INFINITY);
	}
	for (int32_t w = 0; w < node->category_words; w++)
	{
		uint32_t	word = forest->category_words[node->category_offset + w];

		if (word != 0)
			return (double) w * 32 + __builtin_ctz(word);
	}
	return 0.0;
}

/* The test rows: special values, then rows of split edges over a special background */
void *
FuzzMakeRows(const Forest *forest, int64_t *num_rows)
{
	void	   *rows;

	if ((int64_t) forest->num_features + forest->num_groups > FUZZ_MAX_ROW_VALUES)
		return NULL;
	rows = MustAlloc(NUM_ROWS * (size_t) forest->num_features * ForestValueSize(forest));
	*num_rows = NUM_ROWS;

	for (int r = 0; r < NUM_ROWS; r++)
		for (int32_t f = 0; f < forest->num_features; f++)
			SetValue(forest, rows, r, f, SpecialValue(forest, r % SPECIAL_ROWS));
	for (int64_t n = 0; n < forest->num_nodes; n++)
	{
		const ForestNode *node = &forest->nodes[n];
		int			k = (int) (n % EDGE_ROWS);

		if (node->kind != FOREST_NODE_LEAF)
			SetValue(forest, rows, SPECIAL_ROWS + k, node->feature,
					 EdgeValue(forest, node, k >= EDGE_ROWS / 2));
	}
	return rows;
}

/*
 * Everything the interpreter says of the rows (malloc'd, *count doubles):
 * per row its margins, transformed margins, prediction and probabilities
 */
static double *
Outputs(const Forest *forest, const void *rows, size_t *count)
{
	size_t		groups = (size_t) forest->num_groups;
	size_t		width = 2 * groups + 1 + (groups > 2 ? groups : 2);
	void	   *acc = MustAlloc(NUM_ROWS * groups * ForestValueSize(forest));
	double	   *margins = MustAlloc(NUM_ROWS * groups * sizeof(double));
	double	   *out = MustAlloc(NUM_ROWS * width * sizeof(double));

	ForestMarginsInit(forest, acc, NUM_ROWS);
	ForestInterpretAccumulate(forest, rows, NUM_ROWS, acc);
	ForestMarginsFinish(forest, acc, NUM_ROWS, margins);
	for (int r = 0; r < NUM_ROWS; r++)
	{
		const double *m = margins + r * groups;
		double	   *o = out + r * width;

		memcpy(o, m, groups * sizeof(double));
		ForestTransformRow(forest, m, o + groups);
		o[2 * groups] = ForestPredictRow(forest, m);
		if (ForestProbaRow(forest, m, o + 2 * groups + 1) > ForestProbaWidth(forest))
			FuzzFail("more probabilities than ForestProbaWidth");
	}
	free(acc);
	free(margins);
	*count = NUM_ROWS * width;
	return out;
}

/* Interpret both forests on the same rows and compare every output bit */
static void
CompareOutputs(const Forest *a, const Forest *b)
{
	int64_t		num_rows;
	void	   *rows = FuzzMakeRows(a, &num_rows);
	double	   *out_a;
	double	   *out_b;
	size_t		n_a;
	size_t		n_b;

	if (rows == NULL)
		FuzzFail("no rows for a forest said to be small");
	out_a = Outputs(a, rows, &n_a);
	out_b = Outputs(b, rows, &n_b);
	if (n_a != n_b)
		FuzzFail("the reloaded forest has %zu outputs, the original %zu", n_b, n_a);
	for (size_t i = 0; i < n_a; i++)
		if (memcmp(&out_a[i], &out_b[i], sizeof(double)) != 0)
			FuzzFail("output %zu differs after reloading: %.17g, then %.17g",
					 i, out_a[i], out_b[i]);
	free(rows);
	free(out_a);
	free(out_b);
}

/*
 * Give the reloaded forest the original's feature names and types, as the
 * adapter does from the catalog's columns (they are not in the binary form)
 */
static void
RestoreFeatureStrings(const Forest *original, Forest *reloaded)
{
	for (int f = 0; f < 2; f++)
	{
		char	  **list = f == 0 ? original->feature_names : original->feature_types;
		size_t	   *lengths;
		SilvanStatus status;

		if (list == NULL)
			continue;
		lengths = malloc(sizeof(size_t) * (original->num_features + 1));
		if (lengths == NULL)
			FuzzFail("out of memory restoring feature names");
		for (int32_t i = 0; i < original->num_features; i++)
			lengths[i] = strlen(list[i]);
		if (!ForestSetFeatureStrings(reloaded, f == 0 ? FOREST_FEATURE_NAMES : FOREST_FEATURE_TYPES,
									 (const char *const *) list, lengths,
									 original->num_features, &status))
			FuzzFail("the original's feature names are refused: %s", status.detail);
		free(lengths);
	}
}

/* Both forests must dump to the same text */
static void
CompareDumps(const Forest *a, const Forest *b)
{
	char	   *dump_a = ForestDump(a, true);
	char	   *dump_b = ForestDump(b, true);

	if (dump_a == NULL || dump_b == NULL)
		FuzzFail("out of memory dumping a forest");
	if (strcmp(dump_a, dump_b) != 0)
		FuzzFail("the reloaded forest dumps differently:\n%s\n---\n%s", dump_a, dump_b);
	free(dump_a);
	free(dump_b);
}

/* Serialize, reload, re-serialize and compare; interpret both forests */
void
FuzzCheckForest(const Forest *forest)
{
	SilvanStatus status;
	size_t		size1;
	size_t		size2;
	uint8_t    *bytes1 = MustSerialize(forest, &size1);
	uint8_t    *bytes2;
	Forest	   *reloaded = ForestDeserialize(bytes1, size1, &status);

	if (reloaded == NULL)
		FuzzFail("reload: %s: %s", status.message, status.detail);
	bytes2 = MustSerialize(reloaded, &size2);
	if (size1 != size2 || memcmp(bytes1, bytes2, size1) != 0)
		FuzzFail("the reloaded forest serializes differently (%zu bytes, then %zu)",
				 size1, size2);
	if ((int64_t) forest->num_features + forest->num_groups <= FUZZ_MAX_ROW_VALUES)
	{
		RestoreFeatureStrings(forest, reloaded);
		CompareDumps(forest, reloaded);
		CompareOutputs(forest, reloaded);
	}
	ForestFree(reloaded);
	free(bytes1);
	free(bytes2);
}
