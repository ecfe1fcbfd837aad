/*
 * gpu_cuda.c
 *		NVIDIA's CUDA Driver API, opened with dlopen.
 *
 * libcuda.so.1 comes with the NVIDIA kernel driver, not with the CUDA
 * toolkit, and must match the running kernel module; linking against it
 * would make the extension unloadable on every machine without an NVIDIA
 * GPU.  So the library is opened at run time and each function below is
 * looked up by its exported name.  The names are the ones cuda.h maps its
 * API names to (cuMemAlloc is cuMemAlloc_v2 since CUDA 3.2,
 * cuDevicePrimaryCtxRelease is cuDevicePrimaryCtxRelease_v2 since 11.0):
 * dlsym sees the exported symbols, not the header's macros.
 *
 * The types are declared here, not taken from cuda.h, which the core may
 * not need to build.  The opaque handles use cuda.h's own struct tags, and
 * CUresult and the enums are unsigned int, the type GCC gives an enum with
 * no negative values, so the declarations are type-compatible with the
 * header's: compiling this file with -DSILVAN_CHECK_CUDA_H and cuda.h on
 * the include path asserts, function by function, that they are
 * (test_gpu.c does this when /usr/local/cuda/include/cuda.h exists).
 *
 * Loading initializes the driver (cuInit) and counts devices.  Every
 * driver error becomes a status carrying cuGetErrorName's and
 * cuGetErrorString's text.  Kernels are compiled by the driver from PTX
 * (cuModuleLoadDataEx), so no CUDA toolkit is needed where silvan runs;
 * when the JIT refuses a PTX text, the lines of its error log (ptxas's
 * "line 12; error : ...") follow the error in the status.
 *
 * Running code uses the device's primary context, the one the CUDA
 * runtime and other libraries in the process share, retained on open and
 * released on close, and GPU_STREAMS streams of our own on which copies
 * and launches are queued (two batches in flight overlap one's copies with
 * the other's kernel).  Staging buffers are pinned host memory
 * (cuMemAllocHost), from which copies run as DMA.  A context is current
 * per thread, and a backend may
 * call us from a thread other than the one that opened the device, so
 * every call that needs the context first makes it current.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/gpu.h"

typedef unsigned int CuResult;	/* enum cudaError_enum */
typedef int CuDevice;			/* CUdevice_v1 */
typedef unsigned long long CuDevicePtr;	/* CUdeviceptr_v2 on 64-bit hosts */
typedef unsigned int CuEnum;	/* CUdevice_attribute, CUjit_option */
typedef struct CUctx_st *CuContext;
typedef struct CUmod_st *CuModule;
typedef struct CUfunc_st *CuFunction;
typedef struct CUstream_st *CuStream;

#define CUDA_OK 0
#define CUDA_ATTR_CC_MAJOR 75	/* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CUDA_ATTR_CC_MINOR 76	/* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
#define CUDA_JIT_ERROR_LOG 5	/* CU_JIT_ERROR_LOG_BUFFER */
#define CUDA_JIT_ERROR_LOG_SIZE 6	/* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
#define CUDA_STREAM_NON_BLOCKING 1	/* CU_STREAM_NON_BLOCKING */
#define CUDA_JIT_LOG_LEN 4096	/* bytes of JIT error log we ask for */

/* The functions we use: exported name, return type, parameters */
#define CUDA_FUNCTIONS(X) \
	X(cuInit, CuResult, (unsigned int flags)) \
	X(cuDeviceGetCount, CuResult, (int *count)) \
	X(cuDeviceGet, CuResult, (CuDevice *device, int ordinal)) \
	X(cuDeviceGetName, CuResult, (char *name, int len, CuDevice dev)) \
	X(cuDeviceGetAttribute, CuResult, (int *pi, CuEnum attrib, CuDevice dev)) \
	X(cuDeviceTotalMem_v2, CuResult, (size_t *bytes, CuDevice dev)) \
	X(cuDevicePrimaryCtxRetain, CuResult, (CuContext *pctx, CuDevice dev)) \
	X(cuDevicePrimaryCtxRelease_v2, CuResult, (CuDevice dev)) \
	X(cuCtxSetCurrent, CuResult, (CuContext ctx)) \
	X(cuModuleLoadDataEx, CuResult, (CuModule *module, const void *image, \
		unsigned int num_options, CuEnum *options, void **option_values)) \
	X(cuModuleGetFunction, CuResult, (CuFunction *hfunc, CuModule hmod, const char *name)) \
	X(cuModuleUnload, CuResult, (CuModule hmod)) \
	X(cuLaunchKernel, CuResult, (CuFunction f, unsigned int grid_x, unsigned int grid_y, \
		unsigned int grid_z, unsigned int block_x, unsigned int block_y, \
		unsigned int block_z, unsigned int shared_bytes, CuStream stream, \
		void **params, void **extra)) \
	X(cuMemAlloc_v2, CuResult, (CuDevicePtr *dptr, size_t bytes)) \
	X(cuMemFree_v2, CuResult, (CuDevicePtr dptr)) \
	X(cuMemcpyHtoDAsync_v2, CuResult, (CuDevicePtr dst, const void *src, size_t bytes, \
		CuStream stream)) \
	X(cuMemcpyDtoHAsync_v2, CuResult, (void *dst, CuDevicePtr src, size_t bytes, \
		CuStream stream)) \
	X(cuMemAllocHost_v2, CuResult, (void **pp, size_t bytes)) \
	X(cuMemFreeHost, CuResult, (void *p)) \
	X(cuStreamCreate, CuResult, (CuStream *stream, unsigned int flags)) \
	X(cuStreamSynchronize, CuResult, (CuStream stream)) \
	X(cuStreamDestroy_v2, CuResult, (CuStream stream)) \
	X(cuGetErrorName, CuResult, (CuResult error, const char **text)) \
	X(cuGetErrorString, CuResult, (CuResult error, const char **text))

#ifdef SILVAN_CHECK_CUDA_H
#include <cuda.h>
#define CUDA_CHECK_TYPE(name, ret, args) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret (*) args), \
				   #name " differs from cuda.h");
CUDA_FUNCTIONS(CUDA_CHECK_TYPE)
_Static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == CUDA_ATTR_CC_MAJOR, "major");
_Static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == CUDA_ATTR_CC_MINOR, "minor");
_Static_assert(CU_JIT_ERROR_LOG_BUFFER == CUDA_JIT_ERROR_LOG, "error log");
_Static_assert(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == CUDA_JIT_ERROR_LOG_SIZE, "error log size");
_Static_assert(CU_STREAM_NON_BLOCKING == CUDA_STREAM_NON_BLOCKING, "non-blocking stream");
_Static_assert(CUDA_SUCCESS == CUDA_OK, "success");
_Static_assert(sizeof(CUdeviceptr) == sizeof(CuDevicePtr), "CUdeviceptr");
#endif

/* The driver's functions, resolved from the library */
typedef struct CudaApi
{
#define CUDA_FIELD(name, ret, args) ret (*name) args;
	CUDA_FUNCTIONS(CUDA_FIELD)
} CudaApi;

/* An opened device: its primary context (retained) and our streams */
typedef struct CudaDevice
{
	CuDevice	dev;
	CuContext	context;
	CuStream	streams[GPU_STREAMS];
} CudaDevice;

/* What load requires, in the order it looks them up */
static const char *const cuda_symbols[] = {
#define CUDA_NAME(name, ret, args) #name,
	CUDA_FUNCTIONS(CUDA_NAME)
	NULL
};

/* Fail a status with a driver error's name and string */
static bool
CudaFail(const CudaApi *api, SilvanStatus *status, const char *message, const char *call,
		 CuResult result)
{
	const char *name = NULL;
	const char *text = NULL;
	char		unknown[32];

	if (api->cuGetErrorName(result, &name) != CUDA_OK || name == NULL)
	{
		snprintf(unknown, sizeof(unknown), "CUDA error %u", result);
		name = unknown;
	}
	if (api->cuGetErrorString(result, &text) != CUDA_OK || text == NULL)
		text = "unrecognized error code";
	return StatusFail(status, SILVAN_ERROR_INTERNAL, message, "%s failed: %s (%s).",
					  call, name, text);
}

/* Look up every function of the driver; false naming the first missing one */
static bool
CudaResolve(CudaApi *api, void *handle, const char *library, SilvanStatus *status)
{
#define CUDA_RESOLVE(name, ret, args) \
	if (!GpuResolve(handle, library, #name, &api->name, status)) \
		return false;
	CUDA_FUNCTIONS(CUDA_RESOLVE)
	return true;
}

/* Resolve the driver's functions and initialize it; the API table or NULL */
static void *
CudaLoad(void *handle, const char *library, SilvanStatus *status)
{
	CudaApi    *api = calloc(1, sizeof(CudaApi));
	CuResult	result;

	if (api == NULL)
	{
		StatusNoMemory(status, "the CUDA driver's function table");
		return NULL;
	}
	if (!CudaResolve(api, handle, library, status))
	{
		free(api);
		return NULL;
	}
	if ((result = api->cuInit(0)) != CUDA_OK)
	{
		CudaFail(api, status, "could not initialize the CUDA driver", "cuInit", result);
		free(api);
		return NULL;
	}
	return api;
}

/* Release the API table */
static void
CudaUnload(void *api)
{
	free(api);
}

/* The number of CUDA devices */
static bool
CudaDeviceCount(void *arg, int *count, SilvanStatus *status)
{
	CudaApi    *api = arg;
	CuResult	result = api->cuDeviceGetCount(count);

	if (result != CUDA_OK)
		return CudaFail(api, status, "could not count CUDA devices", "cuDeviceGetCount",
						result);
	return true;
}

/* Name, compute capability and memory of one device */
static bool
CudaDeviceInfo(void *arg, int ordinal, GpuDeviceInfo *info, SilvanStatus *status)
{
	CudaApi    *api = arg;
	CuDevice	dev;
	int			major = 0;
	int			minor = 0;
	size_t		bytes = 0;
	CuResult	result;
	const char *call;

	memset(info, 0, sizeof(GpuDeviceInfo));
	if ((result = api->cuDeviceGet(&dev, ordinal)) != CUDA_OK)
		call = "cuDeviceGet";
	else if ((result = api->cuDeviceGetName(info->name, sizeof(info->name) - 1, dev)) != CUDA_OK)
		call = "cuDeviceGetName";
	else if ((result = api->cuDeviceGetAttribute(&major, CUDA_ATTR_CC_MAJOR, dev)) != CUDA_OK ||
			 (result = api->cuDeviceGetAttribute(&minor, CUDA_ATTR_CC_MINOR, dev)) != CUDA_OK)
		call = "cuDeviceGetAttribute";
	else if ((result = api->cuDeviceTotalMem_v2(&bytes, dev)) != CUDA_OK)
		call = "cuDeviceTotalMem_v2";
	else
	{
		info->kind = GPU_CUDA;
		info->ordinal = ordinal;
		snprintf(info->vendor, sizeof(info->vendor), "NVIDIA");
		snprintf(info->arch, sizeof(info->arch), "sm_%d%d", major, minor);
		info->memory = bytes;
		return true;
	}
	return CudaFail(api, status, "could not describe a CUDA device", call, result);
}

/* Make an opened device's primary context current on this thread */
static bool
CudaEnter(const CudaApi *api, CudaDevice *device, const char *message, SilvanStatus *status)
{
	CuResult	result = api->cuCtxSetCurrent(device->context);

	if (result != CUDA_OK)
		return CudaFail(api, status, message, "cuCtxSetCurrent", result);
	return true;
}

/* Destroy our streams and release the primary context; errors are ignored */
static void
CudaClose(void *arg, void *ctx)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;

	if (device == NULL)
		return;
	if (device->context != NULL)
	{
		if (api->cuCtxSetCurrent(device->context) == CUDA_OK)
			for (int s = 0; s < GPU_STREAMS; s++)
				if (device->streams[s] != NULL)
					api->cuStreamDestroy_v2(device->streams[s]);
		api->cuDevicePrimaryCtxRelease_v2(device->dev);
	}
	free(device);
}

/* Retain device ordinal's primary context, make it current and create our streams */
static bool
CudaOpenSteps(const CudaApi *api, CudaDevice *device, int ordinal, SilvanStatus *status)
{
	const char *message = "could not open a CUDA device";
	CuResult	result;

	if ((result = api->cuDeviceGet(&device->dev, ordinal)) != CUDA_OK)
		return CudaFail(api, status, message, "cuDeviceGet", result);
	if ((result = api->cuDevicePrimaryCtxRetain(&device->context, device->dev)) != CUDA_OK)
	{
		device->context = NULL;
		return CudaFail(api, status, message, "cuDevicePrimaryCtxRetain", result);
	}
	if (!CudaEnter(api, device, message, status))
		return false;
	for (int s = 0; s < GPU_STREAMS; s++)
		if ((result = api->cuStreamCreate(&device->streams[s], CUDA_STREAM_NON_BLOCKING)) != CUDA_OK)
		{
			device->streams[s] = NULL;
			return CudaFail(api, status, message, "cuStreamCreate", result);
		}
	return true;
}

/* Open device ordinal for running code; its CudaDevice or NULL */
static void *
CudaOpen(void *arg, int ordinal, SilvanStatus *status)
{
	CudaApi    *api = arg;
	CudaDevice *device = calloc(1, sizeof(CudaDevice));

	if (device == NULL)
	{
		StatusNoMemory(status, "a CUDA device handle");
		return NULL;
	}
	if (!CudaOpenSteps(api, device, ordinal, status))
	{
		CudaClose(api, device);
		return NULL;
	}
	return device;
}

/* Append the JIT's error log to a status's detail, its lines joined by " / " */
static void
CudaAppendLog(SilvanStatus *status, const char *log)
{
	size_t		size = sizeof(status->detail);
	size_t		used = strlen(status->detail);
	const char *separator = " JIT log: ";

	while (*log != '\0' && used + 1 < size)
	{
		int			len = (int) strcspn(log, "\r\n");

		if (len > 0)
		{
			snprintf(status->detail + used, size - used, "%s%.*s", separator, len, log);
			used = strlen(status->detail);
			separator = " / ";
		}
		log += len;
		log += strspn(log, "\r\n");
	}
}

/* Compile a PTX text (NUL-terminated) with the driver's JIT; the JIT's log on failure */
static bool
CudaLoadPtx(const CudaApi *api, const void *image, size_t len, CuModule *module,
			SilvanStatus *status)
{
	char		log[CUDA_JIT_LOG_LEN] = {0};
	CuEnum		options[] = {CUDA_JIT_ERROR_LOG, CUDA_JIT_ERROR_LOG_SIZE};
	void	   *values[] = {log, (void *) (uintptr_t) (sizeof(log) - 1)};
	CuResult	result;

	if (len == 0 || ((const char *) image)[len - 1] != '\0')
		return StatusFail(status, SILVAN_ERROR_INVALID, "could not load a CUDA module",
						  "The PTX text of %zu bytes does not end with a NUL.", len);
	result = api->cuModuleLoadDataEx(module, image, 2, options, values);
	if (result == CUDA_OK)
		return true;
	*module = NULL;
	log[sizeof(log) - 1] = '\0';
	CudaFail(api, status, "could not load a CUDA module", "cuModuleLoadDataEx", result);
	CudaAppendLog(status, log);
	return false;
}

/* Load a PTX text on the device and find kernel in it */
static bool
CudaLoadModule(void *arg, void *ctx, const void *image, size_t len, const char *kernel,
			   void **module, void **function, SilvanStatus *status)
{
	CudaApi    *api = arg;
	CuModule	mod;
	CuFunction	fn;
	CuResult	result;
	char		message[SILVAN_MESSAGE_LEN];

	if (!CudaEnter(api, ctx, "could not load a CUDA module", status) ||
		!CudaLoadPtx(api, image, len, &mod, status))
		return false;
	if ((result = api->cuModuleGetFunction(&fn, mod, kernel)) != CUDA_OK)
	{
		snprintf(message, sizeof(message), "CUDA module has no kernel \"%s\"", kernel);
		CudaFail(api, status, message, "cuModuleGetFunction", result);
		api->cuModuleUnload(mod);
		return false;
	}
	*module = mod;
	*function = fn;
	return true;
}

/* Unload a module; errors are ignored */
static void
CudaUnloadModule(void *arg, void *ctx, void *module)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;

	if (api->cuCtxSetCurrent(device->context) == CUDA_OK)
		api->cuModuleUnload(module);
}

/* Allocate device memory */
static bool
CudaAlloc(void *arg, void *ctx, size_t bytes, GpuPointer *ptr, SilvanStatus *status)
{
	CudaApi    *api = arg;
	CuDevicePtr dptr = 0;
	CuResult	result;

	if (!CudaEnter(api, ctx, "could not allocate CUDA memory", status))
		return false;
	if ((result = api->cuMemAlloc_v2(&dptr, bytes)) != CUDA_OK)
		return CudaFail(api, status, "could not allocate CUDA memory", "cuMemAlloc_v2",
						result);
	*ptr = dptr;
	return true;
}

/* Free device memory; errors are ignored */
static void
CudaFree(void *arg, void *ctx, GpuPointer ptr)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;

	if (api->cuCtxSetCurrent(device->context) == CUDA_OK)
		api->cuMemFree_v2(ptr);
}

/* Allocate pinned host memory */
static bool
CudaHostAlloc(void *arg, void *ctx, size_t bytes, void **ptr, SilvanStatus *status)
{
	CudaApi    *api = arg;
	CuResult	result;

	if (!CudaEnter(api, ctx, "could not allocate pinned host memory", status))
		return false;
	if ((result = api->cuMemAllocHost_v2(ptr, bytes)) != CUDA_OK)
	{
		*ptr = NULL;
		return CudaFail(api, status, "could not allocate pinned host memory",
						"cuMemAllocHost_v2", result);
	}
	return true;
}

/* Free pinned host memory; errors are ignored */
static void
CudaHostFree(void *arg, void *ctx, void *ptr)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;

	if (api->cuCtxSetCurrent(device->context) == CUDA_OK)
		api->cuMemFreeHost(ptr);
}

/* Queue a copy from host to device memory on one of our streams */
static bool
CudaToDevice(void *arg, void *ctx, int stream, GpuPointer dst, const void *src, size_t bytes,
			 SilvanStatus *status)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;
	CuResult	result;

	if (!CudaEnter(api, device, "could not copy to a CUDA device", status))
		return false;
	if ((result = api->cuMemcpyHtoDAsync_v2(dst, src, bytes, device->streams[stream])) != CUDA_OK)
		return CudaFail(api, status, "could not copy to a CUDA device",
						"cuMemcpyHtoDAsync_v2", result);
	return true;
}

/* Queue a copy from device to host memory on one of our streams */
static bool
CudaToHost(void *arg, void *ctx, int stream, void *dst, GpuPointer src, size_t bytes,
		   SilvanStatus *status)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;
	CuResult	result;

	if (!CudaEnter(api, device, "could not copy from a CUDA device", status))
		return false;
	if ((result = api->cuMemcpyDtoHAsync_v2(dst, src, bytes, device->streams[stream])) != CUDA_OK)
		return CudaFail(api, status, "could not copy from a CUDA device",
						"cuMemcpyDtoHAsync_v2", result);
	return true;
}

/* Queue a kernel on one of our streams */
static bool
CudaLaunch(void *arg, void *ctx, int stream, void *function, const uint32_t grid[3],
		   const uint32_t block[3], uint32_t shared_bytes, void **params,
		   SilvanStatus *status)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;
	CuResult	result;

	if (!CudaEnter(api, device, "could not launch a CUDA kernel", status))
		return false;
	result = api->cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1],
								 block[2], shared_bytes, device->streams[stream], params, NULL);
	if (result != CUDA_OK)
		return CudaFail(api, status, "could not launch a CUDA kernel", "cuLaunchKernel",
						result);
	return true;
}

/* Wait for one of our streams to drain; the first error of what ran */
static bool
CudaWait(void *arg, void *ctx, int stream, SilvanStatus *status)
{
	CudaApi    *api = arg;
	CudaDevice *device = ctx;
	CuResult	result;

	if (!CudaEnter(api, device, "could not run on a CUDA device", status))
		return false;
	if ((result = api->cuStreamSynchronize(device->streams[stream])) != CUDA_OK)
		return CudaFail(api, status, "could not run on a CUDA device", "cuStreamSynchronize",
						result);
	return true;
}

const GpuDriver GpuDriverCuda = {
	.kind = GPU_CUDA,
	.name = "CUDA",
	.vendor = "NVIDIA",
	.library = "libcuda.so.1",
	.symbols = cuda_symbols,
	.load = CudaLoad,
	.unload = CudaUnload,
	.device_count = CudaDeviceCount,
	.device_info = CudaDeviceInfo,
	.open = CudaOpen,
	.close = CudaClose,
	.load_module = CudaLoadModule,
	.unload_module = CudaUnloadModule,
	.alloc = CudaAlloc,
	.free = CudaFree,
	.host_alloc = CudaHostAlloc,
	.host_free = CudaHostFree,
	.to_device = CudaToDevice,
	.to_host = CudaToHost,
	.launch = CudaLaunch,
	.wait = CudaWait,
};
