-- Limits that hold whatever the model or the caller asks for: memory per
-- scan, threads per backend, read-only queries, the catalog trigger.
\set QUIET on

-- a 617-byte LightGBM model with 65,536 classes: a scan's buffers stay
-- within work_mem (a batch is scored a few rows at a time), where they
-- once took 786 kB per row of the batch
\c
\set many `cat test/fixtures/many_classes.txt`
SELECT silvan.load_model('many_classes', :'many') > 0 AS loaded;
SELECT num_classes, num_trees FROM silvan.models WHERE name = 'many_classes';
CREATE TABLE two_features AS
	SELECT g AS id, (g % 7)::real / 7 AS a, 0::real AS b FROM generate_series(1, 300) AS g;
SELECT substring(pg_read_file('/proc/self/status') FROM 'VmHWM:\s*(\d+)')::bigint AS hwm_before \gset
-- tree t adds t + 1 to class t's margin when a <= 0.5, else -(t + 1), so
-- LightGBM's argmax (the first largest margin) is class 2, or else class 3
-- (the first of the classes left at 0)
SELECT count(*) AS rows,
       count(*) FILTER (WHERE prediction <> CASE WHEN a <= 0.5 THEN 2 ELSE 3 END) AS wrong
  FROM silvan.predict_table('many_classes', 'two_features', 'id', '{a,b}', batch_size => 4096)
  JOIN two_features ON id = key;
-- (under valgrind, RSS is memcheck's, shadow memory included)
SELECT substring(pg_read_file('/proc/self/status') FROM 'VmHWM:\s*(\d+)')::bigint - :hwm_before
       < 100000 OR pg_read_file('/proc/self/maps') LIKE '%vgpreload%' AS peak_rss_grew_less_than_100_mb;
SELECT key, array_length(margins, 1) AS margins, margins[1:3]
  FROM silvan.predict_raw_query('many_classes', 'SELECT id, a, b FROM two_features WHERE id IN (1, 4)')
       AS q(key int, margins float8[]) ORDER BY key;
-- one row that cannot fit is an error with a hint
SET work_mem = '64kB';
SELECT count(*) FROM silvan.predict_table('many_classes', 'two_features', 'id', '{a,b}');
RESET work_mem;
SELECT silvan.drop_model('many_classes');

-- silvan.max_threads is capped by the superuser-only silvan.max_threads_limit
\set fx binary_logistic
\i sql/fixture.psql
CREATE ROLE regress_silvan_user;
GRANT SELECT ON fx_in, fx_exp TO regress_silvan_user;
SELECT silvan.grant('binary_logistic', 'regress_silvan_user', 'usage');
SET silvan.max_threads_limit = 2;
SET ROLE regress_silvan_user;
SET silvan.max_threads_limit = 64;
SET silvan.max_threads = 256;
SHOW silvan.max_threads;
SELECT count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_query('binary_logistic', 'SELECT id, f FROM fx_in, generate_series(1, 100)', 8192)
       AS t(key bigint, prediction float8)
  JOIN fx_exp AS x ON x.id = t.key;
RESET ROLE;
-- this backend: its own thread, at most one worker, at most one pipeline thread
SELECT substring(pg_read_file('/proc/self/status') FROM 'Threads:\s*(\d+)')::int <= 3 AS threads_capped;
RESET silvan.max_threads;
RESET silvan.max_threads_limit;

-- predict_query only reads
CREATE TABLE victim AS SELECT id, f FROM fx_in;
SELECT * FROM silvan.predict_query('binary_logistic', 'DELETE FROM victim RETURNING id, f') AS (key bigint, p float8);
SELECT * FROM silvan.predict_query('binary_logistic',
         'WITH gone AS (DELETE FROM victim RETURNING id) SELECT id, f FROM fx_in') AS (key bigint, p float8);
SELECT * FROM silvan.predict_query('binary_logistic', 'SELECT id, f FROM victim FOR UPDATE') AS (key bigint, p float8);
SELECT * FROM silvan.predict_query('binary_logistic', 'INSERT INTO victim SELECT * FROM fx_in RETURNING id, f') AS (key bigint, p float8);
SELECT * FROM silvan.predict_query('binary_logistic', 'SELECT 1; SELECT 2') AS (key bigint, p float8);
SELECT count(*) AS victim_rows FROM victim;

-- the catalog's trigger function is for the catalog's triggers only
SELECT silvan_internal.catalog_changed();
CREATE TABLE mine (x int);
ALTER TABLE mine OWNER TO regress_silvan_user;
SET ROLE regress_silvan_user;
CREATE TRIGGER t AFTER INSERT ON mine FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
DROP TABLE mine;
RESET ROLE;
CREATE TRIGGER t AFTER INSERT ON victim FOR EACH STATEMENT EXECUTE FUNCTION silvan_internal.catalog_changed();
INSERT INTO victim SELECT * FROM fx_in LIMIT 1;
DROP TABLE victim, two_features;
REVOKE ALL ON fx_in, fx_exp FROM regress_silvan_user;
SELECT silvan.revoke('binary_logistic', 'regress_silvan_user', 'all');
DROP ROLE regress_silvan_user;

-- A compile is bounded before it starts: the attack's schedule over 512
-- one-split trees (each tree's walk copied into one function, 16 rows at
-- a time) is refused by the estimate, with 54000, naming the directive
CREATE FUNCTION pg_temp.one_split_trees(n int) RETURNS text LANGUAGE sql AS $$
SELECT E'tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n' ||
       E'max_feature_idx=1\nobjective=regression\nfeature_names=a b\nfeature_infos=[-1:1] [-1:1]\n\n' ||
       string_agg(format(E'Tree=%s\nnum_leaves=2\nnum_cat=0\nsplit_feature=%s\nsplit_gain=1\n' ||
                         E'threshold=%s\ndecision_type=2\nleft_child=-1\nright_child=-2\n' ||
                         E'leaf_value=%s %s\nshrinkage=1\n\n',
                         t, t % 2, round((t % 17) / 17.0 - 0.5, 4), (t % 5) * 0.125, -(t % 3) * 0.25),
                  '' ORDER BY t) || E'end of trees\n'
  FROM generate_series(0, n - 1) AS t $$;
SELECT silvan.load_model('bomb', pg_temp.one_split_trees(512)) > 0 AS loaded;
SELECT silvan.set_schedule('bomb', 'tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree); interleave(b1)');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS schedules FROM silvan.schedules WHERE model = 'bomb';
-- predictions go on with the default schedule
SELECT silvan.predict('bomb', ARRAY[0.1, -0.2]::float8[]);
-- the bounds are a superuser's to set: 150 trees' walks in one function
-- are just over the loops one function may have, until a superuser allows more
SELECT silvan.load_model('bomb', pg_temp.one_split_trees(150), replace => true) > 0 AS replaced;
SELECT silvan.set_schedule('bomb', 'tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree)');
SET silvan.compile_max_function_loops = 400;
SELECT silvan.set_schedule('bomb', 'tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree)');
SELECT substring(silvan.explain('bomb', 4096) FROM 'most loops in a function ([0-9]+)')::int > 300 AS over_the_default;
RESET silvan.compile_max_function_loops;
CREATE ROLE regress_silvan_user;
SET ROLE regress_silvan_user;
SET silvan.compile_max_function_loops = 0;
SET silvan.compile_max_instructions = 0;
RESET ROLE;
DROP ROLE regress_silvan_user;
SELECT silvan.drop_model('bomb');

-- a relation passed by an OID that names none: 42P01, not an internal error
SELECT * FROM silvan.predict_table('binary_logistic', 4000000000::oid::regclass, 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT silvan.profile('binary_logistic', 4000000000::oid::regclass, 'id');
\echo :LAST_ERROR_SQLSTATE
