/*
 * host.c
 *		The host profile a backend compiles with, and the options of its
 *		compiles.
 *
 * With silvan.host_profile = measured (the default) the first backend on
 * a host that needs a default schedule or a compile measures the profile
 * (host_probe.c, a few seconds at most, answering a cancel) and keeps it
 * beside the code cache, keyed like cached code by the CPU's identity,
 * LLVM and silvan's build; every later backend reads it from there.  A
 * parallel worker never measures: it reads what its leader kept, or takes
 * the fallback.  If measuring fails for another reason than a cancel
 * (silvan_llvm.so missing), the server log says why and the backend takes
 * the fallback, which the view shows; a later backend tries again.  silvan.host_profile = fallback takes the same plain choices on
 * every host; SET silvan.vector_walk = off overrides one choice.
 *
 * SilvanCompileOptions hands the compiler every input its code depends
 * on besides the model and the schedule: the target, the profile and the
 * limits of silvan.compile_max_*.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "silvan_pg.h"

#include "silvan/host_id.h"
#include "silvan/host_probe.h"
#include "silvan/jit.h"

/* What the profile is kept under beside the code cache */
#define HOST_PROFILE_KIND	"host profile"
#define HOST_PROFILE_SOURCE	"measured host profile"

static HostProfile measured;
static bool have_measured;
static HostProfile session;
static CompileLimits session_limits;

/* The profile kept beside the code cache, if it is there and whole */
static bool
HostProfileLoad(HostProfile *profile)
{
	size_t		size = 0;
	char	   *text = JitLoadBeside(HOST_PROFILE_KIND, HOST_PROFILE_SOURCE,
									 strlen(HOST_PROFILE_SOURCE), &size);
	bool		ok;

	ok = text != NULL && HostProfileFromText(text, size, profile) &&
		strcmp(profile->cpu, HostCpuDescription()) == 0;
	free(text);
	return ok;
}

/* Keep a measured profile beside the code cache (best effort) */
static void
HostProfileStore(const HostProfile *profile)
{
	char	   *text = HostProfileToText(profile);

	if (text != NULL)
		JitStoreBeside(HOST_PROFILE_KIND, HOST_PROFILE_SOURCE, strlen(HOST_PROFILE_SOURCE),
					   text, strlen(text));
	free(text);
}

/*
 * Measure the profile now, keep it in this backend and beside the code
 * cache; a cancel raises, any other failure is logged and keeps the
 * fallback
 */
static void
HostProfileMeasureNow(void)
{
	SilvanStatus status;
	HostProfile profile;

	if (!HostProfileMeasure(&profile, HOST_PROBE_BUDGET_MS, NULL, &status))
	{
		CHECK_FOR_INTERRUPTS();
		SilvanReportStatus(LOG, &status);
		HostProfileFallback(&measured);
		have_measured = true;
		return;
	}
	HostProfileStore(&profile);
	measured = profile;
	have_measured = true;
}

/* The measured profile: this backend's, else the kept one, else measured now */
static const HostProfile *
HostProfileMeasured(void)
{
	if (have_measured)
		return &measured;
	if (HostProfileLoad(&measured))
		have_measured = true;
	else if (IsParallelWorker())
		HostProfileFallback(&measured);
	else
		HostProfileMeasureNow();
	return &measured;
}

/* The profile this backend compiles with now, SET overrides applied */
const HostProfile *
SilvanHostProfile(void)
{
	if (silvan_host_profile == SILVAN_HOST_PROFILE_FALLBACK)
		HostProfileFallback(&session);
	else
		session = *HostProfileMeasured();
	if (!silvan_vector_walk)
		HostProfileSet(&session, HOST_CHOICE_VECTOR_WALK, 0);
	return &session;
}

/* The options of a compile for target (NULL: the host cpu) in the current session */
void
SilvanCompileOptions(CompileOptions *options, const Target *target, const char *arch)
{
	memset(options, 0, sizeof(CompileOptions));
	options->target = target;
	options->arch = arch;
	options->host = SilvanHostProfile();
	session_limits.max_instructions = silvan_compile_max_instructions;
	session_limits.max_function_instructions = silvan_compile_max_function_instructions;
	session_limits.max_function_loops = silvan_compile_max_function_loops;
	options->limits = &session_limits;
}

/* One row of the view: choice, value, how, alternatives, us_per_row, rounds */
static void
HostProfileRow(ReturnSetInfo *rsinfo, const char *choice, const char *value, const char *how,
			   const HostChoiceInfo *info, const HostChoiceValue *v)
{
	Datum		values[6];
	bool		nulls[6] = {0};

	values[0] = CStringGetTextDatum(choice);
	values[1] = CStringGetTextDatum(value);
	values[2] = CStringGetTextDatum(how);
	nulls[3] = nulls[4] = nulls[5] = info == NULL;
	if (info != NULL)
	{
		Datum		names[2] = {CStringGetTextDatum(info->alternatives[0]),
		CStringGetTextDatum(info->alternatives[1])};
		Datum		times[2] = {Float8GetDatum(v->us_per_row[0]), Float8GetDatum(v->us_per_row[1])};

		values[3] = PointerGetDatum(construct_array(names, 2, TEXTOID, -1, false, TYPALIGN_INT));
		values[4] = PointerGetDatum(construct_array(times, 2, FLOAT8OID, 8, FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
		nulls[4] = v->rounds == 0;
		values[5] = Int32GetDatum(v->rounds);
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* The rows of a profile: the CPU, where the profile came from, then each choice */
static void
HostProfileRows(FunctionCallInfo fcinfo, const HostProfile *profile)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		took[64];

	InitMaterializedSRF(fcinfo, 0);
	HostProfileRow(rsinfo, "cpu", profile->cpu, "cpuid", NULL, NULL);
	snprintf(took, sizeof(took), "%s", profile->measured ? "measured" : "fallback");
	HostProfileRow(rsinfo, "profile", took,
				   silvan_host_profile == SILVAN_HOST_PROFILE_FALLBACK ?
				   "silvan.host_profile = fallback" : "silvan.host_profile = measured", NULL, NULL);
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
	{
		const HostChoiceInfo *info = HostChoiceDescribe(c);
		const HostChoiceValue *v = &profile->choices[c];

		HostProfileRow(rsinfo, info->name, info->alternatives[v->pick],
					   HostChoiceHowName(v->how), info, v);
	}
}

PG_FUNCTION_INFO_V1(silvan_host_profile_rows);
PG_FUNCTION_INFO_V1(silvan_measure_host);

/* host_profile_rows(): the profile the calling session compiles with (the silvan.host_profile view) */
Datum
silvan_host_profile_rows(PG_FUNCTION_ARGS)
{
	HostProfileRows(fcinfo, SilvanHostProfile());
	PG_RETURN_NULL();
}

/*
 * measure_host(): measure the profile again now, keep it, and return it
 * (superusers, or roles granted EXECUTE); the calling session compiles with it
 * from now on, new sessions read it
 */
Datum
silvan_measure_host(PG_FUNCTION_ARGS)
{
	have_measured = false;
	HostProfileMeasureNow();
	silvan_defaults_epoch++;
	HostProfileRows(fcinfo, &measured);
	PG_RETURN_NULL();
}
