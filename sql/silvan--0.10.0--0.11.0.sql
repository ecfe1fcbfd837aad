-- silvan 0.10.0 -> 0.11.0: models have versions, privileges, labels and
-- usage statistics.  Every model becomes version 1 of its name, deployed,
-- with its schedules, profile and tuning jobs; loads under a name that
-- exists add versions; deploy(), rollback(), set_alias(), rename_model()
-- and set_metadata() manage them.  A model whose name has an "@" keeps it,
-- and is still scored by that name; new names may not have one.  The
-- models keep their behaviour: PUBLIC may score with them and read them
-- (USAGE and SELECT, silvan.grant()); new ones are their owner's.  Also:
-- predict_label() and classify(), describe(), model_stats, and tune()'s
-- end-to-end figures.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.11.0'" to load this file. \quit

CREATE TABLE registry (
	name text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 63),
	version integer NOT NULL CHECK (version > 0),
	last_version integer NOT NULL CHECK (last_version >= version),
	rollback_to integer[] NOT NULL DEFAULT '{}',
	deployed timestamptz NOT NULL DEFAULT now(),
	deployed_by regrole NOT NULL DEFAULT current_user::regrole,
	acl aclitem[]
);

INSERT INTO registry (name, version, last_version, deployed, deployed_by)
	SELECT name, 1, 1, created, owner FROM model;

ALTER TABLE model DROP CONSTRAINT model_name_key;
ALTER TABLE model
	ADD COLUMN version integer NOT NULL DEFAULT 1 CONSTRAINT model_version_check CHECK (version > 0),
	ADD COLUMN loaded_by regrole NOT NULL DEFAULT current_user::regrole,
	ADD COLUMN source_sha256 text,
	ADD COLUMN description text,
	ADD COLUMN metadata jsonb,
	ADD COLUMN source_bytes integer,
	ADD CONSTRAINT model_name_version_key UNIQUE (name, version),
	ADD CONSTRAINT model_name_fkey FOREIGN KEY (name) REFERENCES registry (name)
		ON UPDATE CASCADE ON DELETE CASCADE;
UPDATE model SET loaded_by = owner,
	source_sha256 = encode(sha256(coalesce(source_binary, convert_to(source, getdatabaseencoding()))), 'hex'),
	source_bytes = coalesce(octet_length(source), octet_length(source_binary));
-- the models loaded before are everyone's to score with and read, as they
-- were; security.md says how to make one private (silvan.revoke)
UPDATE registry r SET acl = ARRAY[format('=Ur/%s',
		quote_ident(coalesce((SELECT a.rolname FROM pg_catalog.pg_roles a JOIN model m ON m.owner = a.oid
							   WHERE m.name = r.name LIMIT 1), current_user::text)))::aclitem];

CREATE TABLE model_alias (
	name text NOT NULL,
	alias text NOT NULL CHECK (alias ~ '^[A-Za-z_][A-Za-z0-9_]*$' AND length(alias) <= 63
							   AND alias <> 'latest'),
	version integer NOT NULL,
	created timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (name, alias),
	FOREIGN KEY (name, version) REFERENCES model (name, version) ON UPDATE CASCADE ON DELETE CASCADE
);

SELECT pg_catalog.pg_extension_config_dump('registry', '');
SELECT pg_catalog.pg_extension_config_dump('model_alias', '');
CREATE TRIGGER registry_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON registry
	FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
CREATE TRIGGER model_alias_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model_alias
	FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
REVOKE ALL ON registry, model_alias FROM PUBLIC;
GRANT SELECT ON registry, model_alias TO PUBLIC;
-- a model's source, binary form, schedules and profiles are shown by the
-- views to the roles with SELECT on it
REVOKE SELECT ON model, schedule, profile FROM PUBLIC;
GRANT SELECT (id, name, format, objective, task, num_features, num_classes, num_trees, max_depth,
			  created, owner, revision, feature_names, feature_types, class_labels, version,
			  loaded_by, source_sha256, description, metadata, source_bytes) ON model TO PUBLIC;

-- the views show versions (the deployed one where one row per model),
-- to the roles that hold a privilege on the model
-- Whether the calling role holds any of privileges ('usage', 'select',
-- 'update', comma-separated) on a model, given its registry acl and owner:
-- the views' filter (has_model_privilege() asks by the model's name)
CREATE FUNCTION model_acl_allows(acl aclitem[], owner regrole, privileges text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_model_acl_allows' LANGUAGE C STABLE PARALLEL SAFE;

-- The views show the models the caller holds a privilege on.  Those over
-- the models' rows run with the caller's rights (security_invoker), so
-- that row-level security an administrator puts on silvan.model hides a
-- model's row in them too; those over what only SELECT on a model shows
-- (schedules, sources) read it with their owner's rights, as security
-- barriers, to the roles with SELECT on the model.
CREATE OR REPLACE VIEW models WITH (security_invoker = true) AS
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
CREATE OR REPLACE VIEW model_features WITH (security_invoker = true) AS
	SELECT m.name AS model, p.position, m.feature_names[p.position] AS name,
		   m.feature_types[p.position] AS type, m.version
	  FROM model m JOIN registry r ON r.name = m.name AND r.version = m.version,
		   generate_series(1, m.num_features) AS p(position)
	 WHERE model_acl_allows(r.acl, m.owner, 'usage, select, update');
GRANT SELECT ON model_features TO PUBLIC;

-- The stored schedules by model name and version: batch_size NULL applies to every size
ALTER VIEW schedules RESET (security_invoker);
CREATE OR REPLACE VIEW schedules WITH (security_barrier = true) AS
	SELECT m.name AS model, s.target, s.batch_size, s.schedule, s.origin, s.provenance, s.created,
		   m.version
	  FROM schedule s JOIN model m ON m.id = s.model_id JOIN registry r ON r.name = m.name
	 WHERE model_acl_allows(r.acl, m.owner, 'select');
GRANT SELECT ON schedules TO PUBLIC;

-- Every version's source, to the roles with SELECT on its model
CREATE VIEW model_sources WITH (security_barrier = true) AS
	SELECT m.name AS model, m.version, m.format, m.source, m.source_binary, m.source_sha256
	  FROM model m JOIN registry r ON r.name = m.name
	 WHERE model_acl_allows(r.acl, m.owner, 'select');
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

CREATE OR REPLACE VIEW tuning_jobs WITH (security_barrier = true) AS
	SELECT j.id AS job, m.name AS model, j.owner,
		   CASE WHEN j.state = 'running' AND NOT EXISTS
					(SELECT 1 FROM pg_catalog.pg_stat_activity a
					  WHERE a.pid = j.worker_pid AND a.backend_type = 'silvan tuning worker')
				THEN 'failed' ELSE j.state END AS state,
		   j.phase, j.batch_size, j.candidates_done, j.candidates_planned,
		   j.best_us_per_row, j.default_us_per_row,
		   CASE WHEN j.state = 'running' AND NOT EXISTS
					(SELECT 1 FROM pg_catalog.pg_stat_activity a
					  WHERE a.pid = j.worker_pid AND a.backend_type = 'silvan tuning worker')
				THEN 'the tuning worker exited before finishing the job' ELSE j.error END AS error,
		   j.result, j.batch_sizes, j.strategy, j.budget, j.exact,
		   j.created, j.started, j.finished, m.version
	  FROM tuning_job j JOIN model m ON m.id = j.model_id
	 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE');

-- A model version in plain words, one property per row (explain() is the compiler's view)
CREATE FUNCTION describe(model text) RETURNS TABLE (property text, value text)
	AS 'MODULE_PATHNAME', 'silvan_describe' LANGUAGE C VOLATILE STRICT;

-- tune() and tune_query() report the speedup of the scoring function end
-- to end: made anew with their new result columns, with the EXECUTE
-- privileges they had
DO $upgrade$
DECLARE
	forms text[][] := ARRAY[
		['tune', 'model text, sample regclass DEFAULT NULL, key_column text DEFAULT NULL, feature_columns text[] DEFAULT NULL, batch_sizes integer[] DEFAULT NULL, target text DEFAULT ''cpu'', strategy text DEFAULT ''heuristic'', budget interval DEFAULT ''2 minutes'', exact boolean DEFAULT true',
		 'text, regclass, text, text[], integer[], text, text, interval, boolean', 'silvan_tune_table'],
		['tune_query', 'model text, query text, batch_sizes integer[] DEFAULT NULL, target text DEFAULT ''cpu'', strategy text DEFAULT ''heuristic'', budget interval DEFAULT ''2 minutes'', exact boolean DEFAULT true',
		 'text, text, integer[], text, text, interval, boolean', 'silvan_tune_query']];
	old_acl aclitem[];
	grantee regrole;
	signature text;
BEGIN
	FOR i IN 1 .. 2 LOOP
		signature := format('@extschema@.%s(%s)', forms[i][1], forms[i][3]);
		SELECT p.proacl INTO old_acl FROM pg_catalog.pg_proc p WHERE p.oid = signature::regprocedure;
		EXECUTE format('DROP FUNCTION %s', signature);
		EXECUTE format($f$CREATE FUNCTION @extschema@.%s(%s)
	RETURNS TABLE (batch_size integer, schedule text, us_per_row float8,
				   default_us_per_row float8, speedup float8, stored boolean,
				   candidates integer, seconds float8, rows_from text,
				   end_to_end_us_per_row float8, default_end_to_end_us_per_row float8,
				   end_to_end_speedup float8)
	AS 'MODULE_PATHNAME', %L LANGUAGE C VOLATILE$f$, forms[i][1], forms[i][2], forms[i][4]);
		IF old_acl IS NOT NULL THEN
			EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', signature);
			FOR grantee IN SELECT a.grantee::regrole FROM pg_catalog.aclexplode(old_acl) AS a
							WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 LOOP
				EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', signature, grantee);
			END LOOP;
			IF EXISTS (SELECT 1 FROM pg_catalog.aclexplode(old_acl) AS a
						WHERE a.privilege_type = 'EXECUTE' AND a.grantee = 0) THEN
				EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', signature);
			END IF;
		END IF;
	END LOOP;
END
$upgrade$;

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

-- load_model() takes deploy, description and metadata: both functions are
-- made anew, with the EXECUTE privileges an administrator gave the old ones
-- (security.md: revoked from PUBLIC, granted to the roles that may load)
DO $upgrade$
DECLARE
	forms text[][] := ARRAY[['text', 'silvan_load_model'], ['bytea', 'silvan_load_model_bytes']];
	old_acl aclitem[];
	grantee regrole;
	signature text;
BEGIN
	FOR i IN 1 .. 2 LOOP
		signature := format('@extschema@.load_model(text, %s, text, boolean, boolean, boolean, text, jsonb, text[])',
							forms[i][1]);
		SELECT p.proacl INTO old_acl FROM pg_catalog.pg_proc p
		 WHERE p.oid = format('@extschema@.load_model(text, %s, text, boolean, boolean)', forms[i][1])::regprocedure;
		EXECUTE format('DROP FUNCTION @extschema@.load_model(text, %s, text, boolean, boolean)', forms[i][1]);
		EXECUTE format($f$CREATE FUNCTION @extschema@.load_model(name text, model %s, format text DEFAULT 'auto',
						   replace boolean DEFAULT false, tune boolean DEFAULT false,
						   deploy boolean DEFAULT true, description text DEFAULT NULL,
						   metadata jsonb DEFAULT NULL, class_labels text[] DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', %L LANGUAGE C VOLATILE$f$, forms[i][1], forms[i][2]);
		IF old_acl IS NOT NULL THEN
			EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', signature);
			FOR grantee IN SELECT a.grantee::regrole FROM pg_catalog.aclexplode(old_acl) AS a
							WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 LOOP
				EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', signature, grantee);
			END LOOP;
			IF EXISTS (SELECT 1 FROM pg_catalog.aclexplode(old_acl) AS a
						WHERE a.privilege_type = 'EXECUTE' AND a.grantee = 0) THEN
				EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', signature);
			END IF;
		END IF;
	END LOOP;
END
$upgrade$;

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
COMMENT ON COLUMN model.owner IS 'the model''s owner (the same on every version); it, its members and superusers may load versions, deploy and drop it';
COMMENT ON COLUMN model.revision IS 'a number of its own per version: keys every backend''s compiled code';
COMMENT ON SEQUENCE model_revision_seq IS 'revisions of silvan.model: a new one for each version loaded';

COMMENT ON VIEW models IS 'the loaded models (without their source), one row per model: its deployed version';
COMMENT ON COLUMN models.owner IS 'the model''s owner; it, its members and superusers may load versions, deploy and drop it';
COMMENT ON COLUMN models.created IS 'when the deployed version was loaded';
COMMENT ON COLUMN models.revision IS 'a number of its own per version: keys compiled code';
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

COMMENT ON VIEW schedules IS 'the stored compiler schedules, by model name and version';
COMMENT ON COLUMN schedules.version IS 'the model version the schedule belongs to';
COMMENT ON COLUMN tuning_jobs.version IS 'the model version the job tunes';

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

COMMENT ON COLUMN model.class_labels IS 'the labels of the classes predict() returns the index of (from an ONNX file or load_model''s class_labels; NULL otherwise)';
COMMENT ON COLUMN models.class_labels IS 'the labels of the classes predict() returns the index of (from an ONNX file or load_model''s class_labels; NULL otherwise)';

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
COMMENT ON FUNCTION tune(text, regclass, text, text[], integer[], text, text, interval, boolean) IS
	'search schedules for a model on sample rows (a table, or rows drawn from the model) and store those that beat the default; batch sizes NULL: those scoring uses (1, silvan.batch_calls_size, 4096); one row per batch size, with the speedup of the kernel and, for a stored schedule, of predict_table end to end';
COMMENT ON FUNCTION tune_query(text, text, integer[], text, text, interval, boolean) IS
	'search schedules for a model on the rows of a query (first column a key) and store those that beat the default; batch sizes NULL: those scoring uses (1, silvan.batch_calls_size, 4096); one row per batch size, with the speedup of the kernel and, for a stored schedule, of predict_query end to end';
