#!/usr/bin/env bash
# Run silvan's pg_regress suite against an assert-enabled PostgreSQL 15
# (scripts/pg_cassert.sh builds it once into a cached prefix): its Asserts
# and silvan's, freed memory clobbered, and memory-context checks (a
# clobbered chunk header or sentinel byte is a WARNING at pfree or reset).
# Fails when pg_regress fails, or when the server log holds such a WARNING,
# a failed assertion (TRAP:) or a crashed backend even though every test
# passed (a WARNING raised as a backend exits reaches no expected file).
#   bash test/cassert.sh [EXTRA.sql ...]
# EXTRA scripts (paths from the repository root; SILVAN_CASSERT_EXTRA lists
# more, space-separated) run after the suite, from the repository root, in
# a fresh database with the extension created, under psql -v
# ON_ERROR_STOP=1; each is one test, passed when psql exits 0.
# SILVAN_CASSERT_VALGRIND=1 runs the server under valgrind's memcheck, on a
# build whose palloc tells memcheck where each chunk ends (minutes, not
# seconds), and fails on any error it reports: a write past an 8-byte
# chunk into the block's free tail has no sentinel byte to trip and is
# invisible to the memory-context checks, not to memcheck.
# SILVAN_CASSERT_REGRESS="01_load 03_scoring" runs only those tests;
# SILVAN_CASSERT_KEEP=1 keeps the scratch directory (server log, valgrind
# logs, regression.diffs) and prints where it is.
# silvan is built and installed from a scratch copy of the work tree
# (tracked and untracked, not ignored), so the tree's own build outputs,
# made for the system server, are left alone. Run as root.
# Last line: "N passed, N failed": the tests, the extra scripts, and the
# log check.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$PWD
valgrind=${SILVAN_CASSERT_VALGRIND:-0}
extra=(${SILVAN_CASSERT_EXTRA:-} "$@")
for f in ${extra[@]+"${extra[@]}"}; do
	[ -f "$f" ] || { echo "cassert.sh: no such script: $f" >&2; exit 2; }
done

cached=$(bash scripts/pg_cassert.sh)

scratch=$(mktemp -d /tmp/silvan-cassert.XXXXXX)
chmod a+rx "$scratch"	# cluster.sh's commands run as postgres from here
log=$scratch/server.log
cleanup() {
	cluster_stop 2>/dev/null || true
	if [ "${SILVAN_CASSERT_KEEP:-0}" = 1 ]; then
		echo "== kept $scratch"
	else
		rm -rf "$scratch"
	fi
}
trap cleanup EXIT
# silvan goes into a copy of the server (it is relocatable, PGXS asks its
# pg_config for every path): the cache stays pristine, and runs from two
# work trees at once do not install over each other
prefix=$scratch/pg
cp -a "$cached" "$prefix"
PG_CONFIG=$prefix/bin/pg_config
echo "== building silvan against a copy of $cached"
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
chmod -R a+rX "$prefix"	# the server runs as postgres

echo "== pg_regress against an assert-enabled server ($("$prefix/bin/postgres" --version))"
SILVAN_PG_BIN=$prefix/bin
if [ "$valgrind" = 1 ]; then
	# A bin directory whose postgres is valgrind running the real one; pg_ctl
	# is a copy (it looks for postgres beside itself, symlinks resolved);
	# initdb bootstraps natively
	SILVAN_PG_BIN=$scratch/bin
	mkdir -p "$SILVAN_PG_BIN" "$scratch/valgrind"
	chown postgres "$scratch/valgrind"
	ln -s "$prefix/bin/initdb" "$prefix/bin/psql" "$SILVAN_PG_BIN/"
	cp "$prefix/bin/pg_ctl" "$SILVAN_PG_BIN/"
	cat >"$SILVAN_PG_BIN/postgres" <<-EOF
		#!/bin/sh
		exec valgrind --quiet --trace-children=yes --smc-check=all-non-file --num-callers=30 \\
			--suppressions=$prefix/valgrind.supp --suppressions=$scratch/src/test/cassert/valgrind.supp \\
			--error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END \\
			--log-file=$scratch/valgrind/%p.log "$prefix/bin/postgres" "\$@"
	EOF
	chmod a+rx "$SILVAN_PG_BIN/postgres"
	export PGCTLTIMEOUT=600
fi
# The statement behind each WARNING goes to the log too
SILVAN_PGOPTIONS="${SILVAN_PGOPTIONS:-} -c log_min_error_statement=warning"
source scripts/cluster.sh
cluster_start
trap cleanup EXIT	# cluster_start set its own

status=0
make -s installcheck PG_CONFIG="$PG_CONFIG" ${SILVAN_CASSERT_REGRESS:+REGRESS="$SILVAN_CASSERT_REGRESS"} \
	>"$scratch/regress.out" 2>&1 || status=$?
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
	# its WARNINGs go to the log check below, once each, not thousands here
	if (cd "$tree" && PGOPTIONS="-c client_min_messages=error" \
		"$PG_BIN/psql" -X -d $db -v ON_ERROR_STOP=1 -f "$f"); then
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
pattern='detected write past chunk end|problem in (alloc set|Generation|slab)|write past|could not find block containing chunk|TRAP:|server process .* was terminated|terminated by signal|PANIC:|(reference|refcount) leak'
echo "== server log: memory-context checks, assertions, crashes$([ "$valgrind" = 1 ] && echo ", valgrind")"
if grep -qE "$pattern" "$log"; then
	echo "$(grep -cE "$pattern" "$log") lines; each kind once (addresses as 0x...), then the first in full:"
	grep -E "$pattern" "$log" | sed -E -e 's/^[0-9-]+ [0-9:.]+ [A-Z]+ \[[0-9]+\] //' -e 's/0x[0-9a-f]+/0x.../g' |
		sort | uniq -c | sort -rn | head -n 20 || true
	grep -nE -A1 -m 1 "$pattern" "$log" || true
	echo "== server log check FAILED"
	failed=$((failed + 1))
elif [ -d "$scratch/valgrind" ] && grep -lq VALGRINDERROR-BEGIN "$scratch"/valgrind/*.log 2>/dev/null; then
	echo "valgrind: $(cat "$scratch"/valgrind/*.log | grep -c VALGRINDERROR-BEGIN) errors (top frames of the first 10):"
	cat "$scratch"/valgrind/*.log |
		awk '/VALGRINDERROR-BEGIN/ { n++; l = 0; next } n && n <= 10 && ++l <= 5' || true
	echo "== valgrind check FAILED"
	failed=$((failed + 1))
else
	echo "clean"
	passed=$((passed + 1))
fi
cleanup
trap - EXIT
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
