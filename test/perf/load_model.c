/*
 * load_model.c
 *		Load one model file with ParseModel and report time and memory.
 *
 *   load_model FILE
 *
 * Prints the text's size, the seconds ParseModel took, the process's peak
 * resident memory (getrusage; the text itself counts, as it does in a
 * backend) and that peak as a multiple of the text's size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "silvan/parse.h"

/* Seconds on a monotonic clock */
static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Peak resident memory of the process so far, in bytes */
static double
PeakRss(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss * 1024.0;
}

int
main(int argc, char **argv)
{
	FILE	   *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
	long		size;
	char	   *text;
	SilvanStatus status;
	Forest	   *forest;
	double		start;
	double		seconds;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0 || (text = malloc(size)) == NULL ||
		fread(text, 1, size, f) != (size_t) size)
	{
		fprintf(stderr, "usage: load_model FILE (a readable model)\n");
		return 2;
	}
	fclose(f);
	start = Now();
	forest = ParseModel(text, size, MODEL_FORMAT_AUTO, NULL, &status);
	seconds = Now() - start;
	if (forest == NULL)
	{
		fprintf(stderr, "%s: %s: %s\n", argv[1], status.message, status.detail);
		return 1;
	}
	printf("%s: %.1f MB text, %d trees, %lld nodes: %.2f s, peak RSS %.1f MB (%.2fx the text)\n",
		   argv[1], size / 1e6, forest->num_trees, (long long) forest->num_nodes,
		   seconds, PeakRss() / 1e6, PeakRss() / size);
	ForestFree(forest);
	free(text);
	return 0;
}
