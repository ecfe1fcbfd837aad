/*
 * citus.c
 *		silvan's catalog on a Citus cluster: read through this node's
 *		placement of the reference tables.
 *
 * silvan.distribute() (sql/silvan.sql) makes the catalog tables that
 * scoring reads (registry, model, model_alias, schedule, profile) Citus
 * reference tables: every write on the coordinator reaches every node in
 * the same distributed transaction (two-phase commit), and each node holds
 * a whole copy, its placement, in a table of the silvan schema named after
 * the shard (silvan.model_102009).  Citus never links here: it is found by
 * its metadata table, pg_dist_partition, and read as a table.
 *
 * After the conversion the tables of the extension (the shells) are not
 * where the rows are.  On the coordinator a shell kept its rows as they
 * were (silvan.distribute() truncates them), and a read of a shell goes
 * through Citus' planner, which refuses to run inside a shard's query on a
 * worker ("cannot execute a distributed query from a query on a shard",
 * citus issue 5887): predict() called in a pushed-down query is exactly
 * that.  So silvan reads its catalog through the placement on this node:
 * catalog_read.c opens the placement's relation, and catalog_sql.c rewrites
 * the tables a plain read names (CatalogLocalQuery).  Reads that lock what
 * they will write (FOR UPDATE, the coordinator's writers) and every write
 * still name the shells, so that Citus replicates them.
 *
 * The statement triggers of the catalog are copied to every placement by
 * Citus, so a write invalidates the models of each node's backends at the
 * commit of its part of the transaction.
 *
 * The map from tables to placements is kept per backend and dropped at
 * any relcache invalidation (Citus sends one for a table whose metadata
 * changes).  A node that lacks a placement (added after the models were
 * distributed, before the reference tables were copied to it) says so.
 */
#include "silvan_pg.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* The catalog tables silvan.distribute() makes reference tables */
static const char *const distributed_tables[] = {
	"registry", "model", "model_alias", "schedule", "profile"
};

#define NUM_DISTRIBUTED_TABLES lengthof(distributed_tables)

/* Where this node keeps one catalog table's rows */
typedef struct CatalogPlacement
{
	int64		shard_id;		/* 0: not a Citus table here */
	Oid			placement;		/* relation of the placement; InvalidOid: none */
} CatalogPlacement;

static bool placements_valid = false;
static bool placements_any = false;	/* some table is a Citus table */
static CatalogPlacement placements[NUM_DISTRIBUTED_TABLES];

/* Drop the map at any relcache invalidation */
static void
CatalogPlacementsInvalidate(Datum arg, Oid relid)
{
	placements_valid = false;
}

/* Register for invalidations (at the library's load) */
void
CatalogPlacementsInit(void)
{
	CacheRegisterRelcacheCallback(CatalogPlacementsInvalidate, (Datum) 0);
}

/* The first value of column "column" in Citus' metadata table "metadata" for relation relid; 0 if none */
static int64
CitusMetadataValue(const char *metadata, Oid relid, const char *column)
{
	Oid			metadata_relid = get_relname_relid(metadata, PG_CATALOG_NAMESPACE);
	Relation	rel;
	AttrNumber	key;
	AttrNumber	attnum;
	ScanKeyData scan_key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int64		value = 0;

	if (!OidIsValid(metadata_relid))
		return 0;
	rel = table_open(metadata_relid, AccessShareLock);
	key = get_attnum(metadata_relid, "logicalrelid");
	attnum = get_attnum(metadata_relid, column);
	if (key != InvalidAttrNumber && attnum != InvalidAttrNumber)
	{
		ScanKeyInit(&scan_key, key, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
		scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &scan_key);
		if (HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			bool		isnull;
			Datum		datum = heap_getattr(tuple, attnum, RelationGetDescr(rel), &isnull);

			if (!isnull)
				value = TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid == INT8OID ?
					DatumGetInt64(datum) : (int64) DatumGetChar(datum);
		}
		systable_endscan(scan);
	}
	table_close(rel, AccessShareLock);
	return value;
}

/* Fill the map: each catalog table's shard and this node's placement of it */
static void
CatalogPlacementsLoad(void)
{
	Oid			nsp = get_namespace_oid("silvan", true);

	placements_any = false;
	memset(placements, 0, sizeof(placements));
	/* without Citus' metadata (no Citus in this database) nothing is distributed */
	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
	{
		placements_valid = true;
		return;
	}
	for (int i = 0; i < (int) NUM_DISTRIBUTED_TABLES; i++)
	{
		Oid			shell = OidIsValid(nsp) ? get_relname_relid(distributed_tables[i], nsp) : InvalidOid;
		CatalogPlacement *p = &placements[i];

		if (!OidIsValid(shell) ||
			CitusMetadataValue("pg_dist_partition", shell, "partmethod") == 0)
			continue;
		p->shard_id = CitusMetadataValue("pg_dist_shard", shell, "shardid");
		if (p->shard_id > 0)
			p->placement = get_relname_relid(psprintf("%s_" INT64_FORMAT, distributed_tables[i],
													  p->shard_id), nsp);
		placements_any = true;
	}
	placements_valid = true;
}

/* The placement of table i, or an error saying that this node lacks it */
static Oid
CatalogPlacementOf(int i)
{
	if (!OidIsValid(placements[i].placement))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("silvan's catalog has no copy on this node"),
				 errdetail("silvan.%s is a Citus reference table (shard " INT64_FORMAT
						   ") with no placement on this node.",
						   distributed_tables[i], placements[i].shard_id),
				 errhint("Run SELECT silvan.distribute() on the coordinator: it copies the models to every node.")));
	return placements[i].placement;
}

/* Whether silvan's catalog is made of Citus reference tables on this node */
bool
CatalogDistributed(void)
{
	if (!placements_valid)
		CatalogPlacementsLoad();
	return placements_any;
}

/* The relation a plain read of silvan.relname reads on this node: its placement, or the table */
Oid
SilvanCatalogReadRelid(const char *relname)
{
	if (CatalogDistributed())
		for (int i = 0; i < (int) NUM_DISTRIBUTED_TABLES; i++)
			if (strcmp(relname, distributed_tables[i]) == 0 && placements[i].shard_id > 0)
				return CatalogPlacementOf(i);
	return SilvanCatalogRelid(relname);
}

/* Whether c can continue an SQL identifier */
static inline bool
IdentifierChar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '_' || c == '$';
}

/*
 * query with every "silvan.<table>" of a distributed catalog table
 * replaced by this node's placement of it; query itself when the catalog
 * is not distributed.  silvan's own statements name each table so, with
 * its schema.
 */
const char *
CatalogLocalQuery(const char *query)
{
	StringInfoData out;
	const char *p = query;

	if (!CatalogDistributed())
		return query;
	initStringInfo(&out);
	while (*p)
	{
		bool		replaced = false;

		if (strncmp(p, "silvan.", 7) == 0 && (p == query || !IdentifierChar(p[-1])))
			for (int i = 0; i < (int) NUM_DISTRIBUTED_TABLES; i++)
			{
				size_t		len = strlen(distributed_tables[i]);

				if (placements[i].shard_id > 0 &&
					strncmp(p + 7, distributed_tables[i], len) == 0 && !IdentifierChar(p[7 + len]))
				{
					appendStringInfo(&out, "silvan.%s",
									 quote_identifier(get_rel_name(CatalogPlacementOf(i))));
					p += 7 + len;
					replaced = true;
					break;
				}
			}
		if (!replaced)
			appendStringInfoChar(&out, *p++);
	}
	return out.data;
}

/* Whether relid is a table Citus distributes by a column (not a reference or local table) */
bool
CitusDistributedTable(Oid relid)
{
	char		method = (char) CitusMetadataValue("pg_dist_partition", relid, "partmethod");

	return method != 0 && method != 'n';
}
