-- ONNX TreeEnsembleRegressor / TreeEnsembleClassifier models, loaded from
-- their bytes, against the outputs that test/fixtures/make_onnx_fixtures.py
-- computed the way ONNX Runtime does (float32 results; see its header).
\set QUIET on
-- regression: scikit-learn's gradient boosting, as a table and row by row
\set fx sk_gb_reg
\i sql/onnx_fixture.psql
SELECT name, format, objective, task, num_features, num_trees, feature_names FROM silvan.models WHERE name = :'fx';
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM x.e[1]::real) AS table_diff,
	   count(*) FILTER (WHERE silvan.predict(:'fx', i.f)::real IS DISTINCT FROM x.e[1]::real) AS scalar_diff
  FROM silvan.predict_table(:'fx', 'ox_in', 'id') AS p JOIN ox_exp AS x ON x.id = p.key
  JOIN ox_in AS i ON i.id = p.key;
-- a random forest averaged, and MIN aggregation (compiled, like every aggregate)
\set fx sk_rf_reg_average
\i sql/onnx_fixture.psql
SELECT :'fx' AS model, count(*) FILTER (WHERE silvan.predict(:'fx', f)::real IS DISTINCT FROM x.e[1]::real) AS diff
  FROM ox_in JOIN ox_exp AS x USING (id);
\set fx aggregate_min
\i sql/onnx_fixture.psql
SELECT :'fx' AS model, count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM x.e[1]::real) AS diff
  FROM silvan.predict_table(:'fx', 'ox_in', 'id') AS p JOIN ox_exp AS x ON x.id = p.key;
-- every node mode (==, != and friends are compiled)
\set fx modes_opset1
\i sql/onnx_fixture.psql
SELECT :'fx' AS model, count(*) FILTER (WHERE p.prediction::real IS DISTINCT FROM x.e[1]::real) AS diff
  FROM silvan.predict_table(:'fx', 'ox_in', 'id') AS p JOIN ox_exp AS x ON x.id = p.key;
-- classifiers: predict is the label's index, probabilities per class
\set fx sk_rf_clf_strings
\i sql/onnx_fixture.psql
SELECT name, task, num_classes, class_labels FROM silvan.models WHERE name = :'fx';
SELECT substring(silvan.explain(:'fx') FROM E'\n  classes=([^\n]*)') AS explained_labels;
SELECT :'fx' AS model, count(*) AS rows,
	   count(*) FILTER (WHERE p.prediction IS DISTINCT FROM x.e[1]) AS label_diff,
	   count(*) FILTER (WHERE silvan.predict_proba(:'fx', i.f)::real[] IS DISTINCT FROM x.e[2:]::real[]) AS proba_diff
  FROM silvan.predict_table(:'fx', 'ox_in', 'id') AS p JOIN ox_exp AS x ON x.id = p.key
  JOIN ox_in AS i ON i.id = p.key;
\set fx sk_gb_clf_softmax
\i sql/onnx_fixture.psql
SELECT :'fx' AS model, count(*) AS rows,
	   count(*) FILTER (WHERE p.prediction IS DISTINCT FROM x.e[1]) AS label_diff,
	   count(*) FILTER (WHERE silvan.predict_proba(:'fx', i.f)::real[] IS DISTINCT FROM x.e[2:]::real[]) AS proba_diff
  FROM silvan.predict_table(:'fx', 'ox_in', 'id') AS p JOIN ox_exp AS x ON x.id = p.key
  JOIN ox_in AS i ON i.id = p.key;

\set VERBOSITY default
-- ONNX is binary: the text form of load_model says to pass bytes
SELECT silvan.load_model('bad', 'not an onnx model', 'onnx');
-- hostile bytes: truncated, garbage
\set fx sk_gb_reg
\set path `d=${PGHOST:-/tmp}; cp test/fixtures/onnx/sk_gb_reg.onnx "$d/silvan_fixture.onnx" && chmod 644 "$d/silvan_fixture.onnx" && echo "$d/silvan_fixture.onnx"`
SELECT silvan.load_model('bad', substring(pg_read_binary_file(:'path') FROM 1 FOR 200), 'onnx');
SELECT silvan.load_model('bad', '\x0a0568656c6c6f'::bytea, 'onnx');
\set VERBOSITY terse
SELECT count(*) AS bad_models FROM silvan.models WHERE name = 'bad';

DROP TABLE ox_in, ox_exp;
SELECT count(*) FILTER (WHERE silvan.drop_model(name)) AS dropped
  FROM (VALUES ('sk_gb_reg'), ('sk_rf_reg_average'), ('aggregate_min'), ('modes_opset1'),
			   ('sk_rf_clf_strings'), ('sk_gb_clf_softmax')) AS m(name);
