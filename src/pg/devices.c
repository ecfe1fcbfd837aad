/*
 * devices.c
 *		silvan.devices(), and GPU targets from SQL.
 *
 * Each vendor's driver library is opened with dlopen (runtime/gpu.c); a
 * machine without one lists no device, and a NOTICE says why for each
 * vendor (the library is missing, or the driver found no device), so
 * that "why is my GPU not used" has an answer in SQL.
 *
 * silvan.target says where batches run: cpu (the default), cuda, or auto
 * (an NVIDIA GPU for batches of at least silvan.gpu_min_batch rows where
 * one is present, else the cpu, quietly).  A backend opens its device on
 * the first batch that needs it (the driver's primary context and a
 * stream) and keeps it until it exits; each model variant compiled for
 * cuda keeps its kernel and buffers there (gpu_run.c) and frees them with
 * the variant.  Asking for cuda where there is no driver or device is an
 * error that names what is missing ("libcuda.so.1 not found", "no CUDA
 * device"), with a hint.  silvan.gpu_emulation (superusers only) runs cuda
 * batches on the emulated grid instead (target_emulated.c): the same
 * lowering, compiled for the host and run one GPU thread at a time, slow,
 * for tests on machines without a GPU.  rocm is refused: AMDGPU code
 * objects are emitted and linked (gpu_emit.c), but forest kernels are
 * lowered for NVPTX only.  Driver calls return statuses; only this file
 * turns them into errors, after the call.
 */
#include "silvan_pg.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "silvan/gpu.h"

/* silvan.target's values */
typedef enum SilvanTargetSetting
{
	SILVAN_TARGET_CPU,
	SILVAN_TARGET_CUDA,
	SILVAN_TARGET_AUTO
} SilvanTargetSetting;

static const struct config_enum_entry target_options[] = {
	{"cpu", SILVAN_TARGET_CPU, false},
	{"cuda", SILVAN_TARGET_CUDA, false},
	{"auto", SILVAN_TARGET_AUTO, false},
	{NULL, 0, false}
};

int			silvan_target = SILVAN_TARGET_CPU;
int			silvan_gpu_min_batch = 4096;
bool		silvan_gpu_emulation = false;

/* The backend's CUDA device: opened once, on first need */
static GpuLibrary *device_library;
static GpuDevice *device;
static bool device_tried;
static SilvanStatus device_failure;

/* Define silvan.target, silvan.gpu_min_batch and silvan.gpu_emulation */
void
SilvanDefineDeviceGucs(void)
{
	DefineCustomEnumVariable("silvan.target",
							 "Where batches run: cpu, cuda, or auto (a GPU for large batches where one is present).",
							 "auto runs batches of at least silvan.gpu_min_batch rows on an NVIDIA GPU when the driver and a device are there, else on the cpu.",
							 &silvan_target, SILVAN_TARGET_CPU, target_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("silvan.gpu_min_batch",
							"Smallest batch silvan.target = auto sends to a GPU.",
							NULL, &silvan_gpu_min_batch, 4096, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("silvan.gpu_emulation",
							 "Run cuda batches on an emulated GPU grid on the cpu (slow; for tests).",
							 "The kernel lowered for a GPU runs one thread at a time on the host; results are a GPU's.",
							 &silvan_gpu_emulation, false, PGC_SUSET, 0,
							 NULL, NULL, NULL);
}

/*
 * The backend's CUDA device, opened on first need; NULL when there is
 * none and missing_ok, else an error naming what is missing
 */
GpuDevice *
SilvanDevice(bool missing_ok)
{
	if (!device_tried)
	{
		device_tried = true;
		device_library = GpuDriverLoad(GPU_CUDA, NULL, &device_failure);
		if (device_library != NULL &&
			(device = GpuDeviceOpen(device_library, 0, &device_failure)) == NULL)
		{
			GpuDriverUnload(device_library);
			device_library = NULL;
		}
	}
	if (device == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s", device_failure.message),
				 errdetail("%s", device_failure.detail),
				 errhint("Target cuda needs NVIDIA's driver (libcuda.so.1) and a device; set silvan.target to auto to use a GPU only where there is one.")));
	return device;
}

/*
 * The target a batch of nominal size batch_size runs on: "cpu" or "cuda"
 * (silvan.target; auto picks cuda for large batches where a GPU is)
 */
const char *
SilvanBatchTarget(int32 batch_size)
{
	switch (silvan_target)
	{
		case SILVAN_TARGET_CUDA:
			return "cuda";
		case SILVAN_TARGET_AUTO:
			if (batch_size >= silvan_gpu_min_batch &&
				(silvan_gpu_emulation || SilvanDevice(true) != NULL))
				return "cuda";
			return "cpu";
		default:
			return "cpu";
	}
}

/*
 * Check a target named by an SQL argument: cpu and cuda pass; rocm and
 * anything else is an error naming the argument
 */
const char *
SilvanCheckTarget(const char *target, const char *argument, bool to_run)
{
	if (strcmp(target, "cpu") == 0 || strcmp(target, "cuda") == 0)
		return target;
	if (strcmp(target, "rocm") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("target \"rocm\" is not built yet"),
				 errdetail("Argument \"%s\" names AMD GPUs; forest kernels are lowered for NVIDIA GPUs (cuda) only so far.", argument)));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown target \"%s\"", target),
			 errdetail("Argument \"%s\" must be \"cpu\", \"cuda\" or \"rocm\".", argument)));
	return NULL;
}

/*
 * The compiler's target for a target name: cuda is the emulated grid
 * when a batch is to run (to_run) under silvan.gpu_emulation
 */
const Target *
SilvanTargetFor(const char *target, bool to_run)
{
	if (strcmp(target, "cuda") == 0)
		return to_run && silvan_gpu_emulation ? &TargetGpuEmulated : &TargetCuda;
	return &TargetCpu;
}

/* The processor to compile for: the device's sm (GpuPtxTarget) where there is one */
const char *
SilvanTargetArch(const Target *target)
{
	static char sm[16];
	GpuDeviceInfo info;
	SilvanStatus ignored;
	int			major;
	int			minor;

	if (target != &TargetCuda)
		return NULL;
	if (SilvanDevice(true) == NULL ||
		!GpuDeviceInfoGet(device_library, 0, &info, &ignored) ||
		sscanf(info.arch, "sm_%1d%d", &major, &minor) != 2)
		return "sm_80";
	strlcpy(sm, GpuPtxTarget(major, minor), sizeof(sm));
	return sm;
}

/*
 * Add a batch's trees into acc on the backend's device: the variant's
 * kernel and buffers are loaded there on its first batch
 */
void
SilvanRunOnDevice(CompiledVariant *variant, const void *rows, int64 num_rows, void *acc)
{
	SilvanStatus status;

	if (variant->gpu == NULL &&
		(variant->gpu = GpuForestLoad(variant->code, SilvanDevice(false), &status)) == NULL)
		SilvanReportStatus(ERROR, &status);
	if (!GpuForestRun(variant->gpu, rows, num_rows, acc, &status))
		SilvanReportStatus(ERROR, &status);
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
