-- silvan 0.8.0 -> 0.9.0: the host profile (the choices of code generation
-- that depend on the CPU, measured on the host) in a view, and a function
-- to measure it again.  Models, schedules, profiles and jobs are kept.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.9.0'" to load this file. \quit

-- The host profile: the choices of code generation that depend on the CPU,
-- measured once per host and build (silvan.host_profile = measured) and
-- kept beside the code cache
CREATE FUNCTION host_profile_rows()
	RETURNS TABLE (choice text, value text, how text, alternatives text[],
				   us_per_row float8[], rounds integer)
	AS 'MODULE_PATHNAME', 'silvan_host_profile_rows' LANGUAGE C VOLATILE;
CREATE VIEW host_profile WITH (security_invoker = true) AS
	SELECT choice, value, how, alternatives, us_per_row, rounds FROM host_profile_rows();
GRANT SELECT ON host_profile TO PUBLIC;

-- Measure the host profile again now (superusers, or roles granted EXECUTE)
CREATE FUNCTION measure_host()
	RETURNS TABLE (choice text, value text, how text, alternatives text[],
				   us_per_row float8[], rounds integer)
	AS 'MODULE_PATHNAME', 'silvan_measure_host' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION measure_host() FROM PUBLIC;

COMMENT ON VIEW host_profile IS
	'the choices of code generation that depend on this CPU (measured once per host and build, or the fallback), with what the probes timed';
COMMENT ON COLUMN host_profile.choice IS
	'cpu, profile, or a choice of code generation: carry, interleave, vector_walk, gather, code_walk';
COMMENT ON COLUMN host_profile.value IS
	'the CPU, where the profile came from, or the alternative taken';
COMMENT ON COLUMN host_profile.how IS
	'measured, tie (within 3%: the fallback''s pick), unavailable (the CPU lacks what the other needs), fallback, or set';
COMMENT ON COLUMN host_profile.alternatives IS
	'the two alternatives of the choice';
COMMENT ON COLUMN host_profile.us_per_row IS
	'what the probe timed for each alternative: medians of interleaved rounds, microseconds per row';
COMMENT ON COLUMN host_profile.rounds IS
	'interleaved rounds the probe timed; 0: not measured';
COMMENT ON FUNCTION host_profile_rows() IS
	'the rows of the host_profile view: the profile the calling session compiles with';
COMMENT ON FUNCTION measure_host() IS
	'measure the host profile again now and keep it beside the code cache; returns it';
