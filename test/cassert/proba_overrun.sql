-- predict_proba on a binary model, many rows in one backend, scalar and
-- batched, each class-1 probability against XGBoost's own prob_1 (as
-- float32).  Not part of the pg_regress suite: test/cassert.sh runs it on
-- request, and it fails (psql exits 3) when any row is wrong:
--   bash test/cassert.sh test/cassert/proba_overrun.sql
-- Written for a scratch buffer of num_groups doubles (1 for a binary model)
-- into which ForestProbaRow writes two.  The second lands in the memory
-- context block's free tail, where the next palloc puts its chunk header,
-- so every scalar call but a backend's first returns 8e-323 (the header's
-- size word, 16) as the class-1 probability.  No memory-context check sees
-- it (an 8-byte chunk has no sentinel byte); SILVAN_CASSERT_VALGRIND=1
-- reports it as an invalid write in ForestProbaRow.
\set QUIET on
\set fx binary_logistic
\i sql/fixture.psql
CREATE TEMP TABLE proba_rows AS
SELECT 'scalar select list' AS path, x.id, silvan.predict_proba(:'fx', i.f) AS p, x.e[3] AS prob_1
  FROM generate_series(1, 20) AS rep, fx_in AS i JOIN fx_exp AS x USING (id)
UNION ALL
SELECT 'scalar from clause', x.id, p, x.e[3]
  FROM fx_in AS i JOIN fx_exp AS x USING (id), silvan.predict_proba(:'fx', i.f) AS p
UNION ALL
SELECT 'predict_proba_table', x.id, t.probabilities, x.e[3]
  FROM silvan.predict_proba_table(:'fx', 'fx_in', 'id', batch_size => 7) AS t
  JOIN fx_exp AS x ON x.id = t.key
UNION ALL
SELECT 'predict_proba_query', x.id, q.p, x.e[3]
  FROM silvan.predict_proba_query(:'fx', 'SELECT id, f FROM fx_in', 13) AS q(key bigint, p float8[])
  JOIN fx_exp AS x ON x.id = q.key;
-- wrong: not XGBoost's prob_1 as float32 (a denormal cannot even be cast)
ALTER TABLE proba_rows ADD wrong bool;
UPDATE proba_rows SET wrong = CASE WHEN abs(p[2]) < 1e-30 THEN true
                                   ELSE p[2]::real IS DISTINCT FROM prob_1::real END;
\set QUIET off
SELECT path, count(*) AS calls,
       count(*) FILTER (WHERE wrong) AS wrong,
       (array_agg(format('id %s: %s, XGBoost %s', id, p, prob_1) ORDER BY id)
          FILTER (WHERE wrong))[1] AS first_wrong
  FROM proba_rows GROUP BY path ORDER BY path;
DO $$
DECLARE
	wrong bigint := (SELECT count(*) FROM proba_rows WHERE wrong);
BEGIN
	IF wrong > 0 THEN
		RAISE EXCEPTION 'predict_proba: % of % probabilities differ from XGBoost''s',
			wrong, (SELECT count(*) FROM proba_rows);
	END IF;
END $$;
