-- silvan 0.5.0 -> 0.6.0: the catalog's views run with the caller's rights,
-- so row-level security on silvan.model hides a model in them too; the
-- tuning_jobs view is a security barrier and tells a live tuning worker
-- by its backend type.  Models, schedules, profiles and jobs are kept.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.6.0'" to load this file. \quit

ALTER VIEW models SET (security_invoker = true);
ALTER VIEW model_features SET (security_invoker = true);
ALTER VIEW schedules SET (security_invoker = true);

CREATE OR REPLACE VIEW tuning_jobs WITH (security_barrier = true) AS
	SELECT j.id AS job, m.name AS model, j.owner,
		   CASE WHEN j.state = 'running' AND NOT EXISTS
					(SELECT 1 FROM pg_catalog.pg_stat_activity a
					  WHERE a.pid = j.worker_pid AND a.backend_type = 'silvan tuning worker')
				THEN 'failed' ELSE j.state END AS state,
		   j.phase, j.batch_size, j.candidates_done, j.candidates_planned,
		   j.best_us_per_row, j.default_us_per_row,
		   CASE WHEN j.state = 'running' AND NOT EXISTS
					(SELECT 1 FROM pg_catalog.pg_stat_activity a
					  WHERE a.pid = j.worker_pid AND a.backend_type = 'silvan tuning worker')
				THEN 'the tuning worker exited before finishing the job' ELSE j.error END AS error,
		   j.result, j.batch_sizes, j.strategy, j.budget, j.exact,
		   j.created, j.started, j.finished
	  FROM tuning_job j JOIN model m ON m.id = j.model_id
	 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE');
