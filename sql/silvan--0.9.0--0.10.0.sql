-- silvan 0.9.0 -> 0.10.0: tuning as scoring runs.  tune() and its kin
-- tune, by default, the batch sizes scoring uses; reset_schedules()
-- removes a model's stored schedules.  Models, schedules, profiles and jobs
-- are kept.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.10.0'" to load this file. \quit

-- batch_sizes NULL: 1, silvan.batch_calls_size and the table functions'
-- default, 4096 (they were 1, 64, 1024 and 8192)
CREATE OR REPLACE FUNCTION tune(model text, sample regclass DEFAULT NULL, key_column text DEFAULT NULL,
					 feature_columns text[] DEFAULT NULL,
					 batch_sizes integer[] DEFAULT NULL,
					 target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
					 budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS TABLE (batch_size integer, schedule text, us_per_row float8,
				   default_us_per_row float8, speedup float8, stored boolean,
				   candidates integer, seconds float8, rows_from text)
	AS 'MODULE_PATHNAME', 'silvan_tune_table' LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION tune_query(model text, query text,
					 batch_sizes integer[] DEFAULT NULL,
					 target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
					 budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS TABLE (batch_size integer, schedule text, us_per_row float8,
				   default_us_per_row float8, speedup float8, stored boolean,
				   candidates integer, seconds float8, rows_from text)
	AS 'MODULE_PATHNAME', 'silvan_tune_query' LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION tune_async(model text, sample regclass DEFAULT NULL, key_column text DEFAULT NULL,
						   feature_columns text[] DEFAULT NULL,
						   batch_sizes integer[] DEFAULT NULL,
						   target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
						   budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_tune_async_table' LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION tune_query_async(model text, query text,
						   batch_sizes integer[] DEFAULT NULL,
						   target text DEFAULT 'cpu', strategy text DEFAULT 'heuristic',
						   budget interval DEFAULT '2 minutes', exact boolean DEFAULT true)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_tune_async_query' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tune(text, regclass, text, text[], integer[], text, text, interval, boolean) IS
	'search schedules for a model on sample rows (a table, or rows drawn from the model) and store those that beat the default; batch sizes NULL: those scoring uses (1, silvan.batch_calls_size, 4096); one row per batch size';
COMMENT ON FUNCTION tune_query(text, text, integer[], text, text, interval, boolean) IS
	'search schedules for a model on the rows of a query (first column a key) and store those that beat the default; batch sizes NULL: those scoring uses (1, silvan.batch_calls_size, 4096); one row per batch size';

-- Remove a model's stored schedules (owner, or a role granted the model's owner)
CREATE FUNCTION reset_schedules(model text, target text DEFAULT NULL) RETURNS integer
	AS 'MODULE_PATHNAME', 'silvan_reset_schedules' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION reset_schedules(text, text) IS
	'remove every stored schedule of a model, tuned or set by hand, for one target (NULL: all), so that it scores with the defaults; returns how many went';
