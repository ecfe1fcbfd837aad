/*
 * gpu_run.c
 *		Running a forest compiled for a GPU (cuda, rocm) on a device.
 *
 * GpuForestLoad hands the kernel (PTX, or an HSA code object) to the
 * device's driver (gpu.c: CUDA or HIP, whichever opened the device) and copies
 * the model's buffers to device memory once; GpuForestRun then copies a
 * batch of rows and its margins (prepared by ForestMarginsInit, since the
 * kernel adds into them) to the device, launches the grid that the
 * schedule's mapped loops ask for (CompiledForestLaunch), and copies the
 * margins back.  The kernel reads a SilvanKernelArgs in device memory
 * whose pointers are device addresses: nvptx64 and amdgcn lay the struct
 * out as the host does (64-bit pointers, the same alignments).  Rows and margins live in buffers that grow with the largest
 * batch seen and are kept for the next one.  Nothing here raises: every
 * driver failure is a status with the driver's own error name (gpu.c).
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/gpu.h"
#include "silvan/gpu_run.h"

struct GpuForest
{
	const CompiledForest *compiled;
	GpuDevice  *device;
	GpuModule	module;
	GpuPointer	buffers[REPR_NUM_BUFFERS];	/* the model's, by REPR_BUFFER_* */
	GpuPointer	args;			/* SilvanKernelArgs */
	GpuPointer	rows;
	size_t		rows_bytes;		/* capacity of rows */
	GpuPointer	acc;
	size_t		acc_bytes;
};

/* A buffer of the model as a device pointer (0 when the model has none) */
static const void *
DevicePointer(const GpuForest *gf, int id)
{
	return (const void *) (uintptr_t) gf->buffers[id];
}

/* Copy every buffer of the model that has bytes to the device */
static bool
UploadModel(GpuForest *gf, SilvanStatus *status)
{
	ReprBuffers *b = (ReprBuffers *) CompiledForestBuffers(gf->compiled);

	for (int id = 0; id < REPR_NUM_BUFFERS; id++)
	{
		const void *host = *ReprBufferSlot(b, (ReprBufferId) id);

		if (b->bytes[id] == 0 || host == NULL)
			continue;
		if (!GpuAlloc(gf->device, b->bytes[id], &gf->buffers[id], status) ||
			!GpuToDevice(gf->device, gf->buffers[id], host, b->bytes[id], status))
			return false;
	}
	return GpuAlloc(gf->device, sizeof(SilvanKernelArgs), &gf->args, status);
}

/* Load a gpu-compiled forest's kernel and buffers on a device; NULL and a status */
GpuForest *
GpuForestLoad(const CompiledForest *compiled, GpuDevice *device, SilvanStatus *status)
{
	GpuForest  *gf;
	size_t		len;
	const char *image = CompiledForestDeviceCode(compiled, &len);

	if (image == NULL)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "model not compiled for a gpu",
				   "The forest was compiled for target %s, which has no device code.",
				   CompiledForestTarget(compiled)->name);
		return NULL;
	}
	if ((gf = calloc(1, sizeof(GpuForest))) == NULL)
	{
		StatusNoMemory(status, "the gpu forest");
		return NULL;
	}
	gf->compiled = compiled;
	gf->device = device;
	if (!GpuModuleLoad(device, image, len, "silvan_forest_kernel", &gf->module, status) ||
		!UploadModel(gf, status))
	{
		GpuForestFree(gf);
		return NULL;
	}
	return gf;
}

/* Grow a device buffer to at least bytes (its contents are not kept) */
static bool
Reserve(GpuForest *gf, GpuPointer *ptr, size_t *capacity, size_t bytes, SilvanStatus *status)
{
	if (bytes <= *capacity)
		return true;
	GpuFree(gf->device, *ptr);
	*ptr = 0;
	*capacity = 0;
	if (!GpuAlloc(gf->device, bytes, ptr, status))
		return false;
	*capacity = bytes;
	return true;
}

/* The kernel's arguments, with device addresses */
static void
DeviceArgs(const GpuForest *gf, int64_t num_rows, SilvanKernelArgs *args)
{
	memset(args, 0, sizeof(SilvanKernelArgs));
	args->rows = (const void *) (uintptr_t) gf->rows;
	args->num_rows = num_rows;
	args->acc = (void *) (uintptr_t) gf->acc;
	args->max_chunks = 1;
	args->nodes = DevicePointer(gf, REPR_BUFFER_NODES);
	args->trees = DevicePointer(gf, REPR_BUFFER_TREES);
	args->category_words = DevicePointer(gf, REPR_BUFFER_CATEGORY_WORDS);
	args->category_sets = DevicePointer(gf, REPR_BUFFER_CATEGORY_SETS);
	for (int i = 0; i < REPR_MAX_AUX; i++)
		args->aux[i] = DevicePointer(gf, REPR_BUFFER_AUX0 + i);
}

/*
 * Add every tree's leaves into acc (num_rows * groups margins, prepared by
 * ForestMarginsInit) for num_rows rows (row-major, the forest's precision)
 */
bool
GpuForestRun(GpuForest *gf, const void *rows, int64_t num_rows, void *acc,
			 SilvanStatus *status)
{
	int32_t		features;
	int32_t		groups;
	size_t		value_size;
	size_t		rows_bytes;
	size_t		acc_bytes;
	SilvanKernelArgs args;
	uint32_t	grid[3];
	uint32_t	block[3];
	void	   *params[1] = {&gf->args};

	if (num_rows <= 0)
		return true;
	CompiledForestShape(gf->compiled, &features, &groups, &value_size);
	rows_bytes = (size_t) num_rows * (size_t) features * value_size;
	acc_bytes = (size_t) num_rows * (size_t) groups * value_size;
	if (!Reserve(gf, &gf->rows, &gf->rows_bytes, rows_bytes, status) ||
		!Reserve(gf, &gf->acc, &gf->acc_bytes, acc_bytes, status))
		return false;
	DeviceArgs(gf, num_rows, &args);
	CompiledForestLaunch(gf->compiled, num_rows, grid, block);
	return GpuToDevice(gf->device, gf->rows, rows, rows_bytes, status) &&
		GpuToDevice(gf->device, gf->acc, acc, acc_bytes, status) &&
		GpuToDevice(gf->device, gf->args, &args, sizeof(args), status) &&
		GpuLaunch(&gf->module, grid, block, 0, params, status) &&
		GpuToHost(gf->device, acc, gf->acc, acc_bytes, status) &&
		GpuWait(gf->device, status);
}

/* Release the device's copies and the kernel */
void
GpuForestFree(GpuForest *gf)
{
	if (gf == NULL)
		return;
	for (int id = 0; id < REPR_NUM_BUFFERS; id++)
		GpuFree(gf->device, gf->buffers[id]);
	GpuFree(gf->device, gf->args);
	GpuFree(gf->device, gf->rows);
	GpuFree(gf->device, gf->acc);
	GpuModuleUnload(&gf->module);
	free(gf);
}
