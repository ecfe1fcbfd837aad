-- Privileges on models: a new model is its owner's; USAGE lets a role
-- score with it on every path (scalar and batched calls, the table and
-- query functions, labels, describe, model_version), SELECT read its
-- source, schedules and trees (explain), UPDATE change it (versions,
-- deploys, schedules, tuning); renaming, dropping and granting stay the
-- owner's.  Granted to a role, to a role's members, and to PUBLIC;
-- revoked, refused again on every path.
\set QUIET on
\set fx binary_logistic
\i sql/fixture.psql
CREATE ROLE regress_owner;
CREATE ROLE regress_scorer;
CREATE ROLE regress_team;
CREATE ROLE regress_member IN ROLE regress_team;
GRANT SELECT ON fx_in, fx_exp TO PUBLIC;
SET ROLE regress_owner;
SELECT silvan.load_model('guarded', :'model', class_labels => '{stay, churn}') > 0 AS loaded;
RESET ROLE;
\set QUIET off

-- every scoring path of a role without privileges is refused, and the views hide the model
SET ROLE regress_scorer;
\set VERBOSITY terse
SELECT silvan.predict('guarded', f) FROM fx_in LIMIT 1;
SET silvan.batch_calls = off;
SELECT silvan.predict('guarded', f) FROM fx_in LIMIT 1;
RESET silvan.batch_calls;
SELECT silvan.predict_proba('guarded', f) FROM fx_in LIMIT 1;
SELECT silvan.predict_label('guarded', f) FROM fx_in LIMIT 1;
SELECT silvan.classify('guarded', f) FROM fx_in LIMIT 1;
SELECT * FROM silvan.predict_table('guarded', 'fx_in', 'id') LIMIT 1;
SELECT * FROM silvan.predict_query('guarded', 'SELECT id, f FROM fx_in') AS (k bigint, p float8) LIMIT 1;
SELECT * FROM silvan.describe('guarded');
SELECT silvan.model_version('guarded');
SELECT silvan.explain('guarded');
SELECT silvan.set_schedule('guarded', 'reorder(tree, batch)');
SELECT * FROM silvan.tune('guarded', batch_sizes => '{8}', budget => '1 ms');
SELECT silvan.deploy('guarded', 1);
SELECT silvan.grant('guarded', 'regress_scorer', 'usage');
SELECT source FROM silvan.model WHERE name = 'guarded';
SELECT count(*) AS rows_seen FROM silvan.schedule;
\set VERBOSITY default
SELECT (SELECT count(*) FROM silvan.models WHERE name = 'guarded') AS models,
       (SELECT count(*) FROM silvan.model_versions WHERE name = 'guarded') AS versions,
       (SELECT count(*) FROM silvan.model_features WHERE model = 'guarded') AS features,
       (SELECT count(*) FROM silvan.model_sources WHERE model = 'guarded') AS sources,
       (SELECT count(*) FROM silvan.model_grants WHERE model = 'guarded') AS grants,
       silvan.has_model_privilege('guarded', 'usage') AS may_use;
RESET ROLE;

-- USAGE: every scoring path, as the library scores; not its source, trees or changes
SET ROLE regress_owner;
SELECT silvan.grant('guarded', 'regress_scorer', 'usage');
SELECT model, grantee, privilege, grantor FROM silvan.model_grants WHERE model = 'guarded';
SET ROLE regress_scorer;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict('guarded', f)::real <> e[1]::real) AS batched_differ,
       count(*) FILTER (WHERE silvan.predict_label('guarded', f) <> CASE WHEN e[1] > 0.5 THEN 'churn' ELSE 'stay' END) AS labels_differ
  FROM fx_in JOIN fx_exp USING (id);
SET silvan.batch_calls = off;
SELECT count(*) FILTER (WHERE silvan.predict('guarded', f)::real <> e[1]::real) AS one_at_a_time_differ
  FROM fx_in JOIN fx_exp USING (id);
RESET silvan.batch_calls;
SELECT count(*) FILTER (WHERE p.prediction::real <> x.e[1]::real) AS table_differ
  FROM silvan.predict_table('guarded', 'fx_in', 'id') AS p JOIN fx_exp AS x ON x.id = p.key;
SELECT count(*) AS query_rows
  FROM silvan.predict_query('guarded', 'SELECT id, f FROM fx_in') AS (k bigint, p float8);
SELECT value FROM silvan.describe('guarded') WHERE property = 'version';
SELECT silvan.model_version('guarded');
SELECT (SELECT count(*) FROM silvan.models WHERE name = 'guarded') AS models,
       (SELECT count(*) FROM silvan.model_sources WHERE model = 'guarded') AS sources;
\set VERBOSITY terse
SELECT silvan.explain('guarded');
SELECT silvan.set_schedule('guarded', 'reorder(tree, batch)');
SELECT silvan.load_model('guarded', :'model', replace => true);
\set VERBOSITY default
RESET ROLE;

-- SELECT: the source and the trees; UPDATE: versions, deploys, schedules, tuning
SET ROLE regress_owner;
SELECT silvan.grant('guarded', 'regress_scorer', 'select, update');
SET ROLE regress_scorer;
SELECT model, version, length(source) > 0 AS has_source FROM silvan.model_sources WHERE model = 'guarded';
SELECT silvan.explain('guarded') LIKE 'schedule source:%' AS explained;
SELECT silvan.set_schedule('guarded', 'reorder(tree, batch)', batch_size => 64) AS set;
SELECT model, version, batch_size FROM silvan.schedules WHERE model = 'guarded';
SELECT silvan.load_model('guarded', source, replace => true, deploy => false) > 0 AS version_2
  FROM silvan.model_sources WHERE model = 'guarded' AND version = 1;
SELECT silvan.deploy('guarded', 2) AS deployed, silvan.rollback('guarded') AS rolled_back;
SELECT silvan.drop_model('guarded@2') AS dropped_a_version;
SELECT loaded_by, owner FROM silvan.model_versions WHERE name = 'guarded';
SELECT count(*) AS tuned FROM silvan.tune('guarded', batch_sizes => '{8}', budget => '1 ms');
-- update without usage scores too (tuning and profiling do)
RESET ROLE;
SET ROLE regress_owner;
SELECT silvan.revoke('guarded', 'regress_scorer', 'usage, select');
SET ROLE regress_scorer;
SELECT count(silvan.predict('guarded', f)) AS update_scores FROM fx_in;
-- the owner's alone
\set VERBOSITY terse
SELECT silvan.rename_model('guarded', 'taken');
SELECT silvan.grant('guarded', 'regress_team', 'usage');
SELECT silvan.drop_model('guarded');
\set VERBOSITY default
RESET ROLE;

-- to a role, its members hold it; to PUBLIC, everyone; revoked, refused again (the cache forgets)
SET ROLE regress_owner;
SELECT silvan.revoke('guarded', 'regress_scorer', 'all');
SELECT silvan.grant('guarded', 'regress_team', 'usage');
SET ROLE regress_member;
SELECT count(silvan.predict('guarded', f)) AS member_scores FROM fx_in;
SET ROLE regress_scorer;
\set VERBOSITY terse
SELECT count(silvan.predict('guarded', f)) FROM fx_in;
\set VERBOSITY default
SET ROLE regress_owner;
SELECT silvan.grant('guarded', 'PUBLIC', 'usage');
SET ROLE regress_scorer;
SELECT count(silvan.predict('guarded', f)) AS public_scores FROM fx_in;
SET ROLE regress_owner;
SELECT silvan.revoke('guarded', 'public', 'usage'), silvan.revoke('guarded', 'regress_team', 'usage');
SELECT count(*) AS grants_left FROM silvan.model_grants WHERE model = 'guarded';
SET ROLE regress_member;
\set VERBOSITY terse
SELECT count(silvan.predict('guarded', f)) FROM fx_in;
\set VERBOSITY default
RESET ROLE;

-- wrong arguments
SELECT silvan.grant('guarded', 'regress_scorer', 'usage, delete');
SELECT silvan.grant('guarded', 'regress_scorer', '');
SELECT silvan.grant('guarded', 'no_such_role', 'usage');
SELECT silvan.grant('guarded@1', 'regress_scorer', 'usage');
SELECT silvan.grant('no_such_model', 'regress_scorer', 'usage');
SELECT silvan.has_model_privilege('guarded', 'execute');

SELECT silvan.drop_model('guarded');
DROP TABLE fx_in, fx_exp;
SELECT silvan.drop_model('binary_logistic');
DROP ROLE regress_owner, regress_scorer, regress_member, regress_team;
