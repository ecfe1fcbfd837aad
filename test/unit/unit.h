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

#include "silvan/host_profile.h"
#include "silvan/parse.h"

/*
 * The host profiles the tests compile for on any machine: the fallback;
 * "a Xeon" (the second alternative of every choice the CPU can run:
 * add-with-carry hops, 16 rows, vector walks, gathers, select code walks);
 * "a Zen" (compare hops, 8 rows, lock-step, loads, branchy code walks,
 * as measured)
 */
#define UNIT_NUM_HOST_PROFILES 4

/*
 * Test profile k: 0 the fallback; 1 "a Xeon", every second alternative;
 * 2 "a Zen", every first; 3 "a Zen 5", the fallback with integer keys (a
 * Zen 5's measured profile).  Choices the CPU cannot take stay first.
 */
static inline const char *
UnitHostProfile(int k, HostProfile *profile)
{
	static const char *const names[] = {"fallback", "a Xeon", "a Zen", "a Zen 5"};

	HostProfileFallback(profile);
	for (int c = 0; (k == 1 || k == 2) && c < HOST_NUM_CHOICES; c++)
		(void) HostProfileSet(profile, (HostChoice) c, k == 1);
	if (k == 3)
		(void) HostProfileSet(profile, HOST_CHOICE_KEYS, 1);
	snprintf(profile->cpu, sizeof(profile->cpu), "%s", names[k]);
	return profile->cpu;
}

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

/* Read a whole file, NUL-terminated; NULL if it cannot be read (len may be NULL) */
static inline char *
ReadFile(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;
	long		size;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0)
	{
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t) size + 1);
	if (buf == NULL || fread(buf, 1, (size_t) size, f) != (size_t) size)
	{
		free(buf);
		fclose(f);
		return NULL;
	}
	buf[size] = '\0';
	fclose(f);
	if (len)
		*len = (size_t) size;
	return buf;
}

/*
 * Parse ../shared/models/<relpath> ($SILVAN_MODELS instead where set);
 * NULL when the file is absent (no
 * ../shared) or does not parse, which is printed as a skip
 */
static inline Forest *
LoadSharedModel(const char *relpath)
{
	char		path[512];
	size_t		len;
	char	   *text;
	SilvanStatus status;
	Forest	   *forest;

	snprintf(path, sizeof(path), "%s/%s",
			 getenv("SILVAN_MODELS") ? getenv("SILVAN_MODELS") : "../shared/models", relpath);
	text = ReadFile(path, &len);
	if (text == NULL)
		return NULL;
	forest = ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status);
	free(text);
	if (forest == NULL)
		printf("  skip %s: %s: %s\n", relpath, status.message, status.detail);
	return forest;
}

#endif							/* SILVAN_UNIT_H */
