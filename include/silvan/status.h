/*
 * status.h
 *		How code outside the PostgreSQL adapter reports failure.
 *
 * The core, the compiler and the runtime never raise: every fallible
 * function returns false (or NULL) and fills a SilvanStatus.  The adapter
 * (src/pg) is the only place that turns a status into ereport(), mapping
 * the kind to an errcode.  Messages follow PostgreSQL's style: the message
 * is lowercase without a trailing period; the detail is a full sentence
 * that names the offending field; a hint, where there is one, says what
 * the user can do about it.
 */
#ifndef SILVAN_STATUS_H
#define SILVAN_STATUS_H

#include <stdbool.h>

typedef enum SilvanErrorKind
{
	SILVAN_OK = 0,
	SILVAN_ERROR_SYNTAX,		/* malformed or truncated text */
	SILVAN_ERROR_UNSUPPORTED,	/* well-formed, but a feature we lack */
	SILVAN_ERROR_INVALID,		/* inconsistent or hostile structure */
	SILVAN_ERROR_OUT_OF_MEMORY,
	SILVAN_ERROR_INTERNAL,		/* LLVM or another library failed */
	SILVAN_ERROR_CANCELED,		/* the adapter asked a long phase to stop
								 * (cancel.h) */
	SILVAN_ERROR_LIMIT			/* over a configured bound: a compile's
								 * cost, a decoder's memory budget */
} SilvanErrorKind;

#define SILVAN_MESSAGE_LEN	256
#define SILVAN_DETAIL_LEN	512

typedef struct SilvanStatus
{
	SilvanErrorKind kind;
	char		message[SILVAN_MESSAGE_LEN];
	char		detail[SILVAN_DETAIL_LEN];
	char		hint[SILVAN_DETAIL_LEN];	/* what the user can do; "" if nothing */
} SilvanStatus;

/* Reset a status to success */
extern void StatusClear(SilvanStatus *status);

/* Record a failure; always returns false so callers can "return StatusFail(...)" */
extern bool StatusFail(SilvanStatus *status, SilvanErrorKind kind,
					   const char *message, const char *detail_fmt,...)
			__attribute__((format(printf, 4, 5)));

/* Record an out-of-memory failure naming what was being allocated */
extern bool StatusNoMemory(SilvanStatus *status, const char *what);

/* Add a hint to the failure just recorded; returns false like StatusFail */
extern bool StatusHint(SilvanStatus *status, const char *hint_fmt,...)
			__attribute__((format(printf, 2, 3)));

#endif							/* SILVAN_STATUS_H */
