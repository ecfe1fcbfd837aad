-- The host profile: the choices of code generation that depend on the CPU.
-- The tests run with silvan.host_profile = fallback (the same choices on
-- every host); here it is measured by the probes, kept beside the code
-- cache for later sessions, shown in the view and in explain, and models
-- predict what the library predicts either way.
\set QUIET on
\set fx binary_logistic
\i sql/fixture.psql

-- the fallback: the plain alternative everywhere, 16 rows in lock-step
SHOW silvan.host_profile;
SELECT choice, value, how, alternatives, rounds FROM silvan.host_profile WHERE choice <> 'cpu';
SELECT value ~ '^[A-Za-z]+ family [0-9]+ model [0-9]+ stepping [0-9]+$' AS cpu_named, how
  FROM silvan.host_profile WHERE choice = 'cpu';
SELECT substring(silvan.explain('binary_logistic', 1024) FROM 'host profile: [^\n]*') AS explained;
CREATE TABLE fallback_run AS
	SELECT key, prediction FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 1024);

-- measured: each choice the CPU can take decided by timing its two
-- alternatives in interleaved rounds (medians of 5 to 15); on a loaded
-- machine the last ones may find the budget spent and keep the fallback's
-- pick, untimed
SET silvan.host_profile = measured;
SELECT value AS profile, how FROM silvan.host_profile WHERE choice = 'profile';
SELECT choice, how IN ('measured', 'tie', 'unavailable', 'fallback') AS decided,
	   value = ANY (alternatives) AS one_of_two,
	   how IN ('unavailable', 'fallback') OR
	   (rounds BETWEEN 5 AND 15 AND us_per_row[1] > 0 AND us_per_row[2] > 0) AS timed,
	   how <> 'fallback' OR (rounds = 0 AND value = alternatives[CASE choice WHEN 'interleave' THEN 2 ELSE 1 END]) AS fallback_untimed,
	   how <> 'measured' OR us_per_row[array_position(alternatives, value)] < us_per_row[3 - array_position(alternatives, value)] AS faster
  FROM silvan.host_profile WHERE choice NOT IN ('cpu', 'profile');
-- the first choice always finds the budget unspent
SELECT how IN ('measured', 'tie', 'unavailable') AS carry_decided
  FROM silvan.host_profile WHERE choice = 'carry';
-- explain names the choices the code was made with: the view's
SELECT substring(silvan.explain('binary_logistic', 1024) FROM 'host profile: [a-z]+; ([^\n]*)') =
	   (SELECT string_agg(choice || ' ' || value, ', ' ORDER BY ord)
		  FROM silvan.host_profile_rows() WITH ORDINALITY AS h(choice, value, how, alternatives, us_per_row, rounds, ord)
		 WHERE choice NOT IN ('cpu', 'profile')) AS explained_as_measured;
-- the same predictions as the library's, and as with the fallback
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE p.prediction IS DISTINCT FROM f.prediction) AS changed,
	   count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 1024) AS p
  JOIN fallback_run AS f USING (key) JOIN fx_exp AS e ON e.id = p.key;
CREATE TABLE measured_profile AS SELECT * FROM silvan.host_profile;

-- a new session reads the kept profile instead of measuring again
\c
SET silvan.host_profile = measured;
SELECT count(*) AS differs FROM (SELECT * FROM silvan.host_profile
								  EXCEPT SELECT * FROM measured_profile) AS d;
-- SET silvan.vector_walk = off overrides one choice
SET silvan.vector_walk = off;
SELECT value, how FROM silvan.host_profile WHERE choice = 'vector_walk';
RESET silvan.vector_walk;

-- measuring again is for superusers (or roles granted EXECUTE)
CREATE ROLE host_profile_user;
SET ROLE host_profile_user;
SELECT count(*) FROM silvan.measure_host();
SELECT count(*) AS rows FROM silvan.host_profile;
RESET ROLE;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE how IN ('measured', 'tie', 'unavailable', 'fallback')) AS choices,
	   count(*) FILTER (WHERE choice = 'carry' AND how <> 'fallback') AS carry_decided
  FROM silvan.measure_host();
DROP ROLE host_profile_user;
-- measuring answers a cancel: the statement stops, the kept profile stays
CREATE TABLE kept_profile AS SELECT * FROM silvan.host_profile;
SET statement_timeout = '300ms';
SELECT count(*) FROM silvan.measure_host();
RESET statement_timeout;
SELECT count(*) AS differs FROM (SELECT * FROM silvan.host_profile
								  EXCEPT SELECT * FROM kept_profile) AS d;
DROP TABLE kept_profile;
RESET silvan.host_profile;
DROP TABLE fallback_run, measured_profile;
SELECT silvan.drop_model('binary_logistic');
