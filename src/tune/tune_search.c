/*
 * tune_search.c
 *		The search over a schedule space, as an iterator the caller drives.
 *
 * The caller loops: TuneSearchNext hands out the next candidate (schedule
 * text), the caller times it and reports the outcome with
 * TuneSearchReport, until Next returns NULL or the caller stops (budget,
 * cancel).  Keeping the loop outside means the timing can be real
 * (TuneMeasure), on a device, or a fake timer in the unit tests, and that
 * the PostgreSQL adapter checks for interrupts and records progress between
 * candidates without any callback from here into the server.
 *
 * Phases (heuristic, CPU; see tune.h for why):
 *   0  the default schedule
 *   1  loop structure and parallelism         TuneCpuPhase1
 *   2  layout and tiling on the top three     TuneCpuRefineLayout
 *   3  tree blocks and reductions, top three  TuneCpuRefineBlocking
 * A phase's candidates are planned when every earlier candidate has been
 * reported.  The exhaustive strategy plans the whole bounded space as
 * phase 1.  On GPUs the heuristic is Algorithm 1: its 36 points, then
 * shared reduction on the top three.  Candidates whose text another
 * candidate already has are not planned twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/tune.h"

#define TUNE_MAX_CANDIDATES	8192

struct TuneSearch
{
	TuneShape	shape;
	TuneTarget	target;
	TuneStrategy strategy;
	TuneCandidate *candidates;
	int32_t		num;
	int32_t		capacity;
	int32_t		next;			/* first candidate not handed out */
	int32_t		reported;
	int32_t		phase;			/* the phase planned last */
	bool		finished;		/* no phase left to plan */
};

static const char *const cpu_phase_names[] = {
	"default", "loop structure and parallelism", "layout and tiling",
	"tree blocks and reductions"
};
static const char *const gpu_phase_names[] = {
	"default", "thread blocks, caching and interleaving", "shared reduction"
};

/* Add a candidate unless its text is already planned; false when out of room */
static bool
AddCandidate(TuneSearch *search, int32_t phase, const char *text, bool reorders,
			 const TuneCpuPoint *cpu, const TuneGpuPoint *gpu)
{
	TuneCandidate *c;

	for (int32_t i = 0; i < search->num; i++)
		if (strcmp(search->candidates[i].text, text) == 0)
			return true;
	if (search->num == search->capacity)
		return false;
	c = &search->candidates[search->num];
	memset(c, 0, sizeof(TuneCandidate));
	c->id = search->num++;
	c->phase = phase;
	c->target = search->target;
	if (cpu)
		c->cpu = *cpu;
	if (gpu)
		c->gpu = *gpu;
	snprintf(c->text, sizeof(c->text), "%s", text);
	c->reorders_sums = reorders;
	return true;
}

/* Plan CPU points as candidates of a phase */
static void
PlanCpu(TuneSearch *search, int32_t phase, const TuneCpuPoint *points, int n)
{
	char		text[TUNE_MAX_TEXT];

	for (int i = 0; i < n; i++)
		if (TuneCpuText(&search->shape, &points[i], text, sizeof(text)))
			(void) AddCandidate(search, phase, text, TuneCpuReordersSums(&points[i]),
								&points[i], NULL);
}

/* Plan GPU points as candidates of a phase */
static void
PlanGpu(TuneSearch *search, int32_t phase, const TuneGpuPoint *points, int n)
{
	char		text[TUNE_MAX_TEXT];

	for (int i = 0; i < n; i++)
		if (TuneGpuText(&search->shape, &points[i], text, sizeof(text)))
			(void) AddCandidate(search, phase, text, points[i].tree_threads > 1, NULL, &points[i]);
}

/* Indexes of up to TUNE_TOP timed candidates from phase 1 on, fastest first */
static int
TopCandidates(const TuneSearch *search, int32_t *top)
{
	int			n = 0;

	while (n < TUNE_TOP)
	{
		int32_t		pick = -1;

		for (int32_t i = 0; i < search->num; i++)
		{
			const TuneCandidate *c = &search->candidates[i];
			bool		taken = false;

			for (int k = 0; k < n; k++)
				taken |= top[k] == i;
			if (c->phase >= 1 && c->outcome == TUNE_TIMED && !taken &&
				(pick < 0 || c->us_per_row < search->candidates[pick].us_per_row))
				pick = i;
		}
		if (pick < 0)
			break;
		top[n++] = pick;
	}
	return n;
}

/* Plan the next phase of the heuristic; false when there is none */
static bool
PlanNextPhase(TuneSearch *search)
{
	int32_t		top[TUNE_TOP];
	int			n;
	int			last = search->target == TUNE_TARGET_GPU ? 2 : 3;

	/* exact GPU searches have no shared reduction phase: it reorders sums */
	if (search->target == TUNE_TARGET_GPU && search->shape.exact)
		last = 1;
	if (search->strategy == TUNE_EXHAUSTIVE || search->phase >= last)
		return false;
	n = TopCandidates(search, top);
	search->phase++;
	for (int i = 0; i < n; i++)
	{
		const TuneCandidate *base = &search->candidates[top[i]];

		if (search->target == TUNE_TARGET_GPU)
		{
			TuneGpuPoint p = base->gpu;

			p.shared_reduce = true;
			PlanGpu(search, search->phase, &p, 1);
		}
		else
		{
			TuneCpuPoint points[64];
			int			m = search->phase == 2 ?
				TuneCpuRefineLayout(&search->shape, &base->cpu, points, 64) :
				TuneCpuRefineBlocking(&search->shape, &base->cpu, points, 64);

			PlanCpu(search, search->phase, points, m);
		}
	}
	return true;
}

/* Plan phase 1: the heuristic's first points, or the whole space */
static bool
PlanFirstPhase(TuneSearch *search, SilvanStatus *status)
{
	int			max = TUNE_MAX_CANDIDATES;

	search->phase = 1;
	if (search->target == TUNE_TARGET_GPU)
	{
		TuneGpuPoint *points = malloc(sizeof(TuneGpuPoint) * max);
		int			n;

		if (points == NULL)
			return StatusNoMemory(status, "the schedule space");
		n = search->strategy == TUNE_EXHAUSTIVE ?
			TuneGpuExhaustive(&search->shape, points, max) :
			TuneGpuAlgorithm1(&search->shape, points, max);
		PlanGpu(search, 1, points, n);
		free(points);
	}
	else
	{
		TuneCpuPoint *points = malloc(sizeof(TuneCpuPoint) * max);
		int			n;

		if (points == NULL)
			return StatusNoMemory(status, "the schedule space");
		n = search->strategy == TUNE_EXHAUSTIVE ?
			TuneCpuExhaustive(&search->shape, points, max) :
			TuneCpuPhase1(&search->shape, points, max);
		PlanCpu(search, 1, points, n);
		free(points);
	}
	return true;
}

/* Start a search: the default first, then phase 1 */
TuneSearch *
TuneSearchCreate(const TuneShape *shape, const TuneOptions *options, SilvanStatus *status)
{
	TuneSearch *search = calloc(1, sizeof(TuneSearch));

	if (search == NULL)
	{
		StatusNoMemory(status, "the schedule search");
		return NULL;
	}
	search->shape = *shape;
	search->target = options->target;
	search->strategy = options->strategy;
	search->capacity = TUNE_MAX_CANDIDATES;
	search->candidates = malloc(sizeof(TuneCandidate) * search->capacity);
	if (search->candidates == NULL)
	{
		free(search);
		StatusNoMemory(status, "the schedule search");
		return NULL;
	}
	if (options->default_text != NULL)
		(void) AddCandidate(search, 0, options->default_text, false, NULL, NULL);
	if (!PlanFirstPhase(search, status))
	{
		TuneSearchFree(search);
		return NULL;
	}
	return search;
}

/* The next candidate to time; NULL when the search is over */
const TuneCandidate *
TuneSearchNext(TuneSearch *search)
{
	while (search->next == search->num)
	{
		if (search->finished || search->reported < search->num || !PlanNextPhase(search))
		{
			search->finished = search->reported == search->num;
			return NULL;
		}
	}
	return &search->candidates[search->next++];
}

/* Record how a handed-out candidate did */
void
TuneSearchReport(TuneSearch *search, int32_t id, TuneOutcome outcome,
				 double us_per_row, double compile_ms)
{
	TuneCandidate *c;

	if (id < 0 || id >= search->next || search->candidates[id].outcome != TUNE_PENDING)
		return;
	c = &search->candidates[id];
	c->outcome = outcome == TUNE_PENDING ? TUNE_FAILED : outcome;
	c->us_per_row = us_per_row;
	c->compile_ms = compile_ms;
	search->reported++;
}

/* The fastest fully timed candidate, the default included; NULL if none */
const TuneCandidate *
TuneSearchBest(const TuneSearch *search)
{
	const TuneCandidate *best = NULL;

	for (int32_t i = 0; i < search->num; i++)
	{
		const TuneCandidate *c = &search->candidates[i];

		if (c->outcome == TUNE_TIMED && (best == NULL || c->us_per_row < best->us_per_row))
			best = c;
	}
	return best;
}

/*
 * Up to TUNE_TOP fully timed candidates other than the default, fastest
 * first, for the caller to time again against each other and the default
 * (one pass's luck should not pick the winner); their number
 */
int
TuneSearchTop(const TuneSearch *search, const TuneCandidate **top)
{
	int32_t		index[TUNE_TOP];
	int			n = TopCandidates(search, index);

	for (int i = 0; i < n; i++)
		top[i] = &search->candidates[index[i]];
	return n;
}

/* The default schedule's candidate, once timed; else NULL */
const TuneCandidate *
TuneSearchDefault(const TuneSearch *search)
{
	if (search->num > 0 && search->candidates[0].phase == 0 &&
		search->candidates[0].outcome == TUNE_TIMED)
		return &search->candidates[0];
	return NULL;
}

/* Heuristic: a first pass slower than this discards a candidate; 0: never */
double
TuneSearchDiscardAbove(const TuneSearch *search)
{
	const TuneCandidate *best = TuneSearchBest(search);

	if (search->strategy == TUNE_EXHAUSTIVE || best == NULL)
		return 0;
	return best->us_per_row * TUNE_DISCARD_FACTOR;
}

/* Where the search is: phase, candidates reported and planned, best so far */
void
TuneSearchProgressOf(const TuneSearch *search, TuneProgress *progress)
{
	const TuneCandidate *best = TuneSearchBest(search);
	const TuneCandidate *def = TuneSearchDefault(search);
	int32_t		phase = search->next > 0 ? search->candidates[search->next - 1].phase : 0;

	if (search->strategy == TUNE_EXHAUSTIVE)
		progress->phase = phase == 0 ? "default" : "exhaustive";
	else
		progress->phase = search->target == TUNE_TARGET_GPU ?
			gpu_phase_names[phase < 3 ? phase : 2] : cpu_phase_names[phase < 4 ? phase : 3];
	progress->done = search->reported;
	progress->planned = search->num;
	progress->best_us_per_row = best ? best->us_per_row : 0;
	progress->default_us_per_row = def ? def->us_per_row : 0;
}

/* How many candidates ended with an outcome */
int32_t
TuneSearchCount(const TuneSearch *search, TuneOutcome outcome)
{
	int32_t		n = 0;

	for (int32_t i = 0; i < search->num; i++)
		n += search->candidates[i].outcome == outcome;
	return n;
}

/* Release a search */
void
TuneSearchFree(TuneSearch *search)
{
	if (search == NULL)
		return;
	free(search->candidates);
	free(search);
}
