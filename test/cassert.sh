#!/usr/bin/env bash
# Run silvan's pg_regress suite against an assert-enabled PostgreSQL 15
# (scripts/pg_cassert.sh builds it once into a cached prefix), then fail on
# memory-context checking found in the server log even when every test
# passed: a write past a chunk's end is only a WARNING, and in a backend
# that exits right after, nobody sees it.
#   bash test/cassert.sh [EXTRA.sql ...]
# Each EXTRA script (or SILVAN_CASSERT_EXTRA, space-separated) runs after
# the suite in its own database with the extension created, under psql
# -v ON_ERROR_STOP=1; it counts as one test, passed when psql exits 0.
# silvan is built and installed from a scratch copy of the work tree
# (tracked and untracked, not ignored), so the tree's own build outputs,
# made for the system server, are left alone. Run as root.
# Last line: "N passed, N failed": the tests, the extra scripts, and the
# log check.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$PWD
extra=(${SILVAN_CASSERT_EXTRA:-} "$@")
for f in ${extra[@]+"${extra[@]}"}; do
	[ -f "$f" ] || { echo "cassert.sh: no such script: $f" >&2; exit 2; }
done

prefix=$(bash scripts/pg_cassert.sh)
PG_CONFIG=$prefix/bin/pg_config

echo "== building silvan against $prefix"
scratch=$(mktemp -d /tmp/silvan-cassert.XXXXXX)
chmod a+rx "$scratch"	# cluster.sh's commands run as postgres from here
log=$scratch/server.log
cleanup() {
	cluster_stop 2>/dev/null || true
	rm -rf "$scratch"
}
trap cleanup EXIT
mkdir "$scratch/src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$scratch/src"
else
	cp -a . "$scratch/src"
	make -s -C "$scratch/src" clean PG_CONFIG="$PG_CONFIG" >/dev/null
fi
cd "$scratch/src"
make -s -j2 PG_CONFIG="$PG_CONFIG"
make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
chmod -R a+rX "$prefix"

echo "== pg_regress against an assert-enabled server ($("$prefix/bin/postgres" --version))"
SILVAN_PG_BIN=$prefix/bin
source scripts/cluster.sh
cluster_start
# cluster_stop deletes the log with the cluster: keep a copy first
trap 'cp "$CLUSTER_DIR/server.log" "$log" 2>/dev/null; cleanup' EXIT

status=0
make -s installcheck PG_CONFIG="$PG_CONFIG" >"$scratch/regress.out" 2>&1 || status=$?
cat "$scratch/regress.out"
if [ $status -ne 0 ] && [ -f regression.diffs ]; then
	cat regression.diffs
fi
passed=$(grep -cE '\.\.\. ok' "$scratch/regress.out" || true)
failed=$(grep -cE '\.\.\. FAILED|\.\.\. failed' "$scratch/regress.out" || true)
[ $status -eq 0 ] || [ "$failed" -gt 0 ] || failed=1

for f in ${extra[@]+"${extra[@]}"}; do
	db=silvan_extra
	echo "== extra script $f"
	PGOPTIONS="-c client_min_messages=warning" \
		"$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
	"$PG_BIN/psql" -X -q -d $db -c "CREATE EXTENSION silvan"
	if (cd "$tree" && "$PG_BIN/psql" -X -d $db -v ON_ERROR_STOP=1 -f "$f"); then
		passed=$((passed + 1))
	else
		echo "== extra script $f FAILED"
		failed=$((failed + 1))
	fi
done

# Stop the server so that the log is whole, then look for what the memory
# checks, the assertions and the postmaster report
runuser_as=()
[ "$(id -u)" = 0 ] && runuser_as=(runuser -u postgres --)
"${runuser_as[@]}" "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
cp "$CLUSTER_DIR/server.log" "$log"
cluster_stop
trap - EXIT
pattern='detected write past chunk end|problem in (alloc set|Generation|slab)|write past|could not find block containing chunk|TRAP:|server process .* was terminated|terminated by signal|PANIC:|(reference|refcount) leak'
echo "== server log: memory-context checks, assertions, crashes"
if grep -qE "$pattern" "$log"; then
	echo "$(grep -cE "$pattern" "$log") lines; the first, with what follows them:"
	grep -nE -A2 "$pattern" "$log" | head -n 60
	echo "== server log check FAILED"
	failed=$((failed + 1))
else
	echo "clean"
	passed=$((passed + 1))
fi
rm -rf "$scratch"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
