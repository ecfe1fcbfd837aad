-- make soak: schema "soak", made once (as a superuser) before pgbench starts.
--
-- Every silvan call of the soak goes through soak.run(), which runs it in a
-- subtransaction, catches any error and records one row per call in
-- soak.calls (its SQLSTATE, or how many result rows it checked against the
-- library's outputs and how many differed), so that a failing call never
-- stops a pgbench client and every error is counted by SQLSTATE.
--
-- Model names come in pools:
--   stable  s_<fx>       never dropped; replaced with its own source; schedules
--   churn   c_<fx>_<k>   loaded, replaced with its own source, dropped
--   swap    w_<k>        loaded and replaced with any five-feature fixture
--   new     n_<fx>_<seq> a name never used before, loaded, scored and dropped
--                        (a backend's memory must not grow with the names
--                        it has scored)
--   owned   o_<k>        binary_logistic, loaded, replaced and dropped by
--                        soak_alice and soak_bob: each may change only the
--                        names it loaded (42501 for the other's)
-- A name of every pool but swap always holds the same model, so that every
-- prediction on it is checked (against its fixture's outputs; owned names
-- against binary_logistic's); predictions on swap names are checked only
-- for a result per input row.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE SCHEMA soak;
GRANT USAGE ON SCHEMA soak TO PUBLIC;

-- One row per model source: its inputs are soak.in_<name> (id, f) and
-- soak.col_<name> (id, one column per feature, named as the model names
-- them, else f1 ... fn), 4,000 rows (each input row repeated),
-- and what the library predicts soak.exp_<name> (id, e): e = {predict,
-- margins (g), the last np probabilities}, as the fixtures' .expected.csv
CREATE TABLE soak.fixture (
	name text PRIMARY KEY,
	format text NOT NULL,
	features int NOT NULL,
	g int NOT NULL,
	np int NOT NULL,
	exact32 boolean NOT NULL,	-- compare as float32 (XGBoost) or float8 (LightGBM)
	inputs int NOT NULL,		-- distinct input rows
	rows int NOT NULL,			-- rows of the tables: each input row copies times
	source text NOT NULL
);

CREATE UNLOGGED TABLE soak.calls (
	kind text NOT NULL,
	pool text NOT NULL,
	model text NOT NULL,
	threads int NOT NULL,
	sqlstate text,				-- NULL: the call succeeded
	message text,
	checked bigint NOT NULL DEFAULT 0,
	wrong bigint NOT NULL DEFAULT 0,
	ms float8 NOT NULL,
	at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE SEQUENCE soak.new_name;
CREATE ROLE soak_alice;
CREATE ROLE soak_bob;
GRANT SELECT ON ALL TABLES IN SCHEMA soak TO PUBLIC;
GRANT INSERT ON soak.calls TO PUBLIC;
ALTER DEFAULT PRIVILEGES IN SCHEMA soak GRANT SELECT ON TABLES TO PUBLIC;

-- Make the input, column and expected tables of a fixture from the text of
-- its .input.csv and .expected.csv (NULL expected: computed by silvan's
-- reference interpreter, for models whose library outputs are not shipped)
CREATE FUNCTION soak.add_fixture(fx text, fmt text, src text, input text, expected text,
								 copies int DEFAULT 40) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	elem text := CASE WHEN fmt = 'xgboost' THEN 'real' ELSE 'float8' END;
	lines text[] := string_to_array(rtrim(input, E'\n'), E'\n');
	per int := array_length(lines, 1);
	n int;
	cols text;
BEGIN
	EXECUTE format($q$CREATE TABLE soak.%I AS
		SELECT ((r - 1) * $3 + u.n)::bigint AS id, string_to_array(u.l, ',', '')::%s[] AS f
		  FROM unnest($1) WITH ORDINALITY AS u(l, n), generate_series(1, $2) AS r
		 ORDER BY 1$q$, 'in_' || fx, elem) USING lines, copies, per;
	EXECUTE format('SELECT max(array_length(f, 1)) FROM soak.%I', 'in_' || fx) INTO n;
	PERFORM silvan.load_model('s_' || fx, src);
	-- columns named as the model names its features (predict_table matches them by name), else f1 ... fn
	SELECT string_agg(format('f[%s]::%s AS %I', i, elem, coalesce(mf.name, 'f' || i)), ', ' ORDER BY i)
	  INTO cols
	  FROM generate_series(1, n) AS i
	  LEFT JOIN silvan.model_features AS mf ON mf.model = 's_' || fx AND mf.position = i;
	EXECUTE format('CREATE TABLE soak.%I AS SELECT id, %s FROM soak.%I ORDER BY id',
				   'col_' || fx, cols, 'in_' || fx);
	INSERT INTO soak.fixture VALUES (fx, fmt, n, 0, 0, fmt = 'xgboost', per, per * copies, src);
	IF expected IS NOT NULL THEN
		PERFORM soak.add_expected(fx, expected, per);
	ELSE
		PERFORM soak.add_reference(fx);
	END IF;
	EXECUTE format('CREATE INDEX ON soak.%I (id)', 'exp_' || fx);
	EXECUTE format('ANALYZE soak.%I, soak.%I, soak.%I', 'in_' || fx, 'col_' || fx, 'exp_' || fx);
END $$;

-- The library's outputs of a fixture (per rows), repeated as its inputs are
CREATE FUNCTION soak.add_expected(fx text, expected text, per int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	header text[] := string_to_array(split_part(expected, E'\n', 1), ',');
BEGIN
	UPDATE soak.fixture
	   SET g = (SELECT count(*) FROM unnest(header) AS c WHERE c LIKE 'margin_%'),
		   np = (SELECT count(*) FROM unnest(header) AS c WHERE c LIKE 'prob_%')
	 WHERE name = fx;
	EXECUTE format($q$CREATE TABLE soak.%I AS
		SELECT i.id, e.e
		  FROM soak.%I AS i
		  JOIN (SELECT n - 1 AS n, string_to_array(l, ',')::float8[] AS e
				  FROM unnest(string_to_array(rtrim($1, E'\n'), E'\n')) WITH ORDINALITY AS u(l, n)
				 WHERE n > 1) AS e ON e.n = (i.id - 1) %% $2 + 1$q$,
				   'exp_' || fx, 'in_' || fx) USING expected, per;
END $$;

-- Outputs of silvan's reference interpreter (silvan.jit = off), in a
-- fresh session before the soak, as the reference for a model whose
-- library outputs are not shipped
CREATE FUNCTION soak.add_reference(fx text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	m text := 's_' || fx;
	ng int;
	nnp int;
BEGIN
	PERFORM set_config('silvan.jit', 'off', true);
	EXECUTE format('SELECT array_length(silvan.predict_raw($1, f), 1) FROM soak.%I LIMIT 1', 'in_' || fx)
	   INTO ng USING m;
	BEGIN
		EXECUTE format('SELECT array_length(silvan.predict_proba($1, f), 1) FROM soak.%I LIMIT 1', 'in_' || fx)
		   INTO nnp USING m;
		nnp := CASE WHEN nnp = 2 AND ng = 1 THEN 1 ELSE nnp END;
	EXCEPTION WHEN feature_not_supported THEN
		nnp := 0;
	END;
	UPDATE soak.fixture SET g = ng, np = nnp WHERE name = fx;
	EXECUTE format($q$CREATE TABLE soak.%I AS
		SELECT id, ARRAY[silvan.predict($1, f)] || silvan.predict_raw($1, f)
				   || CASE WHEN $2 > 0 THEN (SELECT p[array_length(p, 1) - $2 + 1:]
											   FROM silvan.predict_proba($1, f) AS p) END AS e
		  FROM soak.%I$q$, 'exp_' || fx, 'in_' || fx) USING m, nnp;
	PERFORM set_config('silvan.jit', 'on', true);
END $$;

-- Does output x of call kind fn differ from the library's outputs e?
CREATE FUNCTION soak.differs(fn text, x float8[], e float8[], g int, np int, exact32 boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN exact32 THEN a::real[] IS DISTINCT FROM b::real[] ELSE a IS DISTINCT FROM b END
	  FROM (SELECT CASE WHEN fn LIKE 'predict_raw%' THEN x
						WHEN fn LIKE 'predict_proba%' THEN x[array_length(x, 1) - np + 1:]
						ELSE x END AS a,
				   CASE WHEN fn LIKE 'predict_raw%' THEN e[2:1 + g]
						WHEN fn LIKE 'predict_proba%' THEN e[2 + g:1 + g + np]
						ELSE e[1:1] END AS b) AS t
$$;

-- Run one silvan call: query q returns (rows checked, rows wrong); record
-- the call, or its error, in soak.calls
CREATE FUNCTION soak.run(kind text, pool text, model text, q text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	checked bigint;
	wrong bigint;
	state text;
	msg text;
BEGIN
	BEGIN
		EXECUTE q INTO checked, wrong;
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	END;
	INSERT INTO soak.calls (kind, pool, model, threads, sqlstate, message, checked, wrong, ms)
	VALUES (kind, pool, model, coalesce(current_setting('silvan.max_threads', true)::int, 0),
			state, msg, coalesce(checked, 0), coalesce(wrong, 0),
			extract(epoch FROM clock_timestamp() - t0) * 1000);
END $$;

-- A pool for a prediction: mostly names that always hold the same model
CREATE FUNCTION soak.prediction_pool() RETURNS text
LANGUAGE sql VOLATILE AS $$
	SELECT CASE WHEN r < 0.30 THEN 'stable' WHEN r < 0.55 THEN 'churn' WHEN r < 0.80 THEN 'new'
				WHEN r < 0.92 THEN 'swap' ELSE 'owned' END
	  FROM (SELECT random() AS r) AS t
$$;

-- A model name of a pool, and the fixture whose inputs it scores
CREATE FUNCTION soak.pick(pool text, OUT model text, OUT fx text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF pool = 'swap' THEN
		SELECT name INTO fx FROM soak.fixture WHERE features = 5 AND format = 'xgboost'
		 ORDER BY random() LIMIT 1;
		model := 'w_' || floor(random() * 4);
	ELSIF pool = 'owned' THEN
		fx := 'binary_logistic';
		model := 'o_' || floor(random() * 3);
	ELSIF pool = 'new' THEN
		SELECT name, substring(name FROM '^n_(.*)_[0-9]+$') INTO model, fx
		  FROM silvan.model WHERE name LIKE 'n\_%' ORDER BY random() LIMIT 1;
		IF model IS NULL THEN
			fx := 'binary_logistic';
			model := 'n_binary_logistic_0';
		END IF;
	ELSE
		SELECT name INTO fx FROM soak.fixture ORDER BY random() LIMIT 1;
		model := CASE WHEN pool = 'stable' THEN 's_' || fx
					  ELSE format('c_%s_%s', fx, floor(random() * 3)) END;
	END IF;
END $$;

-- One of a list, at random
CREATE FUNCTION soak.any(VARIADIC a text[]) RETURNS text
LANGUAGE sql VOLATILE AS $$ SELECT a[1 + floor(random() * array_length(a, 1))::int] $$;

-- The scoring function to call for a fixture: proba only where the model
-- gives probabilities (a swap name may hold either kind: 0A000 is allowed there)
CREATE FUNCTION soak.scoring_fn(suffix text, fx soak.fixture, pool text) RETURNS text
LANGUAGE sql VOLATILE AS $$
	SELECT CASE WHEN fn = 'predict_proba' AND fx.np = 0 AND pool <> 'swap' THEN 'predict' ELSE fn END || suffix
	  FROM (SELECT soak.any('predict', 'predict_raw', 'predict_proba') AS fn) AS t
$$;

-- The condition under which a row's output x is wrong
CREATE FUNCTION soak.wrong_expr(fn text, fx soak.fixture, pool text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN pool = 'swap' THEN 'x IS NULL'
				ELSE format('soak.differs(%L, x, e.e, %s, %s, %L)', fn, fx.g, fx.np, fx.exact32) END
$$;

-- pgbench: scalar predict, predict_raw or predict_proba over 20 rows
CREATE FUNCTION soak.scalar() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.prediction_pool();
	p record := soak.pick(pool);
	fx soak.fixture;
	fn text;
	lo int;
BEGIN
	SELECT * INTO fx FROM soak.fixture WHERE name = p.fx;
	fn := soak.scoring_fn('', fx, pool);
	lo := 1 + floor(random() * (fx.rows - 20));
	PERFORM soak.run(fn, pool, p.model, format(
		$q$SELECT count(*), count(*) FILTER (WHERE %s)
			 FROM soak.%I AS i JOIN soak.%I AS e USING (id),
				  LATERAL (SELECT %s AS x) AS s
			WHERE i.id BETWEEN %s AND %s$q$,
		soak.wrong_expr(fn, fx, pool), 'in_' || fx.name, 'exp_' || fx.name,
		CASE WHEN fn = 'predict' THEN format('ARRAY[silvan.predict(%L, i.f)]', p.model)
			 ELSE format('silvan.%I(%L, i.f)', fn, p.model) END,
		lo, lo + 19));
END $$;

-- The count of rows missing or extra in a scan's result, and the wrong ones
CREATE FUNCTION soak.scan_check(fn text, fx soak.fixture, pool text, scan text, expected text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT format($q$SELECT count(*), count(*) FILTER (WHERE p.k IS NULL OR e.id IS NULL OR %s)
							+ abs(count(*) - (SELECT count(*) FROM (%s) AS w))
					   FROM (%s) AS e FULL JOIN (SELECT k, %s AS x FROM %s) AS p ON p.k = e.id$q$,
				  soak.wrong_expr(fn, fx, pool), expected, expected,
				  CASE WHEN fn IN ('predict_table', 'predict_query') THEN 'ARRAY[v]' ELSE 'v' END,
				  scan)
$$;

-- pgbench: predict_table, predict_proba_table or predict_raw_table over a
-- whole table (array or columns), batch size 64 to 4096
CREATE FUNCTION soak.scan_table() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.prediction_pool();
	p record := soak.pick(pool);
	fx soak.fixture;
	fn text;
	src text;
BEGIN
	SELECT * INTO fx FROM soak.fixture WHERE name = p.fx;
	fn := soak.scoring_fn('_table', fx, pool);
	src := soak.any('in_', 'col_') || fx.name;
	PERFORM soak.run(fn, pool, p.model, soak.scan_check(fn, fx, pool,
		format('silvan.%I(%L, %L, ''id'', batch_size => %s) AS t(k, v)',
			   fn, p.model, 'soak.' || src, soak.any('64', '512', '1000', '4096')),
		format('SELECT * FROM soak.%I', 'exp_' || fx.name)));
END $$;

-- pgbench: predict_query and its variants over part of a table
CREATE FUNCTION soak.scan_query() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.prediction_pool();
	p record := soak.pick(pool);
	fx soak.fixture;
	fn text;
	cond text := soak.any('id % 2 = 0', 'id > 1000', 'true');
	out text;
BEGIN
	SELECT * INTO fx FROM soak.fixture WHERE name = p.fx;
	fn := soak.scoring_fn('_query', fx, pool);
	out := CASE WHEN fn = 'predict_query' THEN 'float8' ELSE 'float8[]' END;
	PERFORM soak.run(fn, pool, p.model, soak.scan_check(fn, fx, pool,
		format('silvan.%I(%L, %L, %s) AS t(k bigint, v %s)', fn, p.model,
			   format('SELECT * FROM soak.%I WHERE %s', soak.any('in_', 'col_') || fx.name, cond),
			   soak.any('64', '512', '1000', '4096'), out),
		format('SELECT * FROM soak.%I WHERE %s', 'exp_' || fx.name, cond)));
END $$;

-- The source a name of a pool is loaded with
CREATE FUNCTION soak.source_for(pool text, fx text) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT source FROM soak.fixture
	 WHERE name = CASE WHEN pool = 'swap' THEN
					 (SELECT name FROM soak.fixture WHERE features = 5 AND format = 'xgboost'
					   ORDER BY random() LIMIT 1) ELSE fx END
$$;

-- pgbench: load_model of a name that may exist (42710 when it does), or of
-- a new name
CREATE FUNCTION soak.load() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.any('churn', 'swap', 'new', 'new');
	p record := soak.pick(pool);
BEGIN
	IF pool = 'new' THEN
		SELECT name INTO p.fx FROM soak.fixture ORDER BY random() LIMIT 1;
		p.model := format('n_%s_%s', p.fx, nextval('soak.new_name'));
	END IF;
	PERFORM soak.run('load_model', pool, p.model, format(
		'SELECT 1::bigint, (silvan.load_model(%L, %L) <= 0)::int::bigint',
		p.model, soak.source_for(pool, p.fx)));
END $$;

-- pgbench: load_model(replace => true) of a name of any pool but owned
CREATE FUNCTION soak.replace() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.any('stable', 'churn', 'swap', 'new');
	p record := soak.pick(pool);
BEGIN
	PERFORM soak.run('load_model replace', pool, p.model, format(
		'SELECT 1::bigint, (silvan.load_model(%L, %L, replace => true) <= 0)::int::bigint',
		p.model, soak.source_for(pool, p.fx)));
END $$;

-- pgbench: drop_model of a churn, swap or new name (false when it is not there)
CREATE FUNCTION soak.drop() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.any('churn', 'swap', 'new', 'new');
	p record := soak.pick(pool);
BEGIN
	PERFORM soak.run('drop_model', pool, p.model, format(
		'SELECT 1::bigint, (silvan.drop_model(%L) IS NULL)::int::bigint', p.model));
END $$;

-- pgbench: store a valid schedule, or remove one, for every batch size or one
CREATE FUNCTION soak.schedule() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.any('stable', 'stable', 'churn', 'swap', 'new');
	p record := soak.pick(pool);
	s text := soak.any('reorder(tree, batch)',
					   'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)',
					   'tile(batch, b0, b1, 64); reorder(b0, tree, b1); parallel(b0)',
					   NULL, NULL);
BEGIN
	PERFORM soak.run('set_schedule', pool, p.model, format(
		'SELECT 1::bigint, 0::bigint FROM silvan.set_schedule(%L, %L, batch_size => %s)',
		p.model, s, coalesce(soak.any(NULL, NULL, '64', '512', '4096'), 'NULL')));
END $$;

-- pgbench: explain for a batch size
CREATE FUNCTION soak.explain() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	pool text := soak.prediction_pool();
	p record := soak.pick(pool);
BEGIN
	PERFORM soak.run('explain', pool, p.model, format(
		'SELECT 1::bigint, (length(silvan.explain(%L, %s)) IS NOT DISTINCT FROM 0)::int::bigint',
		p.model, soak.any('1', '64', '512', '4096', '100000')));
END $$;

-- pgbench: soak_alice or soak_bob loads, replaces or drops an o_<k>: each
-- may change only the names it loaded (42501 for the other's)
CREATE FUNCTION soak.roles() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	p record := soak.pick('owned');
	who text := soak.any('soak_alice', 'soak_bob');
	fn text := soak.any('load_model', 'load_model replace', 'drop_model');
	call text;
BEGIN
	call := CASE fn WHEN 'drop_model' THEN format('silvan.drop_model(%L) IS NULL', p.model)
			ELSE format('silvan.load_model(%L, %L, replace => %L) <= 0', p.model,
						soak.source_for('owned', p.fx), fn <> 'load_model') END;
	PERFORM set_config('role', who, true);
	PERFORM soak.run(fn || ' as ' || who, 'owned', p.model,
					 format('SELECT 1::bigint, (%s)::int::bigint', call));
END $$;

-- Which errors a call of a pool may end with: races between sessions on
-- the names that other sessions drop, load and replace; none on the stable
-- names but a writer's 40001 when two sessions change one model at once;
-- 0A000 only where a swap name holds a model without probabilities
CREATE FUNCTION soak.allowed(kind text, pool text, state text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE pool
		WHEN 'stable' THEN state = '40001' AND kind IN ('load_model replace', 'set_schedule')
		WHEN 'churn' THEN state IN ('42704', '42710', '40001')
		WHEN 'new' THEN state IN ('42704', '40001')
		WHEN 'swap' THEN state IN ('42704', '42710', '40001')
						 OR (state = '0A000' AND kind LIKE 'predict_proba%')
		WHEN 'owned' THEN state IN ('42704', '42710', '40001')
						  OR (state = '42501' AND kind LIKE '% as soak\_%')
		ELSE false END
$$;

-- After the soak: score the input rows of fixture fx with model m, with
-- every scoring function and one and two threads, one row at a time (each
-- distinct input row once) and as scans of the array and the column table
-- (every row); count rows that differ from the library's outputs
CREATE FUNCTION soak.check_model(m text, fx_name text)
RETURNS TABLE (fn text, threads int, rows bigint, differ bigint)
LANGUAGE plpgsql AS $$
DECLARE
	fx soak.fixture;
	f text;
	src text;
	q text;
BEGIN
	SELECT * INTO fx FROM soak.fixture WHERE name = fx_name;
	FOREACH threads IN ARRAY ARRAY[1, 2] LOOP
		PERFORM set_config('silvan.max_threads', threads::text, false);
		FOREACH f IN ARRAY CASE WHEN fx.np > 0 THEN ARRAY['predict', 'predict_raw', 'predict_proba']
								ELSE ARRAY['predict', 'predict_raw'] END LOOP
			fn := f;
			EXECUTE format(
				$q$SELECT count(*), count(*) FILTER (WHERE %s)
					 FROM soak.%I AS i JOIN soak.%I AS e USING (id),
						  LATERAL (SELECT %s AS x) AS s
					WHERE i.id <= %s$q$,
				soak.wrong_expr(f, fx, 'stable'), 'in_' || fx.name, 'exp_' || fx.name,
				CASE WHEN f = 'predict' THEN format('ARRAY[silvan.predict(%L, i.f)]', m)
					 ELSE format('silvan.%I(%L, i.f)', f, m) END,
				fx.inputs) INTO rows, differ;
			RETURN NEXT;
			FOREACH src IN ARRAY ARRAY['in_', 'col_'] LOOP
				fn := f || '_table(' || src || ')';
				EXECUTE soak.scan_check(f || '_table', fx, 'stable',
					format('silvan.%I(%L, %L, ''id'') AS t(k, v)', f || '_table', m,
						   'soak.' || src || fx.name),
					format('SELECT * FROM soak.%I', 'exp_' || fx.name)) INTO rows, differ;
				RETURN NEXT;
			END LOOP;
		END LOOP;
	END LOOP;
	RESET silvan.max_threads;
END $$;

-- Before the soak: every schedule the soak stores is valid for every model
-- (stored, compiled once, removed)
CREATE FUNCTION soak.check_schedules() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	m text;
	s text;
	n bigint := 0;
BEGIN
	FOR m IN SELECT 's_' || name FROM soak.fixture LOOP
		FOREACH s IN ARRAY ARRAY['reorder(tree, batch)',
								 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)',
								 'tile(batch, b0, b1, 64); reorder(b0, tree, b1); parallel(b0)'] LOOP
			PERFORM silvan.set_schedule(m, s);
			PERFORM silvan.set_schedule(m, NULL);
			n := n + 1;
		END LOOP;
	END LOOP;
	RETURN n;
END $$;

-- Before the soak: load every churn and swap name, a new name per fixture,
-- and the owned names as soak_alice
CREATE FUNCTION soak.seed_names() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	fx soak.fixture;
	k int;
	n bigint := 0;
BEGIN
	FOR fx IN SELECT * FROM soak.fixture LOOP
		FOR k IN 0..2 LOOP
			PERFORM silvan.load_model(format('c_%s_%s', fx.name, k), fx.source);
			n := n + 1;
		END LOOP;
	END LOOP;
	FOR k IN 0..3 LOOP
		PERFORM silvan.load_model('w_' || k, soak.source_for('swap', NULL));
		n := n + 1;
	END LOOP;
	FOR fx IN SELECT * FROM soak.fixture LOOP
		PERFORM silvan.load_model(format('n_%s_%s', fx.name, nextval('soak.new_name')), fx.source);
		n := n + 1;
	END LOOP;
	PERFORM set_config('role', 'soak_alice', true);
	FOR k IN 0..2 LOOP
		PERFORM silvan.load_model('o_' || k, soak.source_for('owned', 'binary_logistic'));
		n := n + 1;
	END LOOP;
	RETURN n;
END $$;

-- After the soak: load every fixture afresh as v_<fx>; check it, the
-- stable s_<fx> and every churn, new and owned name that survived
CREATE FUNCTION soak.check_after()
RETURNS TABLE (model text, fixture text, fn text, threads int, rows bigint, differ bigint)
LANGUAGE plpgsql AS $$
DECLARE
	fx soak.fixture;
BEGIN
	FOR fx IN SELECT * FROM soak.fixture LOOP
		PERFORM silvan.load_model('v_' || fx.name, fx.source, replace => true);
	END LOOP;
	FOR model, fixture IN
		SELECT m.name, f.name FROM silvan.models AS m JOIN soak.fixture AS f
			ON m.name IN ('v_' || f.name, 's_' || f.name)
			   OR m.name ~ ('^[cn]_' || f.name || '_[0-9]+$')
			   OR (m.name ~ '^o_[0-9]+$' AND f.name = 'binary_logistic')
		 ORDER BY 2, 1
	LOOP
		RETURN QUERY SELECT check_after.model, check_after.fixture, c.*
					   FROM soak.check_model(check_after.model, check_after.fixture) AS c;
	END LOOP;
END $$;

-- The attacks beside the load (soak.sh): soak.generated_model(trees, leaves)
SET search_path = soak;
\i test/trust/generated_model.sql
RESET search_path;
