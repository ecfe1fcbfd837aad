/*
 * cancel.c
 *		The cancel check the long phases poll (cancel.h).
 */
#include <stdatomic.h>
#include <stddef.h>

#include "silvan/cancel.h"

/* The registered check (none until one is set); read by any thread */
static _Atomic(CancelCheck) cancel_check;

/* Register the check (NULL: nothing cancels) */
void
CancelSetCheck(CancelCheck check)
{
	atomic_store(&cancel_check, check);
}

/* Should the work in progress stop? */
bool
CancelRequested(void)
{
	CancelCheck check = atomic_load_explicit(&cancel_check, memory_order_relaxed);

	return check != NULL && check();
}

/* Record that a phase stopped on a cancel request; always returns false */
bool
StatusCanceled(SilvanStatus *status, const char *phase)
{
	return StatusFail(status, SILVAN_ERROR_CANCELED, "canceling statement due to user request",
					  "silvan stopped %s.", phase);
}
