-- Usage statistics per model version (silvan.model_stats): batches and
-- rows scored on every path, compiles; without preloading, this
-- session's (and the view says so); reset_model_stats() is the
-- superuser's.  test/preload/preloaded.sh checks the server-wide counts.
\set fx binary_logistic
\i sql/fixture.psql
SELECT silvan.load_model('counted', source) > 0 AS loaded FROM silvan.model WHERE name = 'binary_logistic';
SELECT silvan.reset_model_stats() >= 0 AS reset;
-- 100 calls one at a time, 100 rows batched, a table of 100 in one batch
SET silvan.batch_calls = off;
SELECT count(silvan.predict('counted', f)) FROM fx_in;
RESET silvan.batch_calls;
SELECT count(silvan.predict_proba('counted', f)) FROM fx_in;
SELECT count(*) FROM silvan.predict_table('counted', 'fx_in', 'id');
SELECT model, version, batches >= 102 AS one_per_call, rows_scored, compiles + cache_loads > 0 AS code,
       last_used > now() - interval '1 hour' AS recent, scope
  FROM silvan.model_stats WHERE model = 'counted';
-- a new version counts apart; the old version's row goes with it
SELECT silvan.load_model('counted', source, replace => true) > 0 AS loaded FROM silvan.model WHERE name = 'binary_logistic';
SELECT count(silvan.predict('counted', f)) FROM fx_in;
SELECT model, version, rows_scored FROM silvan.model_stats WHERE model = 'counted' ORDER BY version;
SELECT silvan.drop_model('counted@1');
SELECT model, version, rows_scored FROM silvan.model_stats WHERE model = 'counted' ORDER BY version;
-- only superusers (or roles granted EXECUTE) may reset
CREATE ROLE regress_stats_reader;
SET ROLE regress_stats_reader;
SELECT silvan.reset_model_stats();
SELECT count(*) AS visible FROM silvan.model_stats WHERE model = 'counted';
RESET ROLE;
DROP ROLE regress_stats_reader;
SELECT silvan.reset_model_stats() > 0 AS reset;
SELECT count(*) AS after_reset FROM silvan.model_stats;
SELECT silvan.drop_model('counted'), silvan.drop_model('binary_logistic');
DROP TABLE fx_in, fx_exp;
