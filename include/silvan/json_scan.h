/*
 * json_scan.h
 *		Find the trees of an XGBoost JSON document without building it.
 *
 * json-c builds a whole document before we see any of it, at 30 to 100
 * heap bytes per byte of the small arrays a tree is made of.  The XGBoost
 * reader therefore scans the text first (json_scan.c): a strict JSON
 * check that allocates nothing and finds the "trees" array, so that
 * json-c can parse the document without it and then one tree at a time.
 */
#ifndef SILVAN_JSON_SCAN_H
#define SILVAN_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where learner.gradient_booster[.gbtree].model.trees lies in the text */
typedef struct JsonTreesSpan
{
	size_t		start;			/* offset of the array's '[' */
	size_t		end;			/* offset just past its ']' */
	int64_t		count;			/* elements */
	bool		under_gbtree;	/* in gradient_booster.gbtree.model (dart) */
} JsonTreesSpan;

/*
 * Scan the whole text; true when it is one strict JSON document (plus
 * whitespace) whose trees array is found without ambiguity.  Whatever it
 * accepts, json-c accepts and reads the same way.
 */
extern bool JsonScanTrees(const char *text, size_t len, JsonTreesSpan *span);

/* Offset just past the value at pos (leading blanks skipped) of a scanned text */
extern size_t JsonScanValueEnd(const char *text, size_t len, size_t pos);

/* Offset of the first non-blank byte at or after pos */
extern size_t JsonScanSkipBlanks(const char *text, size_t len, size_t pos);

#endif							/* SILVAN_JSON_SCAN_H */
