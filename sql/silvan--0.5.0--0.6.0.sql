-- silvan 0.5.0 -> 0.6.0: the catalog's views run with the caller's rights,
-- so row-level security on silvan.model hides a model in them too; the
-- tuning_jobs view is a security barrier and tells a live tuning worker
-- by its backend type.  The catalog's trigger function moves to the
-- extension's own schema silvan_internal, and every object gets a
-- description.  Models, schedules, profiles and jobs are kept.
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

-- the triggers call the function by its OID: they keep firing it
CREATE SCHEMA silvan_internal;
REVOKE ALL ON SCHEMA silvan_internal FROM PUBLIC;
ALTER FUNCTION catalog_changed() SET SCHEMA silvan_internal;

-- Descriptions shown by \dn+, \dt+, \dv+, \ds+, \df+ and \d+.  The same block
-- ends silvan.sql, the install script of this version.
COMMENT ON SCHEMA silvan IS
	'silvan: tree-ensemble models (XGBoost, LightGBM, ONNX) compiled to native code for in-database inference';
COMMENT ON SCHEMA silvan_internal IS
	'silvan''s internal functions: not for users';

COMMENT ON TABLE model IS
	'one row per loaded model: its metadata, validated binary form and source; written only through silvan''s functions';
COMMENT ON COLUMN model.format IS 'xgboost_json, lightgbm_text or onnx';
COMMENT ON COLUMN model.task IS 'what predict() returns: regression, binary, multiclass or ranking';
COMMENT ON COLUMN model.owner IS 'the role that loaded the model; it, its members and superusers may replace or drop it';
COMMENT ON COLUMN model.revision IS 'changes whenever the model is replaced; keys every backend''s compiled code';
COMMENT ON COLUMN model.forest IS 'the validated model in silvan''s compact binary form, read by backends instead of the source';
COMMENT ON COLUMN model.source IS 'the model as loaded, for text formats (NULL for binary formats)';
COMMENT ON COLUMN model.source_binary IS 'the model as loaded, for binary formats such as ONNX (NULL for text formats)';
COMMENT ON COLUMN model.feature_names IS 'feature names the training library recorded, one per feature (NULL: none)';
COMMENT ON COLUMN model.feature_types IS 'feature types the training library recorded, one per feature (NULL: none)';
COMMENT ON COLUMN model.class_labels IS 'the class labels predict() returns the index of (ONNX classifiers; NULL otherwise)';
COMMENT ON SEQUENCE model_id_seq IS 'ids of silvan.model';
COMMENT ON SEQUENCE model_revision_seq IS 'revisions of silvan.model: a new one each time a model is loaded or replaced';

COMMENT ON TABLE schedule IS
	'compiler schedules stored per model, target and batch size, by set_schedule() (origin hand) and the tuner (origin tuned)';
COMMENT ON COLUMN schedule.target IS 'cpu, cuda or rocm';
COMMENT ON COLUMN schedule.batch_size IS 'the batch size the schedule is for (NULL: every size)';
COMMENT ON COLUMN schedule.schedule IS 'the schedule''s directives, as set_schedule() took them';
COMMENT ON COLUMN schedule.origin IS 'hand (set_schedule) or tuned (tune, tune_async)';
COMMENT ON COLUMN schedule.provenance IS 'for a tuned schedule: what the tuner measured, when, where and how';

COMMENT ON TABLE profile IS
	'how often each node of a model was visited over real rows (silvan.profile()), for probability-based tiling';
COMMENT ON COLUMN profile.revision IS 'the model revision profiled; the profile is used only while the model has it';
COMMENT ON COLUMN profile.num_rows IS 'rows profiled';
COMMENT ON COLUMN profile.node_hits IS 'visits per node, in the order of the model''s binary form';

COMMENT ON TABLE tuning_job IS
	'tuning jobs queued by tune_async() and tune_query_async(); read it through the view silvan.tuning_jobs';
COMMENT ON SEQUENCE tuning_job_id_seq IS 'ids of silvan.tuning_job';

COMMENT ON VIEW models IS 'the loaded models (without their source), one row per model';
COMMENT ON COLUMN models.task IS 'what predict() returns: regression, binary, multiclass or ranking';
COMMENT ON COLUMN models.owner IS 'the role that loaded the model; it, its members and superusers may replace or drop it';
COMMENT ON COLUMN models.revision IS 'changes whenever the model is replaced';
COMMENT ON COLUMN models.source_bytes IS 'size of the model as loaded, in bytes';
COMMENT ON COLUMN models.feature_names IS 'feature names the training library recorded (NULL: none)';
COMMENT ON COLUMN models.class_labels IS 'the class labels predict() returns the index of (ONNX classifiers; NULL otherwise)';

COMMENT ON VIEW model_features IS 'one row per feature of every model, with the name and type the training library recorded';
COMMENT ON COLUMN model_features.position IS 'the feature''s position, from 1, as in feature_columns (explain''s feature index is position - 1)';
COMMENT ON COLUMN model_features.name IS 'the recorded name (NULL: none recorded)';
COMMENT ON COLUMN model_features.type IS 'the recorded type, such as q, c (categorical), int, float (NULL: none recorded)';

COMMENT ON VIEW schedules IS 'the stored compiler schedules, by model name';
COMMENT ON COLUMN schedules.target IS 'cpu, cuda or rocm';
COMMENT ON COLUMN schedules.batch_size IS 'the batch size the schedule is for (NULL: every size)';
COMMENT ON COLUMN schedules.origin IS 'hand (set_schedule) or tuned (tune, tune_async)';
COMMENT ON COLUMN schedules.provenance IS 'for a tuned schedule: what the tuner measured, when, where and how';

COMMENT ON VIEW tuning_jobs IS
	'the tuning jobs of the roles whose privileges you have: state, progress and result';
COMMENT ON COLUMN tuning_jobs.job IS 'the job''s id, as tune_async() returned it';
COMMENT ON COLUMN tuning_jobs.owner IS 'the role that queued the job; the job runs as it';
COMMENT ON COLUMN tuning_jobs.state IS 'queued, running, done, failed or cancelled (a running job whose worker is gone shows as failed)';
COMMENT ON COLUMN tuning_jobs.phase IS 'the search phase running now';
COMMENT ON COLUMN tuning_jobs.batch_size IS 'the batch size being tuned now';
COMMENT ON COLUMN tuning_jobs.candidates_done IS 'schedules timed so far for this batch size';
COMMENT ON COLUMN tuning_jobs.candidates_planned IS 'schedules the current phase plans to time';
COMMENT ON COLUMN tuning_jobs.best_us_per_row IS 'microseconds per row of the best schedule found so far';
COMMENT ON COLUMN tuning_jobs.default_us_per_row IS 'microseconds per row of the default schedule';
COMMENT ON COLUMN tuning_jobs.error IS 'why a failed job failed';
COMMENT ON COLUMN tuning_jobs.result IS 'when done: one entry per batch size, as tune() returns them';

COMMENT ON FUNCTION silvan_internal.catalog_changed() IS
	'trigger of silvan''s catalog tables: tells every backend to reload changed models; fired by those triggers only';

COMMENT ON FUNCTION load_model(text, text, text, boolean, boolean) IS
	'load a model from its text (XGBoost JSON, LightGBM text) under a name; returns its id; replace => true replaces one of that name, tune => true queues a tuning job';
COMMENT ON FUNCTION load_model(text, bytea, text, boolean, boolean) IS
	'load a model from its bytes (ONNX, or a text format''s bytes) under a name; returns its id; replace => true replaces one of that name, tune => true queues a tuning job';
COMMENT ON FUNCTION drop_model(text) IS
	'drop a model with its schedules, profile and tuning jobs; true when dropped, false when no model has that name';

COMMENT ON FUNCTION predict(text, float4[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, float8[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, integer[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, bigint[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict(text, numeric[]) IS
	'score one row: the training library''s predict() value (regression value, positive-class probability, or class index)';
COMMENT ON FUNCTION predict_proba(text, float4[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, float8[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, integer[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, bigint[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_proba(text, numeric[]) IS
	'score one row: the class probabilities ({1-p, p} for a binary model)';
COMMENT ON FUNCTION predict_raw(text, float4[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, float8[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, integer[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, bigint[]) IS
	'score one row: the margins before the objective''s transform, one per class';
COMMENT ON FUNCTION predict_raw(text, numeric[]) IS
	'score one row: the margins before the objective''s transform, one per class';

COMMENT ON FUNCTION predict_table(text, regclass, text, text[], integer) IS
	'score every row of a table or view in batches: (key, prediction) per row, the key read from an integer column';
COMMENT ON FUNCTION predict_proba_table(text, regclass, text, text[], integer) IS
	'score every row of a table or view in batches: (key, class probabilities) per row';
COMMENT ON FUNCTION predict_raw_table(text, regclass, text, text[], integer) IS
	'score every row of a table or view in batches: (key, margins) per row';
COMMENT ON FUNCTION predict_query(text, text, integer) IS
	'score the rows of a read-only query in batches (first column the key, the rest the features): write AS (key <type>, prediction float8)';
COMMENT ON FUNCTION predict_proba_query(text, text, integer) IS
	'score the rows of a read-only query in batches: write AS (key <type>, probabilities float8[])';
COMMENT ON FUNCTION predict_raw_query(text, text, integer) IS
	'score the rows of a read-only query in batches: write AS (key <type>, margins float8[])';

COMMENT ON FUNCTION set_schedule(text, text, text, integer) IS
	'store a compiler schedule for a model, target and batch size (NULL: every size); a NULL schedule removes it; true when anything changed';
COMMENT ON FUNCTION profile(text, regclass, text, text[]) IS
	'count how often each node of a model is visited over a table''s rows and store it for probability-based tiling; returns the rows read';
COMMENT ON FUNCTION profile(text, text) IS
	'count how often each node of a model is visited over a query''s rows and store it for probability-based tiling; returns the rows read';
COMMENT ON FUNCTION explain(text, integer, text, boolean) IS
	'what the compiler makes of a model for a batch size and target: the schedule and why, the IR at each level (and LLVM IR)';
COMMENT ON FUNCTION reassign_models(regrole, regrole) IS
	'give every model of one role to another, as REASSIGN OWNED does; returns the number of models';

COMMENT ON FUNCTION tune(text, regclass, text, text[], integer[], text, text, interval, boolean) IS
	'search schedules for a model on sample rows (a table, or rows drawn from the model) and store those that beat the default; one row per batch size';
COMMENT ON FUNCTION tune_query(text, text, integer[], text, text, interval, boolean) IS
	'search schedules for a model on the rows of a query (first column a key) and store those that beat the default; one row per batch size';
COMMENT ON FUNCTION tune_async(text, regclass, text, text[], integer[], text, text, interval, boolean) IS
	'queue tune() for the background tuning worker; returns the job''s id (see silvan.tuning_jobs)';
COMMENT ON FUNCTION tune_query_async(text, text, integer[], text, text, interval, boolean) IS
	'queue tune_query() for the background tuning worker; returns the job''s id (see silvan.tuning_jobs)';
COMMENT ON FUNCTION cancel_tuning(bigint) IS
	'cancel a queued or running tuning job; true when it was cancelled';
COMMENT ON FUNCTION devices() IS
	'the GPUs the installed drivers report (none without a driver: a NOTICE says why)';
