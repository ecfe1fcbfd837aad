/*
 * model_ref.c
 *		What a model argument names: a model's deployed version, or one
 *		version of it.
 *
 * Every function that takes a model takes a reference:
 *
 *	'churn'				the deployed version (silvan.registry.version)
 *	'churn@3'			version 3
 *	'churn@latest'		the highest version that exists
 *	'churn@candidate'	the version the alias names (silvan.model_alias)
 *
 * The text after the last "@" is the selector.  A name loaded before
 * models had versions may itself hold an "@" ('a@b'); such a name, when
 * it is in the registry, is taken whole, so it is still scored by it.
 * New names may not hold one.
 *
 * A catalog older than 0.11.0 (the library updated before ALTER EXTENSION
 * UPDATE) has no versions: there a reference is a name, the model is its
 * one row, and a selector is an error that says to update.
 *
 * Resolving a reference to a row of silvan.model is one condition on
 * "m", MODEL_REF_WHERE, with the reference as parameters $1 (name), $2
 * (version number or NULL) and $3 (alias, "latest" or NULL), so that every
 * statement that reads a model resolves it the same way.
 */
#include "silvan_pg.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

/* Does the catalog have versions (0.11.0 on)? */
bool
CatalogHasVersions(void)
{
	return OidIsValid(SilvanCatalogRelid("registry"));
}

/* Is text an alias (a letter or underscore, then letters, digits, underscores)? */
bool
ModelAliasValid(const char *text)
{
	if (text[0] == '\0' || strlen(text) >= NAMEDATALEN ||
		!(isalpha((unsigned char) text[0]) || text[0] == '_'))
		return false;
	for (const char *c = text; *c; c++)
		if (!(isalnum((unsigned char) *c) || *c == '_') || (unsigned char) *c >= 0x80)
			return false;
	return true;
}

/* Parse a selector (digits, "latest" or an alias) into ref; false if it is none */
static bool
ModelRefSelector(const char *selector, ModelRef *ref)
{
	if (selector[0] >= '0' && selector[0] <= '9')
	{
		long		n = 0;

		for (const char *c = selector; *c; c++)
		{
			if (*c < '0' || *c > '9' || n > PG_INT32_MAX / 10)
				return false;
			n = n * 10 + (*c - '0');
		}
		if (n < 1 || n > PG_INT32_MAX)
			return false;
		ref->kind = MODEL_REF_NUMBER;
		ref->number = (int32) n;
		return true;
	}
	if (!ModelAliasValid(selector))
		return false;
	ref->kind = strcmp(selector, "latest") == 0 ? MODEL_REF_LATEST : MODEL_REF_ALIAS;
	strlcpy(ref->alias, selector, sizeof(ref->alias));
	return true;
}

/*
 * Split a reference at its last "@", without asking the catalog; false
 * when it cannot name a model (too long, an empty name, a selector that is
 * neither a number nor an alias): no model has such a name either
 */
bool
ModelRefSplit(const char *text, ModelRef *ref)
{
	const char *at = strrchr(text, '@');
	size_t		name_len = at ? (size_t) (at - text) : strlen(text);

	memset(ref, 0, sizeof(ModelRef));
	ref->kind = MODEL_REF_DEPLOYED;
	if (name_len < 1 || name_len >= NAMEDATALEN)
		return false;
	memcpy(ref->name, text, name_len);
	ref->name[name_len] = '\0';
	return at == NULL || ModelRefSelector(at + 1, ref);
}

/* Is name a model name in the registry (read as the caller)? */
static bool
RegistryHasName(const char *name)
{
	CatalogSql	sql;
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);
	bool		found;

	CatalogSqlBegin(&sql);
	CatalogSqlRun(&sql, "SELECT 1 FROM silvan.registry WHERE name OPERATOR(pg_catalog.=) $1",
				  1, &argtype, &arg, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	CatalogSqlEnd(&sql);
	return found;
}

/*
 * Parse a reference; false when it can name nothing.  A text with an "@"
 * that is a name in the registry is that name (see above); on a catalog
 * without versions every text is a name.
 */
bool
ModelRefParse(const char *text, ModelRef *ref)
{
	bool		versions = CatalogHasVersions();

	if (strlen(text) < 1 || strlen(text) >= NAMEDATALEN)
		return false;
	if (strchr(text, '@') == NULL || !versions || RegistryHasName(text))
	{
		memset(ref, 0, sizeof(ModelRef));
		ref->kind = MODEL_REF_DEPLOYED;
		strlcpy(ref->name, text, sizeof(ref->name));
		return true;
	}
	return ModelRefSplit(text, ref);
}

/* The parameters $1..$3 of MODEL_REF_WHERE for a reference */
void
ModelRefArgs(const ModelRef *ref, Oid *types, Datum *args, char *nulls)
{
	types[0] = TEXTOID;
	types[1] = INT4OID;
	types[2] = TEXTOID;
	args[0] = CStringGetTextDatum(ref->name);
	args[1] = Int32GetDatum(ref->number);
	args[2] = ref->kind == MODEL_REF_ALIAS || ref->kind == MODEL_REF_LATEST ?
		CStringGetTextDatum(ref->alias) : (Datum) 0;
	nulls[0] = ' ';
	nulls[1] = ref->kind == MODEL_REF_NUMBER ? ' ' : 'n';
	nulls[2] = ref->kind == MODEL_REF_ALIAS || ref->kind == MODEL_REF_LATEST ? ' ' : 'n';
}

/* The condition on "m" that finds a reference's row: MODEL_REF_WHERE, or the name alone before versions */
const char *
ModelRefWhere(void)
{
	return CatalogHasVersions() ? MODEL_REF_WHERE : "m.name OPERATOR(pg_catalog.=) $1";
}

/* Error for a reference with a selector on a catalog without versions */
void
ModelRefCheckCatalog(const ModelRef *ref, const char *text)
{
	if (ref->kind != MODEL_REF_DEPLOYED && !CatalogHasVersions())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("silvan's catalog has no model versions yet"),
				 errdetail("Argument \"model\" is \"%s\", a version of a model; the catalog was created by an older version of silvan.",
						   text),
				 errhint("Run ALTER EXTENSION silvan UPDATE.")));
}
