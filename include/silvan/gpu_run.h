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

/*
 * Add every tree's leaves into acc (prepared by ForestMarginsInit) for
 * num_rows rows of the forest's precision, row-major, on the device
 */
extern bool GpuForestRun(GpuForest *gf, const void *rows, int64_t num_rows, void *acc,
						 SilvanStatus *status);

/* Release the device's copies and the kernel (the device stays open) */
extern void GpuForestFree(GpuForest *gf);

#endif							/* SILVAN_GPU_RUN_H */
