/*
 * status.c
 *		Filling in a SilvanStatus.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "silvan/status.h"

/* Reset a status to success */
void
StatusClear(SilvanStatus *status)
{
	status->kind = SILVAN_OK;
	status->message[0] = '\0';
	status->detail[0] = '\0';
	status->hint[0] = '\0';
}

/* Record a failure; always returns false */
bool
StatusFail(SilvanStatus *status, SilvanErrorKind kind, const char *message,
		   const char *detail_fmt,...)
{
	va_list		args;

	status->kind = kind;
	snprintf(status->message, sizeof(status->message), "%s", message);
	va_start(args, detail_fmt);
	vsnprintf(status->detail, sizeof(status->detail), detail_fmt, args);
	va_end(args);
	status->hint[0] = '\0';
	return false;
}

/* Record an out-of-memory failure naming what was being allocated */
bool
StatusNoMemory(SilvanStatus *status, const char *what)
{
	return StatusFail(status, SILVAN_ERROR_OUT_OF_MEMORY, "out of memory",
					  "Failed to allocate %s.", what);
}

/* Add a hint to the failure just recorded; always returns false */
bool
StatusHint(SilvanStatus *status, const char *hint_fmt,...)
{
	va_list		args;

	va_start(args, hint_fmt);
	vsnprintf(status->hint, sizeof(status->hint), hint_fmt, args);
	va_end(args);
	return false;
}
