#!/usr/bin/env bash
# The documentation's examples against a throwaway cluster (test/docs/README.md):
#   bash test/docs/run.sh [FILE.md ...]
# Without arguments: README.md, docs/*.md (sorted) and test/docs/selftest.md,
# then test/docs/selftest_bad.md, whose every check must fail (one check:
# the harness detects failures).  Needs silvan installed.
# Prints "ok: FILE:LINE ..." / "FAILED: FILE:LINE ..." per check and, last,
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
files=("$@")
bad=()
if [ ${#files[@]} -eq 0 ]; then
	files=(README.md)
	while IFS= read -r f; do files+=("$f"); done < <(ls docs/*.md 2>/dev/null | LC_ALL=C sort)
	files+=(test/docs/selftest.md)
	bad=(--expect-failures test/docs/selftest_bad.md)
fi
source scripts/cluster.sh
cluster_start || { echo "FAILED: the cluster did not start"; echo "0 passed, 1 failed"; exit 1; }
status=0
/usr/bin/python3 test/docs/doctest.py --psql "$PG_BIN/psql" --timeout "${SILVAN_DOCTEST_TIMEOUT:-120}" \
	"${bad[@]}" "${files[@]}" || status=$?
cluster_stop
trap - EXIT
exit $status
