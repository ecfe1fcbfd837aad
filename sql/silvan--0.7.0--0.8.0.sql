-- silvan 0.7.0 -> 0.8.0: the table functions are parallel safe, so that
-- a parallel plan scores their source's pages in every worker; planning a
-- call of predict_query loads silvan, so that a session's first call
-- streams.  Models, schedules, profiles and jobs are kept.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.8.0'" to load this file. \quit

ALTER FUNCTION predict_table(text, regclass, text, text[], integer) PARALLEL SAFE;
ALTER FUNCTION predict_proba_table(text, regclass, text, text[], integer) PARALLEL SAFE;
ALTER FUNCTION predict_raw_table(text, regclass, text, text[], integer) PARALLEL SAFE;

ALTER FUNCTION predict_query(text, text, integer) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_proba_query(text, text, integer) SUPPORT silvan_internal.predict_calls_support;
ALTER FUNCTION predict_raw_query(text, text, integer) SUPPORT silvan_internal.predict_calls_support;
