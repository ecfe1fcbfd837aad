/*
 * llvm_lazy.h
 *		Read a module from bitcode one function at a time
 *		(src/runtime/llvm_lazy.cpp).
 */
#ifndef SILVAN_LLVM_LAZY_H
#define SILVAN_LLVM_LAZY_H

#include <stdbool.h>
#include <stddef.h>

#include <llvm-c/Core.h>

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * The module in bitcode (len bytes, which must outlive it) in context,
 * with its globals and prototypes read and no function body yet: each
 * defined function is materializable (LLVMIsDeclaration is false) until
 * LlvmMaterialize reads it.  NULL if the bitcode does not read.
 */
extern LLVMModuleRef LlvmReadLazy(LLVMContextRef context, const char *bitcode, size_t len);

/* Read the body of fn, a function of such a module; false if it does not read */
extern bool LlvmMaterialize(LLVMValueRef fn);

/* Read whatever of the module is still unread; false if it does not read */
extern bool LlvmMaterializeAll(LLVMModuleRef module);

#ifdef __cplusplus
}
#endif

#endif							/* SILVAN_LLVM_LAZY_H */
