-- Scalar calls evaluated in batches ("Custom Scan (SilvanBatch)"): every
-- SQL form scores as XGBoost's own outputs, the same as one row at a time.
\set fx binary_logistic
\i sql/fixture.psql
-- 2,000 rows: twenty copies of the fixture's 100, and XGBoost's outputs
CREATE TABLE fx_many AS SELECT c * 1000 + id AS k, id, f FROM fx_in, generate_series(1, 20) AS c;
CREATE TABLE fx_want AS
	SELECT m.k, e[1]::real AS predict, e[2]::real AS margin FROM fx_many m JOIN fx_exp x USING (id);
ANALYZE fx_many, fx_want;

-- the plans: above a scan (select list and filter), below an aggregate
EXPLAIN (COSTS OFF, VERBOSE)
SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many
 WHERE silvan.predict('binary_logistic', f) > 0.5 AND id > 3;
EXPLAIN (COSTS OFF)
SELECT count(*) FILTER (WHERE silvan.predict('binary_logistic', f) > 0.5) FROM fx_many;

-- the first query of a session is planned before silvan is loaded (not
-- preloaded here): planning the call loads it, and its plan is batched too;
-- so is a table function's first query streamed
\c
EXPLAIN (COSTS OFF)
SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many LIMIT 5;
\c
SELECT count(*) AS rows, count(*) FILTER (WHERE s.p::real IS DISTINCT FROM w.predict) AS differ
  FROM (SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many) s JOIN fx_want w USING (k);
\c
EXPLAIN (COSTS OFF)
SELECT * FROM silvan.predict_table('binary_logistic', 'fx_many', 'k') LIMIT 5;
\c
EXPLAIN (COSTS OFF)
SELECT * FROM silvan.predict_query('binary_logistic', 'SELECT k, f FROM fx_many') AS (key int, p float8) LIMIT 5;
\c

-- select list, filter, order and limit, against XGBoost
SELECT count(*) AS rows, count(*) FILTER (WHERE s.p::real IS DISTINCT FROM w.predict) AS differ
  FROM (SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many) s JOIN fx_want w USING (k);
SELECT (SELECT count(*) FROM fx_many WHERE silvan.predict('binary_logistic', f)::real > 0.5) =
       (SELECT count(*) FROM fx_want WHERE predict > 0.5) AS filter_agrees;
SELECT array_agg(k ORDER BY k) = (SELECT array_agg(k ORDER BY k) FROM
         (SELECT k FROM fx_want ORDER BY predict DESC, k LIMIT 7) w) AS top_agrees
  FROM (SELECT k FROM fx_many ORDER BY silvan.predict('binary_logistic', f)::real DESC, k LIMIT 7) s;
-- margins and probabilities
SELECT count(*) FILTER (WHERE (silvan.predict_raw('binary_logistic', f))[1]::real IS DISTINCT FROM w.margin) AS raw_differ,
       count(*) FILTER (WHERE silvan.predict_proba('binary_logistic', f)::real[] IS DISTINCT FROM
                        ARRAY[1::real - w.predict, w.predict]) AS proba_differ
  FROM fx_many JOIN fx_want w USING (k);

-- a LIMIT reads little more than it returns
CREATE FUNCTION pg_temp.rows_scored(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ 'Rows Scored|Batches' THEN RETURN NEXT trim(line); END IF;
	END LOOP;
END $$;
SET silvan.max_threads = 1;
SELECT * FROM pg_temp.rows_scored('SELECT k, silvan.predict(''binary_logistic'', f) FROM fx_many LIMIT 10');
-- pipelined (more than one thread), the batch after is read and scored
-- while the rows of the one before are handed on: the same results; an
-- error while a batch is being scored stops it, and the next query runs
SET silvan.max_threads = 2;
SELECT * FROM pg_temp.rows_scored('SELECT k, silvan.predict(''binary_logistic'', f) FROM fx_many LIMIT 10');
SELECT count(*) FILTER (WHERE s.p::real IS DISTINCT FROM w.predict) AS pipelined_differ
  FROM (SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many) s JOIN fx_want w USING (k);
SELECT count(silvan.predict('binary_logistic', f)) FROM fx_many WHERE 10 / (k - 17005) > -1000;
SELECT count(silvan.predict('binary_logistic', f)) FROM fx_many WHERE k <> 17005;
RESET silvan.max_threads;

-- UPDATE, INSERT ... SELECT, CREATE TABLE AS, a materialized view
ALTER TABLE fx_many ADD COLUMN score float8;
UPDATE fx_many SET score = silvan.predict('binary_logistic', f) WHERE k % 2 = 0;
SELECT count(*) FILTER (WHERE k % 2 = 0 AND score::real IS DISTINCT FROM w.predict) AS updated_differ,
       count(*) FILTER (WHERE k % 2 = 1 AND score IS NOT NULL) AS others_touched
  FROM fx_many JOIN fx_want w USING (k);
CREATE TABLE scored (k bigint, p float8);
INSERT INTO scored SELECT k, silvan.predict('binary_logistic', f) FROM fx_many;
CREATE TABLE scored_as AS SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many;
CREATE MATERIALIZED VIEW scored_mv AS SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many;
REFRESH MATERIALIZED VIEW scored_mv;
SELECT (SELECT count(*) FROM scored JOIN fx_want USING (k) WHERE p::real IS DISTINCT FROM predict) AS insert_differ,
       (SELECT count(*) FROM scored_as JOIN fx_want USING (k) WHERE p::real IS DISTINCT FROM predict) AS ctas_differ,
       (SELECT count(*) FROM scored_mv JOIN fx_want USING (k) WHERE p::real IS DISTINCT FROM predict) AS matview_differ;

-- subqueries, CTEs, joins, a LATERAL inner side rescanned per outer row
WITH s AS (SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many)
SELECT count(*) FILTER (WHERE s.p::real IS DISTINCT FROM w.predict) AS cte_differ
  FROM s JOIN fx_want w USING (k);
SELECT count(*) FILTER (WHERE x.p::real IS DISTINCT FROM w.predict) AS lateral_differ, count(*) AS rows
  FROM fx_want w, LATERAL (SELECT silvan.predict('binary_logistic', m.f) AS p
                             FROM fx_many m WHERE m.k = w.k OFFSET 0) x;

-- prepared statements with generic plans: the model as a parameter
SET plan_cache_mode = force_generic_plan;
PREPARE scores(text) AS
	SELECT count(*) FILTER (WHERE silvan.predict($1, f)::real IS DISTINCT FROM w.predict)
	  FROM fx_many JOIN fx_want w USING (k);
EXECUTE scores('binary_logistic');
EXECUTE scores('binary_logistic');
EXPLAIN (COSTS OFF) EXECUTE scores('binary_logistic');
DEALLOCATE scores;
RESET plan_cache_mode;

-- cursors: forward in batches; a scrollable one is planned without the node
BEGIN;
DECLARE c CURSOR FOR SELECT k, silvan.predict('binary_logistic', f)::real AS p FROM fx_many ORDER BY k;
FETCH 3 FROM c;
DECLARE s SCROLL CURSOR FOR SELECT k, silvan.predict('binary_logistic', f)::real AS p FROM fx_many WHERE k < 1100;
FETCH 2 FROM s;
FETCH BACKWARD 1 FROM s;
COMMIT;

-- parallel plans: each worker batches its share
\i sql/parallel.psql
EXPLAIN (COSTS OFF)
SELECT count(*) FILTER (WHERE silvan.predict('binary_logistic', f) > 0.5) FROM fx_many;
SELECT count(*) FILTER (WHERE s.p::real IS DISTINCT FROM w.predict) AS parallel_differ
  FROM (SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many) s JOIN fx_want w USING (k);
\i sql/parallel_reset.psql

-- NULL features give NULL; a wrong row fails as the scalar call does
SELECT count(*) FILTER (WHERE p IS NULL) AS nulls, count(*) AS rows
  FROM (SELECT silvan.predict('binary_logistic', CASE WHEN k % 3 = 0 THEN f END) AS p FROM fx_many) s;
SELECT silvan.predict('binary_logistic', CASE WHEN k = 1050 THEN f[1:2] ELSE f END) FROM fx_many;

-- EXECUTE on the function is checked as for a call
CREATE ROLE regress_batch_reader;
GRANT SELECT ON fx_many TO regress_batch_reader;
REVOKE EXECUTE ON FUNCTION silvan.predict(text, real[]) FROM PUBLIC;
SET ROLE regress_batch_reader;
SELECT count(silvan.predict('binary_logistic', f)) FROM fx_many;
RESET ROLE;
GRANT EXECUTE ON FUNCTION silvan.predict(text, real[]) TO PUBLIC;
DROP OWNED BY regress_batch_reader;
DROP ROLE regress_batch_reader;

-- EXPLAIN ANALYZE says how the code was had, and for how long it ran: a
-- fresh session loads it from the code cache, the next query has it in memory
\c
CREATE FUNCTION pg_temp.code_lines(query text, pattern text DEFAULT 'Code|Scoring Time')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ pattern THEN
			RETURN NEXT regexp_replace(regexp_replace(trim(line), '[0-9]+\.[0-9]+ ms', 'N ms'),
									   ' \(actual .*', '');
		END IF;
	END LOOP;
END $$;
SELECT * FROM pg_temp.code_lines('SELECT count(silvan.predict(''binary_logistic'', f)) FROM fx_many');
SELECT * FROM pg_temp.code_lines('SELECT count(silvan.predict(''binary_logistic'', f)) FROM fx_many');
SELECT * FROM pg_temp.code_lines('SELECT count(*) FROM silvan.predict_table(''binary_logistic'', ''fx_many'', ''k'', ''{f}'', 1024)');
-- in a parallel plan, the rows and time of every worker
\i sql/parallel.psql
SELECT * FROM pg_temp.code_lines('SELECT count(silvan.predict(''binary_logistic'', f)) FROM fx_many',
								 'SilvanBatch|Rows Scored|Scoring Time');
\i sql/parallel_reset.psql

-- off: one row at a time, the same results
SET silvan.batch_calls = off;
EXPLAIN (COSTS OFF) SELECT count(silvan.predict('binary_logistic', f)) FROM fx_many;
SELECT count(*) FILTER (WHERE s.p::real IS DISTINCT FROM w.predict) AS unbatched_differ
  FROM (SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many) s JOIN fx_want w USING (k);
RESET silvan.batch_calls;

-- a schedule stored for the batch's size that adds trees in parallel: the
-- batch runs the scalar code, so the results stay XGBoost's bit for bit
SELECT silvan.set_schedule('binary_logistic',
       'tile(tree, t0, t1, 3); reorder(t0, batch, t1); parallel(t0)', batch_size => 1024);
SET silvan.max_threads = 2;
SELECT count(*) FILTER (WHERE s.p::real IS DISTINCT FROM w.predict) AS reordering_schedule_differ
  FROM (SELECT k, silvan.predict('binary_logistic', f) AS p FROM fx_many) s JOIN fx_want w USING (k);
RESET silvan.max_threads;
SELECT silvan.set_schedule('binary_logistic', NULL, batch_size => 1024);

-- a multi-class model: probabilities and margins, batched
\set fx multi_softprob
\i sql/fixture.psql
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict_proba('multi_softprob', f)::real[] IS DISTINCT FROM e[2 + :g:1 + :g + :np]::real[]) AS proba_differ,
       count(*) FILTER (WHERE silvan.predict_raw('multi_softprob', f)::real[] IS DISTINCT FROM e[2:1 + :g]::real[]) AS raw_differ,
       count(*) FILTER (WHERE silvan.predict('multi_softprob', f)::real IS DISTINCT FROM e[1]::real) AS predict_differ
  FROM fx_in JOIN fx_exp USING (id);

-- whole rows, their columns matched to the features by name: batched in a
-- select list and a filter, an UPDATE and a parallel plan, against XGBoost
\set fx named_features
\i sql/fixture.psql
CREATE TABLE people AS
	SELECT c * 1000 + id AS k, id, f[10] AS s6, f[3] AS bmi, f[5] AS s1, f[2] AS sex, f[9] AS s5,
		   f[1] AS age, f[4] AS bp, f[8] AS s4, f[6] AS s2, f[7] AS s3, NULL::float8 AS score
	  FROM fx_in, generate_series(1, 20) AS c;
ANALYZE people;
EXPLAIN (COSTS OFF, VERBOSE)
SELECT k, silvan.predict('named_features', p) FROM people p WHERE silvan.predict('named_features', p) > 150;
SELECT count(*) AS rows, count(*) FILTER (WHERE silvan.predict('named_features', p)::real IS DISTINCT FROM e[1]::real) AS differ,
	   count(*) FILTER (WHERE silvan.predict('named_features', p) > 150) =
	   count(*) FILTER (WHERE e[1]::real > 150) AS filter_agrees
  FROM people p JOIN fx_exp USING (id);
-- ARRAY[...] of real or float8 columns: the node reads the columns without
-- building the array; the same results, NULLs as missing values, the same errors
EXPLAIN (COSTS OFF, VERBOSE)
SELECT silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]) FROM people;
SELECT count(*) FILTER (WHERE silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6])::real
						IS DISTINCT FROM e[1]::real) AS columns_differ
  FROM people JOIN fx_exp USING (id);
CREATE TABLE people8 AS
	SELECT k, id, age::float8 AS age, sex::float8 AS sex, CASE WHEN k % 7 = 0 THEN NULL ELSE bmi::float8 END AS bmi,
		   bp::float8 AS bp, s1::float8 AS s1, s2::float8 AS s2, s3::float8 AS s3, s4::float8 AS s4,
		   s5::float8 AS s5, s6::float8 AS s6
	  FROM people;
CREATE TABLE people8_scored AS
	SELECT k, silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]) AS p FROM people8;
SET silvan.batch_calls = off;
SELECT count(*) AS rows, count(*) FILTER (WHERE bmi IS NULL) AS null_bmi,
	   count(*) FILTER (WHERE s.p IS DISTINCT FROM
						silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6])) AS float8_columns_differ
  FROM people8 JOIN people8_scored AS s USING (k);
RESET silvan.batch_calls;
SELECT silvan.predict('named_features', ARRAY[age, sex]) FROM people;
DROP TABLE people8, people8_scored;
-- the columns read in place from the table's tuples: in the model's order
-- (copied as they lie) or not, a row with a NULL read as the scalar call
-- reads it, a fixed-length column passed through (uuid), one of variable
-- length (text) after the features; what an aggregate reads of the rows
CREATE TABLE people_wide AS
	SELECT k, id, md5(k::text)::uuid AS u, age, sex, CASE WHEN k % 7 = 0 THEN NULL ELSE bmi END AS bmi,
		   bp, s1, s2, s3, s4, s5, s6, repeat('x', (k % 50)::int) AS note
	  FROM people;
CREATE TABLE people_wide_scored AS
	SELECT k, u, silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]) AS p,
		   silvan.predict('named_features', ARRAY[s6, age, sex, bmi, bp, s1, s2, s3, s4, s5]) AS shifted
	  FROM people_wide;
CREATE TABLE people_wide_noted AS
	SELECT k, note, u, silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]) AS p FROM people_wide;
SELECT k % 3 AS g, count(*), sum(k) AS k_sum, count(age) AS ages FROM people_wide
 WHERE silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]) > 150
 GROUP BY 1 ORDER BY 1;
SET silvan.batch_calls = off;
SELECT count(*) AS rows, count(*) FILTER (WHERE bmi IS NULL) AS null_bmi,
	   count(*) FILTER (WHERE s.u IS DISTINCT FROM w.u OR s.p IS DISTINCT FROM
						silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6])) AS in_place_differ,
	   count(*) FILTER (WHERE s.shifted IS DISTINCT FROM
						silvan.predict('named_features', ARRAY[s6, age, sex, bmi, bp, s1, s2, s3, s4, s5])) AS shifted_differ,
	   count(*) FILTER (WHERE bmi IS NOT NULL AND s.p::real IS DISTINCT FROM e[1]::real) AS xgboost_differ,
	   count(*) FILTER (WHERE n.note IS DISTINCT FROM w.note OR n.u IS DISTINCT FROM w.u OR
						n.p IS DISTINCT FROM s.p) AS noted_differ
  FROM people_wide w JOIN people_wide_scored AS s USING (k) JOIN people_wide_noted AS n USING (k) JOIN fx_exp AS x ON x.id = w.id;
SELECT k % 3 AS g, count(*), sum(k) AS k_sum, count(age) AS ages FROM people_wide
 WHERE silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]) > 150
 GROUP BY 1 ORDER BY 1;
RESET silvan.batch_calls;
DROP TABLE people_wide, people_wide_scored, people_wide_noted;
UPDATE people p SET score = silvan.predict('named_features', p) WHERE k % 2 = 0;
SELECT count(*) FILTER (WHERE k % 2 = 0 AND score::real IS DISTINCT FROM e[1]::real) AS updated_differ,
	   count(*) FILTER (WHERE k % 2 = 1 AND score IS NOT NULL) AS others_touched
  FROM people JOIN fx_exp USING (id);
-- a call on a table's row in an aggregate is computed by the batch node
-- above the scan, which reads the row's columns in place: the scan forms
-- no row value (its Output has no w.*)
CREATE TABLE people_want AS SELECT p.*, e[1]::real AS want FROM people p JOIN fx_exp USING (id);
EXPLAIN (COSTS OFF, VERBOSE)
SELECT count(*) FILTER (WHERE silvan.predict('named_features', w)::real IS DISTINCT FROM want) FROM people_want w;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE silvan.predict('named_features', w)::real IS DISTINCT FROM want) AS aggregated_differ,
	   max(silvan.predict('named_features', w))::real = max(want) AS max_agrees
  FROM people_want w;
-- the same for an ARRAY[...] of the columns, the scan filtering rows
EXPLAIN (COSTS OFF, VERBOSE)
SELECT count(silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6])) FROM people_want WHERE k % 2 = 0;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE silvan.predict('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6])::real
						IS DISTINCT FROM want) AS aggregated_array_differ
  FROM people_want WHERE k % 2 = 0;
DROP TABLE people_want;
-- a scanned table's row is read from its columns, a dropped column skipped;
-- a row from an outer join's nullable side is NULL as a whole: NULL, as the function gives
ALTER TABLE people DROP COLUMN s6, ADD COLUMN s6 real;
UPDATE people p SET s6 = e.f[10] FROM fx_in AS e WHERE e.id = p.id;
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, silvan.predict('named_features', p) AS s FROM people p;
WITH scored AS MATERIALIZED (SELECT id, silvan.predict('named_features', p) AS s FROM people p)
SELECT count(*) AS rows, count(*) FILTER (WHERE s::real IS DISTINCT FROM e[1]::real) AS dropped_column_differ
  FROM scored JOIN fx_exp USING (id);
SELECT count(*) AS rows, count(silvan.predict('named_features', p)) AS scored
  FROM fx_exp AS x LEFT JOIN people p ON p.k = -x.id;
\i sql/parallel.psql
SELECT count(*) FILTER (WHERE silvan.predict('named_features', p)::real IS DISTINCT FROM e[1]::real) AS parallel_differ
  FROM people p JOIN fx_exp USING (id);
\i sql/parallel_reset.psql
DROP TABLE people;
DROP MATERIALIZED VIEW scored_mv;
DROP TABLE fx_many, fx_want, scored, scored_as;
