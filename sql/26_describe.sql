-- silvan.describe(model): a version in plain words, one property per row
\set QUIET on
\set model `cat test/fixtures/labels/species.json`
SELECT silvan.load_model('species', :'model', class_labels => '{setosa,versicolor,virginica}',
                         description => 'species by their measurements', metadata => '{"auc": 0.97}') > 0 AS loaded;
SELECT silvan.load_model('species', :'model', replace => true, deploy => false) > 0 AS loaded;
\set model `cat test/fixtures/named_features.json`
SELECT silvan.load_model('diabetes', :'model') > 0 AS loaded;
\set QUIET off
-- before any scoring, then after a batched call
SELECT * FROM silvan.describe('species') WHERE property <> 'loaded';
SELECT count(silvan.predict('species', ARRAY[x, x, x, x]::real[])) FROM generate_series(1, 10) AS x;
SELECT regexp_replace(value, '^(compiled|from the code cache),', '<compiled or from the code cache>,') AS machine_code
  FROM silvan.describe('species') WHERE property = 'machine code';
-- the time per row its batches took so far, when the tuner measured none
SELECT value ~ '^[0-9.e+-]+ \(the compiled code, over the 10 rows of its batches scored so far by this connection\)$' AS measured_here
  FROM silvan.describe('species') WHERE property = 'microseconds per row';
-- a version that is not deployed, a schedule set by hand
SELECT silvan.set_schedule('species@2', 'reorder(tree, batch)', batch_size => 4096);
SELECT property, value FROM silvan.describe('species@2')
 WHERE property IN ('version', 'description', 'outputs') OR property LIKE 'schedule%';
-- named features and their types, a regressor's outputs
SELECT * FROM silvan.describe('diabetes') WHERE property LIKE 'input%' OR property = 'outputs';
SELECT * FROM silvan.describe('no_such_model');
SELECT silvan.drop_model('species'), silvan.drop_model('diabetes');
