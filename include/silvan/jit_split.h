/*
 * jit_split.h
 *		Emit a big module as two objects, half on a helper thread
 *		(src/runtime/jit_split.c).
 */
#ifndef SILVAN_JIT_SPLIT_H
#define SILVAN_JIT_SPLIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "silvan/status.h"

/* What the helper makes its target machine from */
typedef struct JitSplitTarget
{
	LLVMTargetRef target;
	const char *triple;
	const char *cpu;
	const char *features;
	LLVMCodeGenOptLevel level;
} JitSplitTarget;

/* A split in progress */
typedef struct JitSplit
{
	bool		started;
	pthread_t	thread;
	JitSplitTarget target;
	const char *bitcode;		/* the whole module, for the helper */
	size_t		bitcode_len;
	char		prefix[64];		/* the entry's name, prefix of the others' */
	bool	   *parts;			/* per defined function: the helper's? */
	int			part_count;		/* the module's defined functions */
	LLVMMemoryBufferRef object;		/* the helper's object */
	char		failure[SILVAN_DETAIL_LEN];	/* the helper's, "" if none */
	bool		canceled;		/* the helper stopped on a cancel request */
	char		diagnosed[SILVAN_DETAIL_LEN];
} JitSplit;

extern bool JitSplitStart(LLVMModuleRef module, const char *entry, const char *bitcode,
						  size_t len, const JitSplitTarget *target, JitSplit *split);
extern void JitSplitSetMinInstructions(int64_t n);
extern bool JitSplitFinish(JitSplit *split, LLVMMemoryBufferRef *object,
						   SilvanStatus *status);

#endif							/* SILVAN_JIT_SPLIT_H */
