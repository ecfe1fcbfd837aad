/*
 * text.c
 *		A growable string for the text dumps of every IR level.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/text.h"

/* Make room for n more bytes plus a terminator */
static bool
TextReserve(TextBuf *buf, size_t n)
{
	size_t		cap;
	char	   *grown;

	if (buf->failed)
		return false;
	if (buf->len + n + 1 <= buf->cap)
		return true;
	cap = buf->cap ? buf->cap * 2 : 1024;
	while (cap < buf->len + n + 1)
		cap *= 2;
	grown = realloc(buf->data, cap);
	if (grown == NULL)
	{
		buf->failed = true;
		return false;
	}
	buf->data = grown;
	buf->cap = cap;
	return true;
}

/* Append formatted text */
void
TextAppend(TextBuf *buf, const char *fmt,...)
{
	va_list		args;
	int			n;

	va_start(args, fmt);
	n = vsnprintf(NULL, 0, fmt, args);
	va_end(args);
	if (n < 0 || !TextReserve(buf, (size_t) n))
		return;
	va_start(args, fmt);
	vsnprintf(buf->data + buf->len, (size_t) n + 1, fmt, args);
	va_end(args);
	buf->len += (size_t) n;
}

/* Hand over the text (malloc'd), or NULL if an allocation failed */
char *
TextFinish(TextBuf *buf)
{
	if (!TextReserve(buf, 0))
	{
		free(buf->data);
		buf->data = NULL;
		return NULL;
	}
	buf->data[buf->len] = '\0';
	return buf->data;
}
