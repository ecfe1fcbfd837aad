-- Classifiers' labels: given at load (class_labels, as scikit-learn's
-- LabelEncoder.classes_ names them) or carried by an ONNX file;
-- predict_label() and classify() answer as the library's own
-- XGBClassifier.predict (decoded) and predict_proba do, on every path:
-- one row at a time, batched calls, whole rows.
\set QUIET on
CREATE FUNCTION pg_temp.label_fixture(name text, model text, classes text, input text, expected text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM silvan.load_model(name, model, class_labels => string_to_array(rtrim(classes, E'\n'), E'\n'));
	EXECUTE format('CREATE TABLE %I AS SELECT n::bigint AS id, string_to_array(l, '','')::real[] AS f
	                  FROM unnest(string_to_array(rtrim(%L, E''\n''), E''\n'')) WITH ORDINALITY AS t(l, n)',
	               name || '_in', input);
	EXECUTE format('CREATE TABLE %I AS SELECT n::bigint - 1 AS id, split_part(l, '','', 1) AS label,
	                  (string_to_array(l, '',''))[2:]::float8[] AS proba
	                  FROM unnest(string_to_array(rtrim(%L, E''\n''), E''\n'')) WITH ORDINALITY AS t(l, n)
	                 WHERE n > 1', name || '_exp', expected);
END $$;
\set model `cat test/fixtures/labels/species.json`
\set classes `cat test/fixtures/labels/species.classes.txt`
\set input `cat test/fixtures/labels/species.input.csv`
\set expected `cat test/fixtures/labels/species.expected.csv`
SELECT pg_temp.label_fixture('species', :'model', :'classes', :'input', :'expected');
\set model `cat test/fixtures/labels/churn.json`
\set classes `cat test/fixtures/labels/churn.classes.txt`
\set input `cat test/fixtures/labels/churn.input.csv`
\set expected `cat test/fixtures/labels/churn.expected.csv`
SELECT pg_temp.label_fixture('churn_labels', :'model', :'classes', :'input', :'expected');
\set QUIET off
SELECT name, task, num_classes, class_labels FROM silvan.models WHERE name IN ('species', 'churn_labels') ORDER BY name;

-- multi-class and binary: the label and probabilities of XGBClassifier
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict_label('species', f) IS DISTINCT FROM x.label) AS label_differs,
       count(*) FILTER (WHERE (silvan.classify('species', f)).label IS DISTINCT FROM x.label) AS classify_label_differs,
       count(*) FILTER (WHERE (silvan.classify('species', f)).probabilities::real[] IS DISTINCT FROM x.proba::real[]) AS proba_differs,
       count(DISTINCT x.label) AS distinct_labels
  FROM species_in JOIN species_exp AS x USING (id);
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict_label('churn_labels', f) IS DISTINCT FROM x.label) AS label_differs,
       count(*) FILTER (WHERE (silvan.classify('churn_labels', f)).probabilities::real[] IS DISTINCT FROM x.proba::real[]) AS proba_differs,
       count(DISTINCT x.label) AS distinct_labels
  FROM churn_labels_in JOIN churn_labels_exp AS x USING (id);
-- the class index is predict()'s for a multi-class model, 0 or 1 for a binary one
SELECT count(*) FILTER (WHERE (silvan.classify('species', f)).class_index <> silvan.predict('species', f)) AS index_differs
  FROM species_in;
SELECT (silvan.classify('churn_labels', f)).* FROM churn_labels_in WHERE id = 1;

-- one row at a time (batching off), and whole rows matched by position
SET silvan.batch_calls = off;
SELECT count(*) FILTER (WHERE silvan.predict_label('species', f) IS DISTINCT FROM x.label) AS unbatched_differs,
       count(*) FILTER (WHERE (silvan.classify('species', f)).label IS DISTINCT FROM x.label) AS unbatched_classify_differs
  FROM species_in JOIN species_exp AS x USING (id);
RESET silvan.batch_calls;
SELECT count(*) FILTER (WHERE silvan.predict_label('species', ROW(f[1], f[2], f[3], f[4])) IS DISTINCT FROM x.label) AS row_differs,
       count(*) FILTER (WHERE silvan.predict_label('species', f::float8[]) IS DISTINCT FROM x.label) AS float8_differs,
       count(*) FILTER (WHERE silvan.predict_label('species', f::numeric[]) IS DISTINCT FROM x.label) AS numeric_differs
  FROM species_in JOIN species_exp AS x USING (id);
-- the batched node evaluates them
EXPLAIN (COSTS OFF)
SELECT silvan.predict_label('species', f), silvan.classify('species', f) FROM species_in;

-- without labels, a class's index in decimal
SELECT silvan.load_model('species_unlabelled', source) > 0 AS loaded FROM silvan.model WHERE name = 'species';
SELECT silvan.predict_label('species_unlabelled', f) AS label, (silvan.classify('species_unlabelled', f)).class_index
  FROM species_in WHERE id = 1;
SELECT silvan.drop_model('species_unlabelled');

-- ONNX files carry their labels
\set fx sk_rf_clf_strings
\i sql/onnx_fixture.psql
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict_label(:'fx', i.f) IS DISTINCT FROM
                              (SELECT class_labels[x.e[1]::int + 1] FROM silvan.models WHERE name = :'fx')) AS label_differs
  FROM ox_in AS i JOIN ox_exp AS x USING (id);
SELECT silvan.load_model('relabelled', pg_read_binary_file(:'path'), class_labels => '{a,b,c}');

-- wrong labels and wrong models
\set model `cat test/fixtures/labels/species.json`
SELECT silvan.load_model('bad_labels', :'model', class_labels => '{a,b}');
SELECT silvan.load_model('bad_labels', :'model', class_labels => '{a,b,a}');
SELECT silvan.load_model('bad_labels', :'model', class_labels => '{a,NULL,c}');
\set model `cat test/fixtures/reg_squarederror.json`
SELECT silvan.load_model('bad_labels', :'model', class_labels => '{a,b}');
SELECT silvan.load_model('regression', :'model') > 0 AS loaded;
SELECT silvan.predict_label('regression', ARRAY[1, 2, 3, 4, 5]::real[]);
SELECT silvan.classify('regression', ARRAY[1, 2, 3, 4, 5]::real[]);
SELECT count(*) AS bad_models FROM silvan.models WHERE name = 'bad_labels';
SELECT silvan.drop_model('regression'), silvan.drop_model('species'), silvan.drop_model('churn_labels'),
       silvan.drop_model(:'fx');
DROP TABLE species_in, species_exp, churn_labels_in, churn_labels_exp, ox_in, ox_exp;
