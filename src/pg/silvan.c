/*
 * silvan.c
 *		Entry points of the extension: module init, GUCs, error reporting,
 *		the catalog trigger and explain().
 */
#include "silvan_pg.h"

#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"

PG_MODULE_MAGIC;

bool		silvan_jit = true;

void		_PG_init(void);

/* Define GUCs and set up the model cache */
void
_PG_init(void)
{
	DefineCustomBoolVariable("silvan.jit",
							 "Compile models to native code; off uses the reference interpreter.",
							 NULL, &silvan_jit, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("silvan");
	ModelCacheInit();
}

/* Map a status kind to an errcode */
static int
StatusErrcode(SilvanErrorKind kind)
{
	switch (kind)
	{
		case SILVAN_ERROR_SYNTAX:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
		case SILVAN_ERROR_UNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case SILVAN_ERROR_INVALID:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case SILVAN_ERROR_OUT_OF_MEMORY:
			return ERRCODE_OUT_OF_MEMORY;
		default:
			return ERRCODE_INTERNAL_ERROR;
	}
}

/* Turn a core status into ereport */
void
SilvanReportStatus(int elevel, const SilvanStatus *status)
{
	ereport(elevel,
			(errcode(StatusErrcode(status->kind)),
			 errmsg("%s", status->message),
			 status->detail[0] ? errdetail("%s", status->detail) : 0));
}

PG_FUNCTION_INFO_V1(silvan_catalog_changed);

/* Statement trigger on the catalog: tell every backend to revalidate */
Datum
silvan_catalog_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "silvan_catalog_changed: not called by trigger manager");
	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}

PG_FUNCTION_INFO_V1(silvan_explain);

/* Text of every IR level for a model */
Datum
silvan_explain(PG_FUNCTION_ARGS)
{
	char	   *name;
	ModelVersion *version;
	Schedule	schedule;
	CompiledForest *compiled;
	SilvanStatus status;
	char	   *forest_text;
	char	   *ir_text;
	text	   *result;
	int32		batch_size;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	batch_size = PG_ARGISNULL(1) ? 4096 : PG_GETARG_INT32(1);
	if (batch_size < 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("batch size must be positive"),
						errdetail("Argument \"batch_size\" is %d.", batch_size)));
	if (!PG_ARGISNULL(2) && strcmp(text_to_cstring(PG_GETARG_TEXT_PP(2)), "cpu") != 0)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("unsupported target"),
						errdetail("Argument \"target\" is \"%s\"; this version compiles for \"cpu\" only.",
								  text_to_cstring(PG_GETARG_TEXT_PP(2)))));
	version = ModelCacheLookup(name);
	ScheduleDefault(version->forest, batch_size, &schedule);
	compiled = CompileForest(version->forest, &schedule, &status);
	if (compiled == NULL)
		SilvanReportStatus(ERROR, &status);
	forest_text = ForestDump(version->forest, false);
	ir_text = CompiledForestExplain(compiled, !PG_ARGISNULL(3) && PG_GETARG_BOOL(3));
	CompiledForestFree(compiled);
	result = cstring_to_text(psprintf("%s%s", forest_text ? forest_text : "",
									  ir_text ? ir_text : ""));
	free(forest_text);
	free(ir_text);
	PG_RETURN_TEXT_P(result);
}
