/*
 * repr.h
 *		In-memory representations of a forest: the plugin interface.
 *
 * A representation decides how the HIR's nodes are laid out in buffers and
 * emits the few pieces of code that depend on that layout: the node type,
 * loading a node, moving to a child, the leaf test and the leaf value.  The
 * loop nest (codegen.c) only talks to it through these callbacks, so a new
 * layout (sparse, reorg, tiled) is a new repr_*.c file and a line in
 * ReprLookup.
 *
 * The tree table and the category sets are shared by all layouts: the loop
 * nest reads root, depth and group per tree, and categorical splits find
 * their bitset through a set table.
 */
#ifndef SILVAN_REPR_H
#define SILVAN_REPR_H

#include <llvm-c/Core.h>

#include "silvan/hir.h"

typedef struct CodegenContext CodegenContext;

/* One tree of the tree table, in HIR order */
typedef struct ReprTree
{
	int32_t		root;			/* global node index of the root */
	int32_t		depth;			/* steps of the walk */
	int32_t		group;			/* margin of the row it adds to */
	int32_t		padded;			/* 1: unrolled walk, 0: counted loop */
} ReprTree;

/* Where a categorical split's bitset lies in the category words */
typedef struct ReprCategorySet
{
	int32_t		offset;
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

/* What a representation builds; every array is malloc'd and non-empty */
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
	uint32_t	has;			/* REPR_HAS_* */
	uint32_t	layout;			/* bits private to the representation */
} ReprBuffers;

/* The values of one loaded node; their meaning is the representation's */
typedef struct ReprNode
{
	LLVMValueRef v_index;
	LLVMValueRef v_fields[6];
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
	/* Load the node at v_index (i64, the layout's node number) */
	void		(*load_node) (CodegenContext *cg, LLVMValueRef v_index, ReprNode *node);
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
} Representation;

/* repr.c */
extern const Representation *ReprLookup(const char *name);
extern void ReprBuffersFree(ReprBuffers *buffers);
extern bool ReprBuildTables(const Hir *hir, ReprBuffers *buffers, SilvanStatus *status);

/* repr_array.c */
extern const Representation ReprArray;

#endif							/* SILVAN_REPR_H */
