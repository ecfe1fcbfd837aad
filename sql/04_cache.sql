-- Compiled code is cached per backend and dropped when the model is
-- replaced or dropped, in this backend and in every other one.
\set sq `cat test/fixtures/reg_squarederror.json`
\set gamma `cat test/fixtures/reg_gamma.json`
SELECT silvan.load_model('swap', :'sq') > 0 AS loaded;
SELECT silvan.load_model('gamma_ref', :'gamma') > 0 AS loaded;
\set row '''{0.5,-1,0.25,2,-0.75}''::real[]'

-- this backend
SELECT silvan.predict('swap', :row) = silvan.predict('reg_squarederror', :row) AS is_squarederror;
SELECT silvan.load_model('swap', :'gamma', replace => true) > 0 AS replaced;
SELECT silvan.predict('swap', :row) = silvan.predict('gamma_ref', :row) AS is_gamma;

-- another backend, through dblink
CREATE EXTENSION dblink;
SELECT dblink_connect('other', format('host=%s port=%s dbname=%s',
       split_part(current_setting('unix_socket_directories'), ',', 1),
       current_setting('port'), current_database())) AS connected;
SELECT p = silvan.predict('gamma_ref', :row) AS other_sees_gamma
  FROM dblink('other', format('SELECT silvan.predict(%L, %L::real[])', 'swap', :row::text)) AS t(p float8);
SELECT silvan.load_model('swap', :'sq', replace => true) > 0 AS replaced;
SELECT p = silvan.predict('reg_squarederror', :row) AS other_sees_squarederror
  FROM dblink('other', format('SELECT silvan.predict(%L, %L::real[])', 'swap', :row::text)) AS t(p float8);
SELECT silvan.drop_model('swap');
SELECT * FROM dblink('other', format('SELECT silvan.predict(%L, %L::real[])', 'swap', :row::text)) AS t(p float8);
SELECT dblink_disconnect('other');

-- a model replaced from inside a running scan keeps serving that scan
SELECT silvan.load_model('swap', :'sq') > 0 AS loaded;
CREATE FUNCTION replace_swap() RETURNS real LANGUAGE plpgsql AS $$
BEGIN
	PERFORM silvan.load_model('swap', (SELECT source FROM silvan.model WHERE name = 'gamma_ref'), replace => true);
	-- this lookup retires the version the outer scan has pinned
	RETURN silvan.predict('swap', '{0.5,-1,0.25,2,-0.75}'::real[]);
END $$;
SELECT count(*) AS rows
  FROM silvan.predict_query('swap', 'SELECT g, replace_swap(), -1, 0.25, 2, -0.75 FROM generate_series(1, 10) g', 3)
       AS (key int, p float8);
SELECT silvan.predict('swap', :row) = silvan.predict('gamma_ref', :row) AS replaced_during_scan;

-- ownership: a new model is its owner's (USAGE lets another score with
-- it); only the owner or a superuser may replace or drop it
CREATE ROLE silvan_alice;
CREATE ROLE silvan_bob;
SET ROLE silvan_alice;
SELECT silvan.load_model('alice_model', :'sq') > 0 AS loaded;
SELECT owner FROM silvan.models WHERE name = 'alice_model';
SELECT silvan.predict('alice_model', :row) IS NOT NULL AS alice_predicts;
SET ROLE silvan_bob;
SELECT silvan.predict('alice_model', :row) IS NOT NULL AS bob_predicts;
SET ROLE silvan_alice;
SELECT silvan.grant('alice_model', 'silvan_bob', 'usage');
SET ROLE silvan_bob;
SELECT silvan.predict('alice_model', :row) IS NOT NULL AS bob_predicts;
SELECT silvan.load_model('alice_model', :'gamma', replace => true);
SELECT silvan.drop_model('alice_model');
DELETE FROM silvan.model;
RESET ROLE;
SELECT silvan.drop_model('alice_model') AS superuser_drops;
DROP ROLE silvan_alice;
DROP ROLE silvan_bob;

-- a backend forgets the models that were dropped: twenty short-lived
-- names, each loaded, scored and dropped, leave no compiled code behind
\c
\set sq `cat test/fixtures/reg_squarederror.json`
\set row '''{0.5,-1,0.25,2,-0.75}''::real[]'
\set ECHO none
\o /dev/null
SELECT format('SELECT silvan.load_model(%L, %L)', 'short_' || i, :'sq'),
       format('SELECT silvan.predict(%L, %s)', 'short_' || i, :'row'),
       format('SELECT silvan.drop_model(%L)', 'short_' || i)
  FROM generate_series(1, 20) AS i \gexec
\o
\set ECHO all
SELECT silvan.predict('gamma_ref', :row) IS NOT NULL AS scored;
SELECT count(*) AS models_cached FROM pg_backend_memory_contexts WHERE name = 'silvan model';
SELECT ident FROM pg_backend_memory_contexts WHERE name = 'silvan model';
