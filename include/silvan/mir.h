/*
 * mir.h
 *		The mid-level IR: an explicit loop nest over batch and trees.
 *
 * MIR is a small tree of ops that the schedule produces from the HIR.  A
 * loop op defines an index variable and nests a body; the walk op moves
 * the rows that the enclosing loops fixed through the tree they fixed; the
 * reduce op adds each leaf into the row's margin for the tree's group.
 * The default schedule gives
 *
 *   for b0 in batch step tile          (MIR_LOOP_TILE)
 *     for tree in HIR order            (MIR_LOOP_TREE)
 *       for b1 in tile step interleave (MIR_LOOP_ROWS, remainder 4, 1)
 *         walk; reduce
 *
 * The code generator lowers each op on its own, so a schedule that nests
 * the loops differently only changes this tree.
 */
#ifndef SILVAN_MIR_H
#define SILVAN_MIR_H

#include "silvan/compiler.h"
#include "silvan/hir.h"

/* Limits of the schedule knobs */
#define SCHEDULE_MAX_INTERLEAVE		16
#define SCHEDULE_MAX_UNROLL_DEPTH	HIR_MAX_PAD_DEPTH
#define SCHEDULE_MAX_BATCH_BLOCK	(1 << 20)

typedef enum MirOpKind
{
	MIR_LOOP_TILE,				/* for b0 = 0 to num_rows step tile */
	MIR_LOOP_TREE,				/* for tree = 0 to num_trees, HIR order */
	MIR_LOOP_ROWS,				/* for b1 in the open rows step interleave */
	MIR_WALK,					/* walk the fixed rows through the fixed tree */
	MIR_REDUCE					/* acc[row][group(tree)] += leaf */
} MirOpKind;

typedef struct MirOp
{
	MirOpKind	kind;
	char		var[8];			/* index variable a loop defines */
	int32_t		step;			/* tile rows or interleave */
	struct MirOp *body;			/* first op inside a loop */
	struct MirOp *next;			/* next op of the same block */
} MirOp;

#define MIR_MAX_OPS 8

/* Rows a row loop's remainder walks together before going one by one */
#define MIR_REMAINDER_STEP	4

typedef struct Mir
{
	const Hir  *hir;
	MirOp	   *root;
	MirOp		ops[MIR_MAX_OPS];
	int32_t		num_ops;
	int32_t		tile_rows;		/* 0: one tile, the whole batch */
	int32_t		interleave;		/* rows walked in lock-step */
	bool		fixed_walk;		/* some trees are padded: no leaf tests */
	bool		leaf_walk;		/* some are not: leaves stop the walk */
} Mir;

/* schedule.c */
extern bool ScheduleCheck(const Schedule *schedule, SilvanStatus *status);

/* mir.c */
extern bool MirBuild(const Hir *hir, const Schedule *schedule, Mir *mir,
					 SilvanStatus *status);
extern char *MirDump(const Mir *mir);

#endif							/* SILVAN_MIR_H */
