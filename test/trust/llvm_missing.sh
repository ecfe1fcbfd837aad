#!/usr/bin/env bash
# A server whose silvan_llvm.so is missing (an incomplete install): a
# backend still scores with machine code another one compiled (the code
# cache: no LLVM needed), a compile fails with an error that names the
# library, and the server stays up.  Runs on a copy of the installed server
# and silvan under a temporary root (PostgreSQL finds its files relative to
# its binaries), so the installed one is not touched.
# Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/check.sh
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$("$PG_CONFIG" --bindir)
sharedir=$("$PG_CONFIG" --sharedir)
pkglibdir=$("$PG_CONFIG" --pkglibdir)
root=$(mktemp -d /tmp/silvan-nollvm.XXXXXX)
mkdir -p "$root$(dirname "$bindir")" "$root$(dirname "$sharedir")"
cp -a "$(dirname "$bindir")/." "$root$(dirname "$bindir")/"
cp -a "$sharedir" "$root$sharedir"
chmod 755 "$root"
check "the copy has silvan_llvm.so" "$([ -f "$root$pkglibdir/silvan_llvm.so" ] && echo yes)" yes

# (cluster.sh takes the server's directory when sourced)
export SILVAN_PG_BIN=$root$bindir SILVAN_PGPORT=${SILVAN_PGPORT:-54421}
source scripts/cluster.sh

# compile with LLVM there: the code cache keeps the code of batch size 1
cluster_start || { check "the server starts" no yes; rm -rf "$root"; check_summary; exit 1; }
trap 'cluster_stop; rm -rf "$root"' EXIT
as=()
[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
psql -XAtq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION silvan" >/dev/null &&
	psql -XAtq -v ON_ERROR_STOP=1 -v fx=binary_logistic -f sql/fixture.psql >/dev/null
check "the server runs from the copy" \
	"$(psql -XAtq -c "SELECT setting FROM pg_config() WHERE name = 'PKGLIBDIR'")" "$root$pkglibdir"
# rows whose prediction differs from XGBoost's own (test/fixtures, float32 exactly)
differing="SELECT count(*) FILTER (WHERE silvan.predict('binary_logistic', f)::real
	IS DISTINCT FROM e[1]::real) FROM fx_in JOIN fx_exp USING (id)"
check "compiled with LLVM: no row differs from XGBoost" "$(psql -XAtq -c "$differing" 2>&1)" 0
data=$CLUSTER_DIR/data
"${as[@]}" "$SILVAN_PG_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null

# the same server without silvan_llvm.so
rm -f "$root$pkglibdir/silvan_llvm.so"
"${as[@]}" "$SILVAN_PG_BIN/pg_ctl" -D "$data" -l "$CLUSTER_DIR/server.log" -w \
	-o "-k $CLUSTER_DIR -p $PGPORT -c listen_addresses='' -c fsync=off ${SILVAN_HOST_PROFILE:+-c silvan.host_profile=$SILVAN_HOST_PROFILE}" start >/dev/null
check "the restarted server runs from the copy" \
	"$(psql -XAtq -c "SELECT setting FROM pg_config() WHERE name = 'PKGLIBDIR'")" "$root$pkglibdir"
check "a fresh backend scores from the code cache: no row differs from XGBoost" \
	"$(psql -XAtq -c "$differing" 2>&1)" 0
out=$(psql -XAtq -v VERBOSITY=verbose -c "SET silvan.code_cache = off" -c "$differing" 2>&1)
check "a compile fails: could not load LLVM" "$(echo "$out" | grep -c 'ERROR:  XX000: could not load LLVM')" 1
check "the error names the library" "$(echo "$out" | grep -c 'silvan_llvm.so')" 1
check "the server is up" "$(psql -XAtq -c "SELECT 1")" 1
check "no crash in the server log" "$(grep -cE 'terminated by signal|PANIC' "$CLUSTER_DIR/server.log")" 0
check_summary
