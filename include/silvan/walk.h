/*
 * walk.h
 *		Walk strategies as plug-ins: how the innermost loop's walk moves its
 *		rows through their trees.  Each strategy is one descriptor, in a
 *		file of its own (src/compiler/walk_<name>.c), registered in one
 *		table (walk.c).
 *
 * A loop of a schedule carries one strategy (IndexVar.walk, its row in
 * the table) and the numbers and keywords its directives set
 * (IndexVar.walk_args).  No phase of the compiler names a strategy; each
 * asks the loop's descriptor:
 *
 *   schedule language  the directives' syntax, the checks of their
 *                      arguments, what they set, the nest dump's flags
 *                      (schedule_lang.c)
 *   MIR                what the walk op takes from its loop, the checks
 *                      of its path, its widest step and its remainders,
 *                      its line in the MIR dump (mir.c)
 *   default schedule   whether the strategy is the default for a forest,
 *                      a batch size and the host profile; strategies are
 *                      asked in the order of default_rank (schedule.c)
 *   tuner              its points of the tuner's CPU space: when each is
 *                      valid, what the heuristic's first phase takes,
 *                      the loop nest around it, its directive
 *                      (tune_space.c)
 *   code generation    its emission and its size for the compile's bound
 *                      (WalkCodegen, codegen.h)
 *
 * Row 0 is the lock-step walk, which a loop without a walk directive
 * takes.  CONTRIBUTING.md says how to add a strategy.
 *
 * Nothing here includes postgres.h or raises.
 */
#ifndef SILVAN_WALK_H
#define SILVAN_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "silvan/status.h"

#define WALK_MAX_ARGS		2	/* IndexVar.walk_args */
#define WALK_MAX_DIRECTIVES	2	/* directives of one strategy */
#define WALK_MAX_TUNINGS	3	/* tuner walks of one strategy */

struct IndexVar;
struct Schedule;
struct Forest;
struct HostProfile;
struct Mir;
struct MirOp;
struct Hir;
struct TextBuf;
struct TuneShape;
struct TuneCpuPoint;
struct WalkCodegen;

/*
 * One directive of a strategy.  signature: schedule_lang.c's letters, the
 * first a loop ('v'), then 'i' numbers and 'w' keywords of words[], whose
 * values are their positions.  In usage, "%w" stands for the words.
 */
typedef struct WalkDirective
{
	const char *name;
	const char *signature;
	const char *usage;
	const char *const *words;	/* NULL-terminated; NULL: none */
} WalkDirective;

/* One flag of the nest dump: a name, a number (0: none), a keyword (NULL: none) */
typedef struct WalkFlag
{
	const char *name;
	int64_t		value;
	const char *word;
} WalkFlag;

/* Why a strategy refused a directive: errmsg and errdetail */
typedef struct WalkRefusal
{
	const char *message;
	char		detail[SILVAN_DETAIL_LEN];
} WalkRefusal;

/* Parts of a walk's line in the MIR dump (WalkStrategy.describe) */
#define WALK_DESCRIBE_ARGS	0	/* inside walkDecisionTree(...) */
#define WALK_DESCRIBE_NOTE	1	/* after the trees it walks */

/* How the tuner's loop nest around a walk is built (WalkTuning.nest) */
#define WALK_NEST_TREE_TILES	0x01	/* takes tileTrees() > 1 */
#define WALK_NEST_SPECIALIZE	0x02	/* specialize(tree) around it */
#define WALK_NEST_STAGE_ROWS	0x04	/* cache(b0): the row tile staged */
#define WALK_NEST_VECTOR_LANES	0x08	/* interleaves MIR_MAX_VECTOR_WIDTH rows */
#define WALK_NEST_FULL_CODEGEN	0x10	/* fullCodegen() worth a try */

/*
 * One walk of the tuner's CPU space.  word: a keyword of the strategy's
 * directive the hooks read (a code walk's form), or NULL.  valid: the
 * strategy's own conditions on a point (tune_space.c checks the rest;
 * NULL: none); first_phase: does the heuristic's first phase time the
 * point (it may set the layout the walk needs; NULL: yes); nest_text:
 * builds the point's whole loop nest when the strategy has its own (1),
 * or leaves it to tune_space.c (0), or fails (-1) (NULL: 0); directive:
 * the walk's line for the innermost loop `loop` (NULL: none).
 */
typedef struct WalkTuning WalkTuning;
struct WalkTuning
{
	const char *name;
	const char *word;
	uint32_t	nest;
	bool		(*valid) (const struct TuneShape *shape, const struct TuneCpuPoint *point);
	bool		(*first_phase) (struct TuneCpuPoint *point);
	int			(*nest_text) (const WalkTuning *tuning, const struct TuneShape *shape,
							  const struct TuneCpuPoint *point, char *text, size_t size);
	bool		(*directive) (const WalkTuning *tuning, const struct TuneShape *shape,
							  const char *loop, char *text, size_t size);
};

typedef struct WalkStrategy
{
	const char *name;			/* as explain and the docs name it */

	/* the schedule language */
	int			num_directives;
	WalkDirective directives[WALK_MAX_DIRECTIVES];
	/* may a loop carry several of its directives (unrollWalk and peelWalk)? */
	bool		combines;
	/* check directive d's values; true, or false with why (NULL: no arguments) */
	bool		(*check_args) (int d, const int64_t *values, WalkRefusal *why);
	/* set directive d's values in var->walk_args (NULL: no arguments) */
	void		(*apply) (struct IndexVar *var, int d, const int64_t *values);
	/*
	 * the flags var shows in the nest dump, at most WALK_MAX_DIRECTIVES
	 * (NULL: its one directive's name)
	 */
	int			(*flags) (const struct IndexVar *var, WalkFlag *flags);

	/* MIR (mir.c); NULL hooks take the lock-step walk's behaviour */
	/* what the walk op takes from its loop, beyond walk and walk_args */
	void		(*lower) (const struct IndexVar *var, struct MirOp *walk);
	/* lanes one step of the walk may take; NULL: MIR_MAX_WIDTH */
	int32_t		(*max_lanes) (const struct Schedule *schedule, const struct MirOp *walk);
	/* the walk's own conditions on its path, the loops around it */
	bool		(*check_path) (const struct Schedule *schedule, const struct MirOp *walk,
							   const struct MirOp *loop, SilvanStatus *status);
	/* widths of the remainder loops between width and 1, widest first */
	int			(*remainders) (const struct MirOp *walk, int32_t *widths);
	/* its part of the walk's line in the MIR dump: WALK_DESCRIBE_* */
	void		(*describe) (struct TextBuf *buf, const struct Mir *mir,
							 const struct MirOp *walk, int part);
	/* once the representation is known (MirFinish) */
	void		(*finish) (struct Mir *mir, const struct Hir *hir, const struct MirOp *walk);
	/* are the trees compiled into code (specialized functions, outlining)? */
	bool		(*trees_in_code) (const struct MirOp *walk);
	/*
	 * does every hop decide through the layout (Representation.move_to_child),
	 * so that it compares whatever the layout stores: integer keys too
	 * (repr_keys.c)?
	 */
	bool		hops_through_layout;

	/* the default schedule: tried in ascending default_rank; 0: never */
	int			default_rank;
	bool		(*default_schedule) (const struct Forest *forest, int32_t batch_size,
									 const struct HostProfile *host,
									 struct Schedule *schedule);

	/* the tuner's CPU space */
	int			num_tunings;
	WalkTuning	tunings[WALK_MAX_TUNINGS];

	/* code generation (codegen.h) */
	const struct WalkCodegen *codegen;
} WalkStrategy;

/* The strategies, one file each */
extern const WalkStrategy WalkLockstep;
extern const WalkStrategy WalkEarlyExit;
extern const WalkStrategy WalkCode;
extern const WalkStrategy WalkVector;

/* walk.c: the table */
extern int	WalkNumStrategies(void);
/* The strategy of row kind; the lock-step walk when out of range */
extern const WalkStrategy *WalkStrategyOf(int kind);
/* The row of a strategy; -1 if it is not in the table */
extern int	WalkKindOf(const WalkStrategy *strategy);
/* The strategy and directive with this name; false if none */
extern bool WalkFindDirective(const char *name, size_t len, bool ignore_case,
							  int *kind, int *directive);
/* The directive loop var carries, for messages; NULL if none */
extern const char *WalkCarried(const struct IndexVar *var);
/* The flags loop var shows in the nest dump (WalkStrategy.flags) */
extern int	WalkFlags(const struct IndexVar *var, WalkFlag *flags);
/* Tuner walks, numbered across the table in order */
extern int	WalkNumTunings(void);
extern const WalkTuning *WalkTuningAt(int index, int *kind);
/* The tuner walk of this name; -1 if none */
extern int	WalkTuningFind(const char *name);

#endif							/* SILVAN_WALK_H */
