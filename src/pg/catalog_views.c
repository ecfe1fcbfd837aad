/*
 * catalog_views.c
 *		The rows of the views that show what only the catalog's owner may
 *		read: silvan.schedules, silvan.model_sources, silvan.tuning_jobs.
 *
 * PUBLIC may not read a model's source, its schedules or the tuning queue
 * (security.md), so these views cannot read the tables with the caller's
 * rights; and a view's own rights would not do either: on Citus, a view's
 * owner does not carry into the queries that Citus runs on the placements.
 * So each view reads a function here, which runs as the caller: it reads
 * the rows as the catalog's owner, through this node's copy of the catalog
 * (catalog_sql.c, citus.c: no Citus query at all), and keeps those whose
 * model the caller holds SELECT on (a tuning job: whose owner's privileges
 * the caller has).
 * The caller is the role calling, so a view read inside another role's
 * SECURITY DEFINER function shows that role's rows, as a view would.
 */
#include "silvan_pg.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"

#include "catalog.h"

/* Which rows of a view the caller may see */
typedef enum CatalogViewFilter
{
	VIEW_MODEL_SELECT,			/* SELECT on the row's model (its acl and owner) */
	VIEW_OWNER_PRIVILEGES		/* the privileges of the row's owner (a tuning job's) */
} CatalogViewFilter;

/*
 * Return the rows of query (run as the catalog's owner) that the caller may
 * see: its first columns are the view's, in the function's result type;
 * the last two are the model's acl and owner (VIEW_MODEL_SELECT) or the
 * last one the row's owner (VIEW_OWNER_PRIVILEGES)
 */
static Datum
CatalogViewRows(FunctionCallInfo fcinfo, const char *query, CatalogViewFilter filter)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			natts;
	CatalogSql	sql;
	Oid			caller = GetUserId();
	Datum	   *values;
	bool	   *nulls;

	InitMaterializedSRF(fcinfo, 0);
	natts = rsinfo->setDesc->natts;
	values = palloc(sizeof(Datum) * (natts + 2));
	nulls = palloc(sizeof(bool) * (natts + 2));
	CatalogSqlBegin(&sql);
	CatalogSqlBecomeOwner(&sql);
	CatalogSqlRun(&sql, query, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		visible;

		for (int i = 0; i < desc->natts && i < natts + 2; i++)
			values[i] = SPI_getbinval(tuple, desc, i + 1, &nulls[i]);
		if (filter == VIEW_MODEL_SELECT)
			visible = !nulls[natts + 1] &&
				ModelAclAllows(nulls[natts] ? NULL : DatumGetAclP(values[natts]),
							   DatumGetObjectId(values[natts + 1]), caller, ACL_SELECT);
		else
			visible = !nulls[natts] && has_privs_of_role(caller, DatumGetObjectId(values[natts]));
		if (visible)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	CatalogSqlEnd(&sql);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(silvan_schedule_rows);

/* schedule_rows(): silvan.schedules */
Datum
silvan_schedule_rows(PG_FUNCTION_ARGS)
{
	return CatalogViewRows(fcinfo,
						   "SELECT m.name, s.target, s.batch_size, s.schedule, s.origin, s.provenance,"
						   " s.created, m.version, r.acl, m.owner"
						   " FROM silvan.schedule s"
						   " JOIN silvan.model m ON m.id OPERATOR(pg_catalog.=) s.model_id"
						   " JOIN silvan.registry r ON r.name OPERATOR(pg_catalog.=) m.name",
						   VIEW_MODEL_SELECT);
}

PG_FUNCTION_INFO_V1(silvan_model_source_rows);

/* model_source_rows(): silvan.model_sources */
Datum
silvan_model_source_rows(PG_FUNCTION_ARGS)
{
	return CatalogViewRows(fcinfo,
						   "SELECT m.name, m.version, m.format, m.source, m.source_binary,"
						   " m.source_sha256, r.acl, m.owner"
						   " FROM silvan.model m"
						   " JOIN silvan.registry r ON r.name OPERATOR(pg_catalog.=) m.name",
						   VIEW_MODEL_SELECT);
}

PG_FUNCTION_INFO_V1(silvan_tuning_job_rows);

/*
 * tuning_job_rows(): silvan.tuning_jobs; a running job whose worker is gone
 * shows as failed
 */
Datum
silvan_tuning_job_rows(PG_FUNCTION_ARGS)
{
	return CatalogViewRows(fcinfo,
						   "SELECT j.id, m.name, j.owner,"
						   " CASE WHEN j.state OPERATOR(pg_catalog.=) 'running' AND NOT a.alive"
						   "  THEN 'failed' ELSE j.state END,"
						   " j.phase, j.batch_size, j.candidates_done, j.candidates_planned,"
						   " j.best_us_per_row, j.default_us_per_row,"
						   " CASE WHEN j.state OPERATOR(pg_catalog.=) 'running' AND NOT a.alive"
						   "  THEN 'the tuning worker exited before finishing the job' ELSE j.error END,"
						   " j.result, j.batch_sizes, j.strategy, j.budget, j.exact,"
						   " j.created, j.started, j.finished, m.version, j.owner::pg_catalog.oid"
						   " FROM silvan.tuning_job j"
						   " JOIN silvan.model m ON m.id OPERATOR(pg_catalog.=) j.model_id,"
						   " LATERAL (SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity s"
						   "   WHERE s.pid OPERATOR(pg_catalog.=) j.worker_pid"
						   "   AND s.backend_type OPERATOR(pg_catalog.=) 'silvan tuning worker') AS alive) a"
						   " ORDER BY j.id",
						   VIEW_OWNER_PRIVILEGES);
}
