#!/usr/bin/env bash
# pg_dump and pg_restore keep a model's life: its versions, which one is
# deployed and the rollback stack, aliases, class labels, grants,
# descriptions and metadata, schedules and profiles per version; the
# restored database scores every version as the dumped one did.  Prints
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/check.sh
source scripts/cluster.sh
cluster_start || { echo "0 passed, 1 failed"; exit 1; }
dump=$(mktemp -d /tmp/silvan-dump.XXXXXX)
chmod 777 "$dump"
logistic=$(cat test/fixtures/binary_logistic.json)
base=$(cat test/fixtures/binary_base_score.json)
input=$(cat test/fixtures/binary_logistic.input.csv)
psql -XAtq -v ON_ERROR_STOP=1 -v logistic="$logistic" -v base="$base" -v input="$input" <<'SQL' >/dev/null
CREATE DATABASE before_dump;
\c before_dump
CREATE EXTENSION silvan;
CREATE TABLE rows AS
	SELECT n::bigint AS id, string_to_array(l, ',')::real[] AS f
	  FROM unnest(string_to_array(rtrim(:'input', E'\n'), E'\n')) WITH ORDINALITY AS t(l, n);
SELECT silvan.load_model('churn', :'logistic', description => 'March', metadata => '{"auc": 0.91}',
                         class_labels => '{stayed, churned}');
SELECT silvan.load_model('churn', :'base', replace => true);
SELECT silvan.load_model('churn', :'logistic', replace => true, deploy => false);
SELECT silvan.set_alias('churn', 'candidate', 3);
SELECT silvan.set_schedule('churn@2', 'reorder(tree, batch)', batch_size => 64);
SELECT silvan.profile('churn@1', 'rows', 'id');
SELECT silvan.drop_model('churn@3');
SELECT silvan.load_model('churn', :'logistic', replace => true, deploy => false);
SELECT silvan.set_alias('churn', 'candidate', 4);
CREATE ROLE regress_dump_scorer;
SELECT silvan.grant('churn', 'regress_dump_scorer', 'usage, select');
SQL
# what the dumped database has and scores
state="SELECT string_agg(concat_ws(' ', name, version, deployed, aliases, description, metadata, source_sha256), '; ' ORDER BY version) FROM silvan.model_versions"
registry="SELECT concat_ws(' ', name, version, last_version, rollback_to) FROM silvan.registry"
schedules="SELECT string_agg(concat_ws(' ', model, version, batch_size, schedule), '; ') FROM silvan.schedules"
profiles="SELECT string_agg(concat_ws(' ', m.version, p.num_rows, cardinality(p.node_hits)), '; ') FROM silvan.profile p JOIN silvan.model m ON m.id = p.model_id"
scores="SELECT md5(string_agg(concat_ws(' ', id, silvan.predict('churn', f), silvan.predict('churn@1', f), silvan.predict('churn@candidate', f), silvan.model_version('churn'), silvan.predict_label('churn@1', f)), ',' ORDER BY id)) FROM rows"
labels="SELECT string_agg(DISTINCT silvan.predict_label('churn@1', f), ',') FROM rows"
grants="SELECT string_agg(concat_ws(' ', model, grantee, privilege), ', ' ORDER BY privilege) FROM silvan.model_grants"
declare -A before
for q in state registry schedules profiles scores labels grants; do
	before[$q]=$(psql -XAtq -d before_dump -c "${!q}")
done
as=()
[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
check "the dumped database scores every version" "${#before[scores]}" 32
check "the dumped database labels its classes" "${before[labels]}" "churned,stayed"
check "the dumped database has grants" "${before[grants]}" "churn regress_dump_scorer select, churn regress_dump_scorer usage"
check "the dumped database has a schedule and a profile" "${before[schedules]} / ${before[profiles]}" \
	"churn 2 64 reorder(tree, batch) / 1 100 $(psql -XAtq -d before_dump -c "SELECT cardinality(node_hits) FROM silvan.profile")"
"${as[@]}" "$PG_BIN/pg_dump" -Fc -h "$PGHOST" -p "$PGPORT" -U postgres -d before_dump -f "$dump/db.dump"
check "pg_dump wrote the database" "$?" 0
psql -XAtq -c "CREATE DATABASE restored" >/dev/null
"${as[@]}" "$PG_BIN/pg_restore" -h "$PGHOST" -p "$PGPORT" -U postgres -d restored --exit-on-error "$dump/db.dump"
check "pg_restore restored it" "$?" 0
for q in state registry schedules profiles scores labels grants; do
	check "restored: the same $q" "$(psql -XAtq -d restored -c "${!q}")" "${before[$q]}"
done
check "restored: three versions, 2 deployed" \
	"$(psql -XAtq -d restored -c "SELECT string_agg(version || ':' || deployed, ',' ORDER BY version) FROM silvan.model_versions")" \
	"1:false,2:true,4:false"
check "restored: rollback returns to version 1" "$(psql -XAtq -d restored -c "SELECT silvan.rollback('churn')")" 1
check "restored: a new version is numbered 5" \
	"$(psql -XAtq -d restored -v base="$base" <<'SQL' | tail -1
SELECT silvan.load_model('churn', :'base', replace => true) > 0;
SELECT silvan.model_version('churn');
SQL
)" 5
rm -rf "$dump"
psql -XAtq -c "DROP DATABASE restored" -c "DROP DATABASE before_dump" -c "DROP ROLE regress_dump_scorer" >/dev/null
cluster_stop
check_summary
