/*
 * repr.h
 *		In-memory representations of a forest: the plugin interface.
 *
 * A representation decides how the HIR's nodes are laid out in buffers and
 * emits the few pieces of code that depend on that layout: the node type,
 * loading a node, moving to a child, the leaf test, the leaf value and
 * caching a tree.  The loop nest and the walks (codegen*.c) only talk to it
 * through these callbacks, so a new layout is a new repr_*.c file and a
 * line in ReprLookup; no loop-nest code changes.
 *
 * Four layouts (SilvanForge section 6, Treebeard section 3.8; perfect is
 * Hummingbird's PerfectTreeTraversal made one tree):
 *
 *   array   one record per HIR node in HIR order (siblings adjacent), the
 *           left child's index stored, leaves inline pointing to themselves
 *   sparse  records for split nodes only, each with the index of its first
 *           child; leaves in a separate array of values, addressed as
 *           indices past the last split record (a leaf whose sibling is a
 *           split gets an extra dummy hop, so siblings share an array)
 *   reorg   every tree as an implicit complete binary tree (children of
 *           position p at 2p+1, 2p+2), interleaved across trees level by
 *           level: position p of tree t is record p * num_trees + t
 *   perfect the whole forest as one implicit perfect binary tree whose
 *           subtrees are the model's trees, each padded to its own depth
 *           and hung so that every leaf is on the last level: children at
 *           2g, 2g+1 for every record g (from 1), no links stored
 *
 * The first three store the same split records (repr_split.c): the
 * threshold in the forest's precision, a 32-bit link whose meaning is the
 * layout's, and the feature (plus rule flags or a sign, whichever the
 * forest needs).  perfect stores them without the link.
 *
 * The tree table and the category sets are shared by all layouts: the loop
 * nest reads root, depth, fixed hops and group per tree, and categorical
 * splits find their bitset through a set table.
 */
#ifndef SILVAN_REPR_H
#define SILVAN_REPR_H

#include <llvm-c/Core.h>

#include "silvan/hir.h"

typedef struct CodegenContext CodegenContext;

/*
 * The records generated code reads have LLVM twins built by codegen.c and
 * repr_split.c / repr_tiled.c; FIELDNO_* give the LLVM field numbers the
 * code uses, and test_layout.c checks every one against offsetof.
 */

/* One tree of the tree table, in HIR order (CodegenTreeType) */
typedef struct ReprTree
{
#define FIELDNO_REPRTREE_ROOT 0
	int32_t		root;			/* the layout's index of the root */
#define FIELDNO_REPRTREE_DEPTH 1
	int32_t		depth;			/* hops of the longest walk */
#define FIELDNO_REPRTREE_GROUP 2
	int32_t		group;			/* margin of the row it adds to */
#define FIELDNO_REPRTREE_FIXED 3
	int32_t		fixed;			/* first hops that meet no leaf */
#define FIELDNO_REPRTREE_FIRST 4
	int32_t		first;			/* first record of the tree (caching) */
#define FIELDNO_REPRTREE_COUNT 5
	int32_t		count;			/* records from first on (caching) */
	int32_t		reserved[2];	/* two more i32 fields in LLVM */
} ReprTree;

#define REPR_TREE_FIELDS	8

/* Where a categorical split's bitset lies (CodegenCategorySetType) */
typedef struct ReprCategorySet
{
#define FIELDNO_REPRCATEGORYSET_OFFSET 0
	int32_t		offset;
#define FIELDNO_REPRCATEGORYSET_NUM_WORDS 1
	int32_t		num_words;
} ReprCategorySet;

/* Which kinds of split occur, so code is emitted only for those */
#define REPR_HAS_DEFAULT_LEFT	0x01	/* NaN rule, NaN goes left */
#define REPR_HAS_DEFAULT_RIGHT	0x02	/* NaN rule, NaN goes right */
#define REPR_HAS_NAN_TO_ZERO	0x04	/* ZERO or NONE rule: NaN reads as 0 */
#define REPR_HAS_ZERO			0x08	/* ZERO rule: |x| <= 1e-35 is missing */
#define REPR_HAS_NONE			0x40	/* NONE rule: NaN reads as 0, no default */
#define REPR_HAS_LE_INF			0x10	/* x <= +inf: no strict bound exists */
#define REPR_HAS_CATEGORICAL	0x20
#define REPR_HAS_EQ				0x80	/* x == t splits (FLAGS layout only) */

/* Split record layouts (repr_split.c), smallest that expresses the splits */
typedef enum ReprSplitLayout
{
	REPR_SPLIT_PLAIN = 0,		/* {T threshold, i32 link, u32 feature} */
	REPR_SPLIT_SIGN = 1,		/* {T threshold, i32 link, u32 feature, T sign} */
	REPR_SPLIT_FLAGS = 2		/* {T threshold, i32 link, u32 feature_flags} */
} ReprSplitLayout;

/*
 * Split records as C stores them (ReprSplitType builds them for LLVM);
 * PLAIN and FLAGS share a struct.  Link and feature must stay adjacent:
 * the walk loads them as one 64-bit word.
 */
typedef struct ReprSplitNode32
{
#define FIELDNO_SPLIT_THRESHOLD 0
	float		threshold;
#define FIELDNO_SPLIT_LINK 1
	int32_t		left;
#define FIELDNO_SPLIT_FEATURE 2
	uint32_t	feature_flags;
} ReprSplitNode32;

typedef struct ReprSplitNode64
{
	double		threshold;
	int32_t		left;
	uint32_t	feature_flags;
} ReprSplitNode64;

typedef struct ReprSignNode32
{
	float		threshold;
	int32_t		left;
	uint32_t	feature;
#define FIELDNO_SPLIT_SIGN 3
	float		sign;			/* -0.0f: read the feature negated */
} ReprSignNode32;

typedef struct ReprSignNode64
{
	double		threshold;
	int32_t		left;
	uint32_t	feature;
	double		sign;
} ReprSignNode64;

/*
 * Records of the perfect layout (repr_perfect.c): a split record without
 * its link, since children are implicit there
 */
typedef struct ReprPerfectNode32
{
#define FIELDNO_UNLINKED_THRESHOLD 0
	float		threshold;
#define FIELDNO_UNLINKED_FEATURE 1
	uint32_t	feature_flags;
} ReprPerfectNode32;

typedef struct ReprPerfectNode64
{
	double		threshold;
	uint32_t	feature_flags;
} ReprPerfectNode64;

typedef struct ReprPerfectSign32
{
	float		threshold;
	uint32_t	feature;
#define FIELDNO_UNLINKED_SIGN 2
	float		sign;
} ReprPerfectSign32;

typedef struct ReprPerfectSign64
{
	double		threshold;
	uint32_t	feature;
	double		sign;
} ReprPerfectSign64;

#define REPR_MAX_AUX	4

/*
 * aux[3]: the code constants, thresholds and leaf values that code walks
 * read at fixed offsets instead of as immediates (codegen.c,
 * CgCodeConstant): 8-byte slots, a float in the first 4 bytes of its slot
 */
#define REPR_AUX_CODE_CONSTANTS	3

/*
 * The buffers the kernel reads, by number, for code that treats them
 * alike (ReprBufferSlot; compile_image.c copies them)
 */
typedef enum ReprBufferId
{
	REPR_BUFFER_NODES = 0,
	REPR_BUFFER_TREES,
	REPR_BUFFER_CATEGORY_WORDS,
	REPR_BUFFER_CATEGORY_SETS,
	REPR_BUFFER_AUX0			/* aux[i] is REPR_BUFFER_AUX0 + i */
} ReprBufferId;

#define REPR_NUM_BUFFERS	(REPR_BUFFER_AUX0 + REPR_MAX_AUX)

/* What a representation builds; every array is malloc'd and non-empty */
/*
 * How a PLAIN record's compare picks the second of its two children, so
 * that the walk's step is link + (one unordered compare): see repr_split.c
 */
typedef enum ReprPlainForm
{
	REPR_PLAIN_GO_LEFT = 0,		/* slot 1 unless the split's go-left test */
	REPR_PLAIN_BELOW_X,			/* slot 1 iff threshold <u x (NaN right) */
	REPR_PLAIN_X_BELOW			/* slot 1 iff x <u threshold (NaN left, swapped) */
} ReprPlainForm;

typedef struct ReprBuffers
{
	void	   *nodes;
	int64_t		num_nodes;
	size_t		node_size;
	ReprTree   *trees;
	int32_t		num_trees;
	uint32_t   *category_words;
	int64_t		num_category_words;
	ReprCategorySet *category_sets;
	int32_t		num_category_sets;
	void	   *aux[REPR_MAX_AUX];	/* layout's other buffers (leaf values) */
	int64_t		aux_count[REPR_MAX_AUX];
	uint32_t	has;			/* REPR_HAS_* */
	ReprSplitLayout layout;
	ReprPlainForm plain_form;	/* PLAIN: how slot 1 is chosen (repr_split.c) */
	int64_t		num_splits;		/* sparse: split records before the leaves */
	int64_t		num_leaves;
	/* tiled trees (tile_size > 1): records are tiles, walks hop by tile */
	int32_t		tile_size;
	int32_t		num_lut_rows;	/* LUT rows in aux[1] (one more: all zero) */
	bool		gather;			/* SIMD gathers on this CPU */
	bool		carry_hops;		/* perfect: a hop is one add-with-carry (x86 CPUs but AMD's) */
	bool		key_rows;		/* perfect: bounds and rows as integer keys (repr_keys.c) */
	size_t		bytes[REPR_NUM_BUFFERS];	/* allocated size of each buffer
											 * (ReprAlloc) */
	bool		borrowed;		/* the buffers lie in memory someone else owns
								 * (a compile image read in place):
								 * ReprBuffersFree leaves them */
	/*
	 * The layout's record index of each HIR node (global HIR index), where
	 * a walk may enter the buffers at a split (codeWalk); -1 for nodes it
	 * cannot enter at; NULL when the layout has none (tiled trees).  Only
	 * needed while code is generated.
	 */
	int64_t    *record_of;
} ReprBuffers;

/* The values of one loaded node; their meaning is the representation's */
typedef struct ReprNode
{
	LLVMValueRef v_index;
	LLVMValueRef v_threshold;
	LLVMValueRef v_link;		/* i64: the record's link field */
	LLVMValueRef v_fflags;		/* i32: feature, or feature and flags */
	LLVMValueRef v_sign;		/* SIGN layout */
	LLVMValueRef v_record;		/* pointer to the record */
	/* tiles: every slot at once */
	LLVMValueRef v_thresholds;	/* <n x T> */
	LLVMValueRef v_features;	/* <n x i32> */
	LLVMValueRef v_signs;		/* <n x T>, SIGN layout */
	LLVMValueRef v_lut_row;		/* i32 */
} ReprNode;

typedef struct Representation
{
	const char *name;
	/* Lay out the HIR's nodes */
	bool		(*build) (const Hir *hir, ReprBuffers *buffers, SilvanStatus *status);
	/* Name of the variant build chose, for explain */
	const char *(*variant) (const ReprBuffers *buffers);
	/* LLVM type of one node record */
	LLVMTypeRef (*node_type) (CodegenContext *cg);
	/*
	 * Load the node at v_index (i64, the layout's node number); may_be_leaf:
	 * the index may be a leaf's, which the layout must still load safely
	 */
	void		(*load_node) (CodegenContext *cg, LLVMValueRef v_index, bool may_be_leaf,
							  ReprNode *node);
	/*
	 * Index (i64) of the child the row (pointer to its first value) leads
	 * to; may add blocks, leaving the builder in the last one
	 */
	LLVMValueRef (*move_to_child) (CodegenContext *cg, const ReprNode *node,
								   LLVMValueRef v_row);
	/* i1: is the loaded node a leaf? */
	LLVMValueRef (*is_leaf) (CodegenContext *cg, const ReprNode *node);
	/* Leaf value (forest precision) of the leaf at v_index */
	LLVMValueRef (*leaf_value) (CodegenContext *cg, LLVMValueRef v_index);
	/* Prefetch the nodes of the tree whose table record is v_tree (pointer) */
	void		(*cache_tree) (CodegenContext *cg, LLVMValueRef v_tree);

	/* What the schedules, the default and the tuner ask of a layout */
	bool		tree_tiles;		/* takes tileTrees() above 1 (tiled nodes) */
	bool		gpu;			/* in the GPU tuner's space (Table 5) */
	bool		vector_rows;	/* vectorWalk walks rows as vector lanes in it */
	bool		integer_keys;	/* may store its bounds as keys (buffers->key_rows) */
	/* does it surely fit a forest of this shape? NULL: always */
	bool		(*fits) (int32_t num_trees, int32_t max_depth, int64_t num_nodes);
	/*
	 * The default schedule's layout: the layouts are asked in ascending
	 * default_rank (0: never), the first whose default_for says yes (NULL:
	 * always) is taken
	 */
	int			default_rank;
	bool		(*default_for) (const Forest *forest);
	/*
	 * A layout the adapter races against this one where it is a lock-step
	 * default and the host profile is measured (default_race.c); NULL: none
	 */
	const char *race_against;
} Representation;

/* repr.c: the layouts' table */
extern const Representation *ReprLookup(const char *name);
extern int	ReprCount(void);
/* Layout i of the table; NULL out of range */
extern const Representation *ReprAt(int i);
/* Position of the named layout in the table; -1 if none */
extern int	ReprIndex(const char *name);
/* The layout the default schedule takes for a forest */
extern const Representation *ReprDefaultFor(const Forest *forest);
/* The layouts' names as a list ("a, b or c"), for messages */
extern const char *ReprNamesText(char *text, size_t size);
extern void ReprBuffersFree(ReprBuffers *buffers);
extern void **ReprBufferSlot(ReprBuffers *buffers, ReprBufferId id);
extern void *ReprAlloc(ReprBuffers *buffers, ReprBufferId id, size_t count, size_t size);
extern void *ReprRealloc(ReprBuffers *buffers, ReprBufferId id, size_t count, size_t size);
extern bool ReprBuildTables(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status);
extern void ReprPrefetch(CodegenContext *cg, LLVMValueRef v_base, LLVMValueRef v_bytes,
						 int32_t max_lines);
extern void ReprCacheRecords(CodegenContext *cg, LLVMValueRef v_tree);
extern bool ReprAllocRecordOf(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status);

/*
 * repr_split.c: split records shared by every layout.  A ReprRecord is one
 * node before it is stored; link is an index into the caller's record list
 * (the first of the two children, which are adjacent).  ReprChooseLayout
 * may swap the two children's records in the list, so a record's place in
 * the list is not its HIR node's: ReprRecord.hir says which node it is
 * (what ReprBuffers.record_of is built from).
 */
typedef struct ReprRecord
{
	double		threshold;		/* or leaf value */
	int32_t		set;			/* categorical: set number */
	int32_t		link;			/* first child's record, -1 on leaves */
	int64_t		hir;			/* global HIR node it describes (-1: none);
								 * moves with the record when siblings swap */
	uint32_t	feature_flags;
	bool		leaf;
	bool		numeric;		/* numeric split with the NaN rule */
	bool		categorical;	/* set number in the threshold slot */
	bool		mirrored;		/* SIGN layout: children swapped, x negated */
} ReprRecord;

extern void ReprDescribe(const Hir *hir, int64_t hir_node, ReprBuffers *buffers,
						 ReprRecord *rec);
extern ReprRecord *ReprDescribeHir(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status);
extern void ReprDescribeNode(const Forest *forest, const ForestNode *node,
							 ReprBuffers *buffers, ReprRecord *rec);
extern ReprSplitLayout ReprChooseLayout(ReprRecord *recs, int64_t num_records,
										ReprBuffers *buffers, ForestPrecision precision,
										bool swap_children);
extern LLVMValueRef ReprSplitGoRightAt(CodegenContext *cg, const ReprNode *node,
									   LLVMValueRef v_x);
extern size_t ReprRecordSize(ReprSplitLayout layout, ForestPrecision precision);
extern void ReprStoreUnlinked(const ReprRecord *rec, ReprSplitLayout layout,
							  ForestPrecision precision, void *nodes, int64_t slot);
extern size_t ReprUnlinkedSize(ReprSplitLayout layout, ForestPrecision precision);
extern LLVMTypeRef ReprUnlinkedType(LLVMContextRef context, ForestPrecision precision,
									ReprSplitLayout layout);
extern void ReprStoreRecord(const ReprRecord *rec, ReprSplitLayout layout,
							ForestPrecision precision, void *nodes, int64_t slot,
							int32_t link);
extern const char *ReprSplitName(ReprSplitLayout layout);

/* repr_keys.c: integer keys of float values, for walks that compare them */
#define REPR_KEY_HOPS_PER_FEATURE	4
extern uint32_t ReprKeyOfNaN(ReprPlainForm form);
extern uint32_t ReprKeyOfBound(float b);
extern void ReprKeyRows(const float *values, size_t n, ReprPlainForm form, uint32_t *keys);
extern bool ReprKeysPay(int64_t hops, int32_t num_features);
extern bool ReprKeysFit(const ReprBuffers *buffers, ForestPrecision precision);
extern LLVMTypeRef ReprSplitType(LLVMContextRef context, ForestPrecision precision,
								 ReprSplitLayout layout);
extern void ReprLoadSplit(CodegenContext *cg, LLVMValueRef v_index, bool signed_link,
						  ReprNode *node);
extern LLVMValueRef ReprGoRight(CodegenContext *cg, const ReprNode *node,
								LLVMValueRef v_row);
extern LLVMValueRef ReprLoadThreshold(CodegenContext *cg, LLVMValueRef v_index);

/*
 * repr_tiled.c: tiles of Treebeard (section 3), shared by the layouts'
 * tiled variants.  A tile record holds its slots' thresholds, features
 * (and signs), a 32-bit link (-1: a leaf record, value in the first
 * threshold) and its LUT row.  Describing, storing and evaluating tiles is here;
 * where tiles and leaves go is the layout's.
 */
typedef struct ReprTiles
{
	const Hir  *hir;
	ReprRecord *recs;			/* per global tile, tile_size slots */
	int32_t		n;
} ReprTiles;

/*
 * Byte offsets of a tile record's fields as C stores them (ReprTileLayout)
 * and, for ReprTileType's LLVM struct, its field numbers
 */
typedef struct ReprTileOffsets
{
	size_t		thresholds;
	size_t		features;
	size_t		signs;
	size_t		link;
	size_t		lut_row;
	size_t		size;
} ReprTileOffsets;

#define FIELDNO_TILE_THRESHOLDS 0
#define FIELDNO_TILE_FEATURES 1
#define FIELDNO_TILE_SIGNS 2		/* SIGN layout only */
#define FIELDNO_TILE_LINK(layout) ((layout) == REPR_SPLIT_SIGN ? 3 : 2)
#define FIELDNO_TILE_LUT_ROW(layout) (FIELDNO_TILE_LINK(layout) + 1)

extern bool ReprTilesBegin(const Hir *hir, ReprBuffers *buffers, ReprTiles *tiles,
						   SilvanStatus *status);
extern void ReprTilesEnd(ReprTiles *tiles);
extern void ReprStoreTile(const ReprTiles *tiles, ReprBuffers *buffers, int64_t slot,
						  int64_t tile, int32_t link, int32_t lut_row);
extern void ReprStoreLeafTile(const ReprTiles *tiles, ReprBuffers *buffers, int64_t slot,
							  double value);
extern void ReprSetTileLink(const ReprTiles *tiles, ReprBuffers *buffers, int64_t slot,
							int32_t link, int32_t lut_row);
extern double ReprTileRefValue(const Hir *hir, int32_t hir_tree, int32_t ref);
extern ReprTileOffsets ReprTileLayout(int32_t n, ReprSplitLayout layout,
									  ForestPrecision precision);
extern LLVMTypeRef ReprTileType(LLVMContextRef context, ForestPrecision precision,
								ReprSplitLayout layout, int32_t n);

/* Shared by every layout: the record layout's name, and split or tile records */
extern const char *ReprRecordVariant(const ReprBuffers *buffers);
extern LLVMTypeRef ReprRecordType(CodegenContext *cg);
extern void ReprLoadTile(CodegenContext *cg, LLVMValueRef v_index, ReprNode *node);
extern LLVMValueRef ReprTileChild(CodegenContext *cg, const ReprNode *node,
								  LLVMValueRef v_row);
extern LLVMValueRef ReprTileIsLeafRecord(CodegenContext *cg, const ReprNode *node);
extern LLVMValueRef ReprTileLeafValue(CodegenContext *cg, LLVMValueRef v_index);

/* the layouts */
extern const Representation ReprArray;
extern const Representation ReprSparse;
extern const Representation ReprReorg;
extern const Representation ReprPerfect;

/* repr_perfect.c: does a forest of this shape surely fit the perfect layout? */
extern bool ReprPerfectFits(int32_t num_trees, int32_t max_depth, int64_t num_nodes);

#endif							/* SILVAN_REPR_H */
