/*
 * llvm_load.h
 *		LLVM loaded on the first compile, not with silvan (llvm_load.c).
 */
#ifndef SILVAN_LLVM_LOAD_H
#define SILVAN_LLVM_LOAD_H

#include <stdbool.h>

#include "silvan/status.h"

extern bool LlvmLoad(SilvanStatus *status);
extern bool LlvmLoaded(void);

/* The stubs' resolver (llvm_stubs.c): the address for stub index, LLVM loaded */
extern void *LlvmStubResolve(int index) __attribute__((visibility("hidden")));

#endif							/* SILVAN_LLVM_LOAD_H */
