-- silvan 0.6.0 -> 0.7.0: predict(), predict_proba() and predict_raw() of a
-- whole row, its columns matched to the model's features by name; the
-- table functions estimate their rows from the source's; planning a
-- scalar call loads silvan.  Models, schedules, profiles and jobs are kept.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.7.0'" to load this file. \quit

-- Scoring a whole row (a table's row or any composite): columns matched to
-- the model's features by name, as predict_table matches them
CREATE FUNCTION predict(model text, features record) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features record) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features record) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_row' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION predict(text, record) IS
	'score one row given whole (a table''s row or any composite), its columns matched to the features by name: the training library''s predict() value';
COMMENT ON FUNCTION predict_proba(text, record) IS
	'score one row given whole, its columns matched to the features by name: the class probabilities';
COMMENT ON FUNCTION predict_raw(text, record) IS
	'score one row given whole, its columns matched to the features by name: the margins before the objective''s transform';

-- the planner's row estimate of a table function: the source's rows
CREATE FUNCTION silvan_internal.predict_table_rows(internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'silvan_predict_table_support' LANGUAGE C STABLE STRICT;
REVOKE ALL ON FUNCTION silvan_internal.predict_table_rows(internal) FROM PUBLIC;
ALTER FUNCTION predict_table(text, regclass, text, text[], integer)
	SUPPORT silvan_internal.predict_table_rows;
ALTER FUNCTION predict_proba_table(text, regclass, text, text[], integer)
	SUPPORT silvan_internal.predict_table_rows;
ALTER FUNCTION predict_raw_table(text, regclass, text, text[], integer)
	SUPPORT silvan_internal.predict_table_rows;
COMMENT ON FUNCTION silvan_internal.predict_table_rows(internal) IS
	'planner support of predict_table and its variants: estimates one row per row of the source';

-- Planning a query that calls the scalar functions loads silvan (their
-- support function is in the library), so that the first such query of a
-- session is batched like the later ones
CREATE FUNCTION silvan_internal.predict_calls_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'silvan_predict_calls_support' LANGUAGE C STABLE STRICT;
REVOKE ALL ON FUNCTION silvan_internal.predict_calls_support(internal) FROM PUBLIC;
ALTER FUNCTION predict(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict(text, record) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba(text, record) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, float4[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, float8[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, integer[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, bigint[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, numeric[]) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw(text, record) SUPPORT silvan_internal.predict_calls_support;
COMMENT ON FUNCTION silvan_internal.predict_calls_support(internal) IS
	'planner support of the scalar predict(), predict_proba() and predict_raw(): answers nothing; planning a call loads silvan, so a session''s first query is batched';
