/*
 * test_schedule.c
 *		Unit tests of the schedule language: every schedule written in the
 *		seeds parses, dumps the expected loop nest and round-trips through
 *		ScheduleToText; every error names its line, directive and reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/repr.h"
#include "silvan/schedule.h"
#include "unit.h"

/* Are two schedules equal, apart from the lines their variables were made on? */
static bool
SameSchedule(const Schedule *a, const Schedule *b)
{
	static Schedule x;
	static Schedule y;

	memcpy(&x, a, sizeof(Schedule));
	memcpy(&y, b, sizeof(Schedule));
	for (int i = 0; i < SCHEDULE_MAX_VARS; i++)
		x.vars[i].line = y.vars[i].line = 0;
	return memcmp(&x, &y, sizeof(Schedule)) == 0;
}

/* ScheduleToText reparses to the same schedule, and is a fixed point */
static void
CheckRoundTrip(const char *what, const Schedule *s)
{
	static Schedule again;
	static Schedule third;
	SilvanStatus status;
	char	   *text = ScheduleToText(s);
	char	   *text2;

	CHECK_MSG(text != NULL, "%s: no text", what);
	if (text == NULL)
		return;
	CHECK_MSG(ScheduleParse(text, &again, &status), "%s: canonical text fails: %s",
			  what, status.detail);
	CHECK_MSG(SameSchedule(s, &again), "%s: round trip differs:\n%s", what, text);
	text2 = ScheduleToText(&again);
	CHECK_MSG(text2 != NULL && strcmp(text, text2) == 0, "%s: not a fixed point", what);
	CHECK(ScheduleParse(text2, &third, &status));
	CHECK_MSG(memcmp(&again, &third, sizeof(Schedule)) == 0, "%s: canonical parse differs", what);
	free(text);
	free(text2);
}

/* Parse text, compare the dumped nest, and round-trip it */
static void
CheckNest(const char *text, const char *nest, Schedule *out)
{
	static Schedule s;
	SilvanStatus status;
	char	   *dump;

	if (out == NULL)
		out = &s;
	if (!ScheduleParse(text, out, &status))
	{
		CHECK_MSG(false, "%s: %s: %s", text, status.message, status.detail);
		return;
	}
	CHECK(status.kind == SILVAN_OK);
	dump = ScheduleDumpNest(out);
	CHECK_MSG(dump != NULL && strcmp(dump, nest) == 0,
			  "%s:\n--- got\n%s--- expected\n%s", text, dump ? dump : "(null)", nest);
	free(dump);
	CheckRoundTrip(text, out);
}

/* Parsing fails with this kind, message and detail, leaving the default */
static void
ExpectError(const char *text, SilvanErrorKind kind, const char *message,
			const char *detail)
{
	static Schedule s;
	static Schedule def;
	SilvanStatus status;
	bool		ok = ScheduleParse(text, &s, &status);

	CHECK_MSG(!ok, "parsed: %s", text);
	CHECK_MSG(status.kind == kind, "%s: kind %d", text, status.kind);
	CHECK_MSG(strcmp(status.message, message) == 0, "%s: message \"%s\"", text,
			  status.message);
	CHECK_MSG(strcmp(status.detail, detail) == 0, "%s:\n  got      %s\n  expected %s",
			  text, status.detail, detail);
	ScheduleInitDefault(&def);
	CHECK_MSG(memcmp(&s, &def, sizeof(Schedule)) == 0, "%s: not reset", text);
}

/* The variable named name, which must exist */
static const IndexVar *
Var(const Schedule *s, const char *name)
{
	int			v = ScheduleFindVar(s, name);

	CHECK_MSG(v >= 0, "no variable %s", name);
	return &s->vars[v >= 0 ? v : 0];
}

/* The default schedule, and empty text */
static void
TestDefault(void)
{
	static Schedule s;
	static Schedule def;
	SilvanStatus status;
	char	   *text;

	ScheduleInitDefault(&def);
	CHECK(def.num_vars == 2 && def.num_loops == 2 && def.root_loop == 0);
	CHECK(ScheduleFindVar(&def, "batch") == 0 && ScheduleFindVar(&def, "tree") == 1);
	CHECK(ScheduleFindVar(&def, "rows") == -1 && ScheduleFindVar(&def, NULL) == -1);
	CHECK(def.vars[0].kind == INDEX_BATCH && def.vars[1].kind == INDEX_TREE);
	CHECK(def.vars[0].origin == INDEX_ORIGIN_ROOT && def.vars[0].parent == -1);
	CHECK(def.vars[0].copy_of == -1 && def.vars[1].children[0] == -1);
	CHECK(strcmp(def.representation, "array") == 0 && def.tile_size == 1);
	CHECK(def.tiling == TREE_TILING_UNIFORM && !def.reorder_trees);
	text = ScheduleToText(&def);
	CHECK(text != NULL && strcmp(text, "") == 0);
	free(text);
	CheckNest("", "for batch in rows\n  for tree in trees\n", &s);
	CHECK(memcmp(&s, &def, sizeof(Schedule)) == 0);
	CHECK(ScheduleParse(" ;; \n# only a comment; tile(x)\n\t-- another\r\n;", &s, &status));
	CHECK(memcmp(&s, &def, sizeof(Schedule)) == 0);
	CHECK(ScheduleParse(NULL, &s, &status));
	CHECK(memcmp(&s, &def, sizeof(Schedule)) == 0);
}

/* XGBoost's strategy and the section-5 nests of the earlier draft */
static void
TestSeedCpuSchedules(void)
{
	static Schedule s;
	char	   *text;

	CheckNest("tile(batch, b0, b1, 64)\nreorder(b0, tree, b1)\nparallel(b0)",
			  "for b0 in batch step 64 [parallel]\n"
			  "  for tree in trees\n"
			  "    for b1 in b0 tile (64)\n", &s);
	CHECK(Var(&s, "b0")->origin == INDEX_ORIGIN_TILE_OUTER && Var(&s, "b0")->param == 64);
	CHECK(Var(&s, "b1")->origin == INDEX_ORIGIN_TILE_INNER && Var(&s, "b1")->parent == 0);
	CHECK(Var(&s, "b0")->line == 1 && Var(&s, "b0")->kind == INDEX_BATCH);
	CHECK(s.vars[0].children[0] == ScheduleFindVar(&s, "b0"));
	CHECK(s.vars[0].children[1] == ScheduleFindVar(&s, "b1"));
	CHECK(s.num_loops == 3 && s.num_directives == 3);
	text = ScheduleToText(&s);
	CHECK(text != NULL && strcmp(text, "tile(batch, b0, b1, 64)\nreorder(b0, tree, b1)\nparallel(b0)") == 0);
	free(text);

	CheckNest("reorder(tree, batch)", "for tree in trees\n  for batch in rows\n", NULL);
	CheckNest("tile(tree, t0, t1, 2)\nreorder(t0, batch, t1)",
			  "for t0 in tree step 2\n"
			  "  for batch in rows\n"
			  "    for t1 in t0 tile (2)\n", NULL);
	CheckNest("tile(batch, b0, b1, 4)\ntile(tree, t0, t1, 2)\nreorder(b0, t0, b1, t1)",
			  "for b0 in batch step 4\n"
			  "  for t0 in tree step 2\n"
			  "    for b1 in b0 tile (4)\n"
			  "      for t1 in t0 tile (2)\n", NULL);
	/* schedule.c's default, in the new language */
	CheckNest("tile(batch, b0, b1, 128); reorder(b0, tree, b1); interleave(b1); "
			  "unrollWalk(b1, 8); representation(array)",
			  "for b0 in batch step 128\n"
			  "  for tree in trees\n"
			  "    for b1 in b0 tile (128) [interleave, unrollWalk 8]\n", &s);
	CHECK(Var(&s, "b1")->interleave && Var(&s, "b1")->walk == WalkKindOf(&WalkLockstep) &&
		  Var(&s, "b1")->walk_args[0] == 8);
}

/* The four Tahoe strategies */
static void
TestSeedTahoe(void)
{
	static Schedule s;

	CheckNest("tile(batch, b0, b1, 32)\nreorder(b0, b1, tree)\n"
			  "gpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)",
			  "for b0 in batch step 32 [grid.x]\n"
			  "  for b1 in b0 tile (32) [block.x]\n"
			  "    for tree in trees\n", &s);
	CHECK(Var(&s, "b0")->gpu_dim == GPU_DIM_GRID_X && Var(&s, "b1")->gpu_dim == GPU_DIM_BLOCK_X);
	CheckNest("reorder(batch, tree)\ngpuDimension(batch, grid.x)\n"
			  "gpuDimension(tree, block.x)\ncache(batch)",
			  "for batch in rows [cache, grid.x]\n"
			  "  for tree in trees [block.x]\n", &s);
	CHECK(s.vars[0].cache && !s.vars[1].cache);
	CheckNest("tile(batch, b0, b1, 32)\ntile(tree, t0, t1, 1000)\nreorder(b0, b1, t0, t1)\n"
			  "cache(t0)\ngpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)",
			  "for b0 in batch step 32 [grid.x]\n"
			  "  for b1 in b0 tile (32) [block.x]\n"
			  "    for t0 in tree step 1000 [cache]\n"
			  "      for t1 in t0 tile (1000)\n", NULL);
	/* shared partial forest, blank lines as in the draft */
	CheckNest("tile(batch, b0, b1, 32)\n\ntile(tree, t0, t0Inner, 64)\n"
			  "tile(t0Inner, t1, t2, 8)\ncache(t1)\nreorder(b0, t0, b1, t1, t2)\n\n"
			  "gpuDimension(b0, grid.x)\ngpuDimension(t0, grid.y)\ngpuDimension(b1, block.x)",
			  "for b0 in batch step 32 [grid.x]\n"
			  "  for t0 in tree step 64 [grid.y]\n"
			  "    for b1 in b0 tile (32) [block.x]\n"
			  "      for t1 in t0Inner step 8 [cache]\n"
			  "        for t2 in t1 tile (8)\n", &s);
	CHECK(Var(&s, "t0")->line == 3 && Var(&s, "t1")->line == 4 && Var(&s, "b0")->line == 1);
	CHECK(Var(&s, "t1")->parent == ScheduleFindVar(&s, "t0Inner"));
}

/* Figure 1: split with copies of the body, and the GPU schedule */
static void
TestSeedFigure1(void)
{
	static Schedule s;
	const IndexVar *copy;

	CheckNest("reorder(tree, batch)\n"
			  "# Split tree loop so trees with equal depth are processed together\n"
			  "split(tree, t_depth1, t_depth2, 2)\n"
			  "-- Unroll the tree walks\n"
			  "unrollWalk(batch_t_depth1, 1)\n"
			  "unrollWalk(batch_t_depth2, 2)",
			  "for t_depth1 in tree until 2\n"
			  "  for batch_t_depth1 in rows (copy of batch) [unrollWalk 1]\n"
			  "for t_depth2 in tree from 2\n"
			  "  for batch_t_depth2 in rows (copy of batch) [unrollWalk 2]\n", &s);
	copy = Var(&s, "batch_t_depth1");
	CHECK(copy->copy_of == 0 && copy->kind == INDEX_BATCH && copy->origin == INDEX_ORIGIN_ROOT);
	CHECK(copy->line == 3 && copy->parent == -1 && copy->walk_args[0] == 1);
	CHECK(Var(&s, "t_depth2")->origin == INDEX_ORIGIN_SPLIT_SECOND && Var(&s, "t_depth2")->param == 2);
	CHECK(s.num_loops == 4 && s.vars[1].children[0] == ScheduleFindVar(&s, "t_depth1"));
	/* the figure's own text unrolls a loop that is not innermost */
	ExpectError("reorder(tree, batch)\nsplit(tree, t_depth1, t_depth2, 2)\n"
				"unrollWalk(t_depth1, 1)\nunrollWalk(t_depth2, 2)",
				SILVAN_ERROR_INVALID, "loop is not innermost",
				"Line 3, unrollWalk(t_depth1, 1): unrollWalk must name an innermost loop, "
				"but t_depth1 contains batch_t_depth1.");
	ExpectError("reorder(tree, batch); split(tree, t_depth1, t_depth2, 2)\nparallel(batch)",
				SILVAN_ERROR_INVALID, "index variable is not a live loop",
				"Line 2, parallel(batch): batch is no longer a loop; split on line 1 "
				"duplicated it as batch_t_depth1 and batch_t_depth2.");
	/* Figure 1c, the GPU schedule */
	CheckNest("tile(tree, t0, t1, 2)\nreorder(batch, t1, t0)\nsplit(t0, t0_depth1, t0_depth2, 2)\n"
			  "unrollWalk(t0_depth1, 1)\nunrollWalk(t0_depth2, 2)\n"
			  "gpuDimension(batch, grid.x)\ngpuDimension(t1, block.x)",
			  "for batch in rows [grid.x]\n"
			  "  for t1 in t0 tile (2) [block.x]\n"
			  "    for t0_depth1 in t0 until 2 [unrollWalk 1]\n"
			  "    for t0_depth2 in t0 from 2 [unrollWalk 2]\n", NULL);
}

/* Splits of bodies several loops deep, and splits of copies */
static void
TestSplitCopies(void)
{
	static Schedule s;
	const IndexVar *v;

	CheckNest("tile(batch, b0, b1, 16); reorder(tree, b0, b1); split(tree, ta, tb, 10)\n"
			  "interleave(b1_ta); split(b0_tb, x, y, 3); parallel(x)",
			  "for ta in tree until 10\n"
			  "  for b0_ta in batch step 16 (copy of b0)\n"
			  "    for b1_ta in b0_ta tile (16) (copy of b1) [interleave]\n"
			  "for tb in tree from 10\n"
			  "  for x in b0_tb until 3 [parallel]\n"
			  "    for b1_tb_x in x tile (16) (copy of b1_tb)\n"
			  "  for y in b0_tb from 3\n"
			  "    for b1_tb_y in y tile (16) (copy of b1_tb)\n", &s);
	CHECK(s.num_vars == 2 + 2 + 2 + 4 + 2 + 2);
	v = Var(&s, "b1_tb_x");
	CHECK(v->origin == INDEX_ORIGIN_TILE_INNER && v->parent == 0 && v->param == 16);
	CHECK(v->copy_of == ScheduleFindVar(&s, "b1_tb") && v->line == 2);
	ExpectError("tile(batch, b0, b1, 16); reorder(tree, b0, b1); split(tree, ta, tb, 10)\n"
				"parallel(b0_tb); split(b0_tb, x, y, 3)",
				SILVAN_ERROR_INVALID, "loop already has optimization directives",
				"Line 2, split(b0_tb, x, y, 3): Loop b0_tb already carries parallel; "
				"tile and split loops before optimizing them.");
	/* copies keep their flags; each half is its own kernel */
	CheckNest("reorder(tree, batch); gpuDimension(batch, block.x); split(tree, a, b, 2)\n"
			  "gpuDimension(a, grid.x); gpuDimension(b, grid.x)",
			  "for a in tree until 2 [grid.x]\n"
			  "  for batch_a in rows (copy of batch) [block.x]\n"
			  "for b in tree from 2 [grid.x]\n"
			  "  for batch_b in rows (copy of batch) [block.x]\n", NULL);
	ExpectError("reorder(tree, batch); gpuDimension(batch, block.x); split(tree, a, b, 2)\n"
				"gpuDimension(a, block.x)",
				SILVAN_ERROR_INVALID, "gpu dimension already used",
				"Line 2, gpuDimension(a, block.x): Loop batch_a, on the same path of the "
				"nest, is already mapped to block.x.");
	/* split of the outermost loop: sibling loops at the top */
	CheckNest("split(batch, lo, hi, 100); reorder(tree_lo, lo)",
			  "for tree_lo in trees (copy of tree)\n"
			  "  for lo in batch until 100\n"
			  "for hi in batch from 100\n"
			  "  for tree_hi in trees (copy of tree)\n", NULL);
	/* split of an innermost loop copies nothing */
	CheckNest("split(tree, a, b, 5)", "for batch in rows\n  for a in tree until 5\n"
			  "  for b in tree from 5\n", &s);
	CHECK(s.num_vars == 4);
}

/* Reductions, flags and the model layout */
static void
TestFlagsAndLayout(void)
{
	static Schedule s;

	CheckNest("tile(tree, t0, t1, 8); atomicReduce(t0); vectorReduce(t1, 8); sharedReduce(batch)\n"
			  "specialize(t0); peelWalk(t1, 2); unrollWalk(t1, 3); unrollWalk(t1, 4)",
			  "for batch in rows [sharedReduce]\n"
			  "  for t0 in tree step 8 [specialize, atomicReduce]\n"
			  "    for t1 in t0 tile (8) [unrollWalk 4, peelWalk 2, vectorReduce 8]\n", &s);
	CHECK(Var(&s, "t1")->reduce == REDUCE_VECTOR && Var(&s, "t1")->vector_width == 8);
	CHECK(s.vars[0].reduce == REDUCE_SHARED && Var(&s, "t0")->specialize);
	CheckNest("vectorReduce(tree, 4); atomicReduce(tree)",
			  "for batch in rows\n  for tree in trees [atomicReduce]\n", &s);
	CHECK(s.vars[1].vector_width == 0);
	CheckNest("representation(sparse); tileTrees(4, probabilistic); reorderTrees()",
			  "for batch in rows\n  for tree in trees\n", &s);
	CHECK(strcmp(s.representation, "sparse") == 0 && s.tile_size == 4);
	CHECK(s.tiling == TREE_TILING_PROBABILISTIC && s.reorder_trees);
	CHECK(!s.full_codegen);
	CheckNest("codeWalk(tree, 30, branchy); fullCodegen()",
			  "for batch in rows\n  for tree in trees [codeWalk 30 branchy]\n", &s);
	CHECK(s.full_codegen);
	{
		char	   *text = ScheduleToText(&s);

		CHECK_MSG(text && strstr(text, "fullCodegen()") != NULL, "%s", text ? text : "");
		free(text);
	}
	CheckNest("representation(reorg); tileTrees(8, uniform); parallel(batch); cache(tree)",
			  "for batch in rows [parallel]\n  for tree in trees [cache]\n", &s);
	CHECK(strcmp(s.representation, "reorg") == 0 && s.tile_size == 8);
	CHECK(s.tiling == TREE_TILING_UNIFORM);
	CheckNest("gpuDimension(batch, grid.z); gpuDimension(tree, block.y); "
			  "gpuDimension(tree, grid.y); gpuDimension(batch, block.z)",
			  "for batch in rows [block.z]\n  for tree in trees [grid.y]\n", NULL);
}

/* Walk strategies: codeWalk, earlyExitWalk and vectorWalk parse, print and conflict */
static void
TestWalkStrategies(void)
{
	static Schedule s;
	char	   *text;

	CheckNest("tile(batch, b0, b1, 64); reorder(b0, b1, tree); specialize(tree); "
			  "codeWalk(tree, 16, select)",
			  "for b0 in batch step 64\n  for b1 in b0 tile (64)\n"
			  "    for tree in trees [specialize, codeWalk 16 select]\n", &s);
	CHECK(s.vars[1].walk == WalkKindOf(&WalkCode) && s.vars[1].walk_args[0] == 16 &&
		  s.vars[1].walk_args[1] == CODE_WALK_SELECT);
	text = ScheduleToText(&s);
	CHECK(text != NULL && strstr(text, "codeWalk(tree, 16, select)") != NULL);
	free(text);
	CheckNest("tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1); specialize(tree); "
			  "codeWalk(b1, 30, bitvector)",
			  "for b0 in batch step 8\n  for tree in trees [specialize]\n"
			  "    for b1 in b0 tile (8) [interleave, codeWalk 30 bitvector]\n", &s);
	CHECK(s.vars[ScheduleFindVar(&s, "b1")].walk == WalkKindOf(&WalkCode) &&
		  s.vars[ScheduleFindVar(&s, "b1")].walk_args[0] == 30 &&
		  s.vars[ScheduleFindVar(&s, "b1")].walk_args[1] == CODE_WALK_BITVECTOR);
	text = ScheduleToText(&s);
	CHECK(text != NULL && strstr(text, "codeWalk(b1, 30, bitvector)") != NULL);
	free(text);
	CheckNest("reorder(tree, batch); earlyExitWalk(batch)",
			  "for tree in trees\n  for batch in rows [earlyExitWalk]\n", &s);
	CHECK(s.vars[0].walk == WalkKindOf(&WalkEarlyExit));
	CheckNest("tile(batch, b0, b1, 128); reorder(b0, tree, b1); interleave(b1); vectorWalk(b1)",
			  "for b0 in batch step 128\n  for tree in trees\n"
			  "    for b1 in b0 tile (128) [interleave, vectorWalk]\n", &s);
	CHECK(s.vars[ScheduleFindVar(&s, "b1")].walk == WalkKindOf(&WalkVector));
	text = ScheduleToText(&s);
	CHECK(text != NULL && strstr(text, "interleave(b1)\nvectorWalk(b1)") != NULL);
	free(text);
	ExpectError("vectorWalk(tree); earlyExitWalk(tree)", SILVAN_ERROR_INVALID,
				"conflicting walk directives", "Line 1, earlyExitWalk(tree): Loop tree already "
				"carries vectorWalk; a loop's walk takes one strategy.");
	ExpectError("unrollWalk(tree, 8); vectorWalk(tree)", SILVAN_ERROR_INVALID,
				"conflicting walk directives", "Line 1, vectorWalk(tree): Loop tree already "
				"carries unrollWalk; a loop's walk takes one strategy.");
	ExpectError("vectorWalk(tree); vectorWalk(tree)", SILVAN_ERROR_INVALID,
				"conflicting walk directives", "Line 1, vectorWalk(tree): Loop tree already "
				"carries vectorWalk; a loop's walk takes one strategy.");
	ExpectError("vectorWalk(batch)", SILVAN_ERROR_INVALID, "loop is not innermost",
				"Line 1, vectorWalk(batch): vectorWalk must name an innermost loop, "
				"but batch contains tree.");
	ExpectError("codeWalk(tree, 0, branchy)", SILVAN_ERROR_INVALID, "invalid code walk size",
				"Line 1, codeWalk(tree, 0, branchy): 0 splits per tree is not between 1 and 4096.");
	ExpectError("codeWalk(tree, 8, fast)", SILVAN_ERROR_INVALID, "invalid directive argument",
				"Line 1, codeWalk(tree, 8, fast): fast is not a valid choice; expected "
				"codeWalk(indexVar, nodes, branchy|select|bitvector).");
	ExpectError("codeWalk(batch, 8, branchy)", SILVAN_ERROR_INVALID, "loop is not innermost",
				"Line 1, codeWalk(batch, 8, branchy): codeWalk must name an innermost loop, "
				"but batch contains tree.");
	ExpectError("unrollWalk(tree, 4); earlyExitWalk(tree)", SILVAN_ERROR_INVALID,
				"conflicting walk directives", "Line 1, earlyExitWalk(tree): Loop tree already "
				"carries unrollWalk; a loop's walk takes one strategy.");
	ExpectError("codeWalk(tree, 4, branchy)\npeelWalk(tree, 2)", SILVAN_ERROR_INVALID,
				"conflicting walk directives", "Line 2, peelWalk(tree, 2): Loop tree already "
				"carries codeWalk; a loop's walk takes one strategy.");
	ExpectError("earlyExitWalk(tree); codeWalk(tree, 4, branchy)", SILVAN_ERROR_INVALID,
				"conflicting walk directives", "Line 1, codeWalk(tree, 4, branchy): Loop tree "
				"already carries earlyExitWalk; a loop's walk takes one strategy.");
	ExpectError("codeWalk(tree, 4, branchy); tile(tree, a, b, 2)", SILVAN_ERROR_INVALID,
				"loop already has optimization directives",
				"Line 1, tile(tree, a, b, 2): Loop tree already carries codeWalk; tile and split "
				"loops before optimizing them.");
}

/* Canonical text: spacing, comments, zeros and separators are normalized */
static void
TestCanonicalText(void)
{
	static Schedule a;
	static Schedule b;
	SilvanStatus status;
	char	   *text;
	char	   *big;
	size_t		len = 0;

	CHECK(ScheduleParse("  tile( batch ,b0,b1 , 064 ) ;reorder(b0,tree,b1)# c\n\n"
						" parallel ( b0 ) -- x\r\n", &a, &status));
	CHECK(ScheduleParse("tile(batch, b0, b1, 64)\nreorder(b0, tree, b1)\nparallel(b0)",
						&b, &status));
	CHECK(SameSchedule(&a, &b));
	text = ScheduleToText(&a);
	CHECK(text != NULL && strcmp(text, "tile(batch, b0, b1, 64)\nreorder(b0, tree, b1)\nparallel(b0)") == 0);
	free(text);

	/* dense text near the limit falls back to the form without spaces */
	big = malloc(SCHEDULE_MAX_TEXT + 1);
	CHECK(big != NULL);
	if (big == NULL)
		return;
	len += sprintf(big + len, "tile(batch,n00_xxxx,n01_xxxx,2)\n");
	for (int k = 1; k < 15; k++)
		len += sprintf(big + len, "tile(n%02d_xxxx,n%02d_xxxx,n%02d_xxxx,2)\n",
					   2 * k - 1, 2 * k, 2 * k + 1);
	for (int r = 0; r < 45; r++)
	{
		len += sprintf(big + len, "reorder(");
		for (int k = 0; k < 30; k += 2)
			len += sprintf(big + len, "n%02d_xxxx,", k);
		len += sprintf(big + len, "n29_xxxx,tree)\n");
	}
	CHECK(len <= SCHEDULE_MAX_TEXT);
	CHECK_MSG(ScheduleParse(big, &a, &status), "%s", status.detail);
	CHECK(a.num_vars == SCHEDULE_MAX_VARS && a.num_directives == 60);
	text = ScheduleToText(&a);
	CHECK(text != NULL && strlen(text) <= SCHEDULE_MAX_TEXT && strstr(text, ", ") == NULL);
	free(text);
	CheckRoundTrip("dense", &a);
	free(big);
}

/* Malformed text: SILVAN_ERROR_SYNTAX */
static void
TestSyntaxErrors(void)
{
	const SilvanErrorKind k = SILVAN_ERROR_SYNTAX;
	const char *m = "syntax error in schedule";

	ExpectError("tile(batch, b0, b1, 4", k, m,
				"Line 1, tile(batch, b0, b1, 4: Expected \",\" or \")\", found the end of the directive.");
	ExpectError("tile batch", k, m,
				"Line 1, tile batch: Expected \"(\" after the directive name, found \"b\".");
	ExpectError("tile(batch, b0, b1, 4) x", k, m,
				"Line 1, tile(batch, b0, b1, 4) x: Expected the end of the directive after \")\", found \"x\".");
	ExpectError("tile(batch,, b1, 4)", k, m,
				"Line 1, tile(batch,, b1, 4): Expected a name or a number, found \",\".");
	ExpectError("tile(batch, b0, b1, 4x)", k, m,
				"Line 1, tile(batch, b0, b1, 4x): Expected a digit, \",\" or \")\", found \"x\".");
	ExpectError("tile(batch, b0, b1, -)", k, m,
				"Line 1, tile(batch, b0, b1, -): Expected a digit, found \")\".");
	ExpectError("tile(batch, b0, b1, --4)", k, m,
				"Line 1, tile(batch, b0, b1,: Expected a name or a number, found the end of the directive.");
	ExpectError("parallel(@)", k, m, "Line 1, parallel(@): Expected a name or a number, found \"@\".");
	ExpectError("parallel(batch\x01)", k, m,
				"Line 1, parallel(batch\x01): Expected \",\" or \")\", found byte 0x01.");
	ExpectError("(batch)", k, m, "Line 1, (batch): Expected a directive name, found \"(\".");
	ExpectError("tile(batch, b0, b1)", k, m,
				"Line 1, tile(batch, b0, b1): Wrong number of arguments; "
				"expected tile(indexVar, outer, inner, tileSize).");
	ExpectError("reorder(batch)", k, m,
				"Line 1, reorder(batch): Wrong number of arguments; expected reorder(indexVar, indexVar, ...).");
	ExpectError("reorderTrees(1)", k, m,
				"Line 1, reorderTrees(1): Wrong number of arguments; expected reorderTrees().");
	ExpectError("parallel()", k, m,
				"Line 1, parallel(): Wrong number of arguments; expected parallel(indexVar).");
	ExpectError("tile(batch, b0, b1, x)", k, m,
				"Line 1, tile(batch, b0, b1, x): Argument 4 must be a number; "
				"expected tile(indexVar, outer, inner, tileSize).");
	ExpectError("tile(4, b0, b1, 4)", k, m,
				"Line 1, tile(4, b0, b1, 4): Argument 1 must be an index variable name; "
				"expected tile(indexVar, outer, inner, tileSize).");
	ExpectError("gpuDimension(grid.x, batch)", k, m,
				"Line 1, gpuDimension(grid.x, batch): Argument 1 must be an index variable name; "
				"expected gpuDimension(indexVar, grid.x|grid.y|grid.z|block.x|block.y|block.z).");
	ExpectError("representation(1)", k, m,
				"Line 1, representation(1): Argument 1 must be a keyword; "
				"expected representation(array|sparse|reorg|perfect).");
	ExpectError("Tile(batch, b0, b1, 4)", k, "unknown schedule directive",
				"Line 1, Tile(batch, b0, b1, 4): Unknown directive Tile; directive names are "
				"case-sensitive: did you mean tile?");
	ExpectError("reorder(tree, batch)\n# comment\n\nparallel(tree) ; unroll(batch)", k,
				"unknown schedule directive", "Line 4, unroll(batch): Unknown directive unroll.");
}

/* Well-formed text the schedule cannot take: SILVAN_ERROR_INVALID */
static void
TestInvalid(void)
{
	const SilvanErrorKind k = SILVAN_ERROR_INVALID;

	ExpectError("tile(batch, b0, b1, 0)", k, "tile size must be positive",
				"Line 1, tile(batch, b0, b1, 0): Tile size 0 is not positive.");
	ExpectError("reorder(tree, batch)\ntile(tree, t0, t1, -2)", k, "tile size must be positive",
				"Line 2, tile(tree, t0, t1, -2): Tile size -2 is not positive.");
	ExpectError("split(tree, a, b, 0)", k, "split iteration must be positive",
				"Line 1, split(tree, a, b, 0): Split iteration 0 is not positive.");
	ExpectError("tile(batch, b0, b1, 4)\nparallel(batch)", k, "index variable is not a live loop",
				"Line 2, parallel(batch): batch is no longer a loop; tile on line 1 "
				"replaced it by b0 and b1.");
	ExpectError("split(batch, x, y, 4); tile(batch, b0, b1, 2)", k,
				"index variable is not a live loop",
				"Line 1, tile(batch, b0, b1, 2): batch is no longer a loop; split on line 1 "
				"replaced it by x and y.");
	ExpectError("tile(batch, b0, b1, 4)\nreorder(b0, b1, batch)", k,
				"index variable is not a live loop",
				"Line 2, reorder(b0, b1, batch): batch is no longer a loop; tile on line 1 "
				"replaced it by b0 and b1.");
	ExpectError("parallel(b7)", k, "unknown index variable",
				"Line 1, parallel(b7): There is no index variable b7.");
	ExpectError("reorder(tree, b7)", k, "unknown index variable",
				"Line 1, reorder(tree, b7): There is no index variable b7.");
	ExpectError("tile(batch, tree, b1, 4)", k, "index variable already defined",
				"Line 1, tile(batch, tree, b1, 4): tree is already defined.");
	ExpectError("tile(batch, b0, b0, 4)", k, "index variable already defined",
				"Line 1, tile(batch, b0, b0, 4): b0 is named twice.");
	ExpectError("tile(batch, b0, b1, 4)\n\ntile(tree, b0, t1, 2)", k,
				"index variable already defined",
				"Line 3, tile(tree, b0, t1, 2): b0 is already defined.");
	ExpectError("split(tree, ta, tb, 2)\nreorder(batch, ta)", k, "loops are not perfectly nested",
				"Line 2, reorder(batch, ta): Loops batch and ta are not perfectly nested.");
	ExpectError("tile(batch, b0, b1, 4)\nsplit(tree, ta, tb, 2)\nreorder(b0, ta, b1)", k,
				"loops are not perfectly nested",
				"Line 3, reorder(b0, ta, b1): Loops b1 and ta are not perfectly nested.");
	ExpectError("tile(batch, b0, b1, 4)\nreorder(b0, tree)", k, "loops are not perfectly nested",
				"Line 2, reorder(b0, tree): Loops b0 and tree are not perfectly nested.");
	ExpectError("tile(batch, b0, b1, 4)\nsplit(b1, x, y, 2)\nreorder(b0, tree_x)", k,
				"loops are not perfectly nested",
				"Line 3, reorder(b0, tree_x): Loops b0 and tree_x are not perfectly nested.");
	ExpectError("reorder(batch, batch)", k, "reorder names a loop twice",
				"Line 1, reorder(batch, batch): Loop batch appears twice.");
	ExpectError("tile(batch, b0, b1, 4)\ninterleave(b1)", k, "loop is not innermost",
				"Line 2, interleave(b1): interleave must name an innermost loop, but b1 contains tree.");
	ExpectError("interleave(tree)", k, "interleave needs a tile inner loop",
				"Line 1, interleave(tree): Loop tree has no constant trip count; "
				"interleave the inner loop of a tile.");
	ExpectError("unrollWalk(batch, 2)", k, "loop is not innermost",
				"Line 1, unrollWalk(batch, 2): unrollWalk must name an innermost loop, but batch contains tree.");
	ExpectError("peelWalk(batch, 1)", k, "loop is not innermost",
				"Line 1, peelWalk(batch, 1): peelWalk must name an innermost loop, but batch contains tree.");
	ExpectError("unrollWalk(tree, 0)", k, "walk hops must be positive",
				"Line 1, unrollWalk(tree, 0): 0 hops is not positive.");
	ExpectError("peelWalk(tree, -1)", k, "walk hops must be positive",
				"Line 1, peelWalk(tree, -1): -1 hops is not positive.");
	ExpectError("reorder(tree, batch)\nunrollWalk(batch, 4)\nreorder(batch, tree)", k,
				"loop is not innermost",
				"Line 3, reorder(batch, tree): Loop batch carries unrollWalk, which needs an "
				"innermost loop, and would contain tree.");
	ExpectError("parallel(batch)\ntile(batch, b0, b1, 4)", k,
				"loop already has optimization directives",
				"Line 2, tile(batch, b0, b1, 4): Loop batch already carries parallel; "
				"tile and split loops before optimizing them.");
	ExpectError("cache(tree); split(tree, a, b, 2)", k, "loop already has optimization directives",
				"Line 1, split(tree, a, b, 2): Loop tree already carries cache; "
				"tile and split loops before optimizing them.");
	ExpectError("gpuDimension(batch, grid.x); gpuDimension(tree, grid.x)", k,
				"gpu dimension already used",
				"Line 1, gpuDimension(tree, grid.x): Loop batch, on the same path of the nest, "
				"is already mapped to grid.x.");
	ExpectError("gpuDimension(batch, grid.w)", k, "invalid directive argument",
				"Line 1, gpuDimension(batch, grid.w): grid.w is not a valid choice; expected "
				"gpuDimension(indexVar, grid.x|grid.y|grid.z|block.x|block.y|block.z).");
	ExpectError("representation(dense)", k, "invalid directive argument",
				"Line 1, representation(dense): dense is not a valid choice; expected "
				"representation(array|sparse|reorg|perfect).");
	ExpectError("tileTrees(4, greedy)", k, "invalid directive argument",
				"Line 1, tileTrees(4, greedy): greedy is not a valid choice; expected "
				"tileTrees(size, uniform|probabilistic).");
	ExpectError("tileTrees(9, uniform)", k, "invalid tree tile size",
				"Line 1, tileTrees(9, uniform): Tile size 9 is not between 1 and 8.");
	ExpectError("tileTrees(0, uniform)", k, "invalid tree tile size",
				"Line 1, tileTrees(0, uniform): Tile size 0 is not between 1 and 8.");
	ExpectError("vectorReduce(batch, 3)", k, "invalid vector width",
				"Line 1, vectorReduce(batch, 3): Width 3 is not 2, 4, 8 or 16.");
	ExpectError("tile(batch, b0, b1, 99999999999)", k, "number out of range",
				"Line 1, tile(batch, b0, b1, 99999999999): A number exceeds 2147483647.");
	ExpectError("tile(batch, a_name_that_is_far_too_long_for_it, b1, 4)", k,
				"index variable name too long",
				"Line 1, tile(batch, a_name_that_is_far_too_long_for_it, b1, 4): Name "
				"a_name_that_is_far_t... is longer than 31 characters.");
	ExpectError("reorder(tree, batch); split(tree, t_quite_long_name_here_123, b, 2)", k,
				"index variable name too long",
				"Line 1, split(tree, t_quite_long_name_here_123, b, 2): The copy of batch under "
				"t_quite_long_name_here_123 would be named batch_t_quite_long_name_here_123, "
				"longer than 31 characters.");
	ExpectError("tile(tree, batch_a, t1, 2)\nreorder(batch_a, batch)\nsplit(batch_a, a, b, 1)", k,
				"index variable already defined",
				"Line 3, split(batch_a, a, b, 1): The copy of batch under a would be named "
				"batch_a, which is already defined.");
}

/* Limits: variables, directives, text length */
static void
TestLimits(void)
{
	static Schedule s;
	SilvanStatus status;
	char	   *text = malloc(SCHEDULE_MAX_TEXT + 2);
	size_t		len = 0;

	CHECK(text != NULL);
	if (text == NULL)
		return;
	/* 15 tiles make 32 variables; the 16th is one too many */
	len += sprintf(text + len, "tile(batch, a0, a1, 2)\n");
	for (int k = 1; k < 16; k++)
		len += sprintf(text + len, "tile(a%d, a%d, a%d, 2)\n", 2 * k - 1, 2 * k, 2 * k + 1);
	CHECK(!ScheduleParse(text, &s, &status) && status.kind == SILVAN_ERROR_INVALID);
	CHECK(strcmp(status.message, "too many index variables") == 0);
	CHECK_MSG(strcmp(status.detail, "Line 16, tile(a29, a30, a31, 2): The schedule would have "
					 "34 index variables; at most 32 are allowed.") == 0, "%s", status.detail);
	text[len - strlen("tile(a29, a30, a31, 2)\n")] = '\0';
	CHECK(ScheduleParse(text, &s, &status) && s.num_vars == SCHEDULE_MAX_VARS);
	CheckRoundTrip("32 variables", &s);
	/* a split that needs room for copies */
	CHECK(!ScheduleParse("reorder(tree, batch); tile(batch, a0, a1, 2); tile(a1, a2, a3, 2);"
						 "tile(a3, a4, a5, 2); tile(a5, a6, a7, 2); tile(a7, a8, a9, 2);"
						 "tile(a9, c0, c1, 2); tile(c1, c2, c3, 2); tile(c3, c4, c5, 2);"
						 "tile(c5, c6, c7, 2); split(tree, x, y, 3)", &s, &status));
	CHECK_MSG(strcmp(status.detail, "Line 1, split(tree, x, y, 3): The schedule would have "
					 "42 index variables; at most 32 are allowed.") == 0, "%s", status.detail);

	/* 64 directives fit, the 65th does not */
	len = 0;
	for (int k = 0; k < SCHEDULE_MAX_DIRECTIVES; k++)
		len += sprintf(text + len, "parallel(batch)\n");
	CHECK(ScheduleParse(text, &s, &status) && s.num_directives == SCHEDULE_MAX_DIRECTIVES);
	CheckRoundTrip("64 directives", &s);
	len += sprintf(text + len, "cache(tree)");
	CHECK(!ScheduleParse(text, &s, &status) && status.kind == SILVAN_ERROR_INVALID);
	CHECK(strcmp(status.message, "too many schedule directives") == 0);
	CHECK_MSG(strcmp(status.detail, "Line 65, cache(tree): A schedule has at most 64 directives.") == 0,
			  "%s", status.detail);

	/* SCHEDULE_MAX_TEXT bytes are fine, one more is not */
	memset(text, ';', SCHEDULE_MAX_TEXT);
	text[SCHEDULE_MAX_TEXT] = '\0';
	CHECK(ScheduleParse(text, &s, &status));
	text[SCHEDULE_MAX_TEXT] = ' ';
	text[SCHEDULE_MAX_TEXT + 1] = '\0';
	CHECK(!ScheduleParse(text, &s, &status) && status.kind == SILVAN_ERROR_INVALID);
	CHECK(strcmp(status.message, "schedule text too long") == 0);
	free(text);
}

/*
 * Every walk strategy of the table (walk.h), directive by directive and
 * keyword by keyword: the directive parses onto an innermost loop, the loop
 * carries that strategy and names the directive, the canonical text
 * prints it and parses back to the same arguments, and a directive of any
 * other strategy on the same loop is refused.  The tuner's walks have
 * distinct names, and the strategies distinct default ranks.  Every layout
 * of repr.c's table parses by name.
 */
static void
TestWalkTable(void)
{
	const char *nest = "tile(batch, b0, b1, 16); reorder(b0, tree, b1); interleave(b1); ";
	int			ranks[16] = {0};

	CHECK(WalkNumStrategies() >= 4 && WalkStrategyOf(0) == &WalkLockstep);
	for (int k = 0; k < WalkNumStrategies(); k++)
	{
		const WalkStrategy *w = WalkStrategyOf(k);

		CHECK(WalkKindOf(w) == k && w->codegen != NULL && w->num_directives >= 1);
		for (int j = 0; j < k; j++)
			CHECK_MSG(w->default_rank == 0 || ranks[j] != w->default_rank,
					  "%s: default rank %d taken", w->name, w->default_rank);
		ranks[k] = w->default_rank;
		for (int d = 0; d < w->num_directives; d++)
		{
			const WalkDirective *wd = &w->directives[d];
			int			num_words = 0;

			while (wd->words != NULL && wd->words[num_words] != NULL)
				num_words++;
			for (int word = 0; word < (num_words > 0 ? num_words : 1); word++)
			{
				static Schedule s;
				static Schedule again;
				char		text[256];
				char		call[128];
				int			n = snprintf(call, sizeof(call), "%s(b1", wd->name);
				SilvanStatus status;
				char	   *printed;
				const IndexVar *v;

				for (const char *c = wd->signature + 1; *c; c++)
					n += snprintf(call + n, sizeof(call) - n, ", %s",
								  *c == 'i' ? "3" : wd->words[word]);
				snprintf(call + n, sizeof(call) - n, ")");
				snprintf(text, sizeof(text), "%s%s", nest, call);
				if (!ScheduleParse(text, &s, &status))
				{
					CHECK_MSG(false, "%s: %s: %s", text, status.message, status.detail);
					continue;
				}
				v = &s.vars[ScheduleFindVar(&s, "b1")];
				CHECK_MSG(v->walk == k && WalkCarried(v) != NULL &&
						  strcmp(WalkCarried(v), wd->name) == 0, "%s: walk %d", text, v->walk);
				printed = ScheduleToText(&s);
				CHECK_MSG(printed != NULL && strstr(printed, call) != NULL, "%s: printed %s",
						  call, printed ? printed : "NULL");
				CHECK_MSG(printed != NULL && ScheduleParse(printed, &again, &status) &&
						  again.vars[ScheduleFindVar(&again, "b1")].walk == k &&
						  memcmp(again.vars[ScheduleFindVar(&again, "b1")].walk_args,
								 v->walk_args, sizeof(v->walk_args)) == 0, "%s: again", call);
				free(printed);
				/* another strategy's directive on the same loop */
				for (int o = 0; o < WalkNumStrategies(); o++)
				{
					const WalkDirective *od = &WalkStrategyOf(o)->directives[0];
					char		other[512];

					if (o == k)
						continue;
					snprintf(other, sizeof(other), "%s; %s(b1%s)", text, od->name,
							 strcmp(od->signature, "v") == 0 ? "" :
							 strcmp(od->signature, "vi") == 0 ? ", 3" : ", 3, branchy");
					CHECK_MSG(!ScheduleParse(other, &again, &status) &&
							  strcmp(status.message, "conflicting walk directives") == 0,
							  "%s: %s", other, status.message);
				}
			}
		}
	}
	for (int i = 0; i < WalkNumTunings(); i++)
	{
		int			kind = -1;
		const WalkTuning *t = WalkTuningAt(i, &kind);

		CHECK(t != NULL && kind >= 0 && WalkTuningFind(t->name) == i);
	}
	CHECK(WalkTuningAt(WalkNumTunings(), NULL) == NULL && WalkTuningFind("no such") == -1);
	for (int r = 0; r < ReprCount(); r++)
	{
		static Schedule s;
		char		text[64];
		SilvanStatus status;

		snprintf(text, sizeof(text), "representation(%s)", ReprAt(r)->name);
		CHECK_MSG(ScheduleParse(text, &s, &status) &&
				  strcmp(s.representation, ReprAt(r)->name) == 0, "%s", text);
	}
	ExpectError("representation(dense)", SILVAN_ERROR_INVALID, "invalid directive argument",
				"Line 1, representation(dense): dense is not a valid choice; expected "
				"representation(array|sparse|reorg|perfect).");
}

int
main(void)
{
	TestDefault();
	TestSeedCpuSchedules();
	TestSeedTahoe();
	TestSeedFigure1();
	TestSplitCopies();
	TestFlagsAndLayout();
	TestWalkStrategies();
	TestWalkTable();
	TestCanonicalText();
	TestSyntaxErrors();
	TestInvalid();
	TestLimits();
	UNIT_DONE();
}
