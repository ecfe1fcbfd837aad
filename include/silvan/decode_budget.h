/*
 * decode_budget.h
 *		What reading a model may cost: memory in proportion to its bytes.
 *
 * A model is untrusted input, and a reader that believes its counts can be
 * made to allocate gigabytes from a few megabytes: json-c spends some 100
 * heap bytes on a two-byte JSON value, protobuf-c some 250 on a two-byte
 * empty message, and a header may claim a billion nodes in a kilobyte.  A
 * server also holds the model's text, its binary form and the catalog
 * tuple while loading it, so the readers themselves are held to a small
 * multiple of the model's size.
 *
 * Each read (ParseModel) has a DecodeBudget: DECODE_BUDGET_FLOOR plus
 * DECODE_BUDGET_PER_BYTE bytes per byte of the model.  Before a reader
 * allocates anything whose size the model decides (node arrays, scratch,
 * a json-c document, protobuf-c's structures through a bounded allocator),
 * it charges the bytes that will be held, computed from counts it has
 * already checked against the text (or, for json-c, an upper bound from
 * the text's brackets and separators), and releases them when it frees
 * them.  A charge past the budget fails the read with SILVAN_ERROR_LIMIT
 * before the memory is taken, naming what was being read and the numbers.
 * The forest a read returns stays charged, so ParseModel can charge
 * validation's scratch against what is left.
 *
 * Charges are upper bounds of what malloc will hold (sizes rounded up by
 * DECODE_CHUNK_OVERHEAD per allocation where allocations are many and
 * small), so a read that fits its budget peaks at about the budget; the
 * floor covers small models, whose fixed costs dominate.
 *
 * Sorting a model's arrays (tree ids, weights, feature names) can take
 * seconds on a hostile model, and qsort can neither be interrupted nor
 * promise not to allocate, so DecodeSort is a heapsort, in place, that
 * polls the cancel check.
 */
#ifndef SILVAN_DECODE_BUDGET_H
#define SILVAN_DECODE_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "silvan/status.h"

/* The budget: this floor plus this many bytes per byte of the model */
#define DECODE_BUDGET_FLOOR		(INT64_C(8) << 20)
#define DECODE_BUDGET_PER_BYTE	4

/* What malloc adds to each allocation (its header, rounding to 16 bytes) */
#define DECODE_CHUNK_OVERHEAD	16

typedef struct DecodeBudget
{
	const char *format;			/* "XGBoost JSON", for messages */
	size_t		input_bytes;
	int64_t		limit;			/* most bytes held at once */
	int64_t		used;			/* bytes charged now */
	int64_t		peak;			/* most charged at once so far */
	bool		refused;		/* a charge was refused: what, how much */
	int64_t		refused_bytes;
	char		refused_what[96];
} DecodeBudget;

/* Start a read's budget */
extern void DecodeBudgetInit(DecodeBudget *budget, const char *format, size_t input_bytes);

/* The budget of a model of input_bytes bytes */
extern int64_t DecodeBudgetLimit(size_t input_bytes);

/*
 * Charge bytes about to be held for what (a field, an array); false, with
 * a SILVAN_ERROR_LIMIT status, when they do not fit
 */
extern bool DecodeCharge(DecodeBudget *budget, int64_t bytes, const char *what,
						 SilvanStatus *status);

/* Charge without a status (the bounded allocator); false when they do not fit */
extern bool DecodeTake(DecodeBudget *budget, int64_t bytes, const char *what);

/* Give back bytes charged earlier */
extern void DecodeRelease(DecodeBudget *budget, int64_t bytes);

/* Fill status from the charge that was refused (DecodeTake's); always false */
extern bool DecodeBudgetFail(const DecodeBudget *budget, SilvanStatus *status);

/* Tests: another floor and bytes per byte for every read (0, 0: the default) */
extern void DecodeBudgetOverride(int64_t floor, int64_t per_byte);

/*
 * Sort n elements of size bytes in place (heapsort), polling the cancel
 * check; false when it was cancelled (the array is then in some order)
 */
extern bool DecodeSort(void *base, size_t n, size_t size,
					   int (*compare) (const void *, const void *));

#endif							/* SILVAN_DECODE_BUDGET_H */
