/*
 * cancel.h
 *		How the long phases of the core learn that they should stop.
 *
 * Parsing a big model, lowering a schedule, generating code and LLVM's
 * passes and instruction selection can each take seconds on a large or
 * hostile input, and a user's statement_timeout, pg_cancel_backend() or
 * pg_terminate_backend() must stop them within a second.  The core never
 * raises, so it polls: the adapter registers a check (CancelSetCheck)
 * that reads PostgreSQL's pending-cancel and pending-die flags, and every
 * long phase calls CancelRequested() between units of work (a tree, a
 * function, a pass) and returns false with a status of kind
 * SILVAN_ERROR_CANCELED (StatusCanceled).  What the phase allocated is
 * freed on the way out, as on any failure.  The adapter then services
 * the interrupt (CHECK_FOR_INTERRUPTS), which raises PostgreSQL's own
 * error.
 *
 * The check may be called from any thread (LLVM's helper threads poll it
 * too): it only reads flags.  With no check registered (the unit tests,
 * the fuzzers) nothing is ever cancelled.
 */
#ifndef SILVAN_CANCEL_H
#define SILVAN_CANCEL_H

#include <stdbool.h>
#include <stdint.h>

#include "silvan/status.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* Answers whether the work in progress should stop; callable from any thread */
typedef bool (*CancelCheck) (void);

/* Register the check (NULL: nothing cancels) */
extern void CancelSetCheck(CancelCheck check);

/* Should the work in progress stop? */
extern bool CancelRequested(void);

/* Record that a phase stopped on a cancel request; always returns false */
extern bool StatusCanceled(SilvanStatus *status, const char *phase);

/*
 * Loops over a model's nodes, lines or values poll every
 * CANCEL_POLL_INTERVAL units of work: often enough that a cancel lands
 * within milliseconds, rarely enough that the check's indirect call costs
 * nothing next to the work
 */
#define CANCEL_POLL_INTERVAL	65536

/* Count one unit of work; poll the check once every CANCEL_POLL_INTERVAL */
static inline bool
CancelTick(uint32_t *ticks)
{
	if (++*ticks < CANCEL_POLL_INTERVAL)
		return false;
	*ticks = 0;
	return CancelRequested();
}

/* Count n units of work at once (a chunk of text); poll as CancelTick */
static inline bool
CancelTickN(uint32_t *ticks, uint32_t n)
{
	if ((*ticks += n) < CANCEL_POLL_INTERVAL)
		return false;
	*ticks = 0;
	return CancelRequested();
}

#ifdef __cplusplus
}
#endif

#endif							/* SILVAN_CANCEL_H */
