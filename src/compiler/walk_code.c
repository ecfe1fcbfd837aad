/*
 * walk_code.c
 *		The code walk strategy (walk.h), codeWalk(i, nodes, form): the top
 *		of each tree compiled into code, the rest walked from the buffers;
 *		in the bitvector form whole small trees as leaf bitvectors
 *		(walk_code_bits.c).
 *
 * Its directive takes up to SCHEDULE_MAX_CODE_NODES splits per tree and a
 * form; the branchy and select forms need every loop over trees around the
 * walk specialized (MIR checks it here), the bitvector form does not.  It
 * is the default for LightGBM's forests (CodeDefault, below) and three of
 * the tuner's walks.
 *
 * Preconditions: as for every walk op (codegen_walk.c); the walk's trees
 * are known at compile time (MirBuild checked that every loop over trees
 * around it is specialized, so each lane's HIR position is a constant) and
 * the layout says where each HIR node's record is (ReprBuffers.record_of).
 * With tiled trees (no split records) the op is walked in lock-step; a
 * lane whose tree did not fold to a constant is walked from the buffers as
 * earlyExitWalk walks it.
 *
 * The buffer walks load every node's threshold and feature, and a hop
 * waits for the load before it can compare.  lleaves and TL2cgen instead
 * write each split into code, thresholds and features as immediates, so
 * that a hop is a feature load and a compare, and with branches the CPU
 * predicts the next node before the compare is done.  Code grows with the
 * model, though, and so does the time LLVM takes to compile it; so only
 * the top of each tree goes into code: codeWalk(i, n, form) takes n splits
 * per tree, breadth first from the root, or, with a profile, the n that
 * most rows visited (greedily, so the top stays connected to the root).
 * Below it the walk goes to the buffers and walks the tree as the
 * early-exit walk does (see ColdEntry).
 * CODEGEN_MAX_CODE_NODES bounds the splits of all trees together; trees
 * past it are walked from the buffers alone.
 *
 * Two forms.  branchy: a conditional branch per split, leaves as constants
 * flowing into one phi; a split whose children are both leaves picks its
 * leaf with a select instead (as lleaves does), so the last, least
 * predictable decision of a path costs no misprediction; blocks are laid
 * out depth first, so that every split falls through to one child and
 * LLVM's fast instruction selection, which does not reorder blocks, emits
 * one jump per split, not two (both together make mtpl2's whole trees in
 * code walk faster).  select: every split of the top is compared (the
 * compares are independent, so they overlap), and the leaf value and the
 * buffer record to go on from are chosen by selects, with one branch, to
 * the buffer walk, where the top does not end in a leaf.
 *
 * The decisions are the interpreter's (interpret.c), written with the
 * split's own constants: x widened to double (exact for float32 forests)
 * and compared with the double threshold, LT, LE or EQ (hir.c rewrote GE,
 * GT and NE as those with the children swapped); NAN rule: NaN takes the
 * default child, which an unordered compare gives for free when it is the
 * left one; ZERO rule: NaN or |x| <= (double) 1e-35f takes the default;
 * NONE rule: NaN compares as 0, decided at compile time; categorical
 * splits: NaN takes the default, otherwise the category (or -1) is looked
 * up in the split's bitset in the category words, bounds checked.  Padding
 * splits of the HIR (both children copies of one subtree) are skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/text.h"
#include "silvan/tune.h"

/* Splits in code per function, about; trees per function at most */
#define CODE_WALK_GROUP_NODES	256
#define CODE_WALK_MAX_GROUP		64
/* Distinct features of a tree's top read once at its entry, at most */
#define CODE_WALK_MAX_PRELOAD	16

/* ---- the schedule language ---- */

static const char *const code_forms[] = {"branchy", "select", "bitvector", NULL};

/* codeWalk(i, nodes, form): 1 to SCHEDULE_MAX_CODE_NODES splits per tree */
static bool
CodeCheckArgs(int d, const int64_t *values, WalkRefusal *why)
{
	(void) d;
	if (values[0] >= 1 && values[0] <= SCHEDULE_MAX_CODE_NODES)
		return true;
	why->message = "invalid code walk size";
	snprintf(why->detail, sizeof(why->detail), "%lld splits per tree is not between 1 and %d.",
			 (long long) values[0], SCHEDULE_MAX_CODE_NODES);
	return false;
}

/* Set the splits per tree and the form */
static void
CodeApply(IndexVar *var, int d, const int64_t *values)
{
	(void) d;
	var->walk_args[CODE_WALK_NODES] = (int32_t) values[0];
	var->walk_args[CODE_WALK_FORM] = (int32_t) values[1];
}

/* codeWalk nodes form */
static int
CodeFlags(const IndexVar *var, WalkFlag *flags)
{
	int32_t		form = var->walk_args[CODE_WALK_FORM];

	flags[0] = (WalkFlag) {"codeWalk", var->walk_args[CODE_WALK_NODES],
	code_forms[form >= 0 && form <= CODE_WALK_BITVECTOR ? form : 0]};
	return 1;
}

/* ---- MIR ---- */

/* Is the walk op in the bitvector form? */
bool
CgIsBitvectorWalk(const MirOp *op)
{
	return op->kind == MIR_WALK && op->walk == WalkKindOf(&WalkCode) &&
		op->walk_args[CODE_WALK_FORM] == CODE_WALK_BITVECTOR;
}

/*
 * The branchy and select forms need their tree at compile time: every
 * loop over trees on the path specialized
 */
static bool
CodeCheckPath(const Schedule *s, const MirOp *walk, const MirOp *loop, SilvanStatus *status)
{
	if (CgIsBitvectorWalk(walk))
		return true;
	for (const MirOp *p = loop; p != NULL; p = p->parent)
		if (p->index_kind == INDEX_TREE && !p->specialize)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
							  "codeWalk(%s) compiles each tree's top into code, so the tree "
							  "must be known at compile time: add specialize(%s)%s.",
							  s->vars[loop->var].name, s->vars[p->var].name,
							  p->parallel ? " and do not make it parallel" : "");
	return true;
}

/* Remainders: four rows, but none for bitvectors (fewer loops to compile per tree) */
static int
CodeRemainders(const MirOp *walk, int32_t *widths)
{
	if (CgIsBitvectorWalk(walk) || walk->width <= MIR_REMAINDER_STEP)
		return 0;
	widths[0] = MIR_REMAINDER_STEP;
	return 1;
}

/* What goes into code, in the walk's line */
static void
CodeDescribe(TextBuf *buf, const Mir *mir, const MirOp *walk, int part)
{
	int32_t		nodes = walk->walk_args[CODE_WALK_NODES];

	if (part != WALK_DESCRIBE_ARGS)
		return;
	if (CgIsBitvectorWalk(walk))
		TextAppend(buf, ", codeWalk: trees of up to %d splits and 64 leaves in code "
				   "(leaf bitvectors), others from the buffers", nodes);
	else
		TextAppend(buf, ", codeWalk: top %d splits in code (%s%s), then buffers", nodes,
				   walk->walk_args[CODE_WALK_FORM] == CODE_WALK_SELECT ? "selects" : "branches",
				   mir->profile ? ", hottest by profile" : "");
}

/* Tiled trees have no split records to compile */
static void
CodeFinish(Mir *mir, const Hir *hir, const MirOp *walk)
{
	if (hir->tiled != NULL)
		MirNote(mir, "codeWalk(%s): trees are tiled, so they are walked from the buffers",
				mir->schedule->vars[walk->parent->var].name);
}

/* Every form compiles trees into code */
static bool
CodeTreesInCode(const MirOp *walk)
{
	(void) walk;
	return true;
}

/* ---- the default schedule ---- */

/* See schedule.h */
bool
ScheduleCodeBlocksText(int32_t row_tile, bool parallel, int32_t block, int64_t splits,
					   const char *form, char *text, size_t size)
{
	int			n;

	if (row_tile > 0)
		n = snprintf(text, size,
					 "tile(batch, b0, b1, %d)\ntile(tree, t0, t1, %d)\nreorder(b0, t0, b1, t1)\n%s"
					 "specialize(t0)\nspecialize(t1)\ncodeWalk(t1, %lld, %s)\n",
					 row_tile, block, parallel ? "parallel(b0)\n" : "", (long long) splits, form);
	else
		n = snprintf(text, size,
					 "tile(tree, t0, t1, %d)\nreorder(t0, batch, t1)\n"
					 "specialize(t0)\nspecialize(t1)\ncodeWalk(t1, %lld, %s)\n",
					 block, (long long) splits, form);
	return n > 0 && (size_t) n < size;
}

/*
 * See schedule.h.  A forest of many trees also gets at most about
 * SCHEDULE_CODE_MAX_BLOCKS blocks: each block reads the row's features
 * again, and on mtpl2 (1000 trees, whole in code) fewer, larger blocks
 * walk faster for the same compile time; on NYC_taxi and boston (100
 * trees) blocks larger than SCHEDULE_CODE_BLOCK_SPLITS gives are slower
 */
int32_t
ScheduleCodeBlockTrees(int64_t splits_per_tree, int32_t num_trees)
{
	int64_t		block = SCHEDULE_CODE_BLOCK_SPLITS / (splits_per_tree > 0 ? splits_per_tree : 1);
	int64_t		fewest = ((int64_t) num_trees + SCHEDULE_CODE_MAX_BLOCKS - 1) /
		SCHEDULE_CODE_MAX_BLOCKS;

	if (block < fewest)
		block = fewest;
	if (block > 64)
		block = 64;
	if (block > num_trees)
		block = num_trees;
	return block < 1 ? 1 : (int32_t) block;
}


/* Deep LightGBM forests: code walks, this many splits of all trees in code */
#define CODE_DEFAULT_DEEP_DEPTH		10
#define CODE_DEFAULT_SPLITS			32768
#define CODE_DEFAULT_ROW_TILE		256
#define CODE_DEFAULT_BITS_MAX_SPLITS	32768	/* room for mtpl2's 30,000 */
#define CODE_DEFAULT_BITS_MIN_BATCH		64
#define CODE_DEFAULT_BITS_SPECIALIZE_SPLITS	7	/* trees of at most 8 leaves */
#define CODE_DEFAULT_BITS_SPECIALIZE_TREES	256 /* a function each */

/*
 * Deep LightGBM forests (grown leaf-wise: deep, unbalanced trees of few
 * leaves) are not walked in lock-step, which pads every walk to the
 * deepest path.  They become code as lleaves compiles them
 * (ScheduleCodeBlocksText): blocks of trees, each a function that walks
 * the rows of a 256-row tile through its trees, thresholds and features
 * as immediates, the row's features read once per tree block.  At most
 * CODE_DEFAULT_SPLITS splits of all trees go into code (compiled
 * with LLVM's fast code generation above COMPILE_FULL_CODEGEN_SPLITS
 * splits); a larger forest gets the top of each tree in code and walks the
 * rest from the buffers.  mtpl2 (1000 trees of 31 leaves, 30,000 splits)
 * is whole trees in code with this budget, which walks faster than the top
 * of each tree in code and, for deep trees, than the early-exit walk, and
 * still compiles in a small fraction of lleaves' own compile.  false for
 * other forests, whose default stays the lock-step one.
 */
static bool
CodeDeepDefault(const Forest *forest, const HostProfile *host, Schedule *schedule)
{
	char		text[512];
	int64_t		largest;
	int64_t		splits;
	int64_t		per_tree;
	SilvanStatus status;

	if (forest->source != FOREST_SOURCE_LIGHTGBM || forest->max_depth < CODE_DEFAULT_DEEP_DEPTH ||
		forest->num_trees > MIR_MAX_SPECIALIZED || forest->num_trees < 1)
		return false;
	splits = ScheduleCountSplits(forest, &largest);
	per_tree = splits <= CODE_DEFAULT_SPLITS ? largest :
		CODE_DEFAULT_SPLITS / forest->num_trees;
	if (per_tree > SCHEDULE_MAX_CODE_NODES)
		per_tree = SCHEDULE_MAX_CODE_NODES;
	if (per_tree < 1)
		per_tree = 1;
	return ScheduleCodeBlocksText(CODE_DEFAULT_ROW_TILE, true,
								  ScheduleCodeBlockTrees(per_tree, forest->num_trees), per_tree,
								  HostProfileCodeWalkForm(host), text, sizeof(text)) &&
		ScheduleParse(text, schedule, &status);
}

/*
 * LightGBM forests of small trees (at most 64 leaves each, LightGBM's
 * default is 31), categorical sets no wider than CODE_WALK_BITS_MAX_KEYS,
 * CODE_DEFAULT_BITS_MAX_SPLITS splits in all, scored in batches of at least
 * CODE_DEFAULT_BITS_MIN_BATCH rows: every tree as leaf bitvectors
 * (walk_code_bits.c), eight rows a vector, trees outside the rows of a
 * 256-row tile so that one tree's function runs over the tile, the tile
 * staged feature-major (cache(b0)) so that eight rows' feature is one
 * load.  On LightGBM's small trees (NYC_taxi, boston, lleaves'
 * multiclass) this walks faster than the blocked code walk and than
 * lock-step.  Categorical splits read a tree's category table per feature
 * (lleaves' airline, sets of up to 288 categories), which is faster, and
 * much faster to compile, than testing lane by lane, set by set; staging
 * the tile helps further.  A smaller batch would compute eight lanes for
 * fewer rows.  mtpl2 (1,000 trees of up to 31 leaves, 30,000 splits, two
 * categorical features) walks faster in bitvectors than in the blocked
 * code walk with whole trees in code, and compiles in about as long.  Its
 * trees are one block each, so they take the straight-line pass list
 * (jit.c) and LLVM's fast code generation (categorical splits), its module
 * is emitted in two halves on two threads (jit_split.c) and its category
 * tables are read by gathers (walk_code_bits.c); these keep its compile
 * short enough for CODE_DEFAULT_BITS_MAX_SPLITS.  Forests of more splits would
 * compile for longer in proportion, so they keep the code walk.
 *
 * Forests of trees of at most CODE_DEFAULT_BITS_SPECIALIZE_SPLITS splits also
 * specialize the tree loop: each tree becomes one function that runs its
 * code over the whole tile, the tree's code in the loop itself
 * (walk_code_bits.c, EmitTreeInPlace: its thresholds and masks stay in
 * registers across the tile's rows, no call per eight rows).  Small trees
 * (lleaves' multiclass, 4-6 leaves) walk faster this way at a somewhat
 * longer compile; on trees of 18-31 leaves (nyc_taxi, airline, boston)
 * specializing gains nothing and costs compile time.  Bitvector
 * remainders have no loop of four (MirStepWidths), which keeps the loops
 * LLVM compiles per tree few.  Each tree is a function of its own, so
 * only forests of at most CODE_DEFAULT_BITS_SPECIALIZE_TREES.
 */
static bool
CodeBitvectorDefault(const Forest *forest, int32_t batch_size, Schedule *schedule)
{
	int64_t		largest;
	SilvanStatus status;

	if (forest->source != FOREST_SOURCE_LIGHTGBM || forest->num_trees < 1 ||
		batch_size < CODE_DEFAULT_BITS_MIN_BATCH || ForestWidestCategorySpan(forest) > CODE_WALK_BITS_MAX_KEYS ||
		ScheduleCountSplits(forest, &largest) > CODE_DEFAULT_BITS_MAX_SPLITS || largest > 63)
		return false;
	return ScheduleParse(largest <= CODE_DEFAULT_BITS_SPECIALIZE_SPLITS &&
						 forest->num_trees <= CODE_DEFAULT_BITS_SPECIALIZE_TREES ?
						 "tile(batch, b0, b1, 256)\ntile(b1, b2, b3, 8)\n"
						 "reorder(b0, tree, b2, b3)\nparallel(b0)\ncache(b0)\nspecialize(tree)\n"
						 "interleave(b3)\ncodeWalk(b3, 63, bitvector)\n" :
						 "tile(batch, b0, b1, 256)\ntile(b1, b2, b3, 8)\n"
						 "reorder(b0, tree, b2, b3)\nparallel(b0)\ncache(b0)\ninterleave(b3)\n"
						 "codeWalk(b3, 63, bitvector)\n", schedule, &status);
}

/* LightGBM's forests: small trees as bitvectors, else deep ones as code */
static bool
CodeDefault(const Forest *forest, int32_t batch_size, const HostProfile *host,
			Schedule *schedule)
{
	return CodeBitvectorDefault(forest, batch_size, schedule) ||
		CodeDeepDefault(forest, host, schedule);
}

/* ---- the tuner ---- */

/*
 * Are code walks in the space?  For small forests, and for deep ones
 * (LightGBM's, grown leaf-wise), whose walks the lock-step pads most
 */
static bool
CodeWalkFits(const TuneShape *shape)
{
	return shape->num_trees <= MIR_MAX_SPECIALIZED &&
		(shape->total_splits <= TUNE_CODE_WHOLE_SPLITS ||
		 shape->max_depth >= TUNE_CODE_MIN_DEPTH);
}

/*
 * Splits of each tree a code walk puts in code: whole trees up to
 * TUNE_CODE_SPLITS splits in all, else an equal share of it
 */
static int64_t
CodeSplitsPerTree(const TuneShape *shape)
{
	int64_t		n = shape->total_splits <= TUNE_CODE_SPLITS ? shape->largest_tree_splits :
		TUNE_CODE_SPLITS / (shape->num_trees > 0 ? shape->num_trees : 1);

	if (n > SCHEDULE_MAX_CODE_NODES)
		n = SCHEDULE_MAX_CODE_NODES;
	return n > 0 ? n : 1;
}

/* Does the point run trees in parallel? */
static bool
ParallelTrees(const TuneCpuPoint *p)
{
	return p->parallel == TUNE_PARALLEL_TREES || p->parallel == TUNE_PARALLEL_BOTH;
}

/*
 * Branchy and select walks: a forest code walks fit, no blocks of trees
 * or parallel trees, and, interleaved, each lane has its own copy of
 * every tree's top: TUNE_CODE_SPLITS in all
 */
static bool
CodeTopValid(const TuneShape *shape, const TuneCpuPoint *p)
{
	return CodeWalkFits(shape) && !ParallelTrees(p) && p->blocks == TUNE_BLOCKS_NONE &&
		!(p->interleave > 1 &&
		  (int64_t) p->interleave * CodeSplitsPerTree(shape) * shape->num_trees > TUNE_CODE_SPLITS);
}

/* The heuristic's first phase: branchy walks one row at a time */
static bool
CodeBranchyFirst(TuneCpuPoint *p)
{
	return p->interleave == 1;
}

/* The heuristic's first phase: no select walks */
static bool
CodeSelectFirst(TuneCpuPoint *p)
{
	(void) p;
	return false;
}

/* One row at a time: blocks of trees, each a function over the row tile */
static int
CodeRowsNest(const WalkTuning *tuning, const TuneShape *shape, const TuneCpuPoint *p,
			 char *text, size_t size)
{
	int64_t		splits = CodeSplitsPerTree(shape);

	if (p->interleave > 1)
		return 0;
	return ScheduleCodeBlocksText(p->row_tile, p->parallel == TUNE_PARALLEL_ROWS,
								  ScheduleCodeBlockTrees(splits, shape->num_trees), splits,
								  tuning->word, text, size) ? 1 : -1;
}

/* codeWalk(loop, splits, form) */
static bool
CodeTopDirective(const WalkTuning *tuning, const TuneShape *shape, const char *loop,
				 char *text, size_t size)
{
	int			n = snprintf(text, size, "codeWalk(%s, %lld, %s)\n", loop,
							 (long long) CodeSplitsPerTree(shape), tuning->word);

	return n > 0 && (size_t) n < size;
}

/*
 * Bitvector walks: trees of at most 64 leaves, categorical sets narrow
 * enough for its category tables (wider ones are compared lane by lane:
 * slow to run and to compile), few enough splits to compile in a few
 * seconds; rows in vectors (interleaved), trees through the table (no
 * specialize, no parallel trees)
 */
static bool
CodeBitvectorValid(const TuneShape *shape, const TuneCpuPoint *p)
{
	return shape->widest_category_span <= CODE_WALK_BITS_MAX_KEYS &&
		shape->largest_tree_splits <= 63 && shape->total_splits <= TUNE_BITS_MAX_SPLITS &&
		p->interleave > 1 && !ParallelTrees(p);
}

/* codeWalk(loop, 63, bitvector) */
static bool
CodeBitvectorDirective(const WalkTuning *tuning, const TuneShape *shape, const char *loop,
					   char *text, size_t size)
{
	int			n = snprintf(text, size, "codeWalk(%s, 63, %s)\n", loop, tuning->word);

	(void) shape;
	return n > 0 && (size_t) n < size;
}

/* ---- code generation ---- */

/*
 * Splits of tree t in code, min(op's, the tree's);
 * the module's own cap (CODEGEN_MAX_CODE_NODES) is left out, so forests
 * past it are overestimated
 */
static int64_t
CostCodeSplits(const CostModel *model, const MirOp *op, int32_t t)
{
	int64_t		splits;

	if (t < 0 || t >= model->hir->num_trees)
		return 0;
	splits = (model->hir->trees[t].num_nodes - 1) / 2;
	return splits > op->walk_args[CODE_WALK_NODES] ? op->walk_args[CODE_WALK_NODES] : splits;
}


/* One tree being compiled for one lane */
typedef struct CodeTree
{
	CodegenContext *cg;
	const Hir  *hir;
	const HirTree *tree;
	const Forest *forest;
	uint8_t    *in_code;		/* per tree-local HIR node */
	LLVMValueRef v_row_ptr;
	/* branchy: where leaves and buffer entries meet */
	LLVMBasicBlockRef b_done;
	LLVMBasicBlockRef b_cold;
	LLVMValueRef v_value;		/* phi in b_done */
	LLVMValueRef v_cold_index;	/* phis in b_cold: record, unchecked hops */
	LLVMValueRef v_cold_fixed;
	bool		has_cold;
	/* features of the top read at the tree's entry (see Preload) */
	int32_t		num_pre;
	int32_t		pre_feature[CODE_WALK_MAX_PRELOAD];
	LLVMValueRef pre_x[CODE_WALK_MAX_PRELOAD];	/* the value */
	LLVMValueRef pre_valid[CODE_WALK_MAX_PRELOAD];	/* categorical: a category? */
	LLVMValueRef pre_category[CODE_WALK_MAX_PRELOAD];	/* i32, 0 if not */
	LLVMValueRef pre_nan[CODE_WALK_MAX_PRELOAD];
} CodeTree;

/* The HIR node a walk really reaches from tree-local h: padding skipped */
static int32_t
Resolve(const CodeTree *ct, int32_t h)
{
	return HirSkipPadding(ct->hir, ct->tree, h);
}

/* The Forest node behind tree-local HIR node h */
static const ForestNode *
SourceNode(const CodeTree *ct, int32_t h)
{
	return &ct->forest->nodes[ct->hir->nodes[ct->tree->first_node + h].source];
}

/* Is tree-local HIR node h (resolved) a leaf? */
static bool
IsLeaf(const CodeTree *ct, int32_t h)
{
	return SourceNode(ct, h)->kind == FOREST_NODE_LEAF;
}

/* A max-heap of (key, node) for picking the top */
typedef struct TopHeap
{
	int64_t    *keys;
	int32_t    *nodes;
	int32_t		n;
} TopHeap;

/* Push onto the heap (room for every node of the tree) */
static void
HeapPush(TopHeap *h, int64_t key, int32_t node)
{
	int32_t		i = h->n++;

	while (i > 0 && h->keys[(i - 1) / 2] < key)
	{
		h->keys[i] = h->keys[(i - 1) / 2];
		h->nodes[i] = h->nodes[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->keys[i] = key;
	h->nodes[i] = node;
}

/* Pop the largest key's node */
static int32_t
HeapPop(TopHeap *h)
{
	int32_t		top = h->nodes[0];
	int64_t		key = h->keys[--h->n];
	int32_t		node = h->nodes[h->n];
	int32_t		i = 0;

	for (;;)
	{
		int32_t		c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->keys[c + 1] > h->keys[c])
			c++;
		if (h->keys[c] <= key)
			break;
		h->keys[i] = h->keys[c];
		h->nodes[i] = h->nodes[c];
		i = c;
	}
	if (h->n > 0)
	{
		h->keys[i] = key;
		h->nodes[i] = node;
	}
	return top;
}

/*
 * Mark the splits that go into code: up to budget, hottest first with a
 * profile, else breadth first (a first-in first-out key); false when out
 * of memory
 */
static bool
PickTop(CodeTree *ct, int64_t budget, const ForestProfile *profile)
{
	int32_t		n = ct->tree->num_nodes;
	const HirNode *nodes = ct->hir->nodes + ct->tree->first_node;
	TopHeap		heap = {
		.keys = malloc(sizeof(int64_t) * ((size_t) n + 1)),
		.nodes = malloc(sizeof(int32_t) * ((size_t) n + 1))
	};
	int64_t		seq = 0;
	int32_t		root = Resolve(ct, 0);

	ct->in_code = calloc((size_t) n + 1, 1);
	if (heap.keys == NULL || heap.nodes == NULL || ct->in_code == NULL)
	{
		free(heap.keys);
		free(heap.nodes);
		return false;
	}
	if (!IsLeaf(ct, root))
		HeapPush(&heap, 0, root);
	while (heap.n > 0 && budget > 0)
	{
		int32_t		h = HeapPop(&heap);

		ct->in_code[h] = 1;
		budget--;
		for (int e = 0; e < 2; e++)
		{
			int32_t		c = Resolve(ct, nodes[h].left + e);

			if (IsLeaf(ct, c))
				continue;
			seq++;
			HeapPush(&heap, profile ? profile->node_hits[nodes[c].source] : -seq, c);
		}
	}
	free(heap.keys);
	free(heap.nodes);
	return true;
}

/* Feature f of the row, in the forest's precision */
static LLVMValueRef
LoadFeature(CodeTree *ct, int32_t f)
{
	CodegenContext *cg = ct->cg;
	LLVMValueRef v_f = CgInt64(cg, f);

	return CgLoad(cg, cg->t_value, LLVMBuildGEP2(cg->builder, cg->t_value, ct->v_row_ptr,
												 &v_f, 1, ""), "v_x");
}

/* The preload slot of feature f, or -1 */
static int32_t
PreloadSlot(const CodeTree *ct, int32_t f)
{
	for (int32_t i = 0; i < ct->num_pre; i++)
		if (ct->pre_feature[i] == f)
			return i;
	return -1;
}

/* Feature f of the row: preloaded, or loaded here */
static LLVMValueRef
FeatureValue(CodeTree *ct, int32_t f)
{
	int32_t		slot = PreloadSlot(ct, f);

	return slot >= 0 ? ct->pre_x[slot] : LoadFeature(ct, f);
}

/* v_c as a vector like v_like (a splat), or v_c itself when v_like is scalar */
static LLVMValueRef
SplatLike(LLVMValueRef v_c, LLVMValueRef v_like)
{
	LLVMTypeRef t = LLVMTypeOf(v_like);
	LLVMValueRef lanes[MIR_MAX_WIDTH];
	unsigned	n;

	if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
		return v_c;
	n = LLVMGetVectorSize(t);
	for (unsigned k = 0; k < n && k < MIR_MAX_WIDTH; k++)
		lanes[k] = v_c;
	return LLVMConstVector(lanes, n);
}

/* v (a scalar value) splatted to a vector like v_like, or v itself when v_like is scalar */
static LLVMValueRef
SplatValue(LLVMBuilderRef b, LLVMValueRef v, LLVMValueRef v_like)
{
	LLVMTypeRef t = LLVMTypeOf(v_like);

	if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
		return v;
	return CgSplat(b, v, LLVMGetVectorSize(t));
}

/* type t as a vector like v_like, or t itself when v_like is scalar */
static LLVMTypeRef
TypeLike(LLVMTypeRef t, LLVMValueRef v_like)
{
	LLVMTypeRef t_like = LLVMTypeOf(v_like);

	return LLVMGetTypeKind(t_like) == LLVMVectorTypeKind ?
		LLVMVectorType(t, LLVMGetVectorSize(t_like)) : t;
}

/*
 * The category that x (forest precision) names: *v_valid when it is one
 * (x in (-1, FOREST_MAX_CATEGORY), or [0, ...) for XGBoost), *v_c the
 * truncated value (0 when not valid), *v_nan when x is NaN
 */
static void
CategoryOf(CodeTree *ct, LLVMValueRef v_x, LLVMValueRef *v_valid, LLVMValueRef *v_c,
		   LLVMValueRef *v_nan)
{
	CodegenContext *cg = ct->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_double = LLVMDoubleTypeInContext(cg->context);
	LLVMValueRef v_xd = cg->forest->precision == FOREST_FLOAT32 ?
		LLVMBuildFPExt(b, v_x, TypeLike(t_double, v_x), "") : v_x;
	LLVMValueRef v_zero = SplatLike(LLVMConstReal(t_double, 0.0), v_xd);
	bool		xgb = cg->forest->source == FOREST_SOURCE_XGBOOST;

	*v_valid = LLVMBuildAnd(b,
							xgb ? LLVMBuildFCmp(b, LLVMRealOGE, v_xd, v_zero, "") :
							LLVMBuildFCmp(b, LLVMRealOGT, v_xd,
										  SplatLike(LLVMConstReal(t_double, -1.0), v_xd), ""),
							LLVMBuildFCmp(b, LLVMRealOLT, v_xd,
										  SplatLike(LLVMConstReal(t_double, (double) FOREST_MAX_CATEGORY),
													v_xd), ""), "");
	*v_c = LLVMBuildFPToSI(b, LLVMBuildSelect(b, *v_valid, v_xd, v_zero, ""),
						   TypeLike(cg->t_i32, v_xd), "v_category");
	*v_nan = LLVMBuildFCmp(b, LLVMRealUNO, v_xd, v_xd, "v_nan");
}

/*
 * Read the features of the top once, at the tree's entry: the first
 * CODE_WALK_MAX_PRELOAD distinct ones, breadth first, with their category
 * where a categorical split of the top reads them.  The entry dominates
 * the whole tree, and the next trees of the same row too, so EarlyCSE
 * also merges the reads of consecutive trees: a row's features end up
 * read once per function, as lleaves passes them in registers.
 */
static void
Preload(CodeTree *ct)
{
	const HirNode *nodes = ct->hir->nodes + ct->tree->first_node;
	bool		categorical[CODE_WALK_MAX_PRELOAD] = {false};

	ct->num_pre = 0;
	for (int32_t h = 0; h < ct->tree->num_nodes; h++)
	{
		const ForestNode *node;
		int32_t		slot;

		if (!ct->in_code[h] || nodes[h].padding)
			continue;
		node = SourceNode(ct, h);
		slot = PreloadSlot(ct, node->feature);
		if (slot < 0 && ct->num_pre < CODE_WALK_MAX_PRELOAD)
		{
			slot = ct->num_pre++;
			ct->pre_feature[slot] = node->feature;
		}
		if (slot >= 0 && node->kind == FOREST_NODE_CATEGORICAL)
			categorical[slot] = true;
	}
	for (int32_t i = 0; i < ct->num_pre; i++)
	{
		ct->pre_x[i] = LoadFeature(ct, ct->pre_feature[i]);
		ct->pre_valid[i] = NULL;
		if (categorical[i])
			CategoryOf(ct, ct->pre_x[i], &ct->pre_valid[i], &ct->pre_category[i],
					   &ct->pre_nan[i]);
	}
}

/* Is the set of categorical node an immediate (at most 64 categories)? */
static bool
CategoriesImmediate(CodegenContext *cg, const ForestNode *node)
{
	return node->category_words >= 1 && node->category_words <= 2 &&
		node->category_offset + node->category_words <= cg->forest->num_category_words;
}

/* Bit c (i32, c < 64) of a set of at most 64 categories, an immediate */
static LLVMValueRef
InSetImmediate(CodeTree *ct, const ForestNode *node, LLVMValueRef v_c)
{
	CodegenContext *cg = ct->cg;
	LLVMBuilderRef b = cg->builder;
	const uint32_t *words = cg->forest->category_words + node->category_offset;
	uint64_t	set = words[0] | (node->category_words > 1 ? (uint64_t) words[1] << 32 : 0);
	LLVMValueRef v_shift = LLVMBuildZExt(b, LLVMBuildAnd(b, v_c, SplatLike(CgInt32(cg, 63), v_c), ""),
										 TypeLike(cg->t_i64, v_c), "");

	return LLVMBuildTrunc(b, LLVMBuildLShr(b, SplatLike(LLVMConstInt(cg->t_i64, set, false), v_c),
										   v_shift, ""),
						  TypeLike(cg->t_i1, v_c), "");
}

/* Bit c (i32, in range) of the set, read from the category words */
static LLVMValueRef
InSetWords(CodeTree *ct, const ForestNode *node, LLVMValueRef v_c)
{
	CodegenContext *cg = ct->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_word_index = LLVMBuildAdd(b, SplatLike(CgInt64(cg, node->category_offset), v_c),
											 LLVMBuildZExt(b, LLVMBuildLShr(b, v_c,
																			SplatLike(CgInt32(cg, 5), v_c), ""),
														   TypeLike(cg->t_i64, v_c), ""), "");
	LLVMValueRef v_word;
	LLVMValueRef v_bit;

	if (LLVMGetTypeKind(LLVMTypeOf(v_c)) != LLVMVectorTypeKind)
		v_word = CgLoad(cg, cg->t_i32, LLVMBuildGEP2(b, cg->t_i32, cg->v_category_words,
													 &v_word_index, 1, ""), "v_word");
	else
	{
		/* each lane's word, loaded lane by lane */
		v_word = LLVMGetUndef(TypeLike(cg->t_i32, v_c));
		for (unsigned k = 0; k < LLVMGetVectorSize(LLVMTypeOf(v_c)); k++)
		{
			LLVMValueRef v_k = LLVMConstInt(cg->t_i32, k, false);
			LLVMValueRef v_index = LLVMBuildExtractElement(b, v_word_index, v_k, "");

			v_word = LLVMBuildInsertElement(b, v_word,
											CgLoad(cg, cg->t_i32,
												   LLVMBuildGEP2(b, cg->t_i32, cg->v_category_words,
																 &v_index, 1, ""), "v_word"),
											v_k, "");
		}
	}
	v_bit = LLVMBuildAnd(b, LLVMBuildLShr(b, v_word,
										  LLVMBuildAnd(b, v_c, SplatLike(CgInt32(cg, 31), v_c), ""), ""),
						 SplatLike(CgInt32(cg, 1), v_c), "");
	return LLVMBuildTrunc(b, v_bit, TypeLike(cg->t_i1, v_c), "");
}

/*
 * Is category c (i32, any value) in the set of categorical split node?
 * A set of at most 64 categories is an immediate; larger ones are read
 * from the category words, at an index kept in range.
 */
static LLVMValueRef
InSet(CodeTree *ct, const ForestNode *node, LLVMValueRef v_c, LLVMValueRef v_valid)
{
	CodegenContext *cg = ct->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_in_range = LLVMBuildAnd(b, v_valid,
										   LLVMBuildICmp(b, LLVMIntULT, v_c,
														 SplatLike(CgInt32(cg, (int64_t) node->category_words * 32),
																   v_c), ""), "");
	bool		immediate = CategoriesImmediate(cg, node);
	LLVMValueRef v_bit = immediate ? InSetImmediate(ct, node, v_c) :
		InSetWords(ct, node, LLVMBuildSelect(b, v_in_range, v_c, SplatLike(CgInt32(cg, 0), v_c), ""));

	return LLVMBuildAnd(b, v_in_range, v_bit, "v_in_set");
}

/* i1 (per lane for vectors): go left at categorical node, given the category */
static LLVMValueRef
CategoryGoesLeft(CodeTree *ct, const ForestNode *node, LLVMValueRef v_valid, LLVMValueRef v_c,
				 LLVMValueRef v_nan)
{
	LLVMBuilderRef b = ct->cg->builder;
	LLVMValueRef v_in = InSet(ct, node, v_c, v_valid);
	LLVMValueRef v_left = node->category_in_left ? v_in : LLVMBuildNot(b, v_in, "");

	return LLVMBuildSelect(b, v_nan,
						   SplatLike(LLVMConstInt(ct->cg->t_i1, node->default_left, false), v_nan),
						   v_left, "v_go_left");
}

/* i1: does the row go left at categorical split node? */
static LLVMValueRef
CategoricalGoesLeft(CodeTree *ct, const ForestNode *node)
{
	int32_t		slot = PreloadSlot(ct, node->feature);
	LLVMValueRef v_valid;
	LLVMValueRef v_c;
	LLVMValueRef v_nan;

	if (slot >= 0 && ct->pre_valid[slot] != NULL)
	{
		v_valid = ct->pre_valid[slot];
		v_c = ct->pre_category[slot];
		v_nan = ct->pre_nan[slot];
	}
	else
		CategoryOf(ct, FeatureValue(ct, node->feature), &v_valid, &v_c, &v_nan);
	return CategoryGoesLeft(ct, node, v_valid, v_c, v_nan);
}

/* Does x OP t hold, for the comparisons left after hir.c (LT, LE, EQ)? */
static bool
CompareHolds(uint8_t compare, double x, double t)
{
	if (compare == FOREST_CMP_EQ)
		return x == t;
	return compare == FOREST_CMP_LE ? x <= t : x < t;
}

/* The fcmp of x OP t; unordered (NaN: true) when nan_true */
static LLVMRealPredicate
ComparePredicate(uint8_t compare, bool nan_true)
{
	if (compare == FOREST_CMP_EQ)
		return nan_true ? LLVMRealUEQ : LLVMRealOEQ;
	if (compare == FOREST_CMP_LE)
		return nan_true ? LLVMRealULE : LLVMRealOLE;
	return nan_true ? LLVMRealULT : LLVMRealOLT;
}

/*
 * i1 (or a vector of i1, one per lane, when v_x is a vector): does x (the
 * split's feature, forest precision) go left at numeric split node?
 */
LLVMValueRef
CgNumericGoesLeft(CodegenContext *cg, const ForestNode *node, LLVMValueRef v_x)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_double = LLVMDoubleTypeInContext(cg->context);
	LLVMValueRef v_xd = cg->forest->precision == FOREST_FLOAT32 ?
		LLVMBuildFPExt(b, v_x, TypeLike(t_double, v_x), "") : v_x;
	LLVMValueRef v_th = SplatValue(b, CgCodeConstant(cg, t_double, node->threshold), v_xd);
	bool		nan_left;

	switch (node->missing)
	{
		case FOREST_MISSING_NAN:
			nan_left = node->default_left;
			break;
		case FOREST_MISSING_NONE:
			nan_left = CompareHolds(node->compare, 0.0, node->threshold);
			break;
		default:
			{
				/* ZERO: NaN reads as 0, and |x| <= 1e-35f takes the default */
				LLVMValueRef v_z = CgCodeConstant(cg, t_double, (double) FOREST_ZERO_THRESHOLD);
				LLVMValueRef v_missing;
				LLVMValueRef v_cmp;

				v_missing = LLVMBuildAnd(b,
										 LLVMBuildFCmp(b, LLVMRealUGE, v_xd,
													   SplatValue(b, LLVMBuildFNeg(b, v_z, ""), v_xd),
													   ""),
										 LLVMBuildFCmp(b, LLVMRealULE, v_xd, SplatValue(b, v_z, v_xd),
													   ""),
										 "v_missing");
				v_cmp = LLVMBuildFCmp(b, ComparePredicate(node->compare, false), v_xd, v_th, "");
				return LLVMBuildSelect(b, v_missing,
									   SplatLike(LLVMConstInt(cg->t_i1, node->default_left, false),
												 v_xd),
									   v_cmp, "v_go_left");
			}
	}
	/* NaN goes left exactly when the unordered compare says so */
	return LLVMBuildFCmp(b, ComparePredicate(node->compare, nan_left), v_xd, v_th, "v_go_left");
}

/* i1: does the row go left at split node (numeric or categorical)? */
static LLVMValueRef
GoesLeft(CodeTree *ct, const ForestNode *node)
{
	if (node->kind == FOREST_NODE_CATEGORICAL)
		return CategoricalGoesLeft(ct, node);
	return CgNumericGoesLeft(ct->cg, node, FeatureValue(ct, node->feature));
}

/*
 * i1, or a vector of i1 when v_x (the split's feature, forest precision)
 * is a vector: does x go left at categorical node?  (Larger sets than an
 * immediate read each lane's word of the category words.)
 */
LLVMValueRef
CgCategoryValueGoesLeft(CodegenContext *cg, const ForestNode *node, LLVMValueRef v_x)
{
	CodeTree	ct = {.cg = cg, .forest = cg->forest};
	LLVMValueRef v_valid;
	LLVMValueRef v_c;
	LLVMValueRef v_nan;

	CategoryOf(&ct, v_x, &v_valid, &v_c, &v_nan);
	return CategoryGoesLeft(&ct, node, v_valid, v_c, v_nan);
}

/*
 * i32 (per lane for vectors): x's key in a table of num_keys + 2 entries
 * over a feature's categorical splits (walk_code_bits.c): its category
 * when that is valid and below num_keys, num_keys when it is no valid
 * category or one no set below num_keys holds, num_keys + 1 for NaN.  The
 * validity test is CategoryOf's, the interpreter's ForestCategoryOf.
 */
LLVMValueRef
CgCategoryKey(CodegenContext *cg, LLVMValueRef v_x, int32_t num_keys)
{
	CodeTree	ct = {.cg = cg, .forest = cg->forest};
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_valid;
	LLVMValueRef v_c;
	LLVMValueRef v_nan;
	LLVMValueRef v_known;

	CategoryOf(&ct, v_x, &v_valid, &v_c, &v_nan);
	v_known = LLVMBuildAnd(b, v_valid,
						   LLVMBuildICmp(b, LLVMIntULT, v_c, SplatLike(CgInt32(cg, num_keys), v_c), ""),
						   "");
	return LLVMBuildSelect(b, v_nan, SplatLike(CgInt32(cg, num_keys + 1), v_c),
						   LLVMBuildSelect(b, v_known, v_c, SplatLike(CgInt32(cg, num_keys), v_c), ""),
						   "v_category_key");
}

/*
 * Enter the buffers below the top: at the record of split h (tree-local,
 * resolved), ReprBuffers.record_of of its global HIR index.  The tree's
 * unchecked hops (ReprTree.fixed) count from the root; h is level hops
 * below it, and every layout puts it there (padding and sparse dummies
 * only ever sit above leaves, never above a split), so only fixed - level
 * of them are left; taking all of them would walk on past leaves.
 */
static void
ColdEntry(CodeTree *ct, int32_t h, LLVMValueRef *v_index, LLVMValueRef *v_fixed)
{
	const ReprTree *tree = &ct->cg->buffers->trees[ct->tree - ct->hir->trees];
	const HirNode *node = &ct->hir->nodes[ct->tree->first_node + h];
	int64_t		record = ct->cg->buffers->record_of[ct->tree->first_node + h];
	int32_t		fixed = tree->fixed - node->level;

	if (record < 0)
	{
		/* a node the layout cannot enter at: the walk decides it all again */
		*v_index = CgInt64(ct->cg, tree->root);
		*v_fixed = CgInt32(ct->cg, tree->fixed);
		return;
	}
	*v_index = CgInt64(ct->cg, record);
	*v_fixed = CgInt32(ct->cg, fixed > 0 ? fixed : 0);
}

/* branchy: emit node h (tree-local) and everything of the top below it */
static void
EmitBranchy(CodeTree *ct, int32_t h)
{
	CodegenContext *cg = ct->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMBasicBlockRef b_here = LLVMGetInsertBlock(b);
	const HirNode *nodes = ct->hir->nodes + ct->tree->first_node;
	const ForestNode *node;

	h = Resolve(ct, h);
	node = SourceNode(ct, h);
	if (node->kind == FOREST_NODE_LEAF)
	{
		LLVMValueRef v = CgCodeConstant(cg, cg->t_value, node->leaf_value);

		LLVMAddIncoming(ct->v_value, &v, &b_here, 1);
		LLVMBuildBr(b, ct->b_done);
	}
	else if (!ct->in_code[h])
	{
		LLVMValueRef v_index;
		LLVMValueRef v_fixed;

		ColdEntry(ct, h, &v_index, &v_fixed);
		LLVMAddIncoming(ct->v_cold_index, &v_index, &b_here, 1);
		LLVMAddIncoming(ct->v_cold_fixed, &v_fixed, &b_here, 1);
		ct->has_cold = true;
		LLVMBuildBr(b, ct->b_cold);
	}
	else if (IsLeaf(ct, Resolve(ct, nodes[h].left)) && IsLeaf(ct, Resolve(ct, nodes[h].left + 1)))
	{
		/* both children leaves: a select, no branch to mispredict */
		LLVMValueRef v_go_left = GoesLeft(ct, node);
		LLVMValueRef v_left = CgCodeConstant(cg, cg->t_value,
											 SourceNode(ct, Resolve(ct, nodes[h].left))->leaf_value);
		LLVMValueRef v_right = CgCodeConstant(cg, cg->t_value,
											  SourceNode(ct, Resolve(ct, nodes[h].left + 1))->leaf_value);
		LLVMValueRef v = LLVMBuildSelect(b, v_go_left, v_left, v_right, "v_code_value");

		b_here = LLVMGetInsertBlock(b);
		LLVMAddIncoming(ct->v_value, &v, &b_here, 1);
		LLVMBuildBr(b, ct->b_done);
	}
	else
	{
		LLVMBasicBlockRef b_left = CgNewBlock(cg, "b_code_left");
		LLVMBasicBlockRef b_right = CgNewBlock(cg, "b_code_right");

		LLVMBuildCondBr(b, GoesLeft(ct, node), b_left, b_right);
		/* depth first: each split falls through to a child, no jump */
		LLVMMoveBasicBlockAfter(b_left, LLVMGetLastBasicBlock(cg->fn.function));
		LLVMPositionBuilderAtEnd(b, b_left);
		EmitBranchy(ct, nodes[h].left);
		LLVMMoveBasicBlockAfter(b_right, LLVMGetLastBasicBlock(cg->fn.function));
		LLVMPositionBuilderAtEnd(b, b_right);
		EmitBranchy(ct, nodes[h].left + 1);
	}
}

/*
 * select: the value of the top below node h (tree-local): the leaf value
 * reached, and the record to go on from in the buffers (-1: none) with its
 * unchecked hops
 */
static void
EmitSelect(CodeTree *ct, int32_t h, LLVMValueRef *v_value, LLVMValueRef *v_index,
		   LLVMValueRef *v_fixed)
{
	CodegenContext *cg = ct->cg;
	LLVMBuilderRef b = cg->builder;
	const HirNode *nodes = ct->hir->nodes + ct->tree->first_node;
	const ForestNode *node;
	LLVMValueRef v_go_left;
	LLVMValueRef lv, li, lf, rv, ri, rf;

	h = Resolve(ct, h);
	node = SourceNode(ct, h);
	if (node->kind == FOREST_NODE_LEAF)
	{
		*v_value = CgCodeConstant(cg, cg->t_value, node->leaf_value);
		*v_index = CgInt64(cg, -1);
		*v_fixed = CgInt32(cg, 0);
		return;
	}
	if (!ct->in_code[h])
	{
		*v_value = CgValue(cg, 0.0);
		ColdEntry(ct, h, v_index, v_fixed);
		ct->has_cold = true;
		return;
	}
	v_go_left = GoesLeft(ct, node);
	EmitSelect(ct, nodes[h].left, &lv, &li, &lf);
	EmitSelect(ct, nodes[h].left + 1, &rv, &ri, &rf);
	*v_value = LLVMBuildSelect(b, v_go_left, lv, rv, "v_code_value");
	*v_index = LLVMBuildSelect(b, v_go_left, li, ri, "v_code_cold");
	*v_fixed = LLVMBuildSelect(b, v_go_left, lf, rf, "");
}

/*
 * The cold walk, one function for all trees of the kernel: T cold(args,
 * row, record, unchecked hops), the leaf value the row reaches from the
 * record.  Loops are what LLVM takes longest over, so the trees' functions
 * have none and call this one.
 */
static LLVMValueRef
ColdFunction(CodegenContext *cg, LLVMTypeRef *t_fn)
{
	LLVMTypeRef params[4] = {
		LLVMPointerType(cg->t_args, 0), LLVMPointerType(cg->t_value, 0), cg->t_i64, cg->t_i32
	};
	char		name[256];
	LLVMValueRef fn;
	CodegenFunction saved;
	LLVMBasicBlockRef b_saved;

	*t_fn = LLVMFunctionType(cg->t_value, params, 4, false);
	snprintf(name, sizeof(name), "%s_cold", cg->fn_name);
	fn = LLVMGetNamedFunction(cg->module, name);
	if (fn != NULL)
		return fn;
	fn = LLVMAddFunction(cg->module, name, *t_fn);
	LLVMSetFunctionCallConv(fn, LLVMFastCallConv);
	CgBeginHelper(cg, fn, &saved, &b_saved);
	LLVMBuildRet(cg->builder,
				 cg->repr->leaf_value(cg, CgWalkToLeaf(cg, LLVMGetParam(fn, 2), LLVMGetParam(fn, 1),
													   LLVMGetParam(fn, 3))));
	CgEndHelper(cg, &saved, b_saved);
	return fn;
}

/*
 * The leaf value of the walk from the buffers of the row at v_row_ptr,
 * from record v_index (i64) with v_fixed (i32) unchecked hops first, by a
 * call to the module's one function for it
 */
LLVMValueRef
CgColdLeaf(CodegenContext *cg, LLVMValueRef v_row_ptr, LLVMValueRef v_index,
		   LLVMValueRef v_fixed)
{
	LLVMTypeRef t_fn;
	LLVMValueRef fn = ColdFunction(cg, &t_fn);
	LLVMValueRef args[4] = {cg->fn.v_args, v_row_ptr, v_index, v_fixed};
	LLVMValueRef v_leaf = LLVMBuildCall2(cg->builder, t_fn, fn, args, 4, "v_cold_leaf");

	LLVMSetInstructionCallConv(v_leaf, LLVMFastCallConv);
	return v_leaf;
}

/* The cold part: call the cold walk from the phis' record, then to b_done */
static void
EmitCold(CodeTree *ct)
{
	CodegenContext *cg = ct->cg;
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_leaf;
	LLVMBasicBlockRef b_from;

	LLVMPositionBuilderAtEnd(b, ct->b_cold);
	v_leaf = CgColdLeaf(cg, ct->v_row_ptr, ct->v_cold_index, ct->v_cold_fixed);
	b_from = LLVMGetInsertBlock(b);
	LLVMAddIncoming(ct->v_value, &v_leaf, &b_from, 1);
	LLVMBuildBr(b, ct->b_done);
}

/* The leaf value of HIR tree t for the row at v_row_ptr, top in code */
static LLVMValueRef
EmitCodeTree(CodegenContext *cg, const MirOp *op, int32_t t, LLVMValueRef v_row_ptr)
{
	LLVMBuilderRef b = cg->builder;
	const Hir  *hir = cg->mir->hir;
	CodeTree	ct = {
		.cg = cg, .hir = hir, .tree = &hir->trees[t], .forest = cg->forest,
		.v_row_ptr = v_row_ptr
	};
	int64_t		budget = op->walk_args[CODE_WALK_NODES] < cg->code_nodes_left ? op->walk_args[CODE_WALK_NODES] :
		cg->code_nodes_left;
	LLVMBasicBlockRef b_entry = LLVMGetInsertBlock(b);
	LLVMValueRef v_value;

	if (!PickTop(&ct, budget, cg->mir->profile))
	{
		free(ct.in_code);
		return NULL;
	}
	for (int32_t h = 0; h < ct.tree->num_nodes; h++)
	{
		cg->code_nodes_left -= ct.in_code[h];
		cg->code_categorical += ct.in_code[h] && !hir->nodes[ct.tree->first_node + h].padding &&
			SourceNode(&ct, h)->kind == FOREST_NODE_CATEGORICAL;
	}
	Preload(&ct);
	ct.b_done = CgNewBlock(cg, "b_code_done");
	ct.b_cold = CgNewBlock(cg, "b_code_cold");
	LLVMPositionBuilderAtEnd(b, ct.b_done);
	ct.v_value = LLVMBuildPhi(b, cg->t_value, "v_leaf");
	LLVMPositionBuilderAtEnd(b, ct.b_cold);
	ct.v_cold_index = LLVMBuildPhi(b, cg->t_i64, "v_cold_index");
	ct.v_cold_fixed = LLVMBuildPhi(b, cg->t_i32, "v_cold_fixed");
	LLVMPositionBuilderAtEnd(b, b_entry);
	if (op->walk_args[CODE_WALK_FORM] == CODE_WALK_SELECT)
	{
		LLVMValueRef v_index;
		LLVMValueRef v_fixed;
		LLVMBasicBlockRef b_from;

		EmitSelect(&ct, 0, &v_value, &v_index, &v_fixed);
		b_from = LLVMGetInsertBlock(b);
		LLVMAddIncoming(ct.v_value, &v_value, &b_from, 1);
		if (ct.has_cold)
		{
			LLVMAddIncoming(ct.v_cold_index, &v_index, &b_from, 1);
			LLVMAddIncoming(ct.v_cold_fixed, &v_fixed, &b_from, 1);
			LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, v_index, CgInt64(cg, 0), ""),
							ct.b_done, ct.b_cold);
		}
		else
			LLVMBuildBr(b, ct.b_done);
	}
	else
		EmitBranchy(&ct, 0);
	if (ct.has_cold)
		EmitCold(&ct);
	else
		LLVMDeleteBasicBlock(ct.b_cold);
	LLVMMoveBasicBlockAfter(ct.b_done, LLVMGetLastBasicBlock(cg->fn.function));
	LLVMPositionBuilderAtEnd(b, ct.b_done);
	free(ct.in_code);
	return ct.v_value;
}

/*
 * Trees per function: enough that LLVM's fixed cost per function does not
 * dominate, few enough that one function stays
 * small (its register allocation grows faster than its size)
 */
static int32_t
GroupSize(const MirOp *op)
{
	int32_t		k = CODE_WALK_GROUP_NODES / (op->walk_args[CODE_WALK_NODES] > 0 ? op->walk_args[CODE_WALK_NODES] : 1);

	return k < 1 ? 1 : k > CODE_WALK_MAX_GROUP ? CODE_WALK_MAX_GROUP : k;
}

/*
 * The function walking HIR trees [first, first + n) for walk op: void
 * trees(args, row, out), out[i] the leaf value of tree first + i.  Trees
 * are functions of their own, not code inlined into the kernel, because
 * LLVM's time on one function grows much faster than its size.
 */
static LLVMValueRef
GroupFunction(CodegenContext *cg, const MirOp *op, int32_t first, int32_t n, LLVMTypeRef t_fn)
{
	CodegenFunction saved;
	LLVMBasicBlockRef b_saved;
	LLVMValueRef fn;
	char		name[256];

	snprintf(name, sizeof(name), "%s_op%d_trees%d_%d", cg->fn_name, (int) (op - cg->mir->ops),
			 first, first + n - 1);
	fn = LLVMAddFunction(cg->module, name, t_fn);
	LLVMSetFunctionCallConv(fn, LLVMFastCallConv);
	CgBeginHelper(cg, fn, &saved, &b_saved);
	for (int32_t i = 0; i < n; i++)
	{
		LLVMValueRef v_row = LLVMGetParam(fn, 1);
		LLVMValueRef v_leaf = EmitCodeTree(cg, op, first + i, v_row);
		LLVMValueRef v_i = CgInt64(cg, i);

		if (v_leaf == NULL)
			v_leaf = cg->repr->leaf_value(cg, CgWalkToLeaf(cg,
														   CgInt64(cg, cg->buffers->trees[first + i].root),
														   v_row, NULL));
		LLVMBuildStore(cg->builder, v_leaf,
					   LLVMBuildGEP2(cg->builder, cg->t_value, LLVMGetParam(fn, 2), &v_i, 1, ""));
	}
	LLVMBuildRetVoid(cg->builder);
	CgEndHelper(cg, &saved, b_saved);
	return fn;
}

/*
 * The leaf value of HIR tree t for the row at v_row_ptr.  Inside a
 * specialized loop over one row (cg->specialized_hi >= 0) one call walks
 * the next GroupSize trees of the loop and keeps their leaves; the copies
 * of the following trees then read them.  Elsewhere a call walks one tree.
 * NULL when out of memory.
 */
static LLVMValueRef
CodeLeaf(CodegenContext *cg, const MirOp *op, int32_t t, LLVMValueRef v_row_ptr)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef params[3] = {
		LLVMPointerType(cg->t_args, 0), LLVMPointerType(cg->t_value, 0),
		LLVMPointerType(cg->t_value, 0)
	};
	LLVMTypeRef t_fn = LLVMFunctionType(LLVMVoidTypeInContext(cg->context), params, 3, false);
	int32_t		n = 1;
	LLVMValueRef fn;
	LLVMValueRef args[3];
	LLVMValueRef v_call;
	LLVMValueRef v_i;

	if (cg->code_cache_count > 0 && cg->code_cache_row == v_row_ptr &&
		t >= cg->code_cache_first && t < cg->code_cache_first + cg->code_cache_count)
	{
		v_i = CgInt64(cg, t - cg->code_cache_first);
		return LLVMBuildLoad2(b, cg->t_value,
							  LLVMBuildGEP2(b, cg->t_value, cg->code_cache_out, &v_i, 1, ""),
							  "v_leaf");
	}
	if (cg->code_inline_left > 0)
	{
		int64_t		before = cg->code_nodes_left;
		LLVMValueRef v_leaf = EmitCodeTree(cg, op, t, v_row_ptr);

		cg->code_inline_left -= before - cg->code_nodes_left;
		return v_leaf;
	}
	if (cg->specialized_hi > t)
	{
		n = GroupSize(op);
		if (n > cg->specialized_hi - t)
			n = (int32_t) (cg->specialized_hi - t);
		if (n > cg->mir->hir->num_trees - t)
			n = cg->mir->hir->num_trees - t;
	}
	fn = GroupFunction(cg, op, t, n, t_fn);
	args[2] = CgAlloca(cg, cg->t_value, CgInt32(cg, n), "v_leaves");
	args[0] = cg->fn.v_args;
	args[1] = v_row_ptr;
	v_call = LLVMBuildCall2(b, t_fn, fn, args, 3, "");
	LLVMSetInstructionCallConv(v_call, LLVMFastCallConv);
	cg->code_cache_first = t;
	cg->code_cache_count = n;
	cg->code_cache_out = args[2];
	cg->code_cache_row = v_row_ptr;
	v_i = CgInt64(cg, 0);
	return LLVMBuildLoad2(b, cg->t_value, LLVMBuildGEP2(b, cg->t_value, args[2], &v_i, 1, ""),
						  "v_leaf");
}

/* Walk env->width lanes one after the other, each tree's top in code */
static void
CodeEmit(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
		 LLVMValueRef *v_leaf, LLVMValueRef *v_rows, LLVMValueRef *v_groups)
{
	int32_t		width = env->width > 0 ? env->width : 1;
	MirPath		path;
	WalkLane	lanes[MIR_MAX_WIDTH];
	const Hir  *hir = cg->mir->hir;

	if (cg->buffers->record_of == NULL)
	{
		/* tiled trees: no split records to compile from */
		WalkLockstep.codegen->emit(cg, op, env, v_leaf, v_rows, v_groups);
		return;
	}
	MirPathOf(cg->mir, op, &path);
	CgSetUpLanes(cg, &path, env, width, lanes);
	if (CgIsBitvectorWalk(op))
	{
		for (int32_t k = 0; k < width; k++)
		{
			v_rows[k] = lanes[k].v_row;
			v_groups[k] = lanes[k].v_group;
		}
		CgBitvectorEmit(cg, op, env, lanes, width, v_leaf, v_groups);
		return;
	}
	for (int32_t k = 0; k < width; k++)
	{
		int64_t		t = lanes[k].v_tree && LLVMIsAConstantInt(lanes[k].v_tree) ?
			LLVMConstIntGetSExtValue(lanes[k].v_tree) : -1;

		v_rows[k] = lanes[k].v_row;
		v_groups[k] = lanes[k].v_group;
		v_leaf[k] = NULL;
		if (t >= 0 && t < hir->num_trees && cg->buffers->record_of != NULL)
			v_leaf[k] = CodeLeaf(cg, op, (int32_t) t, lanes[k].v_row_ptr);
		/*
		 * A known tree's group is a constant, also when its walk falls back
		 * to the buffers: a specialized loop over one row keeps the row's
		 * margins in allocas and adds only constant groups there
		 */
		if (t >= 0 && t < hir->num_trees)
			v_groups[k] = CgInt32(cg, hir->trees[t].group);
		if (v_leaf[k] == NULL)
			v_leaf[k] = cg->repr->leaf_value(cg, CgWalkToLeaf(cg, lanes[k].v_root,
															  lanes[k].v_row_ptr, NULL));
	}
}

/*
 * IR instructions per code walk lane (call, leaf), per split in code, per
 * tree function, per tree whose top is not all of it (the call of the
 * module's walk from the buffers, ColdFunction)
 */
#define COST_CODE_LANE			12
#define COST_CODE_SPLIT			12
#define COST_CODE_FUNCTION		30
#define COST_CODE_COLD			40

/*
 * The code one code walk of width lanes emits: each lane's tree top,
 * inline while an outlined iteration has room for it (codegen.c), else
 * in a function of its own (or the bitvector form's tree functions); no
 * loop: the walk below a top calls the module's one cold function
 */
static void
CodeCost(CostModel *model, const MirOp *op, int32_t width, int32_t tree, WalkCost *cost)
{
	if (CgIsBitvectorWalk(op))
	{
		CgBitvectorCost(model, op, width, tree, cost);
		return;
	}
	cost->inline_instructions = (int64_t) width * COST_CODE_LANE;
	for (int32_t k = 0; k < width; k++)
	{
		int32_t		t = tree >= 0 ? tree : op->tree_lo;
		int64_t		splits = CostCodeSplits(model, op, t);
		bool		cold = t >= 0 && t < model->hir->num_trees &&
			(model->hir->trees[t].num_nodes - 1) / 2 > splits;
		int64_t		size = splits * COST_CODE_SPLIT + (cold ? COST_CODE_COLD : 0);

		if (model->inline_splits_left >= splits)
		{
			model->inline_splits_left -= splits;
			cost->inline_instructions += size;
			continue;
		}
		cost->outlined_instructions += COST_CODE_FUNCTION + size;
		if (COST_CODE_FUNCTION + size > cost->largest_outlined)
			cost->largest_outlined = COST_CODE_FUNCTION + size;
	}
}

/* the splits of a code walk multiply its compile */
static void
CodeBlame(const MirOp *op, const char *loop, char *directive, size_t directive_size,
		  char *blame, size_t blame_size)
{
	int32_t		nodes = op->walk_args[CODE_WALK_NODES];

	snprintf(directive, directive_size, "codeWalk(%s, %d)", loop, nodes);
	snprintf(blame, blame_size, "codeWalk(%s, %d) puts up to %d splits of each tree into code",
			 loop, nodes, nodes);
}

static const WalkCodegen CodeCodegen = {
	.emit = CodeEmit,
	.cost = CodeCost,
	.blame = CodeBlame
};

const WalkStrategy WalkCode = {
	.name = "code",
	.num_directives = 1,
	.directives = {
		{"codeWalk", "viw", "codeWalk(indexVar, nodes, %w)", code_forms}
	},
	.check_args = CodeCheckArgs,
	.apply = CodeApply,
	.flags = CodeFlags,
	.check_path = CodeCheckPath,
	.remainders = CodeRemainders,
	.describe = CodeDescribe,
	.finish = CodeFinish,
	.trees_in_code = CodeTreesInCode,
	.default_rank = 10,
	.default_schedule = CodeDefault,
	.num_tunings = 3,
	.tunings = {
		{"code branchy", "branchy", WALK_NEST_SPECIALIZE | WALK_NEST_FULL_CODEGEN, CodeTopValid,
		CodeBranchyFirst, CodeRowsNest, CodeTopDirective},
		{"code select", "select", WALK_NEST_SPECIALIZE | WALK_NEST_FULL_CODEGEN, CodeTopValid,
		CodeSelectFirst, CodeRowsNest, CodeTopDirective},
		{"code bitvector", "bitvector", WALK_NEST_STAGE_ROWS, CodeBitvectorValid, NULL, NULL,
		CodeBitvectorDirective}
	},
	.codegen = &CodeCodegen
};
