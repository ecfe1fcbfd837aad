/*
 * llvm_emit.h
 *		Code generation that a cancel request can stop between functions
 *		(src/runtime/llvm_emit.cpp).
 */
#ifndef SILVAN_LLVM_EMIT_H
#define SILVAN_LLVM_EMIT_H

#include <stdbool.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * What LLVMTargetMachineEmitToMemoryBuffer does, polling CancelRequested()
 * (cancel.h) after each function's machine code: on a request the
 * remaining functions are skipped, the output is dropped and *canceled is
 * set.  false with *message (LLVMDisposeMessage it) or *canceled on
 * failure; the module may have lost function bodies after a cancel.
 */
extern bool LlvmEmitCancellable(LLVMTargetMachineRef tm, LLVMModuleRef module,
								LLVMCodeGenFileType type, char **message,
								LLVMMemoryBufferRef *out, bool *canceled);

#ifdef __cplusplus
}
#endif

#endif							/* SILVAN_LLVM_EMIT_H */
