/*
 * make_binary_seeds.c
 *		Write the binary form of each model given, the seeds of the
 *		forest_binary fuzz target (make_seeds.sh builds and runs it).
 *
 *   make_binary_seeds OUTDIR MODEL...   writes OUTDIR/<model's name>.bin
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/parse.h"

/* Read a whole file; NULL if it cannot be read */
static char *
ReadWhole(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf = NULL;
	long		size;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 &&
		fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(size + 1)) != NULL &&
		fread(buf, 1, size, f) != (size_t) size)
	{
		free(buf);
		buf = NULL;
	}
	*len = buf ? (size_t) size : 0;
	fclose(f);
	return buf;
}

/* Parse one model and write its binary form into outdir */
static bool
WriteSeed(const char *outdir, const char *path)
{
	size_t		len;
	char	   *text = ReadWhole(path, &len);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	SilvanStatus status;
	Forest	   *forest;
	uint8_t    *data;
	size_t		size;
	char		out[1024];
	FILE	   *f;
	bool		ok;

	forest = text ? ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status) : NULL;
	free(text);
	if (forest == NULL || !ForestSerialize(forest, &data, &size, &status))
	{
		fprintf(stderr, "%s: %s\n", path, text ? status.detail : "cannot read");
		ForestFree(forest);
		return false;
	}
	snprintf(out, sizeof(out), "%s/%.*s.bin", outdir,
			 (int) (strrchr(base, '.') ? strrchr(base, '.') - base : (long) strlen(base)), base);
	ok = (f = fopen(out, "wb")) != NULL && fwrite(data, 1, size, f) == size;
	if (f != NULL && fclose(f) != 0)
		ok = false;
	free(data);
	ForestFree(forest);
	return ok;
}

int
main(int argc, char **argv)
{
	int			failed = 0;

	for (int i = 2; i < argc; i++)
		failed += !WriteSeed(argv[1], argv[i]);
	return failed ? 1 : 0;
}
