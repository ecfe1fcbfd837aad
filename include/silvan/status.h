/*
 * status.h
 *		How code outside the PostgreSQL adapter reports failure.
 *
 * The core, the compiler and the runtime never raise: every fallible
 * function returns false (or NULL) and fills a SilvanStatus.  The adapter
 * (src/pg) is the only place that turns a status into ereport(), mapping
 * the kind to an errcode.  Messages follow PostgreSQL's style: the message
 * is lowercase without a trailing period; the detail is a full sentence
 * that names the offending field.
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
	SILVAN_ERROR_INTERNAL		/* LLVM or another library failed */
} SilvanErrorKind;

#define SILVAN_MESSAGE_LEN	256
#define SILVAN_DETAIL_LEN	512

typedef struct SilvanStatus
{
	SilvanErrorKind kind;
	char		message[SILVAN_MESSAGE_LEN];
	char		detail[SILVAN_DETAIL_LEN];
} SilvanStatus;

/* Reset a status to success */
extern void StatusClear(SilvanStatus *status);

/* Record a failure; always returns false so callers can "return StatusFail(...)" */
extern bool StatusFail(SilvanStatus *status, SilvanErrorKind kind,
					   const char *message, const char *detail_fmt,...)
			__attribute__((format(printf, 4, 5)));

/* Record an out-of-memory failure naming what was being allocated */
extern bool StatusNoMemory(SilvanStatus *status, const char *what);

#endif							/* SILVAN_STATUS_H */
