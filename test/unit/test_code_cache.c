/*
 * test_code_cache.c
 *		Machine code shared in a process and kept on disk (code_cache.c,
 *		jit.c's JitCompile), against the reference interpreter.
 *
 * A model compiled once is shared while its first compile lives, loaded
 * from the disk cache after that, and compiled again (with a good entry
 * stored over the bad one) when the entry is damaged in any way: cut
 * short, a byte of the object or of the key changed, a byte added, a
 * wrong magic, lengths that lie.  Whatever the cache holds, results equal
 * the interpreter's bit for bit.  A full cache drops its least recently
 * used entry; a disabled one stores nothing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "silvan/code_cache.h"
#include "silvan/compiler.h"
#include "silvan/parse.h"
#include "unit.h"

#define NUM_ROWS 100

static char cache_dir[] = "/tmp/silvan-code-cache-XXXXXX";

/* The number of entries in the cache directory, and the path of the last one */
static int
CountEntries(char *last, size_t size)
{
	DIR		   *dir = opendir(cache_dir);
	struct dirent *de;
	int			n = 0;

	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL)
		if (strstr(de->d_name, ".o") != NULL && strlen(de->d_name) == 18)
		{
			n++;
			if (last)
				snprintf(last, size, "%s/%s", cache_dir, de->d_name);
		}
	closedir(dir);
	return n;
}

/* Compile with a schedule's text; check the origin and the margins against the interpreter */
static CompiledForest *
CompileAndCheck(const Forest *forest, const char *schedule_text, const float *rows,
				const char *want_origin, const char *label)
{
	SilvanStatus status;
	Schedule	schedule;
	CompiledForest *compiled;
	float		want[NUM_ROWS];
	float		got[NUM_ROWS];

	if (!ScheduleParse(schedule_text, &schedule, &status))
	{
		CHECK_MSG(false, "%s: schedule: %s", label, status.detail);
		return NULL;
	}
	compiled = CompileForest(forest, &schedule, NULL, &status);
	CHECK_MSG(compiled != NULL, "%s: %s: %s", label, status.message, status.detail);
	if (compiled == NULL)
		return NULL;
	CHECK_MSG(strcmp(CompiledForestCodeOrigin(compiled), want_origin) == 0,
			  "%s: machine code %s, expected %s", label, CompiledForestCodeOrigin(compiled),
			  want_origin);
	ForestMarginsInit(forest, want, NUM_ROWS);
	ForestMarginsInit(forest, got, NUM_ROWS);
	ForestInterpretAccumulate(forest, rows, NUM_ROWS, want);
	CompiledForestAccumulate(compiled, rows, NUM_ROWS, got);
	CHECK_MSG(memcmp(want, got, sizeof(want)) == 0, "%s: margins differ from the interpreter", label);
	return compiled;
}

/* Rewrite a file: keep its first keep bytes, then change byte at (if >= 0), then append extra */
static void
DamageFile(const char *path, long keep, long at, const char *extra)
{
	size_t		len;
	char	   *data = ReadFile(path, &len);
	FILE	   *f;

	if (data == NULL)
		return;
	if (keep < 0 || (size_t) keep > len)
		keep = (long) len;
	if (at >= 0 && at < keep)
		data[at] ^= 0x5a;
	f = fopen(path, "wb");
	if (f)
	{
		fwrite(data, 1, (size_t) keep, f);
		if (extra)
			fwrite(extra, 1, strlen(extra), f);
		fclose(f);
	}
	free(data);
}

/* Overwrite the 8-byte little-endian field at offset with value */
static void
PatchLength(const char *path, long offset, uint64_t value)
{
	int			fd = open(path, O_WRONLY);
	unsigned char bytes[8];

	for (int i = 0; i < 8; i++)
		bytes[i] = (unsigned char) (value >> (8 * i));
	if (fd >= 0)
	{
		if (pwrite(fd, bytes, 8, offset) != 8)
			unit_failed++;
		close(fd);
	}
}

int
main(void)
{
	SilvanStatus status;
	size_t		len;
	char	   *text = ReadFile("test/fixtures/binary_logistic.json", &len);
	Forest	   *forest = text ? ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status) : NULL;
	float	   *rows;
	CompiledForest *a,
			   *b;
	char		entry[4096] = "";
	const char *schedule = "tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)";
	struct stat st;

	CHECK(forest != NULL);
	if (forest == NULL || mkdtemp(cache_dir) == NULL)
		UNIT_DONE();
	rows = malloc(sizeof(float) * NUM_ROWS * forest->num_features);
	for (int i = 0; i < NUM_ROWS * forest->num_features; i++)
		rows[i] = (float) ((i * 7919 % 1000) / 250.0 - 2.0);
	CodeCacheConfigure(cache_dir, 16);

	/* compiled once, shared while alive, then loaded from disk */
	a = CompileAndCheck(forest, schedule, rows, "compiled", "first compile");
	CHECK(CountEntries(entry, sizeof(entry)) == 1);
	b = CompileAndCheck(forest, schedule, rows, "shared with an earlier compile", "second compile");
	CompiledForestFree(b);
	CompiledForestFree(a);
	a = CompileAndCheck(forest, schedule, rows, "from the code cache", "after both were freed");
	CompiledForestFree(a);

	/* every kind of damage is a miss; the compile stores a good entry again */
	CHECK(stat(entry, &st) == 0);
	{
		struct
		{
			const char *label;
			long		keep;
			long		at;
			const char *extra;
			long		length_at;	/* >= 0: patch this length field instead */
			uint64_t	length;
		}			damage[] = {
			{"cut short", st.st_size / 2, -1, NULL, -1, 0},
			{"object byte changed", -1, st.st_size - 10, NULL, -1, 0},
			{"key byte changed", -1, 40, NULL, -1, 0},
			{"a byte added", -1, -1, "x", -1, 0},
			{"wrong magic", -1, 3, NULL, -1, 0},
			{"header only", 36, -1, NULL, -1, 0},
			{"empty", 0, -1, NULL, -1, 0},
			{"object length lies", -1, -1, NULL, 20, UINT64_MAX / 2},
			{"key length lies", -1, -1, NULL, 12, 5},
		};

		for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++)
		{
			if (damage[i].length_at >= 0)
				PatchLength(entry, damage[i].length_at, damage[i].length);
			else
				DamageFile(entry, damage[i].keep, damage[i].at, damage[i].extra);
			a = CompileAndCheck(forest, schedule, rows, "compiled", damage[i].label);
			CompiledForestFree(a);
			a = CompileAndCheck(forest, schedule, rows, "from the code cache", damage[i].label);
			CompiledForestFree(a);
		}
	}

	/* a full cache drops its least recently used entry */
	CodeCacheConfigure(cache_dir, 2);
	for (int size = 2; size <= 5; size++)
	{
		char		other[128];

		snprintf(other, sizeof(other), "tile(batch, b0, b1, %d); reorder(b0, tree, b1)", size);
		a = CompileAndCheck(forest, other, rows, "compiled", other);
		CompiledForestFree(a);
		CHECK_MSG(CountEntries(NULL, 0) <= 2, "%d entries for a cache of 2", CountEntries(NULL, 0));
	}

	/* a disabled cache neither loads nor stores */
	CodeCacheConfigure(NULL, 0);
	a = CompileAndCheck(forest, "tile(batch, b0, b1, 5); reorder(b0, tree, b1)", rows, "compiled",
						"cache disabled");
	CompiledForestFree(a);
	a = CompileAndCheck(forest, "tile(batch, b0, b1, 6); reorder(b0, tree, b1)", rows, "compiled",
						"cache disabled, new code");
	CompiledForestFree(a);
	CHECK(CountEntries(NULL, 0) <= 2);

	/* clean up */
	{
		DIR		   *dir = opendir(cache_dir);
		struct dirent *de;
		char		path[4200];

		while (dir && (de = readdir(dir)) != NULL)
			if (de->d_name[0] != '.')
			{
				snprintf(path, sizeof(path), "%s/%s", cache_dir, de->d_name);
				unlink(path);
			}
		if (dir)
			closedir(dir);
		rmdir(cache_dir);
	}
	free(rows);
	free(text);
	ForestFree(forest);
	UNIT_DONE();
}
