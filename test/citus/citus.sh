#!/usr/bin/env bash
# silvan on Citus: a coordinator and two workers as three local clusters
# (test/citus/nodes.sh), Citus built from ../shared/citus (cached).  Checks
# that silvan.distribute() puts the models on every node and that a node
# added later gets them from it; that scoring runs on the shards (EXPLAIN
# VERBOSE shows silvan.predict in the shard queries) and equals XGBoost's
# own predictions over a distributed table of 100,000 rows, in a colocated
# join, in the whole-row form, in INSERT ... SELECT and in the forms of an
# UPDATE that Citus accepts (an upsert, and UPDATE ... FROM a WITH query);
# that a replace on the coordinator is seen by every worker in the next
# statement, that every writer (versions, aliases, schedules, profiles,
# tuning in the foreground and the background) reaches the workers, that a
# load one worker refuses changes no node, that model
# privileges and the locked search_path hold on the workers, and that
# predict_table() refuses a distributed table with the query to write
# instead; and runs the examples of docs/scale-out.md.  The catalog starts
# at the previous version (0.11.0, before distribute() existed) and is
# updated first; once distributed, it is updated again by a rehearsal
# script that changes catalog tables as later versions' scripts will.
# SILVAN_CITUS_PRELOAD sets shared_preload_libraries (default "citus").
# Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/check.sh
HIGGS=${SILVAN_SHARED:-../shared}/models/asprasad_treebeard/xgb_models--higgs_xgb_model_save.json
ROWS=${SILVAN_CITUS_ROWS:-100000}

if [ ! -f /usr/lib/postgresql/15/lib/citus.so ] && [ "${SILVAN_PG_BIN:-}" = "" ]; then
	bash "${SILVAN_SHARED:-../shared}/citus/build.sh" >/tmp/silvan-citus-build.log 2>&1 ||
		{ tail -20 /tmp/silvan-citus-build.log; echo "0 passed, 1 failed"; exit 1; }
fi
[ -f "$HIGGS" ] || { echo "missing $HIGGS"; echo "0 passed, 1 failed"; exit 1; }
source test/citus/nodes.sh
nodes_start || { echo "0 passed, 1 failed"; exit 1; }
data=$(mktemp -d /tmp/silvan-citus-data.XXXXXX)
trap 'nodes_stop; rm -rf "$data"' EXIT
/usr/bin/python3 test/citus/make_rows.py "$HIGGS" "$ROWS" "$data/rows.csv"
cp "$HIGGS" "$data/higgs.json"
chmod -R a+rX "$data"

# psql on the coordinator, stopping at the first error
coordinator() {
	node_psql 57636 -v ON_ERROR_STOP=1 "$@"
}

# The first line of an error a statement raises on the coordinator
error_of() {
	node_psql 57636 -c "$1" 2>&1 >/dev/null | grep -m1 ERROR
}

# ---- a catalog of the previous version, loaded before Citus knew it
logistic=$(cat test/fixtures/binary_logistic.json)
base=$(cat test/fixtures/binary_base_score.json)
coordinator -v higgs="$data/higgs.json" -v logistic="$logistic" >/dev/null <<'SQL'
CREATE EXTENSION silvan VERSION '0.11.0';
SELECT silvan.load_model('higgs', pg_read_file(:'higgs'));
SELECT silvan.load_model('churn', :'logistic');
SELECT silvan.set_schedule('higgs', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 64);
SQL
check "CREATE EXTENSION reached the worker" "$(node_psql 57637 -c "SELECT extversion FROM pg_extension WHERE extname = 'silvan'")" 0.11.0
coordinator -c "ALTER EXTENSION silvan UPDATE" >/dev/null
check "ALTER EXTENSION UPDATE reached the worker" "$(node_psql 57637 -c "SELECT extversion FROM pg_extension WHERE extname = 'silvan'")" 0.12.0
check "before distribute(), a worker has no models" \
	"$(node_psql 57637 -c "SELECT silvan.predict('churn', ARRAY[1, 2, 3, 4, 5, 6])" 2>&1 | grep -m1 -o 'model "churn" does not exist')" \
	'model "churn" does not exist'

# ---- distribute(): every catalog table on the coordinator and the worker
placements="silvan.registry|2 silvan.model|2 silvan.model_alias|2 silvan.schedule|2 silvan.profile|2"
check "distribute() makes the catalog reference tables" "$(coordinator -c "SELECT * FROM silvan.distribute()" | tr '\n' ' ' | sed 's/ $//')" "$placements"
check "distribute() again changes nothing" "$(coordinator -c "SELECT * FROM silvan.distribute()" | tr '\n' ' ' | sed 's/ $//')" "$placements"
check "the coordinator's own tables keep no rows" \
	"$(coordinator -c "SELECT pg_relation_size('silvan.model') + pg_relation_size('silvan.registry')")" 0
check "the worker scores with the models" \
	"$(node_psql 57637 -c "SELECT silvan.predict('churn', ARRAY[1, 2, 3, 4, 5, 6]) > 0")" t
check "the worker has the schedule" "$(node_psql 57637 -c "SELECT schedule FROM silvan.schedules WHERE model = 'higgs'")" \
	"tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)"

# ---- a node added later
coordinator -c "SELECT citus_add_node('localhost', 57638)" >/dev/null
check "a node added later says that it lacks the models" \
	"$(node_psql 57638 -c "SELECT silvan.predict('churn', ARRAY[1, 2, 3, 4, 5, 6])" 2>&1 | grep -m1 -o "silvan's catalog has no copy on this node")" \
	"silvan's catalog has no copy on this node"
check "distribute() copies the catalog to it" "$(coordinator -c "SELECT * FROM silvan.distribute()" | tr '\n' ' ' | sed 's/ $//')" \
	"${placements//|2/|3}"
check "the node added later scores" "$(node_psql 57638 -c "SELECT silvan.predict('churn', ARRAY[1, 2, 3, 4, 5, 6]) > 0")" t

# ---- a distributed table of distinct rows, and XGBoost's predictions of them
coordinator >/dev/null <<SQL
SET citus.shard_count = 4;
CREATE TABLE ev (id bigint PRIMARY KEY, f real[], score float8);
CREATE TABLE xgb (id bigint PRIMARY KEY, e real);
SELECT create_distributed_table('ev', 'id');
SELECT create_distributed_table('xgb', 'id', colocate_with => 'ev');
CREATE TEMP TABLE raw (id bigint, f real[], e real);
\copy raw FROM '$data/rows.csv' WITH (FORMAT csv)
INSERT INTO ev (id, f) SELECT id, f FROM raw;
INSERT INTO xgb SELECT id, e FROM raw;
SQL
check "the rows are on both workers" \
	"$(coordinator -c "SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'ev'::regclass")" 2
check "$ROWS rows scored on the shards equal XGBoost's (a colocated join)" \
	"$(coordinator -c "SELECT count(*), count(*) FILTER (WHERE silvan.predict('higgs', ev.f)::real IS DISTINCT FROM xgb.e) FROM ev JOIN xgb USING (id)")" \
	"$ROWS|0"
plan=$(coordinator -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT id, silvan.predict('higgs', f) FROM ev")
check "EXPLAIN VERBOSE shows predict() in the shard queries" \
	"$(grep -c "Query: SELECT id, silvan.predict('higgs'::text, f) AS predict FROM public.ev_" <<<"$plan")" 1
check "each worker batches the calls of its shard" "$(grep -c "Custom Scan (SilvanBatch)" <<<"$plan")" 1
columns=$(seq 1 28 | awk '{printf "%sev.f[%d] AS c%d", (NR > 1 ? ", " : ""), $1, $1}')
check "the whole-row form equals XGBoost's on the shards" \
	"$(coordinator -c "SELECT count(*) FILTER (WHERE silvan.predict('higgs', r)::real IS DISTINCT FROM xgb.e) FROM ev JOIN xgb USING (id) CROSS JOIN LATERAL (SELECT $columns) r")" 0
check "predict_proba() and the other forms run there too" \
	"$(coordinator -c "SELECT count(*) FILTER (WHERE (silvan.predict_proba('higgs', f))[2]::real IS DISTINCT FROM xgb.e) FROM ev JOIN xgb USING (id)")" 0

# ---- INSERT ... SELECT and UPDATE
coordinator >/dev/null <<'SQL'
CREATE TABLE scores (id bigint PRIMARY KEY, score float8);
SELECT create_distributed_table('scores', 'id', colocate_with => 'ev');
INSERT INTO scores SELECT id, silvan.predict('higgs', f) FROM ev;
SQL
check "INSERT ... SELECT scores on the shards, equal to XGBoost's" \
	"$(coordinator -c "SELECT count(*), count(*) FILTER (WHERE s.score::real IS DISTINCT FROM xgb.e) FROM scores s JOIN xgb USING (id)")" "$ROWS|0"
check "INSERT ... SELECT runs as one query per shard" \
	"$(coordinator -c "EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO scores SELECT id, silvan.predict('higgs', f) FROM ev" | grep -c "INSERT INTO public.scores_[0-9]* (id, score) SELECT ev.id, silvan.predict('higgs'::text, ev.f)")" 1
check "UPDATE with predict() of a column is refused by Citus (STABLE)" \
	"$(error_of "UPDATE ev SET score = silvan.predict('higgs', f)")" \
	"ERROR:  STABLE functions used in UPDATE queries cannot be called with column references"
upsert="INSERT INTO ev AS t SELECT id, f, silvan.predict('higgs', f) FROM ev ON CONFLICT (id) DO UPDATE SET score = excluded.score"
check "the upsert form of the UPDATE runs on the shards" \
	"$(coordinator -c "EXPLAIN (VERBOSE, COSTS OFF) $upsert" | grep -c "INSERT INTO public.ev_[0-9]* AS t (id, f, score) SELECT ev.id, ev.f, silvan.predict('higgs'::text, ev.f)")" 1
coordinator -c "$upsert" >/dev/null
check "the upsert form scores every row" \
	"$(coordinator -c "SELECT count(*) FILTER (WHERE ev.score::real IS DISTINCT FROM xgb.e) FROM ev JOIN xgb USING (id)")" 0
coordinator -c "UPDATE ev SET score = NULL" -c "WITH p AS (SELECT id, silvan.predict('higgs', f) AS s FROM ev) UPDATE ev SET score = p.s FROM p WHERE ev.id = p.id" >/dev/null
check "the UPDATE ... FROM (WITH ...) form scores every row" \
	"$(coordinator -c "SELECT count(*) FILTER (WHERE ev.score::real IS DISTINCT FROM xgb.e) FROM ev JOIN xgb USING (id)")" 0
check "predict_table() refuses a distributed table and says what to write" \
	"$(node_psql 57636 -c "SELECT count(*) FROM silvan.predict_table('higgs', 'ev', 'id')" 2>&1 | grep -E -m2 -o "do not score a distributed table|SELECT t.id, silvan.predict\('higgs', t\) FROM ev AS t" | tr '\n' ' ')" \
	"do not score a distributed table SELECT t.id, silvan.predict('higgs', t) FROM ev AS t "

# ---- a replace on the coordinator, seen by every worker in the next statement
check "a replace, then the next statement on every shard" \
	"$(coordinator -v base="$base" <<'SQL'
SELECT count(*) FROM ev WHERE silvan.predict('churn', f[1:6]) IS NOT NULL \gset
SELECT silvan.load_model('churn', :'base', replace => true) AS v \gset
SELECT string_agg(DISTINCT silvan.model_version('churn')::text, ',') FROM ev;
SQL
)" 2
check "a worker's own session sees it" "$(node_psql 57637 -c "SELECT silvan.model_version('churn')")" 2
check "a rollback on the coordinator too" \
	"$(coordinator -c "SELECT silvan.rollback('churn')" -c "SELECT string_agg(DISTINCT silvan.model_version('churn')::text, ',') FROM ev")" "1
1"

# ---- every writer on the coordinator, its result on the workers: the
# statements Citus takes in writes of reference tables differ from
# PostgreSQL's (no STABLE function in ON CONFLICT ... DO UPDATE or in a
# RETURNING, for instance)
coordinator -v logistic="$logistic" >/dev/null <<'SQL'
CREATE TABLE ev6 (id bigint PRIMARY KEY, f real[]);
SELECT create_distributed_table('ev6', 'id', colocate_with => 'ev');
INSERT INTO ev6 SELECT id, f[1:6] FROM ev;
SELECT silvan.load_model('writers', :'logistic');
SELECT silvan.load_model('writers', :'logistic', replace => true, deploy => false);
SELECT silvan.set_alias('writers', 'candidate', 1);
SELECT silvan.set_alias('writers', 'candidate', 2);
SELECT silvan.set_metadata('writers@2', 'second', '{"auc": 0.9}');
SELECT silvan.deploy('writers@candidate');
SELECT silvan.rename_model('writers', 'writers_renamed');
SELECT silvan.rename_model('writers_renamed', 'writers');
SELECT silvan.reassign_models('postgres', 'postgres');
SELECT silvan.set_schedule('writers', 'reorder(tree, batch)', batch_size => 64);
SELECT silvan.profile('writers', 'SELECT id, f[1:6] FROM ev LIMIT 1000');
SELECT silvan.profile('writers', 'SELECT id, f[1:6] FROM ev LIMIT 2000');
SET client_min_messages = warning;
SELECT count(*) FROM silvan.tune_query('writers', 'SELECT id, f[1:6] FROM ev', batch_sizes => '{128}', budget => '1 s');
SELECT silvan.tune_query_async('writers', 'SELECT id, f[1:6] FROM public.ev', batch_sizes => '{256}', budget => '1 s');
SQL
for _ in $(seq 1 60); do
	[ "$(coordinator -c "SELECT count(*) FROM silvan.tuning_jobs WHERE model = 'writers' AND state IN ('queued', 'running')")" = 0 ] && break
	sleep 1
done
check "tune_async's job is done on the coordinator" \
	"$(coordinator -c "SELECT string_agg(state || coalesce(': ' || error, ''), ',') FROM silvan.tuning_jobs WHERE model = 'writers'")" done
check "tune() over a distributed table reports no end-to-end figure (the shards score)" \
	"$(coordinator -c "SET client_min_messages = warning" -c "SELECT count(*) FROM silvan.tune('writers', 'ev6', 'id', batch_sizes => '{32}', budget => '1 s') WHERE end_to_end_speedup IS NULL")" 1
writers="SELECT concat_ws(' / ', (SELECT string_agg(version || ':' || aliases::text || ':' || coalesce(description, '-'), ',' ORDER BY version) FROM silvan.model_versions WHERE name = 'writers'), (SELECT string_agg(batch_size || ':' || origin, ',' ORDER BY batch_size) FROM silvan.schedules WHERE model = 'writers'), (SELECT num_rows FROM silvan.profile p JOIN silvan.model m ON m.id = p.model_id WHERE m.name = 'writers' AND m.version = 2))"
on_coordinator=$(coordinator -c "$writers")
check "the writers' results on the coordinator" "$on_coordinator" \
	"1:{}:-,2:{candidate}:second / 32:tuned,64:hand,128:tuned,256:tuned / 2000"
check "the same on both workers" \
	"$(node_psql 57637 -c "$writers") $(node_psql 57638 -c "$writers")" "$on_coordinator $on_coordinator"
coordinator -c "SELECT silvan.drop_model('writers')" >/dev/null
check "a drop leaves nothing of the model on any node" \
	"$(for port in 57636 57637 57638; do node_psql "$port" -c "SELECT (SELECT count(*) FROM silvan.model_versions WHERE name = 'writers') + (SELECT count(*) FROM silvan.schedules WHERE model = 'writers')"; done | tr '\n' ' ')" "0 0 0 "

# ---- in one transaction on the coordinator, a load is scored before its
# commit, and a drop rolled back leaves the model on every node
check "a load, scored in its own transaction; a drop, rolled back" \
	"$(node_psql 57636 -v logistic="$logistic" 2>&1 <<'SQL'
BEGIN;
SELECT silvan.load_model('in_xact', :'logistic') > 0 AS loaded \gset
SELECT silvan.predict('in_xact', ARRAY[1, 2, 3, 4, 5, 6]) > 0 AS scored;
COMMIT;
BEGIN;
SELECT silvan.drop_model('in_xact') \gset
SELECT count(*) FROM silvan.models WHERE name = 'in_xact';
ROLLBACK;
SQL
) $(node_psql 57637 -c "SELECT silvan.model_version('in_xact')")" "t
0 1"

# ---- a load that one worker refuses changes no node
registry_shard=$(coordinator -c "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'silvan.registry'::regclass")
model_shard=$(coordinator -c "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'silvan.model'::regclass")
node_psql 57637 -c "SET citus.enable_manual_changes_to_shards = on" \
	-c "ALTER TABLE silvan.registry_$registry_shard ADD CONSTRAINT no_poison CHECK (name <> 'poison')" >/dev/null
counts() {
	local port
	for port in 57636 57637 57638; do
		node_psql "$port" -c "SELECT (SELECT count(*) FROM silvan.registry_$registry_shard) || '/' || (SELECT count(*) FROM silvan.model_$model_shard)"
	done | tr '\n' ' '
}
before=$(counts)
check "the worker refuses the load" \
	"$(node_psql 57636 -v logistic="$logistic" <<<"SELECT silvan.load_model('poison', :'logistic');" 2>&1 | grep -c 'violates check constraint "no_poison')" 1
check "no node changed" "$(counts)" "$before"
check "the coordinator has no such model" "$(coordinator -c "SELECT count(*) FROM silvan.models WHERE name = 'poison'")" 0
node_psql 57637 -c "SET citus.enable_manual_changes_to_shards = on" \
	-c "ALTER TABLE silvan.registry_$registry_shard DROP CONSTRAINT no_poison" >/dev/null

# ---- model privileges and the locked search_path on the workers
coordinator >/dev/null <<'SQL'
CREATE ROLE regress_scorer LOGIN;
GRANT SELECT ON ev TO regress_scorer;
CREATE SCHEMA evil AUTHORIZATION regress_scorer;
SQL
check "without USAGE a worker refuses the role" \
	"$(node_psql 57636 -U regress_scorer -c "SELECT count(silvan.predict('higgs', f)) FROM ev" 2>&1 | grep -m1 -o 'permission denied for model "higgs"')" \
	'permission denied for model "higgs"'
coordinator -c "SELECT silvan.grant('higgs', 'regress_scorer', 'usage')" >/dev/null
check "with USAGE every worker scores for it" "$(node_psql 57636 -U regress_scorer -c "SELECT count(silvan.predict('higgs', f)) FROM ev")" "$ROWS"
# a role that is not a superuser loads, schedules and tunes its own model on
# the coordinator and reads every view of the catalog; another role sees
# none of it
coordinator -c "CREATE ROLE regress_other LOGIN" >/dev/null
node_psql 57636 -U regress_scorer -v ON_ERROR_STOP=1 -v logistic="$logistic" >/dev/null <<'SQL'
SELECT silvan.load_model('scorers', :'logistic');
SELECT silvan.set_schedule('scorers', 'reorder(tree, batch)', batch_size => 64);
SELECT silvan.tune_async('scorers', batch_sizes => '{64}', budget => '1 s');
SQL
views="SELECT concat_ws(' ', (SELECT count(*) FROM silvan.models WHERE name = 'scorers'), (SELECT count(*) FROM silvan.model_versions WHERE name = 'scorers'), (SELECT count(*) FROM silvan.model_sources WHERE model = 'scorers'), (SELECT count(*) FROM silvan.model_features WHERE model = 'scorers'), (SELECT count(*) FROM silvan.schedules WHERE model = 'scorers'), (SELECT count(*) FROM silvan.tuning_jobs WHERE model = 'scorers'))"
check "its owner reads every view on the coordinator" "$(node_psql 57636 -U regress_scorer -c "$views" 2>&1)" "1 1 1 6 1 1"
check "and on a worker" "$(node_psql 57637 -U regress_scorer -c "$views" 2>&1)" "1 1 1 6 1 0"
check "another role sees none of it" "$(node_psql 57636 -U regress_other -c "$views" 2>&1)" "0 0 0 0 0 0"
# the role shadows = on text and bigint in its schema, first in the path
# of the shard queries; a shadow that ran as anyone else logs it
for port in 57636 57637 57638; do
	node_psql "$port" -U regress_scorer -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET citus.enable_ddl_propagation = off;
CREATE TABLE evil.log (who name);
GRANT INSERT ON evil.log TO PUBLIC;
CREATE FUNCTION evil.text_eq(text, text) RETURNS boolean LANGUAGE sql AS
	$$INSERT INTO evil.log VALUES (current_user) RETURNING $1 OPERATOR(pg_catalog.=) $2$$;
CREATE FUNCTION evil.int8_eq(bigint, bigint) RETURNS boolean LANGUAGE sql AS
	$$INSERT INTO evil.log VALUES (current_user) RETURNING $1 OPERATOR(pg_catalog.=) $2$$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.text_eq);
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8_eq);
SQL
done
check "scoring under the role's search_path on every shard" \
	"$(node_psql 57636 -U regress_scorer <<'SQL'
BEGIN;
SET LOCAL citus.propagate_set_commands = 'local';
SET LOCAL search_path = evil, pg_catalog, public;
SELECT count(silvan.predict('higgs', f)) FROM public.ev;
COMMIT;
SQL
)" "$ROWS"
ran_as_others=0
for port in 57636 57637 57638; do
	n=$(node_psql "$port" -c "SELECT count(*) FROM evil.log WHERE who <> 'regress_scorer'")
	ran_as_others=$((ran_as_others + n))
done
check "no shadowing operator ran as another role on any node" "$ran_as_others" 0
check "the role is still not a superuser" "$(coordinator -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_scorer'")" f

# ---- an update of the distributed catalog: a rehearsal update script
# (installed beside the real ones for the test, removed after) that adds
# columns to catalog tables as later versions' scripts do, through
# silvan_internal.alter_catalog_table()
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" silvan.control)
rehearsal="$("$PG_BIN/pg_config" --sharedir)/extension/silvan--$version--$version-rehearsal.sql"
cat >"$rehearsal" <<'SQL'
SELECT silvan_internal.alter_catalog_table('model', 'ADD COLUMN rehearsal text DEFAULT ''kept''');
SELECT silvan_internal.alter_catalog_table('schedule', 'ADD COLUMN rehearsal integer');
SQL
before=$(coordinator -c "SELECT md5(string_agg(silvan.predict('higgs', f)::text, ',' ORDER BY id)) FROM ev")
coordinator -c "ALTER EXTENSION silvan UPDATE TO '$version-rehearsal'" >/dev/null
check "the update of the distributed catalog runs on every node" \
	"$(for port in 57636 57637 57638; do node_psql "$port" -c "SELECT extversion FROM pg_extension WHERE extname = 'silvan'"; done | sort -u)" \
	"$version-rehearsal"
check "every node's copy of the catalog has the new column" \
	"$(for port in 57636 57637 57638; do node_psql "$port" -c "SELECT string_agg(DISTINCT rehearsal, ',') FROM silvan.model_$model_shard"; done | tr '\n' ' ')" \
	"kept kept kept "
check "the updated catalog scores the same on the shards" \
	"$(coordinator -c "SELECT md5(string_agg(silvan.predict('higgs', f)::text, ',' ORDER BY id)) FROM ev")" "$before"
coordinator -v logistic="$logistic" <<<"SELECT silvan.load_model('after_update', :'logistic');" >/dev/null
check "a load after the update reaches every node" \
	"$(for port in 57637 57638; do node_psql "$port" -c "SELECT silvan.predict('after_update', ARRAY[1, 2, 3, 4, 5, 6]) > 0"; done | tr '\n' ' ')" "t t "
rm -f "$rehearsal"

# ---- distribute() needs the coordinator in Citus' metadata
for port in 57636 57637; do
	node_psql "$port" -c "SET client_min_messages = warning" -c "CREATE DATABASE bare" >/dev/null
	node_psql "$port" -d bare -c "CREATE EXTENSION citus" >/dev/null
done
node_psql 57636 -d bare -c "CREATE EXTENSION silvan" -c "SELECT citus_add_node('localhost', 57637)" >/dev/null
check "distribute() refuses a coordinator outside Citus' metadata" \
	"$(node_psql 57636 -d bare -c "SELECT silvan.distribute()" 2>&1 | grep -E -m2 -o "needs the coordinator in Citus' metadata|citus_set_coordinator_host" | tr '\n' ' ')" \
	"needs the coordinator in Citus' metadata citus_set_coordinator_host "

# ---- docs/scale-out.md's examples, in a database "shop" of the coordinator
# and the first worker (the second is added by the document)
for port in 57636 57637 57638; do
	node_psql "$port" -c "SET client_min_messages = warning" -c "CREATE DATABASE shop" >/dev/null
	node_psql "$port" -d shop -c "CREATE EXTENSION citus" >/dev/null
done
psql -XAtq -h localhost -p 57636 -U postgres -d shop -c "SELECT citus_set_coordinator_host('localhost', 57636)" \
	-c "SELECT citus_add_node('localhost', 57637)" >/dev/null
doc=$(/usr/bin/python3 test/docs/doctest.py --with citus --database shop docs/scale-out.md 2>&1)
echo "$doc" | grep -v "^ok:"
doc_passed=$(echo "$doc" | tail -1 | awk '{print $1}')
doc_failed=$(echo "$doc" | tail -1 | awk '{print $3}')
check "docs/scale-out.md: every example ran" "$doc_failed/$([ "${doc_passed:-0}" -gt 10 ] && echo many)" "0/many"

# ---- every node: the server is up, and nothing crashed
for port in 57636 57637 57638; do
	check "node $port is up with no crash in its log" \
		"$(node_psql "$port" -c "SELECT 1")/$(grep -c -E 'terminated by signal|PANIC' "$NODES_DIR/server.$port.log")" "1/0"
done
rm -rf "$data"
nodes_stop
check_summary
