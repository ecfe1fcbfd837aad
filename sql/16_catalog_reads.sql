-- The model cache reads a model's state (its row, its cpu schedules and
-- profile, its privileges) straight from the catalog tables' indexes, in a
-- fresh backend and after any change, or through SQL when an index it
-- needs is missing; both are silvan's own reads, whatever the caller may
-- read of the catalog (a role with USAGE on the model may not read its
-- schedules).  Both ways give the same state, and a model that a
-- row-level security policy hides from a role stays hidden from it.
\set QUIET on
\set fx binary_logistic
\i sql/fixture.psql
SELECT current_user AS admin \gset
INSERT INTO silvan.schedule (model_id, target, batch_size, schedule, origin, provenance)
SELECT id, 'cpu', 64, 'tile(batch, b0, b1, 8); reorder(b0, tree, b1)', 'tuned',
	   '{"strategy": "heuristic", "exact": true, "us_per_row": 1.25, "default_us_per_row": 2.50,
		 "tuned_at": "2026-11-24 09:00:00+00", "rows": 1000, "rows_from": "profile", "threads": 2}'
  FROM silvan.model WHERE name = 'binary_logistic';
INSERT INTO silvan.schedule (model_id, target, batch_size, schedule, origin, provenance)
SELECT id, 'cpu', 512, 'tile(batch, b0, b1, 16); reorder(b0, tree, b1)', 'tuned',
	   '{"strategy": "exhaustive", "exact": false, "us_per_row": 0.5}'
  FROM silvan.model WHERE name = 'binary_logistic';
INSERT INTO silvan.schedule (model_id, target, batch_size, schedule)
SELECT id, 'cpu', NULL, 'tile(batch, b0, b1, 4); reorder(b0, tree, b1)'
  FROM silvan.model WHERE name = 'binary_logistic';
CREATE FUNCTION public.explained(batch integer) RETURNS TABLE (schedule text, tuned text)
	LANGUAGE sql AS $$
	SELECT substring(e FROM E'schedule: ([^\n]*)'), substring(e FROM E'tuned: ([^\n]*)')
	  FROM silvan.explain('binary_logistic', batch) AS e $$;
CREATE FUNCTION public.wrong() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real)
	  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 64) AS p
	  JOIN fx_exp AS e ON e.id = p.key $$;
CREATE ROLE silvan_reader LOGIN;
GRANT SELECT ON fx_in, fx_exp TO silvan_reader;
SELECT silvan.grant('binary_logistic', 'silvan_reader', 'usage, select');

-- from the indexes, in a fresh backend
\c
SELECT * FROM public.explained(64);
SELECT * FROM public.explained(512);
SELECT * FROM public.explained(1);
SELECT public.wrong() AS wrong_from_indexes;

-- through SQL, without the index of silvan.schedule, for a role that may
-- not read silvan.schedule itself
DROP INDEX silvan.schedule_key;
\c - silvan_reader
SELECT count(*) FROM silvan.schedule;
SELECT * FROM public.explained(64);
SELECT * FROM public.explained(512);
SELECT * FROM public.explained(1);
SELECT public.wrong() AS wrong_through_sql;
\c - :admin
CREATE UNIQUE INDEX schedule_key ON silvan.schedule (model_id, target, coalesce(batch_size, 0));

-- a policy that hides the model from other roles hides it from predict
ALTER TABLE silvan.model ENABLE ROW LEVEL SECURITY;
CREATE POLICY hide_binary ON silvan.model FOR SELECT USING (name <> 'binary_logistic');
\c - silvan_reader
SELECT silvan.predict('binary_logistic', f) FROM fx_in LIMIT 1;
\c - :admin
SELECT public.wrong() AS wrong_for_the_owner;
DROP POLICY hide_binary ON silvan.model;
ALTER TABLE silvan.model DISABLE ROW LEVEL SECURITY;
\c - silvan_reader
SELECT public.wrong() AS wrong_without_the_policy;
\c - :admin

DROP FUNCTION public.explained(integer);
DROP FUNCTION public.wrong();
DROP TABLE fx_in, fx_exp;
DROP ROLE silvan_reader;
SELECT silvan.drop_model('binary_logistic');
