-- Scalar edge cases, batched scans of tables and queries, and their errors
\set fx binary_logistic
\i sql/fixture.psql

-- NULL array gives NULL; SQL NULL elements are missing values, like NaN
SELECT silvan.predict('binary_logistic', NULL::real[]) IS NULL AS null_in_null_out;
SELECT silvan.predict('binary_logistic', '{NULL,1,2,3,4,5}'::real[]) =
       silvan.predict('binary_logistic', '{NaN,1,2,3,4,5}'::real[]) AS null_is_missing;
-- float8[] input is rounded to float32 as XGBoost's DMatrix does
SELECT count(*) FILTER (WHERE silvan.predict('binary_logistic', f::float8[]) <>
                              silvan.predict('binary_logistic', f)) AS float8_diff
  FROM fx_in;
SELECT silvan.predict_proba('binary_logistic', f) FROM fx_in WHERE id = 1;
SELECT silvan.predict_raw('binary_logistic', f) FROM fx_in WHERE id = 1;

-- errors
SELECT silvan.predict('no_such_model', '{1,2,3}'::real[]);
SELECT silvan.predict('binary_logistic', '{1,2,3}'::real[]);
SELECT silvan.predict('binary_logistic', '{}'::real[]);
SELECT silvan.predict('binary_logistic', '{{1,2,3},{4,5,6}}'::real[]);
SELECT silvan.predict_proba('reg_squarederror', '{1,2,3,4,5}'::real[]);

-- the hand-written LightGBM model: margins worked out on paper
-- (test/fixtures/lightgbm_small.md); sigmoid for probabilities
SELECT x, cat, silvan.predict_raw('lgb_small', ARRAY[x, cat]::float8[]) AS margin,
       round(silvan.predict('lgb_small', ARRAY[x, cat]::float8[])::numeric, 12) AS p,
       round((1 / (1 + exp(-(silvan.predict_raw('lgb_small', ARRAY[x, cat]::float8[]))[1])))::numeric, 12) AS sigmoid
  FROM (VALUES (0, 1), (1, 3), (-2, 0), ('NaN', 'NaN'), (0.5, 2.7), (-1.5, 3.9), (5, -0.5))
       AS v(x, cat);

-- predict_table: one array column, against XGBoost's outputs
SELECT count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id') AS t
  JOIN fx_exp AS x ON x.id = t.key;
-- the same with one column per feature, odd batch sizes, and int4 keys
CREATE TABLE wide (k int4, a real, b real, c real, d real, e real, f real, note text);
INSERT INTO wide SELECT id, f[1], f[2], f[3], f[4], f[5], f[6], 'row ' || id FROM fx_in;
SELECT b, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM generate_series(1, 4) AS b,
       silvan.predict_table('binary_logistic', 'wide', 'k', '{a,b,c,d,e,f}', batch_size => b * 7 - 6) AS t
  JOIN fx_exp AS x ON x.id = t.key
 GROUP BY b ORDER BY b;
-- NULL features are missing values; NULL keys pass through
INSERT INTO wide VALUES (NULL, NULL, 1, 2, 3, 4, 5, 'nulls');
SELECT key, prediction = silvan.predict('binary_logistic', '{NaN,1,2,3,4,5}'::real[]) AS same
  FROM silvan.predict_table('binary_logistic', 'wide', 'k', '{a,b,c,d,e,f}')
 WHERE key IS NULL;
DELETE FROM wide WHERE k IS NULL;

-- predict_query: any key type, any feature expressions
SELECT key, round(prediction::numeric, 6) AS prediction
  FROM silvan.predict_query('binary_logistic',
         'SELECT note, a, b, c, d, e, f FROM wide WHERE k <= 3 ORDER BY k', 2)
       AS (key text, prediction float8);
SELECT count(*) AS rows, count(*) FILTER (WHERE q.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_query('binary_logistic', 'SELECT id, f FROM fx_in')
       AS q(key bigint, prediction float8)
  JOIN fx_exp AS x ON x.id = q.key;

-- batch errors
SELECT * FROM silvan.predict_table('binary_logistic', 'wide', 'note', '{a,b,c,d,e,f}');
SELECT * FROM silvan.predict_table('binary_logistic', 'wide', 'k', '{a,b,c,zz,e,f}');
SELECT * FROM silvan.predict_table('binary_logistic', 'wide', 'k', '{a,b,c,d,e,note}');
SELECT * FROM silvan.predict_table('binary_logistic', 'wide', 'k', '{a,b,c}');
SELECT * FROM silvan.predict_table('binary_logistic', 'wide', 'k');
SELECT * FROM silvan.predict_table('binary_logistic', 'wide', 'k', '{a,b,c,d,e,f}', 0);
SELECT * FROM silvan.predict_query('binary_logistic', 'SELECT k, a FROM wide') AS (key int, p float8);
SELECT * FROM silvan.predict_query('binary_logistic', 'SELECT k::int8, a, b, c, d, e, f FROM wide')
  AS (key int4, p float8);
SELECT * FROM silvan.predict_query('binary_logistic', 'DELETE FROM wide') AS (key int, p float8);
SELECT * FROM silvan.predict_query('nope', 'SELECT 1, 2') AS (key int, p float8);

-- multi-class in batch: class index and per-class probabilities
\set fx multi_softprob
\i sql/fixture.psql
SELECT count(*) AS rows,
       count(*) FILTER (WHERE t.prediction <> x.e[1]) AS class_diff
  FROM silvan.predict_table('multi_softprob', 'fx_in', 'id') AS t
  JOIN fx_exp AS x ON x.id = t.key;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE t.probabilities::real[] <> x.e[2 + :g:1 + :g + :np]::real[]) AS proba_diff
  FROM silvan.predict_proba_table('multi_softprob', 'fx_in', 'id') AS t
  JOIN fx_exp AS x ON x.id = t.key;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q.margins::real[] <> x.e[2:1 + :g]::real[]) AS raw_diff
  FROM silvan.predict_raw_query('multi_softprob', 'SELECT id, f FROM fx_in')
       AS q(key bigint, margins float8[])
  JOIN fx_exp AS x ON x.id = q.key;

-- JIT and interpreter agree bit for bit on a whole table
CREATE TABLE jit_on AS SELECT * FROM silvan.predict_raw_table('multi_softprob', 'fx_in', 'id');
SET silvan.jit = off;
SELECT count(*) AS rows, count(*) FILTER (WHERE j.margins <> i.margins) AS diff
  FROM jit_on AS j JOIN silvan.predict_raw_table('multi_softprob', 'fx_in', 'id') AS i USING (key);
RESET silvan.jit;
