-- silvan: tree-ensemble models compiled to native code inside PostgreSQL
-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION silvan" to load this file. \quit

-- Models: one row per loaded model.  "forest" is the validated Forest IR in
-- silvan's compact binary form, so a backend loads a model without parsing
-- its source again; "revision" changes whenever the row is replaced and
-- keys every backend's cache of compiled code.
CREATE SEQUENCE model_revision_seq;

CREATE TABLE model (
	id bigserial PRIMARY KEY,
	name text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 63),
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
	source text NOT NULL
);

-- Schedules: compiler schedules per model, target and batch size (NULL:
-- any batch size), written by set_schedule and the tuner.
CREATE TABLE schedule (
	model_id bigint NOT NULL REFERENCES model (id) ON DELETE CASCADE,
	target text NOT NULL DEFAULT 'cpu' CHECK (target IN ('cpu', 'cuda', 'rocm')),
	batch_size integer CHECK (batch_size IS NULL OR batch_size > 0),
	schedule text NOT NULL,
	created timestamptz NOT NULL DEFAULT now()
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

-- pg_dump keeps the rows of both tables
SELECT pg_catalog.pg_extension_config_dump('model', '');
SELECT pg_catalog.pg_extension_config_dump('model_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('model_revision_seq', '');
SELECT pg_catalog.pg_extension_config_dump('schedule', '');
SELECT pg_catalog.pg_extension_config_dump('profile', '');

-- Every change to the catalog tells every backend to revalidate its cache.
-- Only these triggers may use the function.
CREATE FUNCTION catalog_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'silvan_catalog_changed' LANGUAGE C
	SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION catalog_changed() FROM PUBLIC;
CREATE TRIGGER model_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model
	FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER schedule_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON schedule
	FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER profile_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON profile
	FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();

GRANT USAGE ON SCHEMA silvan TO PUBLIC;

-- Everyone may read the catalog; writes go through load_model, drop_model,
-- set_schedule, profile and reassign_models, which check the caller's
-- rights and then write as the catalog's owner, under a locked search_path.
REVOKE ALL ON model, schedule, profile FROM PUBLIC;
GRANT SELECT ON model, schedule, profile TO PUBLIC;

CREATE VIEW models AS
	SELECT id, name, format, objective, task, num_features, num_classes,
		   num_trees, max_depth, owner, created, revision,
		   octet_length(source) AS source_bytes
	  FROM model;
GRANT SELECT ON models TO PUBLIC;

-- Loading and dropping models
CREATE FUNCTION load_model(name text, model text, format text DEFAULT 'auto',
						   replace boolean DEFAULT false) RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_load_model' LANGUAGE C VOLATILE;

CREATE FUNCTION drop_model(name text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_drop_model' LANGUAGE C VOLATILE STRICT;

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

-- Scoring a table in batches
CREATE FUNCTION predict_table(model text, source regclass, key_column text,
							  feature_columns text[] DEFAULT NULL,
							  batch_size integer DEFAULT 4096)
	RETURNS TABLE (key bigint, prediction float8)
	AS 'MODULE_PATHNAME', 'silvan_predict_table' LANGUAGE C STABLE;
CREATE FUNCTION predict_proba_table(model text, source regclass, key_column text,
									feature_columns text[] DEFAULT NULL,
									batch_size integer DEFAULT 4096)
	RETURNS TABLE (key bigint, probabilities float8[])
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_table' LANGUAGE C STABLE;
CREATE FUNCTION predict_raw_table(model text, source regclass, key_column text,
								  feature_columns text[] DEFAULT NULL,
								  batch_size integer DEFAULT 4096)
	RETURNS TABLE (key bigint, margins float8[])
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_table' LANGUAGE C STABLE;

-- Scoring any query in batches: its first column is the key, the rest features
CREATE FUNCTION predict_query(model text, query text, batch_size integer DEFAULT 4096)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'silvan_predict_query' LANGUAGE C VOLATILE;
CREATE FUNCTION predict_proba_query(model text, query text, batch_size integer DEFAULT 4096)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_query' LANGUAGE C VOLATILE;
CREATE FUNCTION predict_raw_query(model text, query text, batch_size integer DEFAULT 4096)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_query' LANGUAGE C VOLATILE;

-- Schedules: stored per model, target and batch size (NULL: every size);
-- predict* use the one closest to the batch they run.  A NULL schedule
-- removes the stored one.
CREATE FUNCTION set_schedule(model text, schedule text, target text DEFAULT 'cpu',
							 batch_size integer DEFAULT NULL) RETURNS void
	AS 'MODULE_PATHNAME', 'silvan_set_schedule' LANGUAGE C VOLATILE;

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
