#!/usr/bin/env bash
# Set everything up and run the main job: a throwaway local cluster, the
# shipped example model (an XGBoost binary:logistic model, test/fixtures),
# and predictions over a sample table, checked against XGBoost's own.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/cluster.sh
cluster_start
echo "== scoring a sample table on a throwaway cluster"
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION silvan;
\set model `cat test/fixtures/binary_logistic.json`
SELECT silvan.load_model('example', :'model') AS model_id;
SELECT name, format, objective, num_features, num_trees, max_depth FROM silvan.models;

-- a sample table: 100 rows of six features, and XGBoost's own predictions
CREATE TABLE sample (id bigint, f0 real, f1 real, f2 real, f3 real, f4 real, f5 real);
\copy sample (f0, f1, f2, f3, f4, f5) FROM 'test/fixtures/binary_logistic.input.csv' WITH (FORMAT csv)
UPDATE sample SET id = s.n FROM (SELECT ctid, row_number() OVER () AS n FROM sample) s WHERE sample.ctid = s.ctid;
CREATE TABLE xgboost_says (n serial, predict float8, margin float8, prob float8);
\copy xgboost_says (predict, margin, prob) FROM 'test/fixtures/binary_logistic.expected.csv' WITH (FORMAT csv, HEADER)

\echo
\echo 'first rows of silvan.predict_table(''example'', ''sample'', ''id''):'
SELECT key, round(prediction::numeric, 6) AS probability
  FROM silvan.predict_table('example', 'sample', 'id') ORDER BY key LIMIT 5;
\echo 'agreement with XGBoost predict() on all rows (float32-exact):'
SELECT count(*) AS rows, count(*) FILTER (WHERE p.prediction::real = x.predict::real) AS identical
  FROM silvan.predict_table('example', 'sample', 'id') AS p JOIN xgboost_says AS x ON x.n = p.key;
SELECT silvan.predict('example', ARRAY[0.5, -1, 0.25, 2, -0.75, 1]::real[]) AS one_row;
SQL
echo "== done; the cluster is stopped and removed"
