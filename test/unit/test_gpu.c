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
#include <ctype.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "silvan/gpu.h"
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

/* The CUDA fake's functions with behaviour; FAKE_* come from -D */
static const char *fake_cuda_special =
"#include <stddef.h>\n#include <string.h>\n"
"int cuInit(unsigned f) { return FAKE_INIT; }\n"
"int cuDeviceGetCount(int *n) { *n = FAKE_COUNT; return FAKE_COUNT_RESULT; }\n"
"int cuDeviceGet(int *d, int o) { *d = o; return 0; }\n"
"int cuDeviceGetName(char *s, int len, int d) { strncpy(s, \"Fake H100\", len); return 0; }\n"
"int cuDeviceGetAttribute(int *v, unsigned a, int d) { *v = a == 75 ? 9 : a == 76 ? 0 : -1; return 0; }\n"
"int cuDeviceTotalMem_v2(size_t *b, int d) { *b = (size_t) 80 << 30; return 0; }\n"
"int cuGetErrorName(unsigned e, const char **s) {\n"
"  *s = e == 100 ? \"CUDA_ERROR_NO_DEVICE\" : e == 999 ? \"CUDA_ERROR_UNKNOWN\" : NULL;\n"
"  return *s ? 0 : 1; }\n"
"int cuGetErrorString(unsigned e, const char **s) {\n"
"  *s = e == 100 ? \"no CUDA-capable device is detected\" : e == 999 ? \"unknown error\" : NULL;\n"
"  return *s ? 0 : 1; }\n";

/* The HIP fake's functions with behaviour; FAKE_* come from -D */
static const char *fake_hip_special =
"#include <stddef.h>\n#include <string.h>\n"
"int hipInit(unsigned f) { return FAKE_INIT; }\n"
"int hipGetDeviceCount(int *n) { *n = FAKE_COUNT; return FAKE_COUNT_RESULT; }\n"
"int hipDeviceGetName(char *s, int len, int d) { strncpy(s, \"Fake MI210\", len); return 0; }\n"
"int hipDeviceTotalMem(size_t *b, int d) { *b = (size_t) 64 << 30; return 0; }\n"
"int hipGetDevicePropertiesR0600(char *p, int d) {\n"
"  strcpy(p, \"AMD Instinct MI210\"); strcpy(p + 1160, FAKE_ARCH); return 0; }\n"
"const char *hipGetErrorName(int e) { return e == 100 ? \"hipErrorNoDevice\" : \"hipErrorUnknown\"; }\n"
"const char *hipGetErrorString(int e) { return e == 100 ? \"no ROCm-capable device is detected\" : \"unknown error\"; }\n";

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
		fputs(special, f);
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
			printf("  device %d: %s %s %s, %llu MiB\n", i, devices[i].vendor, devices[i].name,
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
		TestMissingSymbol(&GpuDriverHip, 19, "hipGetErrorString");
		TestCudaFakes();
		TestHipFakes();
		TestCudaHeader();
	}
	else
		printf("  skip: no C compiler (cc); fake driver libraries not built\n");

	ctx = LLVMContextCreate();
	TestPtx(ctx);
	TestInvalidIr(ctx);
	TestAmdgpu(ctx);
	LLVMContextDispose(ctx);

	if (getenv("SILVAN_GPU_KEEP") == NULL)
		Run("rm -rf %s", tmpdir);
	else
		printf("  kept %s\n", tmpdir);
	UNIT_DONE();
}
