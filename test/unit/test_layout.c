/*
 * test_layout.c
 *		The records generated code reads: C's layout against LLVM's.
 *
 * C fills the kernel arguments, the tree table, the category sets and the
 * node records; the generated code reads them through LLVM struct types
 * that codegen.c, repr_split.c and repr_tiled.c build.  Nothing ties the
 * two but this test, in the manner of PostgreSQL's llvmjit_types.c: for
 * each record, the very type builder the code generator calls, under the
 * data layout of the JIT's modules, must put every field that the code
 * reads (FIELDNO_*) at the C field's offsetof with the C field's size, and
 * the whole record must have C's size (the stride of an array of records)
 * and alignment.  Split records are checked in every record layout and
 * precision, tiles for every tile size as well; for those the C side is
 * ReprTileLayout, the offsets the tile stores write at.
 */
#include <math.h>
#include <signal.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include <llvm-c/Target.h>

#include "silvan/codegen.h"
#include "silvan/jit.h"
#include "silvan/llvm_errors.h"
#include "silvan/tiling.h"
#include "unit.h"

/* The data layout of the JIT's modules */
static LLVMTargetDataRef data_layout;

/* Field f of t: at offset, size bytes, as C has it */
static void
CheckField(LLVMTypeRef t, unsigned f, size_t offset, size_t size, const char *what)
{
	unsigned long long llvm_offset = LLVMOffsetOfElement(data_layout, t, f);
	unsigned long long llvm_size = LLVMABISizeOfType(data_layout,
													 LLVMStructGetTypeAtIndex(t, f));

	CHECK_MSG(llvm_offset == offset && llvm_size == size,
			  "%s: LLVM field %u at %llu, %llu bytes; C at %zu, %zu bytes",
			  what, f, llvm_offset, llvm_size, offset, size);
}

#define CHECK_FIELD(t, f, ctype, member) \
	CheckField((t), (f), offsetof(ctype, member), sizeof(((ctype *) 0)->member), \
			   #ctype "." #member)

/* The whole record: number of fields, size (array stride), alignment */
static void
CheckRecord(LLVMTypeRef t, unsigned num_fields, size_t size, size_t align, const char *what)
{
	unsigned	llvm_fields = LLVMCountStructElementTypes(t);
	unsigned long long llvm_size = LLVMABISizeOfType(data_layout, t);
	unsigned	llvm_align = LLVMABIAlignmentOfType(data_layout, t);

	CHECK_MSG(llvm_fields == num_fields && llvm_size == size && llvm_align == align,
			  "%s: LLVM has %u fields, %llu bytes, aligned %u; C %u fields, %zu bytes, "
			  "aligned %zu", what, llvm_fields, llvm_size, llvm_align, num_fields, size, align);
}

#define CHECK_RECORD(t, n, ctype) \
	CheckRecord((t), (n), sizeof(ctype), alignof(ctype), #ctype)

/* SilvanKernelArgs, every field */
static void
TestKernelArgs(LLVMContextRef context)
{
	LLVMTypeRef t = CodegenKernelArgsType(context);

	CHECK_RECORD(t, KERNEL_ARGS_FIELDS, SilvanKernelArgs);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_ROWS, SilvanKernelArgs, rows);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_NUM_ROWS, SilvanKernelArgs, num_rows);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_ACC, SilvanKernelArgs, acc);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_PARTIALS, SilvanKernelArgs, partials);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_MAX_CHUNKS, SilvanKernelArgs, max_chunks);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_NODES, SilvanKernelArgs, nodes);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_TREES, SilvanKernelArgs, trees);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_CATEGORY_WORDS, SilvanKernelArgs, category_words);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_CATEGORY_SETS, SilvanKernelArgs, category_sets);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_AUX, SilvanKernelArgs, aux);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_INTERRUPT, SilvanKernelArgs, interrupt);
	CHECK_FIELD(t, FIELDNO_KERNELARGS_PARALLEL_FOR, SilvanKernelArgs, parallel_for);
	/* the kernel reads *interrupt as an i32 */
	CHECK(sizeof(sig_atomic_t) ==
		  LLVMABISizeOfType(data_layout, LLVMInt32TypeInContext(context)));
}

/* ReprTree and ReprCategorySet, every field */
static void
TestTables(LLVMContextRef context)
{
	LLVMTypeRef t_tree = CodegenTreeType(context);
	LLVMTypeRef t_set = CodegenCategorySetType(context);

	CHECK_RECORD(t_tree, REPR_TREE_FIELDS, ReprTree);
	CHECK_FIELD(t_tree, FIELDNO_REPRTREE_ROOT, ReprTree, root);
	CHECK_FIELD(t_tree, FIELDNO_REPRTREE_DEPTH, ReprTree, depth);
	CHECK_FIELD(t_tree, FIELDNO_REPRTREE_GROUP, ReprTree, group);
	CHECK_FIELD(t_tree, FIELDNO_REPRTREE_FIXED, ReprTree, fixed);
	CHECK_FIELD(t_tree, FIELDNO_REPRTREE_FIRST, ReprTree, first);
	CHECK_FIELD(t_tree, FIELDNO_REPRTREE_COUNT, ReprTree, count);
	CHECK_FIELD(t_tree, 6, ReprTree, reserved[0]);
	CHECK_FIELD(t_tree, 7, ReprTree, reserved[1]);

	CHECK_RECORD(t_set, 2, ReprCategorySet);
	CHECK_FIELD(t_set, FIELDNO_REPRCATEGORYSET_OFFSET, ReprCategorySet, offset);
	CHECK_FIELD(t_set, FIELDNO_REPRCATEGORYSET_NUM_WORDS, ReprCategorySet, num_words);
}

/* Link and feature are one 64-bit load in the walk: adjacent in LLVM's record */
static void
CheckLinkBesideFeature(LLVMTypeRef t, const char *what)
{
	CHECK_MSG(LLVMOffsetOfElement(data_layout, t, FIELDNO_SPLIT_FEATURE) ==
			  LLVMOffsetOfElement(data_layout, t, FIELDNO_SPLIT_LINK) + 4,
			  "%s: link and feature are not adjacent", what);
}

/* Split records in every layout and precision; ReprRecordSize is C's stride */
static void
TestSplitRecords(LLVMContextRef context)
{
	static const ReprSplitLayout plain_like[] = {REPR_SPLIT_PLAIN, REPR_SPLIT_FLAGS};

	for (size_t i = 0; i < sizeof(plain_like) / sizeof(plain_like[0]); i++)
	{
		ReprSplitLayout layout = plain_like[i];
		LLVMTypeRef t32 = ReprSplitType(context, FOREST_FLOAT32, layout);
		LLVMTypeRef t64 = ReprSplitType(context, FOREST_FLOAT64, layout);

		CHECK_RECORD(t32, 3, ReprSplitNode32);
		CHECK_FIELD(t32, FIELDNO_SPLIT_THRESHOLD, ReprSplitNode32, threshold);
		CHECK_FIELD(t32, FIELDNO_SPLIT_LINK, ReprSplitNode32, left);
		CHECK_FIELD(t32, FIELDNO_SPLIT_FEATURE, ReprSplitNode32, feature_flags);
		CheckLinkBesideFeature(t32, "ReprSplitNode32");
		CHECK(ReprRecordSize(layout, FOREST_FLOAT32) == LLVMABISizeOfType(data_layout, t32));

		CHECK_RECORD(t64, 3, ReprSplitNode64);
		CHECK_FIELD(t64, FIELDNO_SPLIT_THRESHOLD, ReprSplitNode64, threshold);
		CHECK_FIELD(t64, FIELDNO_SPLIT_LINK, ReprSplitNode64, left);
		CHECK_FIELD(t64, FIELDNO_SPLIT_FEATURE, ReprSplitNode64, feature_flags);
		CheckLinkBesideFeature(t64, "ReprSplitNode64");
		CHECK(ReprRecordSize(layout, FOREST_FLOAT64) == LLVMABISizeOfType(data_layout, t64));
	}
	{
		LLVMTypeRef t32 = ReprSplitType(context, FOREST_FLOAT32, REPR_SPLIT_SIGN);
		LLVMTypeRef t64 = ReprSplitType(context, FOREST_FLOAT64, REPR_SPLIT_SIGN);

		CHECK_RECORD(t32, 4, ReprSignNode32);
		CHECK_FIELD(t32, FIELDNO_SPLIT_THRESHOLD, ReprSignNode32, threshold);
		CHECK_FIELD(t32, FIELDNO_SPLIT_LINK, ReprSignNode32, left);
		CHECK_FIELD(t32, FIELDNO_SPLIT_FEATURE, ReprSignNode32, feature);
		CHECK_FIELD(t32, FIELDNO_SPLIT_SIGN, ReprSignNode32, sign);
		CheckLinkBesideFeature(t32, "ReprSignNode32");
		CHECK(ReprRecordSize(REPR_SPLIT_SIGN, FOREST_FLOAT32) ==
			  LLVMABISizeOfType(data_layout, t32));

		CHECK_RECORD(t64, 4, ReprSignNode64);
		CHECK_FIELD(t64, FIELDNO_SPLIT_THRESHOLD, ReprSignNode64, threshold);
		CHECK_FIELD(t64, FIELDNO_SPLIT_LINK, ReprSignNode64, left);
		CHECK_FIELD(t64, FIELDNO_SPLIT_FEATURE, ReprSignNode64, feature);
		CHECK_FIELD(t64, FIELDNO_SPLIT_SIGN, ReprSignNode64, sign);
		CheckLinkBesideFeature(t64, "ReprSignNode64");
		CHECK(ReprRecordSize(REPR_SPLIT_SIGN, FOREST_FLOAT64) ==
			  LLVMABISizeOfType(data_layout, t64));
	}
}

/* The perfect layout's records (no link) in every layout and precision */
static void
TestUnlinkedRecords(LLVMContextRef context)
{
	static const ReprSplitLayout plain_like[] = {REPR_SPLIT_PLAIN, REPR_SPLIT_FLAGS};

	for (size_t i = 0; i < sizeof(plain_like) / sizeof(plain_like[0]); i++)
	{
		ReprSplitLayout layout = plain_like[i];
		LLVMTypeRef t32 = ReprUnlinkedType(context, FOREST_FLOAT32, layout);
		LLVMTypeRef t64 = ReprUnlinkedType(context, FOREST_FLOAT64, layout);

		CHECK_RECORD(t32, 2, ReprPerfectNode32);
		CHECK_FIELD(t32, FIELDNO_UNLINKED_THRESHOLD, ReprPerfectNode32, threshold);
		CHECK_FIELD(t32, FIELDNO_UNLINKED_FEATURE, ReprPerfectNode32, feature_flags);
		CHECK(ReprUnlinkedSize(layout, FOREST_FLOAT32) == LLVMABISizeOfType(data_layout, t32));
		CHECK(ReprUnlinkedSize(layout, FOREST_FLOAT32) == 8);

		CHECK_RECORD(t64, 2, ReprPerfectNode64);
		CHECK_FIELD(t64, FIELDNO_UNLINKED_THRESHOLD, ReprPerfectNode64, threshold);
		CHECK_FIELD(t64, FIELDNO_UNLINKED_FEATURE, ReprPerfectNode64, feature_flags);
		CHECK(ReprUnlinkedSize(layout, FOREST_FLOAT64) == LLVMABISizeOfType(data_layout, t64));
	}
	{
		LLVMTypeRef t32 = ReprUnlinkedType(context, FOREST_FLOAT32, REPR_SPLIT_SIGN);
		LLVMTypeRef t64 = ReprUnlinkedType(context, FOREST_FLOAT64, REPR_SPLIT_SIGN);

		CHECK_RECORD(t32, 3, ReprPerfectSign32);
		CHECK_FIELD(t32, FIELDNO_UNLINKED_THRESHOLD, ReprPerfectSign32, threshold);
		CHECK_FIELD(t32, FIELDNO_UNLINKED_FEATURE, ReprPerfectSign32, feature);
		CHECK_FIELD(t32, FIELDNO_UNLINKED_SIGN, ReprPerfectSign32, sign);
		CHECK(ReprUnlinkedSize(REPR_SPLIT_SIGN, FOREST_FLOAT32) ==
			  LLVMABISizeOfType(data_layout, t32));

		CHECK_RECORD(t64, 3, ReprPerfectSign64);
		CHECK_FIELD(t64, FIELDNO_UNLINKED_THRESHOLD, ReprPerfectSign64, threshold);
		CHECK_FIELD(t64, FIELDNO_UNLINKED_FEATURE, ReprPerfectSign64, feature);
		CHECK_FIELD(t64, FIELDNO_UNLINKED_SIGN, ReprPerfectSign64, sign);
		CHECK(ReprUnlinkedSize(REPR_SPLIT_SIGN, FOREST_FLOAT64) ==
			  LLVMABISizeOfType(data_layout, t64));
	}
}

/* Tile records of every size, layout and precision against ReprTileLayout */
static void
TestTileRecords(LLVMContextRef context)
{
	static const ReprSplitLayout layouts[] = {REPR_SPLIT_PLAIN, REPR_SPLIT_SIGN,
	REPR_SPLIT_FLAGS};
	static const ForestPrecision precisions[] = {FOREST_FLOAT32, FOREST_FLOAT64};

	for (int32_t n = 2; n <= TILE_MAX_SIZE; n++)
		for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++)
			for (size_t p = 0; p < sizeof(precisions) / sizeof(precisions[0]); p++)
			{
				ReprSplitLayout layout = layouts[l];
				ForestPrecision precision = precisions[p];
				size_t		t = precision == FOREST_FLOAT32 ? 4 : 8;
				LLVMTypeRef t_tile = ReprTileType(context, precision, layout, n);
				ReprTileOffsets o = ReprTileLayout(n, layout, precision);
				char		what[64];

				snprintf(what, sizeof(what), "tile of %d, %s, %zu-byte values", n,
						 ReprSplitName(layout), t);
				CHECK_MSG(LLVMCountStructElementTypes(t_tile) ==
						  (unsigned) FIELDNO_TILE_LUT_ROW(layout) + 1, "%s: fields", what);
				CheckField(t_tile, FIELDNO_TILE_THRESHOLDS, o.thresholds, n * t, what);
				CheckField(t_tile, FIELDNO_TILE_FEATURES, o.features, n * 4, what);
				if (layout == REPR_SPLIT_SIGN)
					CheckField(t_tile, FIELDNO_TILE_SIGNS, o.signs, n * t, what);
				CheckField(t_tile, FIELDNO_TILE_LINK(layout), o.link, 4, what);
				CheckField(t_tile, FIELDNO_TILE_LUT_ROW(layout), o.lut_row, 4, what);
				CHECK_MSG(LLVMABISizeOfType(data_layout, t_tile) == o.size,
						  "%s: LLVM size %llu, C stride %zu", what,
						  LLVMABISizeOfType(data_layout, t_tile), o.size);
			}
}

/* Is the float compare of a walk's form true (slot 1)?  b NaN: the bound below -inf */
static bool
FloatGoesRight(ReprPlainForm form, float x, float b)
{
	if (form == REPR_PLAIN_X_BELOW)
		return x < b || isnan(x);
	return b < x || isnan(x) || isnan(b);
}

/*
 * repr_keys.c: for every pair of special and random floats (both zeros,
 * both infinities, NaNs of both signs and several payloads, subnormals,
 * neighbours), the keys' unsigned compare takes the slot the float
 * compare takes, in both forms; a row's NaN keys sit outside every value's
 */
static void
TestIntegerKeys(void)
{
	static const uint32_t special[] = {
		0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
		0x7F800001, 0xFFFFFFFF, 0x7FBFFFFF, 0x00000001, 0x80000001, 0x007FFFFF,
		0x807FFFFF, 0x00800000, 0x80800000, 0x3F800000, 0xBF800000, 0x7F7FFFFF,
		0xFF7FFFFF, 0x3F800001, 0x3F7FFFFF, 0xBF800001, 0xBF7FFFFF
	};
	enum
	{
		NUM_SPECIAL = sizeof(special) / sizeof(special[0]),
		NUM_VALUES = NUM_SPECIAL + 400
	};
	float		values[NUM_VALUES];
	uint32_t	keys[NUM_VALUES];
	uint64_t	state = 0x9E3779B97F4A7C15ull;
	long		wrong = 0;

	for (int i = 0; i < NUM_VALUES; i++)
	{
		uint32_t	bits = special[i % NUM_SPECIAL];

		if (i >= NUM_SPECIAL)
		{
			state = state * 6364136223846793005ull + 1442695040888963407ull;
			bits = (uint32_t) (state >> 32);
			if (i % 3 == 0)		/* near 1.0 and -1.0, where thresholds are */
				bits = (bits & 0x80000000u) | (0x3F800000u + (bits & 0xFFFFu) - 0x8000u);
		}
		memcpy(&values[i], &bits, sizeof(bits));
	}
	for (int f = 0; f < 2; f++)
	{
		ReprPlainForm form = f == 0 ? REPR_PLAIN_X_BELOW : REPR_PLAIN_BELOW_X;

		ReprKeyRows(values, NUM_VALUES, form, keys);
		for (int i = 0; i < NUM_VALUES; i++)
		{
			CHECK(!isnan(values[i]) || keys[i] == ReprKeyOfNaN(form));
			CHECK(isnan(values[i]) || (keys[i] >= ReprKeyOfBound(-INFINITY) &&
									   keys[i] <= ReprKeyOfBound(INFINITY)));
			for (int j = 0; j < NUM_VALUES; j++)
			{
				uint32_t	bound = ReprKeyOfBound(values[j]);
				bool		keyed;

				if (form == REPR_PLAIN_X_BELOW && isnan(values[j]))
					continue;	/* X_BELOW's bounds are never NaN */
				keyed = form == REPR_PLAIN_X_BELOW ? keys[i] < bound : bound < keys[i];
				wrong += keyed != FloatGoesRight(form, values[i], values[j]);
			}
		}
	}
	CHECK_MSG(wrong == 0, "%ld key compares differ from their float compares", wrong);
	CHECK(ReprKeysPay(6000, 30) && ReprKeysPay(800, 28) && !ReprKeysPay(1200, 500));
}

int
main(void)
{
	SilvanStatus status;
	JitModule	jm;

	LlvmErrorsEnter();
	if (!JitModuleCreate("layout", &jm, &status))
	{
		fprintf(stderr, "no JIT: %s: %s\n", status.message, status.detail);
		LlvmErrorsLeave();
		return 1;
	}
	data_layout = LLVMGetModuleDataLayout(jm.module);
	TestKernelArgs(jm.context);
	TestTables(jm.context);
	TestSplitRecords(jm.context);
	TestUnlinkedRecords(jm.context);
	TestTileRecords(jm.context);
	TestIntegerKeys();
	JitModuleDispose(&jm);
	LlvmErrorsLeave();
	UNIT_DONE();
}
