/*
 * llvm_lazy.cpp
 *		Read a module from bitcode one function at a time.
 *
 * LLVMParseBitcodeInContext2 reads a whole module in one call that nothing
 * can interrupt; for the biggest modules jit_split.c hands its helper thread,
 * that is most of a second.  LLVM's lazy reader (getLazyBitcodeModule)
 * reads the module's globals and prototypes first and each function's body
 * only when it is materialized, so the helper reads just the functions it
 * compiles, and polls for a cancel request between them.  The bitcode is
 * borrowed: it must outlive the module.
 *
 * Nothing here throws or longjmps; LLVM's errors are turned into false.
 */
/* LLVM 14's ModuleSummaryIndex.h, which the reader includes, trips -Wuninitialized */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <llvm/Bitcode/BitcodeReader.h>
#pragma GCC diagnostic pop
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>

#include "silvan/llvm_lazy.h"

/* See llvm_lazy.h */
LLVMModuleRef
LlvmReadLazy(LLVMContextRef context, const char *bitcode, size_t len)
{
	llvm::MemoryBufferRef buffer(llvm::StringRef(bitcode, len), "silvan lazy");
	llvm::Expected<std::unique_ptr<llvm::Module>> module =
		llvm::getLazyBitcodeModule(buffer, *llvm::unwrap(context));

	if (!module)
	{
		llvm::consumeError(module.takeError());
		return NULL;
	}
	return llvm::wrap(module->release());
}

/* See llvm_lazy.h */
bool
LlvmMaterialize(LLVMValueRef fn)
{
	llvm::Error error = llvm::unwrap<llvm::Function>(fn)->materialize();

	if (error)
	{
		llvm::consumeError(std::move(error));
		return false;
	}
	return true;
}

/* See llvm_lazy.h */
bool
LlvmMaterializeAll(LLVMModuleRef module)
{
	llvm::Error error = llvm::unwrap(module)->materializeAll();

	if (error)
	{
		llvm::consumeError(std::move(error));
		return false;
	}
	return true;
}
