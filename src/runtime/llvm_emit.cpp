/*
 * llvm_emit.cpp
 *		Instruction selection and object emission that stop on a cancel
 *		request.
 *
 * Most of a big compile's time is LLVM's code generation, and the C API
 * runs it as one call over the whole module (LLVMTargetMachineEmitTo
 * MemoryBuffer), which nothing can interrupt: a schedule that makes big
 * functions could hold a backend past its statement_timeout for as long
 * as LLVM takes.  LLVM's legacy pass manager generates code one function
 * at a time, every machine function pass on a function before the next
 * function, in one function pass manager; a function pass added after
 * the target's passes joins that manager and so runs after each
 * function's code is emitted.  Ours polls CancelRequested() (cancel.h);
 * on a request it turns the module's remaining functions into
 * declarations, which the pass manager skips, so the call returns after
 * the function in progress, and the output is thrown away.  The compile
 * bound (compile_cost.c) keeps any one function small enough that this is
 * well within a second.
 *
 * Otherwise this is LLVM 14's own LLVMTargetMachineEmit
 * (lib/Target/TargetMachineC.cpp) line for line.  Nothing here throws or
 * longjmps; it runs inside the caller's LlvmErrorsEnter bracket.
 */
#include <string.h>

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Pass.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "silvan/cancel.h"
#include "silvan/llvm_emit.h"

namespace
{

/* After each function's code: stop here if asked (see above) */
class CancelPoll : public llvm::FunctionPass
{
public:
	static char ID;

	explicit CancelPoll(bool *canceled) : llvm::FunctionPass(ID), canceled(canceled)
	{
	}

	bool		runOnFunction(llvm::Function &fn) override
	{
		llvm::Module *module = fn.getParent();

		if (*canceled || !CancelRequested())
			return false;
		*canceled = true;
		for (auto it = std::next(fn.getIterator()); it != module->end(); ++it)
			if (!it->isDeclaration())
				it->deleteBody();
		return false;
	}

	void		getAnalysisUsage(llvm::AnalysisUsage &usage) const override
	{
		usage.setPreservesAll();
	}

	llvm::StringRef getPassName() const override
	{
		return "silvan cancel poll";
	}

private:
	bool	   *canceled;
};

char		CancelPoll::ID = 0;

}								/* namespace */

/* See llvm_emit.h */
bool
LlvmEmitCancellable(LLVMTargetMachineRef tm_ref, LLVMModuleRef module_ref,
					LLVMCodeGenFileType type, char **message, LLVMMemoryBufferRef *out,
					bool *canceled)
{
	llvm::TargetMachine *tm = reinterpret_cast<llvm::TargetMachine *>(tm_ref);
	llvm::Module *module = llvm::unwrap(module_ref);
	llvm::SmallString<0> code;
	llvm::raw_svector_ostream stream(code);
	llvm::legacy::PassManager passes;
	llvm::CodeGenFileType file_type = type == LLVMAssemblyFile ?
		llvm::CGFT_AssemblyFile : llvm::CGFT_ObjectFile;

	*message = NULL;
	*out = NULL;
	*canceled = false;
	module->setDataLayout(tm->createDataLayout());
	if (tm->addPassesToEmitFile(passes, stream, nullptr, file_type))
	{
		*message = strdup("TargetMachine can't emit a file of this type");
		return false;
	}
	passes.add(new CancelPoll(canceled));
	passes.run(*module);
	if (*canceled)
		return false;
	*out = LLVMCreateMemoryBufferWithMemoryRangeCopy(code.data(), code.size(), "");
	return *out != NULL;
}
