/*
 * schedule.c
 *		Default schedules and their text in the schedule language.
 *
 * 0.1 understands one family of loop nests, XGBoost's own strategy made
 * explicit: tile the batch, walk every tree over one tile of rows at a
 * time, and walk several rows of the tile in lock-step through each tree:
 *
 *   tile(batch, b0, b1, 128); reorder(b0, tree, b1); interleave(b1, 16);
 *   unrollWalk(b1, 8); representation(array)
 *
 * The tile keeps its rows in the L1 cache while all trees pass over them;
 * the tree's nodes stay hot across the rows of the tile; interleaving hides
 * the latency of each walk's dependent loads.  unrollWalk(b1, d) pads every
 * tree up to depth d so that its walk has a fixed number of hops and no
 * leaf tests (the code generator emits that walk as a counted loop).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/mir.h"
#include "silvan/repr.h"

/* Rows whose values fill about this many bytes make one tile */
#define SCHEDULE_TILE_BYTES		16384
#define SCHEDULE_MIN_TILE		64
#define SCHEDULE_MAX_TILE		1024
#define SCHEDULE_DEFAULT_INTERLEAVE	16
#define SCHEDULE_CATEGORICAL_INTERLEAVE	8
#define SCHEDULE_DEFAULT_UNROLL	16

/* Largest power of two not above n (n >= 1) */
static int32_t
FloorPow2(int64_t n)
{
	int32_t		p = 1;

	while ((int64_t) p * 2 <= n && p < (1 << 30))
		p *= 2;
	return p;
}

/* Does the forest have categorical splits? */
static bool
HasCategorical(const Forest *forest)
{
	for (int64_t i = 0; i < forest->num_nodes; i++)
		if (forest->nodes[i].kind == FOREST_NODE_CATEGORICAL)
			return true;
	return false;
}

/*
 * Pick the default schedule for a forest and a typical batch size.
 *
 * Measured on a 100-tree depth-8 XGBoost model (higgs, 4096 rows): walking
 * 16 rows in lock-step beats 8 by about 25%, tile sizes from 64 to 1024
 * rows are within noise; forests with categorical splits, whose steps are
 * longer, do best with 8.  Trees up to depth 16 are padded.
 */
void
ScheduleDefault(const Forest *forest, int32_t batch_size, Schedule *schedule)
{
	int64_t		row_bytes = (int64_t) forest->num_features * (int64_t) ForestValueSize(forest);
	int32_t		tile = FloorPow2(SCHEDULE_TILE_BYTES / (row_bytes > 0 ? row_bytes : 1));

	if (tile < SCHEDULE_MIN_TILE)
		tile = SCHEDULE_MIN_TILE;
	if (tile > SCHEDULE_MAX_TILE)
		tile = SCHEDULE_MAX_TILE;
	memset(schedule, 0, sizeof(Schedule));
	schedule->batch_block = batch_size > 0 && batch_size <= tile ? 0 : tile;
	schedule->interleave = HasCategorical(forest) ?
		SCHEDULE_CATEGORICAL_INTERLEAVE : SCHEDULE_DEFAULT_INTERLEAVE;
	schedule->unroll_depth = forest->max_depth < SCHEDULE_DEFAULT_UNROLL ?
		forest->max_depth : SCHEDULE_DEFAULT_UNROLL;
	snprintf(schedule->representation, sizeof(schedule->representation), "array");
}

/* The schedule in the text form of the schedule language (malloc'd) */
char *
ScheduleToText(const Schedule *schedule)
{
	TextBuf		buf = {0};
	const char *rows = schedule->batch_block > 0 ? "b1" : "batch";

	if (schedule->batch_block > 0)
		TextAppend(&buf, "tile(batch, b0, b1, %d); reorder(b0, tree, b1); ",
				   schedule->batch_block);
	else
		TextAppend(&buf, "reorder(tree, batch); ");
	TextAppend(&buf, "interleave(%s, %d); unrollWalk(%s, %d); representation(%.*s)",
			   rows, schedule->interleave, rows, schedule->unroll_depth,
			   (int) sizeof(schedule->representation), schedule->representation);
	return TextFinish(&buf);
}

/* Check that the schedule's knobs are in range */
bool
ScheduleCheck(const Schedule *schedule, SilvanStatus *status)
{
	char		name[sizeof(schedule->representation) + 1];

	if (schedule->interleave < 1 || schedule->interleave > SCHEDULE_MAX_INTERLEAVE)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "Interleave factor %d is out of range; expected 1 to %d.",
						  schedule->interleave, SCHEDULE_MAX_INTERLEAVE);
	if (schedule->unroll_depth < 0 || schedule->unroll_depth > SCHEDULE_MAX_UNROLL_DEPTH)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "Unroll depth %d is out of range; expected 0 to %d.",
						  schedule->unroll_depth, SCHEDULE_MAX_UNROLL_DEPTH);
	if (schedule->batch_block < 0 || schedule->batch_block > SCHEDULE_MAX_BATCH_BLOCK)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "Batch tile of %d rows is out of range; expected 0 to %d.",
						  schedule->batch_block, SCHEDULE_MAX_BATCH_BLOCK);
	memcpy(name, schedule->representation, sizeof(schedule->representation));
	name[sizeof(schedule->representation)] = '\0';
	if (ReprLookup(name) == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "Representation \"%s\" is unknown; expected \"array\".", name);
	return true;
}
