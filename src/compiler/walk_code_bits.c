/*
 * walk_code_bits.c
 *		The bitvector form of the code walk (codeWalk(i, nodes, bitvector)):
 *		every split of a tree compared, the leaf found as a bit.
 *
 * Preconditions: the layout has split records (walk_code.c falls
 * back to the lock-step walk for tiled trees); lanes are rows of one tree
 * (interleave over rows) or trees of one row.  Unlike the other code walk
 * forms, the trees need not be known at compile time: a tree known only
 * at run time is called through a table of the op's tree functions.
 *
 * QuickScorer (Lucchese et al., SIGIR 2015) without its sorting: number a
 * tree's leaves 0..L-1 from left to right (L <= 64) and keep one bit per
 * leaf, all set at first.  A split whose test sends the row right rules
 * out every leaf of its left subtree, so its bits are cleared.  After all
 * splits are applied the leaf the row reaches is the lowest bit still
 * set: every leaf left of it lies in the left subtree of a split on its
 * path that went right (cleared), and it is cleared by no split, since a
 * split whose left subtree holds it is on its path and went left.
 *
 * So a tree is straight-line code, with no branch to mispredict: per
 * split a compare, a select of the mask and an and.  The bits are i32 for
 * trees of at most 32 leaves (LightGBM's default is 31), else i64.  Rows of one tree
 * walk as lanes of one vector (an interleaved row loop of width W gives
 * <W x double> compares on W rows at once), which no branchy walk can do.
 * The lowest bit's index comes from a float conversion (LowestBit: AVX2
 * has no vector tzcnt), clamped so that the read stays in the table
 * whatever.  The leaf values sit in a constant table per tree, read by
 * one gather where the host gathers fast, else once per lane, or, for
 * trees of at most 16 leaves on AVX2, permuted out of registers
 * (PermutedLeaves).  A tree's function is emitted final
 * (CgFinishStraight): the function passes skip it.
 *
 * Where cache(i) stages the rows of a tile (CgBitvectorStageStride), a
 * tree function reads eight rows' feature with one load; where the stage
 * holds the rows' margins too (EmitStage), it adds its leaves into them
 * itself, one vector load, add and store for all lanes, instead of
 * handing eight leaves back through memory for eight scalar adds.  The
 * adds per row and their order are the same as the reduce's.
 *
 * Trees with more than 64 leaves, or more splits than the directive's
 * budget (or past the module's, CODEGEN_MAX_CODE_NODES), are walked from
 * the buffers, as earlyExitWalk walks them.
 * Numeric decisions are the code walk's own (CgNumericGoesLeft, lane-wise
 * for vectors).  A tree's categorical splits on one feature become one
 * table read: indexed by the value's category key (CgCategoryKey: the
 * category, "in no set", NaN), the table holds the and of the masks of
 * the splits that key sends right, each decided by the interpreter's own
 * ForestNodeGoesLeft on a value of the key's class.  So a lane pays one
 * load per feature instead of a set test per split (the lanes' loads as
 * one gather), and results are the interpreter's, bit for bit.  Sets spanning more than
 * CODE_WALK_BITS_MAX_KEYS categories keep a test per split (a variable
 * shift of the set, or of each lane's word of it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"

#define BITS_MAX_LEAVES	64
/*
 * A tree's masks are anded into this many running ands as they are made,
 * not all kept for one and at the end: LLVM's fast register allocation
 * spilled the 30 live masks of a 31-leaf tree.  Four chains walk trees of
 * 31 leaves (mtpl2) faster than keeping every mask, and faster than fewer
 * chains (a longer dependence); forests of fewer leaves gain little.
 */
#define BITS_AND_CHAINS		4
/* Forests of more splits gather their category tables (LanesTableGather) */
#define BITS_GATHER_SPLITS	8192
#define PERMUTE_MAX_LEAVES	16	/* PermutedLeaves; at 32, nyc_taxi and airline were
									 * slower than by loads */

/* A tree's splits with the masks of their left subtrees, leaves in order */
typedef struct BitsTree
{
	const Hir  *hir;
	const HirTree *tree;
	const Forest *forest;
	int32_t		num_leaves;
	int32_t		num_splits;
	LLVMTypeRef t_mask;			/* i32 for at most 32 leaves, else i64 */
	int32_t		split_node[BITS_MAX_LEAVES];	/* tree-local HIR, resolved */
	uint64_t	split_mask[BITS_MAX_LEAVES];	/* bits of its left subtree */
	double		leaf_value[BITS_MAX_LEAVES];
} BitsTree;

/*
 * Where a tree function's lanes read their features: each lane's row
 * pointer, or a tile staged by cache(i) (v_base at lane 0's row, lane k's
 * feature f at f * stride + k)
 */
typedef struct BitsRows
{
	const WalkLane *lanes;
	LLVMValueRef v_base;
	int64_t		stride;
} BitsRows;

/* The Forest node behind tree-local HIR node h */
static const ForestNode *
BitsSource(const BitsTree *bt, int32_t h)
{
	return &bt->forest->nodes[bt->hir->nodes[bt->tree->first_node + h].source];
}

/*
 * Number the leaves below h (tree-local) from the left and record the
 * splits; false once there are more than BITS_MAX_LEAVES leaves (the
 * recursion is as deep as the splits seen, so bounded by that too)
 */
static bool
BitsCollect(BitsTree *bt, int32_t h)
{
	const HirNode *nodes = bt->hir->nodes + bt->tree->first_node;
	const ForestNode *node;
	int32_t		slot;
	int32_t		first;

	h = HirSkipPadding(bt->hir, bt->tree, h);
	node = BitsSource(bt, h);
	if (node->kind == FOREST_NODE_LEAF)
	{
		if (bt->num_leaves >= BITS_MAX_LEAVES)
			return false;
		bt->leaf_value[bt->num_leaves++] = node->leaf_value;
		return true;
	}
	if (bt->num_splits >= BITS_MAX_LEAVES - 1)
		return false;
	slot = bt->num_splits++;
	bt->split_node[slot] = h;
	first = bt->num_leaves;
	if (!BitsCollect(bt, nodes[h].left))
		return false;
	bt->split_mask[slot] = (bt->num_leaves - first >= 64 ? ~UINT64_C(0) :
							((UINT64_C(1) << (bt->num_leaves - first)) - 1)) << first;
	return BitsCollect(bt, nodes[h].left + 1);
}

/*
 * A private constant global named name: the n values of type t_elem, an
 * array of type *t_table (unnamed_addr unless it must keep its name)
 */
static LLVMValueRef
ConstantTable(CodegenContext *cg, const char *name, LLVMTypeRef t_elem, LLVMValueRef *values,
			  int32_t n, bool unnamed, LLVMTypeRef *t_table)
{
	LLVMValueRef g;

	*t_table = LLVMArrayType(t_elem, (unsigned) n);
	g = LLVMAddGlobal(cg->module, *t_table, name);
	LLVMSetInitializer(g, LLVMConstArray(t_elem, values, (unsigned) n));
	LLVMSetGlobalConstant(g, true);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	if (unnamed)
		LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
	return g;
}

/* The constant table of the tree's leaf values, a private global */
static LLVMValueRef
LeafTable(CodegenContext *cg, const BitsTree *bt, LLVMTypeRef *t_table)
{
	LLVMValueRef values[BITS_MAX_LEAVES];

	for (int32_t i = 0; i < bt->num_leaves; i++)
		values[i] = CgValue(cg, bt->leaf_value[i]);
	return ConstantTable(cg, "silvan_leaves", cg->t_value, values, bt->num_leaves, true, t_table);
}

/*
 * Feature f of every lane's row: a scalar (one lane) or a vector, one load
 * from a staged tile, else one load per lane
 */
static LLVMValueRef
LaneFeatures(CodegenContext *cg, const BitsRows *rows, int32_t width, int32_t f,
			 LLVMValueRef *cache)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_f = CgInt64(cg, f);
	LLVMValueRef v = width > 1 ? LLVMGetUndef(LLVMVectorType(cg->t_value, (unsigned) width)) : NULL;

	if (cache != NULL && cache[f] != NULL)
		return cache[f];
	if (rows->v_base != NULL)
	{
		LLVMValueRef v_at = CgInt64(cg, (int64_t) f * rows->stride);
		LLVMTypeRef t = width > 1 ? LLVMVectorType(cg->t_value, (unsigned) width) : cg->t_value;
		LLVMValueRef v_ptr = LLVMBuildBitCast(b, LLVMBuildGEP2(b, cg->t_value, rows->v_base, &v_at, 1, ""),
											  LLVMPointerType(t, 0), "");

		v = LLVMBuildLoad2(b, t, v_ptr, "v_x");
		LLVMSetAlignment(v, (unsigned) ForestValueSize(cg->forest));
	}
	for (int32_t k = 0; rows->v_base == NULL && k < width; k++)
	{
		LLVMValueRef v_x = CgLoad(cg, cg->t_value,
								  LLVMBuildGEP2(b, cg->t_value, rows->lanes[k].v_row_ptr, &v_f, 1, ""),
								  "v_x");

		v = width > 1 ? LLVMBuildInsertElement(b, v, v_x, CgInt32(cg, k), "") : v_x;
	}
	if (cache != NULL)
		cache[f] = v;
	return v;
}

/* i1 per lane: does each lane's row go left at split node? */
static LLVMValueRef
LanesGoLeft(CodegenContext *cg, const ForestNode *node, const BitsRows *rows, int32_t width,
			LLVMValueRef *cache)
{
	LLVMValueRef v_x = LaneFeatures(cg, rows, width, node->feature, cache);

	if (node->kind != FOREST_NODE_CATEGORICAL)
		return CgNumericGoesLeft(cg, node, v_x);
	/* a variable shift of the set (or of each lane's word of it) per lane */
	return CgCategoryValueGoesLeft(cg, node, v_x);
}

/*
 * The keys of feature f's category table in tree bt: the widest span of
 * its categorical sets; 0 when f has none or one spans more than
 * CODE_WALK_BITS_MAX_KEYS (those splits keep their own tests)
 */
static int32_t
CategoryKeys(const BitsTree *bt, int32_t f)
{
	int64_t		keys = 0;
	bool		any = false;

	for (int32_t s = 0; s < bt->num_splits; s++)
	{
		const ForestNode *node = BitsSource(bt, bt->split_node[s]);

		if (node->kind != FOREST_NODE_CATEGORICAL || node->feature != f)
			continue;
		any = true;
		if ((int64_t) node->category_words * 32 > keys)
			keys = (int64_t) node->category_words * 32;
	}
	return any && keys <= CODE_WALK_BITS_MAX_KEYS ? (int32_t) keys : 0;
}

/*
 * The category table of feature f in tree bt (num_keys keys, see
 * CgCategoryKey), a private constant global: per key the and of the masks
 * of the splits on f that send the key's values right, each decided by
 * the interpreter on a value of the key's class (the category itself,
 * -2 for "in no set", NaN)
 */
static LLVMValueRef
CategoryTable(CodegenContext *cg, const BitsTree *bt, int32_t f, int32_t num_keys,
			  LLVMTypeRef *t_table)
{
	LLVMValueRef *entries = malloc(sizeof(LLVMValueRef) * (size_t) (num_keys + 2));
	LLVMValueRef g;

	if (entries == NULL)
		return NULL;
	for (int32_t key = 0; key < num_keys + 2; key++)
	{
		double		x = key < num_keys ? (double) key : key == num_keys ? -2.0 : NAN;
		uint64_t	bits = ~UINT64_C(0);

		for (int32_t s = 0; s < bt->num_splits; s++)
		{
			const ForestNode *node = BitsSource(bt, bt->split_node[s]);

			if (node->kind == FOREST_NODE_CATEGORICAL && node->feature == f &&
				!ForestNodeGoesLeft(bt->forest, node, x))
				bits &= ~bt->split_mask[s];
		}
		entries[key] = LLVMConstInt(bt->t_mask, bits, false);
	}
	g = ConstantTable(cg, "silvan_categories", bt->t_mask, entries, num_keys + 2, true, t_table);
	free(entries);
	return g;
}

/*
 * Each lane's entry (of type t_elem) of constant table g_table (of type
 * t_table) at its index in v_index (a vector of i32, or one i32 for one
 * lane): one load per lane
 */
static LLVMValueRef
LanesTableLookup(CodegenContext *cg, LLVMValueRef g_table, LLVMTypeRef t_table, LLVMTypeRef t_elem,
				 LLVMValueRef v_index, int32_t width, const char *name)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_out = width > 1 ? LLVMGetUndef(LLVMVectorType(t_elem, (unsigned) width)) : NULL;

	for (int32_t k = 0; k < width; k++)
	{
		LLVMValueRef idx[2] = {CgInt64(cg, 0), NULL};
		LLVMValueRef v_entry;

		idx[1] = LLVMBuildZExt(b, width > 1 ? LLVMBuildExtractElement(b, v_index, CgInt32(cg, k), "") :
							   v_index, cg->t_i64, "");
		v_entry = LLVMBuildLoad2(b, t_elem, LLVMBuildInBoundsGEP2(b, t_table, g_table, idx, 2, ""), name);
		v_out = width > 1 ? LLVMBuildInsertElement(b, v_out, v_entry, CgInt32(cg, k), "") : v_entry;
	}
	return v_out;
}

/*
 * Each lane's entry of the constant table g_table (of type t_table,
 * entries of type t_elem: i32, i64, float or double) at its index in
 * v_index (<width x i32>): one masked gather, which LLVM turns into the
 * target's gather instruction or into one load per lane.
 *
 * Category tables (CategoryGathered): against LanesTableLookup's loads on
 * mtpl2's category tables (2,000 of them, a quarter of its IR), a gather
 * compiles faster and walks as fast even where gathers are microcoded.  On
 * smaller forests with wide sets (lleaves' airline, 100 trees, categorical
 * sets of up to 288) it walks slower there, so where gathers are slow
 * (buffers->gather false) only big forests (BITS_GATHER_SPLITS), whose
 * compile time it is about, gather.
 *
 * Leaf values (LeavesGathered): where gathers are microcoded, gathering
 * them slows mtpl2's kernel, so only hosts that gather fast do.  There
 * the gather is faster than a load per lane on every lleaves model whose
 * trees are not permuted out of registers (mtpl2, NYC_taxi, boston,
 * airline), and its fewer IR instructions a tree shorten the compile.
 * Trees of at most PERMUTE_MAX_LEAVES keep the permutes: multiclass walks
 * slower with gathers.
 */
static LLVMValueRef
LanesTableGather(CodegenContext *cg, LLVMValueRef g_table, LLVMTypeRef t_table, LLVMTypeRef t_elem,
				 LLVMValueRef v_index, int32_t width, const char *name)
{
	LLVMValueRef idx[2] = {
		CgInt64(cg, 0), LLVMBuildZExt(cg->builder, v_index, LLVMVectorType(cg->t_i64, (unsigned) width), "")
	};

	return CgMaskedGather(cg, t_elem,
						  LLVMBuildInBoundsGEP2(cg->builder, t_table, g_table, idx, 2, ""),
						  (unsigned) width, name);
}

/* Do width lanes read category tables by gathers?  See LanesTableGather */
static bool
CategoryGathered(CodegenContext *cg, int32_t width)
{
	return width > 1 && (cg->buffers->gather ||
						 (cg->forest->num_nodes - cg->forest->num_trees) / 2 > BITS_GATHER_SPLITS);
}

/* Do width lanes read leaf values by gathers?  See LanesTableGather */
static bool
LeavesGathered(CodegenContext *cg, int32_t width)
{
	return width > 1 && cg->buffers->gather;
}

/* Each lane's mask from feature f's category table: one load per lane, or a gather */
static LLVMValueRef
LanesCategoryMask(CodegenContext *cg, const BitsTree *bt, int32_t f, int32_t num_keys,
				  const BitsRows *rows, int32_t width, LLVMValueRef *cache)
{
	LLVMTypeRef t_table;
	LLVMValueRef g_table = CategoryTable(cg, bt, f, num_keys, &t_table);
	LLVMValueRef v_key;

	if (g_table == NULL)
		return NULL;
	v_key = CgCategoryKey(cg, LaneFeatures(cg, rows, width, f, cache), num_keys);
	return CategoryGathered(cg, width) ?
		LanesTableGather(cg, g_table, t_table, bt->t_mask, v_key, width, "v_category_bits") :
		LanesTableLookup(cg, g_table, t_table, bt->t_mask, v_key, width, "v_category_bits");
}

/* The smaller of two int32 */
static int32_t
Min32(int32_t a, int32_t b)
{
	return a < b ? a : b;
}

/* Constant c in each of width lanes (c itself for one lane) */
static LLVMValueRef
ConstSplat(LLVMValueRef c, int32_t width)
{
	LLVMValueRef lanes[MIR_MAX_WIDTH];

	if (width == 1)
		return c;
	for (int32_t k = 0; k < width; k++)
		lanes[k] = c;
	return LLVMConstVector(lanes, (unsigned) width);
}

/* A mask of tree bt's type, splat to width lanes when width > 1 */
static LLVMValueRef
Mask(const BitsTree *bt, uint64_t bits, int32_t width)
{
	return ConstSplat(LLVMConstInt(bt->t_mask, bits, false), width);
}

/* llvm.cttz of v (an integer or a vector of them), defined at zero */
static LLVMValueRef
CountTrailingZeros(CodegenContext *cg, LLVMValueRef v)
{
	LLVMTypeRef t = LLVMTypeOf(v);
	bool		vector = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
	LLVMTypeRef t_elem = vector ? LLVMGetElementType(t) : t;
	LLVMTypeRef params[2] = {t, cg->t_i1};
	LLVMTypeRef t_fn = LLVMFunctionType(t, params, 2, false);
	LLVMValueRef args[2] = {v, LLVMConstInt(cg->t_i1, 0, false)};
	char		name[32];

	if (vector)
		snprintf(name, sizeof(name), "llvm.cttz.v%di%d", (int) LLVMGetVectorSize(t),
				 (int) LLVMGetIntTypeWidth(t_elem));
	else
		snprintf(name, sizeof(name), "llvm.cttz.i%d", (int) LLVMGetIntTypeWidth(t_elem));
	return LLVMBuildCall2(cg->builder, t_fn, CgDeclare(cg, name, t_fn), args, 2, "v_leaf_bit");
}

/*
 * Each lane's lowest set bit of v_bits (never 0: no split clears the last
 * leaf), i32 lanes.  One lane: cttz (tzcnt).  A vector: x86 before
 * AVX-512 has no vector tzcnt, and LLVM expands one into a popcount of
 * byte lookups (some twenty instructions), so the lowest bit is isolated
 * (x & -x) and converted to float, whose exponent is its index: exact,
 * since a power of two is a float, and 2^31 (negative as i32) keeps its
 * exponent under the sign.  i64 lanes: the low half's, else the high
 * half's plus 32.
 */
static LLVMValueRef
LowestBit(CodegenContext *cg, LLVMValueRef v_bits, int32_t width)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_i32s = LLVMVectorType(cg->t_i32, (unsigned) width);
	LLVMValueRef v_low;
	LLVMValueRef v_high;
	LLVMValueRef v_exponent;
	LLVMValueRef v_index;

	if (width == 1)
		return LLVMBuildTrunc(b, CountTrailingZeros(cg, v_bits), cg->t_i32, "");
	if (LLVMGetElementType(LLVMTypeOf(v_bits)) != cg->t_i32)
	{
		LLVMValueRef v_low_bits = LLVMBuildTrunc(b, v_bits, t_i32s, "");
		LLVMValueRef v_high_bits = LLVMBuildTrunc(b, LLVMBuildLShr(b, v_bits,
																	 ConstSplat(CgInt64(cg, 32), width), ""),
												  t_i32s, "");

		v_low = LowestBit(cg, v_low_bits, width);
		v_high = LLVMBuildAdd(b, LowestBit(cg, v_high_bits, width),
							  ConstSplat(CgInt32(cg, 32), width), "");
		return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntNE, v_low_bits, LLVMConstNull(t_i32s), ""),
							   v_low, v_high, "v_leaf_bit");
	}
	v_low = LLVMBuildAnd(b, v_bits, LLVMBuildNeg(b, v_bits, ""), "v_lowest");
	v_exponent = LLVMBuildBitCast(b, LLVMBuildSIToFP(b, v_low,
													 LLVMVectorType(LLVMFloatTypeInContext(cg->context),
																	(unsigned) width), ""),
								  t_i32s, "");
	v_index = LLVMBuildAnd(b, LLVMBuildLShr(b, v_exponent, ConstSplat(CgInt32(cg, 23), width), ""),
						   ConstSplat(CgInt32(cg, 255), width), "");
	return LLVMBuildSub(b, v_index, ConstSplat(CgInt32(cg, 127), width), "v_leaf_bit");
}

/*
 * The leaf values of a tree of at most PERMUTE_MAX_LEAVES leaves at 8
 * lanes' indexes, in registers: the table as vectors of 8 entries, from
 * which AVX2's vpermd picks each lane's entry (of a double, its two
 * halves, put back together after), the vector of index / 8 chosen by
 * selects.  The generic lookup extracts every index and loads once per
 * lane.
 */
static LLVMValueRef
PermutedLeaves(CodegenContext *cg, const BitsTree *bt, LLVMValueRef v_index)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_i32x8 = LLVMVectorType(cg->t_i32, 8);
	LLVMTypeRef params[2] = {t_i32x8, t_i32x8};
	LLVMTypeRef t_permd = LLVMFunctionType(t_i32x8, params, 2, false);
	LLVMValueRef fn_permd = CgDeclare(cg, "llvm.x86.avx2.permd", t_permd);
	bool		is_double = ForestValueSize(cg->forest) == 8;
	int32_t		num_blocks = (bt->num_leaves + 7) / 8;
	LLVMValueRef v_block = LLVMBuildLShr(b, v_index, ConstSplat(CgInt32(cg, 3), 8), "");
	LLVMValueRef v_parts[2];

	for (int half = 0; half < (is_double ? 2 : 1); half++)
	{
		v_parts[half] = NULL;
		for (int32_t block = num_blocks - 1; block >= 0; block--)
		{
			LLVMValueRef words[8];
			LLVMValueRef args[2];
			LLVMValueRef v_words;

			for (int32_t i = 0; i < 8; i++)
			{
				int32_t		leaf = Min32(block * 8 + i, bt->num_leaves - 1);
				double		value = bt->leaf_value[leaf];
				float		value_float = (float) value;
				uint64_t	bits;
				uint32_t	word;

				if (is_double)
				{
					memcpy(&bits, &value, sizeof(bits));
					word = (uint32_t) (half == 0 ? bits : bits >> 32);
				}
				else
					memcpy(&word, &value_float, sizeof(word));
				words[i] = LLVMConstInt(cg->t_i32, word, false);
			}
			args[0] = LLVMConstVector(words, 8);
			args[1] = v_index;
			v_words = LLVMBuildCall2(b, t_permd, fn_permd, args, 2, "v_leaf_words");
			v_parts[half] = v_parts[half] == NULL ? v_words :
				LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, v_block, ConstSplat(CgInt32(cg, block), 8), ""),
								v_words, v_parts[half], "");
		}
	}
	if (!is_double)
		return LLVMBuildBitCast(b, v_parts[0], LLVMVectorType(cg->t_value, 8), "v_leaves");
	{
		/* interleave the low and high words: lane k's double from both */
		LLVMValueRef order[16];

		for (int32_t i = 0; i < 16; i++)
			order[i] = CgInt32(cg, i % 2 == 0 ? i / 2 : 8 + i / 2);
		return LLVMBuildBitCast(b, LLVMBuildShuffleVector(b, v_parts[0], v_parts[1],
														  LLVMConstVector(order, 16), ""),
								LLVMVectorType(cg->t_value, 8), "v_leaves");
	}
}

/*
 * The body of a tree's function: each lane's leaf value of tree bt (all
 * lanes walk it), a vector (a scalar for one lane)
 */
static LLVMValueRef
EmitBitsTree(CodegenContext *cg, const BitsTree *bt, const BitsRows *rows, int32_t width)
{
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_last;
	LLVMValueRef *cache = calloc((size_t) cg->forest->num_features, sizeof(LLVMValueRef));
	LLVMValueRef v_bits = Mask(bt, ~UINT64_C(0), width);
	LLVMValueRef v_all = v_bits;
	LLVMValueRef v_index;
	LLVMTypeRef t_table;
	LLVMValueRef g_table = LeafTable(cg, bt, &t_table);
	LLVMValueRef terms[BITS_AND_CHAINS];
	int32_t		n = bt->num_splits;

	int32_t		num_terms = 0;
	int32_t		tabled[BITS_MAX_LEAVES];	/* features read through a table */
	int32_t		num_tabled = 0;

	for (int32_t s = 0; s < n; s++)
	{
		const ForestNode *node = BitsSource(bt, bt->split_node[s]);
		int32_t		keys = node->kind == FOREST_NODE_CATEGORICAL ?
			CategoryKeys(bt, node->feature) : 0;
		LLVMValueRef v_mask = NULL;
		LLVMValueRef v_term;
		int32_t		k;
		bool		seen = false;

		for (int32_t i = 0; i < num_tabled && keys > 0; i++)
			seen = seen || tabled[i] == node->feature;
		if (seen)
			continue;
		if (keys > 0 &&
			(v_mask = LanesCategoryMask(cg, bt, node->feature, keys, rows, width, cache)) != NULL)
		{
			tabled[num_tabled++] = node->feature;
			v_term = v_mask;
		}
		else
			v_term = LLVMBuildSelect(b, LanesGoLeft(cg, node, rows, width, cache), v_all,
									 Mask(bt, ~bt->split_mask[s], width), "");
		/* into one of BITS_AND_CHAINS running ands, as soon as it is made */
		k = num_terms++ % BITS_AND_CHAINS;
		terms[k] = num_terms > BITS_AND_CHAINS ? LLVMBuildAnd(b, terms[k], v_term, "v_bits") : v_term;
	}
	free(cache);
	if (num_terms > BITS_AND_CHAINS)
		num_terms = BITS_AND_CHAINS;
	for (int32_t i = 1; i < num_terms; i++)
		terms[0] = LLVMBuildAnd(b, terms[0], terms[i], "v_bits");
	if (num_terms > 0)
		v_bits = terms[0];
	v_index = LowestBit(cg, v_bits, width);
	/* in the table whatever the bits say */
	v_last = ConstSplat(CgInt32(cg, bt->num_leaves - 1), width);
	v_index = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, v_index, v_last, ""), v_index, v_last,
							  "v_leaf_index");
	if (width == 8 && bt->num_leaves <= PERMUTE_MAX_LEAVES && CgTargetHas(cg, "avx2"))
		return PermutedLeaves(cg, bt, v_index);
	if (LeavesGathered(cg, width))
		return LanesTableGather(cg, g_table, t_table, cg->t_value, v_index, width, "v_leaf");
	return LanesTableLookup(cg, g_table, t_table, cg->t_value, v_index, width, "v_leaf");
}

/* Each lane's leaf (v_leaves: a vector, or a scalar for one lane) to out[k] */
static void
StoreLeaves(CodegenContext *cg, LLVMValueRef v_leaves, LLVMValueRef v_out)
{
	LLVMValueRef v_store = LLVMBuildStore(cg->builder, v_leaves,
										  LLVMBuildBitCast(cg->builder, v_out,
														   LLVMPointerType(LLVMTypeOf(v_leaves), 0), ""));

	LLVMSetAlignment(v_store, (unsigned) ForestValueSize(cg->forest));
}

/*
 * Each of the first v_lanes lanes' leaf into its row's staged margin (lane
 * k's at v_acc[v_offset + k]): one vector load, add and store; the lanes
 * past v_lanes store back what they loaded (rows that other calls add
 * to, or rows past the tile's end)
 */
static void
AddLeavesToStage(CodegenContext *cg, LLVMValueRef v_leaves, int32_t width,
				 LLVMValueRef v_acc, LLVMValueRef v_offset, LLVMValueRef v_lanes)
{
	LLVMBuilderRef b = cg->builder;
	LLVMTypeRef t_vec = LLVMVectorType(cg->t_value, (unsigned) width);
	LLVMValueRef v_ptr = LLVMBuildGEP2(b, cg->t_value, v_acc, &v_offset, 1, "v_acc_ptr");
	LLVMValueRef lane_ids[MIR_MAX_WIDTH];
	LLVMValueRef v_old;
	LLVMValueRef v_new;
	LLVMValueRef v_live;
	LLVMValueRef v_store;

	if (width == 1)
	{
		/* one lane: the call's only row is real */
		LLVMBuildStore(b, CgAggregateLeaf(cg, LLVMBuildLoad2(b, cg->t_value, v_ptr, "v_margin"),
										  v_leaves), v_ptr);
		return;
	}
	for (int32_t k = 0; k < width; k++)
		lane_ids[k] = LLVMConstInt(cg->t_i64, (unsigned long long) k, false);
	v_ptr = LLVMBuildBitCast(b, v_ptr, LLVMPointerType(t_vec, 0), "");
	v_old = LLVMBuildLoad2(b, t_vec, v_ptr, "v_margins");
	LLVMSetAlignment(v_old, (unsigned) ForestValueSize(cg->forest));
	v_new = CgAggregateLeaf(cg, v_old, v_leaves);
	v_lanes = LLVMBuildInsertElement(b, LLVMGetUndef(LLVMVectorType(cg->t_i64, (unsigned) width)),
									 v_lanes, CgInt32(cg, 0), "");
	v_lanes = LLVMBuildShuffleVector(b, v_lanes, LLVMGetUndef(LLVMTypeOf(v_lanes)),
									 LLVMConstNull(LLVMVectorType(cg->t_i32, (unsigned) width)), "");
	v_live = LLVMBuildICmp(b, LLVMIntULT, LLVMConstVector(lane_ids, (unsigned) width), v_lanes,
						   "v_live");
	v_store = LLVMBuildStore(b, LLVMBuildSelect(b, v_live, v_new, v_old, ""), v_ptr);
	LLVMSetAlignment(v_store, (unsigned) ForestValueSize(cg->forest));
}

/*
 * A tree function's type: void (args, i64 tree, row_0 .. row_W-1, out),
 * or, reading a staged tile, void (args, i64 tree, base, row_0, i64 lanes,
 * out): lane k's row is row_0 + k rows, and only the first lanes are real
 */
static LLVMTypeRef
TreeFunctionType(CodegenContext *cg, int32_t width, bool staged)
{
	LLVMTypeRef t_ptr = LLVMPointerType(cg->t_value, 0);
	LLVMTypeRef params[MIR_MAX_WIDTH + 3];
	int32_t		n = 0;

	params[n++] = LLVMPointerType(cg->t_args, 0);
	params[n++] = cg->t_i64;
	if (staged)
	{
		params[n++] = t_ptr;
		params[n++] = t_ptr;
		params[n++] = cg->t_i64;
	}
	else
		for (int32_t k = 0; k < width; k++)
			params[n++] = t_ptr;
	params[n++] = t_ptr;
	return LLVMFunctionType(LLVMVoidTypeInContext(cg->context), params, (unsigned) n, false);
}

/*
 * The out parameter of a tree function: where its leaves go, or, adding
 * into staged margins, lane 0's margin of group 0 (group g's at g * stride)
 */
static LLVMValueRef
TreeFunctionOut(LLVMValueRef fn)
{
	return LLVMGetParam(fn, LLVMCountParams(fn) - 1);
}

/* A tree function's name suffix: row pointers, a staged tile, staged margins too */
static const char *
KindSuffix(int64_t stride, bool acc)
{
	return stride <= 0 ? "" : acc ? "_staged_acc" : "_staged";
}

/*
 * The end of a tree function: its lanes' leaves (of a tree of group
 * v_group) stored to out, or added into the staged margins
 */
static void
FinishTreeFunction(CodegenContext *cg, LLVMValueRef fn, LLVMValueRef v_leaves,
				   int32_t width, int64_t stride, bool acc, LLVMValueRef v_group)
{
	if (acc)
		AddLeavesToStage(cg, v_leaves, width, TreeFunctionOut(fn),
						 LLVMBuildMul(cg->builder, LLVMBuildSExt(cg->builder, v_group, cg->t_i64, ""),
									  CgInt64(cg, stride), ""),
						 LLVMGetParam(fn, 4));
	else
		StoreLeaves(cg, v_leaves, TreeFunctionOut(fn));
	LLVMBuildRetVoid(cg->builder);
}

/*
 * Start a tree function named name; where its lanes read into rows, their
 * row pointers into lanes (a staged function's lane k: row_0 + min(k,
 * lanes - 1) rows, for the buffer walks)
 */
static LLVMValueRef
BeginTreeFunction(CodegenContext *cg, const char *name, int32_t width, bool staged,
				  WalkLane *lanes, BitsRows *rows, CodegenFunction *saved,
				  LLVMBasicBlockRef *b_saved)
{
	LLVMValueRef fn = LLVMAddFunction(cg->module, name, TreeFunctionType(cg, width, staged));

	LLVMSetFunctionCallConv(fn, LLVMFastCallConv);
	CgBeginHelper(cg, fn, saved, b_saved);
	memset(lanes, 0, sizeof(WalkLane) * width);
	*rows = (BitsRows) {.lanes = lanes};
	for (int32_t k = 0; k < width; k++)
	{
		LLVMValueRef v_last;
		LLVMValueRef v_off;

		if (!staged)
		{
			lanes[k].v_row_ptr = LLVMGetParam(fn, (unsigned) k + 2);
			continue;
		}
		v_last = LLVMBuildSub(cg->builder, LLVMGetParam(fn, 4), CgInt64(cg, 1), "");
		v_off = LLVMBuildMul(cg->builder,
							 LLVMBuildSelect(cg->builder,
											 LLVMBuildICmp(cg->builder, LLVMIntSLT, CgInt64(cg, k),
														   v_last, ""),
											 CgInt64(cg, k), v_last, ""),
							 CgInt64(cg, cg->forest->num_features), "");
		lanes[k].v_row_ptr = LLVMBuildGEP2(cg->builder, cg->t_value, LLVMGetParam(fn, 3), &v_off, 1,
										   "v_row_ptr");
	}
	if (staged)
		rows->v_base = LLVMGetParam(fn, 2);
	return fn;
}

/*
 * The function for trees the form does not take: each lane walked from
 * the buffers from the tree's root (one per module, width and kind)
 */
static LLVMValueRef
ColdLanesFunction(CodegenContext *cg, int32_t width, int64_t stride, bool acc)
{
	WalkLane	lanes[MIR_MAX_WIDTH];
	BitsRows	rows;
	CodegenFunction saved;
	LLVMBasicBlockRef b_saved;
	LLVMValueRef fn;
	LLVMValueRef v_rec, v_root, v_depth, v_fixed, v_group;
	LLVMValueRef v_leaves = NULL;
	char		name[256];

	snprintf(name, sizeof(name), "%s_cold%s_w%d", cg->fn_name, KindSuffix(stride, acc), width);
	if ((fn = LLVMGetNamedFunction(cg->module, name)) != NULL)
		return fn;
	fn = BeginTreeFunction(cg, name, width, stride > 0, lanes, &rows, &saved, &b_saved);
	CgLoadTree(cg, LLVMGetParam(fn, 1), &v_rec, &v_root, &v_depth, &v_fixed, &v_group);
	if (width > 1)
		v_leaves = LLVMGetUndef(LLVMVectorType(cg->t_value, (unsigned) width));
	for (int32_t k = 0; k < width; k++)
	{
		LLVMValueRef v_leaf = CgColdLeaf(cg, lanes[k].v_row_ptr, v_root, CgInt32(cg, 0));

		v_leaves = width > 1 ? LLVMBuildInsertElement(cg->builder, v_leaves, v_leaf, CgInt32(cg, k), "") :
			v_leaf;
	}
	FinishTreeFunction(cg, fn, v_leaves, width, stride, acc, v_group);
	CgEndHelper(cg, &saved, b_saved);
	return fn;
}

/*
 * Collect tree bt for walk op and take its splits from the module's budget
 * of splits in code; false (nothing taken) when the form does not take it:
 * more than 64 leaves, or more splits than the directive's budget or what
 * is left of the module's
 */
static bool
TakeBitsTree(CodegenContext *cg, const MirOp *op, BitsTree *bt)
{
	if (!BitsCollect(bt, 0) || bt->num_splits > op->walk_args[CODE_WALK_NODES] ||
		bt->num_splits > cg->code_nodes_left)
		return false;
	cg->code_nodes_left -= bt->num_splits;
	/* half the vector registers: as fast, and quicker to compile */
	bt->t_mask = bt->num_leaves <= 32 ? cg->t_i32 : cg->t_i64;
	return true;
}

/*
 * The function of HIR tree t for width lanes: its bits when the form takes
 * it (at most 64 leaves, op->walk_args[CODE_WALK_NODES] splits and what is left of the
 * module's budget), else the cold one.  A function per tree keeps LLVM's
 * work linear in the splits (one straight-line block; no loop around it
 * to hoist the masks out of and spill), and its features are read once.
 * stride > 0: it reads a tile staged with that stride; acc: it adds into
 * the staged margins instead of returning its leaves.  Made once per walk
 * op, tree, width and kind; later calls find it by name.
 */
static LLVMValueRef
TreeFunction(CodegenContext *cg, const MirOp *op, int32_t t, int32_t width, int64_t stride,
			 bool acc)
{
	const Hir  *hir = cg->mir->hir;
	BitsTree	bt = {.hir = hir, .tree = &hir->trees[t], .forest = cg->forest};
	WalkLane	lanes[MIR_MAX_WIDTH];
	BitsRows	rows;
	CodegenFunction saved;
	LLVMBasicBlockRef b_saved;
	LLVMValueRef fn;
	char		name[256];

	snprintf(name, sizeof(name), "%s_op%d_bits%d_w%d%s", cg->fn_name, (int) (op - cg->mir->ops),
			 t, width, KindSuffix(stride, acc));
	if ((fn = LLVMGetNamedFunction(cg->module, name)) != NULL)
		return fn;
	if (!TakeBitsTree(cg, op, &bt))
		return ColdLanesFunction(cg, width, stride, acc);
	fn = BeginTreeFunction(cg, name, width, stride > 0, lanes, &rows, &saved, &b_saved);
	rows.stride = stride;
	FinishTreeFunction(cg, fn, EmitBitsTree(cg, &bt, &rows, width), width, stride, acc,
					   CgInt32(cg, bt.tree->group));
	CgFinishStraight(cg, fn);
	CgEndHelper(cg, &saved, b_saved);
	return fn;
}

/*
 * The tree functions of the op's trees for width lanes, in a constant
 * table indexed by HIR position (trees outside the op's range: cold)
 */
static LLVMValueRef
TreeTable(CodegenContext *cg, const MirOp *op, int32_t width, int64_t stride, bool acc,
		  LLVMTypeRef *t_table)
{
	int32_t		n = cg->mir->hir->num_trees;
	LLVMTypeRef t_ptr = LLVMPointerType(TreeFunctionType(cg, width, stride > 0), 0);
	LLVMValueRef *fns;
	LLVMValueRef g;
	char		name[256];

	*t_table = LLVMArrayType(t_ptr, (unsigned) n);
	snprintf(name, sizeof(name), "%s_op%d_bits_w%d%s", cg->fn_name, (int) (op - cg->mir->ops),
			 width, KindSuffix(stride, acc));
	if ((g = LLVMGetNamedGlobal(cg->module, name)) != NULL)
		return g;
	if ((fns = malloc(sizeof(LLVMValueRef) * (size_t) n)) == NULL)
		return NULL;
	for (int32_t t = 0; t < n; t++)
		fns[t] = t >= op->tree_lo && t < op->tree_hi && !CgCanceled(cg) ?
			TreeFunction(cg, op, t, width, stride, acc) : ColdLanesFunction(cg, width, stride, acc);
	g = ConstantTable(cg, name, t_ptr, fns, n, false, t_table);
	free(fns);
	return g;
}

/*
 * Tree t's code in place, for all width lanes of a staged tile whose stage
 * holds the margins too (env->v_stage_acc): the body of its tree function,
 * its leaves added to the lanes' staged margins.  In a loop over the
 * tile's rows (a tree loop specialized by specialize(tree)) the passes
 * then hoist the tree's thresholds, masks and leaf tables out of the loop,
 * where a call per eight rows set them up again each time.  false (nothing
 * emitted) when the form does not take the tree: it is called, as before.
 */
static bool
EmitTreeInPlace(CodegenContext *cg, const MirOp *op, int32_t t, const CodegenEnv *env,
				const WalkLane *lanes, int32_t width)
{
	const Hir  *hir = cg->mir->hir;
	BitsTree	bt = {.hir = hir, .tree = &hir->trees[t], .forest = cg->forest};
	LLVMBuilderRef b = cg->builder;
	LLVMValueRef v_at;
	LLVMValueRef v_leaves;
	BitsRows	rows = {.lanes = lanes, .stride = env->stage_stride};

	if (!TakeBitsTree(cg, op, &bt))
		return false;
	v_at = LLVMBuildSub(b, lanes[0].v_row, env->v_stage_lo, "");
	rows.v_base = LLVMBuildGEP2(b, cg->t_value, env->v_stage, &v_at, 1, "v_staged");
	v_leaves = EmitBitsTree(cg, &bt, &rows, width);
	AddLeavesToStage(cg, v_leaves, width,
					 LLVMBuildGEP2(b, cg->t_value, env->v_stage_acc, &v_at, 1, "v_staged_acc"),
					 CgInt64(cg, (int64_t) bt.tree->group * env->stage_stride), CgInt64(cg, width));
	return true;
}

/*
 * Each lane's leaf by one call of fn (v_tree: the tree) for op_width
 * lanes.  From row pointers, fewer lanes pass their last row again for
 * the missing ones; from a staged tile (env->v_stage), the call passes
 * lane 0's place in it, and the lanes past width read the rows staged
 * after it.  When the stage holds the margins too (env->v_stage_acc), fn
 * adds the leaves there itself, and v_leaf[0] is NULL.
 */
static void
CallTreeFunction(CodegenContext *cg, const CodegenEnv *env, LLVMValueRef fn, LLVMValueRef v_tree,
				 const WalkLane *lanes, int32_t width, int32_t op_width, LLVMValueRef *v_leaf)
{
	LLVMBuilderRef b = cg->builder;
	bool		staged = env != NULL && env->v_stage != NULL;
	bool		acc = staged && env->v_stage_acc != NULL;
	LLVMValueRef args[MIR_MAX_WIDTH + 3];
	int32_t		n = 0;
	LLVMValueRef v_out;
	LLVMValueRef v_call;

	if (!acc)
		v_out = CgAlloca(cg, cg->t_value, CgInt32(cg, op_width), "v_leaves");
	args[n++] = cg->fn.v_args;
	args[n++] = v_tree;
	if (staged)
	{
		LLVMValueRef v_at = LLVMBuildSub(b, lanes[0].v_row, env->v_stage_lo, "");

		args[n++] = LLVMBuildGEP2(b, cg->t_value, env->v_stage, &v_at, 1, "v_staged");
		args[n++] = lanes[0].v_row_ptr;
		args[n++] = CgInt64(cg, width);
		if (acc)
			v_out = LLVMBuildGEP2(b, cg->t_value, env->v_stage_acc, &v_at, 1, "v_staged_acc");
	}
	else
		for (int32_t k = 0; k < op_width; k++)
			args[n++] = lanes[k < width ? k : width - 1].v_row_ptr;
	args[n++] = v_out;
	v_call = LLVMBuildCall2(b, TreeFunctionType(cg, op_width, staged), fn, args, (unsigned) n, "");
	LLVMSetInstructionCallConv(v_call, LLVMFastCallConv);
	if (acc)
	{
		v_leaf[0] = NULL;
		return;
	}
	for (int32_t k = 0; k < width; k++)
	{
		LLVMValueRef v_k = CgInt64(cg, k);

		v_leaf[k] = LLVMBuildLoad2(b, cg->t_value, LLVMBuildGEP2(b, cg->t_value, v_out, &v_k, 1, ""),
								   "v_leaf");
	}
}

/*
 * Rows per feature of the tile that cache(i) on batch loop op stages for
 * the bitvector walks of rows below it, or 0 when it does not stage (then
 * it prefetches): op is the outer loop of a tile of the batch itself (not
 * a split's copy of one), so
 * that its iteration's rows are known exactly (a tile of tiles has rows
 * that the loops inside it fix; CgRootSpan would give the whole batch), the
 * tile has at least MIR_MAX_WIDTH rows, and they plus a vector's lanes
 * past them fit CODEGEN_MAX_STAGE_BYTES
 */
int64_t
CgBitvectorStageStride(CodegenContext *cg, const MirOp *op)
{
	const Schedule *s = cg->mir->schedule;
	const IndexVar *var = &s->vars[op->var];
	int64_t		num_features = cg->forest->num_features;
	int64_t		rows = var->param;
	int64_t		stride;
	bool		walk = false;

	if (op->kind != MIR_LOOP || op->index_kind != INDEX_BATCH ||
		var->origin != INDEX_ORIGIN_TILE_OUTER || var->copy_of >= 0 || var->parent < 0 ||
		s->vars[var->parent].origin != INDEX_ORIGIN_ROOT ||
		num_features < 1 || num_features > CODEGEN_MAX_STAGE_FEATURES ||
		rows < MIR_MAX_WIDTH || rows > CODEGEN_MAX_STAGE_BYTES)
		return 0;
	for (const MirOp *o = cg->mir->ops; o < cg->mir->ops + cg->mir->num_ops; o++)
	{
		const MirOp *up = o->parent;

		while (up != NULL && up != op)
			up = up->parent;
		walk = walk || (up == op && CgIsBitvectorWalk(o) && o->lanes == MIR_LANES_ROWS);
	}
	stride = rows + MIR_MAX_WIDTH;
	if (!walk || stride * num_features * (int64_t) ForestValueSize(cg->forest) >
		CODEGEN_MAX_STAGE_BYTES)
		return 0;
	return stride;
}

/*
 * Walk the lanes.  Lanes of one tree (rows) go together in vectors: a
 * tree known at compile time by a direct call to its function (the
 * remainder of an interleaved row loop, too rare to compile for, from the
 * buffers, unless the rows are staged), a tree known at run time through
 * the op's table of tree functions (the remainder passing its rows
 * again).  Consecutive rows of a staged tile read it (env->v_stage).
 * Lanes of different trees one by one.
 */
void
CgBitvectorEmit(CodegenContext *cg, const MirOp *op, const CodegenEnv *env, const WalkLane *lanes,
				int32_t width, LLVMValueRef *v_leaf, LLVMValueRef *v_groups)
{
	const Hir  *hir = cg->mir->hir;
	int32_t		op_width = op->lanes == MIR_LANES_ROWS && op->width > width ? op->width : width;
	bool		known = lanes[0].v_tree && LLVMIsAConstantInt(lanes[0].v_tree);
	int64_t		t0 = known ? LLVMConstIntGetSExtValue(lanes[0].v_tree) : -1;
	bool		same = true;
	int64_t		stride;
	bool		acc;
	LLVMTypeRef t_table;
	LLVMValueRef g_table;

	for (int32_t k = 1; k < width; k++)
		same = same && lanes[k].v_tree == lanes[0].v_tree;
	if (!same && width > 1)
	{
		for (int32_t k = 0; k < width; k++)
			CgBitvectorEmit(cg, op, NULL, &lanes[k], 1, &v_leaf[k], &v_groups[k]);
		return;
	}
	/* a staged tile serves lanes of consecutive rows, lane 0's first */
	if (env != NULL && env->v_stage != NULL && op->lanes == MIR_LANES_ROWS &&
		op_width <= MIR_MAX_WIDTH && (width == 1 || CgLaneStride(cg, env) == 1))
		stride = env->stage_stride;
	else
	{
		stride = 0;
		env = NULL;
	}
	acc = env != NULL && env->v_stage_acc != NULL;
	if (known && t0 >= 0 && t0 < hir->num_trees)
	{
		/* a known tree's group is a constant: the reduce may keep it in a register */
		for (int32_t k = 0; k < width; k++)
			v_groups[k] = CgInt32(cg, hir->trees[t0].group);
		if (acc && width == op_width && EmitTreeInPlace(cg, op, (int32_t) t0, env, lanes, width))
		{
			v_leaf[0] = NULL;
			return;
		}
		if (width == op_width || stride > 0)
		{
			CallTreeFunction(cg, env, TreeFunction(cg, op, (int32_t) t0, op_width, stride, acc),
							 lanes[0].v_tree, lanes, width, op_width, v_leaf);
			return;
		}
	}
	else if (!known && (g_table = TreeTable(cg, op, op_width, stride, acc, &t_table)) != NULL)
	{
		LLVMValueRef idx[2] = {CgInt64(cg, 0), lanes[0].v_tree};
		LLVMValueRef v_fn = LLVMBuildLoad2(cg->builder, LLVMGetElementType(t_table),
										   LLVMBuildInBoundsGEP2(cg->builder, t_table, g_table,
																 idx, 2, ""), "v_tree_fn");

		CallTreeFunction(cg, env, v_fn, lanes[0].v_tree, lanes, width, op_width, v_leaf);
		return;
	}
	for (int32_t k = 0; k < width; k++)
		v_leaf[k] = CgColdLeaf(cg, lanes[k].v_row_ptr, lanes[k].v_root, lanes[k].v_fixed);
}

/* IR instructions per tree function, per split (per lane vector), per lane and call */
#define COST_BITS_FUNCTION		40
#define COST_BITS_SPLIT			16
#define COST_BITS_LANE			6

/* The instructions of tree t's function for width lanes, about; 0 when it is walked cold */
static int64_t
BitsTreeCost(const CostModel *model, const MirOp *op, int32_t t, int32_t width)
{
	const HirTree *tree = &model->hir->trees[t];
	int64_t		splits = (tree->num_nodes - 1) / 2;

	if (splits + 1 > BITS_MAX_LEAVES || splits > op->walk_args[CODE_WALK_NODES])
		return 0;
	return COST_BITS_FUNCTION + splits * COST_BITS_SPLIT * ((width + 7) / 8) +
		(int64_t) width * COST_BITS_LANE;
}

/*
 * See codegen.h: the call of a tree's function, and the function (a known
 * tree's, at the op's width), or the op's table of every tree's functions
 * once per width
 */
void
CgBitvectorCost(CostModel *model, const MirOp *op, int32_t width, int32_t tree, WalkCost *cost)
{
	int32_t		op_width = op->lanes == MIR_LANES_ROWS && op->width > width ? op->width : width;
	uint32_t	bit = 1u << (op_width & 31);
	uint32_t   *tables = &model->bits_tables[op - model->mir->ops];

	cost->inline_instructions = 20 + (int64_t) width * COST_BITS_LANE;
	if (tree >= 0 && tree < model->hir->num_trees)
	{
		if (width == op_width)
			cost->outlined_instructions = cost->largest_outlined =
				BitsTreeCost(model, op, tree, op_width);
		return;
	}
	if ((*tables & bit) != 0)
		return;
	*tables |= bit;
	for (int32_t t = op->tree_lo; t < op->tree_hi && t < model->hir->num_trees; t++)
	{
		int64_t		n = BitsTreeCost(model, op, t, op_width);

		cost->outlined_instructions += n;
		if (n > cost->largest_outlined)
			cost->largest_outlined = n;
	}
}
