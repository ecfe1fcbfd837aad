/*
 * default_race.c
 *		The default schedule's layout, raced on the model itself.
 *
 * Float forests that the perfect layout fits walk in lock-step in it by
 * default, others in array.  Whether the layout each names to race against
 * (Representation.race_against: sparse, links, leaves apart) walks faster
 * depends on the model's trees as much as on the CPU: on treebeard's
 * higgs, airline and year sparse walked about 20% faster than perfect on a
 * Zen 5, while on synthetic forests of their size the two tied; on a
 * forest of 100 trees of depth 12 (3.6 MB of array records, 2.7 MB
 * sparse) sparse walked about 20% faster than array.  So where the
 * host profile is measured, the first default schedule of such a forest
 * compiles both layouts and races them (HostRace: interleaved rounds on
 * one thread, medians, a tie keeps the default's layout) on rows
 * synthesized from the forest's own thresholds (TuneSynthesizeRows).  The adapter remembers
 * the winner beside the code cache (ScheduleDefaultRemember), so a model
 * is raced once per batch size and host profile, and the two compiles
 * land in the code cache.  Only lock-step defaults race (walk row 0,
 * walk.h): other strategies' walks need their layout (vector walks, the
 * perfect layout's vector rows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/compiler.h"
#include "silvan/default_race.h"
#include "silvan/host_probe.h"
#include "silvan/repr.h"
#include "silvan/tune.h"

#define RACE_ROWS		8192
#define RACE_BUDGET_MS	1000.0
#define RACE_SEED		0x5DEECE66Dull

/*
 * The lock-step default schedule in the layout its layout races against,
 * or false if it has none
 */
static bool
RaceAlternative(const Schedule *schedule, Schedule *other, SilvanStatus *status)
{
	const Representation *layout = ReprLookup(schedule->representation);
	char		from[48];
	char		to[48];
	char	   *text;
	char	   *at;
	bool		ok = false;

	if (layout == NULL || layout->race_against == NULL ||
		ReprLookup(layout->race_against) == NULL)
		return false;
	for (int v = 0; v < schedule->num_vars; v++)
		if (schedule->vars[v].walk != 0)
			return false;
	snprintf(from, sizeof(from), "representation(%s)", layout->name);
	snprintf(to, sizeof(to), "representation(%s)", layout->race_against);
	text = ScheduleToText(schedule);
	if (text != NULL && (at = strstr(text, from)) != NULL)
	{
		char	   *swapped = malloc(strlen(text) + strlen(to) + 1);

		if (swapped != NULL)
		{
			snprintf(swapped, strlen(text) + strlen(to) + 1, "%.*s%s%s", (int) (at - text), text,
					 to, at + strlen(from));
			ok = ScheduleParse(swapped, other, status);
			free(swapped);
		}
	}
	free(text);
	return ok;
}

/* See default_race.h */
bool
ScheduleDefaultRaced(const Forest *forest, int32_t batch_size, const CompileOptions *options,
					 Schedule *schedule, bool *raced, SilvanStatus *status)
{
	Schedule	other;
	CompiledForest *codes[2] = {NULL, NULL};
	HostChoiceValue v;
	void	   *rows;
	bool		ok;

	*raced = false;
	ScheduleDefault(forest, batch_size, options ? options->host : NULL, schedule);
	if (!RaceAlternative(schedule, &other, status))
		return true;
	if ((rows = TuneSynthesizeRows(forest, NULL, RACE_ROWS, RACE_SEED, status)) == NULL)
		return false;
	ok = (codes[0] = CompileForestFor(forest, schedule, NULL, options, status)) != NULL &&
		(codes[1] = CompileForestFor(forest, &other, NULL, options, status)) != NULL &&
		HostRace(forest, rows, RACE_ROWS, codes, RACE_BUDGET_MS, NULL, 0, &v, status);
	if (ok && v.pick == 1)
		*schedule = other;
	if (!ok)
		ScheduleDefault(forest, batch_size, options ? options->host : NULL, schedule);
	*raced = ok;
	CompiledForestFree(codes[0]);
	CompiledForestFree(codes[1]);
	free(rows);
	return ok;
}
