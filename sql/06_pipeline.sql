-- Batched scans read plain heap tuples in place and, with more than one
-- thread, score batch N on the pipeline thread while reading batch N+1.
-- Every path gives XGBoost's own predictions, in the source's order.
\set fx binary_logistic
\i sql/fixture.psql

-- one column per feature: read in place (float4, key first)
CREATE TABLE cols AS
  SELECT id, f[1] AS f1, f[2] AS f2, f[3] AS f3, f[4] AS f4, f[5] AS f5, f[6] AS f6 FROM fx_in;
-- NULL is missing, as NaN is: those rows take the general path
UPDATE cols SET f2 = NULL WHERE id % 10 = 3 AND f2 = 'NaN';
-- float8 features, an int4 key, a dropped column, the key last (a projection)
CREATE TABLE cols8 AS
  SELECT id::int AS id, f1::float8 AS f1, f2::float8 AS f2, f3::float8 AS f3,
         f4::float8 AS f4, f5::float8 AS f5, f6::float8 AS f6 FROM cols;
CREATE TABLE dropped AS SELECT id, 0::real AS junk, f1, f2, f3, f4, f5, f6 FROM cols;
ALTER TABLE dropped DROP COLUMN junk;
CREATE TABLE keylast AS SELECT f1, f2, f3, f4, f5, f6, id FROM cols;
-- rows stored before ADD COLUMN have fewer attributes than the table
CREATE TABLE added AS SELECT id, f1, f2, f3, f4, f5 FROM cols;
ALTER TABLE added ADD COLUMN f6 real DEFAULT 0.5;

-- rows scored, wrong predictions and rows out of order; the source's keys
-- repeat the fixture's rows 1..100
CREATE FUNCTION diffs(src regclass, b int, model text DEFAULT 'binary_logistic')
RETURNS TABLE (rows bigint, diff bigint, out_of_order bigint) LANGUAGE sql AS $$
  SELECT count(*), count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real),
         count(*) FILTER (WHERE t.key <> t.n)
    FROM (SELECT p.*, row_number() OVER () AS n
            FROM silvan.predict_table(model, src, 'id', batch_size => b) AS p) AS t
    JOIN fx_exp AS x ON x.id = 1 + (t.key - 1) % 100
$$;

SELECT s, b, d.* FROM unnest('{cols, cols8, dropped, keylast}'::regclass[]) AS s,
       unnest('{7, 64}'::int[]) AS b, diffs(s, b) AS d ORDER BY 1, 2;
SET silvan.max_threads = 2;
SELECT s, b, d.* FROM unnest('{cols, cols8, dropped, keylast}'::regclass[]) AS s,
       unnest('{7, 64}'::int[]) AS b, diffs(s, b) AS d ORDER BY 1, 2;
-- pipelined (two threads, batches of 512): the rows of plain tables, of
-- float4 and float8 features with padding between them, a smallint key
-- and a NULL one, every NaN of the inputs a NULL (the executor's rows and
-- those read in place); a dropped column and a projection
CREATE TABLE mixed AS
  SELECT id::int2 AS id, NULLIF(f1, 'NaN')::float8 AS f1, NULLIF(f2, 'NaN') AS f2,
         NULLIF(f3, 'NaN')::float8 AS f3, NULLIF(f4, 'NaN') AS f4, NULLIF(f5, 'NaN') AS f5,
         NULLIF(f6, 'NaN') AS f6 FROM cols;
INSERT INTO mixed SELECT NULL, f1, f2, f3, f4, f5, f6 FROM mixed WHERE id = 13;
SELECT count(*) FILTER (WHERE NOT (mixed IS NOT NULL)) AS rows_with_nulls FROM mixed;
SELECT s, d.* FROM unnest('{cols, cols8, dropped, keylast, mixed}'::regclass[]) AS s,
       diffs(s, 512) AS d ORDER BY 1;
SELECT p.key IS NULL AS null_key, p.prediction::real = x.e[1]::real AS as_xgboost
  FROM silvan.predict_table('binary_logistic', 'mixed', 'id', batch_size => 512) AS p
  JOIN fx_exp AS x ON x.id = 13
 WHERE p.key IS NULL;

-- stored-short tuples read like the view of them that the executor projects
CREATE VIEW added_view AS SELECT id, f1, f2, f3, f4, f5, f6 FROM added WHERE id > 0;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction <> v.prediction) AS diff
  FROM silvan.predict_table('binary_logistic', 'added', 'id', batch_size => 9) AS a
  JOIN silvan.predict_table('binary_logistic', 'added_view', 'id', batch_size => 9) AS v USING (key);
-- and pipelined (two threads, batches of 512)
SELECT count(*) AS rows, count(*) FILTER (WHERE a.prediction <> v.prediction) AS diff
  FROM silvan.predict_table('binary_logistic', 'added', 'id', batch_size => 512) AS a
  JOIN silvan.predict_table('binary_logistic', 'added_view', 'id', batch_size => 512) AS v USING (key);

-- a larger scan: one thread and two agree bit for bit, in order
CREATE TABLE big AS SELECT g AS id, c.f1, c.f2, c.f3, c.f4, c.f5, c.f6
  FROM generate_series(1, 50000) AS g JOIN cols AS c ON c.id = 1 + g % 100 ORDER BY g;
CREATE TABLE two AS SELECT * FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 1000);
RESET silvan.max_threads;
SET silvan.max_threads = 1;
CREATE TABLE one AS SELECT * FROM silvan.predict_table('binary_logistic', 'big', 'id', batch_size => 1000);
RESET silvan.max_threads;
SELECT count(*) AS rows, count(*) FILTER (WHERE one.prediction <> two.prediction) AS diff
  FROM one JOIN two USING (key);
SELECT count(*) AS out_of_order
  FROM (SELECT key, row_number() OVER () AS n FROM two) AS t WHERE key <> n;

-- a batch of more than 2 MB of features (here 120000 rows of 6 floats) is
-- scored in chunks: XGBoost's predictions in the source's order, with one
-- thread and with two
CREATE TABLE huge AS SELECT g AS id, c.f1, c.f2, c.f3, c.f4, c.f5, c.f6
  FROM generate_series(1, 120000) AS g JOIN cols AS c ON c.id = 1 + (g - 1) % 100 ORDER BY g;
SET silvan.max_threads = 1;
SELECT * FROM diffs('huge', 120000);
SET silvan.max_threads = 2;
SELECT * FROM diffs('huge', 120000);
RESET silvan.max_threads;
DROP TABLE huge;

-- an error while a batch is in flight leaves the backend serving
SET silvan.max_threads = 2;
SELECT count(*) FROM silvan.predict_query('binary_logistic',
       'SELECT g, 1::real, 2::real, 3::real, 4::real, 5::real, (10 / (3000 - g))::real
          FROM generate_series(1, 5000) g', 500) AS (k int, p float8);
SELECT count(*) FROM silvan.predict_query('binary_logistic',
       $$SELECT g, CASE WHEN g < 2500 THEN '{1,2,3,4,5,6}'::real[] ELSE '{1,2}'::real[] END
           FROM generate_series(1, 5000) g$$, 1000) AS (k int, p float8);
RESET silvan.max_threads;
SELECT silvan.predict('binary_logistic', '{1,2,3,4,5,6}'::real[]) > 0 AS still_serving;

DROP TABLE cols, cols8, dropped, keylast, mixed, added, big, one, two CASCADE;

-- wide rows (80 features) are not copied by the backend: it notes where each
-- row's features are, pinning their pages, and the pipeline thread gathers
-- them.  As one array column and as 80 columns: XGBoost's predictions, in
-- order, with one thread and with two
\set fx wide_features
\i sql/fixture.psql
CREATE TABLE wide_arr AS SELECT g AS id, x.f
  FROM generate_series(1, 5000) AS g JOIN fx_in AS x ON x.id = 1 + (g - 1) % 100 ORDER BY g;
DO $$ BEGIN EXECUTE 'CREATE TABLE wide_cols AS SELECT id, ' ||
  (SELECT string_agg(format('f[%s] AS f%s', i, i), ', ') FROM generate_series(1, 80) AS i) ||
  ' FROM wide_arr ORDER BY id'; END $$;
SET silvan.max_threads = 1;
SELECT s, d.* FROM unnest('{wide_arr, wide_cols}'::regclass[]) AS s, diffs(s, 1000, 'wide_features') AS d;
SET silvan.max_threads = 2;
SELECT s, d.* FROM unnest('{wide_arr, wide_cols}'::regclass[]) AS s, diffs(s, 1000, 'wide_features') AS d;
-- not streamed, the function's scan leaves the rows where it found them:
-- each range of rows that a thread scores gathers its own rows first
SET silvan.stream_scans = off;
SELECT s, d.* FROM unnest('{wide_arr, wide_cols}'::regclass[]) AS s, diffs(s, 1000, 'wide_features') AS d;
RESET silvan.stream_scans;
-- an error with pinned batches in flight: the pins go with the transaction
INSERT INTO wide_arr SELECT 5001, f[1:79] FROM wide_arr WHERE id = 1;
SELECT count(*) FROM silvan.predict_table('wide_features', 'wide_arr', 'id', batch_size => 1000);
DELETE FROM wide_arr WHERE id = 5001;
SELECT s, d.* FROM unnest('{wide_arr, wide_cols}'::regclass[]) AS s, diffs(s, 1000, 'wide_features') AS d;
RESET silvan.max_threads;
DROP TABLE wide_arr, wide_cols;
DROP FUNCTION diffs;
