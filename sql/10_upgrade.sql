-- Users' data survives upgrades: install the released 0.1.0, load models,
-- schedules and a profile, update to the current version, and check that
-- they are all there and predict the same; the updated extension has the
-- same objects, privileges and settings as a fresh install.  Then from
-- later releases, each with what its update changes.
\set QUIET on
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.1.0';
RESET client_min_messages;
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
\set fx binary_logistic
\i sql/fixture.psql
ALTER TABLE fx_in RENAME TO binary_in;
\set fx multi_softprob
\i sql/fixture.psql
\set lgb `cat test/fixtures/lightgbm_small.txt`
SELECT silvan.load_model('lgb_small', :'lgb') > 0 AS loaded;
\set named `cat test/fixtures/named_features.json`
SELECT silvan.load_model('named_features', :'named') > 0 AS loaded;
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 64);
SELECT silvan.set_schedule('multi_softprob', 'reorder(tree, batch)');
SELECT silvan.profile('multi_softprob', 'fx_in', 'id') AS profiled_rows;
CREATE TABLE before_update AS
	SELECT 'binary_logistic' AS model, key, prediction
	  FROM silvan.predict_table('binary_logistic', 'binary_in', 'id', batch_size => 64)
	UNION ALL
	SELECT 'multi_softprob', key, prediction FROM silvan.predict_table('multi_softprob', 'fx_in', 'id')
	UNION ALL
	SELECT 'lgb_small', x, silvan.predict('lgb_small', ARRAY[x, x % 4]::float8[])
	  FROM generate_series(-3, 3) AS x;
CREATE TABLE catalog_before AS
	SELECT m.name, m.id, m.revision, m.owner, m.forest, s.batch_size, s.schedule, p.node_hits
	  FROM silvan.model m LEFT JOIN silvan.schedule s ON s.model_id = m.id
	  LEFT JOIN silvan.profile p ON p.model_id = m.id;

ALTER EXTENSION silvan UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
-- a fresh backend, as after a server restart with the new library
\c
SELECT count(*) AS rows_lost FROM (
	SELECT name, id, revision, owner, forest, batch_size, schedule, node_hits FROM catalog_before
	EXCEPT
	SELECT m.name, m.id, m.revision, m.owner, m.forest, s.batch_size, s.schedule, p.node_hits
	  FROM silvan.model m LEFT JOIN silvan.schedule s ON s.model_id = m.id
	  LEFT JOIN silvan.profile p ON p.model_id = m.id) AS lost;
SELECT split_part(silvan.explain('binary_logistic', 64), E'\n', 1) AS binary_schedule,
       split_part(silvan.explain('multi_softprob', 1000), E'\n', 1) AS multi_schedule;
SELECT b.model, count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed
  FROM before_update AS b
  LEFT JOIN (SELECT 'binary_logistic' AS model, key, prediction
               FROM silvan.predict_table('binary_logistic', 'binary_in', 'id', batch_size => 64)
             UNION ALL
             SELECT 'multi_softprob', key, prediction FROM silvan.predict_table('multi_softprob', 'fx_in', 'id')
             UNION ALL
             SELECT 'lgb_small', x, silvan.predict('lgb_small', ARRAY[x, x % 4]::float8[])
               FROM generate_series(-3, 3) AS x) AS a USING (model, key)
 GROUP BY b.model ORDER BY b.model;
-- 0.11.0: each model is version 1 of its name, deployed, with its schedules
SELECT v.name, v.version, v.deployed, count(s.batch_size) + count(s.schedule) AS schedule_fields
  FROM silvan.model_versions v LEFT JOIN silvan.schedules s ON s.model = v.name AND s.version = v.version
 GROUP BY v.name, v.version, v.deployed ORDER BY v.name;
-- what 0.2.0 added works on the updated catalog
SELECT silvan.reassign_models(current_user::regrole, current_user::regrole) AS reassigned;
-- 0.3.0: the models loaded before have their feature names, read from their source
SELECT model, array_agg(name ORDER BY position) AS names, array_agg(type ORDER BY position) AS types
  FROM silvan.model_features GROUP BY model ORDER BY model;
CREATE TABLE named_rows AS
	SELECT id, f[10] AS s6, f[9] AS s5, f[8] AS s4, f[7] AS s3, f[6] AS s2, f[5] AS s1,
		   f[4] AS bp, f[3] AS bmi, f[2] AS sex, f[1] AS age
	  FROM (SELECT 1 AS id, ARRAY[59, 1, 32.1, 101, 157, 93.2, 38, 4, 4.8598, 87]::real[] AS f) AS r;
SELECT p.prediction = silvan.predict('named_features', ARRAY[59, 1, 32.1, 101, 157, 93.2, 38, 4, 4.8598, 87]::real[])
	   AS by_name
  FROM silvan.predict_table('named_features', 'named_rows', 'id') AS p;
SELECT silvan.predict('lgb_small', ARRAY[1, 3]) = silvan.predict('lgb_small', ARRAY[1, 3]::float8[]) AS int_arrays;
-- 0.4.0: tuning on the updated catalog; the schedules set by hand stay
-- (the space without the CPU-dependent vector walks, so the counts are every host's)
SET silvan.vector_walk = off;
SELECT batch_size, candidates, stored
  FROM silvan.tune('binary_logistic', 'binary_in', 'id', batch_sizes => '{64}', budget => '1 ms');
SELECT model, batch_size, origin FROM silvan.schedules ORDER BY model;
SELECT count(*) AS jobs FROM silvan.tuning_jobs;

-- the updated extension's objects equal a fresh install's: each object,
-- a function's, table's or schema's privileges and settings, and every
-- description (\df+, \d+: objects and the columns of tables and views)
CREATE TEMP VIEW extension_objects AS
	SELECT pg_describe_object(d.classid, d.objid, 0) AS object,
	       CASE WHEN d.classid = 'pg_proc'::regclass
	            THEN (SELECT array_to_string(p.proacl, ',') || ' ' || coalesce(array_to_string(p.proconfig, ','), '') ||
	                         ' ' || p.provolatile::text || p.proparallel::text || ' ' || p.prosupport::regproc::text
	                    FROM pg_proc p WHERE p.oid = d.objid)
	            WHEN d.classid = 'pg_class'::regclass
	            THEN (SELECT array_to_string(c.relacl, ',') FROM pg_class c WHERE c.oid = d.objid)
	            WHEN d.classid = 'pg_namespace'::regclass
	            THEN (SELECT array_to_string(n.nspacl, ',') FROM pg_namespace n WHERE n.oid = d.objid) END AS acl_config,
	       obj_description(d.objid, d.classid::regclass::name) AS description
	  FROM pg_depend d
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'silvan')
	UNION ALL
	SELECT 'schema silvan', NULL, obj_description('silvan'::regnamespace, 'pg_namespace')
	UNION ALL
	SELECT 'column ' || a.attrelid::regclass || '.' || a.attname,
	       a.attnum || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attstorage::text,
	       col_description(a.attrelid, a.attnum)
	  FROM pg_attribute a
	 WHERE a.attrelid IN (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	                       WHERE n.nspname = 'silvan' AND c.relkind IN ('r', 'v'))
	   AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT 'constraint ' || c.conname, pg_get_constraintdef(c.oid), NULL
	  FROM pg_constraint c
	 WHERE c.conrelid IN (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	                       WHERE n.nspname = 'silvan' AND c.relkind = 'r');
CREATE TABLE updated_objects AS SELECT * FROM extension_objects;
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan;
RESET client_min_messages;
CREATE TABLE fresh_objects AS SELECT * FROM extension_objects;
SELECT count(*) AS objects FROM updated_objects;
(SELECT 'only updated' AS side, * FROM updated_objects EXCEPT SELECT 'only updated', * FROM fresh_objects)
UNION ALL
(SELECT 'only fresh', * FROM fresh_objects EXCEPT SELECT 'only fresh', * FROM updated_objects);
DROP TABLE before_update, catalog_before, updated_objects, fresh_objects, binary_in, fx_in, fx_exp, named_rows;

-- from 0.3.0, with a schedule and a profile
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.3.0';
RESET client_min_messages;
\set fx binary_logistic
\i sql/fixture.psql
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)', batch_size => 16);
SELECT silvan.profile('binary_logistic', 'fx_in', 'id') AS profiled_rows;
CREATE TABLE before_update AS
	SELECT key, prediction FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16);
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT model, batch_size, origin, schedule FROM silvan.schedules;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed
  FROM before_update AS b
  JOIN silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16) AS a USING (key);
SELECT rows_from FROM silvan.tune('binary_logistic', batch_sizes => '{16}', budget => '1 ms');
DROP TABLE before_update, fx_in, fx_exp;

-- from 0.6.0: models, schedules and profiles kept and
-- predicting the same; the update adds whole-row calls, which score them
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.6.0';
RESET client_min_messages;
\set fx named_features
\i sql/fixture.psql
SELECT silvan.set_schedule('named_features', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 16);
SELECT silvan.profile('named_features', 'fx_in', 'id') AS profiled_rows;
CREATE TABLE before_update AS
	SELECT key, prediction FROM silvan.predict_table('named_features', 'fx_in', 'id', batch_size => 16);
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT model, batch_size, origin, schedule FROM silvan.schedules;
SELECT count(*) AS profiles FROM silvan.profile;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed
  FROM before_update AS b
  JOIN silvan.predict_table('named_features', 'fx_in', 'id', batch_size => 16) AS a USING (key);
SELECT count(*) FILTER (WHERE silvan.predict('named_features', r)::real IS DISTINCT FROM e[1]::real) AS whole_rows_wrong
  FROM (SELECT id, f[1] AS age, f[2] AS sex, f[3] AS bmi, f[4] AS bp, f[5] AS s1, f[6] AS s2,
			   f[7] AS s3, f[8] AS s4, f[9] AS s5, f[10] AS s6 FROM fx_in) AS r JOIN fx_exp USING (id);
DROP TABLE before_update, fx_in, fx_exp;

-- from 0.7.0: models, schedules and profiles kept and predicting the same;
-- the update makes the table functions parallel safe, so that a parallel
-- plan scores their source in every worker
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.7.0';
RESET client_min_messages;
\set fx binary_logistic
\i sql/fixture.psql
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 16);
SELECT silvan.profile('binary_logistic', 'fx_in', 'id') AS profiled_rows;
CREATE TABLE wide_in AS SELECT id, f, repeat('x', 500) AS pad FROM fx_in;
CREATE TABLE before_update AS
	SELECT key, prediction FROM silvan.predict_table('binary_logistic', 'wide_in', 'id', '{f}', batch_size => 16);
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT model, batch_size, origin, schedule FROM silvan.schedules;
SELECT count(*) AS profiles FROM silvan.profile;
\i sql/parallel.psql
EXPLAIN (COSTS OFF)
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'wide_in', 'id', '{f}', batch_size => 16);
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed,
	   count(*) FILTER (WHERE a.prediction::real IS DISTINCT FROM e[1]::real) AS differ_from_xgboost
  FROM before_update AS b
  JOIN silvan.predict_table('binary_logistic', 'wide_in', 'id', '{f}', batch_size => 16) AS a USING (key)
  JOIN fx_exp AS x ON x.id = b.key;
\i sql/parallel_reset.psql
DROP TABLE before_update, wide_in, fx_in, fx_exp;

-- from 0.11.0: versions, aliases, schedules, profiles and grants kept,
-- predicting the same; the update adds distribute(), which refuses
-- without Citus
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.11.0';
RESET client_min_messages;
\set fx binary_logistic
\i sql/fixture.psql
SELECT silvan.load_model('binary_logistic', source, replace => true, deploy => false) > 0 AS version_2
  FROM silvan.model WHERE name = 'binary_logistic';
SELECT silvan.set_alias('binary_logistic', 'candidate', 2);
SELECT silvan.set_schedule('binary_logistic@2', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 16);
SELECT silvan.profile('binary_logistic@1', 'fx_in', 'id') AS profiled_rows;
CREATE ROLE regress_scorer;
SELECT silvan.grant('binary_logistic', 'regress_scorer', 'usage');
CREATE TABLE before_update AS
	SELECT id, silvan.predict('binary_logistic', f) AS deployed, silvan.predict('binary_logistic@candidate', f) AS candidate
	  FROM fx_in;
CREATE TABLE catalog_before AS
	SELECT m.name, m.version, m.id, m.revision, m.forest, a.alias, s.batch_size, s.schedule, p.node_hits, r.acl
	  FROM silvan.model m JOIN silvan.registry r USING (name)
	  LEFT JOIN silvan.model_alias a ON a.name = m.name AND a.version = m.version
	  LEFT JOIN silvan.schedule s ON s.model_id = m.id
	  LEFT JOIN silvan.profile p ON p.model_id = m.id;
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT count(*) AS rows_lost FROM (
	SELECT * FROM catalog_before
	EXCEPT
	SELECT m.name, m.version, m.id, m.revision, m.forest, a.alias, s.batch_size, s.schedule, p.node_hits, r.acl
	  FROM silvan.model m JOIN silvan.registry r USING (name)
	  LEFT JOIN silvan.model_alias a ON a.name = m.name AND a.version = m.version
	  LEFT JOIN silvan.schedule s ON s.model_id = m.id
	  LEFT JOIN silvan.profile p ON p.model_id = m.id) AS lost;
SELECT count(*) AS rows, count(*) FILTER (WHERE b.deployed IS DISTINCT FROM silvan.predict('binary_logistic', f)
										   OR b.candidate IS DISTINCT FROM silvan.predict('binary_logistic@candidate', f)) AS changed,
	   count(*) FILTER (WHERE b.deployed::real IS DISTINCT FROM e[1]::real) AS differ_from_xgboost
  FROM before_update AS b JOIN fx_in USING (id) JOIN fx_exp USING (id);
SELECT * FROM silvan.distribute();
-- a catalog whose foreign keys silvan.distribute() dropped (as on Citus)
-- still leaves nothing of a renamed or dropped model behind
DO $$
DECLARE c record;
BEGIN
	FOR c IN SELECT conrelid::regclass AS rel, conname FROM pg_constraint
			  WHERE contype = 'f' AND connamespace = 'silvan'::regnamespace LOOP
		EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
	END LOOP;
END $$;
INSERT INTO silvan.tuning_job (model_id, owner, batch_sizes, target, strategy, budget, exact, state)
SELECT id, owner, '{64}', 'cpu', 'heuristic', '1 minute', true, 'done'
  FROM silvan.model WHERE name = 'binary_logistic' AND version = 2;
SELECT silvan.rename_model('binary_logistic', 'renamed');
SELECT name, version, aliases FROM silvan.model_versions ORDER BY version;
SELECT silvan.drop_model('renamed@2') AS dropped_version;
SELECT (SELECT count(*) FROM silvan.schedule) AS schedules, (SELECT count(*) FROM silvan.model_alias) AS aliases,
       (SELECT count(*) FROM silvan.tuning_job) AS jobs, (SELECT count(*) FROM silvan.profile) AS profiles;
SELECT silvan.drop_model('renamed') AS dropped;
SELECT (SELECT count(*) FROM silvan.model) AS models, (SELECT count(*) FROM silvan.registry) AS registry,
       (SELECT count(*) FROM silvan.profile) AS profiles;
DROP ROLE regress_scorer;
DROP TABLE before_update, catalog_before, fx_in, fx_exp;

-- from 0.10.0: every model becomes version 1 of its name, deployed, with
-- its schedules, profile and tuning jobs, and predicts the same; a name
-- with an "@" is still scored by it; new versions load, deploy and roll
-- back on the updated catalog
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.10.0';
RESET client_min_messages;
\set fx binary_logistic
\i sql/fixture.psql
SELECT silvan.load_model('old@name', source) > 0 AS loaded FROM silvan.model WHERE name = 'binary_logistic';
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 16);
SELECT silvan.profile('binary_logistic', 'fx_in', 'id') AS profiled_rows;
-- an administrator let only one role load models
CREATE ROLE regress_loader;
REVOKE EXECUTE ON FUNCTION silvan.load_model(text, text, text, boolean, boolean),
	silvan.load_model(text, bytea, text, boolean, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION silvan.load_model(text, text, text, boolean, boolean),
	silvan.load_model(text, bytea, text, boolean, boolean) TO regress_loader;
-- a job as the tuning worker leaves one
INSERT INTO silvan.tuning_job (model_id, owner, batch_sizes, target, strategy, budget, exact, state)
SELECT id, owner, '{64}', 'cpu', 'heuristic', '1 minute', true, 'done'
  FROM silvan.model WHERE name = 'binary_logistic';
CREATE TABLE before_update AS
	SELECT key, prediction FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16);
CREATE TABLE catalog_before AS
	SELECT m.name, m.id, m.revision, m.owner, m.forest, s.batch_size, s.schedule, p.node_hits
	  FROM silvan.model m LEFT JOIN silvan.schedule s ON s.model_id = m.id
	  LEFT JOIN silvan.profile p ON p.model_id = m.id;
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT count(*) AS rows_lost FROM (
	SELECT name, id, revision, owner, forest, batch_size, schedule, node_hits FROM catalog_before
	EXCEPT
	SELECT m.name, m.id, m.revision, m.owner, m.forest, s.batch_size, s.schedule, p.node_hits
	  FROM silvan.model m LEFT JOIN silvan.schedule s ON s.model_id = m.id
	  LEFT JOIN silvan.profile p ON p.model_id = m.id) AS lost;
SELECT name, version, deployed, aliases, loaded_by = owner AS loaded_by_owner,
       source_sha256 = encode(sha256(convert_to((SELECT source FROM silvan.model m WHERE m.id = v.id), 'UTF8')), 'hex') AS digest
  FROM silvan.model_versions v ORDER BY name;
SELECT name, version, last_version, rollback_to FROM silvan.registry ORDER BY name;
SELECT model, version, batch_size, origin FROM silvan.schedules;
SELECT model, version FROM silvan.tuning_jobs;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed,
	   count(*) FILTER (WHERE a.prediction::real IS DISTINCT FROM e[1]::real) AS differ_from_xgboost
  FROM before_update AS b
  JOIN silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16) AS a USING (key)
  JOIN fx_exp AS x ON x.id = b.key;
SELECT silvan.model_version('old@name') AS old_name_version,
       count(*) FILTER (WHERE silvan.predict('old@name', f)::real IS DISTINCT FROM e[1]::real) AS old_name_differs
  FROM fx_in JOIN fx_exp USING (id);
-- load_model() was made anew with its new arguments, with the privileges it had
SELECT p.oid::regprocedure AS function, has_function_privilege('public', p.oid, 'EXECUTE') AS public_may,
       has_function_privilege('regress_loader', p.oid, 'EXECUTE') AS loader_may
  FROM pg_proc p WHERE p.proname = 'load_model' ORDER BY 1::text;
DROP OWNED BY regress_loader;
DROP ROLE regress_loader;
-- the models loaded before are everyone's to score with and read, as they
-- were; a model loaded now is its owner's
SELECT * FROM silvan.model_grants ORDER BY model, privilege;
CREATE ROLE regress_anyone;
SELECT silvan.has_model_privilege('regress_anyone', 'binary_logistic', 'usage') AS anyone_usage,
       silvan.has_model_privilege('regress_anyone', 'binary_logistic', 'select') AS anyone_select,
       silvan.has_model_privilege('regress_anyone', 'binary_logistic', 'update') AS anyone_update;
DROP ROLE regress_anyone;
SELECT silvan.load_model('loaded_after', source) > 0 AS loaded FROM silvan.model_sources WHERE model = 'old@name';
SELECT count(*) AS grants FROM silvan.model_grants WHERE model = 'loaded_after';
SELECT silvan.drop_model('loaded_after');
SELECT silvan.load_model('binary_logistic', source, replace => true) > 0 AS version_2 FROM silvan.model_sources WHERE model = 'old@name';
SELECT silvan.model_version('binary_logistic') AS deployed, silvan.rollback('binary_logistic') AS rolled_back_to;
SELECT model, version, batch_size FROM silvan.schedules;
SELECT silvan.drop_model('old@name') AS dropped;
DROP TABLE before_update, catalog_before, fx_in, fx_exp;

-- from 0.9.0: models, schedules and profiles kept and predicting the
-- same; the update adds reset_schedules() and tune()'s default batch
-- sizes become those scoring uses
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.9.0';
RESET client_min_messages;
\set fx binary_logistic
\i sql/fixture.psql
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 16);
SELECT silvan.profile('binary_logistic', 'fx_in', 'id') AS profiled_rows;
CREATE TABLE before_update AS
	SELECT key, prediction FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16);
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT model, batch_size, origin, schedule FROM silvan.schedules;
SELECT count(*) AS profiles FROM silvan.profile;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed,
	   count(*) FILTER (WHERE a.prediction::real IS DISTINCT FROM e[1]::real) AS differ_from_xgboost
  FROM before_update AS b
  JOIN silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16) AS a USING (key)
  JOIN fx_exp AS x ON x.id = b.key;
SELECT p.proname, pg_get_function_arguments(p.oid) ~ 'batch_sizes integer\[\] DEFAULT NULL' AS scoring_sizes
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'silvan' AND p.proname LIKE 'tune%' ORDER BY 1;
SELECT silvan.reset_schedules('binary_logistic') AS removed;
DROP TABLE before_update, fx_in, fx_exp;

-- from 0.8.0: models, schedules and profiles kept and predicting the
-- same; the update adds the host profile's view and measure_host()
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.8.0';
RESET client_min_messages;
\set fx binary_logistic
\i sql/fixture.psql
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 16);
SELECT silvan.profile('binary_logistic', 'fx_in', 'id') AS profiled_rows;
CREATE TABLE before_update AS
	SELECT key, prediction FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16);
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT model, batch_size, origin, schedule FROM silvan.schedules;
SELECT count(*) AS profiles FROM silvan.profile;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed,
	   count(*) FILTER (WHERE a.prediction::real IS DISTINCT FROM e[1]::real) AS differ_from_xgboost
  FROM before_update AS b
  JOIN silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 16) AS a USING (key)
  JOIN fx_exp AS x ON x.id = b.key;
SELECT count(*) AS host_profile_rows FROM silvan.host_profile;
SELECT has_function_privilege('public', 'silvan.measure_host()', 'EXECUTE') AS public_measures;
DROP TABLE before_update, fx_in, fx_exp;

-- from 0.4.0: the update stores models' binary
-- forms uncompressed from then on; a form stored before keeps its
-- compression and predicts the same, a model loaded after (or loaded
-- again) is stored uncompressed (multi_softprob's form: pglz compresses it)
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
CREATE EXTENSION silvan VERSION '0.4.0';
RESET client_min_messages;
\set fx multi_softprob
\i sql/fixture.psql
SELECT silvan.set_schedule('multi_softprob', 'reorder(tree, batch)', batch_size => 16);
SELECT pg_column_compression(forest) AS compressed_by_0_4_0 FROM silvan.model;
CREATE TABLE before_update AS
	SELECT key, prediction FROM silvan.predict_table('multi_softprob', 'fx_in', 'id', batch_size => 16);
CREATE TABLE forest_before AS SELECT name, revision, forest FROM silvan.model;
ALTER EXTENSION silvan UPDATE;
\c
SELECT extversion FROM pg_extension WHERE extname = 'silvan';
SELECT count(*) AS forests_changed FROM (
	SELECT name, revision, forest FROM forest_before EXCEPT SELECT name, revision, forest FROM silvan.model) AS c;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction IS DISTINCT FROM b.prediction) AS changed
  FROM before_update AS b
  JOIN silvan.predict_table('multi_softprob', 'fx_in', 'id', batch_size => 16) AS a USING (key);
SELECT silvan.load_model('softprob_again', :'model') > 0 AS loaded;
SELECT silvan.load_model('multi_softprob', :'model', replace => true) > 0 AS reloaded;
SELECT name, pg_column_compression(forest) AS compression FROM silvan.model ORDER BY 1;
SELECT count(*) FILTER (WHERE silvan.predict('softprob_again', f)::real IS DISTINCT FROM e[1]::real) AS wrong_after_update,
       count(*) FILTER (WHERE silvan.predict('multi_softprob', f)::real IS DISTINCT FROM e[1]::real) AS wrong_reloaded
  FROM fx_in JOIN fx_exp USING (id);
DROP TABLE before_update, forest_before, fx_in, fx_exp;

