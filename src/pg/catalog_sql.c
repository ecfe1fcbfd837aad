/*
 * catalog_sql.c
 *		Running silvan's own SQL on the catalog: under a locked search_path,
 *		as the caller or as the catalog's owner.
 *
 * Writes to silvan.model, silvan.schedule and silvan.profile happen as the
 * owner of those tables (the role that created the extension, usually a
 * superuser), after the caller's rights were checked.  Any name that such
 * a statement resolves through search_path is a way for the caller to run
 * code as the owner: a function, operator or type of the caller's making
 * that shadows or better matches a built-in one (the class of
 * CVE-2018-1058).  So every statement here runs under search_path
 * "pg_catalog, pg_temp", set at a new GUC nest level and undone at the end
 * (or, on an error, by the transaction's or subtransaction's abort), and
 * names every table, function, operator and type with its schema, as
 * PostgreSQL's own RI triggers do.  Reads of the catalog by the model
 * cache run the same way, as the caller.
 *
 * The owner's identity is taken with SECURITY_LOCAL_USERID_CHANGE and
 * SECURITY_RESTRICTED_OPERATION, as PostgreSQL does for maintenance code
 * that runs as a table's owner; the abort of the (sub)transaction restores
 * the caller's identity after an error.
 */
#include "silvan_pg.h"

#include "access/table.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/rel.h"

/* The search_path of every statement silvan runs on its catalog */
#define CATALOG_SEARCH_PATH "pg_catalog, pg_temp"

/* Connect to SPI and lock search_path, as the caller */
void
CatalogSqlBegin(CatalogSql *sql)
{
	memset(sql, 0, sizeof(CatalogSql));
	GetUserIdAndSecContext(&sql->saved_user, &sql->saved_context);
	sql->caller = sql->saved_user;
	SPI_connect();
	sql->guc_nest = NewGUCNestLevel();
	(void) set_config_option("search_path", CATALOG_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
}

/* The role that owns the catalog tables */
Oid
CatalogOwner(void)
{
	Relation	rel = table_open(SilvanCatalogRelid("model"), AccessShareLock);
	Oid			owner = rel->rd_rel->relowner;

	table_close(rel, AccessShareLock);
	return owner;
}

/* From here on, run as the catalog's owner (the caller's rights checked before) */
void
CatalogSqlBecomeOwner(CatalogSql *sql)
{
	SetUserIdAndSecContext(CatalogOwner(),
						   sql->saved_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	sql->as_owner = true;
}

/* Return to the caller's identity and search_path, and leave SPI */
void
CatalogSqlEnd(CatalogSql *sql)
{
	if (sql->as_owner)
		SetUserIdAndSecContext(sql->saved_user, sql->saved_context);
	sql->as_owner = false;
	AtEOXact_GUC(true, sql->guc_nest);
	SPI_finish();
}

/*
 * Run one statement with parameters (nulls as SPI takes them: 'n' for NULL,
 * or NULL for none); error unless SPI answers expected.  As the caller,
 * statements only read, in the snapshot of the calling query; as the
 * owner they write (or lock what they will write).  A plain read reads
 * this node's copy of a catalog distributed by Citus (citus.c); writes and
 * reads that lock (FOR UPDATE) name the tables Citus replicates.
 */
void
CatalogSqlRun(const CatalogSql *sql, const char *query, int nargs, Oid *argtypes,
			  Datum *args, const char *nulls, int expected)
{
	int			ret;

	if (expected == SPI_OK_SELECT && strstr(query, " FOR UPDATE") == NULL)
		query = CatalogLocalQuery(query);
	ret = SPI_execute_with_args(query, nargs, argtypes, args, nulls, !sql->as_owner, 0);

	if (ret != expected)
		elog(ERROR, "could not run a statement on the silvan catalog: %s",
			 SPI_result_code_string(ret));
}
