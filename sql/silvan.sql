-- silvan: tree-ensemble models compiled to native code inside PostgreSQL
-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION silvan" to load this file. \quit

-- The model registry: one row per model name.  "version" is the version
-- that predict(name) scores with (the deployed one); "rollback_to" the
-- versions deployed before it, the most recent last, which rollback()
-- returns to; "last_version" the highest number a load has given out
-- (numbers are never used twice); "acl" the privileges granted on the
-- model (silvan.grant(): USAGE to score, SELECT to read its source,
-- schedules and profiles, UPDATE to load versions, deploy, tune; NULL or
-- empty: its owner's alone).  Renaming a model renames it here, and the
-- foreign keys carry the new name to its versions and aliases.
CREATE TABLE registry (
	name text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 63),
	version integer NOT NULL CHECK (version > 0),
	last_version integer NOT NULL CHECK (last_version >= version),
	rollback_to integer[] NOT NULL DEFAULT '{}',
	deployed timestamptz NOT NULL DEFAULT now(),
	deployed_by regrole NOT NULL DEFAULT current_user::regrole,
	acl aclitem[]
);

-- Models: one row per version of a model, numbered 1, 2, ... per name.
-- "forest" is the validated Forest IR in silvan's compact binary form, so
-- a backend loads a model without parsing its source again; "revision"
-- keys every backend's cache of compiled code.  "feature_names" and
-- "feature_types" are what the training library recorded (NULL: nothing),
-- one entry per feature; predict_table matches columns to features by them.
-- The model as loaded is "source" for text formats, "source_binary" for
-- binary ones, and "source_sha256" its digest.  "class_labels" names the
-- classes predict() numbers (ONNX).  "owner" is the model's (the same on
-- every version), "loaded_by" the role that loaded this version.
CREATE SEQUENCE model_revision_seq;

CREATE TABLE model (
	id bigserial PRIMARY KEY,
	name text NOT NULL CHECK (length(name) BETWEEN 1 AND 63),
	format text NOT NULL,
	objective text NOT NULL,
	task text NOT NULL,
	num_features integer NOT NULL,
	num_classes integer NOT NULL,
	num_trees integer NOT NULL,
	max_depth integer NOT NULL,
	created timestamptz NOT NULL DEFAULT now(),
	owner regrole NOT NULL DEFAULT current_user::regrole,
	revision bigint NOT NULL DEFAULT nextval('model_revision_seq'),
	forest bytea NOT NULL,
	source text,
	feature_names text[] CHECK (cardinality(feature_names) = num_features),
	feature_types text[] CHECK (cardinality(feature_types) = num_features),
	source_binary bytea,
	CONSTRAINT model_one_source CHECK ((source IS NULL) <> (source_binary IS NULL)),
	class_labels text[],
	version integer NOT NULL DEFAULT 1 CONSTRAINT model_version_check CHECK (version > 0),
	loaded_by regrole NOT NULL DEFAULT current_user::regrole,
	source_sha256 text,
	description text,
	metadata jsonb,
	source_bytes integer,
	CONSTRAINT model_name_version_key UNIQUE (name, version),
	CONSTRAINT model_name_fkey FOREIGN KEY (name) REFERENCES registry (name)
		ON UPDATE CASCADE ON DELETE CASCADE
);

-- A fresh backend detoasts a model's binary form before its first
-- prediction: stored uncompressed, it is read several times faster than
-- pglz's or lz4's form is decompressed; forms compress by half at best
ALTER TABLE silvan.model ALTER COLUMN forest SET STORAGE EXTERNAL;

-- Schedules: compiler schedules per model, target and batch size (NULL:
-- any batch size), written by set_schedule ("hand") and the tuner
-- ("tuned", with what it measured in "provenance").
CREATE TABLE schedule (
	model_id bigint NOT NULL REFERENCES model (id) ON DELETE CASCADE,
	target text NOT NULL DEFAULT 'cpu' CHECK (target IN ('cpu', 'cuda', 'rocm')),
	batch_size integer CHECK (batch_size IS NULL OR batch_size > 0),
	schedule text NOT NULL,
	created timestamptz NOT NULL DEFAULT now(),
	origin text NOT NULL DEFAULT 'hand' CHECK (origin IN ('hand', 'tuned')),
	provenance jsonb
);
CREATE UNIQUE INDEX schedule_key ON schedule (model_id, target, coalesce(batch_size, 0));

-- Profiles: how often each node was visited over real rows (silvan.profile),
-- for probability-based tiling.  Kept per model; used only while the
-- model's revision is the one profiled.
CREATE TABLE profile (
	model_id bigint PRIMARY KEY REFERENCES model (id) ON DELETE CASCADE,
	revision bigint NOT NULL,
	num_rows bigint NOT NULL,
	node_hits bigint[] NOT NULL,
	created timestamptz NOT NULL DEFAULT now()
);

-- Aliases: names for versions of a model, scored as predict('churn@champion', ...)
CREATE TABLE model_alias (
	name text NOT NULL,
	alias text NOT NULL CHECK (alias ~ '^[A-Za-z_][A-Za-z0-9_]*$' AND length(alias) <= 63
							   AND alias <> 'latest'),
	version integer NOT NULL,
	created timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (name, alias),
	FOREIGN KEY (name, version) REFERENCES model (name, version) ON UPDATE CASCADE ON DELETE CASCADE
);

-- pg_dump keeps the rows of every table
SELECT pg_catalog.pg_extension_config_dump('registry', '');
SELECT pg_catalog.pg_extension_config_dump('model', '');
SELECT pg_catalog.pg_extension_config_dump('model_alias', '');
SELECT pg_catalog.pg_extension_config_dump('model_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('model_revision_seq', '');
SELECT pg_catalog.pg_extension_config_dump('schedule', '');
SELECT pg_catalog.pg_extension_config_dump('profile', '');

-- Every change to the catalog tells every backend to revalidate its cache.
-- Only these triggers may use the function.  It lives in a schema of the
-- extension's own, out of the users' way (\df silvan.*): nobody but the
-- extension's owner may use that schema; triggers call their function by
-- its OID, so they fire whoever writes the catalog.
CREATE SCHEMA silvan_internal;
REVOKE ALL ON SCHEMA silvan_internal FROM PUBLIC;
CREATE FUNCTION silvan_internal.catalog_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'silvan_catalog_changed' LANGUAGE C
	SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION silvan_internal.catalog_changed() FROM PUBLIC;
CREATE TRIGGER model_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model
	FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
CREATE TRIGGER schedule_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON schedule
	FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
CREATE TRIGGER profile_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON profile
	FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
CREATE TRIGGER registry_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON registry
	FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
CREATE TRIGGER model_alias_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model_alias
	FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();

GRANT USAGE ON SCHEMA silvan TO PUBLIC;

-- Everyone may read the catalog but what is a model's own (its source and
-- binary form, its schedules and profiles), which the views show to the
-- roles with SELECT on the model; writes go through silvan's functions,
-- which check the caller's rights and then write as the catalog's owner,
-- under a locked search_path.
REVOKE ALL ON registry, model, model_alias, schedule, profile FROM PUBLIC;
GRANT SELECT ON registry, model_alias TO PUBLIC;
GRANT SELECT (id, name, format, objective, task, num_features, num_classes, num_trees, max_depth,
			  created, owner, revision, feature_names, feature_types, class_labels, version,
			  loaded_by, source_sha256, description, metadata, source_bytes) ON model TO PUBLIC;

-- Whether the calling role holds any of privileges ('usage', 'select',
-- 'update', comma-separated) on a model, given its registry acl and owner:
-- the views' filter (has_model_privilege() asks by the model's name)
CREATE FUNCTION model_acl_allows(acl aclitem[], owner regrole, privileges text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_model_acl_allows' LANGUAGE C STABLE PARALLEL SAFE;

-- The rows of the views that show what only the catalog's owner reads
-- (schedules, sources, tuning jobs): read as the owner, through this
-- node's copy of the catalog, and kept where the caller holds SELECT on
-- the model (a job: the privileges of its owner).  On Citus a view's owner
-- does not carry into the queries run on the placements; these functions
-- read none through Citus.
CREATE FUNCTION schedule_rows()
	RETURNS TABLE (model text, target text, batch_size integer, schedule text, origin text,
				   provenance jsonb, created timestamptz, version integer)
	AS 'MODULE_PATHNAME', 'silvan_schedule_rows' LANGUAGE C VOLATILE;
CREATE FUNCTION model_source_rows()
	RETURNS TABLE (model text, version integer, format text, source text, source_binary bytea,
				   source_sha256 text)
	AS 'MODULE_PATHNAME', 'silvan_model_source_rows' LANGUAGE C VOLATILE;

-- The views show the models the caller holds a privilege on.  Those over
-- the models' rows run with the caller's rights (security_invoker), so
-- that row-level security an administrator puts on silvan.model hides a
-- model's row in them too; those over what only SELECT on a model shows
-- (schedules, sources) read it through the functions above, which keep
-- the rows of the models the caller holds SELECT on.
CREATE VIEW models WITH (security_invoker = true) AS
	SELECT m.id, m.name, m.format, m.objective, m.task, m.num_features, m.num_classes,
		   m.num_trees, m.max_depth, m.owner, m.created, m.revision,
		   m.source_bytes, m.feature_names, m.class_labels, m.version,
		   (SELECT count(*) FROM model v WHERE v.name = m.name) AS versions,
		   m.loaded_by, r.deployed, r.deployed_by, m.source_sha256, m.description, m.metadata
	  FROM model m JOIN registry r ON r.name = m.name AND r.version = m.version
	 WHERE model_acl_allows(r.acl, m.owner, 'usage, select, update');
GRANT SELECT ON models TO PUBLIC;

-- One row per version of every model, with the aliases that name it
CREATE VIEW model_versions WITH (security_invoker = true) AS
	SELECT m.name, m.version, r.version = m.version AS deployed,
		   coalesce((SELECT array_agg(a.alias ORDER BY a.alias) FROM model_alias a
					  WHERE a.name = m.name AND a.version = m.version), '{}') AS aliases,
		   m.id, m.format, m.objective, m.task, m.num_features, m.num_classes,
		   m.num_trees, m.max_depth, m.owner, m.loaded_by, m.created,
		   m.source_bytes, m.source_sha256, m.description, m.metadata
	  FROM model m JOIN registry r ON r.name = m.name
	 WHERE model_acl_allows(r.acl, m.owner, 'usage, select, update');
GRANT SELECT ON model_versions TO PUBLIC;

-- One row per feature of every model's deployed version: its position (as
-- in feature_columns; explain's feature index is position - 1), and the
-- name and type the training library recorded, NULL where it recorded none
CREATE VIEW model_features WITH (security_invoker = true) AS
	SELECT m.name AS model, p.position, m.feature_names[p.position] AS name,
		   m.feature_types[p.position] AS type, m.version
	  FROM model m JOIN registry r ON r.name = m.name AND r.version = m.version,
		   generate_series(1, m.num_features) AS p(position)
	 WHERE model_acl_allows(r.acl, m.owner, 'usage, select, update');
GRANT SELECT ON model_features TO PUBLIC;

-- The stored schedules by model name and version: batch_size NULL applies to every size
CREATE VIEW schedules WITH (security_barrier = true) AS SELECT * FROM schedule_rows();
GRANT SELECT ON schedules TO PUBLIC;

-- Every version's source, to the roles with SELECT on its model
CREATE VIEW model_sources WITH (security_barrier = true) AS SELECT * FROM model_source_rows();
GRANT SELECT ON model_sources TO PUBLIC;

-- The privileges granted on each model (its owner holds them all)
CREATE VIEW model_grants WITH (security_invoker = true) AS
	SELECT r.name AS model,
		   CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END AS grantee,
		   lower(a.privilege_type) AS privilege, a.grantor::regrole AS grantor
	  FROM registry r, aclexplode(r.acl) AS a
	 WHERE EXISTS (SELECT 1 FROM model m WHERE m.name = r.name
					 AND model_acl_allows(r.acl, m.owner, 'usage, select, update'));
GRANT SELECT ON model_grants TO PUBLIC;

-- Loading and dropping models.  A load under a name that exists
-- (replace => true) adds a version, deployed unless deploy => false.
-- tune => true queues a tuning job (tune_async with its defaults).
CREATE FUNCTION load_model(name text, model text, format text DEFAULT 'auto',
						   replace boolean DEFAULT false, tune boolean DEFAULT false,
						   deploy boolean DEFAULT true, description text DEFAULT NULL,
						   metadata jsonb DEFAULT NULL, class_labels text[] DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_load_model' LANGUAGE C VOLATILE;

CREATE FUNCTION load_model(name text, model bytea, format text DEFAULT 'auto',
						   replace boolean DEFAULT false, tune boolean DEFAULT false,
						   deploy boolean DEFAULT true, description text DEFAULT NULL,
						   metadata jsonb DEFAULT NULL, class_labels text[] DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_load_model_bytes' LANGUAGE C VOLATILE;

CREATE FUNCTION drop_model(name text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_drop_model' LANGUAGE C VOLATILE STRICT;

-- A model's versions: deploy one, roll back to the one deployed before,
-- name one with an alias, rename the model, describe a version
CREATE FUNCTION deploy(model text, version integer DEFAULT NULL) RETURNS integer
	AS 'MODULE_PATHNAME', 'silvan_deploy' LANGUAGE C VOLATILE;
CREATE FUNCTION rollback(model text) RETURNS integer
	AS 'MODULE_PATHNAME', 'silvan_rollback' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION set_alias(model text, alias text, version integer) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_set_alias' LANGUAGE C VOLATILE;
CREATE FUNCTION rename_model(name text, new_name text) RETURNS void
	AS 'MODULE_PATHNAME', 'silvan_rename_model' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION set_metadata(model text, description text DEFAULT NULL, metadata jsonb DEFAULT NULL)
	RETURNS void
	AS 'MODULE_PATHNAME', 'silvan_set_metadata' LANGUAGE C VOLATILE;
-- Privileges on a model: usage (score with it, explain is select's),
-- select (read its source, schedules and profiles), update (load versions,
-- deploy, roll back, set aliases, metadata and schedules, profile, tune,
-- drop versions); the owner's own, with renaming, dropping and granting
CREATE FUNCTION silvan.grant(model text, role text, privileges text) RETURNS void
	AS 'MODULE_PATHNAME', 'silvan_grant_model' LANGUAGE C VOLATILE;
CREATE FUNCTION silvan.revoke(model text, role text, privileges text) RETURNS void
	AS 'MODULE_PATHNAME', 'silvan_revoke_model' LANGUAGE C VOLATILE;
CREATE FUNCTION has_model_privilege(model text, privilege text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_has_model_privilege' LANGUAGE C STABLE STRICT;
CREATE FUNCTION has_model_privilege(role regrole, model text, privilege text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_has_model_privilege_role' LANGUAGE C STABLE STRICT;
-- The version a reference scores with in this statement
CREATE FUNCTION model_version(model text) RETURNS integer
	AS 'MODULE_PATHNAME', 'silvan_model_version' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- Scoring one row
CREATE FUNCTION predict(model text, features float4[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_float4' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict(model text, features float8[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_float8' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features float4[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_float4' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features float8[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_float8' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features float4[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_float4' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features float8[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_float8' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict(model text, features integer[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict(model text, features bigint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict(model text, features numeric[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features integer[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features bigint[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features numeric[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features integer[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features bigint[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features numeric[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- Scoring a whole row (a table's row or any composite): columns matched to
-- the model's features by name, as predict_table matches them
CREATE FUNCTION predict(model text, features record) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features record) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features record) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- Classifiers: the predicted class's label (the model's class_labels, or
-- its index in decimal), or the label, the index and the probabilities
-- together, from one scoring of the row
CREATE TYPE classification AS (label text, class_index integer, probabilities float8[]);
CREATE FUNCTION predict_label(model text, features float4[]) RETURNS text
	AS 'MODULE_PATHNAME', 'silvan_predict_label_float4' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_label(model text, features float8[]) RETURNS text
	AS 'MODULE_PATHNAME', 'silvan_predict_label_float8' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_label(model text, features integer[]) RETURNS text
	AS 'MODULE_PATHNAME', 'silvan_predict_label_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_label(model text, features bigint[]) RETURNS text
	AS 'MODULE_PATHNAME', 'silvan_predict_label_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_label(model text, features numeric[]) RETURNS text
	AS 'MODULE_PATHNAME', 'silvan_predict_label_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_label(model text, features record) RETURNS text
	AS 'MODULE_PATHNAME', 'silvan_predict_label_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION classify(model text, features float4[]) RETURNS classification
	AS 'MODULE_PATHNAME', 'silvan_classify_float4' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION classify(model text, features float8[]) RETURNS classification
	AS 'MODULE_PATHNAME', 'silvan_classify_float8' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION classify(model text, features integer[]) RETURNS classification
	AS 'MODULE_PATHNAME', 'silvan_classify_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION classify(model text, features bigint[]) RETURNS classification
	AS 'MODULE_PATHNAME', 'silvan_classify_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION classify(model text, features numeric[]) RETURNS classification
	AS 'MODULE_PATHNAME', 'silvan_classify_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION classify(model text, features record) RETURNS classification
	AS 'MODULE_PATHNAME', 'silvan_classify_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- Planning a query that calls the scalar functions loads silvan (their
-- support function is in the library), so that the first such query of a
-- session is batched like the later ones
CREATE FUNCTION silvan_internal.predict_calls_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'silvan_predict_calls_support' LANGUAGE C STABLE STRICT;
REVOKE ALL ON FUNCTION silvan_internal.predict_calls_support(internal) FROM PUBLIC;
ALTER FUNCTION predict(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, record) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, record) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, record) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_label(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_label(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_label(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_label(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_label(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_label(text, record) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION classify(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION classify(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION classify(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION classify(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION classify(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION classify(text, record) SUPPORT silvan_internal.predict_calls_support;

-- Scoring a table in batches; the planner estimates a row per source row.
-- Parallel safe: under a Gather each worker scores its own pages of the source
CREATE FUNCTION silvan_internal.predict_table_rows(internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'silvan_predict_table_support' LANGUAGE C STABLE STRICT;
REVOKE ALL ON FUNCTION silvan_internal.predict_table_rows(internal) FROM PUBLIC;
CREATE FUNCTION predict_table(model text, source regclass, key_column text,
							  feature_columns text[] DEFAULT NULL,
							  batch_size integer DEFAULT 4096)
	RETURNS TABLE (key bigint, prediction float8)
	AS 'MODULE_PATHNAME', 'silvan_predict_table' LANGUAGE C STABLE PARALLEL SAFE
	SUPPORT silvan_internal.predict_table_rows;
CREATE FUNCTION predict_proba_table(model text, source regclass, key_column text,
									feature_columns text[] DEFAULT NULL,
									batch_size integer DEFAULT 4096)
	RETURNS TABLE (key bigint, probabilities float8[])
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_table' LANGUAGE C STABLE PARALLEL SAFE
	SUPPORT silvan_internal.predict_table_rows;
CREATE FUNCTION predict_raw_table(model text, source regclass, key_column text,
								  feature_columns text[] DEFAULT NULL,
								  batch_size integer DEFAULT 4096)
	RETURNS TABLE (key bigint, margins float8[])
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_table' LANGUAGE C STABLE PARALLEL SAFE
	SUPPORT silvan_internal.predict_table_rows;

-- Scoring any query in batches: its first column is the key, the rest
-- features.  The support function loads silvan when a call is planned, so
-- that the first call of a session streams as the later ones do.
CREATE FUNCTION predict_query(model text, query text, batch_size integer DEFAULT 4096)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'silvan_predict_query' LANGUAGE C VOLATILE
	SUPPORT silvan_internal.predict_calls_support;
CREATE FUNCTION predict_proba_query(model text, query text, batch_size integer DEFAULT 4096)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_query' LANGUAGE C VOLATILE
	SUPPORT silvan_internal.predict_calls_support;
CREATE FUNCTION predict_raw_query(model text, query text, batch_size integer DEFAULT 4096)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_query' LANGUAGE C VOLATILE
	SUPPORT silvan_internal.predict_calls_support;

-- Schedules: stored per model, target and batch size (NULL: every size);
-- a batch runs with the one stored for its size, else the nearest stored
-- within a factor of 2 (not for a single row), else the one for every
-- size.  A NULL schedule removes the stored one; true when anything
-- was stored or removed.
CREATE FUNCTION set_schedule(model text, schedule text, target text DEFAULT 'cpu',
							 batch_size integer DEFAULT NULL) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_set_schedule' LANGUAGE C VOLATILE;
CREATE FUNCTION reset_schedules(model text, target text DEFAULT NULL) RETURNS integer
	AS 'MODULE_PATHNAME', 'silvan_reset_schedules' LANGUAGE C VOLATILE;

-- Node hit statistics over real rows, for probability-based tiling
CREATE FUNCTION profile(model text, source regclass, key_column text,
						feature_columns text[] DEFAULT NULL) RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_profile_table' LANGUAGE C VOLATILE;
CREATE FUNCTION profile(model text, query text) RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_profile_query' LANGUAGE C VOLATILE;

-- What the compiler makes of a model
CREATE FUNCTION explain(model text, batch_size integer DEFAULT 4096,
						target text DEFAULT 'cpu', llvm_ir boolean DEFAULT false)
	RETURNS text
	AS 'MODULE_PATHNAME', 'silvan_explain' LANGUAGE C STABLE;

-- Giving models to another role (as REASSIGN OWNED does for PostgreSQL's objects)
CREATE FUNCTION reassign_models(old_owner regrole, new_owner regrole) RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_reassign_models' LANGUAGE C VOLATILE STRICT;

-- Tuning: schedule exploration on sample rows (see the README's "Tuning").
-- tune() searches in the foreground and returns one row per batch size;
-- tune_async() queues the same work for a background worker and returns
-- the job's id.  The sample is a table (matched to the features as
-- predict_table does; NULL: rows drawn from the model), or with
-- tune_query() and tune_query_async() a query read as predict_query reads
-- it (first column a key).  A found schedule is stored (origin 'tuned', with what was
-- measured in its provenance) only where it beats the default by 5%.
CREATE TABLE tuning_job (
	id bigserial PRIMARY KEY,
	model_id bigint NOT NULL REFERENCES model (id) ON DELETE CASCADE,
	owner regrole NOT NULL,
	sample_relation oid,
	sample_query text,
	key_column text,
	feature_columns text[],
	batch_sizes integer[] NOT NULL,
	target text NOT NULL,
	strategy text NOT NULL,
	budget interval NOT NULL,
	exact boolean NOT NULL,
	state text NOT NULL DEFAULT 'queued'
		CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
	phase text,
	batch_size integer,
	candidates_done integer,
	candidates_planned integer,
	best_us_per_row float8,
	default_us_per_row float8,
	result jsonb,
	error text,
	worker_pid integer,
	created timestamptz NOT NULL DEFAULT now(),
	started timestamptz,
	finished timestamptz
);
CREATE INDEX tuning_job_state ON tuning_job (state, id);
REVOKE ALL ON tuning_job FROM PUBLIC;

-- Jobs the caller may see: its own and those of roles whose privileges it
-- has.  A job whose worker is gone (a crash, a restart) shows as failed.
-- The view reads the job table with its owner's rights, so it is a
-- security barrier: the caller's own conditions run only on the rows it
-- may see.
CREATE FUNCTION tuning_job_rows()
	RETURNS TABLE (job bigint, model text, owner regrole, state text, phase text, batch_size integer,
				   candidates_done integer, candidates_planned integer, best_us_per_row float8,
				   default_us_per_row float8, error text, result jsonb, batch_sizes integer[],
				   strategy text, budget interval, exact boolean, created timestamptz,
				   started timestamptz, finished timestamptz, version integer)
	AS 'MODULE_PATHNAME', 'silvan_tuning_job_rows' LANGUAGE C VOLATILE;
CREATE VIEW tuning_jobs WITH (security_barrier = true) AS SELECT * FROM tuning_job_rows();
GRANT SELECT ON tuning_jobs TO PUBLIC;

CREATE FUNCTION tune(model text, sample regclass DEFAULT NULL, key_column text DEFAULT NULL,
					 feature_columns text[] DEFAULT NULL,
					 batch_sizes integer[] DEFAULT NULL,
					 target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
					 budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS TABLE (batch_size integer, schedule text, us_per_row float8,
				   default_us_per_row float8, speedup float8, stored boolean,
				   candidates integer, seconds float8, rows_from text,
				   end_to_end_us_per_row float8, default_end_to_end_us_per_row float8,
				   end_to_end_speedup float8)
	AS 'MODULE_PATHNAME', 'silvan_tune_table' LANGUAGE C VOLATILE;
CREATE FUNCTION tune_query(model text, query text,
					 batch_sizes integer[] DEFAULT NULL,
					 target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
					 budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS TABLE (batch_size integer, schedule text, us_per_row float8,
				   default_us_per_row float8, speedup float8, stored boolean,
				   candidates integer, seconds float8, rows_from text,
				   end_to_end_us_per_row float8, default_end_to_end_us_per_row float8,
				   end_to_end_speedup float8)
	AS 'MODULE_PATHNAME', 'silvan_tune_query' LANGUAGE C VOLATILE;
CREATE FUNCTION tune_async(model text, sample regclass DEFAULT NULL, key_column text DEFAULT NULL,
						   feature_columns text[] DEFAULT NULL,
						   batch_sizes integer[] DEFAULT NULL,
						   target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
						   budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_tune_async_table' LANGUAGE C VOLATILE;
CREATE FUNCTION tune_query_async(model text, query text,
						   batch_sizes integer[] DEFAULT NULL,
						   target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
						   budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_tune_async_query' LANGUAGE C VOLATILE;
CREATE FUNCTION cancel_tuning(job bigint) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_cancel_tuning' LANGUAGE C VOLATILE STRICT;

-- The GPUs the drivers report (none without a driver: a NOTICE says why)
CREATE FUNCTION devices()
	RETURNS TABLE (vendor text, ordinal integer, name text, arch text, memory_bytes bigint)
	AS 'MODULE_PATHNAME', 'silvan_devices' LANGUAGE C VOLATILE;

-- The host profile: the choices of code generation that depend on the CPU,
-- measured once per host and build (silvan.host_profile = measured) and
-- kept beside the code cache
CREATE FUNCTION host_profile_rows()
	RETURNS TABLE (choice text, value text, how text, alternatives text[],
				   us_per_row float8[], rounds integer)
	AS 'MODULE_PATHNAME', 'silvan_host_profile_rows' LANGUAGE C VOLATILE;
CREATE VIEW host_profile WITH (security_invoker = true) AS
	SELECT choice, value, how, alternatives, us_per_row, rounds FROM host_profile_rows();
GRANT SELECT ON host_profile TO PUBLIC;

-- Measure the host profile again now (superusers, or roles granted EXECUTE)
CREATE FUNCTION measure_host()
	RETURNS TABLE (choice text, value text, how text, alternatives text[],
				   us_per_row float8[], rounds integer)
	AS 'MODULE_PATHNAME', 'silvan_measure_host' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION measure_host() FROM PUBLIC;

-- A model version in plain words, one property per row (explain() is the compiler's view)
CREATE FUNCTION describe(model text) RETURNS TABLE (property text, value text)
	AS 'MODULE_PATHNAME', 'silvan_describe' LANGUAGE C VOLATILE STRICT;

-- Usage statistics per model version: kept in shared memory when silvan
-- is preloaded (every connection's scoring), else the calling connection's own
CREATE FUNCTION model_stats_rows()
	RETURNS TABLE (model_id bigint, batches bigint, rows_scored bigint, scoring_ms float8,
				   compiles bigint, cache_loads bigint, last_used timestamptz, scope text)
	AS 'MODULE_PATHNAME', 'silvan_model_stats_rows' LANGUAGE C VOLATILE;
CREATE VIEW model_stats WITH (security_invoker = true) AS
	SELECT m.name AS model, m.version, s.batches, s.rows_scored, s.scoring_ms,
		   s.compiles, s.cache_loads, s.last_used, s.scope
	  FROM model_stats_rows() s JOIN model m ON m.id = s.model_id JOIN registry r ON r.name = m.name
	 WHERE model_acl_allows(r.acl, m.owner, 'usage, select, update');
GRANT SELECT ON model_stats TO PUBLIC;
CREATE FUNCTION reset_model_stats() RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_reset_model_stats' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION reset_model_stats() FROM PUBLIC;

-- Descriptions shown by \dn+, \dt+, \dv+, \ds+, \df+ and \d+.  The upgrade
-- script to this version ends with the same block.
COMMENT ON SCHEMA silvan IS
	'silvan: tree-ensemble models (XGBoost, LightGBM, ONNX) compiled to native code for in-database inference';
COMMENT ON SCHEMA silvan_internal IS
	'silvan''s internal functions: not for users';

COMMENT ON TABLE registry IS
	'one row per model name: the deployed version and the versions rollback() returns to; written only through silvan''s functions';
COMMENT ON COLUMN registry.version IS 'the deployed version: the one predict() scores with when given the bare name';
COMMENT ON COLUMN registry.last_version IS 'the highest version number loads have given the name (numbers are never used twice)';
COMMENT ON COLUMN registry.rollback_to IS 'the versions deployed before, the most recent last: rollback() deploys the last that still exists';
COMMENT ON COLUMN registry.deployed IS 'when the deployed version was deployed';
COMMENT ON COLUMN registry.deployed_by IS 'the role that deployed it';

COMMENT ON TABLE model IS
	'one row per version of a model: its metadata, validated binary form and source; written only through silvan''s functions';
COMMENT ON COLUMN model.version IS 'the version''s number, from 1 per model name';
COMMENT ON COLUMN model.loaded_by IS 'the role that loaded this version';
COMMENT ON COLUMN model.source_sha256 IS 'SHA-256 of the model as loaded (source or source_binary), in hex';
COMMENT ON COLUMN model.description IS 'the description given at load or by set_metadata()';
COMMENT ON COLUMN model.metadata IS 'the user''s own data about the version (metrics, training data, commit), given at load or by set_metadata()';

COMMENT ON TABLE model_alias IS
	'names for versions of a model, scored as ''model@alias''; set by set_alias()';
COMMENT ON COLUMN model_alias.alias IS 'a letter or underscore, then letters, digits and underscores (not latest)';
COMMENT ON COLUMN model_alias.version IS 'the version the alias names';
COMMENT ON COLUMN model.format IS 'xgboost_json, lightgbm_text or onnx';
COMMENT ON COLUMN model.task IS 'what predict() returns: regression, binary, multiclass or ranking';
COMMENT ON COLUMN model.owner IS 'the model''s owner (the same on every version); it, its members and superusers may load versions, deploy and drop it';
COMMENT ON COLUMN model.revision IS 'a number of its own per version: keys every backend''s compiled code';
COMMENT ON COLUMN model.forest IS 'the validated model in silvan''s compact binary form, read by backends instead of the source';
COMMENT ON COLUMN model.source IS 'the model as loaded, for text formats (NULL for binary formats)';
COMMENT ON COLUMN model.source_binary IS 'the model as loaded, for binary formats such as ONNX (NULL for text formats)';
COMMENT ON COLUMN model.feature_names IS 'feature names the training library recorded, one per feature (NULL: none)';
COMMENT ON COLUMN model.feature_types IS 'feature types the training library recorded, one per feature (NULL: none)';
COMMENT ON COLUMN model.class_labels IS 'the labels of the classes predict() returns the index of (from an ONNX file or load_model''s class_labels; NULL otherwise)';
COMMENT ON SEQUENCE model_id_seq IS 'ids of silvan.model';
COMMENT ON SEQUENCE model_revision_seq IS 'revisions of silvan.model: a new one for each version loaded';

COMMENT ON TABLE schedule IS
	'compiler schedules stored per model, target and batch size, by set_schedule() (origin hand) and the tuner (origin tuned)';
COMMENT ON COLUMN schedule.target IS 'cpu, cuda or rocm';
COMMENT ON COLUMN schedule.batch_size IS 'the batch size the schedule is for (NULL: every size)';
COMMENT ON COLUMN schedule.schedule IS 'the schedule''s directives, as set_schedule() took them';
COMMENT ON COLUMN schedule.origin IS 'hand (set_schedule) or tuned (tune, tune_async)';
COMMENT ON COLUMN schedule.provenance IS 'for a tuned schedule: what the tuner measured, when, where and how';

COMMENT ON TABLE profile IS
	'how often each node of a model was visited over real rows (silvan.profile()), for probability-based tiling';
COMMENT ON COLUMN profile.revision IS 'the model revision profiled; the profile is used only while the model has it';
COMMENT ON COLUMN profile.num_rows IS 'rows profiled';
COMMENT ON COLUMN profile.node_hits IS 'visits per node, in the order of the model''s binary form';

COMMENT ON TABLE tuning_job IS
	'tuning jobs queued by tune_async() and tune_query_async(); read it through the view silvan.tuning_jobs';
COMMENT ON SEQUENCE tuning_job_id_seq IS 'ids of silvan.tuning_job';

COMMENT ON VIEW models IS 'the loaded models (without their source), one row per model: its deployed version';
COMMENT ON COLUMN models.task IS 'what predict() returns: regression, binary, multiclass or ranking';
COMMENT ON COLUMN models.owner IS 'the model''s owner; it, its members and superusers may load versions, deploy and drop it';
COMMENT ON COLUMN models.created IS 'when the deployed version was loaded';
COMMENT ON COLUMN models.revision IS 'a number of its own per version: keys compiled code';
COMMENT ON COLUMN models.source_bytes IS 'size of the model as loaded, in bytes';
COMMENT ON COLUMN models.feature_names IS 'feature names the training library recorded (NULL: none)';
COMMENT ON COLUMN models.class_labels IS 'the labels of the classes predict() returns the index of (from an ONNX file or load_model''s class_labels; NULL otherwise)';
COMMENT ON COLUMN models.version IS 'the deployed version: the one predict() scores with given the bare name';
COMMENT ON COLUMN models.versions IS 'how many versions the model has';
COMMENT ON COLUMN models.loaded_by IS 'the role that loaded the deployed version';
COMMENT ON COLUMN models.deployed IS 'when the deployed version was deployed';
COMMENT ON COLUMN models.deployed_by IS 'the role that deployed it';
COMMENT ON COLUMN models.source_sha256 IS 'SHA-256 of the deployed version as loaded, in hex';
COMMENT ON COLUMN models.description IS 'the deployed version''s description';
COMMENT ON COLUMN models.metadata IS 'the deployed version''s metadata';

COMMENT ON VIEW model_versions IS 'every version of every model (without its source), with the aliases that name it';
COMMENT ON COLUMN model_versions.deployed IS 'true for the version predict() scores with given the bare name';
COMMENT ON COLUMN model_versions.aliases IS 'the aliases that name the version (score with ''model@alias'')';
COMMENT ON COLUMN model_versions.loaded_by IS 'the role that loaded the version';
COMMENT ON COLUMN model_versions.created IS 'when the version was loaded';
COMMENT ON COLUMN model_versions.source_bytes IS 'size of the version as loaded, in bytes';
COMMENT ON COLUMN model_versions.source_sha256 IS 'SHA-256 of the version as loaded, in hex';

COMMENT ON VIEW model_features IS 'one row per feature of every model''s deployed version, with the name and type the training library recorded';
COMMENT ON COLUMN model_features.version IS 'the deployed version, whose features these are';
COMMENT ON COLUMN model_features.position IS 'the feature''s position, from 1, as in feature_columns (explain''s feature index is position - 1)';
COMMENT ON COLUMN model_features.name IS 'the recorded name (NULL: none recorded)';
COMMENT ON COLUMN model_features.type IS 'the recorded type, such as q, c (categorical), int, float (NULL: none recorded)';

COMMENT ON VIEW schedules IS 'the stored compiler schedules, by model name and version';
COMMENT ON COLUMN schedules.version IS 'the model version the schedule belongs to';
COMMENT ON COLUMN schedules.target IS 'cpu, cuda or rocm';
COMMENT ON COLUMN schedules.batch_size IS 'the batch size the schedule is for (NULL: every size)';
COMMENT ON COLUMN schedules.origin IS 'hand (set_schedule) or tuned (tune, tune_async)';
COMMENT ON COLUMN schedules.provenance IS 'for a tuned schedule: what the tuner measured, when, where and how';

COMMENT ON VIEW tuning_jobs IS
	'the tuning jobs of the roles whose privileges you have: state, progress and result';
COMMENT ON COLUMN tuning_jobs.job IS 'the job''s id, as tune_async() returned it';
COMMENT ON COLUMN tuning_jobs.owner IS 'the role that queued the job; the job runs as it';
COMMENT ON COLUMN tuning_jobs.state IS 'queued, running, done, failed or cancelled (a running job whose worker is gone shows as failed)';
COMMENT ON COLUMN tuning_jobs.phase IS 'the search phase running now';
COMMENT ON COLUMN tuning_jobs.batch_size IS 'the batch size being tuned now';
COMMENT ON COLUMN tuning_jobs.candidates_done IS 'schedules timed so far for this batch size';
COMMENT ON COLUMN tuning_jobs.candidates_planned IS 'schedules the current phase plans to time';
COMMENT ON COLUMN tuning_jobs.best_us_per_row IS 'microseconds per row of the best schedule found so far';
COMMENT ON COLUMN tuning_jobs.default_us_per_row IS 'microseconds per row of the default schedule';
COMMENT ON COLUMN tuning_jobs.error IS 'why a failed job failed';
COMMENT ON COLUMN tuning_jobs.result IS 'when done: one entry per batch size, as tune() returns them';
COMMENT ON COLUMN tuning_jobs.version IS 'the model version the job tunes';

COMMENT ON FUNCTION silvan_internal.catalog_changed() IS
	'trigger of silvan''s catalog tables: tells every backend to reload changed models; fired by those triggers only';
COMMENT ON FUNCTION silvan_internal.predict_table_rows(internal) IS
	'planner support of predict_table and its variants: estimates one row per row of the source';
COMMENT ON FUNCTION silvan_internal.predict_calls_support(internal) IS
	'planner support of the scalar predict(), predict_proba() and predict_raw(): answers nothing; planning a call loads silvan, so a session''s first query is batched';

COMMENT ON FUNCTION load_model(text, text, text, boolean, boolean, boolean, text, jsonb, text[]) IS
	'load a model from its text (XGBoost JSON, LightGBM text) under a name; returns the version''s id; replace => true adds a version to a model of that name (deployed unless deploy => false), tune => true queues a tuning job, class_labels names a classifier''s classes';
COMMENT ON FUNCTION load_model(text, bytea, text, boolean, boolean, boolean, text, jsonb, text[]) IS
	'load a model from its bytes (ONNX, or a text format''s bytes) under a name; returns the version''s id; replace => true adds a version to a model of that name (deployed unless deploy => false), tune => true queues a tuning job, class_labels names a classifier''s classes';
COMMENT ON FUNCTION drop_model(text) IS
	'drop a model (''name'') or one version (''name@3''; not the deployed one) with its schedules, profile and tuning jobs; true when dropped, false when there was none';
COMMENT ON FUNCTION deploy(text, integer) IS
	'deploy a version of a model (deploy(''churn'', 3) or deploy(''churn@candidate'')): predict(''churn'', ...) scores with it from the next statement; returns the version';
COMMENT ON FUNCTION rollback(text) IS
	'deploy again the version deployed before the current one; returns it';
COMMENT ON FUNCTION set_alias(text, text, integer) IS
	'name a version of a model with an alias, scored as ''model@alias''; version NULL removes the alias; true when anything changed';
COMMENT ON FUNCTION rename_model(text, text) IS
	'rename a model, with its versions, aliases, schedules and profiles';
COMMENT ON FUNCTION set_metadata(text, text, jsonb) IS
	'set the description and the metadata of a version (''name'': the deployed one); NULL keeps what is there';
COMMENT ON FUNCTION model_version(text) IS
	'the version a model reference (''name'', ''name@3'', ''name@alias'', ''name@latest'') scores with in this statement';

COMMENT ON FUNCTION predict(text, float4[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, float8[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, integer[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, bigint[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, numeric[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict_proba(text, float4[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, float8[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, integer[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, bigint[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, numeric[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_raw(text, float4[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, float8[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, integer[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, bigint[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, numeric[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict(text, record) IS
	'score one row given whole (a table''s row or any composite), its columns matched to the features by name: the training library''s predict() value';
COMMENT ON FUNCTION predict_proba(text, record) IS
	'score one row given whole, its columns matched to the features by name: the class probabilities';
COMMENT ON FUNCTION predict_raw(text, record) IS
	'score one row given whole, its columns matched to the features by name: the margins before the objective''s transform';

COMMENT ON TYPE classification IS
	'what classify() returns: the predicted class''s label, its index (as predict() gives it for a multi-class model) and the class probabilities';
COMMENT ON FUNCTION predict_label(text, float4[]) IS
	'score one row of a classifier: the predicted class''s label (the model''s class_labels, else the class index in decimal)';
COMMENT ON FUNCTION predict_label(text, float8[]) IS
	'score one row of a classifier: the predicted class''s label (the model''s class_labels, else the class index in decimal)';
COMMENT ON FUNCTION predict_label(text, integer[]) IS
	'score one row of a classifier: the predicted class''s label (the model''s class_labels, else the class index in decimal)';
COMMENT ON FUNCTION predict_label(text, bigint[]) IS
	'score one row of a classifier: the predicted class''s label (the model''s class_labels, else the class index in decimal)';
COMMENT ON FUNCTION predict_label(text, numeric[]) IS
	'score one row of a classifier: the predicted class''s label (the model''s class_labels, else the class index in decimal)';
COMMENT ON FUNCTION predict_label(text, record) IS
	'score one row of a classifier: the predicted class''s label (the model''s class_labels, else the class index in decimal)';
COMMENT ON FUNCTION classify(text, float4[]) IS
	'score one row of a classifier: the predicted class''s label and index and the class probabilities, together';
COMMENT ON FUNCTION classify(text, float8[]) IS
	'score one row of a classifier: the predicted class''s label and index and the class probabilities, together';
COMMENT ON FUNCTION classify(text, integer[]) IS
	'score one row of a classifier: the predicted class''s label and index and the class probabilities, together';
COMMENT ON FUNCTION classify(text, bigint[]) IS
	'score one row of a classifier: the predicted class''s label and index and the class probabilities, together';
COMMENT ON FUNCTION classify(text, numeric[]) IS
	'score one row of a classifier: the predicted class''s label and index and the class probabilities, together';
COMMENT ON FUNCTION classify(text, record) IS
	'score one row of a classifier: the predicted class''s label and index and the class probabilities, together';

COMMENT ON FUNCTION predict_table(text, regclass, text, text[], integer) IS
	'score every row of a table or view in batches: (key, prediction) per row, the key read from an integer column';
COMMENT ON FUNCTION predict_proba_table(text, regclass, text, text[], integer) IS
	'score every row of a table or view in batches: (key, class probabilities) per row';
COMMENT ON FUNCTION predict_raw_table(text, regclass, text, text[], integer) IS
	'score every row of a table or view in batches: (key, margins) per row';
COMMENT ON FUNCTION predict_query(text, text, integer) IS
	'score the rows of a read-only query in batches (first column the key, the rest the features): write AS (key <type>, prediction float8)';
COMMENT ON FUNCTION predict_proba_query(text, text, integer) IS
	'score the rows of a read-only query in batches: write AS (key <type>, probabilities float8[])';
COMMENT ON FUNCTION predict_raw_query(text, text, integer) IS
	'score the rows of a read-only query in batches: write AS (key <type>, margins float8[])';

COMMENT ON FUNCTION set_schedule(text, text, text, integer) IS
	'store a compiler schedule for a model, target and batch size (NULL: every size); a NULL schedule removes it; true when anything changed';
COMMENT ON FUNCTION reset_schedules(text, text) IS
	'remove every stored schedule of a model, tuned or set by hand, for one target (NULL: all), so that it scores with the defaults; returns how many went';
COMMENT ON FUNCTION profile(text, regclass, text, text[]) IS
	'count how often each node of a model is visited over a table''s rows and store it for probability-based tiling; returns the rows read';
COMMENT ON FUNCTION profile(text, text) IS
	'count how often each node of a model is visited over a query''s rows and store it for probability-based tiling; returns the rows read';
COMMENT ON FUNCTION explain(text, integer, text, boolean) IS
	'what the compiler makes of a model for a batch size and target: the schedule and why, the IR at each level (and LLVM IR)';
COMMENT ON FUNCTION reassign_models(regrole, regrole) IS
	'give every model of one role to another, as REASSIGN OWNED does; returns the number of models';

COMMENT ON FUNCTION tune(text, regclass, text, text[], integer[], text, text, interval, boolean) IS
	'search schedules for a model on sample rows (a table, or rows drawn from the model) and store those that beat the default; batch sizes NULL: those scoring uses (1, silvan.batch_calls_size, 4096); one row per batch size, with the speedup of the kernel and, for a stored schedule, of predict_table end to end';
COMMENT ON FUNCTION tune_query(text, text, integer[], text, text, interval, boolean) IS
	'search schedules for a model on the rows of a query (first column a key) and store those that beat the default; batch sizes NULL: those scoring uses (1, silvan.batch_calls_size, 4096); one row per batch size, with the speedup of the kernel and, for a stored schedule, of predict_query end to end';
COMMENT ON FUNCTION tune_async(text, regclass, text, text[], integer[], text, text, interval, boolean) IS
	'queue tune() for the background tuning worker; returns the job''s id (see silvan.tuning_jobs)';
COMMENT ON FUNCTION tune_query_async(text, text, integer[], text, text, interval, boolean) IS
	'queue tune_query() for the background tuning worker; returns the job''s id (see silvan.tuning_jobs)';
COMMENT ON FUNCTION cancel_tuning(bigint) IS
	'cancel a queued or running tuning job; true when it was cancelled';
COMMENT ON FUNCTION devices() IS
	'the GPUs the installed drivers report (none without a driver: a NOTICE says why)';
COMMENT ON VIEW host_profile IS
	'the choices of code generation that depend on this CPU (measured once per host and build, or the fallback), with what the probes timed';
COMMENT ON COLUMN host_profile.choice IS
	'cpu, profile, or a choice of code generation: carry, interleave, vector_walk, gather, code_walk';
COMMENT ON COLUMN host_profile.value IS
	'the CPU, where the profile came from, or the alternative taken';
COMMENT ON COLUMN host_profile.how IS
	'measured, tie (within 3%: the fallback''s pick), unavailable (the CPU lacks what the other needs), fallback, or set';
COMMENT ON COLUMN host_profile.alternatives IS
	'the two alternatives of the choice';
COMMENT ON COLUMN host_profile.us_per_row IS
	'what the probe timed for each alternative: medians of interleaved rounds, microseconds per row';
COMMENT ON COLUMN host_profile.rounds IS
	'interleaved rounds the probe timed; 0: not measured';
COMMENT ON FUNCTION host_profile_rows() IS
	'the rows of the host_profile view: the profile the calling session compiles with';
COMMENT ON FUNCTION measure_host() IS
	'measure the host profile again now and keep it beside the code cache; returns it';
COMMENT ON FUNCTION model_stats_rows() IS
	'the rows of the model_stats view, by model version id';
COMMENT ON VIEW model_stats IS
	'usage per model version: batches and rows scored, time scoring, compiles and code cache loads, last use (every connection''s when silvan is preloaded, else the calling connection''s)';
COMMENT ON COLUMN model_stats.batches IS 'batches scored; a scalar call one row at a time is a batch of one';
COMMENT ON COLUMN model_stats.rows_scored IS 'rows scored';
COMMENT ON COLUMN model_stats.scoring_ms IS 'milliseconds spent scoring batches of more than one row';
COMMENT ON COLUMN model_stats.compiles IS 'times machine code was compiled for the version (per backend and schedule)';
COMMENT ON COLUMN model_stats.cache_loads IS 'times machine code was read from the code cache instead';
COMMENT ON COLUMN model_stats.last_used IS 'the end of the last transaction that scored with the version';
COMMENT ON COLUMN model_stats.scope IS 'server (silvan preloaded: every connection''s scoring) or session (the calling connection''s only)';
COMMENT ON FUNCTION reset_model_stats() IS
	'forget the usage statistics of every model version (of every database when preloaded); returns how many went';
COMMENT ON FUNCTION describe(text) IS
	'a model version in plain words, one property per row: version, inputs, outputs, trees, machine code, schedules, time per row measured on this host';
COMMENT ON COLUMN registry.acl IS 'the privileges granted on the model (silvan.grant(), silvan.revoke()); NULL or empty: its owner''s alone';
COMMENT ON COLUMN model.source_bytes IS 'size of the model as loaded, in bytes';
COMMENT ON FUNCTION model_acl_allows(aclitem[], regrole, text) IS
	'whether the calling role holds any of the privileges listed (usage, select, update) on a model with this acl and owner: the views'' filter';
COMMENT ON VIEW model_sources IS 'the source of every version of the models the caller holds SELECT on';
COMMENT ON COLUMN model_sources.source IS 'the model as loaded, for text formats (NULL for binary formats)';
COMMENT ON COLUMN model_sources.source_binary IS 'the model as loaded, for binary formats such as ONNX (NULL for text formats)';
COMMENT ON VIEW model_grants IS 'the privileges granted on each model the caller holds a privilege on (its owner holds them all)';
COMMENT ON COLUMN model_grants.grantee IS 'the role granted the privilege, or PUBLIC';
COMMENT ON COLUMN model_grants.privilege IS 'usage, select or update';
COMMENT ON FUNCTION silvan.grant(text, text, text) IS
	'grant privileges on a model (usage, select, update or all, comma-separated) to a role or PUBLIC; the owner''s to give';
COMMENT ON FUNCTION silvan.revoke(text, text, text) IS
	'revoke privileges on a model (usage, select, update or all, comma-separated) from a role or PUBLIC';
COMMENT ON FUNCTION has_model_privilege(text, text) IS
	'whether the calling role holds a privilege (usage, select, update) on a model';
COMMENT ON FUNCTION has_model_privilege(regrole, text, text) IS
	'whether a role holds a privilege (usage, select, update) on a model';

COMMENT ON FUNCTION schedule_rows() IS
	'the rows of silvan.schedules: the schedules of the models the calling role holds SELECT on';
COMMENT ON FUNCTION model_source_rows() IS
	'the rows of silvan.model_sources: the sources of the models the calling role holds SELECT on';
COMMENT ON FUNCTION tuning_job_rows() IS
	'the rows of silvan.tuning_jobs: the jobs of the roles whose privileges the calling role has';

-- Citus: the catalog tables that scoring reads become reference tables, so
-- that every write on the coordinator reaches every node in its
-- transaction (two-phase commit) and each node scores from its own copy
-- (citus.c).  Their foreign keys go first: Citus would otherwise make the
-- tables that reference them coordinator-only; silvan's functions keep
-- the rows consistent themselves.  The coordinator's own tables keep no
-- rows afterwards.  Idempotent: a later call copies the catalog to nodes
-- added since.
CREATE FUNCTION distribute()
	RETURNS TABLE (catalog_table regclass, nodes integer)
	LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET client_min_messages = warning AS $$
DECLARE
	tables constant text[] := ARRAY['registry', 'model', 'model_alias', 'schedule', 'profile'];
	t text;
	c record;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
		RAISE EXCEPTION 'silvan.distribute() needs Citus'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'The extension citus is not installed in this database.',
				  HINT = 'Without Citus there is nothing to distribute: every model is on this server.';
	END IF;
	IF NOT pg_catalog.citus_is_coordinator() THEN
		RAISE EXCEPTION 'silvan.distribute() runs on the Citus coordinator'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'This node is not the coordinator of its Citus cluster.';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node n WHERE n.groupid OPERATOR(pg_catalog.=) 0) THEN
		RAISE EXCEPTION 'silvan.distribute() needs the coordinator in Citus'' metadata'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'pg_dist_node has no row for the coordinator (group 0), so reference tables have no copy on it and silvan could not read its catalog there.',
				  HINT = 'Run SELECT citus_set_coordinator_host(''<its host name>'', <its port>); first.';
	END IF;
	PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
	FOR c IN SELECT con.conrelid::pg_catalog.regclass AS rel, con.conname
			   FROM pg_catalog.pg_constraint con
			  WHERE con.contype OPERATOR(pg_catalog.=) 'f'
				AND con.connamespace OPERATOR(pg_catalog.=) 'silvan'::pg_catalog.regnamespace
				AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
								 WHERE p.logicalrelid OPERATOR(pg_catalog.=) con.conrelid)
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
	END LOOP;
	FOREACH t IN ARRAY tables LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
						WHERE p.logicalrelid OPERATOR(pg_catalog.=) pg_catalog.format('silvan.%I', t)::pg_catalog.regclass) THEN
			PERFORM pg_catalog.create_reference_table(pg_catalog.format('silvan.%I', t)::pg_catalog.regclass);
			PERFORM pg_catalog.truncate_local_data_after_distributing_table(pg_catalog.format('silvan.%I', t)::pg_catalog.regclass);
		END IF;
	END LOOP;
	PERFORM pg_catalog.replicate_reference_tables('block_writes');
	RETURN QUERY
		SELECT s.logicalrelid::pg_catalog.regclass, pg_catalog.count(p.placementid)::integer
		  FROM pg_catalog.unnest(tables) WITH ORDINALITY AS u(name, n)
		  JOIN pg_catalog.pg_dist_shard s
			ON s.logicalrelid OPERATOR(pg_catalog.=) pg_catalog.format('silvan.%I', u.name)::pg_catalog.regclass
		  JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid
		 GROUP BY s.logicalrelid, u.n
		 ORDER BY u.n;
END
$$;
REVOKE ALL ON FUNCTION distribute() FROM PUBLIC;
COMMENT ON FUNCTION distribute() IS
	'on a Citus coordinator: make silvan''s catalog reference tables, so that models, schedules and grants reach every node in the transaction that writes them; idempotent, and copies them to nodes added since; returns each catalog table with its number of copies';

-- For the update scripts of later versions: apply an ALTER TABLE action to
-- a catalog table.  On Citus, ALTER EXTENSION UPDATE runs the script on
-- every node; there the table's DDL is not propagated (Citus would send it
-- to the other nodes, which run it themselves) and the same action is
-- applied to this node's placement of the table, so that each node's
-- table and copy keep the same columns.
CREATE FUNCTION silvan_internal.alter_catalog_table(catalog_table text, action text)
	RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	shell regclass := pg_catalog.format('silvan.%I', catalog_table)::pg_catalog.regclass;
	placement regclass;
	propagation text;
BEGIN
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL OR NOT EXISTS (
		SELECT 1 FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) shell) THEN
		EXECUTE pg_catalog.format('ALTER TABLE %s %s', shell, action);
		RETURN;
	END IF;
	propagation := pg_catalog.current_setting('citus.enable_ddl_propagation');
	PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
	EXECUTE pg_catalog.format('ALTER TABLE %s %s', shell, action);
	SELECT pg_catalog.to_regclass(pg_catalog.format('silvan.%I', catalog_table || '_' || s.shardid)) INTO placement
	  FROM pg_catalog.pg_dist_shard s WHERE s.logicalrelid OPERATOR(pg_catalog.=) shell;
	IF placement IS NOT NULL THEN
		PERFORM pg_catalog.set_config('citus.enable_manual_changes_to_shards', 'on', true);
		EXECUTE pg_catalog.format('ALTER TABLE %s %s', placement, action);
	END IF;
	PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', propagation, true);
END
$$;
REVOKE ALL ON FUNCTION silvan_internal.alter_catalog_table(text, text) FROM PUBLIC;
COMMENT ON FUNCTION silvan_internal.alter_catalog_table(text, text) IS
	'for update scripts: ALTER TABLE on a catalog table, and on this node''s Citus placement of it when the catalog is distributed';
