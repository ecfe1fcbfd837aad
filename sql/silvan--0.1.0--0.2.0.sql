-- silvan 0.1.0 -> 0.2.0: reassign_models(); the catalog trigger function
-- runs under a locked search_path and may only be used by silvan's triggers.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.2.0'" to load this file. \quit

ALTER FUNCTION catalog_changed() SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION catalog_changed() FROM PUBLIC;

-- Giving models to another role (as REASSIGN OWNED does for PostgreSQL's objects)
CREATE FUNCTION reassign_models(old_owner regrole, new_owner regrole) RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_reassign_models' LANGUAGE C VOLATILE STRICT;
