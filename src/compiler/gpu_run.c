/*
 * gpu_run.c
 *		Running a forest compiled for a GPU (cuda, rocm) on a device.
 *
 * GpuForestLoad hands the kernel (PTX, or an HSA code object) to the
 * device's driver (gpu.c: CUDA or HIP, whichever opened the device) and copies
 * the model's buffers to device memory once.  A batch is then scored in
 * one of GPU_STREAMS slots, each with a stream of its own:
 *
 *	GpuForestSubmit: copy the batch's rows and margins (prepared by
 *		ForestMarginsInit, since the kernel adds into them) into the slot's
 *		pinned staging buffers, and queue on its stream the copies to the
 *		device, the grid that the schedule's mapped loops ask for
 *		(CompiledForestLaunch) and the copy of the margins back; returns at
 *		once with the slot's number.
 *	GpuForestCollect: wait for the slot's stream and copy its margins to
 *		where the submitter wanted them.
 *
 * So a caller with two batches overlaps one batch's copies with the
 * other's kernel, and its own work (a scan reading the next batch) with
 * both; GpuForestRun does that for one large batch, in chunks of
 * GPU_RUN_CHUNK_ROWS rows over the slots.  The caller's memory is never
 * read or written by the device: the staging buffers are the driver's
 * pinned memory, so the copies are DMA that returns at once, and the
 * caller's buffers may be reused as soon as Submit returns.
 *
 * The kernel reads a SilvanKernelArgs in device memory whose pointers are
 * device addresses: nvptx64 and amdgcn lay the struct out as the host
 * does (64-bit pointers, the same alignments).  Every buffer grows with
 * the largest batch seen and is kept for the next one.  Nothing here
 * raises: every driver failure is a status with the driver's own error
 * name (gpu.c).
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/gpu.h"
#include "silvan/gpu_run.h"

/* One batch in flight: its device buffers, pinned staging, and where its margins go */
typedef struct GpuSlot
{
	GpuPointer	rows;			/* device */
	size_t		rows_bytes;
	GpuPointer	acc;			/* device */
	size_t		acc_bytes;
	GpuPointer	args;			/* device: a SilvanKernelArgs */
	void	   *host_rows;		/* pinned */
	size_t		host_rows_bytes;
	void	   *host_acc;		/* pinned */
	size_t		host_acc_bytes;
	SilvanKernelArgs *host_args;	/* pinned */
	void	   *acc_out;		/* the submitter's margins */
	size_t		acc_out_bytes;
	bool		busy;			/* submitted, not collected */
} GpuSlot;

struct GpuForest
{
	const CompiledForest *compiled;
	GpuDevice  *device;
	GpuModule	module;
	GpuPointer	buffers[REPR_NUM_BUFFERS];	/* the model's, by REPR_BUFFER_* */
	GpuSlot		slots[GPU_STREAMS];	/* slot k runs on stream k */
	int			next;			/* the slot the next submit tries first */
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
			!GpuToDevice(gf->device, 0, gf->buffers[id], host, b->bytes[id], status))
			return false;
	}
	/* every slot's stream may use the buffers: they must be there first */
	return GpuWait(gf->device, 0, status);
}

/* Give each slot its device arguments and their pinned staging */
static bool
AllocSlots(GpuForest *gf, SilvanStatus *status)
{
	for (int k = 0; k < GPU_STREAMS; k++)
		if (!GpuAlloc(gf->device, sizeof(SilvanKernelArgs), &gf->slots[k].args, status) ||
			!GpuHostAlloc(gf->device, sizeof(SilvanKernelArgs),
						  (void **) &gf->slots[k].host_args, status))
			return false;
	return true;
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
		!UploadModel(gf, status) || !AllocSlots(gf, status))
	{
		GpuForestFree(gf);
		return NULL;
	}
	return gf;
}

/* Grow a device buffer to at least bytes (its contents are not kept) */
static bool
Reserve(GpuDevice *device, GpuPointer *ptr, size_t *capacity, size_t bytes,
		SilvanStatus *status)
{
	if (bytes <= *capacity)
		return true;
	GpuFree(device, *ptr);
	*ptr = 0;
	*capacity = 0;
	if (!GpuAlloc(device, bytes, ptr, status))
		return false;
	*capacity = bytes;
	return true;
}

/* Grow a pinned host buffer to at least bytes (its contents are not kept) */
static bool
ReserveHost(GpuDevice *device, void **ptr, size_t *capacity, size_t bytes,
			SilvanStatus *status)
{
	if (bytes <= *capacity)
		return true;
	GpuHostFree(device, *ptr);
	*ptr = NULL;
	*capacity = 0;
	if (!GpuHostAlloc(device, bytes, ptr, status))
		return false;
	*capacity = bytes;
	return true;
}

/* A slot's kernel arguments, with device addresses */
static void
DeviceArgs(const GpuForest *gf, const GpuSlot *slot, int64_t num_rows, SilvanKernelArgs *args)
{
	memset(args, 0, sizeof(SilvanKernelArgs));
	args->rows = (const void *) (uintptr_t) slot->rows;
	args->num_rows = num_rows;
	args->acc = (void *) (uintptr_t) slot->acc;
	args->max_chunks = 1;
	args->nodes = DevicePointer(gf, REPR_BUFFER_NODES);
	args->trees = DevicePointer(gf, REPR_BUFFER_TREES);
	args->category_words = DevicePointer(gf, REPR_BUFFER_CATEGORY_WORDS);
	args->category_sets = DevicePointer(gf, REPR_BUFFER_CATEGORY_SETS);
	for (int i = 0; i < REPR_MAX_AUX; i++)
		args->aux[i] = DevicePointer(gf, REPR_BUFFER_AUX0 + i);
}

/* Bytes of rows and of margins for num_rows rows */
static void
BatchBytes(const GpuForest *gf, int64_t num_rows, size_t *rows_bytes, size_t *acc_bytes)
{
	int32_t		features;
	int32_t		groups;
	size_t		value_size;

	CompiledForestShape(gf->compiled, &features, &groups, &value_size);
	*rows_bytes = (size_t) num_rows * (size_t) features * value_size;
	*acc_bytes = (size_t) num_rows * (size_t) groups * value_size;
}

/* Queue a batch's copies, grid and copy back on slot k's stream */
static bool
QueueBatch(GpuForest *gf, int k, const void *rows, int64_t num_rows, void *acc,
		   SilvanStatus *status)
{
	GpuSlot    *slot = &gf->slots[k];
	size_t		rows_bytes;
	size_t		acc_bytes;
	uint32_t	grid[3];
	uint32_t	block[3];
	void	   *params[1] = {&slot->args};

	BatchBytes(gf, num_rows, &rows_bytes, &acc_bytes);
	if (!Reserve(gf->device, &slot->rows, &slot->rows_bytes, rows_bytes, status) ||
		!Reserve(gf->device, &slot->acc, &slot->acc_bytes, acc_bytes, status) ||
		!ReserveHost(gf->device, &slot->host_rows, &slot->host_rows_bytes, rows_bytes, status) ||
		!ReserveHost(gf->device, &slot->host_acc, &slot->host_acc_bytes, acc_bytes, status))
		return false;
	memcpy(slot->host_rows, rows, rows_bytes);
	memcpy(slot->host_acc, acc, acc_bytes);
	DeviceArgs(gf, slot, num_rows, slot->host_args);
	CompiledForestLaunch(gf->compiled, num_rows, grid, block);
	slot->acc_out = acc;
	slot->acc_out_bytes = acc_bytes;
	slot->busy = true;
	return GpuToDevice(gf->device, k, slot->rows, slot->host_rows, rows_bytes, status) &&
		GpuToDevice(gf->device, k, slot->acc, slot->host_acc, acc_bytes, status) &&
		GpuToDevice(gf->device, k, slot->args, slot->host_args, sizeof(SilvanKernelArgs),
					status) &&
		GpuLaunch(&gf->module, k, grid, block, 0, params, status) &&
		GpuToHost(gf->device, k, slot->host_acc, slot->acc, acc_bytes, status);
}

/*
 * Start adding every tree's leaves into acc (num_rows * groups margins,
 * prepared by ForestMarginsInit) for num_rows rows (row-major, the
 * forest's precision): returns the slot the batch runs in, for
 * GpuForestCollect, or -1 and a status.  rows and acc may be reused at
 * once; acc gets the result on collect.  Every slot busy is an error.
 */
int
GpuForestSubmit(GpuForest *gf, const void *rows, int64_t num_rows, void *acc,
				SilvanStatus *status)
{
	int			k = -1;

	for (int i = 0; i < GPU_STREAMS && k < 0; i++)
		if (!gf->slots[(gf->next + i) % GPU_STREAMS].busy)
			k = (gf->next + i) % GPU_STREAMS;
	if (k < 0)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "no free GPU slot",
				   "%d batches are in flight on the device; collect one first.", GPU_STREAMS);
		return -1;
	}
	gf->next = (k + 1) % GPU_STREAMS;
	if (num_rows <= 0)
	{
		gf->slots[k].busy = true;
		gf->slots[k].acc_out_bytes = 0;
		return k;
	}
	if (!QueueBatch(gf, k, rows, num_rows, acc, status))
	{
		GpuForestCancel(gf, k);
		return -1;
	}
	return k;
}

/* Wait for slot k's batch and copy its margins to the submitter's acc */
bool
GpuForestCollect(GpuForest *gf, int k, SilvanStatus *status)
{
	GpuSlot    *slot;

	if (k < 0 || k >= GPU_STREAMS || !gf->slots[k].busy)
		return StatusFail(status, SILVAN_ERROR_INVALID, "no GPU batch to collect",
						  "Slot %d has no batch in flight.", k);
	slot = &gf->slots[k];
	slot->busy = false;
	if (slot->acc_out_bytes == 0)
		return true;
	if (!GpuWait(gf->device, k, status))
		return false;
	memcpy(slot->acc_out, slot->host_acc, slot->acc_out_bytes);
	return true;
}

/* Forget slot k's batch, waiting for its stream without reporting (error paths) */
void
GpuForestCancel(GpuForest *gf, int k)
{
	SilvanStatus ignored;

	if (gf == NULL || k < 0 || k >= GPU_STREAMS || !gf->slots[k].busy)
		return;
	gf->slots[k].busy = false;
	(void) GpuWait(gf->device, k, &ignored);
}

/*
 * Add every tree's leaves into acc for num_rows rows, and wait: chunks of
 * GPU_RUN_CHUNK_ROWS rows alternate between the slots, so one chunk's
 * copies overlap the kernel of the one before.  Every slot must be free.
 */
bool
GpuForestRun(GpuForest *gf, const void *rows, int64_t num_rows, void *acc,
			 SilvanStatus *status)
{
	size_t		row_bytes;
	size_t		margin_bytes;
	int			slots[GPU_STREAMS];
	int			submitted = 0;
	bool		ok = true;

	BatchBytes(gf, 1, &row_bytes, &margin_bytes);
	for (int64_t begin = 0; ok && begin < num_rows; begin += GPU_RUN_CHUNK_ROWS)
	{
		int64_t		n = num_rows - begin < GPU_RUN_CHUNK_ROWS ?
			num_rows - begin : GPU_RUN_CHUNK_ROWS;
		int			at = submitted % GPU_STREAMS;

		if (submitted >= GPU_STREAMS)
			ok = GpuForestCollect(gf, slots[at], status);
		if (ok)
			ok = (slots[at] = GpuForestSubmit(gf, (const char *) rows + begin * row_bytes, n,
											  (char *) acc + begin * margin_bytes,
											  status)) >= 0;
		submitted++;
	}
	/* the chunks still in flight, oldest first */
	for (int i = submitted > GPU_STREAMS ? submitted - GPU_STREAMS : 0; i < submitted; i++)
	{
		int			k = slots[i % GPU_STREAMS];

		if (!ok || k < 0)
			GpuForestCancel(gf, k);
		else
			ok = GpuForestCollect(gf, k, status);
	}
	return ok;
}

/* Release the device's copies and the kernel, after what is in flight */
void
GpuForestFree(GpuForest *gf)
{
	if (gf == NULL)
		return;
	for (int k = 0; k < GPU_STREAMS; k++)
	{
		GpuSlot    *slot = &gf->slots[k];

		GpuForestCancel(gf, k);
		GpuFree(gf->device, slot->rows);
		GpuFree(gf->device, slot->acc);
		GpuFree(gf->device, slot->args);
		GpuHostFree(gf->device, slot->host_rows);
		GpuHostFree(gf->device, slot->host_acc);
		GpuHostFree(gf->device, slot->host_args);
	}
	for (int id = 0; id < REPR_NUM_BUFFERS; id++)
		GpuFree(gf->device, gf->buffers[id]);
	GpuModuleUnload(&gf->module);
	free(gf);
}
