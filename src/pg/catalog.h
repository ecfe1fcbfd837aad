/*
 * catalog.h
 *		What the catalog's writers share: catalog.c (models, schedules,
 *		profiles, tuning jobs) and registry.c (versions, deployments,
 *		aliases, names).
 */
#ifndef SILVAN_PG_CATALOG_H
#define SILVAN_PG_CATALOG_H

#include "silvan_pg.h"

#include "utils/acl.h"

/* A model's row (one version) as a writer sees it */
typedef struct CatalogModel
{
	int64		id;
	Oid			owner;
	int64		revision;
	int32		version;		/* 1 before versions */
	char		name[NAMEDATALEN];	/* the model's name, without a selector */
	Acl		   *acl;			/* privileges granted on the model; NULL: none */
} CatalogModel;

/* A model name's row of silvan.registry, with the model's owner */
typedef struct RegistryName
{
	Oid			owner;			/* InvalidOid: the name has no version left */
	int32		deployed;
	int32		last_version;
	Acl		   *acl;			/* privileges granted on the model; NULL: none */
} RegistryName;

/* catalog.c */
extern bool CatalogFindModel(const CatalogSql *sql, const char *reference, CatalogModel *model);
extern void CatalogTakeModel(CatalogSql *sql, const char *reference, CatalogModel *model);
extern bool CatalogMayManage(Oid caller, Oid owner);
extern void CatalogCheckManage(Oid caller, Oid owner, const char *name);
extern void CatalogReportConcurrentChange(const char *name) pg_attribute_noreturn();
extern void CatalogCheckNewName(const char *name, const char *argname);
extern void CatalogRequireArgument(FunctionCallInfo fcinfo, int argno, const char *argname);
extern void CatalogCheckPrivilege(Oid caller, Oid owner, const Acl *acl, AclMode need,
								  const char *name);

/* privileges.c */
extern AclMode ModelPrivilegesParse(const char *text, const char *argname);
extern bool ModelAclAllows(const Acl *acl, Oid owner, Oid role, AclMode mask);

/* registry.c */
extern bool RegistryFind(const CatalogSql *sql, const char *name, RegistryName *entry);
extern void RegistryTake(CatalogSql *sql, const char *name, RegistryName *entry, AclMode need);
extern bool RegistryInsert(const CatalogSql *sql, const char *name);
extern void RegistryAddVersion(const CatalogSql *sql, const char *name, int32 version, bool deploy);
extern bool RegistryDrop(CatalogSql *sql, const char *reference);
extern void RegistryRequireVersions(void);

#endif
