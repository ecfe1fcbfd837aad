/*
 * describe.c
 *		silvan.describe(model): a model version in plain words, one
 *		property per row.
 *
 * What the catalog says (the version, who loaded it, its inputs and
 * outputs, trees and depth, description) is read through SQL as the
 * caller, whom the model's USAGE admitted; the tuner's measurement from
 * its schedule as silvan (a role with USAGE may not read schedules), else
 * what the version's batches took so far (stats.c); what this
 * backend knows (code compiled so far and where it came from, the
 * schedule each scoring batch size uses) comes from the model cache; the
 * time per row is what the tuner measured on this host, when it did.
 * explain() stays the compiler's view.
 */
#include "silvan_pg.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "batch.h"

/* One row of the result */
static void
DescribeRow(ReturnSetInfo *rsinfo, const char *property, const char *value)
{
	Datum		values[2];
	bool		nulls[2] = {false, value == NULL};

	values[0] = CStringGetTextDatum(property);
	values[1] = value ? CStringGetTextDatum(value) : (Datum) 0;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* What the calls of a classifier or a regressor return, in words */
static char *
DescribeOutputs(const Forest *forest)
{
	StringInfoData out;

	initStringInfo(&out);
	switch (forest->task)
	{
		case FOREST_TASK_MULTICLASS:
			appendStringInfo(&out, "predict(): the class index, 0 to %d; predict_proba(): %d probabilities",
							 forest->num_classes - 1, forest->num_classes);
			break;
		case FOREST_TASK_BINARY:
			appendStringInfoString(&out, "predict(): the probability of class 1; predict_proba(): 2 probabilities");
			break;
		default:
			appendStringInfo(&out, "predict(): a %s value", ForestTaskName(forest->task));
			break;
	}
	if (forest->task == FOREST_TASK_MULTICLASS || forest->task == FOREST_TASK_BINARY)
	{
		appendStringInfoString(&out, "; predict_label(): ");
		if (forest->class_labels == NULL)
			appendStringInfoString(&out, "the class index in decimal (no labels)");
		else
			for (int c = 0; c < forest->num_classes; c++)
				appendStringInfo(&out, "%s%s", c ? ", " : "", forest->class_labels[c]);
	}
	appendStringInfo(&out, "; predict_raw(): %d margin%s", forest->num_groups,
					 forest->num_groups == 1 ? "" : "s");
	return out.data;
}

/* The schedule a batch size scores with, in words */
static char *
DescribeSchedule(const ModelVersion *version, int32 batch_size)
{
	const StoredSchedule *s = ModelVersionStoredSchedule(version, batch_size, "cpu");

	if (s == NULL)
		return pstrdup("default");
	return psprintf("%s%s: %s", s->tuned ? "tuned" : "set by hand",
					s->batch_size == batch_size ? "" :
					s->batch_size == 0 ? " for every size" :
					psprintf(" for batch size %d", s->batch_size), s->text);
}

/* A schedule's directives on one line */
static char *
OneLine(const char *text)
{
	StringInfoData out;

	initStringInfo(&out);
	for (const char *c = text; *c; c++)
	{
		if (*c != '\n')
			appendStringInfoChar(&out, *c);
		else if (c[1] != '\0')
			appendStringInfoString(&out, "; ");
	}
	return out.data;
}

/* The code this backend has for the version */
static char *
DescribeCode(const ModelVersion *version)
{
	StringInfoData out;

	if (version->num_variants == 0)
		return pstrdup("none in this connection yet: compiled, or read from the code cache, at its first batch");
	initStringInfo(&out);
	for (int i = 0; i < version->num_variants; i++)
	{
		const CompiledVariant *v = &version->variants[i];

		appendStringInfo(&out, "%s%s, schedule %s", i ? "; and " : "",
						 v->code ? CompiledForestCodeOrigin(v->code) : "interpreted",
						 v->schedule_text && v->schedule_text[0] ? OneLine(v->schedule_text) : "(none)");
	}
	return out.data;
}

/* The catalog's facts about the version, through SQL as the caller */
static void
DescribeCatalog(ReturnSetInfo *rsinfo, const ModelVersion *version)
{
	CatalogSql	sql;
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(version->id);
	static const char *const properties[] = {
		"model", "version", "description", "metadata", "owner", "loaded",
		"format", "objective", "task", "trees", "max depth", "digest"
	};

	CatalogSqlBegin(&sql);
	CatalogSqlRun(&sql,
				  "SELECT m.name,"
				  " pg_catalog.format('%s of %s%s', m.version,"
				  "   (SELECT pg_catalog.count(*) FROM silvan.model v WHERE v.name OPERATOR(pg_catalog.=) m.name),"
				  "   CASE WHEN r.version OPERATOR(pg_catalog.=) m.version THEN ', deployed'"
				  "        ELSE pg_catalog.format(', version %s is deployed', r.version) END),"
				  " m.description, m.metadata::pg_catalog.text, m.owner::pg_catalog.text,"
				  " pg_catalog.format('%s by %s', m.created, m.loaded_by),"
				  " m.format, m.objective, m.task, m.num_trees::pg_catalog.text,"
				  " m.max_depth::pg_catalog.text, 'sha256:' OPERATOR(pg_catalog.||) m.source_sha256"
				  " FROM silvan.model m JOIN silvan.registry r ON r.name OPERATOR(pg_catalog.=) m.name"
				  " WHERE m.id OPERATOR(pg_catalog.=) $1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		for (int i = 0; i < lengthof(properties); i++)
		{
			char	   *value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1);

			if (value != NULL || i < 2)
				DescribeRow(rsinfo, properties[i], value);
		}
	CatalogSqlEnd(&sql);
}

/* The tuner's measurements on this host, for the table functions' batch size */
static void
DescribeSpeed(ReturnSetInfo *rsinfo, const ModelVersion *version)
{
	CatalogSql	sql;
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(version->id);

	/* the schedules are the model's own: read as silvan, for a caller the lookup admitted */
	CatalogSqlBegin(&sql);
	CatalogSqlBecomeOwner(&sql);
	CatalogSqlRun(&sql,
				  "SELECT pg_catalog.format('%s (batches of %s, tuned %s on %s)',"
				  "   provenance OPERATOR(pg_catalog.->>) 'us_per_row', batch_size,"
				  "   provenance OPERATOR(pg_catalog.->>) 'tuned_at',"
				  "   provenance OPERATOR(pg_catalog.->>) 'cpu')"
				  " FROM silvan.schedule WHERE model_id OPERATOR(pg_catalog.=) $1"
				  " AND origin OPERATOR(pg_catalog.=) 'tuned' AND target OPERATOR(pg_catalog.=) 'cpu'"
				  " ORDER BY batch_size DESC LIMIT 1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		DescribeRow(rsinfo, "microseconds per row",
					SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	else
	{
		ModelUsage	usage;

		/* else what its batches took here so far (model_stats) */
		if (StatsOfVersion(version->id, &usage) && usage.timed_rows > 0)
			DescribeRow(rsinfo, "microseconds per row",
						psprintf("%.3g (the compiled code, over the %lld rows of its batches scored so far%s)",
								 usage.scoring_ms * 1000.0 / usage.timed_rows,
								 (long long) usage.timed_rows,
								 StatsAreServerWide() ? " on this server" : " by this connection"));
		else
			DescribeRow(rsinfo, "microseconds per row",
						"not measured on this host yet: silvan.tune() measures it, and scoring batches of rows does");
	}
	CatalogSqlEnd(&sql);
}

PG_FUNCTION_INFO_V1(silvan_describe);

/* describe(model): (property, value) rows */
Datum
silvan_describe(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ModelVersion *version = ModelCacheLookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	const Forest *forest = version->header;
	int32		sizes[3] = {1, silvan_batch_calls_size, SILVAN_TABLE_BATCH_SIZE};
	const char *uses[3] = {"one call at a time", "batched calls", "table functions"};

	InitMaterializedSRF(fcinfo, 0);
	DescribeCatalog(rsinfo, version);
	DescribeRow(rsinfo, "inputs",
				psprintf(forest->feature_names ?
						 "%d features: an array of them in this order, or a row whose columns are named as they are" :
						 "%d features: an array of them, or a row of them, in this order",
						 forest->num_features));
	for (int32 f = 0; f < forest->num_features; f++)
	{
		const char *name = forest->feature_names ? forest->feature_names[f] : NULL;
		const char *type = forest->feature_types ? forest->feature_types[f] : NULL;

		DescribeRow(rsinfo, psprintf("input %d", f + 1),
					psprintf("%s%s%s%s", name ? name : "(unnamed)", type ? " (" : "",
							 type ? type : "", type ? ")" : ""));
	}
	DescribeRow(rsinfo, "outputs", DescribeOutputs(forest));
	DescribeRow(rsinfo, "machine code", DescribeCode(version));
	for (int i = 0; i < 3; i++)
		DescribeRow(rsinfo, psprintf("schedule, batches of %d (%s)", sizes[i], uses[i]),
					DescribeSchedule(version, sizes[i]));
	DescribeSpeed(rsinfo, version);
	return (Datum) 0;
}
