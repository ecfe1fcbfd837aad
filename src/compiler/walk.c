/*
 * walk.c
 *		The table of walk strategies (walk.h), and lookups over it.
 *
 * A strategy's row is its number in schedules (IndexVar.walk) and in MIR
 * (MirOp.walk); row 0 is the lock-step walk, what a loop without a walk
 * directive takes.  Rows are not stored anywhere: a stored schedule is
 * text, so rows may be reordered, though tuner walks are enumerated in
 * row order.
 */
#include <string.h>
#include <strings.h>

#include "silvan/schedule.h"
#include "silvan/walk.h"

static const WalkStrategy *const walk_strategies[] = {
	&WalkLockstep,
	&WalkEarlyExit,
	&WalkCode,
	&WalkVector,
};

#define NUM_WALK_STRATEGIES ((int) (sizeof(walk_strategies) / sizeof(walk_strategies[0])))

/* How many strategies there are */
int
WalkNumStrategies(void)
{
	return NUM_WALK_STRATEGIES;
}

/* The strategy of row kind; the lock-step walk when out of range */
const WalkStrategy *
WalkStrategyOf(int kind)
{
	return kind >= 0 && kind < NUM_WALK_STRATEGIES ? walk_strategies[kind] : walk_strategies[0];
}

/* The row of a strategy; -1 if it is not in the table */
int
WalkKindOf(const WalkStrategy *strategy)
{
	for (int k = 0; k < NUM_WALK_STRATEGIES; k++)
		if (walk_strategies[k] == strategy)
			return k;
	return -1;
}

/* The strategy and directive with this name; false if none */
bool
WalkFindDirective(const char *name, size_t len, bool ignore_case, int *kind, int *directive)
{
	for (int k = 0; k < NUM_WALK_STRATEGIES; k++)
		for (int d = 0; d < walk_strategies[k]->num_directives; d++)
		{
			const char *n = walk_strategies[k]->directives[d].name;

			if (strlen(n) != len ||
				(ignore_case ? strncasecmp(n, name, len) : strncmp(n, name, len)) != 0)
				continue;
			*kind = k;
			*directive = d;
			return true;
		}
	return false;
}

/* The flags loop var shows in the nest dump: its strategy's, or its directive's name */
int
WalkFlags(const IndexVar *var, WalkFlag *flags)
{
	const WalkStrategy *strategy = WalkStrategyOf(var->walk);

	if (strategy->flags != NULL)
		return strategy->flags(var, flags);
	if (var->walk <= 0 || var->walk >= NUM_WALK_STRATEGIES)
		return 0;
	flags[0] = (WalkFlag) {strategy->directives[0].name, 0, NULL};
	return 1;
}

/* The directive loop var carries, for messages; NULL if none */
const char *
WalkCarried(const IndexVar *var)
{
	WalkFlag	flags[WALK_MAX_DIRECTIVES];

	return WalkFlags(var, flags) > 0 ? flags[0].name : NULL;
}

/* How many tuner walks the strategies have in all */
int
WalkNumTunings(void)
{
	int			n = 0;

	for (int k = 0; k < NUM_WALK_STRATEGIES; k++)
		n += walk_strategies[k]->num_tunings;
	return n;
}

/* Tuner walk number index, and its strategy's row; NULL if out of range */
const WalkTuning *
WalkTuningAt(int index, int *kind)
{
	for (int k = 0; k < NUM_WALK_STRATEGIES && index >= 0; k++)
	{
		if (index < walk_strategies[k]->num_tunings)
		{
			if (kind != NULL)
				*kind = k;
			return &walk_strategies[k]->tunings[index];
		}
		index -= walk_strategies[k]->num_tunings;
	}
	return NULL;
}

/* The tuner walk of this name; -1 if none */
int
WalkTuningFind(const char *name)
{
	for (int i = 0; i < WalkNumTunings(); i++)
		if (strcmp(WalkTuningAt(i, NULL)->name, name) == 0)
			return i;
	return -1;
}
