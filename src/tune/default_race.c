/*
 * default_race.c
 *		The default schedule's layout, raced on the model itself.
 *
 * Float forests that the perfect layout fits walk in lock-step in it by
 * default.  Whether the sparse layout (links, leaves apart) walks faster
 * depends on the model's trees as much as on the CPU: on treebeard's
 * higgs, airline and year sparse walked about 20% faster on a Zen 5,
 * while on synthetic forests of their size the two tied.  So where the
 * host profile is measured, the first default schedule of such a forest
 * compiles both layouts and races them (HostRace: interleaved rounds on
 * one thread, medians, a tie keeps perfect) on rows synthesized from the
 * forest's own thresholds (TuneSynthesizeRows).  The adapter remembers
 * the winner beside the code cache (ScheduleDefaultRemember), so a model
 * is raced once per batch size and host profile, and the two compiles
 * land in the code cache.  Schedules that walk as vectors keep perfect,
 * which their walk needs.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/compiler.h"
#include "silvan/default_race.h"
#include "silvan/host_probe.h"
#include "silvan/tune.h"

#define RACE_ROWS		8192
#define RACE_BUDGET_MS	1000.0
#define RACE_SEED		0x5DEECE66Dull

/* The default schedule with sparse for perfect, or false if it has no such layout to race */
static bool
SparseAlternative(const Schedule *schedule, Schedule *sparse, SilvanStatus *status)
{
	char	   *text = ScheduleToText(schedule);
	char	   *at;
	bool		ok = false;

	if (text != NULL && strstr(text, "vectorWalk") == NULL &&
		(at = strstr(text, "representation(perfect)")) != NULL)
	{
		memcpy(at, "representation(sparse) ", strlen("representation(perfect)"));
		ok = ScheduleParse(text, sparse, status);
	}
	free(text);
	return ok;
}

/* See default_race.h */
bool
ScheduleDefaultRaced(const Forest *forest, int32_t batch_size, const CompileOptions *options,
					 Schedule *schedule, bool *raced, SilvanStatus *status)
{
	Schedule	sparse;
	CompiledForest *codes[2] = {NULL, NULL};
	HostChoiceValue v;
	void	   *rows;
	bool		ok;

	*raced = false;
	ScheduleDefault(forest, batch_size, options ? options->host : NULL, schedule);
	if (!SparseAlternative(schedule, &sparse, status))
		return true;
	if ((rows = TuneSynthesizeRows(forest, NULL, RACE_ROWS, RACE_SEED, status)) == NULL)
		return false;
	ok = (codes[0] = CompileForestFor(forest, schedule, NULL, options, status)) != NULL &&
		(codes[1] = CompileForestFor(forest, &sparse, NULL, options, status)) != NULL &&
		HostRace(forest, rows, RACE_ROWS, codes, RACE_BUDGET_MS, NULL, 0, &v, status);
	if (ok && v.pick == 1)
		*schedule = sparse;
	if (!ok)
		ScheduleDefault(forest, batch_size, options ? options->host : NULL, schedule);
	*raced = ok;
	CompiledForestFree(codes[0]);
	CompiledForestFree(codes[1]);
	free(rows);
	return ok;
}
