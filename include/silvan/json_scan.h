/*
 * json_scan.h
 *		Find the trees of an XGBoost JSON document without building it.
 *
 * json-c builds a whole document before we see any of it, at 30 to 100
 * heap bytes per byte of the small arrays a tree is made of.  The XGBoost
 * reader therefore scans the text first (json_scan.c): a strict JSON
 * check that allocates nothing and finds the "trees" array, so that
 * json-c can parse the document without it.  Each tree is then read
 * straight from the text as a flat object (scalars, arrays of scalars,
 * objects of scalars) where it is one, else by json-c.
 *
 * What json-c will hold for a piece of text is bounded before it parses
 * it (JSON_COST_*): the scan counts the brackets and separators outside
 * strings, and text the scan gives up on is counted whole, strings and
 * comments included, which can only overcount.  The scans poll for
 * cancellation.
 */
#ifndef SILVAN_JSON_SCAN_H
#define SILVAN_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "silvan/decode_budget.h"

/*
 * Heap bytes json-c holds, at most, for a document: per object (its hash
 * table of 16 entries), per array, per value after a ',' or ':' (the
 * value, its slot, a key and its table entry, a number's text), per byte
 * (a string's object and the tokener's buffer, which doubles), plus the
 * tokener.  Measured on json-c 0.16 at 792, 152, 72 to 104 (192 a key
 * with its value) and 2 bytes.
 */
#define JSON_COST_OBJECT	1024
#define JSON_COST_ARRAY		320
#define JSON_COST_VALUE		128
#define JSON_COST_PER_BYTE	3
#define JSON_COST_TOKENER	(64 << 10)

/* What json-c holds for text of these counts */
#define JSON_COST(bytes, objects, arrays, separators) \
	((int64_t) JSON_COST_TOKENER + (int64_t) JSON_COST_PER_BYTE * (int64_t) (bytes) + \
	 (int64_t) JSON_COST_OBJECT * (objects) + (int64_t) JSON_COST_ARRAY * (arrays) + \
	 (int64_t) JSON_COST_VALUE * (separators))

/* Where learner.gradient_booster[.gbtree].model.trees lies in the text */
typedef struct JsonTreesSpan
{
	size_t		start;			/* offset of the array's '[' */
	size_t		end;			/* offset just past its ']' */
	int64_t		count;			/* elements */
	bool		under_gbtree;	/* in gradient_booster.gbtree.model (dart) */
	int64_t		skeleton_cost;	/* json-c's bytes for the rest of the document */
	bool		canceled;		/* the scan stopped on a cancel request */
} JsonTreesSpan;

/*
 * Scan the whole text; true when it is one strict JSON document (plus
 * whitespace) whose trees array is found without ambiguity.  Whatever it
 * accepts, json-c accepts and reads the same way.  False with
 * span->canceled set when a cancel request stopped it.
 */
extern bool JsonScanTrees(const char *text, size_t len, JsonTreesSpan *span);

/*
 * Offset just past the value at pos (leading blanks skipped) of a scanned
 * text; *cost (if not NULL) gets what json-c holds for it
 */
extern size_t JsonScanValueEnd(const char *text, size_t len, size_t pos, int64_t *cost);

/*
 * What json-c holds, at most, for any text of len bytes, counting every
 * bracket and separator; -1 when a cancel request stopped the count
 */
extern int64_t JsonTextCost(const char *text, size_t len);

/* Offset of the first non-blank byte at or after pos */
extern size_t JsonScanSkipBlanks(const char *text, size_t len, size_t pos);

/* What a flat object's member or scalar is */
typedef enum JsonFlatKind
{
	JSON_FLAT_INT = 1,			/* -?[0-9]+, at most 18 digits */
	JSON_FLAT_DOUBLE,			/* any other number, NaN, Infinity, -Infinity */
	JSON_FLAT_BOOL,				/* true or false */
	JSON_FLAT_STRING,			/* without escapes; the text is inside the quotes */
	JSON_FLAT_ARRAY,			/* of scalars */
	JSON_FLAT_OBJECT			/* of scalars, at the top only */
} JsonFlatKind;

/* A scalar: its kind and its text, at most JSON_FLAT_MAX_TOKEN bytes */
#define JSON_FLAT_MAX_TOKEN	63

typedef struct JsonScalar
{
	uint32_t	offset;			/* from the start of the object's text */
	uint8_t		len;
	uint8_t		kind;			/* JsonFlatKind */
} JsonScalar;

/* A member: a scalar, an array of scalars or an object of scalars */
typedef struct JsonMember
{
	uint32_t	key;			/* offset of the key's text (no escapes) */
	uint32_t	key_len;
	int32_t		parent;			/* member of the object it is in; -1: the top */
	uint8_t		kind;			/* JsonFlatKind */
	int64_t		first;			/* scalar or array: its (first) scalar */
	int64_t		count;			/* array: its entries */
} JsonMember;

/* A flat object read from text; the arrays are reused from one object to the next */
typedef struct JsonFlat
{
	const char *base;			/* the object's text */
	JsonMember *members;
	int64_t		num_members;
	int64_t		member_capacity;
	JsonScalar *scalars;
	int64_t		num_scalars;
	int64_t		scalar_capacity;
	DecodeBudget *budget;		/* charged for the arrays; NULL: nothing is */
	bool		over_budget;	/* the last read stopped: the budget refused */
	bool		canceled;		/* the last read stopped: a cancel request */
	uint32_t	ticks;
} JsonFlat;

/*
 * Read the object at pos (of a scanned text; blanks skipped) as a flat
 * object; false if it is anything else (nesting, null, escapes, long
 * tokens), memory runs out, its arrays would pass the budget
 * (over_budget) or a cancel request stops it (canceled).  *end gets the
 * offset just past it.
 */
extern bool JsonReadFlat(const char *text, size_t len, size_t pos, JsonFlat *flat,
						 size_t *end);

/* The last member called key in object parent (-1: the top), as json-c keeps; -1 if none */
extern int64_t JsonFlatFind(const JsonFlat *flat, int64_t parent, const char *key);

/* Free a flat object's arrays, giving back their charge */
extern void JsonFlatFree(JsonFlat *flat);

#endif							/* SILVAN_JSON_SCAN_H */
