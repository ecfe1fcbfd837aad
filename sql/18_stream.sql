-- predict_table in FROM runs as a custom scan that streams its results
-- (scan_node.c) instead of a function that materializes them: XGBoost's
-- own outputs either way, in the source's order; a LIMIT stops it early;
-- errors in it or above it, rescans, cursors and permissions.
\set fx multi_softprob
\i sql/fixture.psql
CREATE TABLE src AS SELECT g AS id, x.f FROM generate_series(1, 5000) AS g
  JOIN fx_in AS x ON x.id = 1 + g % 100 ORDER BY g;

EXPLAIN (COSTS OFF)
SELECT * FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512);
EXPLAIN (COSTS OFF, VERBOSE)
SELECT key FROM silvan.predict_proba_table('multi_softprob', 'src', 'id') AS p
 WHERE p.probabilities[1] > 0.5;
-- the planner expects a row per source row (5,000; a view's without statistics: ROWS 1000),
-- streamed or not
CREATE FUNCTION pg_temp.estimated_rows(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN ' || query LOOP
		IF line ~ 'rows=' THEN
			RETURN NEXT substring(line FROM '^[^(]*') || substring(line FROM 'rows=[0-9]+');
		END IF;
	END LOOP;
END $$;
ANALYZE src;
CREATE VIEW src_view AS SELECT id, f FROM src WHERE id % 2 = 0;
SELECT * FROM pg_temp.estimated_rows('SELECT * FROM silvan.predict_table(''multi_softprob'', ''src'', ''id'')');
SELECT * FROM pg_temp.estimated_rows('SELECT * FROM silvan.predict_raw_table(''multi_softprob'', ''src_view'', ''id'')');
SET silvan.stream_scans = off;
SELECT * FROM pg_temp.estimated_rows('SELECT * FROM silvan.predict_proba_table(''multi_softprob'', ''src'', ''id'')');
RESET silvan.stream_scans;
DROP VIEW src_view;
-- ORDINALITY, a whole row and silvan.stream_scans = off keep the function
EXPLAIN (COSTS OFF)
SELECT * FROM silvan.predict_table('multi_softprob', 'src', 'id') WITH ORDINALITY;
EXPLAIN (COSTS OFF)
SELECT p FROM silvan.predict_table('multi_softprob', 'src', 'id') AS p;
SET silvan.stream_scans = off;
EXPLAIN (COSTS OFF)
SELECT * FROM silvan.predict_table('multi_softprob', 'src', 'id');
RESET silvan.stream_scans;

-- rows scored, and those whose prediction, probabilities or margins
-- differ from XGBoost's or that come out of the source's order; streamed
-- and not, by one thread and two, batches of 7 (not pipelined), 512 and
-- 4096 (a first batch of 512, then 1024, 2048, 4096)
-- (planned at each call, with silvan.stream_scans as it is then)
CREATE FUNCTION stream_diffs(b int) RETURNS TABLE (rows bigint, predict_diff bigint,
  proba_diff bigint, raw_diff bigint, out_of_order bigint) LANGUAGE plpgsql AS $f$
BEGIN
  RETURN QUERY EXECUTE $$
  SELECT count(*),
         count(*) FILTER (WHERE p.prediction::real <> x.e[1]::real),
         count(*) FILTER (WHERE q.probabilities::real[] <> x.e[6:9]::real[]),
         count(*) FILTER (WHERE r.margins::real[] <> x.e[2:5]::real[]),
         count(*) FILTER (WHERE p.key <> p.n OR q.key <> q.n OR r.key <> r.n)
    FROM (SELECT *, row_number() OVER () AS n
            FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => $1)) AS p
    JOIN (SELECT *, row_number() OVER () AS n
            FROM silvan.predict_proba_table('multi_softprob', 'src', 'id', batch_size => $1)) AS q
      ON q.key = p.key
    JOIN (SELECT *, row_number() OVER () AS n
            FROM silvan.predict_raw_table('multi_softprob', 'src', 'id', batch_size => $1)) AS r
      ON r.key = p.key
    JOIN fx_exp AS x ON x.id = 1 + p.key % 100 $$ USING b;
END $f$;
-- the fixture's columns: prediction, margins 2..5, probabilities 6..9
SELECT :g AS groups, :np AS probabilities;
SET silvan.max_threads = 1;
SELECT 7 AS batch, * FROM stream_diffs(7) UNION ALL SELECT 512, * FROM stream_diffs(512)
 UNION ALL SELECT 4096, * FROM stream_diffs(4096);
SET silvan.max_threads = 2;
SELECT 7 AS batch, * FROM stream_diffs(7) UNION ALL SELECT 512, * FROM stream_diffs(512)
 UNION ALL SELECT 4096, * FROM stream_diffs(4096);
SET silvan.stream_scans = off;
SELECT 7 AS batch, * FROM stream_diffs(7) UNION ALL SELECT 512, * FROM stream_diffs(512)
 UNION ALL SELECT 4096, * FROM stream_diffs(4096);
SET silvan.max_threads = 1;
SELECT 7 AS batch, * FROM stream_diffs(7) UNION ALL SELECT 512, * FROM stream_diffs(512)
 UNION ALL SELECT 4096, * FROM stream_diffs(4096);
RESET silvan.stream_scans;
RESET silvan.max_threads;

-- a bare scan of a heap table (no filter, no projection) is read a page
-- at a time (scan_heap.c): every visible row once, in the executor's
-- order, on the query's snapshot; a row with a NULL goes the general way
CREATE TABLE cols AS SELECT g AS id, f[1] AS f0, f[2] AS f1, f[3] AS f2, f[4] AS f3, f[5] AS f4
  FROM generate_series(1, 3000) AS g JOIN fx_in AS x ON x.id = 1 + g % 100 ORDER BY g;
DELETE FROM cols WHERE id % 7 = 0;
UPDATE cols SET f0 = f0 WHERE id % 11 = 0;
UPDATE cols SET f2 = NULL WHERE id % 13 = 0;
CREATE FUNCTION pg_temp.source_read(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ 'Source Read|Rows Scored' THEN
			RETURN NEXT trim(line);
		END IF;
	END LOOP;
END $$;
-- the rows of cols, scored streamed and materialized (the function's own
-- executor run), by one thread and two: rows and keys, rows deleted but
-- seen, predictions (rows without a NULL) other than XGBoost's, results or
-- order that differ between the two
CREATE FUNCTION pg_temp.cols_diffs(threads int) RETURNS TABLE (rows bigint, keys bigint,
  deleted_seen bigint, xgboost_differ bigint, paths_differ bigint) LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM set_config('silvan.max_threads', threads::text, true);
  CREATE TEMP TABLE streamed AS SELECT *, row_number() OVER () AS n
    FROM silvan.predict_table('multi_softprob', 'cols', 'id', batch_size => 512);
  PERFORM set_config('silvan.stream_scans', 'off', true);
  CREATE TEMP TABLE materialized AS SELECT *, row_number() OVER () AS n
    FROM silvan.predict_table('multi_softprob', 'cols', 'id', batch_size => 512);
  PERFORM set_config('silvan.stream_scans', 'on', true);
  RETURN QUERY SELECT count(*), count(DISTINCT s.key),
         count(*) FILTER (WHERE s.key % 7 = 0),
         count(*) FILTER (WHERE s.key % 13 <> 0 AND s.prediction::real <> e.e[1]::real),
         count(*) FILTER (WHERE s.prediction IS DISTINCT FROM m.prediction OR s.n <> m.n)
    FROM streamed AS s FULL JOIN materialized AS m USING (key) LEFT JOIN fx_exp AS e ON e.id = 1 + s.key % 100;
  DROP TABLE streamed, materialized;
END $f$;
SELECT * FROM pg_temp.source_read('SELECT count(*) FROM silvan.predict_table(''multi_softprob'', ''cols'', ''id'', batch_size => 512)');
SELECT 1 AS threads, * FROM pg_temp.cols_diffs(1) UNION ALL SELECT 2, * FROM pg_temp.cols_diffs(2);
-- a cursor's scan reads the rows of the cursor's snapshot, not those
-- inserted after it was declared; the next query sees them
BEGIN;
DECLARE cur CURSOR FOR SELECT count(*) FROM silvan.predict_table('multi_softprob', 'cols', 'id');
INSERT INTO cols SELECT id + 10000, f0, f1, f2, f3, f4 FROM cols;
FETCH cur;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'cols', 'id');
ROLLBACK;
-- a LIMIT ends the scan with rows of later batches left where the pages
-- hold them: their pages' pins are released (no leak warnings)
SET silvan.max_threads = 2;
SELECT count(*) FROM (SELECT * FROM silvan.predict_table('multi_softprob', 'cols', 'id', batch_size => 512)
                       LIMIT 10) AS s;
RESET silvan.max_threads;
-- a filter, a projection or a child table: the executor reads the source
SELECT * FROM pg_temp.source_read('SELECT * FROM silvan.predict_query(''multi_softprob'', ''SELECT id, f0, f1, f2, f3, f4 FROM cols WHERE id > 10'') AS (key int, p float8)');
SELECT * FROM pg_temp.source_read('SELECT * FROM silvan.predict_query(''multi_softprob'', ''SELECT id, f4, f3, f2, f1, f0 FROM cols'') AS (key int, p float8)');
CREATE TABLE cols_child () INHERITS (cols);
INSERT INTO cols_child SELECT id + 10000, f0, f1, f2, f3, f4 FROM cols WHERE id <= 10;
SELECT * FROM pg_temp.source_read('SELECT count(*) FROM silvan.predict_table(''multi_softprob'', ''cols'', ''id'')');
DROP TABLE cols_child;
-- a dropped column: the rows are the same
ALTER TABLE cols ADD COLUMN pad int DEFAULT 7;
ALTER TABLE cols DROP COLUMN pad;
SELECT * FROM pg_temp.cols_diffs(2);
DROP TABLE cols;

-- a row the model cannot take, at the end of the source
CREATE TABLE late_bad AS SELECT * FROM src;
INSERT INTO late_bad VALUES (5001, '{1,2}');
-- streamed, a LIMIT stops the scan at its first batch, before that row
SELECT count(*) FROM (SELECT * FROM silvan.predict_table('multi_softprob', 'late_bad', 'id',
                                                         batch_size => 512) LIMIT 10) AS s;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM silvan.predict_table('multi_softprob', 'late_bad', 'id', batch_size => 512) LIMIT 10;
-- materialized, the function reads it all first
SET silvan.stream_scans = off;
SELECT count(*) FROM (SELECT * FROM silvan.predict_table('multi_softprob', 'late_bad', 'id',
                                                         batch_size => 512) LIMIT 10) AS s;
RESET silvan.stream_scans;

-- errors while a batch is in flight on the pipeline thread: from the
-- source, from the query above the scan, and caught by a subtransaction;
-- the backend goes on and the next scans agree with XGBoost
SET silvan.max_threads = 2;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'late_bad', 'id', batch_size => 512);
SELECT count(1 / (key - 2000)) FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512);
DO $$
BEGIN
  PERFORM count(1 / (key - 3000)) FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512);
EXCEPTION WHEN division_by_zero THEN
  RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT * FROM stream_diffs(512);
RESET silvan.max_threads;

-- rescans: the inner side of a nested loop runs the scan again for each outer row
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT v.g, count(*) FROM (VALUES (1), (2), (3)) AS v(g)
  CROSS JOIN silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512) AS p
 GROUP BY v.g;
SELECT v.g, count(*), count(*) FILTER (WHERE p.prediction::real <> x.e[1]::real) AS diff
  FROM (VALUES (1), (2), (3)) AS v(g)
 CROSS JOIN silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512) AS p
  JOIN fx_exp AS x ON x.id = 1 + p.key % 100
 GROUP BY v.g ORDER BY v.g;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- columns chosen above the scan, in any order, each read from its place:
-- the prediction alone, the key alone, both swapped, one twice, against
-- the scan's own (key, prediction) rows in a subquery that keeps them whole
SET silvan.max_threads = 2;
CREATE TEMP TABLE whole AS
  SELECT * FROM (SELECT key, prediction FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512)
                 OFFSET 0) AS s;
SELECT (SELECT sum(prediction) FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512)) =
       (SELECT sum(prediction) FROM whole) AS prediction_alone,
       (SELECT sum(key) FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512)) =
       (SELECT sum(key) FROM whole) AS key_alone,
       (SELECT count(*) FROM (SELECT prediction AS p, key AS k
                                FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512)) AS s
          JOIN whole AS w ON w.key = s.k AND w.prediction = s.p) AS swapped_matches,
       (SELECT count(*) FILTER (WHERE p1 = p2 AND p1 = w.prediction)
          FROM (SELECT prediction AS p1, key AS k, prediction AS p2
                  FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512)) AS s
          JOIN whole AS w ON w.key = s.k) AS twice_matches,
       (SELECT count(*) FROM (SELECT prediction AS p, key AS k
                                FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512)) AS s
          JOIN fx_exp AS x ON x.id = 1 + s.k % 100 AND x.e[1]::real = s.p::real) AS swapped_as_xgboost,
       (SELECT count(DISTINCT prediction) > 1 FROM whole) AS predictions_vary;
RESET silvan.max_threads;

-- a cursor keeps the scan (and its batch in flight) between fetches, while
-- other scans of the model run and the model is replaced
SET silvan.max_threads = 2;
BEGIN;
DECLARE c CURSOR FOR
  SELECT p.key, p.prediction::real = (SELECT x.e[1]::real FROM fx_exp AS x
                                       WHERE x.id = 1 + p.key % 100) AS same
    FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512) AS p;
FETCH 3 FROM c;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512);
SELECT silvan.load_model('multi_softprob', :'model', replace => true) > 0 AS replaced;
MOVE 4990 IN c;
FETCH ALL FROM c;
COMMIT;
-- a transaction that ends with a batch in flight
BEGIN;
DECLARE d CURSOR FOR SELECT * FROM silvan.predict_table('multi_softprob', 'src', 'id', batch_size => 512);
MOVE 600 IN d;
ROLLBACK;
SELECT * FROM stream_diffs(512);
RESET silvan.max_threads;

-- prepared, with the arguments as parameters (a generic plan after five runs)
PREPARE scan(text, int) AS
  SELECT count(*) FROM silvan.predict_table($1, 'src', 'id', batch_size => $2);
EXECUTE scan('multi_softprob', 512);
EXECUTE scan('multi_softprob', 512);
EXECUTE scan('multi_softprob', 512);
EXECUTE scan('multi_softprob', 512);
EXECUTE scan('multi_softprob', 512);
EXECUTE scan('multi_softprob', 512);
EXPLAIN (COSTS OFF) EXECUTE scan('multi_softprob', 512);
EXECUTE scan(NULL, 512);
EXECUTE scan('multi_softprob', 0);
EXECUTE scan('no_such_model', 512);
DEALLOCATE scan;

-- EXECUTE on the function and SELECT on the source are checked as for the function
CREATE ROLE regress_silvan_streamer;
SET ROLE regress_silvan_streamer;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'src', 'id');
RESET ROLE;
GRANT SELECT ON src TO regress_silvan_streamer;
SET ROLE regress_silvan_streamer;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'src', 'id');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION silvan.predict_table(text, regclass, text, text[], integer) FROM PUBLIC;
SET ROLE regress_silvan_streamer;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'src', 'id');
EXPLAIN (COSTS OFF) SELECT count(*) FROM silvan.predict_table('multi_softprob', 'src', 'id');
RESET ROLE;
GRANT EXECUTE ON FUNCTION silvan.predict_table(text, regclass, text, text[], integer) TO PUBLIC;
-- row-level security applies to the source as to any query
ALTER TABLE src ENABLE ROW LEVEL SECURITY;
CREATE POLICY some_rows ON src FOR SELECT TO regress_silvan_streamer USING (id <= 100);
SET ROLE regress_silvan_streamer;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'src', 'id');
RESET ROLE;
DROP POLICY some_rows ON src;
ALTER TABLE src DISABLE ROW LEVEL SECURITY;
REVOKE SELECT ON src FROM regress_silvan_streamer;
DROP ROLE regress_silvan_streamer;

-- parallel plans: each participant scores its own chunks of the source's
-- pages (a source of more pages than chunks: several chunks each); XGBoost's
-- outputs, every key once, the rows scored by all counted in EXPLAIN ANALYZE
CREATE TABLE wide_src AS SELECT g AS id, x.f, repeat('x', 500) AS pad FROM generate_series(1, 6000) AS g
  JOIN fx_in AS x ON x.id = 1 + g % 100 ORDER BY g;
ANALYZE wide_src;
SELECT pg_relation_size('wide_src') / current_setting('block_size')::int > 32 AS more_pages_than_chunks;
\i sql/parallel.psql
EXPLAIN (COSTS OFF)
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'wide_src', 'id', '{f}', batch_size => 512);
SELECT count(*) AS rows, count(DISTINCT p.key) AS keys,
       count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS parallel_differ
  FROM silvan.predict_table('multi_softprob', 'wide_src', 'id', '{f}', batch_size => 512) AS p
  JOIN fx_exp AS e ON e.id = 1 + p.key % 100;
CREATE FUNCTION pg_temp.rows_scored(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ 'Rows Scored|Workers Launched|SilvanPredict' THEN
			RETURN NEXT regexp_replace(trim(line), ' \(actual.*', '');
		END IF;
	END LOOP;
END $$;
SELECT * FROM pg_temp.rows_scored('SELECT count(*) FROM silvan.predict_table(''multi_softprob'', ''wide_src'', ''id'', ''{f}'')');
-- a table of one column per feature, read in place from its pages: the
-- layout worked out for one chunk's tuples holds for the next chunk's
CREATE TABLE cols_src AS SELECT g AS id, f[1] AS f0, f[2] AS f1, f[3] AS f2, f[4] AS f3, f[5] AS f4
  FROM generate_series(1, 20000) AS g JOIN fx_in AS x ON x.id = 1 + g % 100;
ANALYZE cols_src;
SELECT pg_relation_size('cols_src') / current_setting('block_size')::int > 32 AS more_pages_than_chunks;
SELECT count(*) AS rows, count(DISTINCT p.key) AS keys,
       count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS parallel_differ
  FROM silvan.predict_table('multi_softprob', 'cols_src', 'id', batch_size => 512) AS p
  JOIN fx_exp AS e ON e.id = 1 + p.key % 100;
SELECT * FROM pg_temp.rows_scored('SELECT count(*) FROM silvan.predict_table(''multi_softprob'', ''cols_src'', ''id'', batch_size => 512)');
DROP TABLE cols_src;
-- with the leader taking part, and the proba variant
RESET parallel_leader_participation;
SELECT count(*) AS rows, count(DISTINCT p.key) AS keys,
       count(*) FILTER (WHERE p.probabilities::real[] IS DISTINCT FROM e.e[2 + :g:1 + :g + :np]::real[]) AS proba_differ
  FROM silvan.predict_proba_table('multi_softprob', 'wide_src', 'id', '{f}') AS p
  JOIN fx_exp AS e ON e.id = 1 + p.key % 100;
-- a Gather rescanned (a count per outer row) scores every chunk again
EXPLAIN (COSTS OFF)
SELECT x, (SELECT count(*) FILTER (WHERE key > x) FROM silvan.predict_table('multi_softprob', 'wide_src', 'id', '{f}'))
  FROM (VALUES (0), (5990)) AS v(x);
SELECT x, (SELECT count(*) FILTER (WHERE key > x) FROM silvan.predict_table('multi_softprob', 'wide_src', 'id', '{f}'))
  FROM (VALUES (0), (5990)) AS v(x);
-- an error in a worker (a feature that is not numeric) reaches the caller
SET parallel_leader_participation = off;
SELECT count(*) FROM silvan.predict_table('multi_softprob', 'wide_src', 'id', '{pad}');
\i sql/parallel_reset.psql
DROP TABLE wide_src;

-- predict_query is streamed the same way: its query runs a batch at a
-- time, a LIMIT stops it at the batch it needs; keys of any type; the
-- column definition list and the query checked as by the function
EXPLAIN (COSTS OFF)
SELECT * FROM silvan.predict_query('multi_softprob', 'SELECT id::text, f FROM src') AS (key text, p float8) LIMIT 3;
SELECT * FROM silvan.predict_query('multi_softprob', 'SELECT id::text, f FROM src ORDER BY id', 512)
  AS (key text, p float8) LIMIT 3;
SELECT * FROM pg_temp.rows_scored('SELECT * FROM silvan.predict_query(''multi_softprob'', ''SELECT id, f FROM src'', 512) AS (key int, p float8) LIMIT 10');
SELECT count(*) AS rows, count(DISTINCT q.key) AS keys,
       count(*) FILTER (WHERE q.p::real IS DISTINCT FROM e.e[1]::real) AS predict_differ,
       count(*) FILTER (WHERE r.m::real[] IS DISTINCT FROM e.e[2:1 + :g]::real[]) AS raw_differ
  FROM silvan.predict_query('multi_softprob', 'SELECT id::text, f FROM src', 512) AS q(key text, p float8)
  JOIN silvan.predict_raw_query('multi_softprob', 'SELECT id::text, f FROM src', 7) AS r(key text, m float8[])
 USING (key)
  JOIN fx_exp AS e ON e.id = 1 + q.key::int % 100;
SELECT * FROM silvan.predict_query('multi_softprob', 'SELECT id, f FROM src') AS (key text, p float8);
SELECT * FROM silvan.predict_query('multi_softprob', 'SELECT id, f FROM src') AS (key int, p float4);
SELECT * FROM silvan.predict_query('multi_softprob', NULL) AS (key int, p float8);
SELECT * FROM silvan.predict_query('multi_softprob', 'VACUUM src') AS (key int, p float8);
SELECT * FROM silvan.predict_query('multi_softprob', 'SELECT id, f FROM src', 0) AS (key int, p float8);
