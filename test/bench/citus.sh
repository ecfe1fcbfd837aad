#!/usr/bin/env bash
# make bench-citus: what each part of scoring on Citus costs on this
# machine (test/bench/citus_bench.py): a coordinator and two workers
# (test/citus/nodes.sh), Citus built from ../shared/citus (cached), the
# higgs model and 200,000 distinct rows (SILVAN_BENCH_CITUS_ROWS).
set -euo pipefail
cd "$(dirname "$0")/../.."
HIGGS=${SILVAN_SHARED:-../shared}/models/asprasad_treebeard/xgb_models--higgs_xgb_model_save.json
ROWS=${SILVAN_BENCH_CITUS_ROWS:-200000}
[ -f /usr/lib/postgresql/15/lib/citus.so ] || bash "${SILVAN_SHARED:-../shared}/citus/build.sh" >/dev/null
source test/citus/nodes.sh
nodes_start
data=$(mktemp -d /tmp/silvan-citus-bench.XXXXXX)
trap 'nodes_stop; rm -rf "$data"' EXIT
/usr/bin/python3 test/citus/make_rows.py "$HIGGS" "$ROWS" "$data/rows.csv"
cp "$HIGGS" "$data/higgs.json"
chmod -R a+rX "$data"
node_psql 57636 -v ON_ERROR_STOP=1 -v higgs="$data/higgs.json" >/dev/null <<SQL
SELECT citus_add_node('localhost', 57638);
CREATE EXTENSION silvan;
SELECT silvan.load_model('higgs', pg_read_file(:'higgs'));
SELECT * FROM silvan.distribute();
SET citus.shard_count = 8;
CREATE TABLE ev (id bigint PRIMARY KEY, f real[]);
CREATE TABLE scores (id bigint PRIMARY KEY, score float8);
SELECT create_distributed_table('ev', 'id');
SELECT create_distributed_table('scores', 'id', colocate_with => 'ev');
CREATE TABLE ev_local (id bigint PRIMARY KEY, f real[]);
CREATE TEMP TABLE raw (id bigint, f real[], e real);
\copy raw FROM '$data/rows.csv' WITH (FORMAT csv)
INSERT INTO ev SELECT id, f FROM raw;
INSERT INTO ev_local SELECT id, f FROM raw;
VACUUM ANALYZE ev_local;
SQL
/usr/bin/python3 test/bench/citus_bench.py "$data/rows.csv" "$data/higgs.json"
rm -rf "$data"
nodes_stop
