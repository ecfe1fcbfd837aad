/*
 * devices.c
 *		silvan.devices(), and GPU targets from SQL.
 *
 * Each vendor's driver library is opened with dlopen (runtime/gpu.c); a
 * machine without one lists no device, and a NOTICE says why for each
 * vendor (the library is missing, or the driver found no device), so
 * that "why is my GPU not used" has an answer in SQL.
 *
 * silvan.target says where batches run: cpu (the default), cuda (NVIDIA),
 * rocm (AMD), or auto (a GPU for batches of at least silvan.gpu_min_batch
 * rows where one is present, NVIDIA first, else the cpu, quietly).  A
 * backend opens a vendor's device on the first batch that needs it (CUDA:
 * the primary context; a stream) and keeps it until it exits; each model
 * variant compiled for a GPU keeps its kernel and buffers there
 * (gpu_run.c) and frees them with the variant.  Asking for a GPU where
 * there is no driver or device is an error that names what is missing
 * ("libcuda.so.1 not found", "no CUDA device"), with a hint.
 * silvan.gpu_emulation (superusers only) runs GPU batches on the emulated
 * grid instead (target_emulated.c): the same lowering, compiled for the
 * host and run one GPU thread at a time, slow, for tests on machines
 * without a GPU.  Driver calls return statuses; only this file turns them
 * into errors, after the call.
 */
#include "silvan_pg.h"

#include "funcapi.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "silvan/gpu.h"

/* silvan.target's values */
typedef enum SilvanTargetSetting
{
	SILVAN_TARGET_CPU,
	SILVAN_TARGET_CUDA,
	SILVAN_TARGET_ROCM,
	SILVAN_TARGET_AUTO
} SilvanTargetSetting;

static const struct config_enum_entry target_options[] = {
	{"cpu", SILVAN_TARGET_CPU, false},
	{"cuda", SILVAN_TARGET_CUDA, false},
	{"rocm", SILVAN_TARGET_ROCM, false},
	{"auto", SILVAN_TARGET_AUTO, false},
	{NULL, 0, false}
};

int			silvan_target = SILVAN_TARGET_CPU;
int			silvan_gpu_min_batch = 4096;
bool		silvan_gpu_emulation = false;

/* The backend's device of each vendor: opened once, on first need */
typedef struct BackendDevice
{
	GpuLibrary *library;
	GpuDevice  *device;
	bool		tried;
	SilvanStatus failure;
} BackendDevice;

static BackendDevice devices[GPU_KIND_COUNT];

/* Define silvan.target, silvan.gpu_min_batch and silvan.gpu_emulation */
void
SilvanDefineDeviceGucs(void)
{
	DefineCustomEnumVariable("silvan.target",
							 "Where batches run: cpu, cuda, rocm, or auto (a GPU for large batches where one is present).",
							 "auto runs batches of at least silvan.gpu_min_batch rows on a GPU when a driver and a device are there (NVIDIA first), else on the cpu.",
							 &silvan_target, SILVAN_TARGET_CPU, target_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.gpu_min_batch",
							"Smallest batch silvan.target = auto sends to a GPU.",
							"Smaller batches run on the cpu.",
							&silvan_gpu_min_batch, 4096, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("silvan.gpu_emulation",
							 "Run GPU batches on an emulated GPU grid on the cpu (slow; for tests).",
							 "The kernel lowered for a GPU runs one thread at a time on the host; results are a GPU's.",
							 &silvan_gpu_emulation, false, PGC_SUSET, 0,
							 NULL, NULL, NULL);
}

/*
 * At backend exit: close every device this backend opened (stream,
 * context) and unload the drivers; the device's memory goes with the
 * context
 */
static void
DevicesRelease(int code, Datum arg)
{
	for (int k = 0; k < GPU_KIND_COUNT; k++)
	{
		if (devices[k].device != NULL)
			GpuDeviceClose(devices[k].device);
		if (devices[k].library != NULL)
			GpuDriverUnload(devices[k].library);
		devices[k].device = NULL;
		devices[k].library = NULL;
	}
}

/* The vendor a GPU target runs on */
GpuKind
SilvanTargetKind(const Target *target)
{
	return target == &TargetRocm ? GPU_HIP : GPU_CUDA;
}

/*
 * The backend's device of a vendor, opened on first need; NULL when
 * there is none and missing_ok, else an error naming what is missing
 */
GpuDevice *
SilvanDevice(GpuKind kind, bool missing_ok)
{
	BackendDevice *d = &devices[kind];

	if (!d->tried)
	{
		static bool release_registered = false;

		d->tried = true;
		if (!release_registered)
			on_proc_exit(DevicesRelease, (Datum) 0);
		release_registered = true;
		d->library = GpuDriverLoad(kind, NULL, &d->failure);
		if (d->library != NULL && (d->device = GpuDeviceOpen(d->library, 0, &d->failure)) == NULL)
		{
			GpuDriverUnload(d->library);
			d->library = NULL;
		}
	}
	if (d->device == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s", d->failure.message),
				 errdetail("%s", d->failure.detail),
				 errhint("Target %s needs %s and a device; set silvan.target to auto to use a GPU only where there is one.",
						 kind == GPU_HIP ? "rocm" : "cuda",
						 kind == GPU_HIP ? "AMD's HIP runtime (libamdhip64.so)" :
						 "NVIDIA's driver (libcuda.so.1)")));
	return d->device;
}

/*
 * The target a batch of nominal size batch_size runs on: "cpu", "cuda" or
 * "rocm" (silvan.target; auto picks a GPU for large batches where one is)
 */
const char *
SilvanBatchTarget(int32 batch_size)
{
	switch (silvan_target)
	{
		case SILVAN_TARGET_CUDA:
			return "cuda";
		case SILVAN_TARGET_ROCM:
			return "rocm";
		case SILVAN_TARGET_AUTO:
			if (batch_size < silvan_gpu_min_batch)
				return "cpu";
			if (silvan_gpu_emulation || SilvanDevice(GPU_CUDA, true) != NULL)
				return "cuda";
			if (SilvanDevice(GPU_HIP, true) != NULL)
				return "rocm";
			return "cpu";
		default:
			return "cpu";
	}
}

/* Is silvan.target cpu (no batch of any size may go to a GPU)? */
bool
SilvanTargetIsCpu(void)
{
	return silvan_target == SILVAN_TARGET_CPU;
}

/* Check a target named by an SQL argument: cpu, cuda and rocm pass */
const char *
SilvanCheckTarget(const char *target, const char *argument, bool to_run)
{
	if (strcmp(target, "cpu") == 0 || strcmp(target, "cuda") == 0 ||
		strcmp(target, "rocm") == 0)
		return target;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown target \"%s\"", target),
			 errdetail("Argument \"%s\" must be \"cpu\", \"cuda\" or \"rocm\".", argument)));
	return NULL;
}

/*
 * The compiler's target for a target name: a GPU's is the emulated grid
 * when a batch is to run (to_run) under silvan.gpu_emulation
 */
const Target *
SilvanTargetFor(const char *target, bool to_run)
{
	bool		cuda = strcmp(target, "cuda") == 0;

	if (!cuda && strcmp(target, "rocm") != 0)
		return &TargetCpu;
	if (to_run && silvan_gpu_emulation)
		return &TargetGpuEmulated;
	return cuda ? &TargetCuda : &TargetRocm;
}

/*
 * The processor to compile for: the device's where there is one (PTX: the
 * sm GpuPtxTarget picks), else the target's default (sm_80, gfx90a)
 */
const char *
SilvanTargetArch(const Target *target)
{
	static char arch[32];
	GpuDeviceInfo info;
	SilvanStatus ignored;
	GpuKind		kind = SilvanTargetKind(target);
	int			major;
	int			minor;

	if (target != &TargetCuda && target != &TargetRocm)
		return NULL;
	if (SilvanDevice(kind, true) == NULL ||
		!GpuDeviceInfoGet(devices[kind].library, 0, &info, &ignored))
		return target->default_arch;
	if (kind == GPU_HIP)
	{
		if (!GpuAmdgpuKnown(info.arch))
			return target->default_arch;
		strlcpy(arch, info.arch, sizeof(arch));
		return arch;
	}
	if (sscanf(info.arch, "sm_%1d%d", &major, &minor) != 2)
		return target->default_arch;
	strlcpy(arch, GpuPtxTarget(major, minor), sizeof(arch));
	return arch;
}

/* The variant's kernel and buffers on the backend's device, loaded on its first batch */
static GpuForest *
SilvanVariantOnDevice(CompiledVariant *variant)
{
	SilvanStatus status;

	if (variant->gpu == NULL &&
		(variant->gpu = GpuForestLoad(variant->code,
									  SilvanDevice(SilvanTargetKind(variant->target), false),
									  &status)) == NULL)
		SilvanReportStatus(ERROR, &status);
	return variant->gpu;
}

/* Add a batch's trees into acc on the backend's device, and wait */
void
SilvanRunOnDevice(CompiledVariant *variant, const void *rows, int64 num_rows, void *acc)
{
	SilvanStatus status;

	if (!GpuForestRun(SilvanVariantOnDevice(variant), rows, num_rows, acc, &status))
		SilvanReportStatus(ERROR, &status);
}

/*
 * Start adding a batch's trees into acc on the backend's device; the slot
 * it runs in, for SilvanDeviceCollect.  rows may be reused at once; acc
 * gets the margins on collect.
 */
int
SilvanDeviceSubmit(CompiledVariant *variant, const void *rows, int64 num_rows, void *acc)
{
	SilvanStatus status;
	int			slot = GpuForestSubmit(SilvanVariantOnDevice(variant), rows, num_rows, acc,
									   &status);

	if (slot < 0)
		SilvanReportStatus(ERROR, &status);
	return slot;
}

/* Wait for a submitted batch; its margins are then in its acc */
void
SilvanDeviceCollect(CompiledVariant *variant, int slot)
{
	SilvanStatus status;

	if (!GpuForestCollect(variant->gpu, slot, &status))
		SilvanReportStatus(ERROR, &status);
}

/* Forget a submitted batch after waiting for it, without raising (error paths) */
void
SilvanDeviceCancel(CompiledVariant *variant, int slot)
{
	GpuForestCancel(variant->gpu, slot);
}

PG_FUNCTION_INFO_V1(silvan_devices);

/* devices(): one row per device (vendor, ordinal, name, arch, memory) */
Datum
silvan_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GpuDeviceInfo *devices = NULL;
	char		reasons[1024];
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	n = GpuDevices(&devices, reasons, sizeof(reasons));
	for (int i = 0; i < n; i++)
	{
		Datum		values[5];
		bool		nulls[5] = {0};

		values[0] = CStringGetTextDatum(devices[i].vendor);
		values[1] = Int32GetDatum(devices[i].ordinal);
		values[2] = CStringGetTextDatum(devices[i].name);
		values[3] = CStringGetTextDatum(devices[i].arch);
		values[4] = Int64GetDatum((int64) devices[i].memory);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	free(devices);
	if (n == 0)
		ereport(NOTICE,
				(errmsg("no GPU device found"),
				 errdetail("%s", reasons),
				 errhint("GPU targets need NVIDIA's driver (libcuda.so.1) or AMD's HIP runtime (libamdhip64.so) and a device.")));
	PG_RETURN_NULL();
}
