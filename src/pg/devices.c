/*
 * devices.c
 *		silvan.devices(): the GPUs the drivers report.
 *
 * Each vendor's driver library is opened with dlopen (runtime/gpu.c); a
 * machine without one lists no device, and a NOTICE says why for each
 * vendor (the library is missing, or the driver found no device), so
 * that "why is my GPU not used" has an answer in SQL.
 */
#include "silvan_pg.h"

#include "funcapi.h"
#include "utils/builtins.h"

#include "silvan/gpu.h"

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
