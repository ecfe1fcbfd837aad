-- Machine code is kept in $PGDATA/silvan_code: a fresh backend, or a
-- parallel worker, loads what another backend compiled instead of
-- compiling again, and predicts the same.  The schedule's tile size is
-- random, so that this run's code is in no earlier run's cache.
\set QUIET on
\set fx binary_logistic
\i sql/fixture.psql
SELECT 100 + (random() * 100000)::int AS tile \gset
SELECT silvan.set_schedule('binary_logistic', format('tile(batch, b0, b1, %s); reorder(b0, tree, b1)', :tile),
						   batch_size => 64);
CREATE FUNCTION public.code_origin(model text, batch integer) RETURNS text
	LANGUAGE sql AS $$
	SELECT substring(silvan.explain(model, batch) FROM 'compile time: [0-9.]+ ms \(machine code ([a-z ]+)\)') $$;
-- stored by set_schedule's compile, so even this backend loads it
SELECT public.code_origin('binary_logistic', 64) AS same_backend;
CREATE TABLE first_run AS
	SELECT key, prediction FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 64);

-- a fresh backend
\c
SELECT public.code_origin('binary_logistic', 64) AS fresh_backend;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE p.prediction IS DISTINCT FROM f.prediction) AS changed,
	   count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 64) AS p
  JOIN first_run AS f USING (key) JOIN fx_exp AS e ON e.id = p.key;
SELECT count(*) > 0 AS has_entries, bool_and(f ~ '^[0-9a-f]{16}\.o$') AS named_by_hash
  FROM pg_ls_dir('silvan_code') AS f WHERE f LIKE '%.o';

-- parallel workers of a scalar predict() load the code the leader's backend stored
\c
SET force_parallel_mode = on;
SET max_parallel_workers_per_gather = 1;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
CREATE FUNCTION pg_temp.explain_lines(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		RETURN NEXT line;
	END LOOP;
END $$;
SELECT silvan.set_schedule('binary_logistic', format('tile(batch, b0, b1, %s)', :tile + 1), batch_size => 1);
SELECT count(*) FILTER (WHERE line ~ 'Workers Launched: 1') AS one_worker_ran
  FROM (SELECT * FROM pg_temp.explain_lines(
	'SELECT count(*) FROM fx_in WHERE silvan.predict(''binary_logistic'', f) > 0.5')) AS x(line);
-- the message comes from the worker (CONTEXT: parallel worker)
\set VERBOSITY default
\set SHOW_CONTEXT always
-- (one row at a time: batched calls run the code of their batch's size)
SET silvan.batch_calls = off;
SET client_min_messages = debug1;
SELECT count(*) AS rows, count(*) FILTER (WHERE silvan.predict('binary_logistic', f)::real IS DISTINCT FROM e.e[1]::real) AS wrong
  FROM fx_in JOIN fx_exp AS e USING (id);
RESET client_min_messages;
RESET silvan.batch_calls;
\set SHOW_CONTEXT errors
\set VERBOSITY terse
RESET force_parallel_mode;

-- with the cache off, code is compiled; a damaged entry is a miss, never an error
\c
SET silvan.code_cache = off;
SELECT public.code_origin('binary_logistic', 64) AS cache_off;
RESET silvan.code_cache;
DO $$
DECLARE
	f text;
BEGIN
	FOR f IN SELECT e FROM pg_ls_dir('silvan_code') AS e WHERE e LIKE '%.o' LOOP
		EXECUTE format('COPY (SELECT %L) TO %L', 'not machine code',
					   current_setting('data_directory') || '/silvan_code/' || f);
	END LOOP;
END $$;
\c
SELECT public.code_origin('binary_logistic', 64) AS damaged_entry;
SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong_after_damage
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 64) AS p
  JOIN fx_exp AS e ON e.id = p.key;
-- the compile stored a good entry again
\c
SELECT public.code_origin('binary_logistic', 64) AS repaired;

-- LLVM is loaded by the first compile, not with silvan: a fresh backend
-- that scores with code from the cache maps no LLVM at all (PostgreSQL's
-- own JIT, which would map it too, is off)
\c
SET jit = off;
SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong_from_cache
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 64) AS p
  JOIN fx_exp AS e ON e.id = p.key;
SELECT pg_read_file('/proc/self/maps') LIKE '%libLLVM%' AS llvm_mapped_from_cache;
\c
SET jit = off;
SET silvan.code_cache = off;
SELECT public.code_origin('binary_logistic', 64) AS cache_off_compiles;
SELECT pg_read_file('/proc/self/maps') LIKE '%libLLVM%' AS llvm_mapped_after_compile;
RESET silvan.code_cache;
RESET jit;

DROP FUNCTION public.code_origin(text, integer);
DROP TABLE first_run, fx_in, fx_exp;
SELECT silvan.drop_model('binary_logistic');
