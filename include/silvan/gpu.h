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
} GpuDriver;

/* A loaded, initialized driver with at least one device */
typedef struct GpuLibrary
{
	const GpuDriver *driver;
	void	   *handle;			/* from dlopen */
	void	   *api;			/* the vendor's state */
	int			device_count;
} GpuLibrary;

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

/* gpu_emit.c */
extern const char *GpuPtxTarget(int major, int minor);
extern bool GpuAmdgpuKnown(const char *gfx);
extern char *GpuEmitPtx(LLVMModuleRef module, const char *sm, SilvanStatus *status);
extern bool GpuEmitAmdgpuObject(LLVMModuleRef module, const char *gfx, void **object,
								size_t *len, SilvanStatus *status);
extern bool GpuLinkHsaco(const void *object, size_t len, const char *linker, void **hsaco,
						 size_t *hsaco_len, SilvanStatus *status);

#endif							/* SILVAN_GPU_H */
