-- Models have versions: every load under a name keeps a new version, one
-- is deployed (the one a bare name scores with), deploy() and rollback()
-- move it, aliases and numbers score one version explicitly on every
-- scoring path, and each version scores as its training library does.
\set fx binary_hinge
\i sql/fixture.psql
ALTER TABLE fx_in RENAME TO hinge_in;
ALTER TABLE fx_exp RENAME TO hinge_exp;
\set fx binary_logistic
\i sql/fixture.psql
CREATE TABLE logistic AS SELECT source FROM silvan.model WHERE name = 'binary_logistic';
CREATE TABLE hinge AS SELECT source FROM silvan.model WHERE name = 'binary_hinge';

-- version 1, then 2 (deployed as it loads), then 3 (loaded, not deployed)
SELECT silvan.load_model('churn', source, description => 'logistic, March data',
                         metadata => '{"auc": 0.91, "commit": "4f2a9c1"}') > 0 AS loaded
  FROM logistic;
SELECT silvan.load_model('churn', source) FROM hinge;
SELECT silvan.load_model('churn', source, replace => true) > 0 AS loaded FROM hinge;
SELECT silvan.load_model('churn', source, replace => true, deploy => false,
                         description => 'logistic again') > 0 AS loaded FROM logistic;
SELECT name, version, deployed, aliases, description, metadata, loaded_by, owner
  FROM silvan.model_versions WHERE name = 'churn' ORDER BY version;
SELECT name, version, versions, description, deployed_by,
       source_sha256 = encode(sha256(convert_to((SELECT source FROM hinge), 'UTF8')), 'hex') AS digest_of_source
  FROM silvan.models WHERE name = 'churn';
SELECT name, version, last_version, rollback_to FROM silvan.registry WHERE name = 'churn';

-- each version scores as its library: scalar calls, the batched node and
-- the table functions, by number, by alias, by "latest" and deployed
SELECT silvan.model_version('churn') AS deployed, silvan.model_version('churn@1') AS one,
       silvan.model_version('churn@latest') AS latest;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict('churn@1', f)::real <> e[1]::real) AS v1_differ,
       count(*) FILTER (WHERE silvan.predict('churn@latest', f)::real <> e[1]::real) AS v3_differ
  FROM fx_in JOIN fx_exp USING (id);
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict('churn', f)::real <> e[1]::real) AS deployed_differs,
       count(*) FILTER (WHERE silvan.predict('churn@2', f)::real <> e[1]::real) AS v2_differs
  FROM hinge_in JOIN hinge_exp USING (id);
SELECT silvan.set_alias('churn', 'candidate', 3) AS set, silvan.set_alias('churn', 'champion', 2) AS set;
SELECT silvan.set_alias('churn', 'candidate', 3) AS unchanged;
SELECT count(*) AS rows, count(*) FILTER (WHERE p.prediction::real <> x.e[1]::real) AS differ
  FROM silvan.predict_table('churn@candidate', 'fx_in', 'id') AS p JOIN fx_exp x ON x.id = p.key;
SELECT count(*) AS rows, count(*) FILTER (WHERE p.prediction::real <> x.e[1]::real) AS differ
  FROM silvan.predict_query('churn@champion', 'SELECT id, f FROM hinge_in') AS p(key bigint, prediction float8)
  JOIN hinge_exp x ON x.id = p.key;
SELECT name, version, aliases FROM silvan.model_versions WHERE name = 'churn' ORDER BY version;

-- deploy a candidate, roll back, roll back again to before it
SELECT silvan.deploy('churn@candidate') AS deployed;
SELECT silvan.model_version('churn') AS now_scoring,
       count(*) FILTER (WHERE silvan.predict('churn', f)::real <> e[1]::real) AS differ_from_logistic
  FROM fx_in JOIN fx_exp USING (id);
SELECT silvan.rollback('churn') AS rolled_back_to;
SELECT silvan.model_version('churn') AS now_scoring;
SELECT silvan.rollback('churn') AS rolled_back_to;
SELECT silvan.rollback('churn') AS rolled_back_to;
SELECT silvan.deploy('churn', 3) AS deployed, silvan.deploy('churn', 3) AS again;
SELECT name, version, rollback_to FROM silvan.registry WHERE name = 'churn';
-- a transaction that deploys and aborts leaves the deployed version as it was
BEGIN;
SELECT silvan.deploy('churn', 1) AS deployed;
SELECT silvan.model_version('churn') AS inside;
ROLLBACK;
SELECT silvan.model_version('churn') AS after_rollback;

-- the version of a reference, wrong references and arguments
SELECT silvan.predict('churn@9', ARRAY[1, 2, 3, 4, 5, 6]::real[]);
SELECT silvan.predict('churn@nobody', ARRAY[1, 2, 3, 4, 5, 6]::real[]);
SELECT silvan.predict('churn@', ARRAY[1, 2, 3, 4, 5, 6]::real[]);
SELECT silvan.predict('churn@0', ARRAY[1, 2, 3, 4, 5, 6]::real[]);
SELECT silvan.predict('churn@99999999999', ARRAY[1, 2, 3, 4, 5, 6]::real[]);
SELECT silvan.predict('Churn@1', ARRAY[1, 2, 3, 4, 5, 6]::real[]);
SELECT silvan.deploy('churn');
SELECT silvan.deploy('churn@1', 2);
SELECT silvan.deploy('churn', 0);
SELECT silvan.deploy('churn', 9);
SELECT silvan.set_alias('churn', 'latest', 1);
SELECT silvan.set_alias('churn', '2nd', 1);
SELECT silvan.set_alias('churn@1', 'first', 1);
SELECT silvan.set_alias('churn', 'first', 9);
SELECT silvan.set_alias('churn', NULL, 1);
SELECT silvan.load_model('a@b', source) FROM hinge;
SELECT silvan.load_model('churn', source) FROM hinge;

-- metadata, set later on one version (NULL keeps what is there)
SELECT silvan.set_metadata('churn@1', metadata => '{"auc": 0.93}');
SELECT silvan.set_metadata('churn', 'deployed in April');
SELECT version, description, metadata FROM silvan.model_versions WHERE name = 'churn' ORDER BY version;

-- schedules belong to a version
SELECT silvan.set_schedule('churn@2', 'reorder(tree, batch)') AS set;
SELECT model, version, schedule FROM silvan.schedules WHERE model = 'churn';
SELECT split_part(silvan.explain('churn@2', 64), E'\n', 1) AS v2, split_part(silvan.explain('churn', 64), E'\n', 1) AS deployed;

-- a new version whose trees have the deployed one's shape keeps its
-- schedules (a tuned one says where it came from); another shape starts
-- with none
SELECT silvan.set_schedule('churn', 'reorder(tree, batch)', batch_size => 64) AS set;
INSERT INTO silvan.schedule (model_id, target, batch_size, schedule, origin, provenance)
SELECT id, 'cpu', 512, 'tile(batch, b0, b1, 16); reorder(b0, tree, b1)', 'tuned', '{"us_per_row": 0.5}'
  FROM silvan.model WHERE name = 'churn' AND version = 3;
SELECT silvan.load_model('churn', source, replace => true, deploy => false) > 0 AS same_shape FROM logistic;
SELECT silvan.load_model('churn', source, replace => true, deploy => false) > 0 AS other_shape FROM hinge;
SELECT version, batch_size, schedule, origin, provenance FROM silvan.schedules
 WHERE model = 'churn' AND version >= 3 ORDER BY version, batch_size;
SELECT count(*) FILTER (WHERE silvan.predict('churn@4', f)::real <> e[1]::real) AS carried_differ
  FROM fx_in JOIN fx_exp USING (id);

-- rename: versions, aliases, schedules follow; the old name is gone
SELECT silvan.rename_model('churn', 'attrition');
SELECT name, version, aliases FROM silvan.model_versions WHERE name IN ('churn', 'attrition') ORDER BY version;
SELECT model, version FROM silvan.schedules WHERE model IN ('churn', 'attrition');
SELECT count(*) FILTER (WHERE silvan.predict('attrition@champion', f)::real <> e[1]::real) AS differ
  FROM hinge_in JOIN hinge_exp USING (id);
SELECT silvan.predict('churn', ARRAY[1, 2, 3, 4, 5, 6]::real[]);
SELECT silvan.rename_model('attrition', 'binary_hinge');
SELECT silvan.rename_model('attrition', 'x@y');
SELECT silvan.rename_model('attrition@1', 'x');

-- drop one version (not the deployed one; its aliases go), then the model
SELECT silvan.drop_model('attrition@3');
SELECT silvan.deploy('attrition@champion') AS deployed;
SELECT silvan.drop_model('attrition@candidate') AS dropped;
SELECT silvan.drop_model('attrition@candidate') AS dropped_again;
SELECT name, version, aliases FROM silvan.model_versions WHERE name = 'attrition' ORDER BY version;
SELECT silvan.set_alias('attrition', 'champion', NULL) AS removed, silvan.set_alias('attrition', 'champion', NULL) AS removed_again;
SELECT silvan.drop_model('attrition') AS dropped;
SELECT count(*) AS left_behind FROM silvan.model WHERE name = 'attrition';
SELECT count(*) AS left_behind FROM silvan.registry WHERE name = 'attrition';
DROP TABLE logistic, hinge, hinge_in, hinge_exp, fx_in, fx_exp;
SELECT silvan.drop_model('binary_hinge'), silvan.drop_model('binary_logistic');
