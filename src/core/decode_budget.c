/*
 * decode_budget.c
 *		The memory budget of a model's read, and a sort that polls for
 *		cancellation (decode_budget.h).
 */
#include <stdio.h>
#include <string.h>

#include "silvan/cancel.h"
#include "silvan/decode_budget.h"

/* Tests' override of the floor and bytes per byte (0: the default) */
static int64_t override_floor = 0;
static int64_t override_per_byte = 0;

/* The budget of a model of input_bytes bytes */
int64_t
DecodeBudgetLimit(size_t input_bytes)
{
	int64_t		floor = override_floor > 0 ? override_floor : DECODE_BUDGET_FLOOR;
	int64_t		per_byte = override_per_byte > 0 ? override_per_byte : DECODE_BUDGET_PER_BYTE;

	if ((uint64_t) input_bytes > (uint64_t) (INT64_MAX / 4 - floor) / (uint64_t) per_byte)
		return INT64_MAX / 4;
	return floor + per_byte * (int64_t) input_bytes;
}

/* Start a read's budget */
void
DecodeBudgetInit(DecodeBudget *budget, const char *format, size_t input_bytes)
{
	memset(budget, 0, sizeof(*budget));
	budget->format = format;
	budget->input_bytes = input_bytes;
	budget->limit = DecodeBudgetLimit(input_bytes);
}

/* Charge without a status; false (recording what) when the bytes do not fit */
bool
DecodeTake(DecodeBudget *budget, int64_t bytes, const char *what)
{
	if (bytes < 0 || bytes > budget->limit - budget->used)
	{
		if (!budget->refused)
		{
			budget->refused = true;
			budget->refused_bytes = bytes < 0 ? INT64_MAX : bytes;
			snprintf(budget->refused_what, sizeof(budget->refused_what), "%s", what);
		}
		return false;
	}
	budget->used += bytes;
	if (budget->used > budget->peak)
		budget->peak = budget->used;
	return true;
}

/* Charge bytes about to be held; false with a LIMIT status when they do not fit */
bool
DecodeCharge(DecodeBudget *budget, int64_t bytes, const char *what, SilvanStatus *status)
{
	if (DecodeTake(budget, bytes, what))
		return true;
	return DecodeBudgetFail(budget, status);
}

/* Give back bytes charged earlier */
void
DecodeRelease(DecodeBudget *budget, int64_t bytes)
{
	budget->used -= bytes;
	if (budget->used < 0)
		budget->used = 0;
}

/* Fill status from the refused charge; always false */
bool
DecodeBudgetFail(const DecodeBudget *budget, SilvanStatus *status)
{
	int64_t		floor = override_floor > 0 ? override_floor : DECODE_BUDGET_FLOOR;
	int64_t		per_byte = override_per_byte > 0 ? override_per_byte : DECODE_BUDGET_PER_BYTE;

	StatusFail(status, SILVAN_ERROR_LIMIT,
			   "model needs more memory to decode than its size justifies",
			   "Reading %s needs %lld more bytes with %lld held; the budget of this %zu-byte %s model is %lld bytes (%lld MB plus %lld bytes per byte of the model).",
			   budget->refused ? budget->refused_what : "the model",
			   (long long) budget->refused_bytes, (long long) budget->used,
			   budget->input_bytes, budget->format, (long long) budget->limit,
			   (long long) (floor >> 20), (long long) per_byte);
	return StatusHint(status, "Models saved by the training library stay well within this; the file may be corrupt or crafted.");
}

/* Tests: another floor and bytes per byte for every read (0, 0: the default) */
void
DecodeBudgetOverride(int64_t floor, int64_t per_byte)
{
	override_floor = floor;
	override_per_byte = per_byte;
}

/* Swap two elements of size bytes */
static inline void
SortSwap(char *a, char *b, size_t size)
{
	char		tmp[64];

	while (size > 0)
	{
		size_t		n = size < sizeof(tmp) ? size : sizeof(tmp);

		memcpy(tmp, a, n);
		memcpy(a, b, n);
		memcpy(b, tmp, n);
		a += n;
		b += n;
		size -= n;
	}
}

/* Move element root down the heap of n elements to its place */
static void
SortSiftDown(char *base, size_t root, size_t n, size_t size,
			 int (*compare) (const void *, const void *))
{
	for (;;)
	{
		size_t		child = 2 * root + 1;

		if (child >= n)
			return;
		if (child + 1 < n && compare(base + child * size, base + (child + 1) * size) < 0)
			child++;
		if (compare(base + root * size, base + child * size) >= 0)
			return;
		SortSwap(base + root * size, base + child * size, size);
		root = child;
	}
}

/* Sort in place (heapsort), polling the cancel check; false when cancelled */
bool
DecodeSort(void *base, size_t n, size_t size, int (*compare) (const void *, const void *))
{
	char	   *a = base;
	uint32_t	ticks = 0;

	for (size_t i = 1; i < n; i++)
	{
		if (CancelTick(&ticks))
			return false;
		if (compare(a + (i - 1) * size, a + i * size) > 0)
			break;
		if (i == n - 1)
			return true;		/* already sorted */
	}
	for (size_t i = n / 2; i-- > 0;)
	{
		SortSiftDown(a, i, n, size, compare);
		if (CancelTick(&ticks))
			return false;
	}
	for (size_t end = n; end-- > 1;)
	{
		SortSwap(a, a + end * size, size);
		SortSiftDown(a, 0, end, size, compare);
		if (CancelTick(&ticks))
			return false;
	}
	return true;
}
