/*
 * mir.c
 *		Lower HIR + schedule to the MIR loop nest, and dump it.
 *
 * The loop nest is built from the schedule's knobs: an optional batch tile
 * loop (b0), the tree loop in HIR order, and the row loop of the tile (b1)
 * stepping by the interleave factor with remainder loops of 4 and 1.  The
 * walk op takes exactly depth(tree) hops: padded trees need no leaf test;
 * in unpadded (deeper) trees a row that reached a leaf stays there.
 */
#include <stdio.h>
#include <string.h>

#include "silvan/mir.h"

/* Take a fresh op from the MIR's pool */
static MirOp *
MirNewOp(Mir *mir, MirOpKind kind, const char *var, int32_t step)
{
	MirOp	   *op = &mir->ops[mir->num_ops++];

	memset(op, 0, sizeof(MirOp));
	op->kind = kind;
	snprintf(op->var, sizeof(op->var), "%s", var);
	op->step = step;
	return op;
}

/* Build the loop nest of the schedule over the HIR */
bool
MirBuild(const Hir *hir, const Schedule *schedule, Mir *mir, SilvanStatus *status)
{
	MirOp	   *tile = NULL;
	MirOp	   *tree;
	MirOp	   *rows;
	MirOp	   *walk;

	if (!ScheduleCheck(schedule, status))
		return false;
	memset(mir, 0, sizeof(Mir));
	mir->hir = hir;
	mir->tile_rows = schedule->batch_block;
	mir->interleave = schedule->interleave;
	mir->leaf_walk = hir->num_unpadded > 0;
	mir->fixed_walk = !mir->leaf_walk || hir->num_unpadded < hir->num_trees;

	if (mir->tile_rows > 0)
		tile = MirNewOp(mir, MIR_LOOP_TILE, "b0", mir->tile_rows);
	tree = MirNewOp(mir, MIR_LOOP_TREE, "tree", 1);
	rows = MirNewOp(mir, MIR_LOOP_ROWS, tile ? "b1" : "batch", mir->interleave);
	walk = MirNewOp(mir, MIR_WALK, "", mir->interleave);
	walk->next = MirNewOp(mir, MIR_REDUCE, "", mir->interleave);
	rows->body = walk;
	tree->body = rows;
	if (tile)
		tile->body = tree;
	mir->root = tile ? tile : tree;
	return true;
}

/* Dump one op and what it nests, indented by depth */
static void
MirDumpOp(TextBuf *buf, const Mir *mir, const MirOp *op, int indent,
		  const char *row_range, const char *row_var)
{
	char		range[64];

	for (; op != NULL; op = op->next)
	{
		TextAppend(buf, "%*s", indent * 2, "");
		switch (op->kind)
		{
			case MIR_LOOP_TILE:
				TextAppend(buf, "for %s = 0 to num_rows step %d {\n", op->var, op->step);
				snprintf(range, sizeof(range), "%s to min(%s + %d, num_rows)",
						 op->var, op->var, op->step);
				MirDumpOp(buf, mir, op->body, indent + 1, range, row_var);
				break;
			case MIR_LOOP_TREE:
				TextAppend(buf, "for %s = 0 to %d {  # model order\n",
						   op->var, mir->hir->num_trees);
				TextAppend(buf, "%*sroot, depth, group = getTree(%s)\n",
						   indent * 2 + 2, "", op->var);
				MirDumpOp(buf, mir, op->body, indent + 1, row_range, row_var);
				break;
			case MIR_LOOP_ROWS:
				TextAppend(buf, "for %s = %s step %d%s {\n", op->var, row_range, op->step,
						   op->step > MIR_REMAINDER_STEP ? ", remainder step 4, 1" :
						   op->step > 1 ? ", remainder step 1" : "");
				MirDumpOp(buf, mir, op->body, indent + 1, row_range, op->var);
				break;
			case MIR_WALK:
				TextAppend(buf, "leaf[0:%d] = walkDecisionTree(tree, rows[%s:%s+%d], "
						   "hops = depth(tree)%s%s)\n", op->step, row_var, row_var,
						   op->step, mir->fixed_walk ? ", padded: no leaf test" : "",
						   mir->leaf_walk ? ", unpadded: until all rows reach leaves" : "");
				break;
			case MIR_REDUCE:
				TextAppend(buf, "reduce(acc[%s + i][group], leaf[i]) for i < %d\n",
						   row_var, op->step);
				break;
		}
		if (op->kind == MIR_LOOP_TILE || op->kind == MIR_LOOP_TREE ||
			op->kind == MIR_LOOP_ROWS)
			TextAppend(buf, "%*s}\n", indent * 2, "");
	}
}

/* The MIR loop nest as text (malloc'd) */
char *
MirDump(const Mir *mir)
{
	TextBuf		buf = {0};

	TextAppend(&buf, "mir:\n");
	MirDumpOp(&buf, mir, mir->root, 1, "0 to num_rows", "row");
	return TextFinish(&buf);
}
