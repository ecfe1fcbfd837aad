/*
 * variant.c
 *		Which schedule a batch runs with, and the code compiled for it.
 *
 * A model version carries the cpu schedules stored for it in
 * silvan.schedule.  For a batch of nominal size B the choice is, in order:
 * a schedule stored for exactly B; else (unless B is 1: a scalar call)
 * the stored one nearest to B by ratio if it is within a factor of 2;
 * else one stored for all sizes (batch_size NULL); otherwise the
 * compiler's default for B.  A schedule tuned for large batches (trees in
 * parallel, say) may sum in another order, so it must not silently reach
 * a scalar predict(), nor a batch size far from its own.  Code is compiled once per distinct
 * schedule text and kept with the version (a few variants at most; the
 * oldest goes first).  The last batch size asked is remembered, so a
 * scalar predict() per row costs no lookup at all.
 *
 * Targets: schedules are stored per target, and a variant is code for one
 * target (cpu, cuda, rocm, or the emulated grid standing in for a GPU; see
 * devices.c).  A batch for a target uses that target's stored schedules,
 * else its default (ScheduleDefault, ScheduleGpuDefault).  Only cpu code
 * goes through the code cache; a GPU variant keeps its kernel and buffers
 * on the backend's device and frees them with the variant.
 */
#include "silvan_pg.h"

#include <math.h>

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "silvan/default_race.h"
#include "silvan/llvm_load.h"

/* How far a stored batch size may be from the asked one, as a ratio */
#define VARIANT_NEAR_RATIO 2.0

/* The stored schedule of a target for a batch size (see above), or NULL when none applies */
const StoredSchedule *
ModelVersionStoredSchedule(const ModelVersion *version, int32 batch_size, const char *target)
{
	const StoredSchedule *all_sizes = NULL;
	const StoredSchedule *closest = NULL;
	double		best = 0;

	for (int i = 0; i < version->num_schedules; i++)
	{
		const StoredSchedule *s = &version->schedules[i];
		double		distance;

		if (strcmp(s->target, target) != 0)
			continue;
		if (s->batch_size == batch_size)
			return s;
		if (s->batch_size == 0)
		{
			all_sizes = s;
			continue;
		}
		distance = fabs(log((double) s->batch_size / (double) batch_size));
		if (batch_size > 1 && distance <= log(VARIANT_NEAR_RATIO) + 1e-9 &&
			(closest == NULL || distance < best))
		{
			closest = s;
			best = distance;
		}
	}
	return closest ? closest : all_sizes;
}

/* Free a variant's code, and its kernel and buffers on the device */
static void
VariantFree(CompiledVariant *variant)
{
	GpuForestFree(variant->gpu);
	variant->gpu = NULL;
	if (variant->code)
		CompiledForestFree(variant->code);
	variant->code = NULL;
}

/* Free every compiled variant of a version */
void
ModelVersionFreeVariants(ModelVersion *version)
{
	for (int i = 0; i < version->num_variants; i++)
		VariantFree(&version->variants[i]);
	version->num_variants = 0;
	version->last_variant = -1;
}

/*
 * Make room for one more variant, dropping the oldest when full (but not
 * code that a batch on the pipeline thread is running)
 */
static CompiledVariant *
VariantSlot(ModelVersion *version)
{
	if (version->num_variants == MODEL_MAX_VARIANTS)
	{
		int			victim = version->variants[0].code != NULL &&
			version->variants[0].code == version->busy_code ? 1 : 0;

		VariantFree(&version->variants[victim]);
		pfree(version->variants[victim].schedule_text);
		memmove(&version->variants[victim], &version->variants[victim + 1],
				sizeof(CompiledVariant) * (MODEL_MAX_VARIANTS - 1 - victim));
		version->num_variants--;
	}
	return &version->variants[version->num_variants];
}

/* Error context of a compile: which schedule */
static void
VariantCompileContext(void *arg)
{
	errcontext("compiling %s", (const char *) arg);
}

/*
 * The default schedule of a cpu batch: with a measured host profile and
 * compiled code, its layout raced on the model (default_race.c; a cancel
 * raises, another failure keeps the plain default, whose compile then
 * says what is wrong); else ScheduleDefault's
 */
static void
VariantDefaultSchedule(ModelVersion *version, int32 batch_size, Schedule *schedule)
{
	const Forest *forest = ModelVersionForest(version);
	CompileOptions options;
	SilvanStatus status;
	bool		raced;

	SilvanCompileOptions(&options, &TargetCpu, NULL);
	if (!silvan_jit || !options.host->measured || ForestUncompiledRule(forest) != NULL)
	{
		ScheduleDefault(forest, batch_size, options.host, schedule);
		return;
	}
	if (!ScheduleDefaultRaced(forest, batch_size, &options, schedule, &raced, &status))
		CHECK_FOR_INTERRUPTS();
}

/*
 * The default schedule of a cpu batch of the model: the one the code
 * cache remembers for its forest, batch size and host profile, else
 * picked (VariantDefaultSchedule) and remembered
 */
void
SilvanDefaultSchedule(ModelVersion *version, int32 batch_size, Schedule *schedule)
{
	if (ScheduleDefaultFromCache(version->header, batch_size, SilvanHostProfile(), schedule))
		return;
	VariantDefaultSchedule(version, batch_size, schedule);
	ScheduleDefaultRemember(version->header, batch_size, SilvanHostProfile(), schedule);
}

/*
 * Compile a schedule's code for a target: for the cpu the code cache's
 * whole answer if it has one (the trees are then never read), else a
 * compile of the whole forest; NULL (interpret) when the compiler
 * declines the model
 */
static CompiledForest *
VariantCompile(ModelVersion *version, const Schedule *schedule, const Target *target,
			   const char *origin)
{
	SilvanStatus status;
	CompileOptions options;
	CompiledForest *code;
	instr_time	start;
	instr_time	duration;

	INSTR_TIME_SET_CURRENT(start);
	SilvanCompileOptions(&options, target, SilvanTargetArch(target));
	code = target == &TargetCpu ?
		CompileForestFromCache(version->header, schedule, version->profile, &options) : NULL;
	if (code == NULL)
		code = CompileForestFor(ModelVersionForest(version), schedule, version->profile,
								&options, &status);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	score_costs.code_ms += INSTR_TIME_GET_MILLISEC(duration);
	score_costs.codes_obtained++;
	score_costs.code_origin = code != NULL ? CompiledForestCodeOrigin(code) : "interpreted";
	if (code != NULL)
		StatsCode(version, CompiledForestFromCodeCache(code));
	if (code == NULL && status.kind == SILVAN_ERROR_UNSUPPORTED)
		ereport(NOTICE,
				(errmsg("model is interpreted instead of compiled"),
				 errdetail("%s: %s", status.message, status.detail)));
	else if (code == NULL)
	{
		ErrorContextCallback context = {
			.previous = error_context_stack,
			.callback = VariantCompileContext,
			.arg = (void *) origin
		};

		/*
		 * a schedule the compiler refuses is an invalid parameter (22023);
		 * LLVM that cannot be loaded (silvan_llvm.so) is an internal error
		 */
		if (status.kind != SILVAN_ERROR_OUT_OF_MEMORY && status.kind != SILVAN_ERROR_CANCELED &&
			status.kind != SILVAN_ERROR_LIMIT &&
			!(status.kind == SILVAN_ERROR_INTERNAL && !LlvmLoaded()))
			status.kind = SILVAN_ERROR_INVALID;
		error_context_stack = &context;
		SilvanReportStatus(ERROR, &status);
	}
	else
		elog(DEBUG1, "silvan: machine code for %s: %s", origin, CompiledForestCodeOrigin(code));
	return code;
}

/*
 * A cpu schedule that every batch of one model version runs with, whatever
 * is stored, while tune() times the scoring functions end to end with it
 * (ModelVersionForceSchedule); id 0: none
 */
static int64 forced_id = 0;
static char *forced_text = NULL;

/*
 * Make every cpu batch of version id run with schedule text, or with text
 * NULL return to the stored schedules and defaults.  The variants' fast
 * path is told that the schedules may have changed (silvan_defaults_epoch).
 */
void
ModelVersionForceSchedule(int64 id, const char *text)
{
	if (forced_text != NULL)
		pfree(forced_text);
	forced_text = text ? MemoryContextStrdup(TopMemoryContext, text) : NULL;
	forced_id = text ? id : 0;
	silvan_defaults_epoch++;
}

/* The schedule (parsed) and its text for a batch size on a target */
static const char *
VariantSchedule(ModelVersion *version, int32 batch_size, const char *target,
				Schedule *schedule, const StoredSchedule **stored)
{
	SilvanStatus status;
	char	   *text;
	char	   *copy;

	if (forced_id != 0 && forced_id == version->id && strcmp(target, "cpu") == 0)
	{
		*stored = NULL;
		if (!ScheduleParse(forced_text, schedule, &status))
			SilvanReportStatus(ERROR, &status);
		return MemoryContextStrdup(version->cxt, forced_text);
	}
	*stored = ModelVersionStoredSchedule(version, batch_size, target);
	if (*stored != NULL)
	{
		if (!ScheduleParse((*stored)->text, schedule, &status))
			SilvanReportStatus(ERROR, &status);
		return (*stored)->text;
	}
	if (strcmp(target, "cpu") != 0)
		ScheduleGpuDefault(version->header, batch_size, schedule);
	/* the default is a function of the trees: the code cache remembers it by the forest's digest */
	else
		SilvanDefaultSchedule(version, batch_size, schedule);
	text = ScheduleToText(schedule);
	if (text == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	copy = MemoryContextStrdup(version->cxt, text);
	free(text);
	return copy;
}

/* The compiled variant a batch of nominal size batch_size runs with on the cpu */
CompiledVariant *
ModelVersionVariant(ModelVersion *version, int32 batch_size)
{
	return ModelVersionVariantFor(version, batch_size, "cpu");
}

/*
 * The compiled variant a batch of nominal size batch_size runs with on a
 * target ("cpu", "cuda" or "rocm": SilvanCheckTarget's names)
 */
CompiledVariant *
ModelVersionVariantFor(ModelVersion *version, int32 batch_size, const char *target_name)
{
	const Target *target = SilvanTargetFor(target_name, true);
	const StoredSchedule *stored;
	CompiledVariant *variant;
	Schedule	schedule;
	const char *text;
	char		host_key[128];

	if (version->last_variant >= 0 && version->last_batch_size == batch_size &&
		version->last_defaults_epoch == silvan_defaults_epoch &&
		version->variants[version->last_variant].target == target)
		return &version->variants[version->last_variant];
	text = VariantSchedule(version, batch_size, target_name, &schedule, &stored);
	/* code made with other host choices (silvan.host_profile changed) is not reused */
	HostProfileKey(SilvanHostProfile(), host_key, sizeof(host_key));
	for (int i = 0; i < version->num_variants; i++)
		if (version->variants[i].target == target &&
			strcmp(version->variants[i].schedule_text, text) == 0 &&
			strcmp(version->variants[i].host_key, host_key) == 0)
		{
			version->last_batch_size = batch_size;
			version->last_defaults_epoch = silvan_defaults_epoch;
			version->last_variant = i;
			return &version->variants[i];
		}
	variant = VariantSlot(version);
	memset(variant, 0, sizeof(CompiledVariant));
	variant->target = target;
	variant->code = VariantCompile(version, &schedule, target,
								   stored ? "the stored schedule" : "the default schedule");
	variant->schedule_text = MemoryContextStrdup(version->cxt, text);
	strlcpy(variant->host_key, host_key, sizeof(variant->host_key));
	version->last_batch_size = batch_size;
	version->last_defaults_epoch = silvan_defaults_epoch;
	version->last_variant = version->num_variants++;
	return variant;
}
