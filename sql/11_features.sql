-- Feature names: a model keeps the names and types its library recorded,
-- and predict_table matches a table's columns to them by name, whatever
-- their order; a mismatch is an error, never a silent wrong answer.
-- References: XGBoost 1.7's own predictions (named_features, made from
-- scikit-learn's diabetes data with a DataFrame's names) and the
-- hand-checked LightGBM model (test/fixtures/lightgbm_small.md).
\set QUIET on
\set fx named_features
\i sql/fixture.psql
SELECT name, num_features, feature_names FROM silvan.models WHERE name = 'named_features';
SELECT * FROM silvan.model_features WHERE model = 'named_features' ORDER BY position;
SELECT line FROM regexp_split_to_table(silvan.explain('named_features'), E'\n') AS line
 WHERE line ~ '^  features=[a-z]';

-- the user's table: other order, "sex" an integer column, an extra column
CREATE FUNCTION pg_temp.int_or_null(x real) RETURNS integer
	LANGUAGE sql AS $$ SELECT CASE WHEN x = 'NaN' THEN NULL ELSE x::integer END $$;
CREATE TABLE diabetes AS
	SELECT id, f[10] AS s6, f[3] AS bmi, 0.0::float8 AS pred, f[5] AS s1,
		   pg_temp.int_or_null(f[2]) AS sex, f[9] AS s5, f[1] AS age, f[4] AS bp,
		   f[8] AS s4, f[6] AS s2, f[7] AS s3
	  FROM fx_in;
SELECT pg_typeof(sex) AS sex_type, count(*) FILTER (WHERE sex IS NULL) AS null_sex FROM diabetes GROUP BY 1;
-- by name: every row equals XGBoost's predict()
SELECT count(*) AS rows, count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong
  FROM silvan.predict_table('named_features', 'diabetes', 'id') AS p JOIN fx_exp AS e ON e.id = p.key;
-- the same through a view, and with the rows in an array (by position)
CREATE VIEW diabetes_view AS SELECT age, bmi, sex, id, s1, s2, s3, s4, s5, s6, bp FROM diabetes;
SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong_view
  FROM silvan.predict_table('named_features', 'diabetes_view', 'id') AS p JOIN fx_exp AS e ON e.id = p.key;
SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong_array
  FROM silvan.predict_table('named_features', 'fx_in', 'id') AS p JOIN fx_exp AS e ON e.id = p.key;
-- differently named columns: feature_columns, in the model's order
CREATE TABLE renamed AS
	SELECT id, age AS a, sex AS b, bmi AS c, bp AS d, s1 AS e1, s2 AS e2, s3 AS e3, s4 AS e4,
		   s5 AS e5, s6 AS e6 FROM diabetes;
SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong_mapped
  FROM silvan.predict_table('named_features', 'renamed', 'id',
							ARRAY['a', 'b', 'c', 'd', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6']) AS p
  JOIN fx_exp AS e ON e.id = p.key;
-- profile matches by name too
SELECT silvan.profile('named_features', 'diabetes', 'id') AS profiled_rows;

-- a whole row: predict(model, d) matches d's columns by name, as predict_table
-- does (other order, an extra column, NULLs in "sex"); batched and one call at a time
SELECT count(*) AS rows, count(*) FILTER (WHERE silvan.predict('named_features', d)::real IS DISTINCT FROM e.e[1]::real) AS wrong
  FROM diabetes AS d JOIN fx_exp AS e USING (id);
SET silvan.batch_calls = off;
SELECT count(*) FILTER (WHERE silvan.predict('named_features', d)::real IS DISTINCT FROM e.e[1]::real) AS wrong_unbatched
  FROM diabetes AS d JOIN fx_exp AS e USING (id);
RESET silvan.batch_calls;
SELECT count(*) FILTER (WHERE silvan.predict_raw('named_features', d) IS DISTINCT FROM
							  silvan.predict_raw('named_features', ARRAY[age, sex, bmi, bp, s1, s2, s3, s4, s5, s6]::real[])) AS raw_differs
  FROM diabetes AS d;
-- any composite: a view's rows, a subquery's
SELECT count(*) FILTER (WHERE silvan.predict('named_features', v)::real IS DISTINCT FROM e.e[1]::real) AS wrong_view_rows
  FROM diabetes_view AS v JOIN fx_exp AS e USING (id);
SELECT count(*) FILTER (WHERE silvan.predict('named_features', q)::real IS DISTINCT FROM e.e[1]::real) AS wrong_subquery_rows
  FROM (SELECT id, s6, s5, s4, s3, s2, s1, bp, bmi, sex, age FROM diabetes) AS q JOIN fx_exp AS e USING (id);

\set VERBOSITY default
-- missing columns are named; never a match by position
SELECT * FROM silvan.predict_table('named_features', 'renamed', 'id') LIMIT 1;
ALTER TABLE diabetes RENAME COLUMN bmi TO "BMI";
SELECT * FROM silvan.predict_table('named_features', 'diabetes', 'id') LIMIT 1;
ALTER TABLE diabetes RENAME COLUMN "BMI" TO bmi;
-- a whole row is matched the same way: missing columns named, a mistyped one named
SELECT silvan.predict('named_features', r) FROM renamed AS r LIMIT 1;
ALTER TABLE diabetes RENAME COLUMN bmi TO "BMI";
SELECT silvan.predict('named_features', d) FROM diabetes AS d LIMIT 1;
ALTER TABLE diabetes RENAME COLUMN "BMI" TO bmi;
SELECT silvan.predict('named_features', t)
  FROM (SELECT age, sex, bmi::text AS bmi, bp, s1, s2, s3, s4, s5, s6 FROM diabetes) AS t LIMIT 1;
-- predict_query reads by position: a column named like another position's feature is an error
SELECT * FROM silvan.predict_query('named_features',
	'SELECT id, sex, age, bmi, bp, s1, s2, s3, s4, s5, s6 FROM diabetes') AS (key bigint, prediction float8) LIMIT 1;
SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong_query
  FROM silvan.predict_query('named_features',
	'SELECT id, age, sex, bmi, bp, s1, s2, s3, s4, s5, s6 FROM diabetes') AS p(key bigint, prediction float8)
  JOIN fx_exp AS e ON e.id = p.key;
SELECT count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM e.e[1]::real) AS wrong_expressions
  FROM silvan.predict_query('named_features',
	'SELECT id, age + 0, sex, bmi * 1, bp, s1, s2, s3, s4, s5, s6 FROM diabetes') AS p(key bigint, prediction float8)
  JOIN fx_exp AS e ON e.id = p.key;

-- LightGBM's feature_names= line; categorical "cat" from an integer column
\set lgb `cat test/fixtures/lightgbm_small.txt`
SELECT silvan.load_model('lgb_small', :'lgb') > 0 AS loaded;
SELECT position, name, type FROM silvan.model_features WHERE model = 'lgb_small' ORDER BY position;
CREATE TABLE lgb_rows (k int, cat integer, note text, x float8);
INSERT INTO lgb_rows VALUES (1, 1, 'a', 0), (2, 3, 'b', 1), (3, 0, 'c', -2), (4, NULL, 'd', 'NaN'),
	(5, 2, 'e', 0.5), (6, -1, 'f', 5);
-- margins from lightgbm_small.md: 0.75, 1.5, -1.5, -0.25, -0.25, 0.5 (cat -1 goes right)
SELECT key, margins[1] AS margin FROM silvan.predict_raw_table('lgb_small', 'lgb_rows', 'k') ORDER BY key;

-- scalar predict takes integer[], bigint[] and numeric[] as it takes float8[]
SELECT silvan.predict_raw('lgb_small', ARRAY[1, 3]) AS int4_margin,
	   silvan.predict_raw('lgb_small', ARRAY[1, 3]::bigint[]) AS int8_margin,
	   silvan.predict_raw('lgb_small', ARRAY[-1.5, 3.9]) AS numeric_margin,
	   silvan.predict_raw('lgb_small', ARRAY[NULL, 3]::numeric[]) AS null_margin;
SELECT silvan.predict('lgb_small', ARRAY[1, 3]) = silvan.predict('lgb_small', ARRAY[1, 3]::float8[]) AS same_predict,
	   silvan.predict_proba('lgb_small', ARRAY[0, 1]) = silvan.predict_proba('lgb_small', ARRAY[0, 1]::float8[]) AS same_proba;
SELECT silvan.predict('named_features', ARRAY[59, 1, 32, 101, 157, 93, 38, 4, 5, 87]::bigint[])::real =
	   silvan.predict('named_features', ARRAY[59, 1, 32, 101, 157, 93, 38, 4, 5, 87]::real[])::real AS same_int8;
-- a whole row of lgb_small's columns by name ("cat" an integer, "x" float8; a NULL is missing),
-- the extra columns ignored; the same margins as above
SELECT k, silvan.predict_raw('lgb_small', r)::real[] AS margins FROM lgb_rows AS r ORDER BY k;
-- a model whose names are a library's placeholders reads a row by position
\set placeholder '{"learner": {"attributes": {}, "feature_names": [], "feature_types": [], "gradient_booster": {"model": {"gbtree_model_param": {"num_parallel_tree": "1", "num_trees": "1"}, "iteration_indptr": [0, 1], "tree_info": [0], "trees": [{"base_weights": [0, 0, 0], "categories": [], "categories_nodes": [], "categories_segments": [], "categories_sizes": [], "default_left": [1, 0, 0], "id": 0, "left_children": [1, -1, -1], "loss_changes": [0, 0, 0], "parents": [2147483647, 0, 0], "right_children": [2, -1, -1], "split_conditions": [0.5, -1, 1], "split_indices": [1, 0, 0], "split_type": [0, 0, 0], "sum_hessian": [1, 1, 1], "tree_param": {"num_deleted": "0", "num_feature": "2", "num_nodes": "3", "size_leaf_vector": "1"}}]}, "name": "gbtree"}, "learner_model_param": {"base_score": "0E0", "boost_from_average": "1", "num_class": "0", "num_feature": "2", "num_target": "1"}, "objective": {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}}, "version": [2, 0, 0]}'
SELECT silvan.load_model('unnamed_pair', :'placeholder') > 0 AS loaded;
SELECT silvan.predict('unnamed_pair', ROW(9, 0)) AS left_leaf, silvan.predict('unnamed_pair', ROW(-9, 1)) AS right_leaf;
SELECT silvan.predict('unnamed_pair', ROW(1, 2, 3));
SELECT silvan.drop_model('unnamed_pair');
SELECT silvan.predict('lgb_small', ARRAY[1, 2, 3]);
SELECT silvan.predict('lgb_small', ARRAY[[1, 2]]);

-- a model file read by the server (the README's pg_read_file recipe), put
-- where the server's OS user may read it: the test cluster's own directory
\set model_path `d=${PGHOST:-/tmp}; cp test/fixtures/named_features.json "$d/silvan_from_file.json" && chmod 644 "$d/silvan_from_file.json" && echo "$d/silvan_from_file.json"`
SELECT silvan.load_model('from_file', pg_read_file(:'model_path')) > 0 AS loaded_from_file;
SELECT feature_names FROM silvan.models WHERE name = 'from_file';
SELECT silvan.drop_model('from_file');

-- a name that differs only in case is suggested
SELECT silvan.predict('LGB_Small', ARRAY[1, 3]);
SELECT silvan.drop_model('Lgb_small');
SELECT silvan.predict('no_such_model', ARRAY[1, 3]);
\set VERBOSITY terse

DROP VIEW diabetes_view;
DROP TABLE diabetes, renamed, lgb_rows, fx_in, fx_exp;
SELECT silvan.drop_model('named_features') AND silvan.drop_model('lgb_small') AS dropped;
