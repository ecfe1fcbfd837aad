/*
 * fuzz.h
 *		What the libFuzzer targets of test/fuzz share.
 *
 * Each target defines LLVMFuzzerTestOneInput and checks its own stage,
 * including the heap it takes against the input's size; the model
 * targets (XGBoost JSON, LightGBM text, the binary form) then hand
 * whatever forest they got to FuzzCheckForest.  A failed check
 * prints what differed and aborts, which libFuzzer reports as a crash
 * and saves the input under the artifact prefix.
 */
#ifndef SILVAN_FUZZ_H
#define SILVAN_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "silvan/decode_budget.h"
#include "silvan/forest.h"
#include "silvan/schedule.h"

/* Most features plus groups a forest may have for its rows to be interpreted */
#define FUZZ_MAX_ROW_VALUES		(1 << 12)

/* Bytes a stage may hold beyond its allowance per input byte (FuzzAllocEnd) */
#define FUZZ_ALLOC_SLACK		(1 << 20)

/* libFuzzer's entry point */
extern int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Report a broken invariant and abort */
extern void FuzzFail(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));

/*
 * A failed stage must leave a clean status: a kind, a message, a detail;
 * SILVAN_ERROR_INTERNAL (a can't-happen) counts as a finding, and so does
 * SILVAN_ERROR_CANCELED (no target registers a cancel check)
 */
extern void FuzzCheckStatus(const SilvanStatus *status, const char *stage);

/* Start counting the heap bytes a stage holds at its peak */
extern void FuzzAllocBegin(void);

/*
 * Stop counting; the peak must stay within per_byte times the input's size
 * plus extra (plus FUZZ_ALLOC_SLACK): a reader that sizes anything by a
 * count it has not checked against the text fails here long before
 * -malloc_limit_mb
 */
extern void FuzzAllocEnd(const char *stage, size_t input_size, int64_t per_byte,
						 int64_t extra);

/*
 * The peak FuzzAllocEnd last measured must also fit the budget a read of
 * input_size bytes is held to (DecodeBudgetLimit, plus FUZZ_ALLOC_SLACK)
 */
extern void FuzzCheckBudget(const char *stage, size_t input_size);

/*
 * Serialize, reload, re-serialize and compare; interpret both forests on
 * awkward rows and compare margins and predictions bit for bit
 */
extern void FuzzCheckForest(const Forest *forest);

/*
 * Awkward rows for a forest (malloc'd, *num_rows of them); NULL when it
 * has more than FUZZ_MAX_ROW_VALUES features and groups
 */
extern void *FuzzMakeRows(const Forest *forest, int64_t *num_rows);

/* fuzz_lower.c: a forest to lower, its rows and its profile on them */
typedef struct FuzzLowering
{
	const Forest *forest;
	const void *rows;
	int64_t		num_rows;
	ForestProfile profile;
} FuzzLowering;

extern void FuzzLoweringInit(FuzzLowering *l, const Forest *forest,
							 const void *rows, int64_t num_rows);
extern void FuzzLoweringFree(FuzzLowering *l);

/* Lower under a schedule as CompileForest does, short of code generation */
extern void FuzzLower(const FuzzLowering *l, const Schedule *schedule, bool gather);

/* Lower a forest under the default schedule and a few others */
extern void FuzzLowerForest(const Forest *forest);

#endif							/* SILVAN_FUZZ_H */
