/*
 * unit.h
 *		A very small test harness for the C unit tests of the core.
 *
 * Each test program calls CHECK() as often as it likes and ends with
 * UNIT_DONE(), which prints "N passed, N failed" and sets the exit code.
 */
#ifndef SILVAN_UNIT_H
#define SILVAN_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	unit_passed = 0;
static int	unit_failed = 0;

#define CHECK(cond) \
	do { \
		if (cond) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		} \
	} while (0)

#define CHECK_MSG(cond, ...) \
	do { \
		if (cond) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

#define UNIT_DONE() \
	do { \
		printf("%d passed, %d failed\n", unit_passed, unit_failed); \
		return unit_failed == 0 ? 0 : 1; \
	} while (0)

#endif							/* SILVAN_UNIT_H */
