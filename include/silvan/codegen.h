/*
 * codegen.h
 *		Lowering MIR to LLVM IR through the LLVM-C API.
 *
 * The generated function takes one argument, a SilvanKernelArgs: rows and
 * margins of the forest's precision, the representation's buffers, the
 * partial buffer of privatized reductions, the interrupt flag and the
 * runtime's parallel-for.  Model data stays in the buffers, so the code
 * only depends on the loop nest, the precision, the feature and group
 * counts and which kinds of split occur.  Each parallel loop's body is
 * outlined into a function of its own, (context, begin, end, chunk), that
 * the runtime's threads call.
 */
#ifndef SILVAN_CODEGEN_H
#define SILVAN_CODEGEN_H

#include <signal.h>

#include <llvm-c/Core.h>

#include "silvan/compile_cost.h"
#include "silvan/mir.h"
#include "silvan/repr.h"
#include "silvan/runtime.h"
#include "silvan/target.h"

/*
 * What one call of a compiled forest gets.  CodegenKernelArgsType builds
 * the same struct for LLVM; FIELDNO_* are its field numbers, which the
 * generated code uses and test_layout.c checks against offsetof.
 */
typedef struct SilvanKernelArgs
{
#define FIELDNO_KERNELARGS_ROWS 0
	const void *rows;
#define FIELDNO_KERNELARGS_NUM_ROWS 1
	int64_t		num_rows;
#define FIELDNO_KERNELARGS_ACC 2
	void	   *acc;
#define FIELDNO_KERNELARGS_PARTIALS 3
	void	   *partials;		/* (max_chunks - 1) zeroed slices of
								 * num_rows * num_groups values */
#define FIELDNO_KERNELARGS_MAX_CHUNKS 4
	int64_t		max_chunks;		/* chunks a privatizing loop may use */
#define FIELDNO_KERNELARGS_NODES 5
	const void *nodes;
#define FIELDNO_KERNELARGS_TREES 6
	const ReprTree *trees;
#define FIELDNO_KERNELARGS_CATEGORY_WORDS 7
	const uint32_t *category_words;
#define FIELDNO_KERNELARGS_CATEGORY_SETS 8
	const ReprCategorySet *category_sets;
#define FIELDNO_KERNELARGS_AUX 9
	const void *aux[REPR_MAX_AUX];
#define FIELDNO_KERNELARGS_INTERRUPT 10
	volatile sig_atomic_t *interrupt;	/* read as i32 */
#define FIELDNO_KERNELARGS_PARALLEL_FOR 11
	int64_t		(*parallel_for) (RuntimeLoopBody body, void *context,
								 int64_t begin, int64_t end, int64_t max_chunks);
} SilvanKernelArgs;

#define KERNEL_ARGS_FIELDS	12

typedef void (*SilvanBatchFn) (const SilvanKernelArgs *args);

/* The values a function being emitted reads from its arguments */
typedef struct CodegenFunction
{
	LLVMValueRef function;
	LLVMBasicBlockRef b_allocas;	/* allocas only; branches to the body */
	LLVMBasicBlockRef b_return;
	LLVMValueRef v_args;
	LLVMValueRef v_rows;
	LLVMValueRef v_num_rows;
	LLVMValueRef v_acc;
	LLVMValueRef v_partials;
	LLVMValueRef v_max_chunks;
	LLVMValueRef v_nodes;
	LLVMValueRef v_trees;
	LLVMValueRef v_category_words;
	LLVMValueRef v_category_sets;
	LLVMValueRef v_aux[REPR_MAX_AUX];
	LLVMValueRef v_interrupt;
	LLVMValueRef v_parallel_for;
} CodegenFunction;

/* State of the module being emitted; shared with the representation */
struct CodegenContext
{
	const Forest *forest;
	const Mir  *mir;
	const Representation *repr;
	const ReprBuffers *buffers;
	const char *fn_name;
	const Target *target;		/* where the code runs (target.h) */
	const char *cpu;			/* target-cpu and target-features */
	const char *features;
	int			num_outlined;

	LLVMContextRef context;
	LLVMModuleRef module;
	LLVMBuilderRef builder;
	unsigned	md_invariant;	/* kind id of !invariant.load */
	LLVMValueRef md_empty;

	LLVMTypeRef t_value;		/* float or double */
	LLVMTypeRef t_i1;
	LLVMTypeRef t_i8p;
	LLVMTypeRef t_i32;
	LLVMTypeRef t_i64;
	LLVMTypeRef t_node;
	LLVMTypeRef t_tree;
	LLVMTypeRef t_set;
	LLVMTypeRef t_args;
	LLVMTypeRef t_body;			/* outlined parallel loop body */
	LLVMTypeRef t_parallel_for;

	/* the function being emitted: main kernel or an outlined body */
	CodegenFunction fn;
	/* v_nodes and friends of the function being emitted, for the layouts */
	LLVMValueRef v_nodes;
	LLVMValueRef v_trees;
	LLVMValueRef v_category_words;
	LLVMValueRef v_category_sets;
	LLVMValueRef v_aux[REPR_MAX_AUX];
	/* chunks each privatizing loop used, by MIR op index */
	LLVMValueRef v_chunks[MIR_MAX_OPS];
	/* codeWalk: splits that may still be compiled into code, all trees */
	int64_t		code_nodes_left;
	/*
	 * A specialized tree loop over one fixed row emits trees up to
	 * specialized_hi (else -1); codeWalk walks the next few trees of such
	 * a loop in one call and keeps their leaves, for code_cache_count trees
	 * from code_cache_first, in code_cache_out.  The loop resets the count.
	 */
	int64_t		specialized_hi;
	/*
	 * Inside a specialized iteration outlined into its own function
	 * (codegen.c, OutlinesIterations): splits that may still go inline into
	 * it, after which codeWalk calls functions as elsewhere; -1 outside.
	 */
	int64_t		code_inline_left;
	int64_t		code_categorical;	/* categorical splits put into code */
	/* code constants (CgCodeConstant): 8-byte slots, and an index by value */
	uint64_t   *code_consts;
	int64_t		num_code_consts;
	int64_t		cap_code_consts;
	int64_t    *code_const_index;	/* open addressing: slot + 1, 0 empty */
	int64_t		code_const_index_size;
	bool		code_consts_failed;	/* out of memory: the compile fails */
	bool		canceled;		/* a cancel request came: emit nothing more */
	/* a gpu block's rows staged in shared memory (cache), and its first row */
	LLVMValueRef v_gpu_stage;
	LLVMValueRef v_gpu_stage_lo;
	/* a shared reduction's partial sums and extents, by thread (CgEmitGpuLoop) */
	LLVMValueRef v_gpu_parts;
	LLVMValueRef v_gpu_extents;
	int64_t		emulated_shared_used;	/* bytes of the emulated grid's shared memory laid out */
	int32_t		code_cache_first;
	int32_t		code_cache_count;
	LLVMValueRef code_cache_out;
	LLVMValueRef code_cache_row;
};

/* Parameters a target's kernel takes after the arguments (Target.kernel_params) */
#define CODEGEN_MAX_KERNEL_PARAMS	4

/* Margins a specialized tree loop keeps in registers (more stay in memory) */
#define CODEGEN_MAX_LOCAL_GROUPS	16

/* Splits all code walks of a kernel compile into code, at most */
#define CODEGEN_MAX_CODE_NODES		(1 << 18)

/* Splits of code walks inline in one outlined specialized iteration */
#define CODEGEN_INLINE_CODE_NODES	2048

/*
 * What the loops around an op have fixed, as LLVM values of the function
 * being emitted.  Ranges (lo, hi) and values of index variables are i64;
 * the fixed tree and row are loaded once by the loop that fixes them.
 */
typedef struct CodegenEnv
{
	LLVMValueRef v_lo[SCHEDULE_MAX_VARS];
	LLVMValueRef v_hi[SCHEDULE_MAX_VARS];
	LLVMValueRef v_val[SCHEDULE_MAX_VARS];
	LLVMValueRef v_target;		/* T*: acc, or the chunk's partial slice */
	LLVMValueRef v_tree;		/* i64 HIR position of the fixed tree */
	LLVMValueRef v_tree_rec;	/* pointer to its ReprTree */
	LLVMValueRef v_root;		/* i64 */
	LLVMValueRef v_depth;		/* i32 */
	LLVMValueRef v_fixed;		/* i32 */
	LLVMValueRef v_group;		/* i32 */
	LLVMValueRef v_row;			/* i64 fixed row */
	LLVMValueRef v_row_ptr;		/* T* to its first value */
	/* the innermost loop's lanes */
	int32_t		width;
	int16_t		lane_var;
	int16_t		lane_iv;		/* the variable the lanes' loop steps: lane k at its value + k */
	/* a specialized tree loop over one row: its margins, one alloca each */
	int32_t		num_local;
	LLVMValueRef v_local[CODEGEN_MAX_LOCAL_GROUPS];
	/* cache(i) over a bitvector walk of rows: one iteration's rows staged */
	LLVMValueRef v_stage;		/* T*: feature f of row lo + r at f * stage_stride + r */
	LLVMValueRef v_stage_lo;	/* i64: row lo */
	int64_t		stage_stride;
	/* and, where nothing below outlines or shares the target, its margins */
	LLVMValueRef v_stage_acc;	/* T*: group g of row lo + r at g * stage_stride + r */
} CodegenEnv;

#define CODEGEN_ENV_SLOTS	(3 * SCHEDULE_MAX_VARS + 13)

/* What CodegenForest emitted, for the choice of code generation level */
typedef struct CodegenStats
{
	int64_t		code_splits;	/* splits compiled into code (codeWalk) */
	int64_t		code_categorical;	/* of them categorical */
	/* the code constants (malloc'd, the caller's), for aux[REPR_AUX_CODE_CONSTANTS] */
	uint64_t   *code_consts;
	int64_t		num_code_consts;
} CodegenStats;

/* A counted loop being emitted (CgLoopOpen, CgLoopClose) */
typedef struct CodegenLoop
{
	LLVMBasicBlockRef b_head;
	LLVMBasicBlockRef b_exit;
	LLVMValueRef v_iv;
} CodegenLoop;

/* codegen.c */
extern LLVMTypeRef CodegenKernelArgsType(LLVMContextRef context);
extern LLVMTypeRef CodegenTreeType(LLVMContextRef context);
extern LLVMTypeRef CodegenCategorySetType(LLVMContextRef context);
extern bool CodegenForest(const Mir *mir, const Representation *repr,
						  const ReprBuffers *buffers, LLVMModuleRef module,
						  const char *fn_name, const Target *target, const char *cpu,
						  const char *features, CodegenStats *stats,
						  SilvanStatus *status);
extern LLVMBasicBlockRef CgNewBlock(CodegenContext *cg, const char *name);
extern LLVMValueRef CgLoad(CodegenContext *cg, LLVMTypeRef type, LLVMValueRef v_ptr,
						   const char *name);
extern LLVMValueRef CgCodeConstant(CodegenContext *cg, LLVMTypeRef type, double value);
/* The function name (an LLVM intrinsic) of type t_fn, declared in the module on first use */
extern LLVMValueRef CgDeclare(CodegenContext *cg, const char *name, LLVMTypeRef t_fn);
extern LLVMValueRef CgMaskedGather(CodegenContext *cg, LLVMTypeRef t_elem, LLVMValueRef v_ptrs,
								   unsigned n, const char *name);
extern LLVMValueRef CgAlloca(CodegenContext *cg, LLVMTypeRef type, LLVMValueRef v_count,
							 const char *name);
extern LLVMValueRef CgVarValue(CodegenContext *cg, CodegenEnv *env, const MirPath *path,
							   int var);
extern int	CgRootVar(CodegenContext *cg, IndexKind kind);
extern LLVMValueRef CgLoadTreeField(CodegenContext *cg, LLVMValueRef v_rec, unsigned f,
								   const char *name);
extern void CgLoadTree(CodegenContext *cg, LLVMValueRef v_tree, LLVMValueRef *v_rec,
					   LLVMValueRef *v_root, LLVMValueRef *v_depth,
					   LLVMValueRef *v_fixed, LLVMValueRef *v_group);
extern LLVMValueRef CgRowPointer(CodegenContext *cg, LLVMValueRef v_row);
extern bool CgTargetHas(const CodegenContext *cg, const char *name);
extern void CgBeginHelper(CodegenContext *cg, LLVMValueRef fn, CodegenFunction *saved,
						  LLVMBasicBlockRef *b_saved);
extern void CgEndHelper(CodegenContext *cg, const CodegenFunction *saved,
						LLVMBasicBlockRef b_saved);
extern void CgFinishStraight(CodegenContext *cg, LLVMValueRef fn);
extern void CgLoopOpen(CodegenContext *cg, CodegenLoop *loop, const char *name,
					   LLVMValueRef v_start, LLVMValueRef v_end);
extern void CgLoopClose(CodegenContext *cg, CodegenLoop *loop, int64_t step);
extern LLVMValueRef CgMin64(CodegenContext *cg, LLVMValueRef a, LLVMValueRef b);
extern void CgRootSpan(CodegenContext *cg, CodegenEnv *env, const MirPath *path, IndexKind kind,
					   LLVMValueRef *v_lo, LLVMValueRef *v_hi);
extern void CgEmitLoopBody(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
						   const MirPath *path);
extern LLVMValueRef CgEmptyValue(CodegenContext *cg, int32_t w);

/* codegen_gpu.c: a loop mapped to a gpu dimension (the outermost: the kernel's phases) */
extern void CgEmitGpuLoop(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
						  const MirPath *path, LLVMValueRef v_lo, LLVMValueRef v_hi);

/* compile.c: tests force tile feature gathers on (1) or off (0); -1 by CPU */
extern void CodegenSetGatherPolicy(int policy);
/* compile.c: tests force perfect's add-with-carry hops on (1) or off (0); -1 by CPU */
extern void CodegenSetCarryPolicy(int policy);
/*
 * codegen.c: has a cancel request come (cancel.h)?  Polled once per copy
 * of a specialized loop's body and once per tree function; once true,
 * the loops that poll emit nothing more and CodegenForest fails
 */
extern bool CgCanceled(CodegenContext *cg);
/* codegen.c: v (a scalar) splatted to a vector of lanes lanes */
extern LLVMValueRef CgSplat(LLVMBuilderRef b, LLVMValueRef v, unsigned lanes);
/* codegen.c: is feature name (LLVM's, without the sign) on in a +a,-b,... list? */
extern bool CgHasFeature(const char *features, const char *name);

/*
 * A walk strategy's code generation (walk.h: WalkStrategy.codegen, in
 * the strategy's file).  emit walks env->width lanes and leaves each
 * lane's leaf value (forest precision), row (i64) and group (i32) for the
 * reduce.
 */
typedef struct WalkCodegen
{
	void		(*emit) (CodegenContext *cg, const MirOp *op, CodegenEnv *env,
						 LLVMValueRef *v_leaf, LLVMValueRef *v_rows, LLVMValueRef *v_groups);
	/*
	 * The code one emission of the op with width lanes makes, about, for
	 * the compile's bound (compile_cost.c); tree is the HIR tree a
	 * specialized copy fixes, else -1
	 */
	void		(*cost) (CostModel *model, const MirOp *op, int32_t width, int32_t tree,
						 WalkCost *cost);
	/*
	 * The directive that makes the op's code large, and how, where the
	 * strategy's own arguments do (compile_cost.c); NULL: none
	 */
	void		(*blame) (const MirOp *op, const char *loop, char *directive,
						  size_t directive_size, char *blame, size_t blame_size);
} WalkCodegen;

/* One lane of a walk: where it starts and what it reads */
typedef struct WalkLane
{
	LLVMValueRef v_row;			/* i64 */
	LLVMValueRef v_row_ptr;
	LLVMValueRef v_tree;		/* i64 HIR position (a constant when specialized) */
	LLVMValueRef v_root;		/* i64 */
	LLVMValueRef v_depth;		/* i32 */
	LLVMValueRef v_fixed;		/* i32 */
	LLVMValueRef v_group;		/* i32 */
} WalkLane;

/* codegen_walk.c: a walk op's strategy's code generation, lanes, reduces */
extern const WalkCodegen *CgWalkCodegen(const MirOp *op);
extern int64_t CgLaneStride(CodegenContext *cg, const CodegenEnv *env);
extern void CgSetUpLanes(CodegenContext *cg, const MirPath *path, const CodegenEnv *env,
						 int32_t width, WalkLane *lanes);
extern LLVMValueRef CgAggregate(CodegenContext *cg, LLVMValueRef v_acc, LLVMValueRef v_new);
extern LLVMValueRef CgAggregateLeaf(CodegenContext *cg, LLVMValueRef v_acc, LLVMValueRef v_leaf);
extern void CgEmitReduce(CodegenContext *cg, const MirOp *op, CodegenEnv *env,
						 const LLVMValueRef *v_leaf, const LLVMValueRef *v_rows,
						 const LLVMValueRef *v_groups);

/* walk_early_exit.c: each lane to its own leaf */
extern LLVMValueRef CgWalkToLeaf(CodegenContext *cg, LLVMValueRef v_index,
								 LLVMValueRef v_row_ptr, LLVMValueRef v_fixed);

/* walk_code_bits.c: the bitvector form's cost (WalkCodegen.cost) */
extern void CgBitvectorCost(CostModel *model, const MirOp *op, int32_t width, int32_t tree,
							WalkCost *cost);

/* walk_code.c: codeWalk's walk_args, its bitvector form */
#define CODE_WALK_NODES	0		/* splits per tree in code */
#define CODE_WALK_FORM	1		/* CodeWalkForm */
extern bool CgIsBitvectorWalk(const MirOp *op);

/* walk_code.c: split decisions written with the split's constants */
extern LLVMValueRef CgNumericGoesLeft(CodegenContext *cg, const ForestNode *node,
									  LLVMValueRef v_x);
extern LLVMValueRef CgCategoryValueGoesLeft(CodegenContext *cg, const ForestNode *node,
											LLVMValueRef v_x);
extern LLVMValueRef CgCategoryKey(CodegenContext *cg, LLVMValueRef v_x, int32_t num_keys);
extern LLVMValueRef CgColdLeaf(CodegenContext *cg, LLVMValueRef v_row_ptr, LLVMValueRef v_index,
							   LLVMValueRef v_fixed);

/* walk_code_bits.c: codeWalk's bitvector form */
#define CODEGEN_MAX_STAGE_BYTES	(64 * 1024)	/* a staged tile, on the stack */
#define CODEGEN_MAX_STAGE_GROUPS	16	/* staged margins: classes */
#define CODEGEN_MAX_STAGE_FEATURES 64
extern int64_t CgBitvectorStageStride(CodegenContext *cg, const MirOp *op);
extern void CgBitvectorEmit(CodegenContext *cg, const MirOp *op, const CodegenEnv *env,
							const WalkLane *lanes, int32_t width, LLVMValueRef *v_leaf,
							LLVMValueRef *v_groups);

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
