-- silvan 0.3.0 -> 0.4.0: schedule exploration from SQL.  tune(),
-- tune_query() and their _async forms (a background worker runs queued
-- jobs, kept in the new tuning_job table and shown by the tuning_jobs
-- view), cancel_tuning(), and load_model(..., tune => true); devices().
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.4.0'" to load this file. \quit

DROP FUNCTION load_model(text, text, text, boolean);
DROP FUNCTION load_model(text, bytea, text, boolean);
-- tune => true queues a tuning job (tune_async with its defaults)
CREATE FUNCTION load_model(name text, model text, format text DEFAULT 'auto',
						   replace boolean DEFAULT false, tune boolean DEFAULT false)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_load_model' LANGUAGE C VOLATILE;

CREATE FUNCTION load_model(name text, model bytea, format text DEFAULT 'auto',
						   replace boolean DEFAULT false, tune boolean DEFAULT false)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_load_model_bytes' LANGUAGE C VOLATILE;

-- Tuning: schedule exploration on sample rows (see the README's "Tuning").
-- tune() searches in the foreground and returns one row per batch size;
-- tune_async() queues the same work for a background worker and returns
-- the job's id.  The sample is a table (matched to the features as
-- predict_table does; NULL: rows drawn from the model), or with
-- tune_query() and tune_query_async() a query read as predict_query reads
-- it (first column a key).  A found schedule is stored (origin 'tuned', with what was
-- measured in its provenance) only where it beats the default by 5%.
CREATE TABLE tuning_job (
	id bigserial PRIMARY KEY,
	model_id bigint NOT NULL REFERENCES model (id) ON DELETE CASCADE,
	owner regrole NOT NULL,
	sample_relation oid,
	sample_query text,
	key_column text,
	feature_columns text[],
	batch_sizes integer[] NOT NULL,
	target text NOT NULL,
	strategy text NOT NULL,
	budget interval NOT NULL,
	exact boolean NOT NULL,
	state text NOT NULL DEFAULT 'queued'
		CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
	phase text,
	batch_size integer,
	candidates_done integer,
	candidates_planned integer,
	best_us_per_row float8,
	default_us_per_row float8,
	result jsonb,
	error text,
	worker_pid integer,
	created timestamptz NOT NULL DEFAULT now(),
	started timestamptz,
	finished timestamptz
);
CREATE INDEX tuning_job_state ON tuning_job (state, id);
REVOKE ALL ON tuning_job FROM PUBLIC;

-- Jobs the caller may see: its own and those of roles whose privileges it
-- has.  A job whose worker is gone (a crash, a restart) shows as failed.
CREATE VIEW tuning_jobs AS
	SELECT j.id AS job, m.name AS model, j.owner,
		   CASE WHEN j.state = 'running' AND NOT EXISTS
					(SELECT 1 FROM pg_catalog.pg_stat_activity a WHERE a.pid = j.worker_pid)
				THEN 'failed' ELSE j.state END AS state,
		   j.phase, j.batch_size, j.candidates_done, j.candidates_planned,
		   j.best_us_per_row, j.default_us_per_row,
		   CASE WHEN j.state = 'running' AND NOT EXISTS
					(SELECT 1 FROM pg_catalog.pg_stat_activity a WHERE a.pid = j.worker_pid)
				THEN 'the tuning worker exited before finishing the job' ELSE j.error END AS error,
		   j.result, j.batch_sizes, j.strategy, j.budget, j.exact,
		   j.created, j.started, j.finished
	  FROM tuning_job j JOIN model m ON m.id = j.model_id
	 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE');
GRANT SELECT ON tuning_jobs TO PUBLIC;

CREATE FUNCTION tune(model text, sample regclass DEFAULT NULL, key_column text DEFAULT NULL,
					 feature_columns text[] DEFAULT NULL,
					 batch_sizes integer[] DEFAULT '{1,64,1024,8192}',
					 target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
					 budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS TABLE (batch_size integer, schedule text, us_per_row float8,
				   default_us_per_row float8, speedup float8, stored boolean,
				   candidates integer, seconds float8, rows_from text)
	AS 'MODULE_PATHNAME', 'silvan_tune_table' LANGUAGE C VOLATILE;
CREATE FUNCTION tune_query(model text, query text,
					 batch_sizes integer[] DEFAULT '{1,64,1024,8192}',
					 target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
					 budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS TABLE (batch_size integer, schedule text, us_per_row float8,
				   default_us_per_row float8, speedup float8, stored boolean,
				   candidates integer, seconds float8, rows_from text)
	AS 'MODULE_PATHNAME', 'silvan_tune_query' LANGUAGE C VOLATILE;
CREATE FUNCTION tune_async(model text, sample regclass DEFAULT NULL, key_column text DEFAULT NULL,
						   feature_columns text[] DEFAULT NULL,
						   batch_sizes integer[] DEFAULT '{1,64,1024,8192}',
						   target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
						   budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_tune_async_table' LANGUAGE C VOLATILE;
CREATE FUNCTION tune_query_async(model text, query text,
						   batch_sizes integer[] DEFAULT '{1,64,1024,8192}',
						   target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
						   budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_tune_async_query' LANGUAGE C VOLATILE;
CREATE FUNCTION cancel_tuning(job bigint) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_cancel_tuning' LANGUAGE C VOLATILE STRICT;

-- The GPUs the drivers report (none without a driver: a NOTICE says why)
CREATE FUNCTION devices()
	RETURNS TABLE (vendor text, ordinal integer, name text, arch text, memory_bytes bigint)
	AS 'MODULE_PATHNAME', 'silvan_devices' LANGUAGE C VOLATILE;
