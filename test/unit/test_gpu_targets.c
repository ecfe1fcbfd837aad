/*
 * test_gpu_targets.c
 *		GPU lowering (target.h, MirBuildTarget, codegen's mapped loops) on
 *		an emulated grid, as PTX checked by NVIDIA's ptxas, and on a CUDA
 *		device where one is present.
 *
 * Models: real XGBoost (float32) and LightGBM (double, deep, categorical,
 * multiclass) models from ../shared/models (or $SILVAN_MODELS).  Schedules:
 * the gpu default and points of Table 5's space written by the tuner's
 * TuneGpuText (rows per block 8/32/64, rows per thread 1/2/4, tree threads
 * 1/2/10/50, interleave 1/2/4, unrolled or not, rows or trees cached,
 * shared reduction, each representation; perfect, outside Table 5, where
 * the model fits it), each value of each parameter in
 * at least one point.
 *
 * For every model and schedule:
 *   - gpu_emulated: compiled for the host and run one thread at a time over
 *     the launch's grid, on batches of 1, 3, 77 and 1000 rows; margins equal
 *     the reference interpreter's bit for bit.  The emulation runs a row's
 *     tree threads in order (block.y outside block.x), so even atomic adds
 *     keep the model's order here; a shared reduction's partial sums do
 *     not (each tree thread sums its trees, then the partials are added):
 *     within rounding.
 *   - cuda: PTX for sm_80 is emitted, and ptxas (where /usr/local/cuda has
 *     it) assembles it for sm_80 and sm_90 without a single line of output
 *     (no warning), and ptxas -v reports the registers used.
 *   - rocm: an HSA code object for gfx90a or gfx1030 (alternately) is
 *     emitted, linked by ld.lld-14, and llvm-readelf-14 --notes shows the
 *     kernel in its amdhsa metadata for that processor.  No AMD GPU has run
 *     one: the HIP path is tested through fake drivers only (test_gpu.c).
 *   - on a device (libcuda.so.1 loads and has a device; else "skip"): the
 *     PTX for the device's sm runs on the same batches; margins equal the
 *     interpreter's bit for bit where each row's trees are added by one
 *     thread (one tree thread), and within rounding where tree threads add
 *     atomically in the order the hardware picks.
 */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "silvan/compiler.h"
#include "silvan/forest.h"
#include "silvan/gpu.h"
#include "silvan/gpu_run.h"
#include "silvan/repr.h"
#include "silvan/tune.h"
#include "unit.h"

#define PTXAS "/usr/local/cuda/bin/ptxas"
#define lengthof(a) (sizeof(a) / sizeof((a)[0]))

static const char *const models[] = {
	"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json",
	"asprasad_treebeard/xgb_models--airline_xgb_model_save.json",
	"dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json",
	"dmitryikh_leaves/testdata--lg_rf_iris.model",
	"siboehm_lleaves/tests--models--NYC_taxi--model.txt",
	"siboehm_lleaves/tests--models--airline--model.txt",
	"siboehm_lleaves/tests--models--multiclass--model.txt",
	"siboehm_lleaves/tests--models--mixed_categorical--model.txt",
};

/* Table 5's parameters, each value in at least one point */
static const TuneGpuPoint points[] = {
	/* block rows, rows/thread, tree threads, cache rows, trees, unroll, interleave, shared, repr */
	{8, 1, 1, false, false, false, 1, false, 0},
	{32, 2, 1, false, false, true, 2, false, 1},
	{64, 4, 1, true, false, false, 4, false, 2},
	{32, 1, 2, false, true, false, 1, false, 0},
	{64, 2, 10, false, false, true, 4, true, 1},
	{8, 4, 50, true, true, false, 2, false, 2},
	{32, 1, 10, false, false, false, 1, true, 2},
	{32, 1, 1, true, false, true, 2, false, 3},	/* perfect, where it fits */
};

static const int64_t batches[] = {1, 3, 77, 1000};

static GpuLibrary *cuda;
static GpuDevice *device;
static char device_sm[16];
static int	device_runs;
static int	ptxas_runs;
static int	perfect_runs;		/* models checked with the perfect point */
static int	models_checked;
static int	hsaco_checks;
static bool have_lld;

/* Deterministic pseudo-random numbers */
static uint64_t rand_state = 0x9e3779b97f4a7c15ULL;

static double
RandUnit(void)
{
	rand_state ^= rand_state << 13;
	rand_state ^= rand_state >> 7;
	rand_state ^= rand_state << 17;
	return (double) (rand_state >> 11) / (double) (1ULL << 53);
}

/* Rows of the forest's precision: thresholds and their neighbours, NaN, noise */
static void *
MakeRows(const Forest *forest, int64_t num_rows)
{
	int64_t		n = num_rows * forest->num_features;
	void	   *rows = malloc(ForestValueSize(forest) * (size_t) (n > 0 ? n : 1));

	for (int64_t i = 0; i < n; i++)
	{
		double		u = RandUnit();
		double		v;
		const ForestNode *node = &forest->nodes[(int64_t) (RandUnit() * forest->num_nodes)];

		if (u < 0.1)
			v = NAN;
		else if (u < 0.6 && node->kind == FOREST_NODE_NUMERIC)
			v = u < 0.35 ? node->threshold : nextafter(node->threshold, u < 0.5 ? -INFINITY : INFINITY);
		else
			v = floor(RandUnit() * 40.0) - 5.0 + (u < 0.8 ? 0.5 : 0.0);
		if (forest->precision == FOREST_FLOAT32)
			((float *) rows)[i] = (float) v;
		else
			((double *) rows)[i] = v;
	}
	return rows;
}

/* Margin i as a double */
static double
MarginAt(const Forest *forest, const void *acc, int64_t i)
{
	return forest->precision == FOREST_FLOAT32 ? ((const float *) acc)[i] :
		((const double *) acc)[i];
}

/*
 * Compare margins with the interpreter's: bit for bit, or (exact false)
 * within rounding of a sum in another order; the first difference printed
 */
static bool
SameAsInterpreter(const Forest *forest, const void *rows, int64_t num_rows, const void *got,
				  bool exact, const char *what)
{
	size_t		bytes = ForestValueSize(forest) * (size_t) (num_rows * forest->num_groups);
	void	   *want = malloc(bytes);
	double		tolerance = forest->precision == FOREST_FLOAT32 ? 1e-4 : 1e-9;
	bool		same = true;

	ForestMarginsInit(forest, want, num_rows);
	ForestInterpretAccumulate(forest, rows, num_rows, want);
	for (int64_t i = 0; i < num_rows * forest->num_groups && same; i++)
	{
		double		w = MarginAt(forest, want, i);
		double		g = MarginAt(forest, got, i);

		same = exact ? memcmp((const char *) want + i * ForestValueSize(forest),
							  (const char *) got + i * ForestValueSize(forest),
							  ForestValueSize(forest)) == 0 :
			(isnan(w) && isnan(g)) || fabs(w - g) <= tolerance * fmax(1.0, fabs(w));
		if (!same)
			fprintf(stderr, "%s: %lld rows: margin %lld: want %.17g got %.17g\n", what,
					(long long) num_rows, (long long) i, w, g);
	}
	free(want);
	return same;
}

/* Run on the emulated grid and compare, for every batch size */
static void
CheckEmulated(const Forest *forest, const Schedule *schedule, const void *rows, bool exact,
			  const char *what)
{
	CompileOptions target = {&TargetGpuEmulated, NULL};
	SilvanStatus status;
	CompiledForest *compiled = CompileForestFor(forest, schedule, NULL, &target, &status);

	CHECK_MSG(compiled != NULL, "%s: emulated: %s: %s", what, status.message, status.detail);
	if (compiled == NULL)
		return;
	for (size_t b = 0; b < lengthof(batches); b++)
	{
		size_t		bytes = ForestValueSize(forest) * (size_t) (batches[b] * forest->num_groups);
		void	   *acc = malloc(bytes);

		ForestMarginsInit(forest, acc, batches[b]);
		CompiledForestAccumulate(compiled, rows, batches[b], acc);
		CHECK_MSG(SameAsInterpreter(forest, rows, batches[b], acc, exact, what),
				  "%s: emulated grid, %lld rows", what, (long long) batches[b]);
		free(acc);
	}
	CompiledForestFree(compiled);
}

/* ptxas for sm: no output at all, exit 0; -v's register count is printed */
static void
CheckPtxas(const char *ptx_path, const char *sm, const char *what)
{
	char		command[1024];
	char		line[512];
	FILE	   *out;
	int			lines = 0;
	int			rc;

	snprintf(command, sizeof(command), PTXAS " --gpu-name %s -o /dev/null %s 2>&1", sm, ptx_path);
	out = popen(command, "r");
	while (out && fgets(line, sizeof(line), out))
	{
		if (lines++ < 3)
			fprintf(stderr, "%s: ptxas %s: %s", what, sm, line);
	}
	rc = out ? pclose(out) : -1;
	CHECK_MSG(rc == 0 && lines == 0, "%s: ptxas %s: exit %d, %d lines", what, sm, rc, lines);
	ptxas_runs++;
}

/* The registers ptxas -v reports for the kernel, -1 if it does not */
static int
PtxasRegisters(const char *ptx_path, const char *sm)
{
	char		command[1024];
	char		line[512];
	FILE	   *out;
	int			registers = -1;

	snprintf(command, sizeof(command), PTXAS " -v --gpu-name %s -o /dev/null %s 2>&1", sm,
			 ptx_path);
	out = popen(command, "r");
	while (out && fgets(line, sizeof(line), out))
	{
		char	   *p = strstr(line, "Used ");

		if (p)
			registers = atoi(p + 5);
	}
	if (out)
		pclose(out);
	return registers;
}

/* Run on the CUDA device and compare, for every batch size */
static void
CheckOnDevice(const Forest *forest, const CompiledForest *compiled, const void *rows,
			  bool exact, const char *what)
{
	SilvanStatus status;
	GpuForest  *gf = GpuForestLoad(compiled, device, &status);

	CHECK_MSG(gf != NULL, "%s: load on device: %s: %s", what, status.message, status.detail);
	if (gf == NULL)
		return;
	for (size_t b = 0; b < lengthof(batches); b++)
	{
		size_t		bytes = ForestValueSize(forest) * (size_t) (batches[b] * forest->num_groups);
		void	   *acc = malloc(bytes);
		bool		ran;

		ForestMarginsInit(forest, acc, batches[b]);
		ran = GpuForestRun(gf, rows, batches[b], acc, &status);
		CHECK_MSG(ran, "%s: run on device: %s: %s", what, status.message, status.detail);
		if (ran)
			CHECK_MSG(SameAsInterpreter(forest, rows, batches[b], acc, exact, what),
					  "%s: device, %lld rows", what, (long long) batches[b]);
		free(acc);
		device_runs++;
	}
	GpuForestFree(gf);
}

/* Emit PTX for sm, check it with ptxas, and run it where a device is */
static void
CheckCuda(const Forest *forest, const Schedule *schedule, const void *rows, bool exact,
		  const char *what, const char *tmpdir)
{
	CompileOptions target = {&TargetCuda, NULL};
	SilvanStatus status;
	CompiledForest *compiled = CompileForestFor(forest, schedule, NULL, &target, &status);
	size_t		len;
	const char *ptx;
	char		path[256];
	FILE	   *f;

	CHECK_MSG(compiled != NULL, "%s: cuda: %s: %s", what, status.message, status.detail);
	if (compiled == NULL)
		return;
	ptx = CompiledForestDeviceCode(compiled, &len);
	CHECK_MSG(ptx != NULL && strstr(ptx, ".entry silvan_forest_kernel") != NULL,
			  "%s: no kernel entry in the PTX", what);
	if (access(PTXAS, X_OK) == 0 && ptx != NULL)
	{
		snprintf(path, sizeof(path), "%s/kernel.ptx", tmpdir);
		f = fopen(path, "w");
		if (f)
		{
			fwrite(ptx, 1, len - 1, f);
			fclose(f);
			CheckPtxas(path, "sm_80", what);
			CheckPtxas(path, "sm_90", what);
			printf("    %s: sm_80 registers %d\n", what, PtxasRegisters(path, "sm_80"));
		}
	}
	CompiledForestFree(compiled);
	if (device == NULL)
		return;
	/* the device's own sm (GpuPtxTarget), as a backend would compile for it */
	target.arch = device_sm;
	compiled = CompileForestFor(forest, schedule, NULL, &target, &status);
	CHECK_MSG(compiled != NULL, "%s: cuda %s: %s: %s", what, device_sm, status.message,
			  status.detail);
	if (compiled != NULL)
		CheckOnDevice(forest, compiled, rows, exact, what);
	CompiledForestFree(compiled);
}

/*
 * Emit an HSA code object for gfx and check it with llvm-readelf-14: the
 * kernel and the processor in its amdhsa metadata
 */
static void
CheckRocm(const Forest *forest, const Schedule *schedule, const char *gfx, const char *what,
		  const char *tmpdir)
{
	CompileOptions target = {&TargetRocm, gfx};
	SilvanStatus status;
	CompiledForest *compiled = CompileForestFor(forest, schedule, NULL, &target, &status);
	size_t		len;
	const char *hsaco;
	char		path[256];
	char		command[512];
	char		line[512];
	bool		kernel = false;
	bool		processor = false;
	FILE	   *f;

	CHECK_MSG(compiled != NULL, "%s: rocm %s: %s: %s", what, gfx, status.message, status.detail);
	if (compiled == NULL)
		return;
	hsaco = CompiledForestDeviceCode(compiled, &len);
	snprintf(path, sizeof(path), "%s/kernel.hsaco", tmpdir);
	if (hsaco != NULL && (f = fopen(path, "wb")) != NULL)
	{
		fwrite(hsaco, 1, len, f);
		fclose(f);
		snprintf(command, sizeof(command), "llvm-readelf-14 --notes %s 2>&1", path);
		f = popen(command, "r");
		while (f && fgets(line, sizeof(line), f))
		{
			kernel |= strstr(line, ".name:") && strstr(line, "silvan_forest_kernel");
			processor |= strstr(line, "amdgcn-amd-amdhsa--") && strstr(line, gfx);
		}
		if (f)
			pclose(f);
		unlink(path);
	}
	CHECK_MSG(kernel && processor, "%s: %s code object: kernel %d, processor %d", what, gfx,
			  kernel, processor);
	hsaco_checks++;
	CompiledForestFree(compiled);
}

/* Every schedule on one model */
static void
CheckModel(const char *path, const char *tmpdir)
{
	Forest	   *forest = LoadSharedModel(path);
	TuneShape	shape;
	void	   *rows;

	if (forest == NULL)
		return;
	rows = MakeRows(forest, batches[lengthof(batches) - 1]);
	TuneShapeOf(forest, 1000, 1, true, false, NULL, &shape);
	for (int p = -1; p < (int) lengthof(points); p++)
	{
		Schedule	schedule;
		char		text[1024];
		char		what[1400];
		SilvanStatus status;
		bool		exact = true;

		if (p >= 0 && points[p].representation == ReprIndex("perfect") &&
			!ReprPerfectFits(forest->num_trees, forest->max_depth, forest->num_nodes))
			continue;
		perfect_runs += p >= 0 && points[p].representation == ReprIndex("perfect");
		if (p < 0)
			ScheduleGpuDefault(forest, 1000, &schedule);
		else
		{
			CHECK(TuneGpuText(&shape, &points[p], text, sizeof(text)));
			CHECK_MSG(ScheduleParse(text, &schedule, &status), "%s: %s", status.message,
					  status.detail);
			exact = points[p].tree_threads == 1;
		}
		snprintf(what, sizeof(what), "%s [%s]", path, p < 0 ? "gpu default" : text);
		for (char *c = what; *c; c++)
			if (*c == '\n')
				*c = ';';
		/* the emulated grid keeps the model's order but for partial sums of a shared reduction */
		CheckEmulated(forest, &schedule, rows,
					  p < 0 || !points[p].shared_reduce || points[p].tree_threads == 1, what);
		CheckCuda(forest, &schedule, rows, exact, what, tmpdir);
		if (have_lld)
			CheckRocm(forest, &schedule, p % 2 ? "gfx90a" : "gfx1030", what, tmpdir);
	}
	printf("  %s: %d trees, %d classes checked\n", path, forest->num_trees, forest->num_groups);
	models_checked++;
	free(rows);
	ForestFree(forest);
}

/* The MIR of a gpu schedule: mapped loops, atomic tree threads, notes */
static void
TestMirDump(void)
{
	Forest	   *forest = LoadSharedModel(models[0]);
	CompileOptions target = {&TargetGpuEmulated, NULL};
	Schedule	schedule;
	SilvanStatus status;
	CompiledForest *compiled;
	char	   *text;

	if (forest == NULL)
		return;
	CHECK(ScheduleParse("tile(batch, b0, b1, 32)\ntile(tree, t0, t1, 10)\n"
						"reorder(b0, b1, t0, t1)\ngpuDimension(b0, grid.x)\n"
						"gpuDimension(b1, block.x)\ngpuDimension(t0, block.y)\n"
						"parallel(b0)\ncache(b0)\n", &schedule, &status));
	compiled = CompileForestFor(forest, &schedule, NULL, &target, &status);
	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	if (compiled)
	{
		text = CompiledForestExplain(compiled, false);
		CHECK_MSG(strstr(text, "target: gpu_emulated") != NULL, "%s", text);
		CHECK_MSG(strstr(text, "for b0 in tiles of batch by 32 one per grid.x index") != NULL,
				  "%s", text);
		CHECK_MSG(strstr(text, "one per block.y index") != NULL, "%s", text);
		CHECK_MSG(strstr(text, ", atomically") != NULL, "%s", text);
		CHECK_MSG(strstr(text, "parallel(b0) ignored on a gpu") != NULL, "%s", text);
		CHECK_MSG(strstr(text, "cacheRows(b0): the block's 32 rows to shared memory") != NULL,
				  "%s", text);
		free(text);
		CompiledForestFree(compiled);
	}
	/* a path that maps fewer dimensions than another would run its rows twice */
	CHECK(ScheduleParse("split(batch, b0, b1, 100)\ngpuDimension(b0, block.x)\n",
						&schedule, &status));
	compiled = CompileForestFor(forest, &schedule, NULL, &target, &status);
	CHECK(compiled == NULL);
	CHECK_MSG(compiled == NULL && strstr(status.detail, "maps no loop to block.x") != NULL,
			  "%s", status.detail);
	CompiledForestFree(compiled);
	/*
	 * a block of more threads than CUDA and HIP launch (Algorithm 1's 32
	 * rows x 50 tree threads for bosch fail at launch with
	 * CUDA_ERROR_INVALID_VALUE), and a block that grows with the batch
	 */
	CHECK(ScheduleParse("tile(batch, b0, b1, 32)\ntile(tree, t0, t1, 2)\n"
						"reorder(b0, b1, t0, t1)\ngpuDimension(b0, grid.x)\n"
						"gpuDimension(b1, block.x)\ngpuDimension(t0, block.y)\n", &schedule, &status));
	compiled = CompileForestFor(forest, &schedule, NULL, &target, &status);
	CHECK_MSG(compiled == NULL && strstr(status.detail, "32 x 50 x 1 = 1600 threads; at most 1024"),
			  "%s", compiled ? "compiled" : status.detail);
	CompiledForestFree(compiled);
	CHECK(ScheduleParse("gpuDimension(batch, block.x)\n", &schedule, &status));
	compiled = CompileForestFor(forest, &schedule, NULL, &target, &status);
	CHECK_MSG(compiled == NULL && strstr(status.detail, "grows with the batch"), "%s",
			  compiled ? "compiled" : status.detail);
	CompiledForestFree(compiled);
	CHECK(ScheduleParse("split(batch, b0, b1, 100)\ngpuDimension(b0, block.x)\n",
						&schedule, &status));
	/* cache() stages rows only on the outermost loop, and only what fits in 48 kB */
	CHECK(ScheduleParse("tile(batch, b0, b1, 2048)\ngpuDimension(b0, grid.x)\n"
						"gpuDimension(b1, block.x)\ncache(b0)\n", &schedule, &status));
	compiled = CompileForestFor(forest, &schedule, NULL, &target, &status);
	CHECK_MSG(compiled == NULL && strstr(status.detail, "2048 threads in block.x"), "%s",
			  compiled ? "compiled" : status.detail);
	CompiledForestFree(compiled);
	CHECK(ScheduleParse("tile(batch, b0, b1, 1024)\ngpuDimension(b0, grid.x)\n"
						"gpuDimension(b1, block.x)\ncache(b0)\ncache(b1)\n", &schedule, &status));
	compiled = CompileForestFor(forest, &schedule, NULL, &target, &status);
	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	if (compiled)
	{
		text = CompiledForestExplain(compiled, false);
		CHECK_MSG(strstr(text, "cache(b0) ignored: 1024 rows of 28 features take 114688 bytes "
						 "of shared memory, more than 49152") != NULL, "%s", text);
		CHECK_MSG(strstr(text, "cache(b1) ignored on a gpu: only the outermost loop") != NULL,
				  "%s", text);
		free(text);
	}
	CompiledForestFree(compiled);
	/* a shared reduction over rows split below it falls back to atomic adds */
	CHECK(ScheduleParse("tile(batch, b0, b1, 32)\ntile(tree, t0, t1, 10)\n"
						"reorder(b0, t0, b1, t1)\ngpuDimension(b0, grid.x)\n"
						"gpuDimension(t0, block.y)\nsplit(b1, b2, b3, 8)\nsharedReduce(t0)\n",
						&schedule, &status));
	compiled = CompileForestFor(forest, &schedule, NULL, &target, &status);
	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	if (compiled)
	{
		text = CompiledForestExplain(compiled, false);
		CHECK_MSG(strstr(text, "sharedReduce(t0): atomic adds instead (a loop below it splits "
						 "its rows)") != NULL, "%s", text);
		free(text);
	}
	CompiledForestFree(compiled);
	/* a staged kernel's PTX: shared memory and a barrier */
	{
		CompileOptions cuda = {&TargetCuda, NULL};
		size_t		len;

		CHECK(ScheduleParse("tile(batch, b0, b1, 64)\ngpuDimension(b0, grid.x)\n"
							"gpuDimension(b1, block.x)\ncache(b0)\n", &schedule, &status));
		compiled = CompileForestFor(forest, &schedule, NULL, &cuda, &status);
		CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
		if (compiled)
		{
			const char *ptx = CompiledForestDeviceCode(compiled, &len);

			CHECK_MSG(strstr(ptx, ".shared .align 16 .b8 silvan_shared[7168]") != NULL &&
					  strstr(ptx, "bar.sync") != NULL, "%s", ptx);
		}
		CompiledForestFree(compiled);
	}
	CHECK(ScheduleParse("split(batch, b0, b1, 100)\ngpuDimension(b0, block.x)\n",
						&schedule, &status));
	/* the cpu ignores gpuDimension, with a note */
	compiled = CompileForest(forest, &schedule, NULL, &status);
	CHECK_MSG(compiled != NULL, "%s: %s", status.message, status.detail);
	if (compiled)
	{
		text = CompiledForestExplain(compiled, false);
		CHECK_MSG(strstr(text, "gpuDimension(b0) ignored: the target is the cpu") != NULL,
				  "%s", text);
		free(text);
	}
	CompiledForestFree(compiled);
	ForestFree(forest);
}

/* Open the first CUDA device, if there is one */
static void
OpenDevice(void)
{
	SilvanStatus status;
	GpuDeviceInfo info;
	int			major;
	int			minor;

	cuda = GpuDriverLoad(GPU_CUDA, NULL, &status);
	if (cuda == NULL)
	{
		printf("  skip device runs: %s: %s\n", status.message, status.detail);
		return;
	}
	CHECK_MSG(GpuDeviceInfoGet(cuda, 0, &info, &status), "%s: %s", status.message,
			  status.detail);
	device = GpuDeviceOpen(cuda, 0, &status);
	CHECK_MSG(device != NULL, "%s: %s", status.message, status.detail);
	if (device == NULL || sscanf(info.arch, "sm_%1d%d", &major, &minor) != 2)
		return;
	snprintf(device_sm, sizeof(device_sm), "%s", GpuPtxTarget(major, minor));
	printf("  device: %s (%s), PTX for %s\n", info.name, info.arch, device_sm);
}

int
main(void)
{
	char		tmpdir[] = "/tmp/silvan-gpu-targets-XXXXXX";
	char		path[128];

	if (mkdtemp(tmpdir) == NULL)
		return 1;
	if (access(PTXAS, X_OK) != 0)
		printf("  skip ptxas: %s not found\n", PTXAS);
	have_lld = system("command -v ld.lld-14 >/dev/null && command -v llvm-readelf-14 >/dev/null") == 0 ||
		(access("/usr/lib/llvm-14/bin/ld.lld", X_OK) == 0 &&
		 access("/usr/lib/llvm-14/bin/llvm-readelf", X_OK) == 0 &&
		 system("command -v llvm-readelf-14 >/dev/null") == 0);
	if (!have_lld)
		printf("  skip AMDGPU code objects: ld.lld-14 or llvm-readelf-14 not found (package lld-14)\n");
	OpenDevice();
	TestMirDump();
	for (size_t m = 0; m < lengthof(models); m++)
		CheckModel(models[m], tmpdir);
	printf("  ptxas runs %d, code objects checked %d, device runs %d, perfect layout on %d models\n",
		   ptxas_runs, hsaco_checks, device_runs, perfect_runs);
	CHECK_MSG(perfect_runs > 0 || models_checked == 0, "no model took the perfect layout's point");
	if (device)
		GpuDeviceClose(device);
	if (cuda)
		GpuDriverUnload(cuda);
	snprintf(path, sizeof(path), "%s/kernel.ptx", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	UNIT_DONE();
}
