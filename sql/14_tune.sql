-- Tuning: tune() in the foreground, tune_async() in the background worker,
-- cancelling, a worker that dies, permissions and bad arguments.  Timings
-- differ from run to run, so the checks are on what they imply (rows,
-- what is stored and used, exactness), never on the figures themselves.
\set fx binary_logistic
\i sql/fixture.psql
SET client_min_messages = warning;
-- the space without the CPU-dependent vector walks, so the counts below are every host's
SET silvan.vector_walk = off;

-- foreground, on the fixture's table: one row per batch size; with
-- silvan.tune_min_speedup = 0 the best is stored whatever it is
SET silvan.tune_min_speedup = 0;
CREATE TEMP TABLE tuned AS
	SELECT * FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{64,1,16,64}',
							  budget => '20 seconds');
SELECT batch_size, candidates > 1 AS searched, us_per_row > 0 AND default_us_per_row > 0 AS timed,
	   abs(speedup - default_us_per_row / us_per_row) < 1e-9 AS speedup_right, stored, rows_from
  FROM tuned ORDER BY batch_size;
-- stored as tuned with their provenance; explain says so
SELECT s.batch_size, s.origin, s.schedule = t.schedule AS same_schedule,
	   s.provenance->>'strategy' AS strategy, (s.provenance->>'exact')::boolean AS exact,
	   (s.provenance->>'rows')::int AS rows, s.provenance->>'rows_from' AS rows_from,
	   s.provenance ? 'cpu' AND s.provenance ? 'cpu_features' AS has_cpu
  FROM silvan.schedules s JOIN tuned t USING (batch_size)
 WHERE s.model = 'binary_logistic' ORDER BY 1;
SELECT b, substring(silvan.explain('binary_logistic', b) FROM '^schedule source: [^\n]*') AS source,
	   silvan.explain('binary_logistic', b) ~ E'\ntuned: heuristic search, exact sums; ' AS says_tuned
  FROM unnest('{1,16,24,64,200}'::int[]) AS b;
-- and the tuned schedules give XGBoost's own predictions
SELECT b, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM unnest('{1,16,64}'::int[]) AS b,
	   silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => b) AS t
  JOIN fx_exp AS x ON x.id = t.key
 GROUP BY b ORDER BY b;
SELECT count(*) FILTER (WHERE silvan.predict('binary_logistic', f)::real <> x.e[1]::real) AS scalar_diff
  FROM fx_in JOIN fx_exp AS x USING (id);
RESET silvan.tune_min_speedup;

-- the candidates' machine code stays out of the disk code cache
SELECT count(*) AS entries FROM pg_ls_dir('silvan_code', true, false) AS f WHERE f LIKE '%.o' \gset before_
SELECT count(*) AS rows FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{3}',
										 budget => '5 seconds');
SELECT count(*) - :before_entries AS new_entries
  FROM pg_ls_dir('silvan_code', true, false) AS f WHERE f LIKE '%.o';

-- tune_query: a query as the sample (first column a key, as predict_query reads it);
-- a budget this small times the default alone, which is never stored
SET client_min_messages = notice;
SELECT batch_size, candidates, stored, rows_from
  FROM silvan.tune_query('binary_logistic', 'SELECT id, f FROM fx_in', batch_sizes => '{32}',
				   budget => '1 ms');
SET client_min_messages = warning;
SELECT count(*) AS stored_for_32 FROM silvan.schedules WHERE model = 'binary_logistic' AND batch_size = 32;
-- without a sample: rows synthesized from the model (or from its profile)
SELECT batch_size, candidates > 1 AS searched, rows_from
  FROM silvan.tune('binary_logistic', batch_sizes => '{8}', budget => '10 seconds');
SELECT silvan.profile('binary_logistic', 'fx_in', 'id') AS profiled;
SELECT batch_size, rows_from
  FROM silvan.tune('binary_logistic', batch_sizes => '{8}', budget => '1 ms');
-- exhaustive, and inexact (sums may be reordered)
SELECT batch_size, candidates >= 5 AS searched
  FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{1}', strategy => 'exhaustive',
				   budget => '30 seconds');
SELECT batch_size, candidates > 1 AS searched
  FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{256}', exact => false,
				   budget => '10 seconds');
-- a stored tuned schedule that the default now beats is removed, one set by hand stays
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)', batch_size => 4);
SET silvan.tune_min_speedup = 100;
SELECT batch_size, stored FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{1,4}',
										   budget => '1 ms');
RESET silvan.tune_min_speedup;
SELECT batch_size, origin FROM silvan.schedules WHERE model = 'binary_logistic' AND batch_size IN (1, 4);

-- without batch sizes, those scoring runs with: 1 (scalar calls), the
-- batched calls' (silvan.batch_calls_size) and the table functions' 4096;
-- a stored schedule says whether the budget stopped its search
SET silvan.tune_min_speedup = 0;
CREATE TEMP TABLE scoring_tuned AS
	SELECT * FROM silvan.tune('binary_logistic', 'fx_in', 'id', budget => '1 ms');
SELECT batch_size, t.stored, (s.provenance->>'budget_spent')::boolean AS budget_spent
  FROM scoring_tuned AS t JOIN silvan.schedules AS s USING (batch_size)
 WHERE s.model = 'binary_logistic' ORDER BY 1;
SET silvan.batch_calls_size = 64;
SELECT array_agg(batch_size ORDER BY batch_size) AS batch_sizes
  FROM silvan.tune_query('binary_logistic', 'SELECT id, f FROM fx_in', budget => '1 ms');
RESET silvan.batch_calls_size;
RESET silvan.tune_min_speedup;

-- the speedup of the scoring function end to end, beside the kernel's: timed
-- for a schedule stored from a table's or a query's rows (the function they
-- came through, on the sample's rows), never for rows drawn from the model
SET silvan.tune_min_speedup = 0;   -- store whatever it finds
SELECT stored, stored = (end_to_end_speedup IS NOT NULL) AS end_to_end_when_stored,
       coalesce(end_to_end_speedup > 0 AND end_to_end_us_per_row > 0 AND default_end_to_end_us_per_row > 0, true) AS measured
  FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{128}', budget => '2 s');
CREATE TEMP TABLE tuned_256 AS
	SELECT * FROM silvan.tune_query('binary_logistic', 'SELECT id, f FROM fx_in', batch_sizes => '{256}', budget => '2 s');
SELECT t.stored, coalesce(s.provenance ? 'end_to_end_speedup', false) = (t.end_to_end_speedup IS NOT NULL) AS in_the_provenance
  FROM tuned_256 AS t
  LEFT JOIN silvan.schedules AS s ON s.model = 'binary_logistic' AND s.batch_size = 256 AND s.origin = 'tuned'
   AND s.version = silvan.model_version('binary_logistic');
DROP TABLE tuned_256;
SELECT stored, end_to_end_speedup IS NULL AS not_for_drawn_rows
  FROM silvan.tune('binary_logistic', batch_sizes => '{32}', budget => '1 s');
RESET silvan.tune_min_speedup;

-- reset_schedules: every stored schedule of the model goes, tuned or set
-- by hand, for one target or all; the defaults score again
SELECT silvan.reset_schedules('binary_logistic', 'cuda') AS removed_for_cuda;
SELECT count(*) > 0 AS some_stored FROM silvan.schedules WHERE model = 'binary_logistic';
SELECT silvan.reset_schedules('binary_logistic') > 0 AS removed;
SELECT count(*) AS left FROM silvan.schedules WHERE model = 'binary_logistic';
SELECT substring(silvan.explain('binary_logistic', 1024) FROM '^schedule source: [^\n]*') AS source;
SELECT silvan.reset_schedules('binary_logistic') AS removed_again;
SELECT count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 1024) AS t
  JOIN fx_exp AS x ON x.id = t.key;

-- a statement timeout (as a cancel) stops a search cleanly: nothing is
-- stored, not even for the batch sizes already done
SET silvan.tune_min_speedup = 0;
SET statement_timeout = '1500ms';
SELECT * FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{2,4096}',
						  strategy => 'exhaustive', budget => '10 minutes');
RESET statement_timeout;
RESET silvan.tune_min_speedup;
SELECT count(*) AS stored_for_2_or_4096 FROM silvan.schedules
 WHERE model = 'binary_logistic' AND batch_size IN (2, 4096);

-- bad arguments
\set VERBOSITY default
SELECT * FROM silvan.tune('no_such_model');
SELECT * FROM silvan.tune('Binary_Logistic');
SELECT * FROM silvan.tune('binary_logistic', strategy => 'random');
SELECT * FROM silvan.tune('binary_logistic', target => 'cuda');
SELECT * FROM silvan.tune('binary_logistic', target => 'tpu');
SELECT * FROM silvan.tune('binary_logistic', budget => '0 seconds');
SELECT * FROM silvan.tune('binary_logistic', budget => '-1 minute');
SELECT * FROM silvan.tune('binary_logistic', budget => '2 days');
SELECT * FROM silvan.tune('binary_logistic', batch_sizes => '{}');
SELECT * FROM silvan.tune('binary_logistic', batch_sizes => '{64,0}');
SELECT * FROM silvan.tune('binary_logistic', batch_sizes => '{1,NULL}');
SELECT * FROM silvan.tune('binary_logistic', batch_sizes => '{1000000}');
SELECT silvan.reset_schedules('no_such_model');
SELECT silvan.reset_schedules('binary_logistic', 'tpu');
SELECT silvan.reset_schedules(NULL);
SET maintenance_work_mem = '1MB';
SELECT * FROM silvan.tune('binary_logistic', 'fx_in', 'id', batch_sizes => '{65536}');
RESET maintenance_work_mem;
SELECT * FROM silvan.tune('binary_logistic', exact => NULL);
SELECT * FROM silvan.tune('binary_logistic', key_column => 'id');
SELECT * FROM silvan.tune(NULL);
CREATE TABLE empty_sample (id int, f real[]);
SELECT * FROM silvan.tune('binary_logistic', 'empty_sample', 'id');
CREATE TABLE narrow (id int, a real, b real);
INSERT INTO narrow VALUES (1, 2, 3);
SELECT * FROM silvan.tune('binary_logistic', 'narrow', 'id');
SELECT * FROM silvan.tune('binary_logistic', 'narrow', 'no_such_column');
SELECT * FROM silvan.tune_query('binary_logistic', 'SELECT 1, 2');
SELECT * FROM silvan.tune_query('binary_logistic', 'SELECT id, f FROM fx_in WHERE false');
SELECT * FROM silvan.tune_query('binary_logistic', NULL);
SELECT * FROM silvan.tune_query('binary_logistic', 'DELETE FROM narrow RETURNING *');
SELECT silvan.tune_async('binary_logistic', strategy => 'random');
SELECT silvan.cancel_tuning(999999);
\set VERBOSITY terse

-- the background worker: queued, run, done; its result and progress
CREATE FUNCTION public.wait_job(job bigint, states text[], seconds int DEFAULT 240)
	RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	s text;
BEGIN
	FOR i IN 1 .. seconds * 10 LOOP
		SELECT j.state INTO s FROM silvan.tuning_jobs j WHERE j.job = wait_job.job;
		IF s = ANY (states) THEN
			RETURN s;
		END IF;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN 'timed out in state ' || coalesce(s, 'none');
END $$;
-- the worker is gone once the queue is empty
CREATE FUNCTION public.wait_worker_gone(seconds int DEFAULT 240) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. seconds * 10 LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'silvan tuning worker') THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN false;
END $$;
SELECT silvan.tune_query_async('binary_logistic', 'SELECT id, f FROM public.fx_in', batch_sizes => '{128}',
						 budget => '10 seconds') AS job1 \gset
SELECT public.wait_job(:job1, '{done,failed}');
SELECT state, error, phase, jsonb_array_length(result) AS results,
	   (result->0->>'batch_size')::int AS batch_size, result->0->>'rows_from' AS rows_from,
	   candidates_done > 0 AS progressed, finished >= started AS timed, owner
  FROM silvan.tuning_jobs WHERE job = :job1;
-- a query that names its tables without a schema fails: the worker's search_path is locked
SELECT silvan.tune_query_async('binary_logistic', 'SELECT id, f FROM fx_in', batch_sizes => '{128}',
						 budget => '10 seconds') AS job1b \gset
SELECT public.wait_job(:job1b, '{done,failed}');
SELECT state, error FROM silvan.tuning_jobs WHERE job = :job1b;

-- cancelled while it runs: it stops and stores nothing; jobs queued
-- meanwhile run after it, as their owner, whose rights are checked again
CREATE ROLE regress_silvan_tuner;
CREATE TABLE tuner_sample AS SELECT * FROM fx_in;
GRANT SELECT ON tuner_sample TO regress_silvan_tuner;
SET ROLE regress_silvan_tuner;
SELECT silvan.load_model('tuner_model', :'model') > 0 AS loaded;
RESET ROLE;
SELECT silvan.tune_async('binary_logistic', 'fx_in', 'id', batch_sizes => '{2048}',
						 strategy => 'exhaustive', budget => '5 minutes') AS job2 \gset
SELECT public.wait_job(:job2, '{running}');
SET ROLE regress_silvan_tuner;
SELECT silvan.tune_async('tuner_model', 'tuner_sample', 'id', batch_sizes => '{64}',
						 budget => '5 seconds') AS job3 \gset
-- others' jobs are not visible, nor may they be cancelled or tuned
SELECT job = :job3 AS own_job, state FROM silvan.tuning_jobs;
SELECT silvan.cancel_tuning(:job2);
SELECT * FROM silvan.tune('binary_logistic', 'tuner_sample', 'id');
SELECT silvan.tune_async('binary_logistic');
RESET ROLE;
REVOKE SELECT ON tuner_sample FROM regress_silvan_tuner;
SELECT silvan.cancel_tuning(:job2) AS cancelled;
SELECT silvan.cancel_tuning(:job2) AS cancelled_again;
SELECT public.wait_worker_gone();
SELECT job, state, error FROM silvan.tuning_jobs WHERE job IN (:job2, :job3) ORDER BY job;
SELECT count(*) AS stored_for_2048 FROM silvan.schedules WHERE batch_size = 2048;

-- a worker that dies leaves no job running: the view says failed at
-- once, and the next worker marks it so in the table
SELECT silvan.tune_async('binary_logistic', 'fx_in', 'id', batch_sizes => '{4096}',
						 strategy => 'exhaustive', budget => '5 minutes') AS job4 \gset
SELECT public.wait_job(:job4, '{running}');
SELECT pg_terminate_backend(worker_pid) FROM silvan.tuning_job WHERE id = :job4;
SELECT public.wait_worker_gone();
SELECT state, error FROM silvan.tuning_jobs WHERE job = :job4;
-- (a worker whose start was pending may already have marked it in the table)
SELECT state IN ('running', 'failed') AS running_or_marked FROM silvan.tuning_job WHERE id = :job4;

-- a job's query cannot change the worker's settings for the jobs after it
-- (another role's job would otherwise run under its search_path)
GRANT SELECT ON tuner_sample TO regress_silvan_tuner;
BEGIN;
SET LOCAL ROLE regress_silvan_tuner;
SELECT silvan.tune_query_async('tuner_model',
	$$SELECT id, f FROM public.tuner_sample WHERE pg_catalog.set_config('search_path', 'public', false) IS NOT NULL$$,
	batch_sizes => '{8}', budget => '2 seconds') AS job6 \gset
RESET ROLE;
SELECT silvan.tune_query_async('binary_logistic', 'SELECT id, f FROM fx_in', batch_sizes => '{8}',
							   budget => '2 seconds') AS job7 \gset
COMMIT;
SELECT public.wait_job(:job7, '{done,failed}');
SELECT job, state, error FROM silvan.tuning_jobs WHERE job IN (:job6, :job7) ORDER BY job;

-- load_model(..., tune => true) queues a job with tune_async's defaults
SELECT silvan.load_model('tuned_on_load', :'model', tune => true) > 0 AS loaded;
SELECT job AS job5, batch_sizes, strategy, budget, exact
  FROM silvan.tuning_jobs WHERE model = 'tuned_on_load' \gset
SELECT :'batch_sizes' AS batch_sizes, :'strategy' AS strategy, :'budget' AS budget, :'exact' AS exact;
SELECT public.wait_job(:job5, '{done,failed}');
SELECT state, error, jsonb_array_length(result) AS results,
	   (SELECT array_agg(DISTINCT r->>'rows_from') FROM jsonb_array_elements(result) AS r) AS rows_from
  FROM silvan.tuning_jobs WHERE job = :job5;
SELECT state, error FROM silvan.tuning_job WHERE id = :job4;
-- a new version of the same trees gets the deployed version's schedules (the one before keeps its own); dropping a model, its jobs
SELECT count(*) > 0 AS tuned_before FROM silvan.schedules WHERE model = 'binary_logistic' AND origin = 'tuned';
SELECT silvan.load_model('binary_logistic', :'model', replace => true) > 0 AS replaced;
SELECT count(*) FILTER (WHERE version = silvan.model_version('binary_logistic')) AS tuned_after,
       count(*) FILTER (WHERE version < silvan.model_version('binary_logistic')) > 0 AS kept_for_the_version_before
  FROM silvan.schedules WHERE model = 'binary_logistic';
SELECT silvan.drop_model('tuned_on_load');
SELECT count(*) AS jobs_left FROM silvan.tuning_job WHERE id = :job5;

DROP FUNCTION public.wait_job(bigint, text[], int), public.wait_worker_gone(int);
DROP TABLE empty_sample, narrow, tuner_sample;
SELECT silvan.drop_model('tuner_model');
DROP ROLE regress_silvan_tuner;
RESET client_min_messages;
