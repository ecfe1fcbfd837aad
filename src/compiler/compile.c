/*
 * compile.c
 *		The compiler driver: Forest + schedule -> native batch function.
 *
 * The pipeline, in order (compile_passes, run by CompilePipeline; each
 * pass states what it needs, and explain lists each one's time):
 *
 *   (cache)    the code cache asked by source (jit.c, JitFindBySource) for
 *              the machine code made from this forest's digest, profile,
 *              schedule text and the host's choices, and for the image of
 *              the buffers and text that compile built (compile_image.c):
 *              with both, no pass runs (CompileFromCache), and the forest
 *              need not even have its trees (CompileForestFromCache)
 *   normalize  hir.c: splits comparing with >=, > or != rewritten as <,
 *              <= and == with their children swapped (HirNormalizeCompares)
 *   schedule   the one given, or the target's default (schedule.c)
 *   check      what the schedule asks of the layout (a known
 *              representation, a profile where tiling needs one)
 *   mir        mir.c: schedule -> loop nest, reductions legalized (needs
 *              only the tree and group counts), the padding its walks ask
 *   gpu shared memory   (gpu targets) what a block stages in shared memory
 *   tiling     tiling.c: tileTrees(n > 1): tiles and LUT
 *   hir        hir.c: Forest -> HIR (walk order, sibling pairs, padding),
 *              the tiles hung on it
 *   layout     repr_*.c: HIR -> representation buffers (model data), with
 *              the host profile's choices (host_profile.h); the MIR finished
 *   estimate   compile_cost.c: the compile's size, held to the limits
 *   explain text   schedule, HIR and MIR as text
 *   codegen    codegen*.c: MIR -> LLVM IR, layout details asked of the
 *              representation; the code constants (thresholds and leaves
 *              that code walks read at fixed offsets) handed to the buffers
 *              as aux[3]; the module counted and held to the limits
 *   llvm       jit.c: the short pass list -> object, linked by elf_link.c
 *              (or the code cache's object, by IR key); the image of the
 *              buffers and text stored beside it
 *   device code   (gpu targets, instead of codegen and llvm) the device's
 *              module -> the same pass list -> PTX (gpu_emit.c), or an
 *              AMDGPU object linked into an HSA code object
 *
 * The compiled forest keeps the buffers, the machine code and the text of
 * every level for explain; the Forest itself is not referenced afterwards.
 * A call allocates the partial buffer that privatized reductions need (one
 * slice per extra thread, holding the aggregate's "nothing yet": 0 for
 * SUM, NaN for MIN and MAX) and hands the kernel the runtime's
 * parallel-for and interrupt flag.  Every comparison and aggregate of the
 * Forest IR compiles; ForestUncompiledRule names what would not.
 *
 * CompileForest and CompiledForestFree are the compiler's only stretches
 * of LLVM calls (explain prints IR kept as text at compile time), and each
 * runs inside an LlvmErrorsEnter/Leave bracket: an LLVM fatal error or
 * out-of-memory there reaches the adapter's callback, not abort().
 */
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "silvan/cancel.h"
#include "silvan/codegen.h"
#include "silvan/compile_cost.h"
#include "silvan/compile_image.h"
#include "silvan/compiler.h"
#include "silvan/gpu.h"
#include "silvan/jit.h"
#include "silvan/llvm_errors.h"
#include "silvan/llvm_load.h"
#include "silvan/sha256.h"
#include "silvan/tiling.h"

/* The pipeline's passes (compile_passes), and the batch function's name */
#define COMPILE_NUM_PASSES	13
#define COMPILE_ENTRY		"silvan_forest_batch"

struct CompiledForest
{
	const Target *target;		/* where the code runs (target.h) */
	char		arch[32];		/* the processor it was made for ("" cpu: the host's) */
	char	   *cpu;			/* host code: LLVM's CPU name and features it was */
	char	   *cpu_features;	/* made for; NULL: the host's (CompileOptions) */
	HostProfile host;			/* the machine's choices it was made with */
	CompileLimits limits;		/* what it may cost */
	Mir		   *mir;			/* gpu targets: the loop nest, for launches */
	char	   *device_code;	/* PTX or HSA code object: what the driver loads */
	size_t		device_code_len;	/* its bytes (PTX: with the NUL) */
	char	   *device_ir;		/* the kernel's LLVM IR, for explain */
	char	   *device_asm;		/* rocm: the code object's assembly, for explain */
	void	   *emulated_shared;	/* gpu_emulated: a block's shared memory */
	Schedule	schedule;
	const Representation *repr;
	ReprBuffers buffers;
	JitCode    *code;
	SilvanBatchFn fn;
	int32_t		num_groups;
	int32_t		num_features;
	size_t		value_size;
	uint8_t		aggregate;		/* ForestAggregate: how partials start */
	bool		needs_partials;
	int64_t		code_splits;	/* splits compiled into code (codeWalk) */
	double		compile_ms;
	double		pass_ms[COMPILE_NUM_PASSES];	/* each pass's time (compile_passes) */
	uint32_t	passes_run;		/* bit p: pass p ran */
	JitSource	code_source;	/* compiled, from the disk cache, or shared */
	bool		from_image;		/* buffers and text from the code cache */
	CodeCacheView image_view;	/* the image, mapped: the buffers lie in it */
	char	   *schedule_text;
	char	   *hir_text;
	char	   *mir_text;
	JitIr		llvm_ir;		/* optimized IR, when compiled here */
	char		forest_digest[2 * SHA256_DIGEST_LEN + 1];	/* of the serialized
															 * forest */
	CompileCost estimated;		/* the size estimated before generating code */
	CompileCost counted;		/* the size generated, before LLVM ran */
};

/*
 * Splits in code (codeWalk) above which machine code is generated at -O0
 * (fast instruction selection and register allocation), as it is for any
 * categorical split in code.  Below it the default level's code is worth
 * its time: forests of a few thousand splits (NYC_taxi, boston) walk
 * clearly faster than at -O0 for a compile of a second or so.  Above it,
 * and for categorical splits, the default level's compile time grows
 * faster than the code (airline's categorical splits, mtpl2's 30,000
 * splits) for a smaller gain.
 */
#define COMPILE_FULL_CODEGEN_SPLITS	4096

/*
 * Modules estimated at more LLVM IR instructions are generated without
 * value names (JitModuleDiscardNames): for such a module the steps that
 * cannot poll for a cancel request (writing its bitcode for the IR key,
 * freeing it) take about half as long; smaller modules keep the names
 * that make explain's IR readable.
 */
#define COMPILE_NAMED_IR_MAX		100000

/* CompiledForestSplitRows: fewest rows a call, as the code and records are small or large */
#define COMPILE_SPLIT_ROWS			64
#define COMPILE_SPLIT_ROWS_LARGE	256
#define COMPILE_SPLIT_LARGE_BYTES	(1024 * 1024)
#define COMPILE_CODE_BYTES_PER_SPLIT	48

/* Milliseconds on a monotonic clock */
static double
NowMillis(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* The schedule's text on one line: directives joined by "; " */
static char *
ScheduleOneLine(const Schedule *schedule)
{
	char	   *text = ScheduleToText(schedule);
	TextBuf		buf = {0};
	size_t		len;

	if (text == NULL)
		return NULL;
	len = strlen(text);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	for (size_t i = 0; i < len; i++)
	{
		if (text[i] == '\n')
			TextAppend(&buf, "; ");
		else
			TextAppend(&buf, "%c", text[i]);
	}
	free(text);
	return TextFinish(&buf);
}

/*
 * What the batch function is made from, for the code cache's source key
 * (jit.c): the model and profile by digest, the schedule's text (the whole
 * schedule: it parses back to the same one), the gather choice.  Machine
 * code also depends on the target CPU and the compiler's build, which
 * jit.c adds.  NULL without memory.
 */
static char *
CodeSource(const CompiledForest *compiled, const ForestProfile *profile)
{
	TextBuf		buf = {0};
	char		hits[2 * SHA256_DIGEST_LEN + 1] = "none";
	char		host[256];

	if (profile != NULL)
		Sha256Hex(profile->node_hits, sizeof(int64_t) * (size_t) profile->num_nodes, hits);
	HostProfileKey(&compiled->host, host, sizeof(host));
	TextAppend(&buf, "forest sha256 %s\nprofile %lld rows, %lld nodes, hits sha256 %s\n"
			   "schedule %s\ngather %d\ncarry %d\nhost %s\n",
			   compiled->forest_digest, profile ? (long long) profile->num_rows : 0LL,
			   profile ? (long long) profile->num_nodes : 0LL, hits,
			   compiled->schedule_text, compiled->buffers.gather ? 1 : 0,
			   compiled->buffers.carry_hops ? 1 : 0, host);
	if (compiled->cpu != NULL)
		TextAppend(&buf, "cpu %s\nfeatures %s\n", compiled->cpu, compiled->cpu_features);
	return TextFinish(&buf);
}

/* A compile's size as the image keeps it, and back */
static void
CostToImage(const CompileCost *cost, int64_t *fields)
{
	fields[0] = cost->instructions;
	fields[1] = cost->loops;
	fields[2] = cost->largest_function;
	fields[3] = cost->largest_function_loops;
}

static void
CostFromImage(const int64_t *fields, CompileCost *cost)
{
	memset(cost, 0, sizeof(CompileCost));
	cost->instructions = fields[0];
	cost->loops = fields[1];
	cost->largest_function = fields[2];
	cost->largest_function_loops = fields[3];
}

/*
 * Keep what the passes built beside the machine code in the code cache
 * (compile_image.c), so that the next backend runs none of them; best
 * effort
 */
static void
StoreImage(const CompiledForest *compiled, const char *source, size_t source_len)
{
	CompileImage image = {
		.buffers = compiled->buffers,
		.num_groups = compiled->num_groups,
		.value_size = (uint32_t) compiled->value_size,
		.aggregate = compiled->aggregate,
		.needs_partials = compiled->needs_partials,
		.code_splits = compiled->code_splits,
		.hir_text = compiled->hir_text,
		.mir_text = compiled->mir_text
	};
	uint8_t    *data;
	size_t		size;

	CostToImage(&compiled->estimated, image.estimated);
	CostToImage(&compiled->counted, image.counted);

	if (CompileImageWrite(&image, &data, &size))
	{
		JitStoreBeside("image", source, source_len, data, size);
		free(data);
	}
}

/*
 * Hand the code constants codegen made to the buffers the kernel reads
 * (aux[REPR_AUX_CODE_CONSTANTS]); the image stores them with the rest
 */
static void
InstallCodeConstants(CompiledForest *compiled, CodegenStats *stats)
{
	ReprBuffers *b = &compiled->buffers;
	int			slot = REPR_AUX_CODE_CONSTANTS;

	free(b->aux[slot]);
	b->aux[slot] = stats->code_consts;
	b->aux_count[slot] = stats->num_code_consts;
	b->bytes[REPR_BUFFER_AUX0 + slot] = stats->code_consts ?
		(size_t) stats->num_code_consts * sizeof(uint64_t) : 0;
	stats->code_consts = NULL;
	compiled->code_splits = stats->code_splits;
}

/* The kernel's LLVM IR, as text (malloc'd), for explain */
static char *
ModuleText(LLVMModuleRef module)
{
	char	   *llvm_text = LLVMPrintModuleToString(module);
	char	   *text = strdup(llvm_text);

	LLVMDisposeMessage(llvm_text);
	return text;
}

/*
 * Count what code generation made and hold it to the compile's limits
 * before LLVM works on it (compile_cost.c); the estimate's words say
 * which directive made it big
 */
static bool
CountGenerated(CompiledForest *compiled, LLVMModuleRef module, SilvanStatus *status)
{
	CompileCost *counted = &compiled->counted;

	memset(counted, 0, sizeof(CompileCost));
	CompileCountModule(module, counted);
	counted->walk_copies = compiled->estimated.walk_copies;
	memcpy(counted->directive, compiled->estimated.directive, sizeof(counted->directive));
	memcpy(counted->blame, compiled->estimated.blame, sizeof(counted->blame));
	return CompileCheckCost(counted, &compiled->limits, false, status);
}

/* Emit what the device's driver loads: PTX text, or a linked HSA code object */
static bool
EmitDeviceCode(CompiledForest *compiled, LLVMModuleRef module, SilvanStatus *status)
{
	void	   *object;
	size_t		len;
	bool		ok;

	if (compiled->target->output == TARGET_OUTPUT_PTX)
	{
		compiled->device_code = GpuEmitPtx(module, compiled->arch, status);
		compiled->device_code_len = compiled->device_code ? strlen(compiled->device_code) + 1 : 0;
		return compiled->device_code != NULL;
	}
	if ((compiled->device_asm = GpuEmitAmdgpuAssembly(module, compiled->arch, status)) == NULL ||
		!GpuEmitAmdgpuObject(module, compiled->arch, &object, &len, status))
		return false;
	ok = GpuLinkHsaco(object, len, NULL, (void **) &compiled->device_code,
					  &compiled->device_code_len, status);
	free(object);
	return ok;
}

/*
 * Check what the schedule asks of the model layout before any pass runs:
 * a known representation, a profile where tiling needs one
 */
static bool
CheckLayout(const Forest *forest, const Schedule *schedule, const ForestProfile *profile,
			SilvanStatus *status)
{
	char		names[128];

	if (ReprLookup(schedule->representation) == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "Representation \"%s\" is unknown; expected %s.",
						  schedule->representation, ReprNamesText(names, sizeof(names)));
	if (schedule->tiling == TREE_TILING_PROBABILISTIC && profile == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID,
						  "probability-based tiling needs a profile",
						  "tileTrees(%d, probabilistic) tiles trees by node hit counts; "
						  "gather them with silvan.profile() first, or use uniform tiling.",
						  schedule->tile_size);
	if (profile != NULL && profile->num_nodes != forest->num_nodes)
		return StatusFail(status, SILVAN_ERROR_INVALID, "profile does not match the model",
						  "The profile counts %lld nodes; the model has %lld.",
						  (long long) profile->num_nodes, (long long) forest->num_nodes);
	if (schedule->tile_size < 1 || schedule->tile_size > TILE_MAX_SIZE)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid schedule",
						  "Tree tile size %d is not between 1 and %d.",
						  schedule->tile_size, TILE_MAX_SIZE);
	return true;
}

/*
 * Tile the trees (tileTrees with n > 1): uniformly padded up to the
 * deepest unrollWalk (in tiles), by node hits where the profile says
 */
static TiledForest *
TileTrees(const Forest *forest, const Schedule *schedule, const ForestProfile *profile,
		  const Mir *mir, SilvanStatus *status)
{
	TilingOptions options;

	TilingOptionsInit(&options, schedule->tile_size, schedule->tiling);
	options.profile = profile;
	options.pad_depth = mir->max_unroll < TILING_MAX_PAD_DEPTH ?
		mir->max_unroll : TILING_MAX_PAD_DEPTH;
	return TileForest(forest, &options, status);
}

/* Order the trees, pad them as the walks ask, and build the HIR */
static Hir *
BuildHir(const Forest *forest, const Schedule *schedule, const Mir *mir,
		 SilvanStatus *status)
{
	size_t		n = (size_t) forest->num_trees + 1;
	int32_t    *order = malloc(sizeof(int32_t) * n);
	int32_t    *depths = malloc(sizeof(int32_t) * n);
	int32_t    *pad_to = malloc(sizeof(int32_t) * n);
	Hir		   *hir = NULL;

	if (order == NULL || depths == NULL || pad_to == NULL)
		StatusNoMemory(status, "the tree order");
	else
	{
		HirOrder(forest, schedule->reorder_trees, order);
		for (int32_t t = 0; t < forest->num_trees; t++)
			depths[t] = forest->trees[order[t]].depth;
		MirPadLevels(mir, depths, pad_to);
		/* tiled walks hop by tile: the tiling pads, not the HIR */
		hir = HirBuild(forest, order, schedule->tile_size > 1 ? NULL : pad_to, status);
	}
	free(order);
	free(depths);
	free(pad_to);
	return hir;
}

/* The HIR summary, and the tiling's when trees are tiled */
static char *
DumpHir(const Hir *hir, const ReprBuffers *buffers)
{
	char	   *text = HirDump(hir, false);
	TilingStats stats;
	TextBuf		buf = {0};

	if (text == NULL || hir->tiled == NULL)
		return text;
	TiledForestStats(hir->tiled, &stats);
	TextAppend(&buf, "%s", text);
	free(text);
	TextAppend(&buf, "tiling: tiles of %d, %s; %lld tiles (%lld padding tiles), "
			   "%.2f tiles per walk on average, %d at most; %d trees by probability, "
			   "%d padded; %d shapes, LUT %zu bytes; %s\n",
			   hir->tiled->tile_size,
			   hir->tiled->options.tiling == TREE_TILING_PROBABILISTIC ?
			   "probability-based" : "uniform",
			   (long long) stats.num_tiles, (long long) stats.num_dummy_tiles,
			   stats.avg_depth, stats.max_depth, stats.num_probabilistic, stats.num_padded,
			   stats.num_shapes_used, stats.lut_bytes,
			   buffers->gather ? "features gathered" :
			   "features loaded one by one (no fast gathers on this cpu)");
	return TextFinish(&buf);
}

/* Refuse a forest with rules the compiler lacks (ForestUncompiledRule); it is interpreted */
static bool
CompileSupported(const Forest *forest, SilvanStatus *status)
{
	const char *rule = ForestUncompiledRule(forest);

	return rule == NULL ||
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "model not supported by the compiler",
				   "The model uses %s, which only the interpreter implements.", rule);
}

/* See compiler.h */
const CompileLimits *
CompileLimitsDefault(void)
{
	static const CompileLimits defaults = {
		.max_instructions = COMPILE_MAX_INSTRUCTIONS_DEFAULT,
		.max_function_instructions = COMPILE_MAX_FUNCTION_INSTRUCTIONS_DEFAULT,
		.max_function_loops = COMPILE_MAX_FUNCTION_LOOPS_DEFAULT
	};

	return &defaults;
}

/*
 * A compiled forest to be made with these options (NULL: the defaults),
 * its passes not run: the options resolved and kept, so that no pass asks
 * the host
 */
static CompiledForest *
CompiledForestNew(const CompileOptions *options, const char *forest_digest, SilvanStatus *status)
{
	static const CompileOptions defaults = {0};
	CompiledForest *compiled = calloc(1, sizeof(CompiledForest));

	if (compiled == NULL)
	{
		StatusNoMemory(status, "the compiled model");
		return NULL;
	}
	if (options == NULL)
		options = &defaults;
	compiled->target = &TargetCpu;
	if (options->target != NULL && options->target != &TargetCpu)
	{
		compiled->target = options->target;
		snprintf(compiled->arch, sizeof(compiled->arch), "%s",
				 options->arch ? options->arch : options->target->default_arch ?
				 options->target->default_arch : "");
	}
	if (options->host != NULL)
		compiled->host = *options->host;
	else
		HostProfileFallback(&compiled->host);
	compiled->limits = options->limits ? *options->limits : *CompileLimitsDefault();
	if (options->cpu != NULL &&
		((compiled->cpu = strdup(options->cpu)) == NULL ||
		 (compiled->cpu_features = strdup(options->cpu_features ? options->cpu_features : "")) == NULL))
	{
		CompiledForestFree(compiled);
		StatusNoMemory(status, "the compiled model");
		return NULL;
	}
	snprintf(compiled->forest_digest, sizeof(compiled->forest_digest), "%s", forest_digest);
	return compiled;
}

/* LLVM's name of the CPU the code is for, and its features (LLVM is loaded) */
static const char *
CompiledCpu(const CompiledForest *compiled)
{
	return compiled->cpu ? compiled->cpu : JitHostCpuName();
}

static const char *
CompiledCpuFeatures(const CompiledForest *compiled)
{
	return compiled->cpu ? compiled->cpu_features : JitHostCpuFeatures();
}

/* Note the forest's facts a compiled forest keeps (its schedule chosen) */
static void
CompiledForestFacts(CompiledForest *compiled, const Forest *forest)
{
	compiled->schedule.representation[sizeof(compiled->schedule.representation) - 1] = '\0';
	compiled->num_groups = forest->num_groups;
	compiled->num_features = forest->num_features;
	compiled->value_size = ForestValueSize(forest);
	compiled->aggregate = forest->aggregate;
}

/*
 * Take the image's buffers and text if it was made for this forest's
 * facts (it always is, for an intact entry of this key); frees it if not
 */
static bool
AdoptImage(CompiledForest *compiled, CompileImage *image)
{
	if (image->num_groups != compiled->num_groups ||
		image->value_size != compiled->value_size ||
		image->aggregate != compiled->aggregate ||
		image->buffers.gather != compiled->buffers.gather ||
		image->buffers.carry_hops != compiled->buffers.carry_hops)
	{
		ReprBuffersFree(&image->buffers);
		free(image->hir_text);
		free(image->mir_text);
		return false;
	}
	compiled->buffers = image->buffers;
	compiled->hir_text = image->hir_text;
	compiled->mir_text = image->mir_text;
	compiled->needs_partials = image->needs_partials;
	compiled->code_splits = image->code_splits;
	CostFromImage(image->estimated, &compiled->estimated);
	CostFromImage(image->counted, &compiled->counted);
	compiled->from_image = true;
	return true;
}

/*
 * A compile that the code cache answers whole: the machine code made from
 * this forest, profile and schedule, and the image of the buffers it reads
 * (StoreImage), both found by source.  No pass runs.  NULL on any miss or
 * failure: the caller runs the passes, which report what is wrong.
 */
static CompiledForest *
CompileFromCache(const Forest *forest, const char *forest_digest, const Schedule *schedule,
				 const ForestProfile *profile, const CompileOptions *options)
{
	double		start = NowMillis();
	SilvanStatus ignored;
	CompiledForest *compiled;
	CompileImage image;
	char	   *source = NULL;
	void	   *address = NULL;

	if (forest_digest[0] == '\0' ||
		(compiled = CompiledForestNew(options, forest_digest, &ignored)) == NULL)
		return NULL;
	if (schedule)
		compiled->schedule = *schedule;
	else
		ScheduleDefault(forest, 0, &compiled->host, &compiled->schedule);
	CompiledForestFacts(compiled, forest);
	compiled->buffers.gather = HostProfileGathers(&compiled->host);
	compiled->buffers.carry_hops = HostProfileCarryHops(&compiled->host);
	/* the rest of CheckLayout held for the compile that stored this key's image */
	if (ReprLookup(compiled->schedule.representation) != NULL &&
		(compiled->schedule_text = ScheduleOneLine(&compiled->schedule)) != NULL &&
		(source = CodeSource(compiled, profile)) != NULL &&
		JitMapBeside("image", source, strlen(source), &compiled->image_view) &&
		CompileImageRead(compiled->image_view.data, compiled->image_view.len, true, &image) &&
		AdoptImage(compiled, &image))
		compiled->code = JitFindBySource(source, strlen(source), &address,
										 &compiled->code_source);
	free(source);
	if (compiled->code == NULL)
	{
		CompiledForestFree(compiled);
		return NULL;
	}
	compiled->repr = ReprLookup(compiled->schedule.representation);
	compiled->fn = (SilvanBatchFn) address;
	compiled->compile_ms = NowMillis() - start;
	return compiled;
}

/* ---- The pipeline: its passes, in order, run by CompilePipeline ---- */

/* One compile as its passes hand it on */
typedef struct CompileRun
{
	const Forest *forest;		/* normalize: the forest the passes below read */
	Forest	   *normalized;		/* its copy with compares rewritten, if any was */
	const Schedule *schedule;	/* as given; NULL: the default */
	const ForestProfile *profile;
	bool		estimate_only;	/* stop after estimate (CompileEstimate) */
	CompiledForest *compiled;
	Mir		   *mir;
	TiledForest *tiled;
	Hir		   *hir;
	JitModule	jm;				/* codegen's module, until llvm takes it */
	bool		have_module;
	char	   *source;			/* the code cache's key by source, or NULL */
} CompileRun;

/* A pass: when it applies (NULL: always), what it does, and what a cancel stops */
typedef struct CompilePass
{
	const char *name;			/* as explain lists its time */
	bool		(*applies) (const CompileRun *run);
	bool		(*run) (CompileRun *run, SilvanStatus *status);
	const char *doing;			/* "canceled while ..." */
} CompilePass;

/*
 * normalize.  Needs: a validated forest.  Rewrites splits comparing with
 * >=, > or != as <, <= and == with their children swapped, in a copy:
 * the passes below only meet LT, LE and EQ.
 */
static bool
PassNormalize(CompileRun *run, SilvanStatus *status)
{
	if (!HirNormalizeCompares(run->forest, &run->normalized, status))
		return false;
	if (run->normalized != NULL)
		run->forest = run->normalized;
	return true;
}

/*
 * schedule.  Needs: the normalized forest and the target.  The given
 * schedule, or the target's default (schedule.c); the forest's facts that
 * the compiled forest keeps.
 */
static bool
PassSchedule(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;

	if (run->schedule != NULL)
		compiled->schedule = *run->schedule;
	else if (compiled->target->gpu)
		ScheduleGpuDefault(run->forest, 0, &compiled->schedule);
	else
		ScheduleDefault(run->forest, 0, &compiled->host, &compiled->schedule);
	CompiledForestFacts(compiled, run->forest);
	return true;
}

/* check.  Needs: the schedule.  What it asks of the layout (CheckLayout). */
static bool
PassCheck(CompileRun *run, SilvanStatus *status)
{
	return CheckLayout(run->forest, &run->compiled->schedule, run->profile, status);
}

/*
 * mir.  Needs: a checked schedule.  The loop nest (mir.c), reductions
 * legalized (only the tree and group counts are read).
 */
static bool
PassMir(CompileRun *run, SilvanStatus *status)
{
	if ((run->mir = malloc(sizeof(Mir))) == NULL)
		return StatusNoMemory(status, "the loop nest");
	if (!MirBuildTarget(&run->compiled->schedule, run->forest->num_trees, run->forest->num_groups,
						run->compiled->target->gpu, run->mir, status))
		return false;
	run->mir->profile = run->profile;
	run->compiled->needs_partials = run->mir->needs_partials;
	return true;
}

/* Does the compile target a gpu (or its emulated grid)? */
static bool
TargetsGpu(const CompileRun *run)
{
	return run->compiled->target->gpu;
}

/*
 * gpu shared memory.  Needs: the MIR of a gpu target.  What a block stages
 * in shared memory; the emulated grid's room for it.
 */
static bool
PassGpuShared(CompileRun *run, SilvanStatus *status)
{
	Mir		   *mir = run->mir;

	MirGpuShared(mir, run->forest->num_features, ForestValueSize(run->forest));
	if (run->compiled->target == &TargetGpuEmulated && mir->gpu_phases > 1 &&
		(run->compiled->emulated_shared =
		 calloc(1, (size_t) (mir->gpu_stage_bytes + mir->gpu_reduce_bytes + 64))) == NULL)
		return StatusNoMemory(status, "the emulated grid's shared memory");
	return true;
}

/* Does the schedule tile trees (tileTrees with n > 1)? */
static bool
TilesTrees(const CompileRun *run)
{
	return run->compiled->schedule.tile_size > 1;
}

/* tiling.  Needs: the MIR (its deepest unrollWalk pads the tiles).  The tiles and LUT. */
static bool
PassTiling(CompileRun *run, SilvanStatus *status)
{
	run->tiled = TileTrees(run->forest, &run->compiled->schedule, run->profile, run->mir, status);
	return run->tiled != NULL;
}

/*
 * hir.  Needs: the MIR (the padding its walks ask for) and the tiling if
 * any.  Tree order, padding, sibling pairs; the tiles hung on it.
 */
static bool
PassHir(CompileRun *run, SilvanStatus *status)
{
	if ((run->hir = BuildHir(run->forest, &run->compiled->schedule, run->mir, status)) == NULL)
		return false;
	run->hir->tiled = run->tiled;
	return true;
}

/* Is op a walk whose hops do not all decide through the layout? */
static bool
WalkBesideLayout(const MirOp *op)
{
	return op->kind == MIR_WALK && !WalkStrategyOf(op->walk)->hops_through_layout;
}

/*
 * layout.  Needs: the HIR.  The representation's buffers (repr_*.c), with
 * the host's choices of gathers, hops and keys (integer keys where the
 * layout can store them and every walk hops through it; the layout keeps
 * them only where they fit and pay); the MIR finished over them.
 */
static bool
PassLayout(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;
	const Representation *repr = ReprLookup(compiled->schedule.representation);
	bool		cpu = !compiled->target->gpu;

	compiled->repr = repr;
	compiled->buffers.gather = cpu && HostProfileGathers(&compiled->host);
	compiled->buffers.carry_hops = cpu && HostProfileCarryHops(&compiled->host);
	compiled->buffers.key_rows = cpu && repr->integer_keys && HostProfileKeyHops(&compiled->host) &&
		!MirSubtreeHas(run->mir->root, WalkBesideLayout);
	if (!repr->build(run->hir, &compiled->buffers, status))
		return false;
	MirFinish(run->mir, run->hir, compiled->buffers.trees);
	return true;
}

/*
 * estimate.  Needs: the finished MIR and the buffers.  The compile's size
 * before any code is generated (compile_cost.c), held to the limits unless
 * only the estimate is asked for.
 */
static bool
PassEstimate(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;

	CompileEstimateMir(run->mir, run->hir, &compiled->buffers,
					   compiled->target->gpu ? "" : CompiledCpuFeatures(compiled),
					   &compiled->limits, &compiled->estimated);
	return run->estimate_only ||
		CompileCheckCost(&compiled->estimated, &compiled->limits, true, status);
}

/* explain text.  Needs: the schedule, HIR, buffers and finished MIR.  Every level as text. */
static bool
PassExplainText(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;

	compiled->schedule_text = ScheduleOneLine(&compiled->schedule);
	compiled->hir_text = DumpHir(run->hir, &compiled->buffers);
	compiled->mir_text = MirDump(run->mir);
	if (!compiled->schedule_text || !compiled->hir_text || !compiled->mir_text)
		return StatusNoMemory(status, "the compiler's explain text");
	return true;
}

/* Does the compile end in JIT-compiled host code (cpu, emulated grid)? */
static bool
EmitsHostCode(const CompileRun *run)
{
	return run->compiled->target->output == TARGET_OUTPUT_JIT;
}

/* Does it end in a device's code (PTX, an HSA code object)? */
static bool
EmitsDeviceCode(const CompileRun *run)
{
	return !EmitsHostCode(run);
}

/*
 * codegen.  Needs: the finished MIR and the buffers.  The batch function
 * in LLVM IR (codegen*.c), its code constants handed to the buffers, its
 * size counted and held to the limits before LLVM works on it.
 */
static bool
PassCodegen(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;
	CodegenStats stats = {0};

	if (!JitModuleCreate(COMPILE_ENTRY, &run->jm, status))
		return false;
	run->have_module = true;
	if (compiled->estimated.instructions > COMPILE_NAMED_IR_MAX)
		JitModuleDiscardNames(&run->jm);
	if (!CodegenForest(run->mir, compiled->repr, &compiled->buffers, run->jm.module, COMPILE_ENTRY,
					   compiled->target, CompiledCpu(compiled), CompiledCpuFeatures(compiled), &stats,
					   status))
		return false;
	InstallCodeConstants(compiled, &stats);
	run->jm.cpu = compiled->cpu;
	run->jm.cpu_features = compiled->cpu_features;
	run->jm.fast_codegen = !compiled->schedule.full_codegen &&
		(stats.code_splits > COMPILE_FULL_CODEGEN_SPLITS || stats.code_categorical > 0);
	return CountGenerated(compiled, run->jm.module, status);
}

/*
 * llvm.  Needs: codegen's module.  LLVM's passes, the object emitted and
 * linked (jit.c, elf_link.c), the machine code loaded; or the same code
 * from this process or the code cache, found by the module's IR.  The
 * code cache keeps cpu code (with the image of its buffers, by source);
 * an emulated grid's kernel is compiled each time.
 */
static bool
PassLlvm(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;
	void	   *address = NULL;
	size_t		source_len;

	if (compiled->forest_digest[0] && !compiled->target->gpu)
		run->source = CodeSource(compiled, run->profile);
	source_len = run->source ? strlen(run->source) : 0;
	run->have_module = false;	/* JitCompile takes it */
	compiled->code = JitCompile(&run->jm, COMPILE_ENTRY, run->source, source_len, &address,
								&compiled->llvm_ir, &compiled->code_source, status);
	if (compiled->code == NULL)
		return false;
	if (run->source != NULL)
		StoreImage(compiled, run->source, source_len);
	compiled->fn = (SilvanBatchFn) address;
	return true;
}

/*
 * device code.  Needs: the finished MIR and the buffers.  The kernel in
 * a module of the target's triple and data layout, counted and held to
 * the limits, then PTX or an HSA code object (gpu_emit.c).
 */
static bool
PassDeviceCode(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;
	const char *name = "silvan_forest_kernel";
	char	   *layout = GpuDataLayout(compiled->target->triple, compiled->arch, status);
	LLVMContextRef context;
	LLVMModuleRef module;
	CodegenStats stats = {0};
	bool		ok;

	if (layout == NULL)
		return false;
	context = LLVMContextCreate();
	module = LLVMModuleCreateWithNameInContext(name, context);
	LLVMSetTarget(module, compiled->target->triple);
	LLVMSetDataLayout(module, layout);
	free(layout);
	ok = CodegenForest(run->mir, compiled->repr, &compiled->buffers, module, name, compiled->target,
					   compiled->arch, "", &stats, status);
	if (ok)
		InstallCodeConstants(compiled, &stats);
	ok = ok && CountGenerated(compiled, module, status);
	if (ok && (compiled->device_ir = ModuleText(module)) == NULL)
		ok = StatusNoMemory(status, "the kernel's LLVM IR");
	if (ok)
		ok = EmitDeviceCode(compiled, module, status);
	LLVMDisposeModule(module);
	LLVMContextDispose(context);
	return ok;
}

/*
 * The pipeline, in order.  Before it, CompileForestFor asks the code cache
 * for the whole compile by source (CompileFromCache) and loads LLVM; a
 * compile that only estimates its cost stops after "estimate".
 */
static const CompilePass compile_passes[COMPILE_NUM_PASSES] = {
	{"normalize", NULL, PassNormalize, "normalizing the model"},
	{"schedule", NULL, PassSchedule, "choosing the schedule"},
	{"check", NULL, PassCheck, "checking the schedule"},
	{"mir", NULL, PassMir, "lowering the schedule"},
	{"gpu shared memory", TargetsGpu, PassGpuShared, "lowering the schedule"},
	{"tiling", TilesTrees, PassTiling, "tiling the trees"},
	{"hir", NULL, PassHir, "lowering the schedule"},
	{"layout", NULL, PassLayout, "laying out the model"},
	{"estimate", NULL, PassEstimate, "estimating the compile"},
	{"explain text", NULL, PassExplainText, "generating code"},
	{"codegen", EmitsHostCode, PassCodegen, "generating code"},
	{"llvm", EmitsHostCode, PassLlvm, "compiling code"},
	{"device code", EmitsDeviceCode, PassDeviceCode, "compiling code"},
};

/* Free what the passes made and the compiled forest keeps none of */
static void
CompileRunFree(CompileRun *run, bool ok)
{
	CompiledForest *compiled = run->compiled;

	if (run->have_module)
		JitModuleDispose(&run->jm);
	free(run->source);
	free(compiled->buffers.record_of);	/* only code generation reads it */
	compiled->buffers.record_of = NULL;
	HirFree(run->hir);
	TiledForestFree(run->tiled);
	HirFreeNormalized(run->normalized);
	if (ok && run->mir != NULL && compiled->target->gpu)
	{
		run->mir->hir = NULL;	/* freed; launches read the loops only */
		run->mir->profile = NULL;
		compiled->mir = run->mir;
	}
	else
		free(run->mir);
}

/*
 * Run the passes over a forest for a target (its CompiledForest made by
 * the caller), each timed for explain, a cancel answered between them;
 * false and a status if one fails.  Runs inside the LLVM errors bracket.
 */
static bool
CompilePipeline(CompileRun *run, SilvanStatus *status)
{
	CompiledForest *compiled = run->compiled;
	double		start = NowMillis();
	bool		ok = true;

	for (int p = 0; ok && p < COMPILE_NUM_PASSES; p++)
	{
		const CompilePass *pass = &compile_passes[p];
		double		pass_start = NowMillis();

		if (pass->applies != NULL && !pass->applies(run))
			continue;
		ok = pass->run(run, status);
		compiled->pass_ms[p] = NowMillis() - pass_start;
		compiled->passes_run |= 1u << p;
		if (ok && CancelRequested())
			ok = StatusCanceled(status, pass->doing);
		if (ok && run->estimate_only && pass->run == PassEstimate)
			break;
	}
	CompileRunFree(run, ok);
	compiled->compile_ms = NowMillis() - start;
	return ok;
}

/*
 * The pipeline over a forest for a target; forest_digest is "" if
 * unknown.  With estimate_only the passes stop at the estimate
 * (CompileEstimate): the result has no code and is only good for its cost.
 */
static CompiledForest *
CompileBracketed(const Forest *forest, const char *forest_digest, const Schedule *schedule,
				 const ForestProfile *profile, const CompileOptions *options,
				 bool estimate_only, SilvanStatus *status)
{
	CompileRun	run = {.forest = forest, .schedule = schedule, .profile = profile,
	.estimate_only = estimate_only};

	if ((run.compiled = CompiledForestNew(options, forest_digest, status)) == NULL)
		return NULL;
	if (!CompilePipeline(&run, status))
	{
		CompiledForestFree(run.compiled);
		return NULL;
	}
	return run.compiled;
}

/*
 * The SHA-256 of the forest's serialized form, which holds everything
 * predictions depend on: the digest of the form it was read from, else of
 * the form it serializes to; "" when it cannot be had (the code is then
 * found by its IR only)
 */
static void
ForestDigest(const Forest *forest, char *digest)
{
	SilvanStatus ignored;
	uint8_t    *data;
	size_t		size;

	snprintf(digest, 2 * SHA256_DIGEST_LEN + 1, "%s", forest->digest);
	if (digest[0] == '\0' && ForestSerialize(forest, &data, &size, &ignored))
	{
		Sha256Hex(data, size, digest);
		free(data);
	}
}

/*
 * Give the memory of a compile that failed back to the system: LLVM has
 * freed it, but the allocator keeps the pages, and a canceled compile of
 * a big module would otherwise leave the backend hundreds of MB larger
 */
static void
ReleaseAbandoned(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* Compile a validated forest for the host cpu; NULL and a status on failure */
CompiledForest *
CompileForest(const Forest *forest, const Schedule *schedule,
			  const ForestProfile *profile, SilvanStatus *status)
{
	return CompileForestFor(forest, schedule, profile, NULL, status);
}

/* Compile a validated forest for a target (NULL: the host cpu) */
CompiledForest *
CompileForestFor(const Forest *forest, const Schedule *schedule, const ForestProfile *profile,
				 const CompileOptions *options, SilvanStatus *status)
{
	CompiledForest *compiled;
	char		digest[2 * SHA256_DIGEST_LEN + 1];
	bool		cpu = options == NULL || options->target == NULL || options->target == &TargetCpu;

	if (!CompileSupported(forest, status))
		return NULL;
	ForestDigest(forest, digest);
	if (cpu && (compiled = CompileFromCache(forest, digest, schedule, profile, options)) != NULL)
		return compiled;
	/* LLVM is loaded on the first compile that needs it (llvm_load.c) */
	if (!LlvmLoad(status))
		return NULL;
	LlvmErrorsEnter();
	compiled = CompileBracketed(forest, digest, schedule, profile, options, false, status);
	LlvmErrorsLeave();
	if (compiled == NULL)
		ReleaseAbandoned();
	return compiled;
}

/* See compiler.h: the front passes and the estimate, no code generated */
bool
CompileEstimate(const Forest *forest, const Schedule *schedule, const ForestProfile *profile,
				const CompileOptions *options, CompileCost *cost, SilvanStatus *status)
{
	CompiledForest *compiled;

	if (!CompileSupported(forest, status) || !LlvmLoad(status))
		return false;
	LlvmErrorsEnter();
	compiled = CompileBracketed(forest, "", schedule, profile, options, true, status);
	LlvmErrorsLeave();
	if (compiled == NULL)
		return false;
	*cost = compiled->estimated;
	CompiledForestFree(compiled);
	return true;
}

/* See compiler.h */
void
CompiledForestCost(const CompiledForest *compiled, CompileCost *estimated, CompileCost *counted)
{
	*estimated = compiled->estimated;
	*counted = compiled->counted;
}

/*
 * A compile that the code cache answers whole (machine code and the image
 * of its buffers) for a forest and an explicit schedule.  Only the
 * forest's digest and header are used, so its trees need not have been
 * read (ForestDeserializeHeader).  NULL on any miss: the caller then reads
 * the trees and calls CompileForest.
 */
CompiledForest *
CompileForestFromCache(const Forest *forest, const Schedule *schedule,
					   const ForestProfile *profile, const CompileOptions *options)
{
	if (schedule == NULL || forest->digest[0] == '\0')
		return NULL;
	return CompileFromCache(forest, forest->digest, schedule, profile, options);
}

/* What the default schedule of a forest at a batch size is kept under (malloc'd) */
static char *
DefaultScheduleSource(const Forest *forest, int32_t batch_size, const HostProfile *host)
{
	TextBuf		buf = {0};
	HostProfile fallback;
	char		key[256];

	if (host == NULL)
	{
		HostProfileFallback(&fallback);
		host = &fallback;
	}
	HostProfileKey(host, key, sizeof(key));
	TextAppend(&buf, "forest sha256 %s\nbatch %d\nhost %s%s\n", forest->digest, batch_size, key,
			   host->measured ? " measured" : "");
	return TextFinish(&buf);
}

/*
 * The default schedule ScheduleDefault picked for this forest (by digest)
 * and batch size, as the code cache remembers it; false if it does not.
 * ScheduleDefault reads the trees; this reads only the digest.
 */
bool
ScheduleDefaultFromCache(const Forest *forest, int32_t batch_size, const HostProfile *host,
						 Schedule *schedule)
{
	SilvanStatus ignored;
	char	   *source;
	char	   *text = NULL;
	size_t		size = 0;
	bool		found = false;

	if (forest->digest[0] == '\0' || (source = DefaultScheduleSource(forest, batch_size, host)) == NULL)
		return false;
	text = JitLoadBeside("default schedule", source, strlen(source), &size);
	if (text != NULL && size > 0 && memchr(text, '\0', size) == text + size - 1)
		found = ScheduleParse(text, schedule, &ignored);
	free(text);
	free(source);
	return found;
}

/* Remember the default schedule picked for a forest and batch size (ScheduleDefaultFromCache) */
void
ScheduleDefaultRemember(const Forest *forest, int32_t batch_size, const HostProfile *host,
						const Schedule *schedule)
{
	char	   *source;
	char	   *text;

	if (forest->digest[0] == '\0' || (source = DefaultScheduleSource(forest, batch_size, host)) == NULL)
		return;
	if ((text = ScheduleToText(schedule)) != NULL)
		JitStoreBeside("default schedule", source, strlen(source), text, strlen(text) + 1);
	free(text);
	free(source);
}

/* Set n values of partial slices to NaN: "no tree yet" of MIN and MAX */
static void
PartialsEmpty(void *partials, size_t n, size_t value_size)
{
	for (size_t i = 0; i < n; i++)
	{
		if (value_size == sizeof(float))
			((float *) partials)[i] = NAN;
		else
			((double *) partials)[i] = NAN;
	}
}

/*
 * Add all trees' leaf values into acc (prepared by ForestMarginsInit),
 * stopping early once *stop is nonzero; true when *stop was still zero at
 * the end, that is, when every row got every tree.  Privatized reductions
 * get one empty slice per thread beyond the first (zeros, or NaN for MIN
 * and MAX); without memory for them the call runs them in one chunk.
 */
/*
 * An emulated grid: the kernel once per thread of the launch, block by
 * block, thread by thread (target_emulated.c); stops between blocks
 */
static void
RunEmulatedGrid(const CompiledForest *compiled, const SilvanKernelArgs *args,
				volatile sig_atomic_t *stop)
{
	SilvanEmulatedKernelFn fn = (SilvanEmulatedKernelFn) (void *) compiled->fn;
	int			phases = compiled->mir->gpu_phases;
	void	   *shared = compiled->emulated_shared;
	uint32_t	grid[3];
	uint32_t	block[3];
	uint32_t	ids[6];

	MirGpuLaunch(compiled->mir, args->num_rows, grid, block);
	for (ids[2] = 0; ids[2] < grid[2]; ids[2]++)
		for (ids[1] = 0; ids[1] < grid[1]; ids[1]++)
			for (ids[0] = 0; ids[0] < grid[0] && *stop == 0; ids[0]++)
				for (int phase = 0; phase < phases; phase++)
					for (ids[5] = 0; ids[5] < block[2]; ids[5]++)
						for (ids[4] = 0; ids[4] < block[1]; ids[4]++)
							for (ids[3] = 0; ids[3] < block[0]; ids[3]++)
								fn(args, ids, shared, phase);
}

/* The rows' integer keys, for code whose layout stores keys (repr_keys.c); NULL without memory */
static uint32_t *
KeyRows(const CompiledForest *compiled, const void *rows, int64_t num_rows)
{
	size_t		n = (size_t) num_rows * (size_t) compiled->num_features;
	uint32_t   *keys = malloc(n * sizeof(uint32_t) + 1);

	if (keys != NULL)
		ReprKeyRows(rows, n, compiled->buffers.plain_form, keys);
	return keys;
}

bool
CompiledForestRun(const CompiledForest *compiled, const void *rows,
				  int64_t num_rows, void *acc, volatile sig_atomic_t *stop)
{
	const ReprBuffers *b = &compiled->buffers;
	SilvanKernelArgs args = {0};

	if (num_rows <= 0)
		return *stop == 0;
	if (compiled->fn == NULL)
		return false;			/* device code: GpuForestRun runs it */
	args.rows = rows;
	if (b->key_rows &&
		(args.rows = KeyRows(compiled, rows, num_rows)) == NULL)
		return false;
	args.num_rows = num_rows;
	args.acc = acc;
	args.max_chunks = 1;
	args.nodes = b->nodes;
	args.trees = b->trees;
	args.category_words = b->category_words;
	args.category_sets = b->category_sets;
	for (int i = 0; i < REPR_MAX_AUX; i++)
		args.aux[i] = b->aux[i];
	args.interrupt = stop;
	args.parallel_for = RuntimeParallelFor;
	if (compiled->needs_partials && RuntimeMaxThreads() > 1)
	{
		int64_t		chunks = RuntimeMaxThreads();

		size_t		n = (size_t) (chunks - 1) * (size_t) num_rows *
			(size_t) compiled->num_groups;

		args.partials = calloc(n, compiled->value_size);
		if (args.partials != NULL && compiled->aggregate != FOREST_AGGREGATE_SUM)
			PartialsEmpty(args.partials, n, compiled->value_size);
		if (args.partials != NULL)
			args.max_chunks = chunks;
	}
	if (compiled->target->gpu)
		RunEmulatedGrid(compiled, &args, stop);
	else
		compiled->fn(&args);
	free(args.partials);
	if (args.rows != rows)
		free((void *) args.rows);
	return *stop == 0;
}

/* CompiledForestRun stopped by the runtime's interrupt flag */
void
CompiledForestAccumulate(const CompiledForest *compiled, const void *rows,
						 int64_t num_rows, void *acc)
{
	(void) CompiledForestRun(compiled, rows, num_rows, acc, RuntimeInterruptFlag());
}

/* Text of every IR level (schedule, HIR, MIR, optionally LLVM IR) */
char *
CompiledForestExplain(const CompiledForest *compiled, bool with_llvm_ir)
{
	return CompiledForestExplainFor(compiled, with_llvm_ir, true);
}

/* The host profile's choices the code was made with, on one line of explain */
static void
ExplainHostProfile(TextBuf *buf, const HostProfile *host)
{
	TextAppend(buf, "host profile: %s", host->measured ? "measured" : "fallback");
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
	{
		const HostChoiceInfo *info = HostChoiceDescribe(c);
		int			pick = host->choices[c].pick;

		TextAppend(buf, "%s%s %s%s", c == 0 ? "; " : ", ", info->name,
				   info->alternatives[pick],
				   host->choices[c].how == HOST_HOW_SET ? " (set)" : "");
	}
	TextAppend(buf, "\n");
}

/*
 * The same; without origin, nothing that tells where the machine code
 * came from (the code cache is shared by every database of the server, so
 * a hit tells that the same model was compiled elsewhere): no compile
 * time, no origin, no word of the passes
 */
char *
CompiledForestExplainFor(const CompiledForest *compiled, bool with_llvm_ir, bool origin)
{
	TextBuf		buf = {0};
	const ReprBuffers *b = &compiled->buffers;

	if (compiled->target != &TargetCpu)
		TextAppend(&buf, "target: %s%s%s\n", compiled->target->name,
				   compiled->arch[0] ? " " : "", compiled->arch);
	TextAppend(&buf, "schedule: %s\n", compiled->schedule_text);
	if (!compiled->target->gpu)
		ExplainHostProfile(&buf, &compiled->host);
	TextAppend(&buf, "%s", compiled->hir_text);
	TextAppend(&buf, "representation: %s (%s), %lld nodes of %zu bytes",
			   compiled->repr->name, compiled->repr->variant(b),
			   (long long) b->num_nodes, b->node_size);
	if (b->num_leaves > 0)
		TextAppend(&buf, ", %lld leaves", (long long) b->num_leaves);
	TextAppend(&buf, ", %d category sets\n", b->num_category_sets);
	TextAppend(&buf, "%s", compiled->mir_text);
	if (compiled->counted.instructions > 0)
		TextAppend(&buf, "code size: %lld llvm ir instructions (estimated %lld, at most %lld), "
				   "largest function %lld (estimated %lld, at most %lld), most loops in a "
				   "function %lld (estimated %lld, at most %lld)\n",
				   (long long) compiled->counted.instructions,
				   (long long) compiled->estimated.instructions,
				   (long long) compiled->limits.max_instructions,
				   (long long) compiled->counted.largest_function,
				   (long long) compiled->estimated.largest_function,
				   (long long) compiled->limits.max_function_instructions,
				   (long long) compiled->counted.largest_function_loops,
				   (long long) compiled->estimated.largest_function_loops,
				   (long long) compiled->limits.max_function_loops);
	if (!origin)
		TextAppend(&buf, "compile time: shown to the model's owner\n");
	else
		TextAppend(&buf, "compile time: %.3f ms (machine code %s)\n", compiled->compile_ms,
				   CompiledForestCodeOrigin(compiled));
	if (origin && compiled->from_image)
		TextAppend(&buf, "passes: none ran; the buffers and the text above are the code "
				   "cache's image of the compile that made this code\n");
	else if (origin && compiled->passes_run != 0)
	{
		const char *sep = "passes: ";

		for (int p = 0; p < COMPILE_NUM_PASSES; p++)
			if (compiled->passes_run & (1u << p))
			{
				TextAppend(&buf, "%s%s %.3f ms", sep, compile_passes[p].name, compiled->pass_ms[p]);
				sep = ", ";
			}
		TextAppend(&buf, "\n");
	}
	if (with_llvm_ir && compiled->device_code != NULL &&
		compiled->target->output == TARGET_OUTPUT_PTX)
		TextAppend(&buf, "llvm ir:\n%sptx:\n%s", compiled->device_ir, compiled->device_code);
	else if (with_llvm_ir && compiled->device_code != NULL)
		TextAppend(&buf, "llvm ir:\n%samdgpu assembly:\n%scode object: %zu bytes for %s "
				   "(HSA, linked by ld.lld)\n", compiled->device_ir,
				   compiled->device_asm ? compiled->device_asm : "", compiled->device_code_len,
				   compiled->arch);
	else if (with_llvm_ir && compiled->llvm_ir.bitcode != NULL)
	{
		char	   *ir;

		LlvmErrorsEnter();
		ir = JitIrText(&compiled->llvm_ir);
		LlvmErrorsLeave();
		TextAppend(&buf, "llvm ir%s:\n%s", compiled->llvm_ir.before_passes ?
				   " (before the function passes: the code was emitted in two halves)" : "",
				   ir ? ir : "(could not be read back)\n");
		free(ir);
	}
	else if (with_llvm_ir)
		TextAppend(&buf, "llvm ir: not kept for code that was not compiled here\n");
	return TextFinish(&buf);
}

/* Was the machine code read from the code cache rather than compiled? */
bool
CompiledForestFromCodeCache(const CompiledForest *compiled)
{
	return compiled->code_source == JIT_FROM_DISK || compiled->code_source == JIT_FROM_DISK_BY_IR;
}

/* Where the machine code came from: "compiled", "from the code cache", ... */
const char *
CompiledForestCodeOrigin(const CompiledForest *compiled)
{
	switch (compiled->code_source)
	{
		case JIT_FROM_DISK:
			return "from the code cache";
		case JIT_FROM_DISK_BY_IR:
			return "from the code cache by its llvm ir";
		case JIT_SHARED:
			return "shared with an earlier compile";
		case JIT_COMPILED:
			break;
	}
	return JitCodeObjects(compiled->code) > 1 ? "compiled on two threads" : "compiled";
}

/* Object files of its machine code: 2 when emitted in two halves, 0 for none */
int
CompiledForestCodeObjects(const CompiledForest *compiled)
{
	return JitCodeObjects(compiled->code);
}

/* Milliseconds spent in CompileForest */
double
CompiledForestCompileMillis(const CompiledForest *compiled)
{
	return compiled->compile_ms;
}

/* Release code and buffers */
void
CompiledForestFree(CompiledForest *compiled)
{
	if (compiled == NULL)
		return;
	JitCodeFree(compiled->code);	/* no LLVM: elf_link.c's memory */
	ReprBuffersFree(&compiled->buffers);
	CodeCacheUnmap(&compiled->image_view);
	free(compiled->schedule_text);
	free(compiled->hir_text);
	free(compiled->mir_text);
	free(compiled->llvm_ir.bitcode);
	free(compiled->mir);
	free(compiled->device_code);
	free(compiled->device_ir);
	free(compiled->device_asm);
	free(compiled->emulated_shared);
	free(compiled->cpu);
	free(compiled->cpu_features);
	free(compiled);
}

/*
 * See compiler.h.  A call runs through every tree for each group of rows
 * it walks together, so it reads all of the forest's records and code: a
 * few hundred kB cost little beside the rows' own work (batch-1024 code
 * on calls of 64 rows scores about as fast as on whole batches: higgs'
 * and year's 100 trees in records, nyc_taxi's 3,000 splits in code), but
 * past a core's L2 cache each call fetches them again (mtpl2's 30,000
 * splits in code: calls of 64 rows are clearly slower a row than whole
 * batches, calls of 256 rows nearly as fast).  Code is counted at
 * COMPILE_CODE_BYTES_PER_SPLIT.
 */
int64_t
CompiledForestSplitRows(const CompiledForest *compiled)
{
	int64_t		bytes = compiled->code_splits * COMPILE_CODE_BYTES_PER_SPLIT;

	if (compiled->fn == NULL || compiled->target->gpu || compiled->needs_partials)
		return 0;
	for (int id = 0; id < REPR_NUM_BUFFERS; id++)
		bytes += (int64_t) compiled->buffers.bytes[id];
	return bytes > COMPILE_SPLIT_LARGE_BYTES ? COMPILE_SPLIT_ROWS_LARGE : COMPILE_SPLIT_ROWS;
}

/* The target the forest was compiled for */
const Target *
CompiledForestTarget(const CompiledForest *compiled)
{
	return compiled->target;
}

/* Device code (PTX with its NUL, or an HSA code object) and its length; NULL for host code */
const char *
CompiledForestDeviceCode(const CompiledForest *compiled, size_t *len)
{
	*len = compiled->device_code_len;
	return compiled->device_code;
}

/* The buffers the kernel reads */
const ReprBuffers *
CompiledForestBuffers(const CompiledForest *compiled)
{
	return &compiled->buffers;
}

/* Features per row, groups (classes) per row, bytes per value of rows and margins */
void
CompiledForestShape(const CompiledForest *compiled, int32_t *num_features, int32_t *num_groups,
					size_t *value_size)
{
	*num_features = compiled->num_features;
	*num_groups = compiled->num_groups;
	*value_size = compiled->value_size;
}

/* Grid and block of a gpu kernel's launch over num_rows rows */
void
CompiledForestLaunch(const CompiledForest *compiled, int64_t num_rows, uint32_t grid[3],
					 uint32_t block[3])
{
	MirGpuLaunch(compiled->mir, num_rows, grid, block);
}
