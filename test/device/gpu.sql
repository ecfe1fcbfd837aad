-- silvan inside PostgreSQL on a lent GPU machine (test/device/sql.sh): the
-- device from SQL, XGBoost fixtures scored on it against XGBoost's own
-- outputs, and a million rows end to end on the cpu and on the device
\set ON_ERROR_STOP 0
SELECT * FROM silvan.devices();
\set fx binary_logistic
\i sql/fixture.psql
SET silvan.target = cuda;
SELECT line FROM regexp_split_to_table(silvan.explain('binary_logistic', 4096, 'cuda'), E'\n') AS line
 WHERE line ~ '^(target|schedule)';
SELECT b, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM generate_series(1, 3) AS b,
       silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => b * 45 - 44) AS t
  JOIN fx_exp AS x ON x.id = t.key
 GROUP BY b ORDER BY b;
SELECT count(*) AS rows, count(*) FILTER (WHERE silvan.predict('binary_logistic', i.f)::real
                                            <> x.e[1]::real) AS scalar_diff
  FROM fx_in AS i JOIN fx_exp AS x USING (id);
\set fx deep_tree
\i sql/fixture.psql
SELECT 'deep_tree' AS model, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('deep_tree', 'fx_in', 'id') AS t JOIN fx_exp AS x ON x.id = t.key;
\set fx categorical
\i sql/fixture.psql
SELECT 'categorical' AS model, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('categorical', 'fx_in', 'id') AS t JOIN fx_exp AS x ON x.id = t.key;
\set fx multi_softprob
\i sql/fixture.psql
SELECT 'multi_softprob' AS model, count(*) AS rows,
       count(*) FILTER (WHERE q.margins::real[] <> x.e[2:1 + :g]::real[]) AS raw_diff
  FROM silvan.predict_raw_query('multi_softprob', 'SELECT id, f FROM fx_in')
       AS q(key bigint, margins float8[])
  JOIN fx_exp AS x ON x.id = q.key;
-- tree threads: atomic adds in the order the hardware picks (within rounding)
SELECT silvan.set_schedule('multi_softprob',
       E'tile(batch, b0, b1, 16)\ntile(tree, t0, t1, 4)\nreorder(b0, b1, t0, t1)\n'
       'gpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)\ngpuDimension(t0, block.y)',
       target => 'cuda');
SELECT 'multi_softprob, tree threads' AS model, count(*) AS rows,
       count(*) FILTER (WHERE q.margins::real[] <> x.e[2:1 + :g]::real[]) AS raw_diff,
       max(abs(q.margins[1] - x.e[2])) AS max_abs_diff_class0
  FROM silvan.predict_raw_query('multi_softprob', 'SELECT id, f FROM fx_in')
       AS q(key bigint, margins float8[])
  JOIN fx_exp AS x ON x.id = q.key;

-- a million rows end to end: cpu (1 and 16 threads) and the device
\set fx binary_logistic
\i sql/fixture.psql
CREATE TABLE big AS
  SELECT i AS id, ARRAY[random() * 10 - 5, random() * 10 - 5, random() * 10 - 5,
                        random() * 10 - 5, random() * 10 - 5, random() * 10 - 5]::real[] AS f
    FROM generate_series(1, 1000000) AS i;
VACUUM ANALYZE big;
SET silvan.target = cpu;
CREATE TABLE on_cpu AS SELECT * FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536);
SET silvan.target = cuda;
SELECT count(*) AS rows, count(*) FILTER (WHERE c.prediction <> g.prediction) AS cpu_gpu_diff
  FROM on_cpu AS c JOIN silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536) AS g USING (key);
\timing on
SET silvan.target = cpu;
SET silvan.max_threads = 1;
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536);
SET silvan.max_threads = 16;
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536);
SET silvan.target = cuda;
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 65536);
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 262144);
