/*
 * codegen.h
 *		Lowering MIR to LLVM IR through the LLVM-C API.
 *
 * The generated function has the signature of SilvanBatchFn: rows and
 * margins of the forest's precision, and the representation's buffers.
 * Model data stays in the buffers, so the code only depends on the loop
 * nest, the precision, the feature and group counts and which kinds of
 * split occur.
 */
#ifndef SILVAN_CODEGEN_H
#define SILVAN_CODEGEN_H

#include <llvm-c/Core.h>

#include "silvan/mir.h"
#include "silvan/repr.h"

typedef void (*SilvanBatchFn) (const void *rows, int64_t num_rows, void *acc,
							   const void *nodes, const ReprTree *trees,
							   const uint32_t *category_words,
							   const ReprCategorySet *category_sets);

/* State of one function being emitted; shared with the representation */
struct CodegenContext
{
	const Forest *forest;
	const Mir  *mir;
	const Representation *repr;
	const ReprBuffers *buffers;

	LLVMContextRef context;
	LLVMModuleRef module;
	LLVMBuilderRef builder;
	LLVMValueRef function;

	LLVMTypeRef t_value;		/* float or double */
	LLVMTypeRef t_i1;
	LLVMTypeRef t_i32;
	LLVMTypeRef t_i64;
	LLVMTypeRef t_node;
	LLVMTypeRef t_tree;
	LLVMTypeRef t_set;

	LLVMValueRef v_rows;
	LLVMValueRef v_num_rows;
	LLVMValueRef v_acc;
	LLVMValueRef v_nodes;
	LLVMValueRef v_trees;
	LLVMValueRef v_category_words;
	LLVMValueRef v_category_sets;
};

/* Emit function fn_name into module; false and a status on failure */
extern bool CodegenForest(const Mir *mir, const Representation *repr,
						  const ReprBuffers *buffers, LLVMModuleRef module,
						  const char *fn_name, const char *cpu,
						  const char *features, SilvanStatus *status);

/* Short emission helpers */
static inline LLVMValueRef
CgInt32(CodegenContext *cg, int64_t v)
{
	return LLVMConstInt(cg->t_i32, (unsigned long long) v, true);
}

static inline LLVMValueRef
CgInt64(CodegenContext *cg, int64_t v)
{
	return LLVMConstInt(cg->t_i64, (unsigned long long) v, true);
}

static inline LLVMValueRef
CgValue(CodegenContext *cg, double v)
{
	return LLVMConstReal(cg->t_value, v);
}

#endif							/* SILVAN_CODEGEN_H */
