-- End to end on a lent GPU machine (test/device/sql.sh): the higgs model
-- (XGBoost, 100 trees of depth 8, 28 features) over a million rows of a
-- table, on the cpu (1 and 16 threads) and on the device; results compared
\set ON_ERROR_STOP 0
\set model `xz -dc .device/higgs.json.xz`
SELECT silvan.load_model('higgs', :'model', replace => true) > 0 AS loaded;
CREATE TABLE higgs_rows AS
  SELECT i AS id, ARRAY(SELECT (random() * 3 - 1)::real FROM generate_series(1, 28) WHERE i > 0) AS f
    FROM generate_series(1, 1000000) AS i;
VACUUM ANALYZE higgs_rows;
SET silvan.max_threads = 1;
CREATE TABLE higgs_cpu AS SELECT * FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SET silvan.target = cuda;
SELECT count(*) AS rows, count(*) FILTER (WHERE c.prediction <> g.prediction) AS cpu_gpu_diff
  FROM higgs_cpu AS c JOIN silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536) AS g USING (key);
\timing on
SET silvan.target = cpu;
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SET silvan.max_threads = 16;
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SET silvan.target = cuda;
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 262144);
-- the scan alone: the same rows read, no model
SELECT count(*) FROM (SELECT id, f FROM higgs_rows) AS t;
-- tune() on the device (Algorithm 1's exact points, timed on the GPU), then
-- the tuned schedule against the cpu's results and its time
\timing off
SET silvan.tune_min_speedup = 0;
SELECT batch_size, us_per_row, default_us_per_row, speedup, stored, candidates
  FROM silvan.tune('higgs', batch_sizes => '{65536}', target => 'cuda', budget => '1 minute');
SELECT batch_size, provenance->>'device' AS device, provenance->>'arch' AS arch, schedule
  FROM silvan.schedules WHERE model = 'higgs' AND target = 'cuda';
SET silvan.target = cuda;
SELECT count(*) AS rows, count(*) FILTER (WHERE c.prediction <> g.prediction) AS cpu_tuned_gpu_diff
  FROM higgs_cpu AS c JOIN silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536) AS g USING (key);
\timing on
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('higgs', 'higgs_rows', 'id', batch_size => 65536);
