/*
 * gpu.h
 *		GPU drivers loaded at run time, and GPU code emitted with LLVM.
 *
 * Drivers are never linked: each vendor's library (libcuda.so.1 for
 * NVIDIA's CUDA Driver API, libamdhip64.so for AMD's HIP) is opened with
 * dlopen when first asked for, and every function we call is looked up by
 * name, so the extension loads and runs on CPU-only machines.  A vendor is
 * one GpuDriver table (src/runtime/gpu_<vendor>.c) plus one entry in
 * gpu.c's list; nothing else names a vendor.  Every failure, from a
 * missing library to a driver error code, becomes a SilvanStatus that
 * carries the driver's own error name and string.
 *
 * Code for the devices is emitted by gpu_emit.c from LLVM modules whose
 * triple is nvptx64-nvidia-cuda (PTX text, which the CUDA driver compiles)
 * or amdgcn-amd-amdhsa (an HSA code object, linked by ld.lld).
 */
#ifndef SILVAN_GPU_H
#define SILVAN_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>

#include "silvan/status.h"

typedef enum GpuKind
{
	GPU_CUDA = 0,				/* NVIDIA, CUDA Driver API */
	GPU_HIP,					/* AMD, HIP runtime */
	GPU_KIND_COUNT
} GpuKind;

/* One device, as silvan.devices() will show it */
typedef struct GpuDeviceInfo
{
	GpuKind		kind;
	int			ordinal;		/* the driver's device number */
	char		name[256];		/* "NVIDIA H100 80GB HBM3" */
	char		vendor[16];		/* "NVIDIA", "AMD" */
	char		arch[32];		/* "sm_90", "gfx90a" */
	uint64_t	memory;			/* bytes of device memory */
} GpuDeviceInfo;

/* An address in a device's memory */
typedef uint64_t GpuPointer;

/*
 * Streams an opened device has: work queued on one runs in order, work on
 * two may overlap (one batch's copies beside another's kernel)
 */
#define GPU_STREAMS 2

/*
 * A vendor.  load resolves the vendor's functions in an opened library
 * and initializes the driver, returning the vendor's own state (its
 * function pointers) or NULL and a status; symbols lists the functions
 * load requires, in the order it looks them up.
 */
typedef struct GpuDriver
{
	GpuKind		kind;
	const char *name;			/* "CUDA", "HIP" */
	const char *vendor;			/* "NVIDIA", "AMD" */
	const char *library;		/* what dlopen is given by default */
	const char *const *symbols; /* NULL-terminated */
	void	   *(*load) (void *handle, const char *library, SilvanStatus *status);
	void		(*unload) (void *api);
	bool		(*device_count) (void *api, int *count, SilvanStatus *status);
	bool		(*device_info) (void *api, int ordinal, GpuDeviceInfo *info,
								SilvanStatus *status);

	/*
	 * Running code.  open makes device ordinal's context current on the
	 * calling thread (CUDA: the primary context, retained) and creates
	 * GPU_STREAMS streams; it returns the vendor's state for the device
	 * ("ctx" below).  Copies and launches are queued on the stream they
	 * name; wait blocks until that stream has drained and reports the
	 * first error of what ran.  Copies from or to host memory of
	 * host_alloc (pinned, page-locked) run as DMA without blocking the
	 * caller; from other memory the driver stages them itself.
	 * load_module loads a PTX text (NUL-terminated, len counts the NUL)
	 * or an HSA code object and finds kernel in it, with the JIT's error
	 * log in the status when the driver refuses the image.  Every
	 * function but close, unload_module, free and host_free reports
	 * failure by a status naming the driver call and its error; those
	 * never fail visibly (they run on error paths).
	 */
	void	   *(*open) (void *api, int ordinal, SilvanStatus *status);
	void		(*close) (void *api, void *ctx);
	bool		(*load_module) (void *api, void *ctx, const void *image, size_t len,
								const char *kernel, void **module, void **function,
								SilvanStatus *status);
	void		(*unload_module) (void *api, void *ctx, void *module);
	bool		(*alloc) (void *api, void *ctx, size_t bytes, GpuPointer *ptr,
						  SilvanStatus *status);
	void		(*free) (void *api, void *ctx, GpuPointer ptr);
	bool		(*host_alloc) (void *api, void *ctx, size_t bytes, void **ptr,
							   SilvanStatus *status);
	void		(*host_free) (void *api, void *ctx, void *ptr);
	bool		(*to_device) (void *api, void *ctx, int stream, GpuPointer dst,
							  const void *src, size_t bytes, SilvanStatus *status);
	bool		(*to_host) (void *api, void *ctx, int stream, void *dst, GpuPointer src,
							size_t bytes, SilvanStatus *status);
	bool		(*launch) (void *api, void *ctx, int stream, void *function,
						   const uint32_t grid[3], const uint32_t block[3],
						   uint32_t shared_bytes, void **params, SilvanStatus *status);
	bool		(*wait) (void *api, void *ctx, int stream, SilvanStatus *status);
} GpuDriver;

/* A loaded, initialized driver with at least one device */
typedef struct GpuLibrary
{
	const GpuDriver *driver;
	void	   *handle;			/* from dlopen */
	void	   *api;			/* the vendor's state */
	int			device_count;
} GpuLibrary;

/* A device opened for running code: its driver and the vendor's context */
typedef struct GpuDevice
{
	GpuLibrary *lib;
	int			ordinal;
	void	   *ctx;
} GpuDevice;

/* A kernel loaded on a device */
typedef struct GpuModule
{
	GpuDevice  *device;
	void	   *module;
	void	   *function;
} GpuModule;

extern const GpuDriver GpuDriverCuda;
extern const GpuDriver GpuDriverHip;

/* gpu.c */
extern const GpuDriver *GpuDriverFor(GpuKind kind);
extern GpuLibrary *GpuDriverLoad(GpuKind kind, const char *library, SilvanStatus *status);
extern void GpuDriverUnload(GpuLibrary *lib);
extern bool GpuDeviceInfoGet(GpuLibrary *lib, int ordinal, GpuDeviceInfo *info,
							 SilvanStatus *status);
extern int	GpuDevices(GpuDeviceInfo **devices, char *reasons, size_t reasons_size);
extern bool GpuResolve(void *handle, const char *library, const char *symbol, void *slot,
					   SilvanStatus *status);

/* gpu.c: running code, through the device's driver (see GpuDriver) */
extern GpuDevice *GpuDeviceOpen(GpuLibrary *lib, int ordinal, SilvanStatus *status);
extern void GpuDeviceClose(GpuDevice *device);
extern bool GpuModuleLoad(GpuDevice *device, const void *image, size_t len, const char *kernel,
						  GpuModule *module, SilvanStatus *status);
extern void GpuModuleUnload(GpuModule *module);
extern bool GpuAlloc(GpuDevice *device, size_t bytes, GpuPointer *ptr, SilvanStatus *status);
extern void GpuFree(GpuDevice *device, GpuPointer ptr);
extern bool GpuHostAlloc(GpuDevice *device, size_t bytes, void **ptr, SilvanStatus *status);
extern void GpuHostFree(GpuDevice *device, void *ptr);
extern bool GpuToDevice(GpuDevice *device, int stream, GpuPointer dst, const void *src,
						size_t bytes, SilvanStatus *status);
extern bool GpuToHost(GpuDevice *device, int stream, void *dst, GpuPointer src, size_t bytes,
					  SilvanStatus *status);
extern bool GpuLaunch(const GpuModule *module, int stream, const uint32_t grid[3],
					  const uint32_t block[3], uint32_t shared_bytes, void **params,
					  SilvanStatus *status);
extern bool GpuWait(GpuDevice *device, int stream, SilvanStatus *status);

/* gpu_emit.c */
extern const char *GpuPtxTarget(int major, int minor);
extern bool GpuAmdgpuKnown(const char *gfx);
extern char *GpuEmitPtx(LLVMModuleRef module, const char *sm, SilvanStatus *status);
extern char *GpuDataLayout(const char *triple, const char *cpu, SilvanStatus *status);
extern char *GpuEmitAmdgpuAssembly(LLVMModuleRef module, const char *gfx, SilvanStatus *status);
extern bool GpuEmitAmdgpuObject(LLVMModuleRef module, const char *gfx, void **object,
								size_t *len, SilvanStatus *status);
/*
 * gpu_link.c: link a relocatable AMDGPU object into an HSA code object
 * (malloc'd) with ld.lld, in a private directory under the work directory
 * (GpuSetWorkDirectory: the adapter's $PGDATA/silvan_tmp; else $TMPDIR or
 * /tmp); linker NULL means ld.lld from LLVM 14
 */
extern void GpuSetWorkDirectory(const char *dir);
extern bool GpuLinkHsaco(const void *object, size_t len, const char *linker, void **hsaco,
						 size_t *hsaco_len, SilvanStatus *status);

#endif							/* SILVAN_GPU_H */
