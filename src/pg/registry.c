/*
 * registry.c
 *		A model's versions: which one is deployed, rolling back, aliases,
 *		renaming, each version's description and metadata, and dropping a
 *		model or one version.
 *
 * silvan.registry has one row per model name: the deployed version, the
 * versions deployed before it (rollback_to, a stack) and the highest
 * number given out.  That row is the lock of everything that concerns the
 * name as a whole (a load of a new version, a deploy, a rollback, an
 * alias, a rename, a drop), taken FOR UPDATE in the steps catalog.c
 * describes: check as the caller, become the catalog's owner, lock, check
 * again.  What concerns one version (its schedules, profile, metadata)
 * locks that version's row of silvan.model instead.
 *
 * The deployed version always exists: a deploy names one that exists (its
 * row locked), and the deployed version cannot be dropped alone.  A
 * rollback returns to the most recent version on the stack that still
 * exists and is not the deployed one, and pops what it passed.
 */
#include "silvan_pg.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "catalog.h"

/*
 * Read a name's row of the registry with the model's owner (locked FOR
 * UPDATE when running as the catalog's owner); false when absent
 */
bool
RegistryFind(const CatalogSql *sql, const char *name, RegistryName *entry)
{
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);
	bool		isnull;
	HeapTuple	tuple;
	TupleDesc	desc;
	Datum		owner;

	CatalogSqlRun(sql, sql->as_owner ?
				  "SELECT r.version, r.last_version, (SELECT m.owner::pg_catalog.oid FROM silvan.model m"
				  "  WHERE m.name OPERATOR(pg_catalog.=) r.name ORDER BY m.version LIMIT 1), r.acl"
				  " FROM silvan.registry r WHERE r.name OPERATOR(pg_catalog.=) $1 FOR UPDATE OF r" :
				  "SELECT r.version, r.last_version, (SELECT m.owner::pg_catalog.oid FROM silvan.model m"
				  "  WHERE m.name OPERATOR(pg_catalog.=) r.name ORDER BY m.version LIMIT 1), r.acl"
				  " FROM silvan.registry r WHERE r.name OPERATOR(pg_catalog.=) $1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	entry->deployed = DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull));
	entry->last_version = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
	owner = SPI_getbinval(tuple, desc, 3, &isnull);
	entry->owner = isnull ? InvalidOid : DatumGetObjectId(owner);
	owner = SPI_getbinval(tuple, desc, 4, &isnull);
	entry->acl = isnull ? NULL : DatumGetAclPCopy(owner);
	return true;
}

/*
 * For a name that must exist: check as the caller that it holds need on
 * the model (ACL_NO_RIGHTS: that it has the owner's rights), become the
 * catalog's owner, lock the name's row and check again
 */
void
RegistryTake(CatalogSql *sql, const char *name, RegistryName *entry, AclMode need)
{
	if (!RegistryFind(sql, name, entry))
		CatalogReportNoModel(name);
	CatalogCheckPrivilege(sql->caller, entry->owner, entry->acl, need, name);
	CatalogSqlBecomeOwner(sql);
	if (!RegistryFind(sql, name, entry))
		CatalogReportConcurrentChange(name);
	CatalogCheckPrivilege(sql->caller, entry->owner, entry->acl, need, name);
}

/* As the owner: a new name's row, version 1 deployed; false when another session has the name */
bool
RegistryInsert(const CatalogSql *sql, const char *name)
{
	Oid			argtypes[2] = {TEXTOID, REGROLEOID};
	Datum		args[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(sql->caller)};

	Assert(sql->as_owner);
	CatalogSqlRun(sql, "INSERT INTO silvan.registry (name, version, last_version, deployed_by)"
				  " VALUES ($1, 1, 1, $2) ON CONFLICT (name) DO NOTHING RETURNING name",
				  2, argtypes, args, NULL, SPI_OK_INSERT_RETURNING);
	return SPI_processed == 1;
}

/* Record a version just loaded under a locked name, and deploy it if asked */
void
RegistryAddVersion(const CatalogSql *sql, const char *name, int32 version, bool deploy)
{
	Oid			argtypes[3] = {TEXTOID, INT4OID, REGROLEOID};
	Datum		args[3] = {CStringGetTextDatum(name), Int32GetDatum(version),
	ObjectIdGetDatum(sql->caller)};

	Assert(sql->as_owner);
	CatalogSqlRun(sql, deploy ?
				  "UPDATE silvan.registry SET last_version = $2, version = $2,"
				  " rollback_to = rollback_to OPERATOR(pg_catalog.||) version,"
				  " deployed = pg_catalog.now(), deployed_by = $3"
				  " WHERE name OPERATOR(pg_catalog.=) $1" :
				  "UPDATE silvan.registry SET last_version = $2 WHERE name OPERATOR(pg_catalog.=) $1",
				  deploy ? 3 : 2, argtypes, args, NULL, SPI_OK_UPDATE);
}

/* Error unless the catalog has versions (what registry.c and privileges.c do comes with them) */
void
RegistryRequireVersions(void)
{
	if (!CatalogHasVersions())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("silvan's catalog has no model versions yet"),
				 errhint("Run ALTER EXTENSION silvan UPDATE.")));
}

/* Parse a reference that must name a model; an error otherwise */
static void
ParseReference(const char	   *reference, ModelRef *ref)
{
	if (!ModelRefParse(reference, ref))
		CatalogReportNoModel(reference);
}

/* Error unless a reference is a model's name alone */
static void
RequireName(const ModelRef *ref, const char	   *reference, const char *why)
{
	if (ref->kind != MODEL_REF_DEPLOYED)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"model\" must be a model's name"),
				 errdetail("It is \"%s\", a version of model \"%s\"; %s.", reference, ref->name, why)));
}

/* As the owner, under the name's lock: point the registry at version (a deploy or a rollback) */
static void
RegistrySetDeployed(const CatalogSql *sql, const char *name, int32 version,
					ArrayType *rollback_to)
{
	Oid			argtypes[4] = {TEXTOID, INT4OID, REGROLEOID, INT4ARRAYOID};
	Datum		args[4] = {CStringGetTextDatum(name), Int32GetDatum(version),
	ObjectIdGetDatum(sql->caller), PointerGetDatum(rollback_to)};

	CatalogSqlRun(sql, rollback_to == NULL ?
				  "UPDATE silvan.registry SET version = $2,"
				  " rollback_to = rollback_to OPERATOR(pg_catalog.||) version,"
				  " deployed = pg_catalog.now(), deployed_by = $3"
				  " WHERE name OPERATOR(pg_catalog.=) $1" :
				  "UPDATE silvan.registry SET version = $2, rollback_to = $4,"
				  " deployed = pg_catalog.now(), deployed_by = $3"
				  " WHERE name OPERATOR(pg_catalog.=) $1",
				  rollback_to == NULL ? 3 : 4, argtypes, args, NULL, SPI_OK_UPDATE);
}

PG_FUNCTION_INFO_V1(silvan_deploy);

/*
 * deploy(model, version): deploy version of the model named, or with
 * version NULL the version the reference names ('churn@candidate');
 * returns it.  Deploying the deployed version changes nothing.
 */
Datum
silvan_deploy(PG_FUNCTION_ARGS)
{
	char	   *reference;
	ModelRef	ref;
	CatalogSql	sql;
	RegistryName entry;
	CatalogModel model;
	char	   *target;

	RegistryRequireVersions();
	CatalogRequireArgument(fcinfo, 0, "model");
	reference = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ParseReference(reference, &ref);
	if (!PG_ARGISNULL(1))
	{
		RequireName(&ref, reference, "pass either a version or a reference to one");
		target = psprintf("%s@%d", ref.name, PG_GETARG_INT32(1));
		if (PG_GETARG_INT32(1) < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid model version %d", PG_GETARG_INT32(1)),
					 errdetail("Argument \"version\" must be a version's number, from 1.")));
	}
	else if (ref.kind == MODEL_REF_DEPLOYED)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no version to deploy"),
				 errdetail("Argument \"version\" is null and argument \"model\" is a name, \"%s\".", reference),
				 errhint("Pass a version, as deploy('%s', 2), or a reference to one, as deploy('%s@candidate').",
						 ref.name, ref.name)));
	else
		target = reference;
	CatalogSqlBegin(&sql);
	RegistryTake(&sql, ref.name, &entry, ACL_UPDATE);
	if (!CatalogFindModel(&sql, target, &model))
		CatalogReportNoModel(target);
	if (model.version != entry.deployed)
		RegistrySetDeployed(&sql, ref.name, model.version, NULL);
	CatalogSqlEnd(&sql);
	PG_RETURN_INT32(model.version);
}

/*
 * Under the name's lock: the rollback stack of a name and its versions;
 * the version to return to (0: none) and the stack without it and what
 * came after it
 */
static int32
RollbackTarget(const CatalogSql *sql, const char *name, int32 deployed, ArrayType **rest)
{
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);
	bool		isnull;
	Datum	   *stack,
			   *versions;
	int			num_stack,
				num_versions;

	CatalogSqlRun(sql, "SELECT r.rollback_to, ARRAY(SELECT m.version FROM silvan.model m"
				  "  WHERE m.name OPERATOR(pg_catalog.=) r.name)"
				  " FROM silvan.registry r WHERE r.name OPERATOR(pg_catalog.=) $1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)),
					  INT4OID, 4, true, TYPALIGN_INT, &stack, NULL, &num_stack);
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)),
					  INT4OID, 4, true, TYPALIGN_INT, &versions, NULL, &num_versions);
	for (int i = num_stack - 1; i >= 0; i--)
	{
		int32		candidate = DatumGetInt32(stack[i]);

		if (candidate == deployed)
			continue;
		for (int v = 0; v < num_versions; v++)
			if (DatumGetInt32(versions[v]) == candidate)
			{
				*rest = construct_array(stack, i, INT4OID, 4, true, TYPALIGN_INT);
				return candidate;
			}
	}
	return 0;
}

PG_FUNCTION_INFO_V1(silvan_rollback);

/* rollback(model): deploy again the version deployed before the current one; returns it */
Datum
silvan_rollback(PG_FUNCTION_ARGS)
{
	char	   *reference = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ModelRef	ref;
	CatalogSql	sql;
	RegistryName entry;
	ArrayType  *rest = NULL;
	int32		target;

	RegistryRequireVersions();
	ParseReference(reference, &ref);
	RequireName(&ref, reference, "rollback() returns a model to the version deployed before");
	CatalogSqlBegin(&sql);
	RegistryTake(&sql, ref.name, &entry, ACL_UPDATE);
	target = RollbackTarget(&sql, ref.name, entry.deployed, &rest);
	if (target == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" has no earlier deployment to roll back to", ref.name),
				 errdetail("Version %d is deployed; no other version that still exists was deployed before it.",
						   entry.deployed),
				 errhint("Deploy a version with silvan.deploy().")));
	RegistrySetDeployed(&sql, ref.name, target, rest);
	CatalogSqlEnd(&sql);
	PG_RETURN_INT32(target);
}

PG_FUNCTION_INFO_V1(silvan_set_alias);

/*
 * set_alias(model, alias, version): name a version with an alias, or with
 * version NULL remove the alias; true when anything changed
 */
Datum
silvan_set_alias(PG_FUNCTION_ARGS)
{
	char	   *reference;
	char	   *alias;
	ModelRef	ref;
	CatalogSql	sql;
	RegistryName entry;
	CatalogModel model;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		args[3];
	bool		changed;

	RegistryRequireVersions();
	CatalogRequireArgument(fcinfo, 0, "model");
	CatalogRequireArgument(fcinfo, 1, "alias");
	reference = text_to_cstring(PG_GETARG_TEXT_PP(0));
	alias = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ParseReference(reference, &ref);
	RequireName(&ref, reference, "set_alias() takes the version as its own argument");
	if (!ModelAliasValid(alias) || strcmp(alias, "latest") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid alias \"%s\"", alias),
				 errdetail("Argument \"alias\" must be a letter or an underscore, then letters, digits and underscores, at most %d bytes, and not \"latest\".",
						   NAMEDATALEN - 1)));
	CatalogSqlBegin(&sql);
	RegistryTake(&sql, ref.name, &entry, ACL_UPDATE);
	args[0] = CStringGetTextDatum(ref.name);
	args[1] = CStringGetTextDatum(alias);
	if (PG_ARGISNULL(2))
	{
		CatalogSqlRun(&sql, "DELETE FROM silvan.model_alias WHERE name OPERATOR(pg_catalog.=) $1"
					  " AND alias OPERATOR(pg_catalog.=) $2",
					  2, argtypes, args, NULL, SPI_OK_DELETE);
		changed = SPI_processed > 0;
	}
	else
	{
		char	   *target = psprintf("%s@%d", ref.name, PG_GETARG_INT32(2));

		if (PG_GETARG_INT32(2) < 1 || !CatalogFindModel(&sql, target, &model))
			CatalogReportNoModel(target);
		args[2] = Int32GetDatum(model.version);
		/* excluded.created, not now(): Citus takes only IMMUTABLE functions there */
		CatalogSqlRun(&sql, "INSERT INTO silvan.model_alias AS a (name, alias, version, created)"
					  " VALUES ($1, $2, $3, pg_catalog.now()) ON CONFLICT (name, alias) DO UPDATE"
					  " SET version = excluded.version, created = excluded.created"
					  " WHERE a.version OPERATOR(pg_catalog.<>) excluded.version RETURNING 1",
					  3, argtypes, args, NULL, SPI_OK_INSERT_RETURNING);
		changed = SPI_processed > 0;
	}
	CatalogSqlEnd(&sql);
	PG_RETURN_BOOL(changed);
}

PG_FUNCTION_INFO_V1(silvan_rename_model);

/* rename_model(name, new_name): the registry's row renamed, and through its keys every version and alias */
Datum
silvan_rename_model(PG_FUNCTION_ARGS)
{
	char	   *reference = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *new_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ModelRef	ref;
	CatalogSql	sql;
	RegistryName entry;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];

	RegistryRequireVersions();
	ParseReference(reference, &ref);
	RequireName(&ref, reference, "a rename renames every version");
	CatalogCheckNewName(new_name, "new_name");
	CatalogSqlBegin(&sql);
	RegistryTake(&sql, ref.name, &entry, ACL_NO_RIGHTS);
	if (RegistryFind(&sql, new_name, &entry))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", new_name),
				 errdetail("Argument \"new_name\" names a model that exists.")));
	args[0] = CStringGetTextDatum(ref.name);
	args[1] = CStringGetTextDatum(new_name);
	/* the foreign keys cascade, where the catalog has them (not on Citus) */
	CatalogSqlRun(&sql, "UPDATE silvan.registry SET name = $2 WHERE name OPERATOR(pg_catalog.=) $1",
				  2, argtypes, args, NULL, SPI_OK_UPDATE);
	CatalogSqlRun(&sql, "UPDATE silvan.model SET name = $2 WHERE name OPERATOR(pg_catalog.=) $1",
				  2, argtypes, args, NULL, SPI_OK_UPDATE);
	CatalogSqlRun(&sql, "UPDATE silvan.model_alias SET name = $2 WHERE name OPERATOR(pg_catalog.=) $1",
				  2, argtypes, args, NULL, SPI_OK_UPDATE);
	CatalogSqlEnd(&sql);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(silvan_set_metadata);

/* set_metadata(model, description, metadata): a version's description and metadata; NULL keeps them */
Datum
silvan_set_metadata(PG_FUNCTION_ARGS)
{
	CatalogSql	sql;
	CatalogModel model;
	Oid			argtypes[3] = {INT8OID, TEXTOID, JSONBOID};
	Datum		args[3];
	char		nulls[4] = "   ";

	RegistryRequireVersions();
	CatalogRequireArgument(fcinfo, 0, "model");
	CatalogSqlBegin(&sql);
	CatalogTakeModel(&sql, text_to_cstring(PG_GETARG_TEXT_PP(0)), &model);
	args[0] = Int64GetDatum(model.id);
	args[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	nulls[1] = PG_ARGISNULL(1) ? 'n' : ' ';
	args[2] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
	nulls[2] = PG_ARGISNULL(2) ? 'n' : ' ';
	CatalogSqlRun(&sql, "UPDATE silvan.model SET description = COALESCE($2, description),"
				  " metadata = COALESCE($3, metadata) WHERE id OPERATOR(pg_catalog.=) $1",
				  3, argtypes, args, nulls, SPI_OK_UPDATE);
	CatalogSqlEnd(&sql);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(silvan_model_version);

/* model_version(model): the version a reference scores with, as the scoring functions read it */
Datum
silvan_model_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(ModelCacheLookup(text_to_cstring(PG_GETARG_TEXT_PP(0)))->number);
}

/*
 * Delete one version of a model (id, name, version) with every row that
 * belongs to it: its schedules, profile, tuning jobs and aliases.  The
 * catalog's foreign keys would cascade, but a catalog that Citus
 * distributes has none (silvan.distribute()), so silvan deletes them.
 */
static void
RegistryDeleteVersion(const CatalogSql *sql, int64 id, const char *name, int32 version)
{
	static const char *const by_id[] = {
		"DELETE FROM silvan.schedule WHERE model_id OPERATOR(pg_catalog.=) $1",
		"DELETE FROM silvan.profile WHERE model_id OPERATOR(pg_catalog.=) $1",
		"DELETE FROM silvan.tuning_job WHERE model_id OPERATOR(pg_catalog.=) $1",
	};
	Oid			argtypes[3] = {INT8OID, TEXTOID, INT4OID};
	Datum		args[3];

	args[0] = Int64GetDatum(id);
	args[1] = CStringGetTextDatum(name);
	args[2] = Int32GetDatum(version);
	for (int i = 0; i < (int) lengthof(by_id); i++)
		CatalogSqlRun(sql, by_id[i], 1, argtypes, args, NULL, SPI_OK_DELETE);
	CatalogSqlRun(sql, "DELETE FROM silvan.model_alias WHERE name OPERATOR(pg_catalog.=) $2"
				  " AND version OPERATOR(pg_catalog.=) $3", 3, argtypes, args, NULL, SPI_OK_DELETE);
	CatalogSqlRun(sql, "DELETE FROM silvan.model WHERE id OPERATOR(pg_catalog.=) $1",
				  1, argtypes, args, NULL, SPI_OK_DELETE);
}

/* Delete every version of a model, then its registry row */
static void
RegistryDeleteModel(const CatalogSql *sql, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	uint64		n;
	int64	   *ids;
	int32	   *versions;
	bool		isnull;

	args[0] = CStringGetTextDatum(name);
	CatalogSqlRun(sql, "SELECT id, version FROM silvan.model WHERE name OPERATOR(pg_catalog.=) $1",
				  1, argtypes, args, NULL, SPI_OK_SELECT);
	n = SPI_processed;
	ids = palloc(sizeof(int64) * (n + 1));
	versions = palloc(sizeof(int32) * (n + 1));
	for (uint64 i = 0; i < n; i++)
	{
		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		versions[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}
	for (uint64 i = 0; i < n; i++)
		RegistryDeleteVersion(sql, ids[i], name, versions[i]);
	CatalogSqlRun(sql, "DELETE FROM silvan.registry WHERE name OPERATOR(pg_catalog.=) $1",
				  1, argtypes, args, NULL, SPI_OK_DELETE);
}

/*
 * drop_model's work: a model with every version ('churn'), or one version
 * that is not the deployed one ('churn@2'); false when there was none
 */
bool
RegistryDrop(CatalogSql *sql, const char *reference)
{
	ModelRef	ref;
	RegistryName entry;
	CatalogModel model;
	AclMode		need;

	if (!ModelRefParse(reference, &ref) || !RegistryFind(sql, ref.name, &entry))
		return false;
	if (ref.kind != MODEL_REF_DEPLOYED && !CatalogFindModel(sql, reference, &model))
		return false;
	/* a version is dropped with UPDATE on the model, the model by its owner */
	need = ref.kind == MODEL_REF_DEPLOYED ? ACL_NO_RIGHTS : ACL_UPDATE;
	CatalogCheckPrivilege(sql->caller, entry.owner, entry.acl, need, ref.name);
	CatalogSqlBecomeOwner(sql);
	if (!RegistryFind(sql, ref.name, &entry))
		return false;
	CatalogCheckPrivilege(sql->caller, entry.owner, entry.acl, need, ref.name);
	if (ref.kind == MODEL_REF_DEPLOYED)
	{
		RegistryDeleteModel(sql, ref.name);
		return true;
	}
	if (!CatalogFindModel(sql, reference, &model))
		return false;
	if (model.version == entry.deployed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot drop version %d of model \"%s\": it is deployed", model.version, ref.name),
				 errhint("Deploy another version first, or drop the whole model with silvan.drop_model('%s').",
						 ref.name)));
	RegistryDeleteVersion(sql, model.id, ref.name, model.version);
	return true;
}
