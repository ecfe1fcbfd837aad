/*
 * gpu_hip.c
 *		AMD's HIP runtime, opened with dlopen.
 *
 * libamdhip64.so is ROCm's HIP runtime; like libcuda it is opened at run
 * time and its functions looked up by name, so nothing of ROCm is needed
 * to build or load silvan.  HIP's module API mirrors the CUDA Driver API
 * (hipModuleLoadData takes an HSA code object as gpu_emit.c links it).
 *
 * The types are declared here: hipError_t is an enum (int), handles are
 * pointers to HIP's own struct tags.  The device's architecture name
 * (gcnArchName, "gfx90a:sramecc+:xnack-") exists only in hipDeviceProp_t,
 * a 1472-byte struct whose layout changed in ROCm 6.0; we call the ROCm 6
 * entry point hipGetDevicePropertiesR0600 with a larger zeroed buffer and
 * read the name at its offset in that layout (1160), refusing anything
 * that does not start with "gfx" rather than trusting a layout we do not
 * know.  The name and memory come from hipDeviceGetName and
 * hipDeviceTotalMem, which are stable.  Every error carries
 * hipGetErrorName's and hipGetErrorString's text.
 *
 * Running code: HIP has no context to retain; the current device is per
 * thread, so open and every later call that touches the device first
 * select it with hipSetDevice (a backend may call us from a thread other
 * than the one that opened it).  Copies and launches are queued on
 * GPU_STREAMS streams of our own; staging buffers are pinned
 * (hipHostMalloc).  HIP's device pointers are void *; GpuPointer holds
 * them as integers.  A code object is already compiled, so a refused one
 * has no JIT log: the status carries the runtime's error alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/gpu.h"

typedef int HipError;			/* enum hipError_t */
typedef struct ihipModule_t *HipModule;
typedef struct ihipModuleSymbol_t *HipFunction;
typedef struct ihipStream_t *HipStream;

#define HIP_OK 0
#define HIP_PROPS_SIZE 4096		/* more than sizeof(hipDeviceProp_tR0600), 1472 */
#define HIP_PROPS_ARCH_OFFSET 1160	/* offsetof(hipDeviceProp_tR0600, gcnArchName) */
#define HIP_PROPS_ARCH_LEN 256

/* The functions we use: exported name, return type, parameters */
#define HIP_FUNCTIONS(X) \
	X(hipInit, HipError, (unsigned int flags)) \
	X(hipGetDeviceCount, HipError, (int *count)) \
	X(hipDeviceGetName, HipError, (char *name, int len, int device)) \
	X(hipDeviceTotalMem, HipError, (size_t *bytes, int device)) \
	X(hipGetDevicePropertiesR0600, HipError, (void *props, int device)) \
	X(hipSetDevice, HipError, (int device)) \
	X(hipModuleLoadData, HipError, (HipModule *module, const void *image)) \
	X(hipModuleGetFunction, HipError, (HipFunction *function, HipModule module, \
		const char *name)) \
	X(hipModuleUnload, HipError, (HipModule module)) \
	X(hipModuleLaunchKernel, HipError, (HipFunction f, unsigned int grid_x, \
		unsigned int grid_y, unsigned int grid_z, unsigned int block_x, \
		unsigned int block_y, unsigned int block_z, unsigned int shared_bytes, \
		HipStream stream, void **params, void **extra)) \
	X(hipMalloc, HipError, (void **ptr, size_t bytes)) \
	X(hipFree, HipError, (void *ptr)) \
	X(hipMemcpyHtoDAsync, HipError, (void *dst, void *src, size_t bytes, HipStream stream)) \
	X(hipMemcpyDtoHAsync, HipError, (void *dst, void *src, size_t bytes, HipStream stream)) \
	X(hipHostMalloc, HipError, (void **ptr, size_t bytes, unsigned int flags)) \
	X(hipHostFree, HipError, (void *ptr)) \
	X(hipStreamCreate, HipError, (HipStream *stream)) \
	X(hipStreamSynchronize, HipError, (HipStream stream)) \
	X(hipStreamDestroy, HipError, (HipStream stream)) \
	X(hipGetErrorName, const char *, (HipError error)) \
	X(hipGetErrorString, const char *, (HipError error))

/* The runtime's functions, resolved from the library */
typedef struct HipApi
{
#define HIP_FIELD(name, ret, args) ret (*name) args;
	HIP_FUNCTIONS(HIP_FIELD)
} HipApi;

/* An opened device: its number and our streams */
typedef struct HipDevice
{
	int			ordinal;
	HipStream	streams[GPU_STREAMS];
} HipDevice;

/* What load requires, in the order it looks them up */
static const char *const hip_symbols[] = {
#define HIP_NAME(name, ret, args) #name,
	HIP_FUNCTIONS(HIP_NAME)
	NULL
};

/* Fail a status with a HIP error's name and string */
static bool
HipFail(const HipApi *api, SilvanStatus *status, const char *message, const char *call,
		HipError result)
{
	const char *name = api->hipGetErrorName(result);
	const char *text = api->hipGetErrorString(result);

	return StatusFail(status, SILVAN_ERROR_INTERNAL, message, "%s failed: %s (%s).", call,
					  name ? name : "unknown HIP error",
					  text ? text : "unrecognized error code");
}

/* Look up every function of the runtime; false naming the first missing one */
static bool
HipResolve(HipApi *api, void *handle, const char *library, SilvanStatus *status)
{
#define HIP_RESOLVE(name, ret, args) \
	if (!GpuResolve(handle, library, #name, &api->name, status)) \
		return false;
	HIP_FUNCTIONS(HIP_RESOLVE)
	return true;
}

/* Resolve the runtime's functions and initialize it; the API table or NULL */
static void *
HipLoad(void *handle, const char *library, SilvanStatus *status)
{
	HipApi	   *api = calloc(1, sizeof(HipApi));
	HipError	result;

	if (api == NULL)
	{
		StatusNoMemory(status, "the HIP runtime's function table");
		return NULL;
	}
	if (!HipResolve(api, handle, library, status))
	{
		free(api);
		return NULL;
	}
	if ((result = api->hipInit(0)) != HIP_OK)
	{
		HipFail(api, status, "could not initialize the HIP runtime", "hipInit", result);
		free(api);
		return NULL;
	}
	return api;
}

/* Release the API table */
static void
HipUnload(void *api)
{
	free(api);
}

/* The number of HIP devices */
static bool
HipDeviceCount(void *arg, int *count, SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipError	result = api->hipGetDeviceCount(count);

	if (result != HIP_OK)
		return HipFail(api, status, "could not count HIP devices", "hipGetDeviceCount", result);
	return true;
}

/* The gfx name from ROCm 6's device properties, without its feature suffix */
static bool
HipDeviceArch(HipApi *api, int ordinal, GpuDeviceInfo *info, SilvanStatus *status)
{
	char	   *props = calloc(1, HIP_PROPS_SIZE);
	char	   *arch;
	HipError	result;

	if (props == NULL)
		return StatusNoMemory(status, "HIP device properties");
	if ((result = api->hipGetDevicePropertiesR0600(props, ordinal)) != HIP_OK)
	{
		free(props);
		return HipFail(api, status, "could not describe a HIP device",
					   "hipGetDevicePropertiesR0600", result);
	}
	arch = props + HIP_PROPS_ARCH_OFFSET;
	arch[HIP_PROPS_ARCH_LEN - 1] = '\0';
	if (strncmp(arch, "gfx", 3) != 0)
	{
		free(props);
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not describe a HIP device",
						  "hipGetDevicePropertiesR0600 gave no gfx name in gcnArchName "
						  "for device %d.", ordinal);
	}
	arch[strcspn(arch, ":")] = '\0';
	snprintf(info->arch, sizeof(info->arch), "%s", arch);
	free(props);
	return true;
}

/* Name, architecture and memory of one device */
static bool
HipDeviceInfo(void *arg, int ordinal, GpuDeviceInfo *info, SilvanStatus *status)
{
	HipApi	   *api = arg;
	size_t		bytes = 0;
	HipError	result;

	memset(info, 0, sizeof(GpuDeviceInfo));
	if ((result = api->hipDeviceGetName(info->name, sizeof(info->name) - 1, ordinal)) != HIP_OK)
		return HipFail(api, status, "could not describe a HIP device", "hipDeviceGetName",
					   result);
	if ((result = api->hipDeviceTotalMem(&bytes, ordinal)) != HIP_OK)
		return HipFail(api, status, "could not describe a HIP device", "hipDeviceTotalMem",
					   result);
	if (!HipDeviceArch(api, ordinal, info, status))
		return false;
	info->kind = GPU_HIP;
	info->ordinal = ordinal;
	snprintf(info->vendor, sizeof(info->vendor), "AMD");
	info->memory = bytes;
	return true;
}

/* Make an opened device the calling thread's current one */
static bool
HipEnter(const HipApi *api, HipDevice *device, const char *message, SilvanStatus *status)
{
	HipError	result = api->hipSetDevice(device->ordinal);

	if (result != HIP_OK)
		return HipFail(api, status, message, "hipSetDevice", result);
	return true;
}

/* Destroy our streams; errors are ignored */
static void
HipClose(void *arg, void *ctx)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;

	if (device == NULL)
		return;
	if (api->hipSetDevice(device->ordinal) == HIP_OK)
		for (int s = 0; s < GPU_STREAMS; s++)
			if (device->streams[s] != NULL)
				api->hipStreamDestroy(device->streams[s]);
	free(device);
}

/* Open device ordinal for running code: make it current and create our streams */
static void *
HipOpen(void *arg, int ordinal, SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipDevice  *device = calloc(1, sizeof(HipDevice));
	HipError	result;

	if (device == NULL)
	{
		StatusNoMemory(status, "a HIP device handle");
		return NULL;
	}
	device->ordinal = ordinal;
	if (!HipEnter(api, device, "could not open a HIP device", status))
	{
		free(device);
		return NULL;
	}
	for (int s = 0; s < GPU_STREAMS; s++)
		if ((result = api->hipStreamCreate(&device->streams[s])) != HIP_OK)
		{
			device->streams[s] = NULL;
			HipFail(api, status, "could not open a HIP device", "hipStreamCreate", result);
			HipClose(api, device);
			return NULL;
		}
	return device;
}

/* Load a code object on the device and find kernel in it */
static bool
HipLoadModule(void *arg, void *ctx, const void *image, size_t len, const char *kernel,
			  void **module, void **function, SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipModule	mod;
	HipFunction fn;
	HipError	result;
	char		message[SILVAN_MESSAGE_LEN];

	(void) len;					/* a code object's ELF headers give its size */
	if (!HipEnter(api, ctx, "could not load a HIP module", status))
		return false;
	if ((result = api->hipModuleLoadData(&mod, image)) != HIP_OK)
		return HipFail(api, status, "could not load a HIP module", "hipModuleLoadData",
					   result);
	if ((result = api->hipModuleGetFunction(&fn, mod, kernel)) != HIP_OK)
	{
		snprintf(message, sizeof(message), "HIP module has no kernel \"%s\"", kernel);
		HipFail(api, status, message, "hipModuleGetFunction", result);
		api->hipModuleUnload(mod);
		return false;
	}
	*module = mod;
	*function = fn;
	return true;
}

/* Unload a module; errors are ignored */
static void
HipUnloadModule(void *arg, void *ctx, void *module)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;

	if (api->hipSetDevice(device->ordinal) == HIP_OK)
		api->hipModuleUnload(module);
}

/* Allocate device memory */
static bool
HipAlloc(void *arg, void *ctx, size_t bytes, GpuPointer *ptr, SilvanStatus *status)
{
	HipApi	   *api = arg;
	void	   *p = NULL;
	HipError	result;

	if (!HipEnter(api, ctx, "could not allocate HIP memory", status))
		return false;
	if ((result = api->hipMalloc(&p, bytes)) != HIP_OK)
		return HipFail(api, status, "could not allocate HIP memory", "hipMalloc", result);
	*ptr = (GpuPointer) (uintptr_t) p;
	return true;
}

/* Free device memory; errors are ignored */
static void
HipFree(void *arg, void *ctx, GpuPointer ptr)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;

	if (api->hipSetDevice(device->ordinal) == HIP_OK)
		api->hipFree((void *) (uintptr_t) ptr);
}

/* Allocate pinned host memory */
static bool
HipHostAlloc(void *arg, void *ctx, size_t bytes, void **ptr, SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipError	result;

	if (!HipEnter(api, ctx, "could not allocate pinned host memory", status))
		return false;
	if ((result = api->hipHostMalloc(ptr, bytes, 0)) != HIP_OK)
	{
		*ptr = NULL;
		return HipFail(api, status, "could not allocate pinned host memory", "hipHostMalloc",
					   result);
	}
	return true;
}

/* Free pinned host memory; errors are ignored */
static void
HipHostFree(void *arg, void *ctx, void *ptr)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;

	if (api->hipSetDevice(device->ordinal) == HIP_OK)
		api->hipHostFree(ptr);
}

/* Queue a copy from host to device memory on one of our streams */
static bool
HipToDevice(void *arg, void *ctx, int stream, GpuPointer dst, const void *src, size_t bytes,
			SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;
	HipError	result;

	if (!HipEnter(api, device, "could not copy to a HIP device", status))
		return false;
	/* hip_runtime_api.h declares src without const; the runtime only reads it */
	result = api->hipMemcpyHtoDAsync((void *) (uintptr_t) dst, (void *) src, bytes,
									 device->streams[stream]);
	if (result != HIP_OK)
		return HipFail(api, status, "could not copy to a HIP device", "hipMemcpyHtoDAsync",
					   result);
	return true;
}

/* Queue a copy from device to host memory on one of our streams */
static bool
HipToHost(void *arg, void *ctx, int stream, void *dst, GpuPointer src, size_t bytes,
		  SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;
	HipError	result;

	if (!HipEnter(api, device, "could not copy from a HIP device", status))
		return false;
	result = api->hipMemcpyDtoHAsync(dst, (void *) (uintptr_t) src, bytes,
									 device->streams[stream]);
	if (result != HIP_OK)
		return HipFail(api, status, "could not copy from a HIP device", "hipMemcpyDtoHAsync",
					   result);
	return true;
}

/* Queue a kernel on one of our streams */
static bool
HipLaunch(void *arg, void *ctx, int stream, void *function, const uint32_t grid[3],
		  const uint32_t block[3], uint32_t shared_bytes, void **params, SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;
	HipError	result;

	if (!HipEnter(api, device, "could not launch a HIP kernel", status))
		return false;
	result = api->hipModuleLaunchKernel(function, grid[0], grid[1], grid[2], block[0],
										block[1], block[2], shared_bytes, device->streams[stream],
										params, NULL);
	if (result != HIP_OK)
		return HipFail(api, status, "could not launch a HIP kernel", "hipModuleLaunchKernel",
					   result);
	return true;
}

/* Wait for one of our streams to drain; the first error of what ran */
static bool
HipWait(void *arg, void *ctx, int stream, SilvanStatus *status)
{
	HipApi	   *api = arg;
	HipDevice  *device = ctx;
	HipError	result;

	if (!HipEnter(api, device, "could not run on a HIP device", status))
		return false;
	if ((result = api->hipStreamSynchronize(device->streams[stream])) != HIP_OK)
		return HipFail(api, status, "could not run on a HIP device", "hipStreamSynchronize",
					   result);
	return true;
}

const GpuDriver GpuDriverHip = {
	.kind = GPU_HIP,
	.name = "HIP",
	.vendor = "AMD",
	.library = "libamdhip64.so",
	.symbols = hip_symbols,
	.load = HipLoad,
	.unload = HipUnload,
	.device_count = HipDeviceCount,
	.device_info = HipDeviceInfo,
	.open = HipOpen,
	.close = HipClose,
	.load_module = HipLoadModule,
	.unload_module = HipUnloadModule,
	.alloc = HipAlloc,
	.free = HipFree,
	.host_alloc = HipHostAlloc,
	.host_free = HipHostFree,
	.to_device = HipToDevice,
	.to_host = HipToHost,
	.launch = HipLaunch,
	.wait = HipWait,
};
