#!/usr/bin/env bash
# Set everything up and run every test: C unit tests of the core, the
# conformance suite against the training libraries' own predictions, and
# the pg_regress suite against a temporary cluster started and stopped here,
# then (unless SILVAN_CASSERT=0) that suite against an assert-enabled build.
set -euo pipefail
cd "$(dirname "$0")/.."
SILVAN_WITH_PYTHON=${SILVAN_WITH_PYTHON:-0} bash scripts/setup.sh
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

echo "== C unit tests and conformance (no server)"
make -s unittest PG_CONFIG=$PG_CONFIG

echo "== pg_regress against a temporary cluster"
source scripts/cluster.sh
cluster_start
status=0
make -s installcheck PG_CONFIG=$PG_CONFIG || status=$?
if [ $status -ne 0 ] && [ -f regression.diffs ]; then
	cat regression.diffs
fi
cluster_stop
trap - EXIT

# ---- the suite again on an assert-enabled server; SILVAN_CASSERT=0 skips it
if [ "${SILVAN_CASSERT:-1}" != 0 ]; then
	echo "== pg_regress against an assert-enabled PostgreSQL (test/cassert.sh)"
	bash test/cassert.sh || status=1
fi
exit $status
