/*
 * schedule_lang.c
 *		Parse, replay and print the schedule language (SilvanForge section 3).
 *
 * A schedule is a list of directives, separated by newlines or ';', with
 * '#' and '--' comments to the end of the line.  Each directive is a name
 * (case-sensitive, as in the paper) and a parenthesized list of
 * arguments: index variable names, decimal integers, or keywords such as
 * grid.x.  ScheduleParse applies the directives one at a time to the
 * default schedule (for batch: for tree), checking each against the state
 * the previous ones left, so an error can name the line, the directive
 * and why: "Line 2, reorder(b0, tree, b1): loops b0 and b1 are not
 * perfectly nested."  Malformed text (an unknown directive, a missing
 * parenthesis, a number where a name belongs) is SILVAN_ERROR_SYNTAX;
 * well-formed text that the schedule cannot take (an unknown or dead loop,
 * a name defined twice, a tile size <= 0, interleave off the innermost
 * loop, a limit exceeded) is SILVAN_ERROR_INVALID.  On failure the
 * schedule is left as the default.
 *
 * The loop nest is a tree of ScheduleLoop kept in preorder: after every
 * directive that reshapes it the slots are renumbered, so two schedules
 * built by the same directives are byte-for-byte equal.  tile(i, o, n, s)
 * puts o { n { i's former body } } where i was.  reorder permutes the
 * variables of a perfectly nested chain of loops (each the only child of
 * the one above it); the chain's innermost position keeps its body.
 *
 * split(i, first, second, at) is loop fission: i becomes two sibling loops
 * first and second, and each gets its own copy of i's former body.  Every
 * loop of that body is a live index variable, and names must stay unique,
 * so the split duplicates each of them under a generated name,
 * <loop>_<first> and <loop>_<second>, and the originals stop being loops.
 * A copy is a twin of its original: same kind, origin, parent, param and
 * optimization flags, with copy_of naming the original; later directives
 * refer to copies by their names.  Figure 1b of the paper thus reads
 *
 *   reorder(tree, batch); split(tree, t_depth1, t_depth2, 2)
 *   unrollWalk(batch_t_depth1, 1); unrollWalk(batch_t_depth2, 2)
 *
 * (the figure's own unrollWalk(t_depth1, 1) names a loop that is not
 * innermost, which Table 2 forbids).  A loop that carries optimization
 * directives cannot itself be tiled or split, since its flags would have
 * no loop left to apply to; tile and split first, then optimize.
 *
 * Walk directives belong to the walk strategies (walk.h): the parser
 * finds a name it does not know among the strategies' directives, checks
 * the signature the strategy gives, lets the strategy check and set the
 * arguments, and refuses a second strategy on one loop.  The layouts'
 * names for representation() come from repr.c's table likewise.
 *
 * Constraints that later directives could break are rechecked by them:
 * reorder refuses to move a loop that carries interleave or a walk
 * directive away from the innermost position.  gpuDimension allows each
 * grid or block dimension once on any path through the nest (one kernel);
 * sibling loops made by split are separate kernels and may reuse one.
 *
 * Every applied directive is also recorded in Schedule.directives, and
 * ScheduleToText prints that record, one directive a line, with names,
 * numbers and keywords normalized.  Parsing that text replays the same
 * directives and gives the same schedule; only IndexVar.line differs when
 * the original text had comments, blank lines or several directives on a
 * line.  Nothing here allocates while parsing; only the two text
 * functions return malloc'd strings (NULL when out of memory).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "silvan/repr.h"
#include "silvan/schedule.h"
#include "silvan/text.h"

#define DIRECTIVE_MAX_ARGS	SCHEDULE_MAX_VARS
#define SHOWN_LEN			160
#define NUMBER_MAX			2147483647LL

/* One argument as written: a number, or a name or keyword */
typedef struct ScheduleArg
{
	bool		is_number;
	int64_t		number;
	char		word[SCHEDULE_NAME_LEN];
} ScheduleArg;

typedef struct Directive Directive;
typedef bool (*ApplyFn) (Schedule *s, Directive *d, SilvanStatus *status);

/*
 * What a directive takes.  Signature letters, one per argument: v a live
 * loop, n a new name, i a number, w a keyword of words[] (or of
 * word_at(k), a table's names); '+' repeats the letter before it any
 * number of times.  In usage, "%w" stands for the keywords.
 */
typedef struct DirectiveSpec
{
	const char *name;
	ScheduleOp	op;
	const char *signature;
	const char *usage;
	const char *const *words;
	int			word_base;		/* enum value of words[0] */
	ApplyFn		apply;
	const char *(*word_at) (int k);	/* words from a table; NULL past the last */
} DirectiveSpec;

/* One directive being parsed and applied */
struct Directive
{
	int			line;
	const DirectiveSpec *spec;
	DirectiveSpec walk_spec;	/* spec of a walk strategy's directive */
	int16_t		walk;			/* SCHEDULE_OP_WALK: strategy row, directive */
	int16_t		walk_directive;
	int			num_args;
	ScheduleArg args[DIRECTIVE_MAX_ARGS];
	char		shown[SHOWN_LEN];	/* how error details name it */
	int			num_vars;		/* resolved variables, in argument order */
	int16_t		vars[DIRECTIVE_MAX_ARGS];
	int			num_values;		/* numbers and keywords, in argument order */
	int64_t		values[2];
};

static bool ApplyTile(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplySplit(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplyReorder(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplyFlag(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplyGpuDimension(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplyInterleave(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplyReduce(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplyLayout(Schedule *s, Directive *d, SilvanStatus *status);
static bool ApplyWalkDirective(Schedule *s, Directive *d, SilvanStatus *status);
static const char *LayoutName(int k);

static const char *const gpu_words[] = {
	"grid.x", "grid.y", "grid.z", "block.x", "block.y", "block.z", NULL
};
static const char *const tiling_words[] = {"uniform", "probabilistic", NULL};

static const DirectiveSpec directive_specs[] = {
	{"tile", SCHEDULE_OP_TILE, "vnni", "tile(indexVar, outer, inner, tileSize)",
	NULL, 0, ApplyTile},
	{"split", SCHEDULE_OP_SPLIT, "vnni", "split(indexVar, first, second, splitIter)",
	NULL, 0, ApplySplit},
	{"reorder", SCHEDULE_OP_REORDER, "vv+", "reorder(indexVar, indexVar, ...)",
	NULL, 0, ApplyReorder},
	{"specialize", SCHEDULE_OP_SPECIALIZE, "v", "specialize(indexVar)",
	NULL, 0, ApplyFlag},
	{"gpuDimension", SCHEDULE_OP_GPU_DIMENSION, "vw",
		"gpuDimension(indexVar, grid.x|grid.y|grid.z|block.x|block.y|block.z)",
	gpu_words, GPU_DIM_GRID_X, ApplyGpuDimension},
	{"cache", SCHEDULE_OP_CACHE, "v", "cache(indexVar)", NULL, 0, ApplyFlag},
	{"parallel", SCHEDULE_OP_PARALLEL, "v", "parallel(indexVar)", NULL, 0, ApplyFlag},
	{"interleave", SCHEDULE_OP_INTERLEAVE, "v", "interleave(indexVar)",
	NULL, 0, ApplyInterleave},
	{"atomicReduce", SCHEDULE_OP_ATOMIC_REDUCE, "v", "atomicReduce(indexVar)",
	NULL, 0, ApplyReduce},
	{"sharedReduce", SCHEDULE_OP_SHARED_REDUCE, "v", "sharedReduce(indexVar)",
	NULL, 0, ApplyReduce},
	{"vectorReduce", SCHEDULE_OP_VECTOR_REDUCE, "vi", "vectorReduce(indexVar, width)",
	NULL, 0, ApplyReduce},
	{"representation", SCHEDULE_OP_REPRESENTATION, "w",
		"representation(%w)", NULL, 0, ApplyLayout, LayoutName},
	{"tileTrees", SCHEDULE_OP_TILE_TREES, "iw", "tileTrees(size, uniform|probabilistic)",
	tiling_words, TREE_TILING_UNIFORM, ApplyLayout},
	{"reorderTrees", SCHEDULE_OP_REORDER_TREES, "", "reorderTrees()",
	NULL, 0, ApplyLayout},
	{"fullCodegen", SCHEDULE_OP_FULL_CODEGEN, "", "fullCodegen()", NULL, 0, ApplyLayout},
};

#define NUM_DIRECTIVE_SPECS ((int) (sizeof(directive_specs) / sizeof(directive_specs[0])))

/* Fail, naming the line and the directive ahead of the reason */
static bool
Fail(SilvanStatus *status, SilvanErrorKind kind, const char *message,
	 const Directive *d, const char *fmt,...)
__attribute__((format(printf, 5, 6)));

static bool
Fail(SilvanStatus *status, SilvanErrorKind kind, const char *message,
	 const Directive *d, const char *fmt,...)
{
	char		reason[SILVAN_DETAIL_LEN];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(reason, sizeof(reason), fmt, args);
	va_end(args);
	return StatusFail(status, kind, message, "Line %d, %s: %s", d->line, d->shown, reason);
}

/* Find a variable by name; -1 if none */
int
ScheduleFindVar(const Schedule *schedule, const char *name)
{
	if (name == NULL)
		return -1;
	for (int i = 0; i < schedule->num_vars && i < SCHEDULE_MAX_VARS; i++)
		if (strncmp(schedule->vars[i].name, name, SCHEDULE_NAME_LEN) == 0)
			return i;
	return -1;
}

/* The loop slot of a variable; -1 if it is not a live loop */
static int
FindLoop(const Schedule *s, int var)
{
	for (int l = 0; l < s->num_loops; l++)
		if (s->loops[l].var == var)
			return l;
	return -1;
}

/* The loop that directly contains loop l; -1 at the top level */
static int
LoopParent(const Schedule *s, int l)
{
	for (int p = 0; p < s->num_loops; p++)
		for (int c = s->loops[p].first_child; c >= 0; c = s->loops[c].next_sibling)
			if (c == l)
				return p;
	return -1;
}

/* Append a fresh variable; the caller has checked that there is room */
static int16_t
AddVar(Schedule *s, const char *name, IndexKind kind, IndexOrigin origin,
	   int16_t parent, int64_t param, int line)
{
	IndexVar   *v = &s->vars[s->num_vars];

	memset(v, 0, sizeof(IndexVar));
	snprintf(v->name, sizeof(v->name), "%s", name);
	v->kind = kind;
	v->origin = origin;
	v->parent = parent;
	v->children[0] = v->children[1] = -1;
	v->copy_of = -1;
	v->param = param;
	v->line = line;
	return (int16_t) s->num_vars++;
}

/* Append a twin of variable orig under a new name */
static int16_t
AddCopy(Schedule *s, int16_t orig, const char *name, int line)
{
	IndexVar   *v = &s->vars[s->num_vars];

	memcpy(v, &s->vars[orig], sizeof(IndexVar));
	memset(v->name, 0, sizeof(v->name));
	snprintf(v->name, sizeof(v->name), "%s", name);
	v->children[0] = v->children[1] = -1;
	v->copy_of = orig;
	v->line = line;
	return (int16_t) s->num_vars++;
}

/* Take a loop slot; the caller has checked that there is room */
static int
NewLoop(Schedule *s, int16_t var, int16_t first_child, int16_t next_sibling)
{
	int			l = s->num_loops++;

	s->loops[l].var = var;
	s->loops[l].first_child = first_child;
	s->loops[l].next_sibling = next_sibling;
	return l;
}

/* Copy a chain of sibling loops and their bodies into out[], in preorder */
static int16_t
CompactChain(const Schedule *s, int l, ScheduleLoop *out, int *n)
{
	int16_t		first = -1;
	int			prev = -1;

	for (; l >= 0; l = s->loops[l].next_sibling)
	{
		int			me = (*n)++;
		int16_t		body;

		out[me].var = s->loops[l].var;
		out[me].next_sibling = -1;
		body = CompactChain(s, s->loops[l].first_child, out, n);
		out[me].first_child = body;
		if (prev >= 0)
			out[prev].next_sibling = (int16_t) me;
		else
			first = (int16_t) me;
		prev = me;
	}
	return first;
}

/* Renumber the nest in preorder, dropping slots no longer reachable */
static void
Compact(Schedule *s)
{
	ScheduleLoop out[SCHEDULE_MAX_VARS];
	int			n = 0;

	memset(out, 0, sizeof(out));
	s->root_loop = CompactChain(s, s->root_loop, out, &n);
	memcpy(s->loops, out, sizeof(out));
	s->num_loops = n;
}

/* Is variable v derived from (or a copy of something derived from) target? */
static bool
Descends(const Schedule *s, int v, int target)
{
	for (int hops = 0; v >= 0 && hops <= SCHEDULE_MAX_VARS * 2; hops++)
	{
		if (v == target)
			return true;
		v = s->vars[v].copy_of >= 0 ? s->vars[v].copy_of : s->vars[v].parent;
	}
	return false;
}

/* The first optimization a variable carries, or NULL */
static const char *
FirstFlag(const IndexVar *v)
{
	if (v->parallel)
		return "parallel";
	if (v->cache)
		return "cache";
	if (v->specialize)
		return "specialize";
	if (v->interleave)
		return "interleave";
	if (WalkCarried(v) != NULL)
		return WalkCarried(v);
	if (v->reduce == REDUCE_ATOMIC)
		return "atomicReduce";
	if (v->reduce == REDUCE_SHARED)
		return "sharedReduce";
	if (v->reduce == REDUCE_VECTOR)
		return "vectorReduce";
	if (v->gpu_dim != GPU_DIM_NONE)
		return "gpuDimension";
	return NULL;
}

/* The flag that ties a variable to the innermost loop, or NULL */
static const char *
InnermostFlag(const IndexVar *v)
{
	if (v->interleave)
		return "interleave";
	return WalkCarried(v);
}

/* Say why a defined variable is not a live loop */
static bool
FailNotLive(Schedule *s, Directive *d, int v, SilvanStatus *status)
{
	const IndexVar *var = &s->vars[v];
	int			copies[2] = {-1, -1};
	int			n = 0;

	if (var->children[0] >= 0)
	{
		const IndexVar *c = &s->vars[var->children[0]];

		return Fail(status, SILVAN_ERROR_INVALID, "index variable is not a live loop", d,
					"%s is no longer a loop; %s on line %d replaced it by %s and %s.",
					var->name,
					c->origin == INDEX_ORIGIN_TILE_OUTER ? "tile" : "split",
					c->line, c->name, s->vars[var->children[1]].name);
	}
	for (int i = 0; i < s->num_vars && n < 2; i++)
		if (s->vars[i].copy_of == v)
			copies[n++] = i;
	if (n == 2)
		return Fail(status, SILVAN_ERROR_INVALID, "index variable is not a live loop", d,
					"%s is no longer a loop; split on line %d duplicated it as %s and %s.",
					var->name, s->vars[copies[0]].line,
					s->vars[copies[0]].name, s->vars[copies[1]].name);
	return Fail(status, SILVAN_ERROR_INVALID, "index variable is not a live loop", d,
				"%s is not a loop of the nest.", var->name);
}

/* Check that the schedule has room for n more variables */
static bool
NeedVars(Schedule *s, Directive *d, int n, SilvanStatus *status)
{
	if (s->num_vars + n <= SCHEDULE_MAX_VARS)
		return true;
	return Fail(status, SILVAN_ERROR_INVALID, "too many index variables", d,
				"The schedule would have %d index variables; at most %d are allowed.",
				s->num_vars + n, SCHEDULE_MAX_VARS);
}

/* Refuse to tile or split a loop whose optimizations would be lost */
static bool
CheckUnoptimized(Schedule *s, Directive *d, int v, SilvanStatus *status)
{
	const char *flag = FirstFlag(&s->vars[v]);

	if (flag == NULL)
		return true;
	return Fail(status, SILVAN_ERROR_INVALID, "loop already has optimization directives", d,
				"Loop %s already carries %s; tile and split loops before optimizing them.",
				s->vars[v].name, flag);
}

/* Check that loop v contains no other loop */
static bool
CheckInnermost(Schedule *s, Directive *d, int v, SilvanStatus *status)
{
	int			body = s->loops[FindLoop(s, v)].first_child;

	if (body < 0)
		return true;
	return Fail(status, SILVAN_ERROR_INVALID, "loop is not innermost", d,
				"%s must name an innermost loop, but %s contains %s.",
				d->spec->name, s->vars[v].name, s->vars[s->loops[body].var].name);
}

/* tile(i, outer, inner, size): i becomes outer { inner { body } } */
static bool
ApplyTile(Schedule *s, Directive *d, SilvanStatus *status)
{
	int16_t		i = d->vars[0];
	int64_t		size = d->values[0];
	int			l = FindLoop(s, i);
	int16_t		outer;
	int16_t		inner;

	if (size <= 0)
		return Fail(status, SILVAN_ERROR_INVALID, "tile size must be positive", d,
					"Tile size %lld is not positive.", (long long) size);
	if (!CheckUnoptimized(s, d, i, status) || !NeedVars(s, d, 2, status))
		return false;
	outer = AddVar(s, d->args[1].word, s->vars[i].kind, INDEX_ORIGIN_TILE_OUTER, i, size, d->line);
	inner = AddVar(s, d->args[2].word, s->vars[i].kind, INDEX_ORIGIN_TILE_INNER, i, size, d->line);
	s->vars[i].children[0] = outer;
	s->vars[i].children[1] = inner;
	s->loops[l].first_child = (int16_t) NewLoop(s, inner, s->loops[l].first_child, -1);
	s->loops[l].var = outer;
	d->vars[1] = outer;
	d->vars[2] = inner;
	Compact(s);
	return true;
}

/* The variables of a chain of loops and everything below, in preorder */
static void
SubtreeVars(const Schedule *s, int l, int16_t *vars, int *n)
{
	for (; l >= 0; l = s->loops[l].next_sibling)
	{
		vars[(*n)++] = s->loops[l].var;
		SubtreeVars(s, s->loops[l].first_child, vars, n);
	}
}

/* Make the copies of the body loops for one half of a split */
static bool
CopyBody(Schedule *s, Directive *d, const int16_t *body, int n, int half,
		 int16_t *map, SilvanStatus *status)
{
	const char *suffix = s->vars[half].name;

	for (int k = 0; k < n; k++)
	{
		const char *orig = s->vars[body[k]].name;
		char		name[SCHEDULE_NAME_LEN * 2 + 2];

		snprintf(name, sizeof(name), "%s_%s", orig, suffix);
		if (strlen(name) >= SCHEDULE_NAME_LEN)
			return Fail(status, SILVAN_ERROR_INVALID, "index variable name too long", d,
						"The copy of %s under %s would be named %s, longer than %d characters.",
						orig, suffix, name, SCHEDULE_NAME_LEN - 1);
		if (ScheduleFindVar(s, name) >= 0)
			return Fail(status, SILVAN_ERROR_INVALID, "index variable already defined", d,
						"The copy of %s under %s would be named %s, which is already defined.",
						orig, suffix, name);
		map[body[k]] = AddCopy(s, body[k], name, d->line);
	}
	return true;
}

/* Clone a chain of loops, renaming each variable through map */
static int16_t
CloneChain(Schedule *s, int l, const int16_t *map)
{
	int16_t		first = -1;
	int			prev = -1;

	for (; l >= 0; l = s->loops[l].next_sibling)
	{
		int			me = NewLoop(s, map[s->loops[l].var], -1, -1);
		int16_t		body = CloneChain(s, s->loops[l].first_child, map);

		s->loops[me].first_child = body;
		if (prev >= 0)
			s->loops[prev].next_sibling = (int16_t) me;
		else
			first = (int16_t) me;
		prev = me;
	}
	return first;
}

/* Rename each variable of a chain of loops and their bodies through map */
static void
RelabelChain(Schedule *s, int l, const int16_t *map)
{
	for (; l >= 0; l = s->loops[l].next_sibling)
	{
		s->loops[l].var = map[s->loops[l].var];
		RelabelChain(s, s->loops[l].first_child, map);
	}
}

/* split(i, first, second, at): sibling loops first and second, each with a copy of i's body */
static bool
ApplySplit(Schedule *s, Directive *d, SilvanStatus *status)
{
	int16_t		i = d->vars[0];
	int64_t		at = d->values[0];
	int			l = FindLoop(s, i);
	int16_t		body[SCHEDULE_MAX_VARS];
	int16_t		map_first[SCHEDULE_MAX_VARS];
	int16_t		map_second[SCHEDULE_MAX_VARS];
	int			n = 0;
	int16_t		first;
	int16_t		second;
	int16_t		clone;

	if (at < 1)
		return Fail(status, SILVAN_ERROR_INVALID, "split iteration must be positive", d,
					"Split iteration %lld is not positive.", (long long) at);
	if (!CheckUnoptimized(s, d, i, status))
		return false;
	SubtreeVars(s, s->loops[l].first_child, body, &n);
	if (!NeedVars(s, d, 2 + 2 * n, status))
		return false;
	first = AddVar(s, d->args[1].word, s->vars[i].kind, INDEX_ORIGIN_SPLIT_FIRST, i, at, d->line);
	second = AddVar(s, d->args[2].word, s->vars[i].kind, INDEX_ORIGIN_SPLIT_SECOND, i, at, d->line);
	s->vars[i].children[0] = first;
	s->vars[i].children[1] = second;
	if (!CopyBody(s, d, body, n, first, map_first, status) ||
		!CopyBody(s, d, body, n, second, map_second, status))
		return false;
	clone = CloneChain(s, s->loops[l].first_child, map_second);
	RelabelChain(s, s->loops[l].first_child, map_first);
	s->loops[l].next_sibling = (int16_t) NewLoop(s, second, clone, s->loops[l].next_sibling);
	s->loops[l].var = first;
	d->vars[1] = first;
	d->vars[2] = second;
	Compact(s);
	return true;
}

/* Is loop slot l one of the k slots in set[]? */
static bool
InSet(const int *set, int k, int l)
{
	for (int a = 0; a < k; a++)
		if (set[a] == l)
			return true;
	return false;
}

/* Fail naming two loops of a reorder that are not perfectly nested */
static bool
FailNotNested(Schedule *s, Directive *d, int a, int b, SilvanStatus *status)
{
	return Fail(status, SILVAN_ERROR_INVALID, "loops are not perfectly nested", d,
				"Loops %s and %s are not perfectly nested.",
				s->vars[s->loops[a].var].name, s->vars[s->loops[b].var].name);
}

/* Find the chain the reorder's loops form, outermost first, in chain[] */
static bool
FindChain(Schedule *s, Directive *d, const int *set, int k, int *chain, SilvanStatus *status)
{
	int			top = -1;

	for (int a = 0; a < k; a++)
	{
		if (InSet(set, k, LoopParent(s, set[a])))
			continue;
		if (top >= 0)
			return FailNotNested(s, d, top, set[a], status);
		top = set[a];
	}
	chain[0] = top;
	for (int a = 1; a < k; a++)
	{
		int			child = s->loops[chain[a - 1]].first_child;

		if (child >= 0 && InSet(set, k, child) && s->loops[child].next_sibling >= 0)
			return FailNotNested(s, d, chain[a - 1], child, status);
		if (child < 0 || !InSet(set, k, child))
		{
			for (int b = 0; b < k; b++)
				if (!InSet(chain, a, set[b]))
					return FailNotNested(s, d, chain[a - 1], set[b], status);
		}
		chain[a] = child;
	}
	return true;
}

/* reorder(i, j, ...): permute a perfectly nested chain of loops */
static bool
ApplyReorder(Schedule *s, Directive *d, SilvanStatus *status)
{
	int			k = d->num_vars;
	int			set[SCHEDULE_MAX_VARS];
	int			chain[SCHEDULE_MAX_VARS];

	for (int a = 0; a < k; a++)
	{
		for (int b = 0; b < a; b++)
			if (d->vars[b] == d->vars[a])
				return Fail(status, SILVAN_ERROR_INVALID, "reorder names a loop twice", d,
							"Loop %s appears twice.", s->vars[d->vars[a]].name);
		set[a] = FindLoop(s, d->vars[a]);
	}
	if (!FindChain(s, d, set, k, chain, status))
		return false;
	for (int a = 0; a < k; a++)
		s->loops[chain[a]].var = d->vars[a];
	for (int a = 0; a < k; a++)
	{
		const IndexVar *v = &s->vars[d->vars[a]];
		const char *flag = InnermostFlag(v);
		int			body = s->loops[chain[a]].first_child;

		if (flag != NULL && body >= 0)
			return Fail(status, SILVAN_ERROR_INVALID, "loop is not innermost", d,
						"Loop %s carries %s, which needs an innermost loop, and would contain %s.",
						v->name, flag, s->vars[s->loops[body].var].name);
	}
	return true;
}

/* specialize(i), cache(i), parallel(i) */
static bool
ApplyFlag(Schedule *s, Directive *d, SilvanStatus *status)
{
	IndexVar   *v = &s->vars[d->vars[0]];

	(void) status;
	if (d->spec->op == SCHEDULE_OP_SPECIALIZE)
		v->specialize = true;
	else if (d->spec->op == SCHEDULE_OP_CACHE)
		v->cache = true;
	else
		v->parallel = true;
	return true;
}

/* A loop on the same path as loop l (above or below) mapped to dim; -1 if none */
static int
PathGpuConflict(const Schedule *s, int l, GpuDim dim)
{
	int16_t		below[SCHEDULE_MAX_VARS];
	int			n = 0;

	for (int p = LoopParent(s, l); p >= 0; p = LoopParent(s, p))
		if (s->vars[s->loops[p].var].gpu_dim == dim)
			return s->loops[p].var;
	SubtreeVars(s, s->loops[l].first_child, below, &n);
	for (int k = 0; k < n; k++)
		if (s->vars[below[k]].gpu_dim == dim)
			return below[k];
	return -1;
}

/* gpuDimension(i, dim): map a loop to a grid or block dimension */
static bool
ApplyGpuDimension(Schedule *s, Directive *d, SilvanStatus *status)
{
	GpuDim		dim = (GpuDim) d->values[0];
	int			other = PathGpuConflict(s, FindLoop(s, d->vars[0]), dim);

	if (other >= 0)
		return Fail(status, SILVAN_ERROR_INVALID, "gpu dimension already used", d,
					"Loop %s, on the same path of the nest, is already mapped to %s.",
					s->vars[other].name, gpu_words[dim - GPU_DIM_GRID_X]);
	s->vars[d->vars[0]].gpu_dim = dim;
	return true;
}

/* interleave(i): walk i's iterations in lock-step; i is an innermost tile */
static bool
ApplyInterleave(Schedule *s, Directive *d, SilvanStatus *status)
{
	IndexVar   *v = &s->vars[d->vars[0]];

	if (!CheckInnermost(s, d, d->vars[0], status))
		return false;
	if (v->origin != INDEX_ORIGIN_TILE_INNER)
		return Fail(status, SILVAN_ERROR_INVALID, "interleave needs a tile inner loop", d,
					"Loop %s has no constant trip count; interleave the inner loop of a tile.",
					v->name);
	v->interleave = true;
	return true;
}

/*
 * A walk strategy's directive (walk.h) on an innermost loop: the
 * strategy checks its arguments and sets them; a loop takes one strategy
 * (several directives of it where the strategy combines them, as the
 * lock-step walk's unrollWalk and peelWalk)
 */
static bool
ApplyWalkDirective(Schedule *s, Directive *d, SilvanStatus *status)
{
	IndexVar   *v = &s->vars[d->vars[0]];
	const WalkStrategy *strategy = WalkStrategyOf(d->walk);
	const char *carried = WalkCarried(v);
	WalkRefusal why = {0};

	if (strategy->check_args != NULL && !strategy->check_args(d->walk_directive, d->values, &why))
		return Fail(status, SILVAN_ERROR_INVALID, why.message, d, "%s", why.detail);
	if (!CheckInnermost(s, d, d->vars[0], status))
		return false;
	if (carried != NULL && (v->walk != d->walk || !strategy->combines))
		return Fail(status, SILVAN_ERROR_INVALID, "conflicting walk directives", d,
					"Loop %s already carries %s; a loop's walk takes one strategy.",
					v->name, carried);
	if (carried == NULL)
		memset(v->walk_args, 0, sizeof(v->walk_args));
	v->walk = d->walk;
	if (strategy->apply != NULL)
		strategy->apply(v, d->walk_directive, d->values);
	return true;
}

/* atomicReduce(i), sharedReduce(i) (GPU only), vectorReduce(i, width) */
static bool
ApplyReduce(Schedule *s, Directive *d, SilvanStatus *status)
{
	IndexVar   *v = &s->vars[d->vars[0]];
	int64_t		width;

	v->vector_width = 0;
	if (d->spec->op == SCHEDULE_OP_ATOMIC_REDUCE)
		v->reduce = REDUCE_ATOMIC;
	else if (d->spec->op == SCHEDULE_OP_SHARED_REDUCE)
		v->reduce = REDUCE_SHARED;
	else
	{
		width = d->values[0];
		if (width != 2 && width != 4 && width != 8 && width != 16)
			return Fail(status, SILVAN_ERROR_INVALID, "invalid vector width", d,
						"Width %lld is not 2, 4, 8 or 16.", (long long) width);
		v->reduce = REDUCE_VECTOR;
		v->vector_width = (int32_t) width;
	}
	return true;
}

/* Layout k of repr.c's table, as representation() names it; NULL past the last */
static const char *
LayoutName(int k)
{
	return k >= 0 && k < ReprCount() ? ReprAt(k)->name : NULL;
}

/* representation(r), tileTrees(size, tiling), reorderTrees(), fullCodegen() */
static bool
ApplyLayout(Schedule *s, Directive *d, SilvanStatus *status)
{
	if (d->spec->op == SCHEDULE_OP_REPRESENTATION)
	{
		memset(s->representation, 0, sizeof(s->representation));
		snprintf(s->representation, sizeof(s->representation), "%s",
				 LayoutName((int) d->values[0]));
	}
	else if (d->spec->op == SCHEDULE_OP_TILE_TREES)
	{
		if (d->values[0] < 1 || d->values[0] > SCHEDULE_MAX_TILE_SIZE)
			return Fail(status, SILVAN_ERROR_INVALID, "invalid tree tile size", d,
						"Tile size %lld is not between 1 and %d.",
						(long long) d->values[0], SCHEDULE_MAX_TILE_SIZE);
		s->tile_size = (int32_t) d->values[0];
		s->tiling = (TreeTiling) d->values[1];
	}
	else if (d->spec->op == SCHEDULE_OP_REORDER_TREES)
		s->reorder_trees = true;
	else
		s->full_codegen = true;
	return true;
}

/* The schedule with no directive: for batch: for tree */
void
ScheduleInitDefault(Schedule *schedule)
{
	memset(schedule, 0, sizeof(Schedule));
	AddVar(schedule, "batch", INDEX_BATCH, INDEX_ORIGIN_ROOT, -1, 0, 0);
	AddVar(schedule, "tree", INDEX_TREE, INDEX_ORIGIN_ROOT, -1, 0, 0);
	NewLoop(schedule, 0, 1, -1);
	NewLoop(schedule, 1, -1, -1);
	schedule->root_loop = 0;
	snprintf(schedule->representation, sizeof(schedule->representation), "array");
	schedule->tile_size = 1;
	schedule->tiling = TREE_TILING_UNIFORM;
	schedule->reorder_trees = false;
}

/* Characters of names */
static bool
IsNameStart(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool
IsNameChar(char c)
{
	return IsNameStart(c) || (c >= '0' && c <= '9');
}

/* Skip blanks up to end */
static const char *
SkipSpace(const char *p, const char *end)
{
	while (p < end && isspace((unsigned char) *p))
		p++;
	return p;
}

/* Describe the character at p for an error detail */
static void
DescribeChar(const char *p, const char *end, char *out, size_t size)
{
	if (p >= end)
		snprintf(out, size, "the end of the directive");
	else if (isprint((unsigned char) *p))
		snprintf(out, size, "\"%c\"", *p);
	else
		snprintf(out, size, "byte 0x%02x", (unsigned char) *p);
}

/* Fail on malformed text at p */
static bool
FailAt(SilvanStatus *status, Directive *d, const char *p, const char *end,
	   const char *expected)
{
	char		what[32];

	DescribeChar(p, end, what, sizeof(what));
	return Fail(status, SILVAN_ERROR_SYNTAX, "syntax error in schedule", d,
				"Expected %s, found %s.", expected, what);
}

/* Read a name or keyword (one optional ".part", as in grid.x) */
static bool
LexWord(const char **pp, const char *end, ScheduleArg *arg, Directive *d,
		SilvanStatus *status)
{
	const char *start = *pp;
	const char *p = start;
	size_t		len;

	while (p < end && IsNameChar(*p))
		p++;
	if (p + 1 < end && *p == '.' && IsNameStart(p[1]))
	{
		p++;
		while (p < end && IsNameChar(*p))
			p++;
	}
	len = (size_t) (p - start);
	if (len >= SCHEDULE_NAME_LEN)
		return Fail(status, SILVAN_ERROR_INVALID, "index variable name too long", d,
					"Name %.20s... is longer than %d characters.",
					start, SCHEDULE_NAME_LEN - 1);
	memcpy(arg->word, start, len);
	arg->word[len] = '\0';
	*pp = p;
	return true;
}

/* Read a decimal integer, optionally negative */
static bool
LexNumber(const char **pp, const char *end, ScheduleArg *arg, Directive *d,
		  SilvanStatus *status)
{
	const char *p = *pp;
	bool		negative = false;
	int64_t		value = 0;

	if (*p == '-')
	{
		negative = true;
		p++;
	}
	if (p >= end || !isdigit((unsigned char) *p))
		return FailAt(status, d, p, end, "a digit");
	for (; p < end && isdigit((unsigned char) *p); p++)
	{
		value = value * 10 + (*p - '0');
		if (value > NUMBER_MAX)
			return Fail(status, SILVAN_ERROR_INVALID, "number out of range", d,
						"A number exceeds %lld.", NUMBER_MAX);
	}
	if (p < end && (IsNameChar(*p) || *p == '.'))
		return FailAt(status, d, p, end, "a digit, \",\" or \")\"");
	arg->is_number = true;
	arg->number = negative ? -value : value;
	*pp = p;
	return true;
}

/* Read the arguments between the parentheses; *pp is just past "(" */
static bool
LexArgs(const char **pp, const char *end, Directive *d, SilvanStatus *status)
{
	const char *p = SkipSpace(*pp, end);

	if (p < end && *p == ')')
	{
		*pp = p + 1;
		return true;
	}
	for (;;)
	{
		ScheduleArg *arg = &d->args[d->num_args];

		p = SkipSpace(p, end);
		if (d->num_args == DIRECTIVE_MAX_ARGS)
			return Fail(status, SILVAN_ERROR_INVALID, "too many arguments", d,
						"A directive takes at most %d arguments.", DIRECTIVE_MAX_ARGS);
		if (p < end && IsNameStart(*p))
		{
			if (!LexWord(&p, end, arg, d, status))
				return false;
		}
		else if (p < end && (*p == '-' || isdigit((unsigned char) *p)))
		{
			if (!LexNumber(&p, end, arg, d, status))
				return false;
		}
		else
			return FailAt(status, d, p, end, "a name or a number");
		d->num_args++;
		p = SkipSpace(p, end);
		if (p < end && *p == ')')
			break;
		if (p >= end || *p != ',')
			return FailAt(status, d, p, end, "\",\" or \")\"");
		p++;
	}
	*pp = p + 1;
	return true;
}

/* The directive spec with this name; NULL if none */
static const DirectiveSpec *
LookupSpec(const char *name, size_t len, bool ignore_case)
{
	for (int k = 0; k < NUM_DIRECTIVE_SPECS; k++)
	{
		const char *n = directive_specs[k].name;

		if (strlen(n) != len)
			continue;
		if (ignore_case ? strncasecmp(n, name, len) == 0 : strncmp(n, name, len) == 0)
			return &directive_specs[k];
	}
	return NULL;
}

/* The spec of directive `directive` of walk strategy `walk`, in *spec */
static const DirectiveSpec *
WalkSpec(int walk, int directive, DirectiveSpec *spec)
{
	const WalkDirective *wd = &WalkStrategyOf(walk)->directives[directive];

	*spec = (DirectiveSpec) {
		.name = wd->name, .op = SCHEDULE_OP_WALK, .signature = wd->signature,
		.usage = wd->usage, .words = wd->words, .word_base = 0, .apply = ApplyWalkDirective
	};
	return spec;
}

/* Look up a directive by name, the walk strategies' too, into d; false if none */
static bool
LookupDirective(const char *name, size_t len, bool ignore_case, Directive *d)
{
	int			walk;
	int			directive;

	d->spec = LookupSpec(name, len, ignore_case);
	if (d->spec != NULL)
		return true;
	if (!WalkFindDirective(name, len, ignore_case, &walk, &directive))
		return false;
	d->walk = (int16_t) walk;
	d->walk_directive = (int16_t) directive;
	d->spec = WalkSpec(walk, directive, &d->walk_spec);
	return true;
}

/* The directive spec of a recorded directive, in *room if a walk's; NULL if none */
static const DirectiveSpec *
SpecOfRecord(const ScheduleDirective *rec, DirectiveSpec *room)
{
	if (rec->op == SCHEDULE_OP_WALK)
		return rec->walk >= 0 && rec->walk < WalkNumStrategies() && rec->walk_directive >= 0 &&
			rec->walk_directive < WalkStrategyOf(rec->walk)->num_directives ?
			WalkSpec(rec->walk, rec->walk_directive, room) : NULL;
	for (int k = 0; k < NUM_DIRECTIVE_SPECS; k++)
		if ((int) directive_specs[k].op == rec->op)
			return &directive_specs[k];
	return NULL;
}

/* Keyword k of a spec's 'w' argument; NULL past the last */
static const char *
SpecWord(const DirectiveSpec *spec, int k)
{
	if (spec->word_at != NULL)
		return spec->word_at(k);
	return spec->words != NULL ? spec->words[k] : NULL;
}

/* The spec's usage, "%w" replaced by its keywords joined by '|' */
static const char *
SpecUsage(const DirectiveSpec *spec, char *usage, size_t size)
{
	const char *w = strstr(spec->usage, "%w");
	size_t		n;

	if (w == NULL)
		return spec->usage;
	n = (size_t) snprintf(usage, size, "%.*s", (int) (w - spec->usage), spec->usage);
	for (int k = 0; SpecWord(spec, k) != NULL && n < size; k++)
		n += (size_t) snprintf(usage + n, size - n, "%s%s", k > 0 ? "|" : "", SpecWord(spec, k));
	if (n < size)
		snprintf(usage + n, size - n, "%s", w + 2);
	return usage;
}

/* The signature letter of argument k */
static char
ArgKind(const DirectiveSpec *spec, int k)
{
	size_t		len = strlen(spec->signature);

	if (len > 0 && spec->signature[len - 1] == '+' && (size_t) k >= len - 2)
		return spec->signature[len - 2];
	return (size_t) k < len ? spec->signature[k] : '\0';
}

/* Check the number and the kinds of the arguments against the signature */
static bool
CheckSignature(Directive *d, SilvanStatus *status)
{
	const DirectiveSpec *spec = d->spec;
	size_t		len = strlen(spec->signature);
	bool		repeats = len > 0 && spec->signature[len - 1] == '+';
	int			needed = (int) (repeats ? len - 1 : len);
	char		usage[SHOWN_LEN];

	if (repeats ? d->num_args < needed : d->num_args != needed)
		return Fail(status, SILVAN_ERROR_SYNTAX, "syntax error in schedule", d,
					"Wrong number of arguments; expected %s.",
					SpecUsage(spec, usage, sizeof(usage)));
	for (int k = 0; k < d->num_args; k++)
	{
		char		kind = ArgKind(spec, k);
		const ScheduleArg *arg = &d->args[k];
		bool		ok;

		if (kind == 'i')
			ok = arg->is_number;
		else if (kind == 'w')
			ok = !arg->is_number;
		else
			ok = !arg->is_number && strchr(arg->word, '.') == NULL;
		if (!ok)
			return Fail(status, SILVAN_ERROR_SYNTAX, "syntax error in schedule", d,
						"Argument %d must be %s; expected %s.", k + 1,
						kind == 'i' ? "a number" : kind == 'w' ? "a keyword" : "an index variable name",
						SpecUsage(spec, usage, sizeof(usage)));
	}
	return true;
}

/* Name the directive in normalized form for later error details */
static void
ShowNormalized(Directive *d)
{
	char		text[DIRECTIVE_MAX_ARGS * (SCHEDULE_NAME_LEN + 2) + 64];
	size_t		len = 0;

	len += snprintf(text + len, sizeof(text) - len, "%s(", d->spec->name);
	for (int k = 0; k < d->num_args; k++)
	{
		const ScheduleArg *arg = &d->args[k];

		if (arg->is_number)
			len += snprintf(text + len, sizeof(text) - len, "%s%lld",
							k > 0 ? ", " : "", (long long) arg->number);
		else
			len += snprintf(text + len, sizeof(text) - len, "%s%s",
							k > 0 ? ", " : "", arg->word);
	}
	snprintf(text + len, sizeof(text) - len, ")");
	if (strlen(text) < SHOWN_LEN)
		memcpy(d->shown, text, strlen(text) + 1);
	else
		snprintf(d->shown, SHOWN_LEN, "%.*s...", SHOWN_LEN - 4, text);
}

/* Name the directive by its raw text, for syntax errors */
static void
ShowRaw(Directive *d, const char *start, const char *end)
{
	int			len = (int) (end - start);

	if (len < SHOWN_LEN)
		snprintf(d->shown, SHOWN_LEN, "%.*s", len, start);
	else
		snprintf(d->shown, SHOWN_LEN, "%.*s...", SHOWN_LEN - 4, start);
}

/* Parse the text of one directive (trimmed, not empty) into d */
static bool
ParseDirective(const char *start, const char *end, int line, Directive *d,
			   SilvanStatus *status)
{
	const char *p = start;
	const char *name_end;
	Directive	hint = {0};

	memset(d, 0, sizeof(Directive));
	d->line = line;
	ShowRaw(d, start, end);
	if (!IsNameStart(*p))
		return FailAt(status, d, p, end, "a directive name");
	while (p < end && IsNameChar(*p))
		p++;
	name_end = p;
	if (!LookupDirective(start, (size_t) (name_end - start), false, d))
	{
		if (LookupDirective(start, (size_t) (name_end - start), true, &hint))
			return Fail(status, SILVAN_ERROR_SYNTAX, "unknown schedule directive", d,
						"Unknown directive %.*s; directive names are case-sensitive: did you mean %s?",
						(int) (name_end - start), start, hint.spec->name);
		return Fail(status, SILVAN_ERROR_SYNTAX, "unknown schedule directive", d,
					"Unknown directive %.*s.", (int) (name_end - start), start);
	}
	p = SkipSpace(p, end);
	if (p >= end || *p != '(')
		return FailAt(status, d, p, end, "\"(\" after the directive name");
	p++;
	if (!LexArgs(&p, end, d, status))
		return false;
	p = SkipSpace(p, end);
	if (p < end)
		return FailAt(status, d, p, end, "the end of the directive after \")\"");
	if (!CheckSignature(d, status))
		return false;
	ShowNormalized(d);
	return true;
}

/* Look up the variables, new names and keywords of a parsed directive */
static bool
ResolveArgs(Schedule *s, Directive *d, SilvanStatus *status)
{
	const DirectiveSpec *spec = d->spec;

	for (int k = 0; k < d->num_args; k++)
	{
		const char *word = d->args[k].word;
		char		kind = ArgKind(spec, k);
		int			v;

		if (kind == 'i')
			d->values[d->num_values++] = d->args[k].number;
		else if (kind == 'w')
		{
			int			w = 0;
			char		usage[SHOWN_LEN];

			while (SpecWord(spec, w) != NULL && strcmp(SpecWord(spec, w), word) != 0)
				w++;
			if (SpecWord(spec, w) == NULL)
				return Fail(status, SILVAN_ERROR_INVALID, "invalid directive argument", d,
							"%s is not a valid choice; expected %s.", word,
							SpecUsage(spec, usage, sizeof(usage)));
			d->values[d->num_values++] = spec->word_base + w;
		}
		else if (kind == 'n')
		{
			for (int j = 0; j < k; j++)
				if (ArgKind(spec, j) == 'n' && strcmp(d->args[j].word, word) == 0)
					return Fail(status, SILVAN_ERROR_INVALID, "index variable already defined", d,
								"%s is named twice.", word);
			if (ScheduleFindVar(s, word) >= 0)
				return Fail(status, SILVAN_ERROR_INVALID, "index variable already defined", d,
							"%s is already defined.", word);
			d->vars[d->num_vars++] = -1;
		}
		else
		{
			v = ScheduleFindVar(s, word);
			if (v < 0)
				return Fail(status, SILVAN_ERROR_INVALID, "unknown index variable", d,
							"There is no index variable %s.", word);
			if (FindLoop(s, v) < 0)
				return FailNotLive(s, d, v, status);
			d->vars[d->num_vars++] = (int16_t) v;
		}
	}
	return true;
}

/* Parse and apply one directive, then record it */
static bool
RunDirective(Schedule *s, const char *start, const char *end, int line,
			 SilvanStatus *status)
{
	Directive	d;
	ScheduleDirective *rec;

	start = SkipSpace(start, end);
	while (end > start && isspace((unsigned char) end[-1]))
		end--;
	if (start == end)
		return true;
	if (!ParseDirective(start, end, line, &d, status) || !ResolveArgs(s, &d, status))
		return false;
	if (s->num_directives >= SCHEDULE_MAX_DIRECTIVES)
		return Fail(status, SILVAN_ERROR_INVALID, "too many schedule directives", &d,
					"A schedule has at most %d directives.", SCHEDULE_MAX_DIRECTIVES);
	if (!d.spec->apply(s, &d, status))
		return false;
	rec = &s->directives[s->num_directives++];
	rec->op = (int16_t) d.spec->op;
	rec->walk = d.walk;
	rec->walk_directive = d.walk_directive;
	rec->num_vars = (int16_t) d.num_vars;
	memcpy(rec->vars, d.vars, sizeof(int16_t) * d.num_vars);
	memcpy(rec->values, d.values, sizeof(int64_t) * d.num_values);
	return true;
}

/* Where the code of a line ends: at "#", "--" or the end of the line */
static const char *
CodeEnd(const char *p, const char *eol)
{
	for (; p < eol; p++)
		if (*p == '#' || (*p == '-' && p + 1 < eol && p[1] == '-'))
			return p;
	return eol;
}

/* Apply the directives of one line */
static bool
RunLine(Schedule *s, const char *p, const char *eol, int line, SilvanStatus *status)
{
	const char *code_end = CodeEnd(p, eol);
	const char *seg = p;

	for (const char *q = p; q <= code_end; q++)
	{
		if (q < code_end && *q != ';')
			continue;
		if (!RunDirective(s, seg, q, line, status))
			return false;
		seg = q + 1;
	}
	return true;
}

/* Parse schedule text; on failure false, the default schedule, and a status */
bool
ScheduleParse(const char *text, Schedule *schedule, SilvanStatus *status)
{
	const char *p = text;
	int			line = 1;

	ScheduleInitDefault(schedule);
	StatusClear(status);
	if (text == NULL)
		return true;
	if (strnlen(text, SCHEDULE_MAX_TEXT + 1) > SCHEDULE_MAX_TEXT)
		return StatusFail(status, SILVAN_ERROR_INVALID, "schedule text too long",
						  "The schedule is longer than %d bytes.", SCHEDULE_MAX_TEXT);
	for (;;)
	{
		const char *eol = strchr(p, '\n');

		if (eol == NULL)
			eol = p + strlen(p);
		if (!RunLine(schedule, p, eol, line, status))
		{
			ScheduleInitDefault(schedule);
			return false;
		}
		if (*eol == '\0')
			break;
		p = eol + 1;
		line++;
	}
	return true;
}

/* The name of variable v, or "?" for a hand-built schedule that lacks it */
static const char *
VarName(const Schedule *s, int v)
{
	return v >= 0 && v < s->num_vars && v < SCHEDULE_MAX_VARS ? s->vars[v].name : "?";
}

/* Append one recorded directive */
static void
AppendDirective(TextBuf *buf, const Schedule *s, const ScheduleDirective *rec,
				const char *comma)
{
	DirectiveSpec room;
	const DirectiveSpec *spec = SpecOfRecord(rec, &room);
	int			nvars = rec->num_vars < 0 ? 0 :
		rec->num_vars > SCHEDULE_MAX_VARS ? SCHEDULE_MAX_VARS : rec->num_vars;
	int			nvalues = 0;
	int			vi = 0;

	if (spec == NULL)
		return;
	for (const char *c = spec->signature; *c; c++)
		nvalues += *c == 'i' || *c == 'w';
	TextAppend(buf, "%s(", spec->name);
	for (int k = 0; k < nvars + nvalues && k < DIRECTIVE_MAX_ARGS; k++)
	{
		char		kind = ArgKind(spec, k);
		int64_t		value = rec->values[k - vi < 2 ? k - vi : 1];
		int64_t		w = value - spec->word_base;

		if (k > 0)
			TextAppend(buf, "%s", comma);
		if (kind == 'v' || kind == 'n')
			TextAppend(buf, "%s", VarName(s, rec->vars[vi++]));
		else if (kind == 'i')
			TextAppend(buf, "%lld", (long long) value);
		else
		{
			int			num_words = 0;

			while (SpecWord(spec, num_words) != NULL)
				num_words++;
			TextAppend(buf, "%s", w >= 0 && w < num_words ? SpecWord(spec, (int) w) : "?");
		}
	}
	TextAppend(buf, ")");
}

/* All the recorded directives, one a line */
static char *
DirectivesText(const Schedule *s, const char *comma)
{
	TextBuf		buf = {0};

	for (int k = 0; k < s->num_directives && k < SCHEDULE_MAX_DIRECTIVES; k++)
	{
		if (k > 0)
			TextAppend(&buf, "\n");
		AppendDirective(&buf, s, &s->directives[k], comma);
	}
	return TextFinish(&buf);
}

/* Canonical text (malloc'd): parsing it again gives the same schedule */
char *
ScheduleToText(const Schedule *schedule)
{
	char	   *text = DirectivesText(schedule, ", ");

	/* text that fit the limit always fits without the spaces */
	if (text != NULL && strlen(text) > SCHEDULE_MAX_TEXT)
	{
		free(text);
		text = DirectivesText(schedule, ",");
	}
	return text;
}

/* The loop on path[] that stands for the outer loop of tile inner v */
static const char *
TilePartner(const Schedule *s, const IndexVar *v, const int16_t *path, int depth)
{
	int			outer = v->parent >= 0 ? s->vars[v->parent].children[0] : -1;

	for (int k = depth - 1; k >= 0 && outer >= 0; k--)
		if (Descends(s, path[k], outer))
			return s->vars[path[k]].name;
	return VarName(s, outer);
}

/* Append where loop v's iterations come from */
static void
AppendOrigin(TextBuf *buf, const Schedule *s, const IndexVar *v,
			 const int16_t *path, int depth)
{
	const char *parent = VarName(s, v->parent);

	switch (v->origin)
	{
		case INDEX_ORIGIN_ROOT:
			TextAppend(buf, "%s", v->kind == INDEX_BATCH ? "rows" : "trees");
			break;
		case INDEX_ORIGIN_TILE_OUTER:
			TextAppend(buf, "%s step %lld", parent, (long long) v->param);
			break;
		case INDEX_ORIGIN_TILE_INNER:
			TextAppend(buf, "%s tile (%lld)", TilePartner(s, v, path, depth),
					   (long long) v->param);
			break;
		case INDEX_ORIGIN_SPLIT_FIRST:
			TextAppend(buf, "%s until %lld", parent, (long long) v->param);
			break;
		case INDEX_ORIGIN_SPLIT_SECOND:
			TextAppend(buf, "%s from %lld", parent, (long long) v->param);
			break;
	}
	if (v->copy_of >= 0)
		TextAppend(buf, " (copy of %s)", VarName(s, v->copy_of));
}

/* Append one flag, opening or continuing the bracketed list */
static void
AppendFlag(TextBuf *buf, int *count, const char *flag, int value)
{
	TextAppend(buf, "%s%s", (*count)++ == 0 ? " [" : ", ", flag);
	if (value > 0)
		TextAppend(buf, " %d", value);
}

/* Append the optimization flags of a loop */
static void
AppendFlags(TextBuf *buf, const IndexVar *v)
{
	int			n = 0;
	WalkFlag	walk[WALK_MAX_DIRECTIVES];
	int			num_walk;

	if (v->parallel)
		AppendFlag(buf, &n, "parallel", 0);
	if (v->cache)
		AppendFlag(buf, &n, "cache", 0);
	if (v->specialize)
		AppendFlag(buf, &n, "specialize", 0);
	if (v->interleave)
		AppendFlag(buf, &n, "interleave", 0);
	num_walk = WalkFlags(v, walk);
	for (int k = 0; k < num_walk; k++)
	{
		AppendFlag(buf, &n, walk[k].name, (int) walk[k].value);
		if (walk[k].word != NULL)
			TextAppend(buf, " %s", walk[k].word);
	}
	if (v->reduce == REDUCE_ATOMIC)
		AppendFlag(buf, &n, "atomicReduce", 0);
	if (v->reduce == REDUCE_SHARED)
		AppendFlag(buf, &n, "sharedReduce", 0);
	if (v->reduce == REDUCE_VECTOR)
		AppendFlag(buf, &n, "vectorReduce", v->vector_width);
	if (v->gpu_dim > GPU_DIM_NONE && v->gpu_dim <= GPU_DIM_BLOCK_Z)
		AppendFlag(buf, &n, gpu_words[v->gpu_dim - GPU_DIM_GRID_X], 0);
	if (n > 0)
		TextAppend(buf, "]");
}

/* Append a chain of sibling loops and their bodies, indented by depth */
static void
DumpChain(TextBuf *buf, const Schedule *s, int l, int16_t *path, int depth)
{
	for (; l >= 0 && l < s->num_loops && depth < SCHEDULE_MAX_VARS;
		 l = s->loops[l].next_sibling)
	{
		int			v = s->loops[l].var;

		if (v < 0 || v >= s->num_vars)
			return;
		TextAppend(buf, "%*sfor %s in ", depth * 2, "", s->vars[v].name);
		AppendOrigin(buf, s, &s->vars[v], path, depth);
		AppendFlags(buf, &s->vars[v]);
		TextAppend(buf, "\n");
		path[depth] = (int16_t) v;
		DumpChain(buf, s, s->loops[l].first_child, path, depth + 1);
	}
}

/* The loop nest as indented text (malloc'd), for explain */
char *
ScheduleDumpNest(const Schedule *schedule)
{
	TextBuf		buf = {0};
	int16_t		path[SCHEDULE_MAX_VARS];

	DumpChain(&buf, schedule, schedule->root_loop, path, 0);
	return TextFinish(&buf);
}

/* Does the schedule sum a row's trees out of model order? (schedule.h) */
bool
ScheduleReordersSums(const Schedule *schedule)
{
	if (schedule->reorder_trees)
		return true;
	for (int v = 0; v < schedule->num_vars; v++)
	{
		const IndexVar *var = &schedule->vars[v];

		if (var->kind == INDEX_TREE &&
			(var->parallel || var->reduce != REDUCE_DEFAULT || var->gpu_dim != GPU_DIM_NONE))
			return true;
	}
	return false;
}
