/*
 * privileges.c
 *		Privileges on models: USAGE (score with any version, describe it),
 *		SELECT (read its source, schedules and profiles, explain it) and
 *		UPDATE (load versions, deploy, roll back, set aliases, metadata and
 *		schedules, profile, tune, drop versions; and score, as tuning and
 *		profiling do), granted with silvan.grant() and silvan.revoke().
 *
 * A model's privileges are an aclitem[] in its registry row, so
 * PostgreSQL's own aclmask() decides, role membership included; NULL or
 * empty means no role but the owner's.  The owner, the roles with its
 * privileges, superusers (and, for a model whose owner role was dropped,
 * the database's owner) hold every privilege, and alone may rename or drop
 * the model and grant on it.  Each item's grantor is the model's owner;
 * editing the array matches items by grantee, so that a grant always
 * meets the item it adds to.  A model of a catalog older than 0.11.0 has no
 * registry row: everyone may score with it and read it, as then.
 *
 * PostgreSQL does not know of these grants (pg_shdepend): revoking a
 * role's privileges on models is part of dropping it.
 */
#include "silvan_pg.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "catalog.h"

#define MODEL_PRIVILEGES (ACL_USAGE | ACL_SELECT | ACL_UPDATE)

/* The privileges a comma-separated list names: usage, select, update, all */
AclMode
ModelPrivilegesParse(const char *text, const char *argname)
{
	char	   *copy = pstrdup(text);
	char	   *token;
	char	   *save = NULL;
	AclMode		mode = ACL_NO_RIGHTS;

	for (token = strtok_r(copy, ",", &save); token; token = strtok_r(NULL, ",", &save))
	{
		char	   *word = token;
		char	   *end;

		while (*word == ' ' || *word == '\t')
			word++;
		end = word + strlen(word);
		while (end > word && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (pg_strcasecmp(word, "usage") == 0)
			mode |= ACL_USAGE;
		else if (pg_strcasecmp(word, "select") == 0)
			mode |= ACL_SELECT;
		else if (pg_strcasecmp(word, "update") == 0)
			mode |= ACL_UPDATE;
		else if (pg_strcasecmp(word, "all") == 0 || pg_strcasecmp(word, "all privileges") == 0)
			mode |= MODEL_PRIVILEGES;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown model privilege \"%s\"", word),
					 errdetail("Argument \"%s\" must list usage, select, update or all, separated by commas.",
							   argname)));
	}
	if (mode == ACL_NO_RIGHTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no model privilege given"),
				 errdetail("Argument \"%s\" must list usage, select, update or all, separated by commas.",
						   argname)));
	return mode;
}

/*
 * Does role hold any of mask on a model of this acl (NULL: none granted)
 * and owner?
 */
bool
ModelAclAllows(const Acl *acl, Oid owner, Oid role, AclMode mask)
{
	if (CatalogMayManage(role, owner))
		return true;
	return acl != NULL && aclmask(acl, role, owner, mask, ACLMASK_ANY) != 0;
}

/* An acl array of n items (as acl.c's allocacl) */
static Acl *
AclOfItems(const AclItem *items, int n)
{
	Acl		   *acl;

	if (n == 0)
		return make_empty_acl();
	acl = (Acl *) palloc0(ACL_N_SIZE(n));
	SET_VARSIZE(acl, ACL_N_SIZE(n));
	acl->ndim = 1;
	acl->dataoffset = 0;
	acl->elemtype = ACLITEMOID;
	ARR_LBOUND(acl)[0] = 1;
	ARR_DIMS(acl)[0] = n;
	memcpy(ACL_DAT(acl), items, sizeof(AclItem) * n);
	return acl;
}

/*
 * An acl with privileges added to grantee's item (grant) or taken from it;
 * items left without privileges go
 */
static Acl *
AclEdit(const Acl *old, Oid grantee, Oid grantor, AclMode privileges, bool grant)
{
	int			n = old ? ACL_NUM(old) : 0;
	AclItem    *items = palloc(sizeof(AclItem) * (n + 1));
	int			kept = 0;
	bool		found = false;

	for (int i = 0; i < n; i++)
	{
		AclItem		item = ACL_DAT(old)[i];

		if (item.ai_grantee == grantee)
		{
			AclMode		privs = ACLITEM_GET_PRIVS(item);

			privs = grant ? (privs | privileges) : (privs & ~privileges);
			item.ai_grantor = grantor;
			ACLITEM_SET_PRIVS_GOPTIONS(item, privs, ACL_NO_RIGHTS);
			found = true;
		}
		if (ACLITEM_GET_PRIVS(item) != ACL_NO_RIGHTS)
			items[kept++] = item;
	}
	if (!found && grant)
	{
		AclItem		item;

		item.ai_grantee = grantee;
		item.ai_grantor = grantor;
		ACLITEM_SET_PRIVS_GOPTIONS(item, privileges, ACL_NO_RIGHTS);
		items[kept++] = item;
	}
	return AclOfItems(items, kept);
}

/* The role a grant names: PUBLIC (ACL_ID_PUBLIC) or a role that exists */
static Oid
GranteeOf(const char *role)
{
	if (pg_strcasecmp(role, "public") == 0)
		return ACL_ID_PUBLIC;
	return get_role_oid(role, false);
}

/* grant() and revoke(): the model's owner edits its registry row's acl */
static void
ModelGrant(FunctionCallInfo fcinfo, bool grant)
{
	char	   *reference;
	ModelRef	ref;
	CatalogSql	sql;
	RegistryName entry;
	AclMode		privileges;
	Oid			grantee;
	Oid			argtypes[2] = {TEXTOID, ACLITEMARRAYOID};
	Datum		args[2];
	bool		isnull;
	Datum		old;

	CatalogRequireArgument(fcinfo, 0, "model");
	CatalogRequireArgument(fcinfo, 1, "role");
	CatalogRequireArgument(fcinfo, 2, "privileges");
	RegistryRequireVersions();
	reference = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!ModelRefParse(reference, &ref))
		CatalogReportNoModel(reference);
	if (ref.kind != MODEL_REF_DEPLOYED)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"model\" must be a model's name"),
				 errdetail("It is \"%s\", a version of model \"%s\"; privileges are granted on a model, all its versions.",
						   reference, ref.name)));
	privileges = ModelPrivilegesParse(text_to_cstring(PG_GETARG_TEXT_PP(2)), "privileges");
	grantee = GranteeOf(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	CatalogSqlBegin(&sql);
	RegistryTake(&sql, ref.name, &entry, ACL_NO_RIGHTS);
	args[0] = CStringGetTextDatum(ref.name);
	CatalogSqlRun(&sql, "SELECT acl FROM silvan.registry WHERE name OPERATOR(pg_catalog.=) $1",
				  1, argtypes, args, NULL, SPI_OK_SELECT);
	old = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	args[1] = PointerGetDatum(AclEdit(isnull ? NULL : DatumGetAclP(old), grantee,
									  OidIsValid(entry.owner) ? entry.owner : sql.caller,
									  privileges, grant));
	CatalogSqlRun(&sql, "UPDATE silvan.registry SET acl = $2 WHERE name OPERATOR(pg_catalog.=) $1",
				  2, argtypes, args, NULL, SPI_OK_UPDATE);
	CatalogSqlEnd(&sql);
}

PG_FUNCTION_INFO_V1(silvan_grant_model);
PG_FUNCTION_INFO_V1(silvan_revoke_model);

/* grant(model, role, privileges) */
Datum
silvan_grant_model(PG_FUNCTION_ARGS)
{
	ModelGrant(fcinfo, true);
	PG_RETURN_VOID();
}

/* revoke(model, role, privileges) */
Datum
silvan_revoke_model(PG_FUNCTION_ARGS)
{
	ModelGrant(fcinfo, false);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(silvan_model_acl_allows);

/* model_acl_allows(acl, owner, privileges): the views' filter, for the calling role */
Datum
silvan_model_acl_allows(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(ModelAclAllows(PG_ARGISNULL(0) ? NULL : PG_GETARG_ACL_P(0), PG_GETARG_OID(1),
								  GetUserId(),
								  ModelPrivilegesParse(text_to_cstring(PG_GETARG_TEXT_PP(2)),
													   "privileges")));
}

/* Does role hold privilege on the model a name or reference names? */
static bool
HasModelPrivilege(Oid role, const char *reference, const char *privilege)
{
	AclMode		mode = ModelPrivilegesParse(privilege, "privilege");
	CatalogSql	sql;
	CatalogModel model;
	bool		allowed;

	CatalogSqlBegin(&sql);
	if (!CatalogFindModel(&sql, reference, &model))
		CatalogReportNoModel(reference);
	allowed = !CatalogHasVersions() ? (mode & ACL_UPDATE) == 0 || CatalogMayManage(role, model.owner) :
		ModelAclAllows(model.acl, model.owner, role, mode);
	CatalogSqlEnd(&sql);
	return allowed;
}

PG_FUNCTION_INFO_V1(silvan_has_model_privilege);
PG_FUNCTION_INFO_V1(silvan_has_model_privilege_role);

/* has_model_privilege(model, privilege): for the calling role */
Datum
silvan_has_model_privilege(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(HasModelPrivilege(GetUserId(), text_to_cstring(PG_GETARG_TEXT_PP(0)),
									 text_to_cstring(PG_GETARG_TEXT_PP(1))));
}

/* has_model_privilege(role, model, privilege) */
Datum
silvan_has_model_privilege_role(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(HasModelPrivilege(PG_GETARG_OID(0), text_to_cstring(PG_GETARG_TEXT_PP(1)),
									 text_to_cstring(PG_GETARG_TEXT_PP(2))));
}

/*
 * Error unless the calling role may use a cached model version for what
 * mask names; UPDATE includes USAGE (tuning and profiling score)
 */
void
ModelVersionCheckPrivilege(const ModelVersion *version, AclMode mask, const char *name)
{
	AclMode		allowing = mask == ACL_USAGE ? (ACL_USAGE | ACL_UPDATE) : mask;

	if (!version->acl_checked || ModelAclAllows(version->acl, version->owner, GetUserId(), allowing))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for model \"%s\"", name),
			 mask == ACL_USAGE ?
			 errdetail("Scoring with a model or describing it takes the USAGE privilege on it.") :
			 errdetail("Reading a model's trees, as explain() shows them, takes the SELECT privilege on it."),
			 errhint("Its owner may grant it: silvan.grant('%s', role, '%s').",
					 version->ref_name, mask == ACL_USAGE ? "usage" : "select")));
}

/* Give a cached version its model's name, owner and privileges (acl: an aclitem[] Datum) */
void
ModelVersionSetAccess(ModelVersion *version, const char *name, Oid owner, Datum acl,
					  bool acl_null, bool versions)
{
	ModelRef	ref;

	version->owner = owner;
	version->acl = NULL;
	if (!acl_null)
	{
		Acl		   *detoasted = DatumGetAclP(acl);

		version->acl = MemoryContextAlloc(version->cxt, VARSIZE(detoasted));
		memcpy(version->acl, detoasted, VARSIZE(detoasted));
	}
	version->acl_checked = versions;
	if (!ModelRefSplit(name, &ref))
		strlcpy(ref.name, name, sizeof(ref.name));
	strlcpy(version->ref_name, ref.name, sizeof(version->ref_name));
}
