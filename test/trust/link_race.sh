#!/usr/bin/env bash
# The AMDGPU link against a local attacker (issue: a /tmp race let another
# OS user truncate a server file through a symlink, or hang a backend on a
# FIFO).  explain(model, 4096, 'rocm', llvm_ir => true) links an AMDGPU
# object with ld.lld; it needs no GPU and any role may call it.  While a
# racer running as another OS user (test/trust/racer.c, inotify) plants
# symlinks to a server-owned victim file and FIFOs at every name a link
# could use next to each new "silvan*" entry in /tmp, $TMPDIR and the
# cluster's silvan_tmp (and inside it, where it can), 50 such calls must
# all succeed quickly, the victim and pg_control must not change, and no
# backend may hang.
# Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/check.sh
source scripts/cluster.sh
source test/trust/lib.sh

ATTACKER=${SILVAN_TEST_ATTACKER:-nobody}
WORK=$(mktemp -d /tmp/silvan-race-work.XXXXXX)
chmod 755 "$WORK"
gcc -O1 -o "$WORK/racer" test/trust/racer.c || { echo "0 passed, 1 failed"; exit 1; }

cluster_start || { echo "0 passed, 1 failed"; exit 1; }
DATA=$CLUSTER_DIR/data
psql -XAtq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION silvan" >/dev/null
model=$(cat test/fixtures/binary_logistic.json)
psql -XAtq -v ON_ERROR_STOP=1 -v model="$model" >/dev/null <<'SQL'
SELECT silvan.load_model('linked', :'model');
SQL
VICTIM=$DATA/silvan_victim
runuser -u postgres -- sh -c "echo 'server-owned data' > '$VICTIM'; chmod 600 '$VICTIM'"
victim_sum=$(md5sum <"$VICTIM")
control_sum=$(md5sum <"$DATA/global/pg_control")
# the attacker may look into the cluster's directory only as far as the OS lets it
chmod 711 "$CLUSTER_DIR"
mkdir -p "$DATA/silvan_tmp" 2>/dev/null; chown postgres "$DATA/silvan_tmp"; chmod 700 "$DATA/silvan_tmp"
watch=(/tmp)
[ -n "${TMPDIR:-}" ] && [ "$TMPDIR" != /tmp ] && watch+=("$TMPDIR")
runuser -u "$ATTACKER" -- "$WORK/racer" "$VICTIM" "${watch[@]}" "$DATA/silvan_tmp" >"$WORK/racer.out" 2>&1 &
racer=$!
sleep 0.5

# End the racer: TERM, then KILL if it has not gone within 2 s
stop_racer() {
	pkill -TERM -u "$ATTACKER" -f "$WORK/racer" 2>/dev/null
	for ((i = 0; i < 20; i++)); do
		kill -0 "$racer" 2>/dev/null || break
		sleep 0.1
	done
	pkill -KILL -u "$ATTACKER" -f "$WORK/racer" 2>/dev/null
	wait "$racer" 2>/dev/null
}

ok=0
slow=0
for i in $(seq 1 50); do
	start=$(now)
	if timeout 15 psql -XAtq -c "SELECT length(silvan.explain('linked', 4096, 'rocm', llvm_ir => true)) > 0" 2>"$WORK/err" | grep -q t; then
		ok=$((ok + 1))
	else
		head -3 "$WORK/err"
	fi
	[ "$(at_most "$(seconds_between "$(now)" "$start")" 10)" = yes ] || slow=$((slow + 1))
	[ "$slow" -ge 3 ] && break # hung backends: stop here, the checks below fail
done
stop_racer
echo "  racer: $(cat "$WORK/racer.out")"

check "the racer watched /tmp" "$(grep -c '^[1-9][0-9]* of [0-9]* directories watched' "$WORK/racer.out")" 1
check "50 links under the racer succeed" "$ok" 50
check "none takes over 10 s (no hang on a FIFO)" "$slow" 0
check "the victim file is unchanged" "$(md5sum <"$VICTIM")" "$victim_sum"
check "pg_control is unchanged" "$(md5sum <"$DATA/global/pg_control")" "$control_sum"
check "the links leave nothing behind in silvan_tmp" "$(find "$DATA/silvan_tmp" -mindepth 1 | wc -l)" 0
check "the link directory is private" "$(stat -c %a "$DATA/silvan_tmp")" 700
check "no backend is left waiting" "$(psql -XAtq -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()")" 0
check "the server is up" "$(psql -XAtq -c "SELECT 1")" 1
cluster_stop
rm -rf "$WORK"
find /tmp -maxdepth 1 -user "$ATTACKER" -name 'silvan*' -delete 2>/dev/null
check_summary
