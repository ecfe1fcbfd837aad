/*
 * test_gpu.c
 *		GPU driver loading (gpu.c, gpu_cuda.c, gpu_hip.c) and device code
 *		emission (gpu_emit.c), on a machine without a GPU.
 *
 * Drivers.  Where libcuda.so.1 and libamdhip64.so are absent, loading
 * fails with "<library> not found" and dlerror's text, and GpuDevices
 * returns no device with both reasons.  The other failure paths need a
 * driver, so the test builds fake driver libraries with the system C
 * compiler into a temporary directory and hands their paths to
 * GpuDriverLoad: libraries defining only the first k of a vendor's
 * functions must be refused naming function k (this proves the loader
 * looks every function up, in its documented order); complete fakes whose
 * cuInit/hipInit fail must give the driver's error name and string, with
 * the fallback when cuGetErrorName does not know the code; a fake with no
 * device gives "no CUDA device"; fakes with one device check what
 * GpuDeviceInfoGet reads (CUDA's compute capability as sm_90, HIP's
 * gcnArchName at its ROCm 6 offset, stripped of features, and refused
 * when it is not a gfx name).  Fakes stand in only for a driver that
 * cannot run here; what they prove is the loader's side of the contract.
 *
 * Running code.  The complete fakes also implement the running hooks,
 * with device memory as host memory, copies as memcpy and the "kernel" a
 * host function computing y = 2x + 1, and keep the driver's per-thread
 * current context (CUDA) or device (HIP): a call that does not make it
 * current first fails.  Through each vendor's fake: a round trip (open,
 * load, allocate, copy in, launch, copy back and wait on a second thread,
 * free, unload, close) must bring the bytes back and leave no block,
 * module, stream or retained context behind; fakes told by -DFAKE_* to
 * fail must give statuses naming the call and the error (the refused PTX
 * with ptxas's log lines, a missing kernel, allocation, launch, wait,
 * stream creation, after which the context must be released); an
 * ordinal out of range, a NULL device, a module not loaded, a null
 * address, an empty block and a PTX text without its NUL give clean
 * statuses, and zero bytes and an empty grid succeed doing nothing.
 * Where a real CUDA driver and device exist, the scale kernel's PTX is
 * compiled by the driver and run on a million values, and a bad PTX, a
 * missing kernel and an oversized block are refused by the driver.
 * Where cuda.h is installed, gpu_cuda.c is compiled against it with
 * -DSILVAN_CHECK_CUDA_H, which asserts that every declaration matches the
 * header; a copy with one parameter type changed must fail that check.
 *
 * Emission.  A kernel y[i] = x[i] * 2 + 1 (for i < n) is built with the
 * LLVM-C API for NVPTX (thread index from the PTX special registers,
 * marked a kernel in nvvm.annotations) and AMDGPU (amdgpu_kernel calling
 * convention, workitem and workgroup ids).  The PTX for sm_80 must pass
 * NVIDIA's ptxas for sm_80 and sm_90 with no output at all (no warning),
 * and ptxas -v must report the registers used.  The AMDGPU objects for
 * gfx90a and gfx1030 are linked by ld.lld-14, and llvm-readelf-14 --notes
 * must show the kernel in the code object's amdhsa.kernels metadata for
 * that processor.  gfx1100 (unknown to LLVM 14), an unknown sm, the wrong
 * triple, invalid IR, a missing linker and a garbage object must each
 * give a clean status.  A tool that is absent is reported as "skip: ...".
 */
#include <math.h>
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/forest.h"
#include "silvan/gpu.h"
#include "silvan/gpu_run.h"
#include "silvan/schedule.h"
#include "silvan/tune.h"
#include "unit.h"

static char tmpdir[] = "/tmp/silvan-gpu-test-XXXXXX";
static bool have_cc = false;

/* Run a shell command (printf-style); its exit status, -1 if it did not exit */
static int
Run(const char *fmt,...) __attribute__((format(printf, 1, 2)));
static int
Run(const char *fmt,...)
{
	char		command[4096];
	va_list		args;
	int			rc;

	va_start(args, fmt);
	vsnprintf(command, sizeof(command), fmt, args);
	va_end(args);
	rc = system(command);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Whether a file exists and is executable */
static bool
HaveTool(const char *path)
{
	return access(path, X_OK) == 0;
}

/* Write text to a file in the temporary directory; its path in path */
static bool
WriteTemp(const char *name, const void *bytes, size_t len, char *path, size_t size)
{
	FILE	   *f;
	bool		ok;

	snprintf(path, size, "%s/%s", tmpdir, name);
	if ((f = fopen(path, "wb")) == NULL)
		return false;
	ok = fwrite(bytes, 1, len, f) == len;
	return fclose(f) == 0 && ok;
}

/* ---- drivers ---- */

/*
 * What both fakes share: the FAKE_* defaults for running code (0: the call
 * succeeds, else the error it returns), memory as host memory with a count
 * of live blocks, streams as queues, and the kernels run on the host: the
 * scale kernel (params: x, y, n) and the forest kernel, which hands its
 * SilvanKernelArgs to the test's fake_forest_hook.  A launch copies its
 * parameters' values, as drivers do.  With FAKE_DEFER a stream's copies
 * and kernels run only when it is synchronized, in order, reading their
 * sources then, as DMA from pinned memory does: a caller that reuses a
 * buffer before waiting, or reads a result before waiting, sees it fail.
 */
static const char *fake_common =
"#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
"#include <string.h>\n"
"#ifndef FAKE_JIT\n#define FAKE_JIT 0\n#endif\n"
"#ifndef FAKE_ALLOC\n#define FAKE_ALLOC 0\n#endif\n"
"#ifndef FAKE_LAUNCH\n#define FAKE_LAUNCH 0\n#endif\n"
"#ifndef FAKE_SYNC\n#define FAKE_SYNC 0\n#endif\n"
"#ifndef FAKE_STREAM\n#define FAKE_STREAM 0\n#endif\n"
"#ifndef FAKE_STREAM_AT\n#define FAKE_STREAM_AT 0\n#endif\n"
"#ifndef FAKE_DEFER\n#define FAKE_DEFER 0\n#endif\n"
"int fake_blocks, fake_modules, fake_streams, fake_retained, fake_pinned, fake_launches;\n"
"int fake_peak_queued;\n"
"void (*fake_forest_hook) (void *args, unsigned threads);\n"
"static int fake_stream_ids[8], fake_streams_made;\n"
"typedef struct { void (*f) (void **, unsigned); void *dst; const void *src; size_t n;\n"
"  uint64_t values[3]; unsigned threads; } FakeOp;\n"
"static FakeOp fake_queue[8][64];\nstatic int fake_queued[8];\n"
"typedef struct { int code; const char *name, *text; } FakeError;\n"
"static const char *fake_log = \"ptxas application ptx input, line 3; error   : Unknown \"\n"
"  \"directive '.bogus'\\nptxas fatal   : Ptx assembly aborted due to errors\\n\";\n"
"static void fake_scale(void **p, unsigned threads) {\n"
"  float *x = (float *) (uintptr_t) *(uint64_t *) p[0];\n"
"  float *y = (float *) (uintptr_t) *(uint64_t *) p[1];\n"
"  int n = *(int *) p[2];\n"
"  for (unsigned i = 0; i < threads && (int) i < n; i++) y[i] = x[i] * 2 + 1; }\n"
"static void fake_forest(void **p, unsigned threads) {\n"
"  if (fake_forest_hook) fake_forest_hook((void *) (uintptr_t) *(uint64_t *) p[0], threads); }\n"
"static void *fake_new_stream(void) {\n"
"  fake_streams++; return &fake_stream_ids[fake_streams_made++ % 8]; }\n"
"static int fake_stream(void *st) {\n"
"  for (int i = 0; i < 8; i++) if (st == &fake_stream_ids[i]) return i;\n"
"  return -1; }\n"
"static void fake_run(FakeOp *o) {\n"
"  void *p[3] = {&o->values[0], &o->values[1], &o->values[2]};\n"
"  if (o->f) { o->f(p, o->threads); fake_launches++; } else memcpy(o->dst, o->src, o->n); }\n"
"static int fake_queue_op(void *st, FakeOp o) {\n"
"  int s = fake_stream(st);\n"
"  if (s < 0) return 400;\n"
"  if (!FAKE_DEFER) { fake_run(&o); return 0; }\n"
"  if (fake_queued[s] == 64) return 999;\n"
"  fake_queue[s][fake_queued[s]++] = o;\n"
"  if (fake_queued[s] > fake_peak_queued) fake_peak_queued = fake_queued[s];\n"
"  return 0; }\n"
"static int fake_sync(void *st) {\n"
"  int s = fake_stream(st);\n"
"  if (s < 0) return 400;\n"
"  for (int i = 0; i < fake_queued[s]; i++) fake_run(&fake_queue[s][i]);\n"
"  fake_queued[s] = 0; return FAKE_SYNC; }\n"
"static int fake_copy(void *st, void *d, const void *s, size_t n) {\n"
"  FakeOp o = {NULL, d, s, n, {0}, 0}; return fake_queue_op(st, o); }\n"
"static int fake_launch(void *f, void **p, unsigned threads, void *st) {\n"
"  FakeOp o = {(void (*) (void **, unsigned)) f, NULL, NULL, 0, {0}, threads};\n"
"  if (o.f == fake_scale) {\n"
"    memcpy(&o.values[0], p[0], 8); memcpy(&o.values[1], p[1], 8); memcpy(&o.values[2], p[2], 4); }\n"
"  else memcpy(&o.values[0], p[0], 8);\n"
"  return fake_queue_op(st, o); }\n"
"static int fake_function(void **f, const char *name) {\n"
"  if (strcmp(name, \"silvan_scale\") == 0) *f = (void *) fake_scale;\n"
"  else if (strcmp(name, \"silvan_forest_kernel\") == 0) *f = (void *) fake_forest;\n"
"  else return 500;\n"
"  return 0; }\n"
"static const FakeError *fake_error(const FakeError *f, int e) {\n"
"  for (; f->name; f++) if (f->code == e) return f;\n"
"  return NULL; }\n";

/*
 * The CUDA fake's functions with behaviour; FAKE_* come from -D.  The
 * context is current per thread, as in the real driver: every call that
 * needs it fails with CUDA_ERROR_INVALID_CONTEXT on a thread that has not
 * made it current, and copies and launches must come on the stream it made
 */
static const char *fake_cuda_special =
"static int fake_ctx;\nstatic __thread void *fake_current;\n"
"#define FAKE_CURRENT if (fake_current != &fake_ctx) return 201\n"
"static const FakeError fake_errors[] = {\n"
"  {100, \"CUDA_ERROR_NO_DEVICE\", \"no CUDA-capable device is detected\"},\n"
"  {999, \"CUDA_ERROR_UNKNOWN\", \"unknown error\"},\n"
"  {2, \"CUDA_ERROR_OUT_OF_MEMORY\", \"out of memory\"},\n"
"  {201, \"CUDA_ERROR_INVALID_CONTEXT\", \"invalid device context\"},\n"
"  {218, \"CUDA_ERROR_INVALID_PTX\", \"a PTX JIT compilation failed\"},\n"
"  {400, \"CUDA_ERROR_INVALID_HANDLE\", \"invalid resource handle\"},\n"
"  {500, \"CUDA_ERROR_NOT_FOUND\", \"named symbol not found\"},\n"
"  {700, \"CUDA_ERROR_ILLEGAL_ADDRESS\", \"an illegal memory access was encountered\"},\n"
"  {701, \"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES\", \"too many resources requested for launch\"},\n"
"  {0, NULL, NULL}};\n"
"int cuInit(unsigned f) { return FAKE_INIT; }\n"
"int cuDeviceGetCount(int *n) { *n = FAKE_COUNT; return FAKE_COUNT_RESULT; }\n"
"int cuDeviceGet(int *d, int o) { *d = o; return 0; }\n"
"int cuDeviceGetName(char *s, int len, int d) { strncpy(s, \"Fake H100\", len); return 0; }\n"
"int cuDeviceGetAttribute(int *v, unsigned a, int d) { *v = a == 75 ? 9 : a == 76 ? 0 : -1; return 0; }\n"
"int cuDeviceTotalMem_v2(size_t *b, int d) { *b = (size_t) 80 << 30; return 0; }\n"
"int cuDevicePrimaryCtxRetain(void **c, int d) { *c = &fake_ctx; fake_retained++; return 0; }\n"
"int cuDevicePrimaryCtxRelease_v2(int d) { fake_retained--; return 0; }\n"
"int cuCtxSetCurrent(void *c) { fake_current = c; return 0; }\n"
"int cuStreamCreate(void **s, unsigned f) {\n"
"  FAKE_CURRENT; if (FAKE_STREAM && fake_streams >= FAKE_STREAM_AT) return FAKE_STREAM;\n"
"  *s = fake_new_stream(); return 0; }\n"
"int cuStreamDestroy_v2(void *s) { FAKE_CURRENT; if (fake_stream(s) < 0) return 400; fake_streams--; return 0; }\n"
"int cuStreamSynchronize(void *s) { FAKE_CURRENT; return fake_sync(s); }\n"
"int cuModuleLoadDataEx(void **m, const void *image, unsigned n, unsigned *o, void **v) {\n"
"  char *log = NULL; size_t size = 0;\n"
"  FAKE_CURRENT;\n"
"  for (unsigned i = 0; i < n; i++) {\n"
"    if (o[i] == 5) log = v[i];\n"
"    if (o[i] == 6) size = (uintptr_t) v[i]; }\n"
"  if (FAKE_JIT && log && size) snprintf(log, size, \"%s\", fake_log);\n"
"  if (FAKE_JIT) return FAKE_JIT;\n"
"  *m = &fake_modules; fake_modules++; return 0; }\n"
"int cuModuleGetFunction(void **f, void *m, const char *name) {\n"
"  FAKE_CURRENT; return fake_function(f, name); }\n"
"int cuModuleUnload(void *m) { FAKE_CURRENT; fake_modules--; return 0; }\n"
"int cuMemAlloc_v2(uint64_t *p, size_t n) {\n"
"  FAKE_CURRENT; if (FAKE_ALLOC) return FAKE_ALLOC;\n"
"  *p = (uintptr_t) malloc(n); fake_blocks++; return 0; }\n"
"int cuMemFree_v2(uint64_t p) { FAKE_CURRENT; free((void *) (uintptr_t) p); fake_blocks--; return 0; }\n"
"int cuMemAllocHost_v2(void **p, size_t n) {\n"
"  FAKE_CURRENT; if (FAKE_ALLOC) return FAKE_ALLOC;\n"
"  *p = malloc(n); fake_pinned++; return 0; }\n"
"int cuMemFreeHost(void *p) { FAKE_CURRENT; free(p); fake_pinned--; return 0; }\n"
"int cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *st) {\n"
"  FAKE_CURRENT; return fake_copy(st, (void *) (uintptr_t) d, s, n); }\n"
"int cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *st) {\n"
"  FAKE_CURRENT; return fake_copy(st, d, (void *) (uintptr_t) s, n); }\n"
"int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,\n"
"  unsigned bx, unsigned by, unsigned bz, unsigned sh, void *st, void **p, void **e) {\n"
"  FAKE_CURRENT; if (FAKE_LAUNCH) return FAKE_LAUNCH;\n"
"  if (e != NULL) return 400;\n"
"  return fake_launch(f, p, gx * gy * gz * bx * by * bz, st); }\n"
"int cuGetErrorName(unsigned e, const char **s) {\n"
"  const FakeError *f = fake_error(fake_errors, (int) e);\n"
"  *s = f ? f->name : NULL; return f ? 0 : 1; }\n"
"int cuGetErrorString(unsigned e, const char **s) {\n"
"  const FakeError *f = fake_error(fake_errors, (int) e);\n"
"  *s = f ? f->text : NULL; return f ? 0 : 1; }\n";

/*
 * The HIP fake's functions with behaviour; FAKE_* come from -D.  The
 * current device is per thread and none at first here (HIP's is 0): every
 * call that touches the device fails with hipErrorInvalidDevice on a
 * thread that has not selected it with hipSetDevice
 */
static const char *fake_hip_special =
"static __thread int fake_device = -1;\n"
"#define FAKE_CURRENT if (fake_device != 0) return 101\n"
"static const FakeError fake_errors[] = {\n"
"  {100, \"hipErrorNoDevice\", \"no ROCm-capable device is detected\"},\n"
"  {2, \"hipErrorOutOfMemory\", \"out of memory\"},\n"
"  {101, \"hipErrorInvalidDevice\", \"invalid device ordinal\"},\n"
"  {200, \"hipErrorInvalidImage\", \"device kernel image is invalid\"},\n"
"  {400, \"hipErrorInvalidHandle\", \"invalid resource handle\"},\n"
"  {500, \"hipErrorNotFound\", \"named symbol not found\"},\n"
"  {700, \"hipErrorIllegalAddress\", \"an illegal memory access was encountered\"},\n"
"  {701, \"hipErrorLaunchOutOfResources\", \"too many resources requested for launch\"},\n"
"  {0, NULL, NULL}};\n"
"int hipInit(unsigned f) { return FAKE_INIT; }\n"
"int hipGetDeviceCount(int *n) { *n = FAKE_COUNT; return FAKE_COUNT_RESULT; }\n"
"int hipDeviceGetName(char *s, int len, int d) { strncpy(s, \"Fake MI210\", len); return 0; }\n"
"int hipDeviceTotalMem(size_t *b, int d) { *b = (size_t) 64 << 30; return 0; }\n"
"int hipGetDevicePropertiesR0600(char *p, int d) {\n"
"  strcpy(p, \"AMD Instinct MI210\"); strcpy(p + 1160, FAKE_ARCH); return 0; }\n"
"int hipSetDevice(int d) { if (d < 0 || d >= FAKE_COUNT) return 101; fake_device = d; return 0; }\n"
"int hipStreamCreate(void **s) {\n"
"  FAKE_CURRENT; if (FAKE_STREAM && fake_streams >= FAKE_STREAM_AT) return FAKE_STREAM;\n"
"  *s = fake_new_stream(); return 0; }\n"
"int hipStreamDestroy(void *s) { FAKE_CURRENT; if (fake_stream(s) < 0) return 400; fake_streams--; return 0; }\n"
"int hipStreamSynchronize(void *s) { FAKE_CURRENT; return fake_sync(s); }\n"
"int hipModuleLoadData(void **m, const void *image) {\n"
"  FAKE_CURRENT; if (FAKE_JIT) return FAKE_JIT;\n"
"  *m = &fake_modules; fake_modules++; return 0; }\n"
"int hipModuleGetFunction(void **f, void *m, const char *name) {\n"
"  FAKE_CURRENT; return fake_function(f, name); }\n"
"int hipModuleUnload(void *m) { FAKE_CURRENT; fake_modules--; return 0; }\n"
"int hipMalloc(void **p, size_t n) {\n"
"  FAKE_CURRENT; if (FAKE_ALLOC) return FAKE_ALLOC;\n"
"  *p = malloc(n); fake_blocks++; return 0; }\n"
"int hipFree(void *p) { FAKE_CURRENT; free(p); fake_blocks--; return 0; }\n"
"int hipHostMalloc(void **p, size_t n, unsigned flags) {\n"
"  FAKE_CURRENT; if (FAKE_ALLOC) return FAKE_ALLOC;\n"
"  *p = malloc(n); fake_pinned++; return 0; }\n"
"int hipHostFree(void *p) { FAKE_CURRENT; free(p); fake_pinned--; return 0; }\n"
"int hipMemcpyHtoDAsync(void *d, void *s, size_t n, void *st) {\n"
"  FAKE_CURRENT; return fake_copy(st, d, s, n); }\n"
"int hipMemcpyDtoHAsync(void *d, void *s, size_t n, void *st) {\n"
"  FAKE_CURRENT; return fake_copy(st, d, s, n); }\n"
"int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy,\n"
"  unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh, void *st, void **p,\n"
"  void **e) {\n"
"  FAKE_CURRENT; if (FAKE_LAUNCH) return FAKE_LAUNCH;\n"
"  if (e != NULL) return 400;\n"
"  return fake_launch(f, p, gx * gy * gz * bx * by * bz, st); }\n"
"const char *hipGetErrorName(int e) {\n"
"  const FakeError *f = fake_error(fake_errors, e); return f ? f->name : \"hipErrorUnknown\"; }\n"
"const char *hipGetErrorString(int e) {\n"
"  const FakeError *f = fake_error(fake_errors, e); return f ? f->text : \"unknown error\"; }\n";

/* Whether name is defined in the special text */
static bool
IsSpecial(const char *special, const char *name)
{
	char		needle[128];
	const char *at = special;

	snprintf(needle, sizeof(needle), "%s(", name);
	while ((at = strstr(at, needle)) != NULL)
	{
		if (at == special || !(isalnum((unsigned char) at[-1]) || at[-1] == '_'))
			return true;
		at++;
	}
	return false;
}

/*
 * Build a fake driver library: the first k functions of the driver as
 * stubs returning 0 (k < 0: all of them, with the special ones' behaviour
 * and defines); its path in path
 */
static bool
BuildFake(const GpuDriver *driver, int k, const char *defines, const char *name, char *path,
		  size_t size)
{
	const char *special = driver->kind == GPU_CUDA ? fake_cuda_special : fake_hip_special;
	char		src[256];
	FILE	   *f;

	snprintf(src, sizeof(src), "%s/%s.c", tmpdir, name);
	snprintf(path, size, "%s/%s.so", tmpdir, name);
	if ((f = fopen(src, "w")) == NULL)
		return false;
	if (k < 0)
	{
		fputs(fake_common, f);
		fputs(special, f);
	}
	for (int i = 0; driver->symbols[i] != NULL && (k < 0 || i < k); i++)
		if (k >= 0 || !IsSpecial(special, driver->symbols[i]))
			fprintf(f, "int %s(void) { return 0; }\n", driver->symbols[i]);
	fclose(f);
	return Run("cc -shared -fPIC -w %s -o %s %s", defines, path, src) == 0;
}

/* The installed drivers are absent here: loading fails with "not found" */
static void
TestNotFound(GpuKind kind, const char *library)
{
	SilvanStatus status;
	GpuLibrary *lib = GpuDriverLoad(kind, NULL, &status);
	char		want[128];

	if (lib != NULL)
	{
		printf("  skip: %s is installed and has a device here; not-found path not tested\n",
			   library);
		GpuDriverUnload(lib);
		return;
	}
	if (strstr(status.message, "not found") == NULL)
	{
		printf("  skip: %s is installed here (%s: %s)\n", library, status.message, status.detail);
		return;
	}
	snprintf(want, sizeof(want), "%s not found", library);
	CHECK_MSG(strcmp(status.message, want) == 0, "message \"%s\"", status.message);
	CHECK_MSG(strncmp(status.detail, "dlopen failed: ", 15) == 0 &&
			  strstr(status.detail, library) != NULL, "detail \"%s\"", status.detail);
	CHECK(status.kind == SILVAN_ERROR_UNSUPPORTED);
	CHECK(GpuDriverFor(kind)->library != NULL && strcmp(GpuDriverFor(kind)->library, library) == 0);
}

/* No device anywhere: GpuDevices returns none, with each vendor's reason */
static void
TestDevicesNone(void)
{
	GpuDeviceInfo *devices = (GpuDeviceInfo *) 1;
	char		reasons[1024];
	int			n = GpuDevices(&devices, reasons, sizeof(reasons));

	if (n > 0)
	{
		for (int i = 0; i < n; i++)
			printf("  device %d: %s (%s, %s), %llu MiB\n", i, devices[i].name, devices[i].vendor,
				   devices[i].arch, (unsigned long long) (devices[i].memory >> 20));
		printf("  skip: this machine has GPU devices; the no-device reasons are not tested\n");
		free(devices);
		return;
	}
	CHECK(n == 0);
	CHECK(devices == NULL);
	CHECK_MSG(strstr(reasons, "CUDA: ") != NULL && strstr(reasons, "HIP: ") != NULL,
			  "reasons \"%s\"", reasons);
	if (access("/usr/lib/x86_64-linux-gnu/libcuda.so.1", F_OK) != 0)
		CHECK_MSG(strstr(reasons, "CUDA: libcuda.so.1 not found (dlopen failed: ") != NULL,
				  "reasons \"%s\"", reasons);
	printf("  devices: none (%s)\n", reasons);
}

/* A library with only the first k functions is refused naming function k */
static void
TestMissingSymbol(const GpuDriver *driver, int k, const char *expect)
{
	SilvanStatus status;
	char		name[64];
	char		path[512];
	char		want[640];
	GpuLibrary *lib;

	snprintf(name, sizeof(name), "%s_first_%d", driver->name, k);
	if (!BuildFake(driver, k, "", name, path, sizeof(path)))
	{
		CHECK_MSG(false, "could not build %s", path);
		return;
	}
	lib = GpuDriverLoad(driver->kind, path, &status);
	CHECK_MSG(lib == NULL, "%s: loaded with %d functions", driver->name, k);
	GpuDriverUnload(lib);
	if (expect != NULL)
		CHECK_MSG(strcmp(driver->symbols[k], expect) == 0, "function %d is %s, not %s", k,
				  driver->symbols[k], expect);
	snprintf(want, sizeof(want), "The library %s has no symbol %s.", path, driver->symbols[k]);
	CHECK_MSG(strcmp(status.message, "GPU driver lacks a function") == 0 &&
			  strcmp(status.detail, want) == 0, "%s k=%d: %s: %s", driver->name, k,
			  status.message, status.detail);
}

/* Load a complete fake built with defines; the status when it fails */
static GpuLibrary *
LoadFake(const GpuDriver *driver, const char *defines, const char *name, SilvanStatus *status)
{
	char		path[512];

	if (!BuildFake(driver, -1, defines, name, path, sizeof(path)))
	{
		CHECK_MSG(false, "could not build the fake %s", name);
		StatusFail(status, SILVAN_ERROR_INTERNAL, "no fake", "No fake.");
		return NULL;
	}
	return GpuDriverLoad(driver->kind, path, status);
}

/* Failure paths through a complete fake libcuda */
static void
TestCudaFakes(void)
{
	SilvanStatus status;
	GpuLibrary *lib;
	GpuDeviceInfo info;

	lib = LoadFake(&GpuDriverCuda, "-DFAKE_INIT=100 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0",
				   "cuda_init_fails", &status);
	CHECK(lib == NULL);
	CHECK_MSG(strcmp(status.message, "could not initialize the CUDA driver") == 0 &&
			  strcmp(status.detail, "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable "
					 "device is detected).") == 0, "%s: %s", status.message, status.detail);

	lib = LoadFake(&GpuDriverCuda, "-DFAKE_INIT=12345 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0",
				   "cuda_init_unknown", &status);
	CHECK(lib == NULL);
	CHECK_MSG(strcmp(status.detail, "cuInit failed: CUDA error 12345 (unrecognized error "
					 "code).") == 0, "%s", status.detail);

	lib = LoadFake(&GpuDriverCuda, "-DFAKE_INIT=0 -DFAKE_COUNT=0 -DFAKE_COUNT_RESULT=999",
				   "cuda_count_fails", &status);
	CHECK(lib == NULL);
	CHECK_MSG(strcmp(status.message, "could not count CUDA devices") == 0 &&
			  strstr(status.detail, "cuDeviceGetCount failed: CUDA_ERROR_UNKNOWN (unknown "
					 "error).") != NULL, "%s: %s", status.message, status.detail);

	lib = LoadFake(&GpuDriverCuda, "-DFAKE_INIT=0 -DFAKE_COUNT=0 -DFAKE_COUNT_RESULT=0",
				   "cuda_no_device", &status);
	CHECK(lib == NULL);
	CHECK_MSG(strcmp(status.message, "no CUDA device") == 0, "%s", status.message);

	lib = LoadFake(&GpuDriverCuda, "-DFAKE_INIT=0 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0",
				   "cuda_one_device", &status);
	CHECK_MSG(lib != NULL, "%s: %s", status.message, status.detail);
	if (lib == NULL)
		return;
	CHECK(lib->device_count == 1);
	CHECK(GpuDeviceInfoGet(lib, 0, &info, &status));
	CHECK(strcmp(info.name, "Fake H100") == 0 && strcmp(info.vendor, "NVIDIA") == 0);
	CHECK_MSG(strcmp(info.arch, "sm_90") == 0, "arch %s", info.arch);
	CHECK(info.memory == (uint64_t) 80 << 30 && info.kind == GPU_CUDA);
	CHECK(!GpuDeviceInfoGet(lib, 1, &info, &status) &&
		  strcmp(status.message, "no such GPU device") == 0);
	GpuDriverUnload(lib);
}

/* Failure paths through a complete fake libamdhip64 */
static void
TestHipFakes(void)
{
	SilvanStatus status;
	GpuLibrary *lib;
	GpuDeviceInfo info;

	lib = LoadFake(&GpuDriverHip, "-DFAKE_INIT=100 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0 "
				   "-DFAKE_ARCH='\"gfx90a\"'", "hip_init_fails", &status);
	CHECK(lib == NULL);
	CHECK_MSG(strcmp(status.message, "could not initialize the HIP runtime") == 0 &&
			  strcmp(status.detail, "hipInit failed: hipErrorNoDevice (no ROCm-capable device "
					 "is detected).") == 0, "%s: %s", status.message, status.detail);

	lib = LoadFake(&GpuDriverHip, "-DFAKE_INIT=0 -DFAKE_COUNT=0 -DFAKE_COUNT_RESULT=0 "
				   "-DFAKE_ARCH='\"gfx90a\"'", "hip_no_device", &status);
	CHECK(lib == NULL);
	CHECK_MSG(strcmp(status.message, "no HIP device") == 0, "%s", status.message);

	lib = LoadFake(&GpuDriverHip, "-DFAKE_INIT=0 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0 "
				   "-DFAKE_ARCH='\"gfx90a:sramecc+:xnack-\"'", "hip_one_device", &status);
	CHECK_MSG(lib != NULL, "%s: %s", status.message, status.detail);
	if (lib != NULL)
	{
		CHECK(GpuDeviceInfoGet(lib, 0, &info, &status));
		CHECK(strcmp(info.name, "Fake MI210") == 0 && strcmp(info.vendor, "AMD") == 0);
		CHECK_MSG(strcmp(info.arch, "gfx90a") == 0, "arch %s", info.arch);
		CHECK(info.memory == (uint64_t) 64 << 30 && info.kind == GPU_HIP);
		GpuDriverUnload(lib);
	}

	lib = LoadFake(&GpuDriverHip, "-DFAKE_INIT=0 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0 "
				   "-DFAKE_ARCH='\"\"'", "hip_bad_layout", &status);
	CHECK(lib != NULL);
	if (lib != NULL)
	{
		CHECK(!GpuDeviceInfoGet(lib, 0, &info, &status));
		CHECK_MSG(strstr(status.detail, "gave no gfx name in gcnArchName") != NULL, "%s",
				  status.detail);
		GpuDriverUnload(lib);
	}
}

/* The value of a counter a fake exports (live blocks, modules, streams, retains) */
static int
FakeCounter(GpuLibrary *lib, const char *name)
{
	int		   *counter = dlsym(lib->handle, name);

	return counter != NULL ? *counter : -1;
}

/* A copy back and a wait, done on a thread that did not open the device */
typedef struct CopyBack
{
	GpuDevice  *device;
	float	   *y;
	GpuPointer	dy;
	size_t		bytes;
	bool		ok;
	SilvanStatus status;
} CopyBack;

/* Copy y back and wait for the device's stream */
static void *
CopyBackThread(void *arg)
{
	CopyBack   *c = arg;

	c->ok = GpuToHost(c->device, 0, c->y, c->dy, c->bytes, &c->status) &&
		GpuWait(c->device, 0, &c->status);
	return NULL;
}

/* Copy bytes from dy to y and wait, on a second thread; false and its status on failure */
static bool
CopyBackOnThread(GpuDevice *device, float *y, GpuPointer dy, size_t bytes, SilvanStatus *status)
{
	CopyBack	c = {device, y, dy, bytes, false, {0}};
	pthread_t	thread;

	if (pthread_create(&thread, NULL, CopyBackThread, &c) != 0)
		return StatusFail(status, SILVAN_ERROR_INTERNAL, "no thread", "No thread.");
	pthread_join(thread, NULL);
	if (!c.ok)
		*status = c.status;
	return c.ok;
}

/*
 * Run the scale kernel on n values in blocks of 256 threads, y copied back
 * on a second thread, and check that y = 2x + 1; false and a status if a
 * call failed
 */
static bool
RunScale(GpuDevice *device, const GpuModule *module, int n, SilvanStatus *status)
{
	size_t		bytes = (size_t) n * sizeof(float);
	float	   *x = malloc(bytes);
	float	   *y = calloc(n, sizeof(float));
	GpuPointer	dx = 0;
	GpuPointer	dy = 0;
	void	   *params[] = {&dx, &dy, &n};
	uint32_t	grid[3] = {(uint32_t) (n + 255) / 256, 1, 1};
	uint32_t	block[3] = {256, 1, 1};
	int			wrong = 0;
	bool		ok;

	for (int i = 0; i < n; i++)
		x[i] = (float) i * 0.25f - 7.0f;
	ok = GpuAlloc(device, bytes, &dx, status) && GpuAlloc(device, bytes, &dy, status) &&
		GpuToDevice(device, 0, dx, x, bytes, status) &&
		GpuLaunch(module, 0, grid, block, 0, params, status) &&
		CopyBackOnThread(device, y, dy, bytes, status);
	for (int i = 0; ok && i < n; i++)
		wrong += y[i] != x[i] * 2.0f + 1.0f;
	CHECK_MSG(wrong == 0, "%d of %d values wrong", wrong, n);
	GpuFree(device, dx);
	GpuFree(device, dy);
	free(x);
	free(y);
	return ok;
}

/* What a vendor's fake reports when told to fail */
typedef struct FakeFailures
{
	const GpuDriver *driver;
	const char *one;			/* defines for a fake with one device */
	const char *jit_alloc;		/* defines: the image refused, allocation fails */
	const char *load;			/* the detail of the refused image */
	const char *alloc;			/* the detail of the failed allocation */
	const char *kernel;			/* the detail of a kernel not in the module */
	const char *launch;			/* the detail of the failed launch (FAKE_LAUNCH=701) */
	const char *wait;			/* the detail of the failed wait (FAKE_SYNC=700) */
	const char *stream;			/* the detail of the failed open (FAKE_STREAM=2) */
} FakeFailures;

static const FakeFailures cuda_failures = {
	&GpuDriverCuda,
	"-DFAKE_INIT=0 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0",
	"-DFAKE_JIT=218 -DFAKE_ALLOC=2",
	"cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed). JIT "
	"log: ptxas application ptx input, line 3; error   : Unknown directive '.bogus' / ptxas "
	"fatal   : Ptx assembly aborted due to errors",
	"cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory).",
	"cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (named symbol not found).",
	"cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested "
	"for launch).",
	"cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
	"encountered).",
	"cuStreamCreate failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory).",
};

static const FakeFailures hip_failures = {
	&GpuDriverHip,
	"-DFAKE_INIT=0 -DFAKE_COUNT=1 -DFAKE_COUNT_RESULT=0 -DFAKE_ARCH='\"gfx90a\"'",
	"-DFAKE_JIT=200 -DFAKE_ALLOC=2",
	"hipModuleLoadData failed: hipErrorInvalidImage (device kernel image is invalid).",
	"hipMalloc failed: hipErrorOutOfMemory (out of memory).",
	"hipModuleGetFunction failed: hipErrorNotFound (named symbol not found).",
	"hipModuleLaunchKernel failed: hipErrorLaunchOutOfResources (too many resources requested "
	"for launch).",
	"hipStreamSynchronize failed: hipErrorIllegalAddress (an illegal memory access was "
	"encountered).",
	"hipStreamCreate failed: hipErrorOutOfMemory (out of memory).",
};

/* The image given to fakes: a PTX text with its NUL (the HIP fake reads nothing) */
static const char fake_image[] = "//\n// fake PTX\n//\n.version 7.0\n";

/* Check a failure's message, detail and kind */
static void
CheckFailure(const SilvanStatus *status, const char *message, const char *detail,
			 SilvanErrorKind kind)
{
	CHECK_MSG(strcmp(status->message, message) == 0, "message \"%s\", not \"%s\"",
			  status->message, message);
	CHECK_MSG(strcmp(status->detail, detail) == 0, "detail \"%s\", not \"%s\"", status->detail,
			  detail);
	CHECK_MSG(status->kind == kind, "kind %d, not %d", (int) status->kind, (int) kind);
}

/*
 * Open device 0 of a fake built with e's one-device defines and more,
 * named <vendor>_what (a library stays mapped, so names must differ);
 * NULL if it fails
 */
static GpuDevice *
OpenFake(const FakeFailures *e, const char *more, const char *what, GpuLibrary **lib)
{
	SilvanStatus status;
	char		defines[512];
	char		name[64];
	GpuDevice  *device;

	snprintf(defines, sizeof(defines), "%s %s", e->one, more);
	snprintf(name, sizeof(name), "%s_%s", e->driver->name, what);
	*lib = LoadFake(e->driver, defines, name, &status);
	CHECK_MSG(*lib != NULL, "%s: %s: %s", name, status.message, status.detail);
	if (*lib == NULL)
		return NULL;
	device = GpuDeviceOpen(*lib, 0, &status);
	CHECK_MSG(device != NULL, "%s: %s: %s", name, status.message, status.detail);
	return device;
}

/* Calls given a device, an ordinal, a module, an address or a block that is not there */
static void
TestBadArguments(GpuLibrary *lib, GpuDevice *device)
{
	SilvanStatus status;
	GpuModule	none = {0};
	GpuPointer	ptr = 1;
	uint32_t	one[3] = {1, 1, 1};
	char		want[128];
	float		buf[1];

	snprintf(want, sizeof(want), "The %s device number 1 is not below the device count 1.",
			 lib->driver->name);
	CHECK(GpuDeviceOpen(lib, 1, &status) == NULL);
	CheckFailure(&status, "no such GPU device", want, SILVAN_ERROR_INVALID);
	CHECK(GpuDeviceOpen(lib, -1, &status) == NULL && status.kind == SILVAN_ERROR_INVALID);
	CHECK(GpuDeviceOpen(NULL, 0, &status) == NULL);
	CheckFailure(&status, "no GPU driver", "GpuDeviceOpen was given no loaded GPU driver.",
				 SILVAN_ERROR_INVALID);
	CHECK(!GpuAlloc(NULL, 4, &ptr, &status) && ptr == 0);
	CheckFailure(&status, "no open GPU device", "GpuAlloc was given no open GPU device.",
				 SILVAN_ERROR_INVALID);
	CHECK(!GpuToHost(NULL, 0, buf, 1, 4, &status) && !GpuWait(NULL, 0, &status) &&
		  !GpuToDevice(NULL, 0, 1, buf, 4, &status) && status.kind == SILVAN_ERROR_INVALID);
	CHECK(GpuAlloc(device, 0, &ptr, &status) && ptr == 0);
	CHECK(GpuToDevice(device, 0, 0, NULL, 0, &status) && GpuToHost(device, 0, NULL, 0, 0, &status));
	CHECK(!GpuToHost(device, 0, buf, 0, 4, &status));
	CheckFailure(&status, "could not copy from a GPU device",
				 "GpuToHost was given a null device address.", SILVAN_ERROR_INVALID);
	CHECK(!GpuModuleLoad(device, NULL, 0, "silvan_scale", &none, &status));
	CheckFailure(&status, "no GPU code to load", "GpuModuleLoad was given an empty image.",
				 SILVAN_ERROR_INVALID);
	CHECK(!GpuToDevice(device, GPU_STREAMS, 1, buf, 4, &status));
	CheckFailure(&status, "no such GPU stream",
				 "GpuToDevice was given stream 2; a device has streams 0 to 1.",
				 SILVAN_ERROR_INVALID);
	CHECK(!GpuWait(device, -1, &status) && strcmp(status.message, "no such GPU stream") == 0);
	CHECK(!GpuLaunch(&none, 0, one, one, 0, NULL, &status));
	CheckFailure(&status, "no GPU kernel loaded",
				 "GpuLaunch was given a module that is not loaded.", SILVAN_ERROR_INVALID);
	CHECK(FakeCounter(lib, "fake_blocks") == 0);
	GpuFree(device, 0);
	GpuFree(NULL, 1);
	GpuModuleUnload(&none);
	GpuModuleUnload(NULL);
	GpuDeviceClose(NULL);
}

/* Launches with an empty block (refused) and an empty grid (nothing runs) */
static void
TestEmptyLaunch(const GpuModule *module)
{
	SilvanStatus status;
	uint32_t	one[3] = {1, 1, 1};
	uint32_t	empty[3] = {1, 0, 1};

	CHECK(!GpuLaunch(module, 0, one, empty, 0, NULL, &status));
	CheckFailure(&status, "could not launch a GPU kernel",
				 "The block of 1 x 0 x 1 threads is empty.", SILVAN_ERROR_INVALID);
	CHECK(GpuLaunch(module, 0, empty, one, 0, NULL, &status));
}

/*
 * A full round trip through a vendor's fake: open, load, allocate, copy
 * in, launch, copy back and wait (on another thread), free, unload, close;
 * the bytes must come back, and the fake must hold nothing afterwards
 */
static void
TestFakeRoundTrip(const FakeFailures *e)
{
	SilvanStatus status;
	GpuLibrary *lib;
	GpuModule	module;
	GpuDevice  *device;

	if ((device = OpenFake(e, "", "round_trip", &lib)) == NULL)
	{
		GpuDriverUnload(lib);
		return;
	}
	CHECK(device->lib == lib && device->ordinal == 0 &&
		  FakeCounter(lib, "fake_streams") == GPU_STREAMS);
	CHECK_MSG(GpuModuleLoad(device, fake_image, sizeof(fake_image), "silvan_scale", &module,
							&status), "%s: %s", status.message, status.detail);
	CHECK(module.device == device && module.function != NULL);
	CHECK(FakeCounter(lib, "fake_modules") == 1);
	CHECK_MSG(RunScale(device, &module, 1000, &status), "%s: %s: %s", e->driver->name,
			  status.message, status.detail);
	CHECK(FakeCounter(lib, "fake_blocks") == 0);
	TestBadArguments(lib, device);
	TestEmptyLaunch(&module);
	GpuModuleUnload(&module);
	CHECK(module.device == NULL && module.module == NULL && module.function == NULL);
	CHECK(FakeCounter(lib, "fake_modules") == 0);
	GpuDeviceClose(device);
	CHECK(FakeCounter(lib, "fake_streams") == 0 && FakeCounter(lib, "fake_retained") == 0);
	GpuDriverUnload(lib);
}

/* A refused image (with the JIT's log for CUDA), a kernel not there, a failed allocation */
static void
TestFakeLoadFailures(const FakeFailures *e)
{
	SilvanStatus status;
	GpuLibrary *lib;
	GpuModule	module;
	GpuPointer	ptr = 1;
	GpuDevice  *device;
	char		message[128];

	if ((device = OpenFake(e, e->jit_alloc, "load_fails", &lib)) == NULL)
	{
		GpuDriverUnload(lib);
		return;
	}
	snprintf(message, sizeof(message), "could not load a %s module", e->driver->name);
	CHECK(!GpuModuleLoad(device, fake_image, sizeof(fake_image), "silvan_scale", &module,
						 &status));
	CheckFailure(&status, message, e->load, SILVAN_ERROR_INTERNAL);
	CHECK(module.device == NULL && FakeCounter(lib, "fake_modules") == 0);
	snprintf(message, sizeof(message), "could not allocate %s memory", e->driver->name);
	CHECK(!GpuAlloc(device, 64, &ptr, &status) && ptr == 0);
	CheckFailure(&status, message, e->alloc, SILVAN_ERROR_INTERNAL);
	GpuDeviceClose(device);
	GpuDriverUnload(lib);
}

/* A kernel not in the module, a failed launch and a failed wait */
static void
TestFakeRunFailures(const FakeFailures *e)
{
	SilvanStatus status;
	GpuLibrary *lib;
	GpuModule	module;
	GpuDevice  *device;
	uint32_t	one[3] = {1, 1, 1};
	char		message[128];

	if ((device = OpenFake(e, "-DFAKE_LAUNCH=701 -DFAKE_SYNC=700", "run_fails", &lib)) == NULL)
	{
		GpuDriverUnload(lib);
		return;
	}
	snprintf(message, sizeof(message), "%s module has no kernel \"nope\"", e->driver->name);
	CHECK(!GpuModuleLoad(device, fake_image, sizeof(fake_image), "nope", &module, &status));
	CheckFailure(&status, message, e->kernel, SILVAN_ERROR_INTERNAL);
	CHECK(FakeCounter(lib, "fake_modules") == 0);
	CHECK(GpuModuleLoad(device, fake_image, sizeof(fake_image), "silvan_scale", &module,
						&status));
	snprintf(message, sizeof(message), "could not launch a %s kernel", e->driver->name);
	CHECK(!GpuLaunch(&module, 1, one, one, 0, NULL, &status));
	CheckFailure(&status, message, e->launch, SILVAN_ERROR_INTERNAL);
	snprintf(message, sizeof(message), "could not run on a %s device", e->driver->name);
	CHECK(!GpuWait(device, 1, &status));
	CheckFailure(&status, message, e->wait, SILVAN_ERROR_INTERNAL);
	GpuModuleUnload(&module);
	GpuDeviceClose(device);
	GpuDriverUnload(lib);
}

/* A stream that cannot be made: open fails, and (CUDA) the primary context is released */
static void
TestFakeOpenFails(const FakeFailures *e)
{
	SilvanStatus status;
	GpuLibrary *lib;
	char		defines[512];
	char		name[64];
	char		message[128];

	snprintf(defines, sizeof(defines), "%s -DFAKE_STREAM=2", e->one);
	snprintf(name, sizeof(name), "%s_stream_fails", e->driver->name);
	lib = LoadFake(e->driver, defines, name, &status);
	CHECK_MSG(lib != NULL, "%s: %s", status.message, status.detail);
	if (lib == NULL)
		return;
	snprintf(message, sizeof(message), "could not open a %s device", e->driver->name);
	CHECK(GpuDeviceOpen(lib, 0, &status) == NULL);
	CheckFailure(&status, message, e->stream, SILVAN_ERROR_INTERNAL);
	CHECK(FakeCounter(lib, "fake_retained") == 0 && FakeCounter(lib, "fake_streams") == 0);
	GpuDriverUnload(lib);

	/* the second stream fails: the first is destroyed again */
	snprintf(defines, sizeof(defines), "%s -DFAKE_STREAM=2 -DFAKE_STREAM_AT=1", e->one);
	snprintf(name, sizeof(name), "%s_stream2_fails", e->driver->name);
	lib = LoadFake(e->driver, defines, name, &status);
	CHECK_MSG(lib != NULL, "%s: %s", status.message, status.detail);
	if (lib == NULL)
		return;
	CHECK(GpuDeviceOpen(lib, 0, &status) == NULL);
	CheckFailure(&status, message, e->stream, SILVAN_ERROR_INTERNAL);
	CHECK(FakeCounter(lib, "fake_retained") == 0 && FakeCounter(lib, "fake_streams") == 0);
	GpuDriverUnload(lib);
}

/* ---- a compiled forest through a fake with deferred streams (gpu_run.c) ---- */

/* What the fake's forest kernel runs: the same forest compiled for the host */
static const CompiledForest *hook_code;
static int	hook_calls;
static int	hook_short;				/* launches with fewer threads than rows */

/* The fake's forest kernel: add the trees for the rows its arguments name */
static void
ForestHook(void *arg, unsigned threads)
{
	SilvanKernelArgs *args = arg;

	hook_calls++;
	hook_short += threads < args->num_rows;
	CompiledForestAccumulate(hook_code, args->rows, args->num_rows, args->acc);
}

/* Rows around the forest's thresholds, and NaN */
static float *
PipelineRows(const Forest *forest, int64_t num_rows)
{
	int64_t		n = num_rows * forest->num_features;
	float	   *rows = malloc(sizeof(float) * (size_t) n);
	uint64_t	state = 88172645463325252ULL;

	for (int64_t i = 0; i < n; i++)
	{
		const ForestNode *node;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		node = &forest->nodes[state % (uint64_t) forest->num_nodes];
		rows[i] = state % 13 == 0 ? NAN :
			node->kind == FOREST_NODE_NUMERIC ? (float) node->threshold + (float) ((int) (state >> 40) % 3 - 1) * 1e-3f :
			(float) (state >> 40) * 1e-6f;
	}
	return rows;
}

/* The interpreter's margins for rows */
static float *
PipelineWant(const Forest *forest, const float *rows, int64_t num_rows)
{
	float	   *want = malloc(sizeof(float) * (size_t) num_rows * forest->num_groups);

	ForestMarginsInit(forest, want, num_rows);
	ForestInterpretAccumulate(forest, rows, num_rows, want);
	return want;
}

/* Submit rows [begin, begin + n) with fresh margins in acc; the slot */
static int
SubmitRange(GpuForest *gf, const Forest *forest, const float *rows, int64_t begin, int64_t n,
			float *acc, SilvanStatus *status)
{
	ForestMarginsInit(forest, acc, n);
	return GpuForestSubmit(gf, rows + begin * forest->num_features, n, acc, status);
}

/*
 * Two batches in flight, submitted and collected out of order; the
 * caller's rows and margins reused at once after submit; a third submit
 * refused; a cancelled batch frees its slot
 */
static void
CheckSubmitCollect(GpuForest *gf, const Forest *forest, const float *rows, const float *want)
{
	SilvanStatus status;
	int64_t		groups = forest->num_groups;
	float	   *acc_a = malloc(sizeof(float) * 1000 * groups);
	float	   *acc_b = malloc(sizeof(float) * 2000 * groups);
	float	   *scratch = malloc(sizeof(float) * 3000 * forest->num_features);
	int			a;
	int			b;

	memcpy(scratch, rows, sizeof(float) * 3000 * forest->num_features);
	a = SubmitRange(gf, forest, scratch, 0, 1000, acc_a, &status);
	b = SubmitRange(gf, forest, scratch, 1000, 2000, acc_b, &status);
	CHECK_MSG(a >= 0 && b >= 0 && a != b, "submit: %d %d", a, b);
	/* the device reads its own copies: the caller's rows may change now */
	memset(scratch, 0, sizeof(float) * 3000 * forest->num_features);
	CHECK(SubmitRange(gf, forest, rows, 0, 10, acc_a, &status) == -1);
	CHECK(strcmp(status.message, "no free GPU slot") == 0);
	CHECK_MSG(GpuForestCollect(gf, b, &status), "%s: %s", status.message, status.detail);
	CHECK(memcmp(acc_b, want + 1000 * groups, sizeof(float) * 2000 * groups) == 0);
	CHECK(GpuForestCollect(gf, a, &status));
	CHECK(memcmp(acc_a, want, sizeof(float) * 1000 * groups) == 0);
	CHECK(!GpuForestCollect(gf, a, &status) &&
		  strcmp(status.message, "no GPU batch to collect") == 0);
	/* cancelled: the slot is free again, and the margins are never written */
	a = SubmitRange(gf, forest, rows, 0, 1000, acc_a, &status);
	memset(acc_a, 0x7f, sizeof(float) * 1000 * groups);
	GpuForestCancel(gf, a);
	CHECK(acc_a[0] != want[0]);
	CHECK(SubmitRange(gf, forest, rows, 0, 1000, acc_a, &status) >= 0 &&
		  SubmitRange(gf, forest, rows, 1000, 1000, acc_b, &status) >= 0);
	GpuForestCancel(gf, 0);
	GpuForestCancel(gf, 1);
	free(acc_a);
	free(acc_b);
	free(scratch);
}

/*
 * The tuner's measurement on a device (TuneMeasureOn): the GPU default
 * schedule compiled for cuda, loaded on the fake, timed, and its margins
 * checked against the interpreter's
 */
static void
CheckTuneOnDevice(const Forest *forest, GpuDevice *device, const float *rows, int64_t n)
{
	CompileOptions cuda = {&TargetCuda, NULL};
	volatile sig_atomic_t stop = 0;
	SilvanStatus status;
	TuneSample	sample;
	TuneTiming	timing;
	Schedule	schedule;
	char	   *text;

	ScheduleGpuDefault(forest, 4096, &schedule);
	text = ScheduleToText(&schedule);
	CHECK(TuneSampleInit(forest, rows, n, 4096, &sample, &status));
	hook_calls = 0;
	CHECK(TuneMeasureOn(forest, NULL, &cuda, device, &sample, 4096, text, true, 0, 0.001,
						&stop, &timing));
	CHECK_MSG(timing.outcome == TUNE_TIMED && timing.us_per_row > 0 && timing.passes >= 3,
			  "outcome %d: %s", (int) timing.outcome, timing.why);
	CHECK(hook_calls >= 4);
	/* a schedule the device cannot take fails as a candidate, with the compiler's reason */
	CHECK(TuneMeasureOn(forest, NULL, &cuda, device, &sample, 4096,
						"split(batch, b0, b1, 100)\ngpuDimension(b0, block.x)", true, 0, 0.001,
						&stop, &timing));
	CHECK(timing.outcome == TUNE_FAILED && timing.why[0] != '\0');
	stop = 1;
	CHECK(!TuneMeasureOn(forest, NULL, &cuda, device, &sample, 4096, text, true, 0, 0.001,
						 &stop, &timing));
	TuneSampleFree(&sample);
	free(text);
}

/*
 * gpu_run.c through a fake whose streams run only when waited for: the
 * higgs model, compiled for cuda (the image and launch shape) and for the
 * host (what the fake's kernel runs), over more rows than two chunks of
 * GpuForestRun; every margin equals the interpreter's
 */
static void
TestFakeForestPipeline(const FakeFailures *e)
{
	SilvanStatus status;
	Forest	   *forest = LoadSharedModel("asprasad_treebeard/xgb_models--higgs_xgb_model_save.json");
	CompileOptions cuda = {&TargetCuda, NULL};
	CompiledForest *device_code = NULL;
	GpuLibrary *lib;
	GpuDevice  *device;
	GpuForest  *gf = NULL;
	int64_t		n = 2 * GPU_RUN_CHUNK_ROWS + 1234;
	float	   *rows;
	float	   *want;
	float	   *acc;
	void	  **hook;

	if (forest == NULL)
	{
		printf("  skip: no ../shared models; gpu_run pipeline not run\n");
		return;
	}
	if ((device = OpenFake(e, "-DFAKE_DEFER=1", "pipeline", &lib)) == NULL)
	{
		GpuDriverUnload(lib);
		ForestFree(forest);
		return;
	}
	hook = dlsym(lib->handle, "fake_forest_hook");
	*hook = (void *) ForestHook;
	hook_code = CompileForest(forest, NULL, NULL, &status);
	device_code = CompileForestFor(forest, NULL, NULL, &cuda, &status);
	CHECK_MSG(hook_code != NULL && device_code != NULL, "%s: %s", status.message, status.detail);
	if (device_code != NULL)
		gf = GpuForestLoad(device_code, device, &status);
	CHECK_MSG(gf != NULL, "%s: %s", status.message, status.detail);
	rows = PipelineRows(forest, n);
	want = PipelineWant(forest, rows, n);
	acc = malloc(sizeof(float) * (size_t) n * forest->num_groups);
	if (gf != NULL && hook_code != NULL)
	{
		ForestMarginsInit(forest, acc, n);
		hook_calls = hook_short = 0;
		CHECK_MSG(GpuForestRun(gf, rows, n, acc, &status), "%s: %s", status.message,
				  status.detail);
		CHECK_MSG(memcmp(acc, want, sizeof(float) * (size_t) n * forest->num_groups) == 0,
				  "%s: GpuForestRun's margins differ from the interpreter's", e->driver->name);
		CHECK_MSG(hook_calls == 3 && hook_short == 0, "%d launches, %d short", hook_calls,
				  hook_short);
		/* both streams held work at once: the copies of one chunk beside another's kernel */
		CHECK(FakeCounter(lib, "fake_peak_queued") >= 5);
		CheckSubmitCollect(gf, forest, rows, want);
		CHECK(GpuForestRun(gf, rows, 0, acc, &status));
		CheckTuneOnDevice(forest, device, rows, 5000);
	}
	GpuForestFree(gf);
	CHECK_MSG(FakeCounter(lib, "fake_blocks") == 0 && FakeCounter(lib, "fake_pinned") == 0,
			  "%d device and %d pinned blocks left", FakeCounter(lib, "fake_blocks"),
			  FakeCounter(lib, "fake_pinned"));
	CompiledForestFree(device_code);
	CompiledForestFree((CompiledForest *) hook_code);
	hook_code = NULL;
	GpuDeviceClose(device);
	GpuDriverUnload(lib);
	free(rows);
	free(want);
	free(acc);
	ForestFree(forest);
}

/* Running code through a vendor's fakes */
static void
TestFakeRunning(const FakeFailures *e)
{
	TestFakeRoundTrip(e);
	TestFakeLoadFailures(e);
	TestFakeRunFailures(e);
	TestFakeOpenFails(e);
	TestFakeForestPipeline(e);
}

/* A PTX text without its NUL is refused before the driver sees it */
static void
TestCudaUnterminated(void)
{
	SilvanStatus status;
	GpuLibrary *lib;
	GpuModule	module;
	GpuDevice  *device = OpenFake(&cuda_failures, "", "unterminated", &lib);

	if (device != NULL)
	{
		CHECK(!GpuModuleLoad(device, fake_image, strlen(fake_image), "silvan_scale", &module,
							 &status));
		CheckFailure(&status, "could not load a CUDA module",
					 "The PTX text of 31 bytes does not end with a NUL.", SILVAN_ERROR_INVALID);
		GpuDeviceClose(device);
	}
	GpuDriverUnload(lib);
}

/* gpu_cuda.c's declarations against cuda.h, and a broken copy against it */
static void
TestCudaHeader(void)
{
	const char *flags = "-fsyntax-only -std=gnu11 -Iinclude "
		"$(llvm-config-14 --cppflags 2>/dev/null || echo -I/usr/lib/llvm-14/include) "
		"-I/usr/local/cuda/include -DSILVAN_CHECK_CUDA_H";

	if (access("/usr/local/cuda/include/cuda.h", R_OK) != 0)
	{
		printf("  skip: /usr/local/cuda/include/cuda.h absent; declarations not checked\n");
		return;
	}
	if (access("src/runtime/gpu_cuda.c", R_OK) != 0)
	{
		printf("  skip: not run from the source tree; declarations not checked\n");
		return;
	}
	if (Run("echo '#include <llvm-c/Core.h>' | cc %s -x c - 2>/dev/null", flags) != 0)
	{
		/* a machine that runs the tests without building (a lent GPU machine) */
		printf("  skip: no C compiler with LLVM 14's headers; declarations not checked\n");
		return;
	}
	CHECK_MSG(Run("cc %s src/runtime/gpu_cuda.c 2>%s/cuda_h.err", flags, tmpdir) == 0,
			  "gpu_cuda.c disagrees with cuda.h (see %s/cuda_h.err)", tmpdir);
	CHECK(Run("sed 's/(CuDevicePtr dptr))/(void *dptr))/' src/runtime/gpu_cuda.c "
			  "> %s/gpu_cuda_bad.c", tmpdir) == 0);
	CHECK_MSG(Run("cc %s -Isrc/runtime %s/gpu_cuda_bad.c 2>%s/cuda_h_bad.err", flags, tmpdir,
				  tmpdir) != 0, "a wrong cuMemFree_v2 passed the cuda.h check");
	CHECK(Run("grep -q 'cuMemFree_v2 differs from cuda.h' %s/cuda_h_bad.err", tmpdir) == 0);
}

/* ---- emission ---- */

/* Declare (once) an intrinsic taking nothing and returning i32 */
static LLVMValueRef
SpecialRegister(LLVMModuleRef module, const char *name)
{
	LLVMValueRef fn = LLVMGetNamedFunction(module, name);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(module));

	if (fn == NULL)
		fn = LLVMAddFunction(module, name, LLVMFunctionType(i32, NULL, 0, 0));
	return fn;
}

/* Call a no-argument i32 intrinsic */
static LLVMValueRef
CallRegister(LLVMBuilderRef b, LLVMModuleRef module, const char *name)
{
	LLVMValueRef fn = SpecialRegister(module, name);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(module));

	return LLVMBuildCall2(b, LLVMFunctionType(i32, NULL, 0, 0), fn, NULL, 0, name + 5);
}

/*
 * The kernel silvan_scale(float *x, float *y, i32 n): y[i] = x[i] * 2 + 1
 * for i < n; pointers in address space as, the index from index()
 */
static LLVMValueRef
BuildScaleKernel(LLVMModuleRef module, unsigned as, LLVMValueRef (*index) (LLVMBuilderRef, LLVMModuleRef))
{
	LLVMContextRef ctx = LLVMGetModuleContext(module);
	LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
	LLVMTypeRef ptr = LLVMPointerType(f32, as);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
	LLVMTypeRef params[] = {ptr, ptr, i32};
	LLVMValueRef fn = LLVMAddFunction(module, "silvan_scale",
									  LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0));
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, fn, "body");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, fn, "done");
	LLVMValueRef i, in, px, v;

	LLVMPositionBuilderAtEnd(b, entry);
	i = index(b, module);
	in = LLVMBuildICmp(b, LLVMIntSLT, i, LLVMGetParam(fn, 2), "in");
	LLVMBuildCondBr(b, in, body, done);
	LLVMPositionBuilderAtEnd(b, body);
	px = LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 0), &i, 1, "px");
	v = LLVMBuildLoad2(b, f32, px, "x");
	v = LLVMBuildFMul(b, v, LLVMConstReal(f32, 2.0), "twice");
	v = LLVMBuildFAdd(b, v, LLVMConstReal(f32, 1.0), "y");
	LLVMBuildStore(b, v, LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 1), &i, 1, "py"));
	LLVMBuildBr(b, done);
	LLVMPositionBuilderAtEnd(b, done);
	LLVMBuildRetVoid(b);
	LLVMDisposeBuilder(b);
	return fn;
}

/* ctaid.x * ntid.x + tid.x */
static LLVMValueRef
NvptxIndex(LLVMBuilderRef b, LLVMModuleRef m)
{
	LLVMValueRef block = CallRegister(b, m, "llvm.nvvm.read.ptx.sreg.ctaid.x");
	LLVMValueRef size = CallRegister(b, m, "llvm.nvvm.read.ptx.sreg.ntid.x");
	LLVMValueRef thread = CallRegister(b, m, "llvm.nvvm.read.ptx.sreg.tid.x");

	return LLVMBuildAdd(b, LLVMBuildMul(b, block, size, "base"), thread, "i");
}

/* workgroup.id.x * 256 + workitem.id.x (the kernel's work groups are 256 wide) */
static LLVMValueRef
AmdgpuIndex(LLVMBuilderRef b, LLVMModuleRef m)
{
	LLVMValueRef group = CallRegister(b, m, "llvm.amdgcn.workgroup.id.x");
	LLVMValueRef item = CallRegister(b, m, "llvm.amdgcn.workitem.id.x");
	LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(m));

	return LLVMBuildAdd(b, LLVMBuildMul(b, group, LLVMConstInt(i32, 256, 0), "base"), item, "i");
}

/* The NVPTX module: the kernel, marked one in nvvm.annotations */
static LLVMModuleRef
BuildNvptxModule(LLVMContextRef ctx)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext("gpu_test_nvptx", ctx);
	LLVMValueRef fn;
	LLVMValueRef md[3];

	LLVMSetTarget(m, "nvptx64-nvidia-cuda");
	fn = BuildScaleKernel(m, 0, NvptxIndex);
	md[0] = fn;
	md[1] = LLVMMDStringInContext(ctx, "kernel", 6);
	md[2] = LLVMConstInt(LLVMInt32TypeInContext(ctx), 1, 0);
	LLVMAddNamedMetadataOperand(m, "nvvm.annotations", LLVMMDNodeInContext(ctx, md, 3));
	return m;
}

/* The AMDGPU module: the kernel in the amdgpu_kernel calling convention */
static LLVMModuleRef
BuildAmdgpuModule(LLVMContextRef ctx)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext("gpu_test_amdgpu", ctx);
	LLVMValueRef fn;

	LLVMSetTarget(m, "amdgcn-amd-amdhsa");
	fn = BuildScaleKernel(m, 1, AmdgpuIndex);
	LLVMSetFunctionCallConv(fn, LLVMAMDGPUKERNELCallConv);
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
							   LLVMCreateStringAttribute(ctx, "amdgpu-flat-work-group-size", 27,
														 "1,256", 5));
	return m;
}

/* The number after "Used " in ptxas -v's output; -1 if none */
static int
PtxasRegisters(const char *path)
{
	char	   *text = ReadFile(path, NULL);
	char	   *used = text ? strstr(text, "Used ") : NULL;
	int			n = -1;

	if (used == NULL || sscanf(used, "Used %d registers", &n) != 1)
		n = -1;
	free(text);
	return n;
}

/* ptxas for sm: silent without -v, registers reported with it */
static void
CheckPtxas(const char *ptx_path, const char *sm)
{
	char		err[600];
	char	   *text;
	int			regs;

	snprintf(err, sizeof(err), "%s/ptxas_%s.out", tmpdir, sm);
	CHECK_MSG(Run("/usr/local/cuda/bin/ptxas --gpu-name %s -o %s/k_%s.cubin %s >%s 2>&1", sm,
				  tmpdir, sm, ptx_path, err) == 0, "ptxas %s failed (see %s)", sm, err);
	text = ReadFile(err, NULL);
	CHECK_MSG(text != NULL && text[0] == '\0', "ptxas %s said: %s", sm, text ? text : "?");
	free(text);
	CHECK(Run("/usr/local/cuda/bin/ptxas -v --gpu-name %s -o %s/k_%s.cubin %s >%s 2>&1", sm,
			  tmpdir, sm, ptx_path, err) == 0);
	regs = PtxasRegisters(err);
	CHECK_MSG(regs > 0 && regs <= 255, "ptxas -v %s: registers %d", sm, regs);
	printf("  ptxas %s: %d registers\n", sm, regs);
}

/* PTX for sm_80 and what ptxas makes of it; refusals of an unknown sm and a wrong triple */
static void
TestPtx(LLVMContextRef ctx)
{
	LLVMModuleRef m = BuildNvptxModule(ctx);
	LLVMModuleRef amd = BuildAmdgpuModule(ctx);
	SilvanStatus status;
	char	   *ptx = GpuEmitPtx(m, "sm_80", &status);
	char		path[512];

	CHECK_MSG(ptx != NULL, "%s: %s", status.message, status.detail);
	if (ptx != NULL)
	{
		CHECK(strstr(ptx, ".target sm_80") != NULL);
		CHECK(strstr(ptx, ".version 7.0") != NULL);
		CHECK(strstr(ptx, ".entry silvan_scale") != NULL);
		CHECK(strstr(ptx, "%tid.x") != NULL && strstr(ptx, "%ctaid.x") != NULL);
		CHECK(WriteTemp("k.ptx", ptx, strlen(ptx), path, sizeof(path)));
		if (HaveTool("/usr/local/cuda/bin/ptxas"))
		{
			CheckPtxas(path, "sm_80");
			CheckPtxas(path, "sm_90");
		}
		else
			printf("  skip: /usr/local/cuda/bin/ptxas absent; PTX not assembled\n");
		free(ptx);
	}
	/* the caller's module is untouched: no data layout was set on it */
	CHECK(strcmp(LLVMGetDataLayoutStr(m), "") == 0);
	CHECK(GpuEmitPtx(m, "sm_90", &status) == NULL &&
		  strstr(status.detail, "no NVPTX processor \"sm_90\"") != NULL);
	CHECK(GpuEmitPtx(amd, "sm_80", &status) == NULL &&
		  strstr(status.detail, "target triple is \"amdgcn-amd-amdhsa\"") != NULL);
	LLVMSetDataLayout(m, "e-p:32:32");
	CHECK_MSG(GpuEmitPtx(m, "sm_80", &status) == NULL &&
			  strstr(status.detail, "data layout") != NULL, "%s", status.detail);
	LLVMDisposeModule(m);
	LLVMDisposeModule(amd);
}

/* A module whose function has a block without a terminator is refused */
static void
TestInvalidIr(LLVMContextRef ctx)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext("gpu_bad", ctx);
	LLVMValueRef fn;
	SilvanStatus status;

	LLVMSetTarget(m, "nvptx64-nvidia-cuda");
	fn = LLVMAddFunction(m, "bad", LLVMFunctionType(LLVMVoidTypeInContext(ctx), NULL, 0, 0));
	LLVMAppendBasicBlockInContext(ctx, fn, "entry");
	CHECK(GpuEmitPtx(m, "sm_80", &status) == NULL);
	CHECK_MSG(strstr(status.detail, "not valid LLVM IR: Basic Block in function 'bad' does not "
					 "have terminator!") != NULL && strchr(status.detail, '\n') == NULL, "%s",
			  status.detail);
	LLVMDisposeModule(m);
}

/* llvm-readelf --notes on a code object: the kernel and target are in its metadata */
static void
CheckNotes(const char *hsaco_path, const char *gfx)
{
	char		out[600];
	char		target[64];
	char	   *text;

	snprintf(out, sizeof(out), "%s/notes_%s.txt", tmpdir, gfx);
	CHECK(Run("llvm-readelf-14 --notes %s >%s 2>&1", hsaco_path, out) == 0);
	text = ReadFile(out, NULL);
	snprintf(target, sizeof(target), "amdgcn-amd-amdhsa--%s", gfx);
	CHECK_MSG(text != NULL && strstr(text, "amdhsa.kernels:") != NULL, "%s: no amdhsa.kernels",
			  gfx);
	CHECK_MSG(text != NULL && strstr(text, ".name:") != NULL &&
			  strstr(text, "silvan_scale") != NULL, "%s: kernel not named", gfx);
	CHECK_MSG(text != NULL && strstr(text, ".symbol:") != NULL &&
			  strstr(text, "silvan_scale.kd") != NULL, "%s: no kernel descriptor", gfx);
	CHECK_MSG(text != NULL && strstr(text, target) != NULL, "%s: target not %s", gfx, target);
	CHECK(text != NULL && strstr(text, ".vgpr_count:") != NULL);
	free(text);
}

/* Emit, link and inspect the AMDGPU kernel for gfx */
static void
TestHsaco(LLVMModuleRef m, const char *gfx)
{
	SilvanStatus status;
	void	   *object = NULL;
	void	   *hsaco = NULL;
	size_t		len = 0;
	size_t		hsaco_len = 0;
	char		name[64];
	char		path[512];

	CHECK_MSG(GpuEmitAmdgpuObject(m, gfx, &object, &len, &status), "%s: %s: %s", gfx,
			  status.message, status.detail);
	if (object == NULL)
		return;
	CHECK(len > 4 && memcmp(object, "\177ELF", 4) == 0);
	if (!HaveTool("/usr/lib/llvm-14/bin/ld.lld") && !HaveTool("/usr/bin/ld.lld-14"))
	{
		printf("  skip: ld.lld-14 absent (package lld-14); %s object not linked\n", gfx);
		free(object);
		return;
	}
	CHECK_MSG(GpuLinkHsaco(object, len, NULL, &hsaco, &hsaco_len, &status), "%s: %s: %s", gfx,
			  status.message, status.detail);
	free(object);
	if (hsaco == NULL)
		return;
	CHECK(hsaco_len > 4 && memcmp(hsaco, "\177ELF", 4) == 0);
	snprintf(name, sizeof(name), "k_%s.hsaco", gfx);
	CHECK(WriteTemp(name, hsaco, hsaco_len, path, sizeof(path)));
	free(hsaco);
	if (HaveTool("/usr/bin/llvm-readelf-14"))
		CheckNotes(path, gfx);
	else
		printf("  skip: llvm-readelf-14 absent; %s code object not inspected\n", gfx);
	printf("  %s: code object of %zu bytes\n", gfx, hsaco_len);
}

/* AMDGPU: gfx90a and gfx1030 linked and inspected; gfx1100 and linker failures refused */
static void
TestAmdgpu(LLVMContextRef ctx)
{
	LLVMModuleRef m = BuildAmdgpuModule(ctx);
	SilvanStatus status;
	void	   *object = (void *) 1;
	void	   *hsaco = (void *) 1;
	size_t		len = 1;

	TestHsaco(m, "gfx90a");
	TestHsaco(m, "gfx1030");
	CHECK(!GpuEmitAmdgpuObject(m, "gfx1100", &object, &len, &status));
	CHECK(object == NULL && len == 0);
	CHECK_MSG(strcmp(status.detail, "LLVM 14 has no AMDGPU processor \"gfx1100\".") == 0, "%s",
			  status.detail);
	CHECK(GpuAmdgpuKnown("gfx90a") && GpuAmdgpuKnown("gfx1030") && !GpuAmdgpuKnown("gfx1100"));
	CHECK(!GpuLinkHsaco("x", 1, "/nonexistent/ld.lld", &hsaco, &len, &status));
	CHECK(hsaco == NULL);
	CHECK_MSG(strstr(status.detail, "/nonexistent/ld.lld could not be started") != NULL, "%s",
			  status.detail);
	if (HaveTool("/usr/lib/llvm-14/bin/ld.lld"))
	{
		CHECK(!GpuLinkHsaco("not an object", 13, NULL, &hsaco, &len, &status));
		CHECK_MSG(strstr(status.detail, "failed (exit status") != NULL, "%s", status.detail);
	}
	LLVMDisposeModule(m);
}

/* Refusals from a real CUDA driver: a bad PTX (with ptxas's log), a missing kernel, a huge block */
static void
CheckCudaRefusals(GpuDevice *device, const GpuModule *module)
{
	static const char bad[] = ".version 7.0\n.target sm_80\n.address_size 64\n.bogus\n";
	SilvanStatus status;
	GpuModule	none;
	uint32_t	one[3] = {1, 1, 1};
	uint32_t	huge[3] = {4096, 1, 1};

	CHECK(!GpuModuleLoad(device, bad, sizeof(bad), "silvan_scale", &none, &status));
	CHECK_MSG(strstr(status.detail, "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX") ==
			  status.detail && strstr(status.detail, " JIT log: ptxas") != NULL, "%s",
			  status.detail);
	printf("  refused PTX: %s\n", status.detail);
	CHECK(!GpuLaunch(module, 0, one, huge, 0, NULL, &status));
	CHECK_MSG(strstr(status.detail, "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE") ==
			  status.detail, "%s", status.detail);
}

/*
 * Where a CUDA driver with a device is installed: the scale kernel's PTX,
 * compiled by the driver, run on a million values (copied back on another
 * thread), then the driver's refusals
 */
static void
TestCudaDevice(LLVMContextRef ctx)
{
	SilvanStatus status;
	GpuLibrary *lib = GpuDriverLoad(GPU_CUDA, NULL, &status);
	GpuDeviceInfo info;
	GpuDevice  *device = NULL;
	GpuModule	module = {0};
	LLVMModuleRef m = NULL;
	char	   *ptx = NULL;
	int			cc;

	if (lib == NULL)
	{
		printf("  skip: no CUDA device (%s); no kernel run\n", status.message);
		return;
	}
	CHECK(GpuDeviceInfoGet(lib, 0, &info, &status));
	cc = atoi(info.arch + 3);
	m = BuildNvptxModule(ctx);
	ptx = GpuEmitPtx(m, GpuPtxTarget(cc / 10, cc % 10), &status);
	CHECK_MSG(ptx != NULL, "%s: %s", status.message, status.detail);
	if (ptx != NULL && (device = GpuDeviceOpen(lib, 0, &status)) != NULL &&
		GpuModuleLoad(device, ptx, strlen(ptx) + 1, "silvan_scale", &module, &status) &&
		RunScale(device, &module, 1 << 20, &status))
	{
		printf("  %s (%s): scale kernel run on %d values\n", info.name, info.arch, 1 << 20);
		CheckCudaRefusals(device, &module);
	}
	else
		CHECK_MSG(false, "%s: %s", status.message, status.detail);
	GpuModuleUnload(&module);
	GpuDeviceClose(device);
	free(ptx);
	LLVMDisposeModule(m);
	GpuDriverUnload(lib);
}

/* The sm emitted for each compute capability */
static void
TestPtxTarget(void)
{
	CHECK(strcmp(GpuPtxTarget(9, 0), "sm_80") == 0);
	CHECK(strcmp(GpuPtxTarget(10, 0), "sm_80") == 0);
	CHECK(strcmp(GpuPtxTarget(12, 0), "sm_80") == 0);
	CHECK(strcmp(GpuPtxTarget(8, 9), "sm_86") == 0);
	CHECK(strcmp(GpuPtxTarget(8, 6), "sm_86") == 0);
	CHECK(strcmp(GpuPtxTarget(8, 0), "sm_80") == 0);
	CHECK(strcmp(GpuPtxTarget(7, 5), "sm_75") == 0);
	CHECK(strcmp(GpuPtxTarget(7, 0), "sm_70") == 0);
	CHECK(strcmp(GpuPtxTarget(6, 1), "sm_61") == 0);
	CHECK(GpuPtxTarget(2, 1) == NULL);
}

int
main(void)
{
	LLVMContextRef ctx;

	if (mkdtemp(tmpdir) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	have_cc = Run("cc --version >/dev/null 2>&1") == 0;

	TestPtxTarget();
	TestNotFound(GPU_CUDA, "libcuda.so.1");
	TestNotFound(GPU_HIP, "libamdhip64.so");
	TestDevicesNone();
	CHECK(GpuDriverFor(GPU_KIND_COUNT) == NULL);
	{
		SilvanStatus status;

		CHECK(GpuDriverLoad(GPU_KIND_COUNT, NULL, &status) == NULL);
		CHECK(strcmp(status.message, "unknown GPU kind") == 0);
		GpuDriverUnload(NULL);
	}
	if (have_cc)
	{
		TestMissingSymbol(&GpuDriverCuda, 0, "cuInit");
		TestMissingSymbol(&GpuDriverCuda, 3, "cuDeviceGetName");
		TestMissingSymbol(&GpuDriverCuda, 13, "cuMemAlloc_v2");
		TestMissingSymbol(&GpuDriverCuda, 23, "cuGetErrorString");
		TestMissingSymbol(&GpuDriverHip, 0, "hipInit");
		TestMissingSymbol(&GpuDriverHip, 4, "hipGetDevicePropertiesR0600");
		TestMissingSymbol(&GpuDriverHip, 5, "hipSetDevice");
		TestMissingSymbol(&GpuDriverHip, 20, "hipGetErrorString");
		TestCudaFakes();
		TestHipFakes();
		TestFakeRunning(&cuda_failures);
		TestFakeRunning(&hip_failures);
		TestCudaUnterminated();
		TestCudaHeader();
	}
	else
		printf("  skip: no C compiler (cc); fake driver libraries not built\n");

	ctx = LLVMContextCreate();
	TestPtx(ctx);
	TestInvalidIr(ctx);
	TestAmdgpu(ctx);
	TestCudaDevice(ctx);
	LLVMContextDispose(ctx);

	if (getenv("SILVAN_GPU_KEEP") == NULL)
		Run("rm -rf %s", tmpdir);
	else
		printf("  kept %s\n", tmpdir);
	UNIT_DONE();
}
