/*
 * text.h
 *		A growable malloc'd string for the text dumps of every IR level.
 */
#ifndef SILVAN_TEXT_H
#define SILVAN_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct TextBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
	bool		failed;			/* an allocation failed; the text is lost */
} TextBuf;

/* Append formatted text */
extern void TextAppend(TextBuf *buf, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/* Hand over the text (malloc'd), or NULL if an allocation failed */
extern char *TextFinish(TextBuf *buf);

#endif							/* SILVAN_TEXT_H */
