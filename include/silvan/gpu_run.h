/*
 * gpu_run.h
 *		Running a forest compiled for a GPU on a device (gpu_run.c).
 */
#ifndef SILVAN_GPU_RUN_H
#define SILVAN_GPU_RUN_H

#include "silvan/compiler.h"
#include "silvan/gpu.h"

typedef struct GpuForest GpuForest;

/* Load a gpu-compiled forest's kernel and buffers on a device; NULL and a status */
extern GpuForest *GpuForestLoad(const CompiledForest *compiled, GpuDevice *device,
								SilvanStatus *status);

/* Rows a chunk of GpuForestRun holds: chunks alternate between the streams */
#define GPU_RUN_CHUNK_ROWS 65536

/*
 * Queue the adding of every tree's leaves into acc (prepared by
 * ForestMarginsInit) for num_rows rows of the forest's precision,
 * row-major, on a free slot of the device (one per stream); returns the
 * slot, or -1 and a status.  rows and acc may be reused at once: acc gets
 * the margins on GpuForestCollect.
 */
extern int	GpuForestSubmit(GpuForest *gf, const void *rows, int64_t num_rows, void *acc,
							SilvanStatus *status);

/* Wait for a slot's batch and write its margins to the acc it was given */
extern bool GpuForestCollect(GpuForest *gf, int slot, SilvanStatus *status);

/* Forget a slot's batch after waiting for it, reporting nothing (error paths) */
extern void GpuForestCancel(GpuForest *gf, int slot);

/* Submit and collect in chunks over the slots: the margins of num_rows rows, waited for */
extern bool GpuForestRun(GpuForest *gf, const void *rows, int64_t num_rows, void *acc,
						 SilvanStatus *status);

/* Release the device's copies and the kernel after what is in flight (the device stays open) */
extern void GpuForestFree(GpuForest *gf);

#endif							/* SILVAN_GPU_RUN_H */
