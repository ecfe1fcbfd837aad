-- What a role may see of the catalog, where an administrator puts
-- row-level security on silvan.model: the views show it only the rows the
-- policy lets it read, and no scoring path serves it a model the policy
-- hides, even after another role's SECURITY DEFINER function loaded that
-- model into the same backend's cache.  The tuning_jobs view is a
-- security barrier: a cheap function in the caller's WHERE clause sees
-- only the caller's own jobs.
\set QUIET on
\set fx binary_logistic
\i sql/fixture.psql
SELECT current_user AS admin \gset
CREATE ROLE regress_alice LOGIN;
CREATE ROLE regress_mallory LOGIN;
GRANT SELECT ON fx_in TO regress_alice, regress_mallory;
SELECT silvan.reassign_models(:'admin'::regrole, 'regress_alice') AS given_to_alice;
SET ROLE regress_mallory;
\set model `cat test/fixtures/binary_hinge.json`
SELECT silvan.load_model('mallorys', :'model') > 0 AS mallory_loaded;
RESET ROLE;
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1)', batch_size => 64);
-- each role sees its own models (an administrator's choice of policy)
ALTER TABLE silvan.model ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_models ON silvan.model FOR SELECT USING (pg_catalog.pg_has_role(owner, 'USAGE'));
-- alice lets others score with her model through a function of hers
CREATE FUNCTION public.alice_scores(f real[]) RETURNS float8
	LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
	AS $$ SELECT silvan.predict('binary_logistic', f) $$;
ALTER FUNCTION public.alice_scores(real[]) OWNER TO regress_alice;
GRANT EXECUTE ON FUNCTION public.alice_scores(real[]) TO regress_mallory;
-- a job of alice's, as the tuning worker leaves one
INSERT INTO silvan.tuning_job (model_id, owner, batch_sizes, target, strategy, budget, exact, state, result)
SELECT id, 'regress_alice', '{64}', 'cpu', 'heuristic', '1 minute', true, 'done', '{"secret": 42}'
  FROM silvan.model WHERE name = 'binary_logistic';
-- a function that tells what it is shown, cheap enough for the planner to run it first
CREATE FUNCTION public.leak(model text, owner regrole) RETURNS boolean
	LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
	RAISE NOTICE 'leaked: job of % on %', owner, model;
	RETURN true;
END $$;

-- alice sees her model and its schedules in every view
\c - regress_alice
SELECT name, owner FROM silvan.models ORDER BY name;
SELECT count(*) AS features FROM silvan.model_features WHERE model = 'binary_logistic';
SELECT model, batch_size FROM silvan.schedules WHERE model IN ('binary_logistic', 'mallorys') ORDER BY model;

-- mallory sees only her own model in the views
\c - regress_mallory
SELECT name, owner FROM silvan.models ORDER BY name;
SELECT count(*) AS features FROM silvan.model_features WHERE model = 'binary_logistic';
SELECT model, batch_size FROM silvan.schedules WHERE model IN ('binary_logistic', 'mallorys') ORDER BY model;
-- she scores through alice's function (alice's rights): the model is now in her backend's cache
SELECT count(public.alice_scores(f)) AS scored_through_alice FROM fx_in;
-- and yet every path of her own finds no such model
SELECT silvan.predict('binary_logistic', f) FROM fx_in LIMIT 1;
SELECT silvan.predict_proba('binary_logistic', f) FROM fx_in LIMIT 1;
SELECT silvan.predict_raw('binary_logistic', f) FROM fx_in LIMIT 1;
SELECT * FROM silvan.predict_table('binary_logistic', 'fx_in', 'id') LIMIT 1;
SELECT * FROM silvan.predict_query('binary_logistic', 'SELECT id, f FROM fx_in') AS (k bigint, p float8) LIMIT 1;
SELECT length(silvan.explain('binary_logistic')) > 0;
-- alice's function still works for her, after mallory's failures
SELECT count(public.alice_scores(f)) AS scored_through_alice_again FROM fx_in;
-- her own model, of course
SELECT count(silvan.predict('mallorys', f)) AS her_own FROM fx_in;
-- the jobs view shows her nothing of alice's job, however cheap her condition
SELECT count(*) AS jobs_seen FROM silvan.tuning_jobs WHERE public.leak(model, owner);

-- roles taking turns in one backend: each is served what it may see
\c - :admin
GRANT SELECT ON fx_exp TO regress_alice;
SET ROLE regress_mallory;
SELECT count(silvan.predict('mallorys', f)) AS her_own FROM fx_in;
SET ROLE regress_alice;
SELECT count(*) FILTER (WHERE silvan.predict('binary_logistic', f)::real IS DISTINCT FROM e.e[1]::real) AS alice_wrong
  FROM fx_in JOIN fx_exp AS e USING (id);
SET ROLE regress_mallory;
SELECT silvan.predict('binary_logistic', f) FROM fx_in LIMIT 1;
SELECT * FROM silvan.predict_table('binary_logistic', 'fx_in', 'id') LIMIT 1;
RESET ROLE;

\c - :admin
DROP POLICY own_models ON silvan.model;
ALTER TABLE silvan.model DISABLE ROW LEVEL SECURITY;
-- explain tells only the model's owner where its machine code came from
-- (the code cache is the server's: a hit would tell of other databases),
-- even a role that may read the model
SELECT silvan.grant('binary_logistic', 'regress_mallory', 'usage, select');
SET ROLE regress_mallory;
SELECT substring(silvan.explain('binary_logistic', 64) FROM E'compile time: [^\n]*') AS mallory_sees;
SET ROLE regress_alice;
SELECT silvan.explain('binary_logistic', 64) ~ 'compile time: [0-9.]+ ms \(machine code' AS alice_sees_origin;
RESET ROLE;
DELETE FROM silvan.tuning_job;
DROP FUNCTION public.alice_scores(real[]);
DROP FUNCTION public.leak(text, regrole);
SELECT silvan.drop_model('binary_logistic');
SELECT silvan.drop_model('mallorys');
SELECT silvan.reassign_models('regress_alice', :'admin'::regrole) AS given_back;
DROP TABLE fx_in, fx_exp;
DROP ROLE regress_alice, regress_mallory;
