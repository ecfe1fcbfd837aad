#!/usr/bin/env bash
# silvan preloaded (shared_preload_libraries = 'silvan'): the postmaster
# starts the JIT once and every backend inherits it, and a fresh backend
# takes a model's machine code and the image of its buffers from the code
# cache without running a pass.  Checks, each in fresh sessions, that
# predictions equal XGBoost's own (test/fixtures, float32 exactly), that a
# later session ran no pass and read none of the model's trees (only its
# header: the code cache has its code, buffers and default schedule), that
# a parallel worker loaded its code from the cache, that
# pg_stat_statements (preloaded too, tracking nested statements) counts the
# source query of a streamed predict_table as nested, never as a top-level
# statement of its own, that silvan.model_stats adds up the scoring of
# every session in shared memory, and that the server stayed up with no
# error in its log.
# Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/check.sh

# Rows whose predict() differs from XGBoost's, in a fresh session
differing_rows() {
	psql -XAtq -v ON_ERROR_STOP=1 -c "SELECT count(*) FILTER (WHERE silvan.predict('binary_logistic', f)::real
		IS DISTINCT FROM e[1]::real) FROM fx_in JOIN fx_exp USING (id)"
}

# Where a fresh session's code came from, and whether passes ran: the code of
# the batch size its predict() calls ran in (silvan.batch_calls_size)
origin() {
	psql -XAtq -c "SELECT substring(silvan.explain('binary_logistic', 1024)
		FROM 'compile time: [0-9.]+ ms \(machine code ([a-z ]+)\)') ||
		CASE WHEN silvan.explain('binary_logistic', 1024) LIKE '%passes: none ran%'
		     THEN ', no pass ran' ELSE ', passes ran' END"
}

source scripts/cluster.sh
SILVAN_PGOPTIONS="-c shared_preload_libraries=silvan,pg_stat_statements -c pg_stat_statements.track=all" cluster_start ||
	{ echo "0 passed, 1 failed"; exit 1; }
psql -XAtq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION silvan" >/dev/null &&
	psql -XAtq -v ON_ERROR_STOP=1 -v fx=binary_logistic -f sql/fixture.psql >/dev/null
check "the fixture loaded" "$(psql -XAtq -c "SELECT count(*) > 0 FROM fx_in")" t
check "first session: no row differs from XGBoost" "$(differing_rows)" 0
check "a later session: no row differs from XGBoost" "$(differing_rows)" 0
check "a later session's code and buffers come from the code cache" "$(origin)" \
	"from the code cache, no pass ran"
check "explain reads the trees (and says so at DEBUG1)" "$(psql -XAtq 2>&1 <<'SQL' | grep -c 'read the trees of model'
SET client_min_messages = debug1;
SELECT length(silvan.explain('binary_logistic', 1)) > 0;
SQL
)" 1
check "a later session predicts without reading a tree" "$(psql -XAtq 2>&1 <<'SQL' | grep -c 'read the trees of model'
SET client_min_messages = debug1;
SELECT count(silvan.predict('binary_logistic', f)) FROM fx_in;
SQL
)" 0
check "a parallel worker loads the code from the code cache" "$(psql -XAtq 2>&1 <<'SQL' | grep -c 'machine code for the default schedule: from the code cache'
SET force_parallel_mode = on; SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 1; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET client_min_messages = debug1;
SELECT count(silvan.predict('binary_logistic', f)) FROM fx_in;
SQL
)" 1
psql -XAtq -c "CREATE EXTENSION pg_stat_statements" -c "SELECT pg_stat_statements_reset()" >/dev/null
psql -XAtq -c "SELECT count(*) FROM silvan.predict_table('binary_logistic', 'fx_in', 'id')" \
	-c "SELECT count(*) FROM (SELECT * FROM silvan.predict_table('binary_logistic', 'fx_in', 'id') LIMIT 3) s" >/dev/null
check "pg_stat_statements: the streamed scan's source query is nested" "$(psql -XAtq -c "SELECT string_agg(toplevel::text, ',')
	FROM pg_stat_statements WHERE query LIKE 'SELECT id, f FROM%fx_in%'")" false
check "pg_stat_statements: the outer queries are top-level" "$(psql -XAtq -c "SELECT count(*)
	FROM pg_stat_statements WHERE toplevel AND query LIKE '%silvan.predict_table%'")" 2
# usage statistics in shared memory: every session's scoring adds up
psql -XAtq -c "SELECT silvan.reset_model_stats()" >/dev/null
for session in 1 2 3; do
	psql -XAtq -c "SELECT count(silvan.predict('binary_logistic', f)) FROM fx_in" >/dev/null
done
psql -XAtq -c "SELECT count(*) FROM silvan.predict_table('binary_logistic', 'fx_in', 'id')" >/dev/null
check "model_stats: three sessions' calls and a table's rows, server-wide" "$(psql -XAtq -c "SELECT concat_ws(' ', model, version,
	rows_scored, scope, last_used > now() - interval '1 minute') FROM silvan.model_stats")" "binary_logistic 1 400 server t"
check "model_stats: the code came from the code cache" "$(psql -XAtq -c "SELECT cache_loads > 0 FROM silvan.model_stats")" t
check "describe: the time per row of the server's batches" "$(psql -XAtq -c "SELECT value ~ 'rows of its batches scored so far on this server' FROM silvan.describe('binary_logistic') WHERE property = 'microseconds per row'")" t
check "the server is up" "$(psql -XAtq -c "SELECT 1")" 1
check "no error in the server log" "$(grep -cE '(ERROR|FATAL|PANIC):' "$CLUSTER_DIR/server.log")" 0
cluster_stop
check_summary
