/*
 * fuzz_lower.c
 *		Lowering a forest under a schedule, as the compiler does, short of
 *		code generation.
 *
 * FuzzLower repeats CompileForest's front half step by step: the MIR from
 * the schedule, the tree tiling (whose walks must land on the leaves the
 * forest's own walks reach, on the rows given), the HIR, the
 * representation's buffers (with or without gathers), MirFinish and the
 * explain dumps.  Each step may refuse, cleanly; none may crash.  LLVM is
 * linked, as the representations hold their code generators, but never
 * called: code generation is the JIT's business and too slow to fuzz.
 *
 * The schedule target lowers every schedule it parses for two fixed
 * forests; the binary-form target lowers every forest it loads under the
 * compiler's default schedule and a few that tile, reorder and pad, after
 * rewriting >=, > and != splits as CompileForest does (HirNormalizeCompares).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "silvan/mir.h"
#include "silvan/repr.h"
#include "silvan/tiling.h"

/* Schedules every loaded forest is lowered under, beside the default one */
static const char *const lower_schedules[] = {
	"tileTrees(4, probabilistic); tile(batch, b0, b1, 8); reorder(b0, tree, b1); "
	"interleave(b1); unrollWalk(b1, 4)",
	"representation(sparse); tileTrees(2, uniform); reorderTrees()",
	"representation(reorg); tile(batch, b0, b1, 16); reorder(b0, tree, b1); peelWalk(b1, 2)",
	"representation(perfect); tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)",
	"representation(array); tileTrees(8, probabilistic); reorder(tree, batch); parallel(tree)",
	"representation(sparse); tileTrees(3, uniform); tile(tree, t0, t1, 2); "
	"reorder(t0, batch, t1); unrollWalk(t1, 2)",
};

/* Profile a forest on rows for lowering */
void
FuzzLoweringInit(FuzzLowering *l, const Forest *forest, const void *rows,
				 int64_t num_rows)
{
	memset(l, 0, sizeof(*l));
	l->forest = forest;
	l->rows = rows;
	l->num_rows = num_rows;
	l->profile.num_rows = num_rows;
	l->profile.num_nodes = forest->num_nodes;
	l->profile.node_hits = calloc(forest->num_nodes > 0 ? forest->num_nodes : 1,
								  sizeof(int64_t));
	if (l->profile.node_hits == NULL)
		FuzzFail("out of memory");
	ForestProfileAccumulate(forest, rows, num_rows, l->profile.node_hits);
}

/* Free what FuzzLoweringInit allocated */
void
FuzzLoweringFree(FuzzLowering *l)
{
	free(l->profile.node_hits);
	memset(l, 0, sizeof(*l));
}

/* Tiled walks must end at the leaves the forest's own walks reach */
static void
CheckTiledWalks(const FuzzLowering *l, const TiledForest *tiled)
{
	const Forest *f = l->forest;
	size_t		row_bytes = ForestValueSize(f) * (size_t) f->num_features;
	SilvanStatus status;

	if (!TiledForestCheck(tiled, &status))
		FuzzFail("tiled forest: %s: %s", status.message, status.detail);
	for (int64_t r = 0; r < l->num_rows; r++)
	{
		const char *row = (const char *) l->rows + r * row_bytes;

		for (int32_t t = 0; t < f->num_trees; t++)
			if (TiledWalkTree(tiled, t, row) != ForestWalkTree(f, t, row))
				FuzzFail("tiled walk of tree %d, row %lld, ends at another leaf", t, (long long) r);
	}
}

/* Tile the trees as CompileForest's TileTrees does */
static TiledForest *
Tile(const FuzzLowering *l, const Schedule *schedule, const Mir *mir)
{
	TilingOptions options;
	SilvanStatus status;
	TiledForest *tiled;

	TilingOptionsInit(&options, schedule->tile_size, schedule->tiling);
	options.profile = &l->profile;
	options.pad_depth = mir->max_unroll < TILING_MAX_PAD_DEPTH ?
		mir->max_unroll : TILING_MAX_PAD_DEPTH;
	tiled = TileForest(l->forest, &options, &status);
	if (tiled == NULL)
		FuzzCheckStatus(&status, "tiling");
	else
		CheckTiledWalks(l, tiled);
	return tiled;
}

/* Order and pad the trees and build the HIR, as CompileForest's BuildHir does */
static Hir *
BuildHir(const Forest *f, const Schedule *schedule, const Mir *mir)
{
	size_t		n = (size_t) f->num_trees + 1;
	int32_t    *order = calloc(n, sizeof(int32_t));
	int32_t    *depths = calloc(n, sizeof(int32_t));
	int32_t    *pad_to = calloc(n, sizeof(int32_t));
	SilvanStatus status;
	Hir		   *hir;

	if (order == NULL || depths == NULL || pad_to == NULL)
		FuzzFail("out of memory");
	HirOrder(f, schedule->reorder_trees, order);
	for (int32_t t = 0; t < f->num_trees; t++)
		depths[t] = f->trees[order[t]].depth;
	MirPadLevels(mir, depths, pad_to);
	hir = HirBuild(f, order, schedule->tile_size > 1 ? NULL : pad_to, &status);
	if (hir == NULL)
		FuzzCheckStatus(&status, "building the HIR");
	free(order);
	free(depths);
	free(pad_to);
	return hir;
}

/* Lay out the HIR and finish the MIR; dump both as explain would */
static void
BuildBuffers(Mir *mir, const Hir *hir, const Representation *repr, bool gather)
{
	ReprBuffers buffers;
	SilvanStatus status;

	memset(&buffers, 0, sizeof(buffers));
	buffers.gather = gather;
	if (!repr->build(hir, &buffers, &status))
		FuzzCheckStatus(&status, "laying out the model");
	else
	{
		MirFinish(mir, hir, buffers.trees);
		free(MirDump(mir));
		free(HirDump(hir, true));
	}
	ReprBuffersFree(&buffers);
}

/* Lower a forest under a schedule the way CompileForest does, stopping before code generation */
void
FuzzLower(const FuzzLowering *l, const Schedule *schedule, bool gather)
{
	const Representation *repr = ReprLookup(schedule->representation);
	Mir		   *mir = calloc(1, sizeof(Mir));
	TiledForest *tiled = NULL;
	Hir		   *hir = NULL;
	SilvanStatus status;

	if (mir == NULL)
		FuzzFail("out of memory");
	if (repr == NULL || schedule->tile_size < 1 || schedule->tile_size > TILE_MAX_SIZE)
		FuzzFail("ScheduleParse accepted layout \"%s\", tile size %d",
				 schedule->representation, schedule->tile_size);
	if (!MirBuild(schedule, l->forest->num_trees, l->forest->num_groups, mir, &status))
		FuzzCheckStatus(&status, "building the MIR");
	else if (schedule->tile_size == 1 || (tiled = Tile(l, schedule, mir)) != NULL)
	{
		hir = BuildHir(l->forest, schedule, mir);
		if (hir != NULL)
		{
			hir->tiled = tiled;
			BuildBuffers(mir, hir, repr, gather);
			if (tiled != NULL)
				free(TiledForestDump(tiled, true));
		}
	}
	HirFree(hir);
	TiledForestFree(tiled);
	free(mir);
}


/* Lower a loaded forest under the default schedule and a few others */
void
FuzzLowerForest(const Forest *loaded)
{
	int64_t		num_rows;
	void	   *rows;
	FuzzLowering l;
	Schedule	schedule;
	SilvanStatus status;
	Forest	   *normalized;
	const Forest *forest = loaded;

	if (!HirNormalizeCompares(loaded, &normalized, &status))
	{
		FuzzCheckStatus(&status, "normalizing the comparisons");
		return;
	}
	if (normalized != NULL)
		forest = normalized;
	rows = FuzzMakeRows(forest, &num_rows);
	if (rows == NULL)
	{
		HirFreeNormalized(normalized);
		return;
	}
	FuzzLoweringInit(&l, forest, rows, num_rows);
	ScheduleDefault(forest, 1024, NULL, &schedule);
	FuzzLower(&l, &schedule, false);
	for (size_t i = 0; i < sizeof(lower_schedules) / sizeof(lower_schedules[0]); i++)
	{
		if (!ScheduleParse(lower_schedules[i], &schedule, &status))
			FuzzFail("schedule %zu: %s: %s", i, status.message, status.detail);
		FuzzLower(&l, &schedule, i % 2 == 1);
	}
	FuzzLoweringFree(&l);
	free(rows);
	HirFreeNormalized(normalized);
}
