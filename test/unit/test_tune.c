/*
 * test_tune.c
 *		The tuner's spaces, searches and measurements (src/tune).
 *
 * Spaces: the counts of every phase on given shapes, every point's text
 * parses, exact spaces hold nothing that reorders sums, Algorithm 1's
 * decisions by batch size and feature count, Table 5's 5184 points.
 * Searches: driven by a fake timer (a cost function of the point), the
 * heuristic walks its phases in order, refines the top three, finds the
 * exhaustive search's best when the cost has one clear optimum, and times
 * a small fraction of the space.  Measurements: on real models every
 * candidate of the heuristic's first phase compiles and agrees with the
 * interpreter bit for bit; a wrong reference is caught as a mismatch.
 */
#include <math.h>

#include "silvan/compiler.h"
#include "silvan/parse.h"
#include "silvan/repr.h"
#include "silvan/runtime.h"
#include "silvan/schedule.h"
#include "silvan/tune.h"
#include "unit.h"

/* A shape like a 100-tree depth-8 XGBoost model on 28 features */
static TuneShape
HiggsShape(int32_t batch_size, int32_t threads, bool exact)
{
	TuneShape	s = {.num_trees = 100, .num_features = 28, .max_depth = 8,
		.total_splits = 100 * 255, .largest_tree_splits = 255, .forest_bytes = 100 * 511 * 12,
		.batch_size = batch_size, .max_threads = threads, .exact = exact};

	return s;
}

/* A shape like a small deep LightGBM model (NYC_taxi: code walks fit) */
static TuneShape
TaxiShape(int32_t batch_size)
{
	TuneShape	s = {.num_trees = 100, .num_features = 5, .max_depth = 14,
		.total_splits = 3000, .largest_tree_splits = 30, .forest_bytes = 100 * 61 * 16,
		.batch_size = batch_size, .max_threads = 1, .exact = true};

	return s;
}

/* Every point's text parses; none reorders sums when exact */
static void
CheckCpuPoints(const char *label, const TuneShape *shape, const TuneCpuPoint *points, int n)
{
	char		text[TUNE_MAX_TEXT];
	int			parsed = 0;
	int			reorders = 0;

	for (int i = 0; i < n; i++)
	{
		Schedule	schedule;
		SilvanStatus status;
		bool		ok = TuneCpuText(shape, &points[i], text, sizeof(text));

		CHECK_MSG(ok, "%s: point %d has no text", label, i);
		if (ok && ScheduleParse(text, &schedule, &status))
			parsed++;
		else if (ok)
			fprintf(stderr, "%s: %s\n%s: %s\n", label, text, status.message, status.detail);
		reorders += TuneCpuReordersSums(&points[i]);
	}
	CHECK_MSG(parsed == n, "%s: %d of %d texts parse", label, parsed, n);
	if (shape->exact)
		CHECK_MSG(reorders == 0, "%s: %d exact points reorder sums", label, reorders);
}

/* The CPU space: phase and exhaustive counts, texts, exactness */
static void
TestCpuSpace(void)
{
	static const int32_t batches[] = {1, 64, 1024, 8192};
	/* phase 1 counts, at one thread and exact, by batch size */
	static const int want_phase1[] = {3, 9, 27, 27};
	TuneCpuPoint *points = malloc(sizeof(TuneCpuPoint) * 8192);
	int			heuristic_total = 0;
	int			exhaustive_total = 0;

	for (int b = 0; b < 4; b++)
	{
		TuneShape	shape = HiggsShape(batches[b], 1, true);
		int			n1 = TuneCpuPhase1(&shape, points, 8192);
		int			ne;
		char		label[64];

		snprintf(label, sizeof(label), "higgs phase 1, batch %d", batches[b]);
		CHECK_MSG(n1 == want_phase1[b], "%s: %d points, want %d", label, n1, want_phase1[b]);
		CheckCpuPoints(label, &shape, points, n1);
		for (int i = 0; i < n1; i++)
			CHECK(points[i].representation == 0 && points[i].tile_size == 1 &&
				  (points[i].walk != WalkTuningFind("unrolled") || points[i].interleave > 1));
		heuristic_total += n1;
		ne = TuneCpuExhaustive(&shape, points, 8192);
		snprintf(label, sizeof(label), "higgs exhaustive, batch %d", batches[b]);
		CheckCpuPoints(label, &shape, points, ne);
		if (batches[b] >= 64)
			CHECK_MSG(ne >= 10 * n1, "%s: %d points, phase 1 %d", label, ne, n1);
		exhaustive_total += ne;
		printf("  batch %5d: phase 1 %d points, exhaustive %d\n", batches[b], n1, ne);
	}
	CHECK(heuristic_total > 0 && exhaustive_total > 10 * heuristic_total);

	/*
	 * a host that walks rows as AVX-512 vectors: phase 1 adds one vector
	 * point per loop nest (interleave 16 as its token), in the perfect
	 * layout, 128 rows a walk at most; phase 2 keeps it in perfect
	 */
	{
		TuneShape	shape = HiggsShape(1024, 1, true);
		int			n1;
		int			vectors = 0;
		char		text[TUNE_MAX_TEXT];
		TuneCpuPoint refined[64];

		shape.vector_walk = true;
		n1 = TuneCpuPhase1(&shape, points, 8192);
		CHECK_MSG(n1 == 27 + 3, "higgs phase 1 with vector walks: %d points", n1);
		CheckCpuPoints("higgs phase 1, vector walks", &shape, points, n1);
		for (int i = 0; i < n1; i++)
		{
			if (points[i].walk != WalkTuningFind("vector"))
				continue;
			vectors++;
			CHECK(points[i].representation == ReprIndex("perfect") &&
				  points[i].interleave == 16 && TuneCpuText(&shape, &points[i], text, sizeof(text)));
			CHECK_MSG(strstr(text, points[i].row_tile == 0 ?
							 "reorder(tree, batch)\ntile(batch, b0, b1, 128)\ninterleave(b1)\n"
							 "vectorWalk(b1)\nrepresentation(perfect)\n" :
							 points[i].row_tile <= 128 ?
							 "reorder(b0, tree, b1)\nparallel(b0)\ninterleave(b1)\n"
							 "vectorWalk(b1)\nrepresentation(perfect)\n" :
							 "parallel(b0)\ntile(b1, b2, b3, 128)\ninterleave(b3)\n"
							 "vectorWalk(b3)\nrepresentation(perfect)\n") != NULL,
					  "%s", text);
			for (int r = 0, nr = TuneCpuRefineLayout(&shape, &points[i], refined, 64); r < nr; r++)
				CHECK(refined[r].walk != WalkTuningFind("vector") ||
					  refined[r].representation == ReprIndex("perfect"));
		}
		CHECK(vectors == 3);
		shape.vector_walk = false;
		CHECK(TuneCpuPhase1(&shape, points, 8192) == 27);
	}

	/* two threads, inexact: parallel trees and reordered trees join */
	{
		TuneShape	shape = HiggsShape(1024, 2, false);
		int			n1 = TuneCpuPhase1(&shape, points, 8192);
		int			reorders = 0;
		TuneCpuPoint refined[64];
		int			nr;

		CheckCpuPoints("higgs phase 1, 2 threads, inexact", &shape, points, n1);
		for (int i = 0; i < n1; i++)
			reorders += TuneCpuReordersSums(&points[i]);
		CHECK_MSG(reorders > 0 && reorders < n1, "%d of %d reorder sums", reorders, n1);
		nr = TuneCpuRefineBlocking(&shape, &points[0], refined, 64);
		CHECK(nr >= 2);
		CheckCpuPoints("higgs phase 3, inexact", &shape, refined, nr);
	}

	/*
	 * code walks of many splits (a shape like mtpl2's): phase 3 adds LLVM's
	 * full code generation, as fullCodegen(); small ones (NYC_taxi's) do not
	 */
	{
		TuneShape	shape = TaxiShape(1024);
		TuneCpuPoint base;
		TuneCpuPoint refined[64];
		char		text[TUNE_MAX_TEXT];
		Schedule	schedule;
		SilvanStatus status;
		int			full = -1;
		int			code = -1;
		int			n1 = TuneCpuPhase1(&shape, points, 8192);
		int			nr;

		for (int i = 0; i < n1 && code < 0; i++)
			if (points[i].walk == WalkTuningFind("code branchy"))
				code = i;
		CHECK_MSG(code >= 0, "no branchy code walk in NYC_taxi's phase 1");
		if (code < 0)
			code = 0;
		base = points[code];
		nr = TuneCpuRefineBlocking(&shape, &base, refined, 64);
		for (int i = 0; i < nr; i++)
			CHECK(!refined[i].full_codegen);
		shape.num_trees = 1000;
		shape.max_depth = 18;
		shape.total_splits = 30000;
		shape.largest_tree_splits = 60;
		nr = TuneCpuRefineBlocking(&shape, &base, refined, 64);
		for (int i = 0; i < nr; i++)
			if (refined[i].full_codegen)
				full = i;
		CHECK_MSG(full >= 0, "no fullCodegen() point among %d for a big code walk", nr);
		if (full >= 0)
		{
			CHECK(TuneCpuText(&shape, &refined[full], text, sizeof(text)) &&
				  strstr(text, "fullCodegen()\n") != NULL);
			CHECK_MSG(ScheduleParse(text, &schedule, &status) && schedule.full_codegen,
					  "%s: %s", text, status.detail);
		}
		CheckCpuPoints("mtpl2-like phase 3", &shape, refined, nr);
	}

	/* layout refinement: every representation and tile size, not the base again */
	{
		TuneShape	shape = HiggsShape(1024, 1, true);
		TuneCpuPoint base = {.parallel = TUNE_PARALLEL_ROWS, .row_tile = 256, .interleave = 16,
		.walk = WalkTuningFind("unrolled"), .tile_size = 1};
		TuneCpuPoint refined[64];
		int			nr = TuneCpuRefineLayout(&shape, &base, refined, 64);

		CHECK_MSG(nr == 9, "layout refinement: %d points", nr);
		for (int i = 0; i < nr; i++)
			CHECK_MSG(refined[i].representation != ReprIndex("perfect") ||
					  refined[i].tile_size == 1, "perfect with tiles of %d", refined[i].tile_size);
		CheckCpuPoints("higgs phase 2", &shape, refined, nr);
		shape.have_profile = true;
		nr = TuneCpuRefineLayout(&shape, &base, refined, 64);
		CHECK_MSG(nr == 15, "layout refinement with a profile: %d points", nr);
		base.walk = WalkTuningFind("early exit");
		nr = TuneCpuRefineLayout(&shape, &base, refined, 64);
		CHECK_MSG(nr == 3, "layout refinement of an early exit: %d points", nr);
	}

	/*
	 * code walks: for small forests and deep ones, never for higgs' 25500
	 * splits of depth 8; blocks of trees in code (12 of 30 splits make
	 * about SCHEDULE_CODE_BLOCK_SPLITS), whole trees up to TUNE_CODE_SPLITS
	 * splits, else an equal share of it per tree
	 */
	{
		TuneShape	taxi = TaxiShape(1024);
		TuneShape	higgs = HiggsShape(1024, 1, true);
		TuneShape	mtpl2 = TaxiShape(1024);
		TuneCpuPoint code = {.parallel = TUNE_PARALLEL_ROWS, .row_tile = 64, .interleave = 1,
		.walk = WalkTuningFind("code branchy"), .tile_size = 1};
		char		text[TUNE_MAX_TEXT];

		CHECK(TuneCpuValid(&taxi, &code));
		CHECK(!TuneCpuValid(&higgs, &code));
		CHECK(TuneCpuText(&taxi, &code, text, sizeof(text)) &&
			  strstr(text, "tile(batch, b0, b1, 64)\ntile(tree, t0, t1, 12)\n"
					 "reorder(b0, t0, b1, t1)\nparallel(b0)\nspecialize(t0)\nspecialize(t1)\n"
					 "codeWalk(t1, 30, branchy)\n"));
		mtpl2.num_trees = 1000;
		mtpl2.max_depth = 18;
		mtpl2.total_splits = 100000;
		mtpl2.largest_tree_splits = 100;
		mtpl2.categorical = true;
		CHECK(TuneCpuValid(&mtpl2, &code));
		/* 1000 trees: at most SCHEDULE_CODE_MAX_BLOCKS blocks, not 12 trees each */
		CHECK(TuneCpuText(&mtpl2, &code, text, sizeof(text)) &&
			  strstr(text, "tile(tree, t0, t1, 32)") && strstr(text, "codeWalk(t1, 32, branchy)"));
		CHECK(ScheduleCodeBlockTrees(30, 100) == 12 && ScheduleCodeBlockTrees(30, 1000) == 32 &&
			  ScheduleCodeBlockTrees(8, 1000) == 48 && ScheduleCodeBlockTrees(1, 5000) == 64 &&
			  ScheduleCodeBlockTrees(400, 3) == 1 && ScheduleCodeBlockTrees(30, 5) == 5);
		code.row_tile = 0;
		code.parallel = TUNE_PARALLEL_NONE;
		CHECK(TuneCpuText(&taxi, &code, text, sizeof(text)) &&
			  strstr(text, "tile(tree, t0, t1, 12)\nreorder(t0, batch, t1)\n") &&
			  !strstr(text, "parallel"));
		code.row_tile = 1024;	/* not below the batch */
		code.parallel = TUNE_PARALLEL_ROWS;
		CHECK(!TuneCpuValid(&taxi, &code));
	}

	/*
	 * bitvector code walks: interleaved rows, trees through the table (no
	 * specialize); only for trees of at most 64 leaves, categorical sets
	 * narrow enough for category tables, and TUNE_BITS_MAX_SPLITS splits;
	 * phase 1 tries them
	 */
	{
		TuneShape	taxi = TaxiShape(1024);
		TuneCpuPoint bits = {.parallel = TUNE_PARALLEL_ROWS, .row_tile = 256, .interleave = 8,
		.walk = WalkTuningFind("code bitvector"), .tile_size = 1};
		char		text[TUNE_MAX_TEXT];
		int			n1 = TuneCpuPhase1(&taxi, points, 8192);
		int			found = 0;

		CHECK(TuneCpuValid(&taxi, &bits));
		CHECK(TuneCpuText(&taxi, &bits, text, sizeof(text)) &&
			  strstr(text, "tile(batch, b0, b1, 256)\nreorder(b0, tree, b1)\nparallel(b0)\n"
					 "tile(b1, b2, b3, 8)\ninterleave(b3)\ncache(b0)\ncodeWalk(b3, 63, bitvector)\n") &&
			  !strstr(text, "specialize"));
		for (int i = 0; i < n1; i++)
			found += points[i].walk == WalkTuningFind("code bitvector");
		CHECK_MSG(found >= 2, "taxi phase 1: %d bitvector points of %d", found, n1);
		CheckCpuPoints("taxi phase 1", &taxi, points, n1);
		bits.interleave = 1;
		CHECK(!TuneCpuValid(&taxi, &bits));
		bits.interleave = 8;
		taxi.categorical = true;
		taxi.widest_category_span = CODE_WALK_BITS_MAX_KEYS;
		CHECK(TuneCpuValid(&taxi, &bits));
		taxi.widest_category_span = CODE_WALK_BITS_MAX_KEYS + 32;
		CHECK(!TuneCpuValid(&taxi, &bits));
		taxi.categorical = false;
		taxi.widest_category_span = 0;
		taxi.largest_tree_splits = 64;
		CHECK(!TuneCpuValid(&taxi, &bits));
		taxi.largest_tree_splits = 30;
		taxi.total_splits = TUNE_BITS_MAX_SPLITS + 1;
		CHECK(!TuneCpuValid(&taxi, &bits));
	}
	free(points);
}

/* The GPU space: Table 5 and Algorithm 1 */
static void
TestGpuSpace(void)
{
	TuneGpuPoint *points = malloc(sizeof(TuneGpuPoint) * 6000);
	TuneShape	shape = HiggsShape(4096, 1, false);
	TuneShape	exact = HiggsShape(4096, 1, true);
	int32_t		rows[2];
	int32_t		trees[2];
	int			n;
	int			parsed = 0;

	/*
	 * 5184 points less the blocks over 1,024 threads: for 100 trees, 50
	 * tree threads (50 tiles of 2 trees) with 32, 64 or 32 rows (64 rows, 2
	 * a thread), and 20 tree threads with 64 rows: 4 of the 36 row and tree
	 * configurations, 144 points each
	 */
	n = TuneGpuExhaustive(&shape, points, 6000);
	CHECK_MSG(n == 5184 - 4 * 144, "Table 5 has %d points", n);
	for (int i = 0; i < n; i++)
		CHECK(TuneGpuBlockThreads(&shape, &points[i]) <= TUNE_GPU_MAX_BLOCK_THREADS);
	/* exact: one tree thread, no shared reduction: 9 * 8 * 3 * 3 */
	n = TuneGpuExhaustive(&exact, points, 6000);
	CHECK_MSG(n == 648, "exact Table 5 has %d points", n);
	for (int i = 0; i < n; i++)
		CHECK(points[i].tree_threads == 1 && !points[i].shared_reduce);
	n = TuneGpuAlgorithm1(&exact, points, 6000);
	CHECK_MSG(n == 18, "exact Algorithm 1 plans %d points", n);
	for (int i = 0; i < n; i++)
		CHECK(points[i].tree_threads == 1 && points[i].cache_rows);

	TuneGpuBlockConfigs(1024, 28, rows, trees);
	CHECK(rows[0] == 8 && rows[1] == 32 && trees[0] == 20 && trees[1] == 50);
	TuneGpuBlockConfigs(2048, 28, rows, trees);
	CHECK(rows[0] == 8 && rows[1] == 32);
	TuneGpuBlockConfigs(4096, 28, rows, trees);
	CHECK(rows[0] == 32 && rows[1] == 64 && trees[0] == 2 && trees[1] == 10);
	TuneGpuBlockConfigs(4096, 200, rows, trees);
	CHECK(rows[0] == 8 && trees[1] == 50);

	n = TuneGpuAlgorithm1(&shape, points, 6000);
	CHECK_MSG(n == 36, "Algorithm 1 plans %d points", n);
	for (int i = 0; i < n; i++)
	{
		char		text[TUNE_MAX_TEXT];
		Schedule	schedule;
		SilvanStatus status;

		CHECK(points[i].cache_rows && !points[i].cache_trees && !points[i].shared_reduce &&
			  points[i].unroll == (points[i].interleave != 1) &&
			  (points[i].rows_per_block == 32 || points[i].rows_per_block == 64));
		if (TuneGpuText(&shape, &points[i], text, sizeof(text)) &&
			ScheduleParse(text, &schedule, &status))
			parsed++;
		else
			fprintf(stderr, "gpu: %s\n%s: %s\n", text, status.message, status.detail);
	}
	CHECK_MSG(parsed == n, "%d of %d GPU texts parse", parsed, n);
	/*
	 * many features: 8 or 32 rows by 20 or 50 tree threads; 32 x 50 is
	 * 1,600 threads, more than a CUDA block launches: left out
	 */
	shape.num_features = 968;
	n = TuneGpuAlgorithm1(&shape, points, 6000);
	CHECK_MSG(n == 27, "Algorithm 1 plans %d points for 968 features", n);
	for (int i = 0; i < n; i++)
		CHECK(TuneGpuBlockThreads(&shape, &points[i]) <= TUNE_GPU_MAX_BLOCK_THREADS &&
			  !(points[i].rows_per_block == 32 && points[i].tree_threads == 50));
	free(points);
}

/*
 * A fake timer: us per row as a function of the point, with one optimum
 * (tile 256, interleave 16, unrolled, sparse, tiles of 4)
 */
static double
FakeCost(const TuneCandidate *c)
{
	const TuneCpuPoint *p = &c->cpu;
	double		us = 1.0;

	if (c->phase == 0)
		return 0.9;				/* the default */
	us *= p->row_tile == 256 ? 1.0 : p->row_tile == 64 ? 1.2 : 1.5;
	us *= p->interleave == 16 ? 1.0 : p->interleave == 8 ? 1.1 : 1.4;
	us *= p->walk == WalkTuningFind("unrolled") ? 1.0 : p->walk == WalkTuningFind("lock-step") ? 1.15 : 1.6;
	us *= p->representation == 1 ? 0.9 : p->representation == 2 ? 1.05 : 1.0;
	us *= p->tile_size == 4 ? 0.8 : p->tile_size == 8 ? 0.95 : 1.0;
	us *= p->blocks != TUNE_BLOCKS_NONE ? 1.1 : 1.0;
	return us;
}

/* Run a search with the fake timer; returns the best and counts what was timed */
static double
FakeSearch(const TuneShape *shape, TuneStrategy strategy, int *timed, int *discarded,
		   int *phases_seen, TuneCpuPoint *best_point)
{
	TuneOptions options = {.target = TUNE_TARGET_CPU, .strategy = strategy,
	.default_text = "reorder(tree, batch)\n"};
	SilvanStatus status;
	TuneSearch *search = TuneSearchCreate(shape, &options, &status);
	const TuneCandidate *c;
	int			last_phase = 0;
	double		best;

	*timed = *discarded = *phases_seen = 0;
	if (search == NULL)
		return -1;
	while ((c = TuneSearchNext(search)) != NULL)
	{
		double		us = FakeCost(c);
		double		bound = TuneSearchDiscardAbove(search);

		CHECK(c->phase >= last_phase);	/* phases in order */
		if (c->phase != last_phase)
			(*phases_seen)++;
		last_phase = c->phase;
		if (bound > 0 && us > bound)
		{
			TuneSearchReport(search, c->id, TUNE_DISCARDED, us, 1);
			(*discarded)++;
		}
		else
		{
			TuneSearchReport(search, c->id, TUNE_TIMED, us, 1);
			(*timed)++;
		}
	}
	best = TuneSearchBest(search)->us_per_row;
	*best_point = TuneSearchBest(search)->cpu;
	TuneSearchFree(search);
	return best;
}

/* Searches with the fake timer: phases, refinement, heuristic against exhaustive */
static void
TestFakeSearch(void)
{
	TuneShape	shape = HiggsShape(1024, 1, true);
	TuneCpuPoint hp;
	TuneCpuPoint ep;
	int			ht, hd, hphases, et, ed, ephases;
	double		h = FakeSearch(&shape, TUNE_HEURISTIC, &ht, &hd, &hphases, &hp);
	double		e = FakeSearch(&shape, TUNE_EXHAUSTIVE, &et, &ed, &ephases, &ep);

	printf("  fake timer: heuristic %.3f (%d timed, %d discarded, %d phases),"
		   " exhaustive %.3f (%d timed)\n", h, ht, hd, hphases, e, et);
	CHECK(hphases == 3 && ephases == 1);
	CHECK(ed == 0);				/* exhaustive times everything fully */
	CHECK(hd > 0);				/* the heuristic discards clearly slower ones */
	CHECK(fabs(h - e) < 1e-9);	/* one clear optimum: the same best */
	CHECK(hp.row_tile == 256 && hp.interleave == 16 && hp.walk == WalkTuningFind("unrolled") &&
		  hp.representation == 1 && hp.tile_size == 4);
	CHECK_MSG((ht + hd) * 10 <= et, "heuristic %d candidates, exhaustive %d", ht + hd, et);

	/* the iterator waits for reports before planning the next phase */
	{
		TuneOptions options = {.target = TUNE_TARGET_CPU, .strategy = TUNE_HEURISTIC};
		SilvanStatus status;
		TuneSearch *search = TuneSearchCreate(&shape, &options, &status);
		const TuneCandidate *c;
		int			handed = 0;
		TuneProgress progress;

		while ((c = TuneSearchNext(search)) != NULL)
			handed++;
		CHECK(handed == 27);	/* phase 1 only: nothing reported */
		TuneSearchProgressOf(search, &progress);
		CHECK(progress.done == 0 && progress.planned == 27 &&
			  strcmp(progress.phase, "loop structure and parallelism") == 0);
		TuneSearchReport(search, 0, TUNE_FAILED, 0, 0);
		TuneSearchReport(search, 0, TUNE_TIMED, 1, 0); /* a second report is ignored */
		CHECK(TuneSearchCount(search, TUNE_FAILED) == 1 && TuneSearchCount(search, TUNE_TIMED) == 0);
		TuneSearchFree(search);
	}

	/* GPU: Algorithm 1's 36, then shared reduction on the top three */
	{
		TuneOptions options = {.target = TUNE_TARGET_GPU, .strategy = TUNE_HEURISTIC};
		SilvanStatus status;
		TuneShape	gpu = HiggsShape(4096, 1, false);
		TuneSearch *search = TuneSearchCreate(&gpu, &options, &status);
		const TuneCandidate *c;
		int			n = 0;
		int			shared = 0;

		while ((c = TuneSearchNext(search)) != NULL)
		{
			n++;
			shared += c->gpu.shared_reduce;
			CHECK(c->gpu.shared_reduce == (c->phase == 2));
			TuneSearchReport(search, c->id, TUNE_TIMED,
							 1.0 + c->gpu.interleave * 0.1 + c->gpu.representation * 0.01, 0);
		}
		CHECK_MSG(n == 39 && shared == 3, "GPU search: %d candidates, %d shared", n, shared);
		CHECK(TuneSearchBest(search)->gpu.interleave == 1);
		TuneSearchFree(search);
	}

	/* exact GPU: Algorithm 1's 18 with one tree thread, no shared reduction phase */
	{
		TuneOptions options = {.target = TUNE_TARGET_GPU, .strategy = TUNE_HEURISTIC};
		SilvanStatus status;
		TuneShape	gpu = HiggsShape(4096, 1, true);
		TuneSearch *search = TuneSearchCreate(&gpu, &options, &status);
		const TuneCandidate *c;
		int			n = 0;

		while ((c = TuneSearchNext(search)) != NULL)
		{
			n++;
			CHECK(!c->gpu.shared_reduce && c->gpu.tree_threads == 1 && !c->reorders_sums);
			TuneSearchReport(search, c->id, TUNE_TIMED, 1.0 + c->gpu.interleave * 0.1, 0);
		}
		CHECK_MSG(n == 18, "exact GPU search: %d candidates", n);
		TuneSearchFree(search);
	}
}

/* Margins agree bit for bit, or within rounding */
static void
TestAgreement(void)
{
	Forest		forest = {.num_trees = 100, .precision = FOREST_FLOAT32};
	float		want[3] = {1.0f, -2.5f, NAN};
	float		close[3] = {1.0f + 1e-6f, -2.5f, NAN};
	float		far[3] = {1.1f, -2.5f, NAN};

	CHECK(TuneMarginsAgree(&forest, want, want, 3, true));
	CHECK(!TuneMarginsAgree(&forest, want, close, 3, true));
	CHECK(TuneMarginsAgree(&forest, want, close, 3, false));
	CHECK(!TuneMarginsAgree(&forest, want, far, 3, false));
}

/*
 * Every phase-1 candidate of a real model compiles and matches the
 * interpreter bit for bit; with exhaustive_stride > 0 so does every
 * stride-th point of the exhaustive space (blocks of trees, tiles, ...)
 */
static void
TestMeasure(const char *path, int32_t batch_size, int exhaustive_stride)
{
	size_t		len;
	bool		shared = strncmp(path, "shared:", 7) == 0;
	char	   *text = shared ? NULL : ReadFile(path, &len);
	SilvanStatus status;
	Forest	   *forest = shared ? LoadSharedModel(path + 7) :
		text ? ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status) : NULL;
	TuneShape	shape;
	TuneOptions options = {.target = TUNE_TARGET_CPU, .strategy = TUNE_HEURISTIC};
	TuneSearch *search;
	TuneSample	sample;
	void	   *rows;
	const TuneCandidate *c;
	volatile sig_atomic_t stop = 0;
	Schedule	def;
	char	   *def_text;
	int			timed = 0;

	free(text);
	if (shared && forest == NULL)
	{
		printf("  skip %s: no ../shared\n", path);
		return;
	}
	CHECK_MSG(forest != NULL, "%s does not parse", path);
	if (forest == NULL)
		return;
	ScheduleDefault(forest, batch_size, NULL, &def);
	def_text = ScheduleToText(&def);
	options.default_text = def_text;
	rows = TuneSynthesizeRows(forest, NULL, 500, 7, &status);
	CHECK(rows != NULL && TuneSampleInit(forest, rows, 500, batch_size, &sample, &status));
	TuneShapeOf(forest, batch_size, 1, true, false, NULL, &shape);
	search = TuneSearchCreate(&shape, &options, &status);
	while ((c = TuneSearchNext(search)) != NULL && c->phase <= 1)
	{
		TuneTiming timing;

		CHECK(TuneMeasure(forest, NULL, &sample, batch_size, c->text, true, 0, 0.001, &stop,
						  &timing));
		CHECK_MSG(timing.outcome == TUNE_TIMED, "%s, batch %d: %s: outcome %d: %s", path,
				  batch_size, c->text, timing.outcome, timing.why);
		timed += timing.outcome == TUNE_TIMED;
		TuneSearchReport(search, c->id, timing.outcome, timing.us_per_row, timing.compile_ms);
	}
	printf("  %s, batch %d: %d candidates timed, best %.3f us/row, default %.3f\n", path,
		   batch_size, timed, TuneSearchBest(search)->us_per_row,
		   TuneSearchDefault(search) ? TuneSearchDefault(search)->us_per_row : -1.0);
	if (exhaustive_stride > 0)
	{
		TuneCpuPoint *points = malloc(sizeof(TuneCpuPoint) * 8192);
		int			n = TuneCpuExhaustive(&shape, points, 8192);
		int			blocks = 0;
		int			checked = 0;

		for (int i = 0; i < n; i += exhaustive_stride)
		{
			char		text[TUNE_MAX_TEXT];
			TuneTiming	timing;

			CHECK(TuneCpuText(&shape, &points[i], text, sizeof(text)));
			CHECK(TuneMeasure(forest, NULL, &sample, batch_size, text, true, 0, 0.001, &stop,
							  &timing));
			CHECK_MSG(timing.outcome == TUNE_TIMED, "%s, batch %d: %s: outcome %d: %s", path,
					  batch_size, text, timing.outcome, timing.why);
			blocks += points[i].blocks != TUNE_BLOCKS_NONE;
			checked++;
		}
		printf("  %s, batch %d: %d of %d exhaustive points compiled and checked, %d with blocks of trees\n",
			   path, batch_size, checked, n, blocks);
		CHECK(blocks > 0 || shape.forest_bytes <= 24 * 1024);	/* blocks where the forest has room */
		free(points);
	}

	/* a wrong reference is a mismatch, and a stop ends the measurement */
	{
		TuneTiming timing;
		size_t		vs = ForestValueSize(forest);

		((char *) sample.reference)[vs / 2] ^= 1;
		CHECK(TuneMeasure(forest, NULL, &sample, batch_size, def_text, true, 0, 0.001, &stop,
						  &timing) && timing.outcome == TUNE_MISMATCH);
		stop = 1;
		CHECK(!TuneMeasure(forest, NULL, &sample, batch_size, def_text, true, 0, 0.001, &stop,
						   &timing));
		CHECK(TuneMeasure(forest, NULL, &sample, batch_size, "tile(batch, b0", true, 0, 0.001,
						  &stop, &timing) && timing.outcome == TUNE_FAILED);
	}
	TuneSearchFree(search);
	TuneSampleFree(&sample);
	free(rows);
	free(def_text);
	ForestFree(forest);
}

/*
 * Rows synthesized from a profile take splits and sides as often as the
 * profiled rows did: a profile where rows reached only tree 0's root and
 * all went right gives rows that all go right there; without a profile
 * both sides are taken
 */
static void
TestSynthesizeFromProfile(void)
{
	size_t		len;
	char	   *text = ReadFile("test/fixtures/binary_logistic.json", &len);
	SilvanStatus status;
	Forest	   *forest = ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status);
	int64_t    *hits = calloc(forest->num_nodes, sizeof(int64_t));
	ForestProfile profile = {.num_rows = 100, .num_nodes = forest->num_nodes, .node_hits = hits};
	const ForestNode *root = &forest->nodes[forest->trees[0].first_node];
	float	   *rows;
	int			right = 0;
	int			left = 0;

	free(text);
	hits[forest->trees[0].first_node] = 100;
	hits[forest->trees[0].first_node + root->right] = 100;
	rows = TuneSynthesizeRows(forest, &profile, 1000, 3, &status);
	for (int r = 0; r < 1000; r++)
		right += !ForestNodeGoesLeft(forest, root, rows[r * forest->num_features + root->feature]);
	CHECK_MSG(right == 1000, "%d of 1000 rows go right at the profiled root", right);
	free(rows);
	rows = TuneSynthesizeRows(forest, NULL, 1000, 3, &status);
	for (int r = 0; r < 1000; r++)
		left += ForestNodeGoesLeft(forest, root, rows[r * forest->num_features + root->feature]);
	CHECK_MSG(left > 100 && left < 900, "without a profile %d of 1000 rows go left", left);
	free(rows);
	free(hits);
	ForestFree(forest);
}

int
main(void)
{
	TestCpuSpace();
	TestGpuSpace();
	TestFakeSearch();
	TestAgreement();
	TestSynthesizeFromProfile();
	RuntimeSetMaxThreads(1);
	TestMeasure("test/fixtures/binary_logistic.json", 64, 0);
	TestMeasure("test/fixtures/categorical.json", 1024, 0);
	TestMeasure("test/fixtures/multi_softprob.json", 1, 0);
	TestMeasure("test/fixtures/lightgbm_small.txt", 1024, 0);
	TestMeasure("test/fixtures/deep_tree.json", 256, 7);
	TestMeasure("shared:asprasad_treebeard/xgb_models--higgs_xgb_model_save.json", 512, 29);
	UNIT_DONE();
}
