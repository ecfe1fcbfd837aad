#!/usr/bin/env bash
# Set everything up and run every test:
#   1. C unit tests of the core and the conformance suite against the
#      training libraries' own predictions (no server);
#   2. pg_regress and the isolation tests against a temporary cluster
#      started and stopped here, and the README's Python client recipe
#      (psycopg) against another, periodic re-tuning with pg_cron
#      preloaded in a third, silvan preloaded in a fourth, every example of
#      README.md and docs/*.md (test/docs: sql and python blocks, their
#      output), the attacks of test/trust (compile bombs and cancels,
#      decoders' memory, the AMDGPU link's files, the tuning queue), and
#      pg_dump / pg_restore of models' versions (test/dump), each on a
#      cluster of its own, and silvan on Citus (test/citus: Citus built
#      from ../shared/citus, a coordinator and two workers);
#   3. the same pg_regress suite against an assert-enabled PostgreSQL
#      (memory-context checking), built once and cached (test/cassert.sh),
#      and the test of every scoring output (07_outputs) again with that
#      server under valgrind's memcheck;
#   4. each fuzz target for SILVAN_FUZZ_SECONDS (default 60) seconds.
# SILVAN_CASSERT=0 or SILVAN_FUZZ_SECONDS=0 skip steps 3 and 4.
# Ends with one line over everything that ran: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
# default schedules the same on every host; 22_host_profile measures
export SILVAN_HOST_PROFILE=${SILVAN_HOST_PROFILE:-fallback}
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
LOGS=$(mktemp -d /tmp/silvan-test.XXXXXX)
passed=0
failed=0

# Add a step's "N passed, N failed" lines to the totals
count_summary() {
	local p f
	p=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | awk '{s += $1} END {print s + 0}')
	f=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | awk '{s += $3} END {print s + 0}')
	passed=$((passed + p))
	failed=$((failed + f))
}

# Add pg_regress's "All N tests passed" or "M of N tests failed" lines to the totals
count_regress() {
	local line seen=0
	while read -r line; do
		seen=1
		if [[ $line =~ All\ ([0-9]+)\ tests?\ passed ]]; then
			passed=$((passed + BASH_REMATCH[1]))
		elif [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ tests?\ failed ]]; then
			passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
			failed=$((failed + BASH_REMATCH[1]))
		fi
	done < <(grep -E 'tests? (passed|failed)' "$1")
	[ $seen = 1 ] || failed=$((failed + 1))
}

# Run a step, showing its output; a step that fails without counting a
# failure counts one, and a command (not a shell function) that runs past
# SILVAN_STEP_SECONDS (default 2400) is ended
run_step() {
	local name=$1 counter=$2 before=$failed status limit
	shift 2
	echo "== $name"
	limit=()
	declare -F "$1" >/dev/null || limit=(timeout -k 30 "${SILVAN_STEP_SECONDS:-2400}")
	"${limit[@]}" "$@" 2>&1 | tee "$LOGS/$name.log"
	status=${PIPESTATUS[0]}
	[ "$status" -eq 124 ] && echo "$name: ran past ${SILVAN_STEP_SECONDS:-2400} s"
	"$counter" "$LOGS/$name.log"
	if [ "$status" -ne 0 ] && [ "$failed" -eq "$before" ]; then
		echo "$name: exited with status $status"
		failed=$((failed + 1))
	fi
}

# pg_regress and isolation tests against a throwaway cluster
installcheck() {
	local status=0
	source scripts/cluster.sh
	cluster_start || return 1
	make -s installcheck PG_CONFIG=$PG_CONFIG || status=$?
	[ $status -ne 0 ] && cat regression.diffs output_iso/regression.diffs 2>/dev/null
	cluster_stop
	trap - EXIT
	return $status
}

# A client program against a throwaway cluster
with_cluster() {
	local status=0
	source scripts/cluster.sh
	cluster_start || return 1
	"$@" || status=$?
	cluster_stop
	trap - EXIT
	return $status
}

run_step unit count_summary make -s unittest PG_CONFIG=$PG_CONFIG
run_step installcheck count_regress installcheck
run_step clients count_summary with_cluster /usr/bin/python3 test/clients/psycopg_load.py
run_step cron count_summary bash test/cron/retune.sh
run_step preload count_summary bash test/preload/preloaded.sh
run_step docs count_summary bash test/docs/run.sh
run_step trust count_summary bash test/trust/run.sh
run_step dump count_summary bash test/dump/dump_restore.sh
run_step citus count_summary bash test/citus/citus.sh
run_step citus-preloaded count_summary env SILVAN_CITUS_PRELOAD=citus,silvan bash test/citus/citus.sh
if [ "${SILVAN_CASSERT:-1}" != 0 ] && [ -f test/cassert.sh ]; then
	run_step cassert count_summary bash test/cassert.sh
	run_step memcheck count_summary \
		env SILVAN_CASSERT_VALGRIND=1 SILVAN_CASSERT_REGRESS=07_outputs bash test/cassert.sh
fi
if [ "${SILVAN_FUZZ_SECONDS:-60}" != 0 ] && [ -f test/fuzz/fuzz.mk ]; then
	run_step fuzz count_summary make -s fuzz FUZZ_SECONDS="${SILVAN_FUZZ_SECONDS:-60}"
fi
rm -rf "$LOGS"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
