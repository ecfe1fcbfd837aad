/*
 * gpu.c
 *		The list of GPU vendors, loading one's driver, and running code with it.
 *
 * A vendor is a GpuDriver table (gpu_cuda.c, gpu_hip.c); adding one is a
 * new file and a line in gpu_drivers below.  Loading opens the vendor's
 * library with dlopen (the default name, or an explicit path for tests
 * and for installations outside the loader's search path), lets the
 * vendor resolve its functions and initialize, and counts devices; no
 * device is a failure, so a GpuLibrary always has one.  Each step's
 * failure is a status naming what failed: the library and dlerror's text,
 * the first missing symbol, or the driver's own error name and string.
 *
 * Running code goes through the same table: GpuDeviceOpen wraps the
 * vendor's state for one device in a GpuDevice, and the functions after
 * it check their arguments (a NULL device, an ordinal out of range, a
 * module not loaded are clean statuses), treat zero bytes as nothing to
 * do, and dispatch to the device's driver.
 *
 * Libraries are opened with RTLD_NODELETE: an initialized driver runs
 * threads of its own, and unmapping its code under them would crash the
 * backend, so GpuDriverUnload drops our reference but never the mapping.
 * No PostgreSQL code runs here, so no longjmp can cross a driver call.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/gpu.h"

/* Every vendor, indexed by GpuKind */
static const GpuDriver *const gpu_drivers[GPU_KIND_COUNT] = {
	[GPU_CUDA] = &GpuDriverCuda,
	[GPU_HIP] = &GpuDriverHip,
};

/* The table of a kind of GPU; NULL if there is none */
const GpuDriver *
GpuDriverFor(GpuKind kind)
{
	if ((int) kind < 0 || kind >= GPU_KIND_COUNT)
		return NULL;
	return gpu_drivers[kind];
}

/* Look up one symbol into *slot (a function pointer); false naming it if absent */
bool
GpuResolve(void *handle, const char *library, const char *symbol, void *slot,
		   SilvanStatus *status)
{
	void	   *address;

	dlerror();
	address = dlsym(handle, symbol);
	if (address == NULL)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "GPU driver lacks a function",
						  "The library %s has no symbol %s.", library, symbol);
	memcpy(slot, &address, sizeof(address));
	return true;
}

/* Open a library; NULL and a "not found" status naming dlerror's text */
static void *
GpuOpen(const char *library, SilvanStatus *status)
{
	void	   *handle;
	const char *error;
	char		message[SILVAN_MESSAGE_LEN];

	dlerror();
	handle = dlopen(library, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (handle == NULL)
	{
		error = dlerror();
		snprintf(message, sizeof(message), "%s not found", library);
		StatusFail(status, SILVAN_ERROR_UNSUPPORTED, message, "dlopen failed: %s.",
				   error ? error : "no error text");
	}
	return handle;
}

/* Count the devices of a loaded driver; false if none */
static bool
GpuCountDevices(GpuLibrary *lib, SilvanStatus *status)
{
	char		message[SILVAN_MESSAGE_LEN];

	if (!lib->driver->device_count(lib->api, &lib->device_count, status))
		return false;
	if (lib->device_count > 0)
		return true;
	snprintf(message, sizeof(message), "no %s device", lib->driver->name);
	return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, message,
					  "The %s driver in %s reports no device.", lib->driver->name,
					  lib->driver->library);
}

/*
 * Load a kind's driver from library (NULL: the vendor's default name),
 * initialize it and count its devices; NULL and a status on any failure
 */
GpuLibrary *
GpuDriverLoad(GpuKind kind, const char *library, SilvanStatus *status)
{
	const GpuDriver *driver = GpuDriverFor(kind);
	GpuLibrary *lib;

	if (driver == NULL)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "unknown GPU kind",
				   "The GPU kind %d is not one silvan knows.", (int) kind);
		return NULL;
	}
	if ((lib = calloc(1, sizeof(GpuLibrary))) == NULL)
	{
		StatusNoMemory(status, "a GPU driver handle");
		return NULL;
	}
	lib->driver = driver;
	if (library == NULL)
		library = driver->library;
	if ((lib->handle = GpuOpen(library, status)) == NULL ||
		(lib->api = driver->load(lib->handle, library, status)) == NULL ||
		!GpuCountDevices(lib, status))
	{
		GpuDriverUnload(lib);
		return NULL;
	}
	StatusClear(status);
	return lib;
}

/* Release a loaded driver (the library stays mapped: RTLD_NODELETE) */
void
GpuDriverUnload(GpuLibrary *lib)
{
	if (lib == NULL)
		return;
	if (lib->api != NULL)
		lib->driver->unload(lib->api);
	if (lib->handle != NULL)
		dlclose(lib->handle);
	free(lib);
}

/* Whether ordinal names a device of a loaded driver; false and a status if not */
static bool
GpuCheckOrdinal(const GpuLibrary *lib, int ordinal, SilvanStatus *status)
{
	if (ordinal < 0 || ordinal >= lib->device_count)
		return StatusFail(status, SILVAN_ERROR_INVALID, "no such GPU device",
						  "The %s device number %d is not below the device count %d.",
						  lib->driver->name, ordinal, lib->device_count);
	return true;
}

/* Describe one device of a loaded driver */
bool
GpuDeviceInfoGet(GpuLibrary *lib, int ordinal, GpuDeviceInfo *info, SilvanStatus *status)
{
	if (!GpuCheckOrdinal(lib, ordinal, status))
		return false;
	return lib->driver->device_info(lib->api, ordinal, info, status);
}

/* Append "name: message (detail)" to the reasons text */
static void
GpuAddReason(char *reasons, size_t size, const char *name, const SilvanStatus *status)
{
	size_t		used = strlen(reasons);

	if (used + 1 >= size)
		return;
	snprintf(reasons + used, size - used, "%s%s: %s (%s)", used > 0 ? "; " : "", name,
			 status->message, status->detail);
}

/* Add one loaded driver's devices to the list; false and a reason on failure */
static bool
GpuListDriver(GpuLibrary *lib, GpuDeviceInfo **devices, int *count, SilvanStatus *status)
{
	GpuDeviceInfo *grown = realloc(*devices, (*count + lib->device_count) * sizeof(GpuDeviceInfo));

	if (grown == NULL)
		return StatusNoMemory(status, "the list of GPU devices");
	*devices = grown;
	for (int i = 0; i < lib->device_count; i++)
	{
		if (!GpuDeviceInfoGet(lib, i, &grown[*count], status))
			return false;
		(*count)++;
	}
	return true;
}

/*
 * Every device of every vendor, for silvan.devices(): the number found,
 * *devices malloc'd (NULL when none); reasons gets why each vendor that
 * gave no device gave none ("CUDA: libcuda.so.1 not found (...)")
 */
int
GpuDevices(GpuDeviceInfo **devices, char *reasons, size_t reasons_size)
{
	int			count = 0;

	*devices = NULL;
	if (reasons_size > 0)
		reasons[0] = '\0';
	for (int kind = 0; kind < GPU_KIND_COUNT; kind++)
	{
		SilvanStatus status;
		GpuLibrary *lib = GpuDriverLoad((GpuKind) kind, NULL, &status);

		if (lib == NULL || !GpuListDriver(lib, devices, &count, &status))
			GpuAddReason(reasons, reasons_size, gpu_drivers[kind]->name, &status);
		GpuDriverUnload(lib);
	}
	if (count == 0)
	{
		free(*devices);
		*devices = NULL;
	}
	return count;
}

/* Fail a call that was given no open device */
static bool
GpuNoDevice(SilvanStatus *status, const char *call)
{
	return StatusFail(status, SILVAN_ERROR_INVALID, "no open GPU device",
					  "%s was given no open GPU device.", call);
}

/* Open device ordinal of a loaded driver for running code; NULL and a status on failure */
GpuDevice *
GpuDeviceOpen(GpuLibrary *lib, int ordinal, SilvanStatus *status)
{
	GpuDevice  *device;

	if (lib == NULL)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "no GPU driver",
				   "GpuDeviceOpen was given no loaded GPU driver.");
		return NULL;
	}
	if (!GpuCheckOrdinal(lib, ordinal, status))
		return NULL;
	if ((device = calloc(1, sizeof(GpuDevice))) == NULL)
	{
		StatusNoMemory(status, "a GPU device handle");
		return NULL;
	}
	device->lib = lib;
	device->ordinal = ordinal;
	if ((device->ctx = lib->driver->open(lib->api, ordinal, status)) == NULL)
	{
		free(device);
		return NULL;
	}
	return device;
}

/* Close an opened device (NULL is a no-op); what was loaded on it must be released first */
void
GpuDeviceClose(GpuDevice *device)
{
	if (device == NULL)
		return;
	device->lib->driver->close(device->lib->api, device->ctx);
	free(device);
}

/* Load an image (PTX text with its NUL, or an HSA code object) and find kernel in it */
bool
GpuModuleLoad(GpuDevice *device, const void *image, size_t len, const char *kernel,
			  GpuModule *module, SilvanStatus *status)
{
	memset(module, 0, sizeof(GpuModule));
	if (device == NULL)
		return GpuNoDevice(status, "GpuModuleLoad");
	if (image == NULL || len == 0 || kernel == NULL || kernel[0] == '\0')
		return StatusFail(status, SILVAN_ERROR_INVALID, "no GPU code to load",
						  "GpuModuleLoad was given %s.",
						  image == NULL || len == 0 ? "an empty image" : "no kernel name");
	if (!device->lib->driver->load_module(device->lib->api, device->ctx, image, len, kernel,
										  &module->module, &module->function, status))
		return false;
	module->device = device;
	return true;
}

/* Unload a module and zero it (a zeroed module is a no-op) */
void
GpuModuleUnload(GpuModule *module)
{
	GpuDevice  *device;

	if (module == NULL || module->device == NULL)
		return;
	device = module->device;
	device->lib->driver->unload_module(device->lib->api, device->ctx, module->module);
	memset(module, 0, sizeof(GpuModule));
}

/* Allocate bytes of device memory into *ptr; zero bytes gives the null address */
bool
GpuAlloc(GpuDevice *device, size_t bytes, GpuPointer *ptr, SilvanStatus *status)
{
	*ptr = 0;
	if (device == NULL)
		return GpuNoDevice(status, "GpuAlloc");
	if (bytes == 0)
		return true;
	return device->lib->driver->alloc(device->lib->api, device->ctx, bytes, ptr, status);
}

/* Free device memory (the null address is a no-op) */
void
GpuFree(GpuDevice *device, GpuPointer ptr)
{
	if (device == NULL || ptr == 0)
		return;
	device->lib->driver->free(device->lib->api, device->ctx, ptr);
}

/* Allocate bytes of pinned host memory into *ptr; zero bytes gives NULL */
bool
GpuHostAlloc(GpuDevice *device, size_t bytes, void **ptr, SilvanStatus *status)
{
	*ptr = NULL;
	if (device == NULL)
		return GpuNoDevice(status, "GpuHostAlloc");
	if (bytes == 0)
		return true;
	return device->lib->driver->host_alloc(device->lib->api, device->ctx, bytes, ptr, status);
}

/* Free pinned host memory (NULL is a no-op) */
void
GpuHostFree(GpuDevice *device, void *ptr)
{
	if (device == NULL || ptr == NULL)
		return;
	device->lib->driver->host_free(device->lib->api, device->ctx, ptr);
}

/* Error unless stream is one of an opened device's */
static bool
GpuCheckStream(int stream, const char *call, SilvanStatus *status)
{
	if (stream >= 0 && stream < GPU_STREAMS)
		return true;
	return StatusFail(status, SILVAN_ERROR_INVALID, "no such GPU stream",
					  "%s was given stream %d; a device has streams 0 to %d.", call, stream,
					  GPU_STREAMS - 1);
}

/* Queue a copy of bytes from host memory to device memory on a stream; zero bytes is a no-op */
bool
GpuToDevice(GpuDevice *device, int stream, GpuPointer dst, const void *src, size_t bytes,
			SilvanStatus *status)
{
	if (device == NULL)
		return GpuNoDevice(status, "GpuToDevice");
	if (!GpuCheckStream(stream, "GpuToDevice", status))
		return false;
	if (bytes == 0)
		return true;
	if (dst == 0 || src == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "could not copy to a GPU device",
						  "GpuToDevice was given a null %s address.", dst == 0 ? "device" : "host");
	return device->lib->driver->to_device(device->lib->api, device->ctx, stream, dst, src,
										  bytes, status);
}

/* Queue a copy of bytes from device memory to host memory on a stream; zero bytes is a no-op */
bool
GpuToHost(GpuDevice *device, int stream, void *dst, GpuPointer src, size_t bytes,
		  SilvanStatus *status)
{
	if (device == NULL)
		return GpuNoDevice(status, "GpuToHost");
	if (!GpuCheckStream(stream, "GpuToHost", status))
		return false;
	if (bytes == 0)
		return true;
	if (dst == NULL || src == 0)
		return StatusFail(status, SILVAN_ERROR_INVALID, "could not copy from a GPU device",
						  "GpuToHost was given a null %s address.", src == 0 ? "device" : "host");
	return device->lib->driver->to_host(device->lib->api, device->ctx, stream, dst, src, bytes,
										status);
}

/*
 * Queue a loaded kernel on a stream of its device with grid blocks of
 * block threads; params points to each argument's value.  An empty grid
 * runs nothing.
 */
bool
GpuLaunch(const GpuModule *module, int stream, const uint32_t grid[3], const uint32_t block[3],
		  uint32_t shared_bytes, void **params, SilvanStatus *status)
{
	GpuDevice  *device = module ? module->device : NULL;

	if (device == NULL || module->function == NULL)
		return StatusFail(status, SILVAN_ERROR_INVALID, "no GPU kernel loaded",
						  "GpuLaunch was given a module that is not loaded.");
	if (!GpuCheckStream(stream, "GpuLaunch", status))
		return false;
	if (block[0] == 0 || block[1] == 0 || block[2] == 0)
		return StatusFail(status, SILVAN_ERROR_INVALID, "could not launch a GPU kernel",
						  "The block of %u x %u x %u threads is empty.", block[0], block[1],
						  block[2]);
	if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
		return true;
	return device->lib->driver->launch(device->lib->api, device->ctx, stream, module->function,
									   grid, block, shared_bytes, params, status);
}

/* Wait until everything queued on a stream of a device has run; the first error of what ran */
bool
GpuWait(GpuDevice *device, int stream, SilvanStatus *status)
{
	if (device == NULL)
		return GpuNoDevice(status, "GpuWait");
	if (!GpuCheckStream(stream, "GpuWait", status))
		return false;
	return device->lib->driver->wait(device->lib->api, device->ctx, stream, status);
}
