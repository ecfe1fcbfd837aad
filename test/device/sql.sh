#!/usr/bin/env bash
# silvan inside PostgreSQL on a lent GPU machine.  Here first: bash test/device/pack.sh;
# then a device call with carry [".device"] and the command "bash test/device/sql.sh"
# (or test/device/all.sh); the logs are $OUT/sql.log and $OUT/e2e.log (higgs over a million rows).
set -uo pipefail
OUT=${OUT:-/tmp/silvan-device-out}
mkdir -p "$OUT"
# start-pg.sh finds the server unpacked (it would look for .deb files), starts a fresh cluster
source test/device/unpack.sh
[ -f /opt/silvan-pg/data/postmaster.pid ] &&
	su pgrun -s /bin/bash -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH /opt/silvan-pg/usr/lib/postgresql/15/bin/pg_ctl -D /opt/silvan-pg/data -m fast stop" >/dev/null
rm -rf /opt/silvan-pg/data
source .device/start-pg.sh
psql -X -c 'CREATE EXTENSION silvan' && psql -X -f test/device/gpu.sql > "$OUT/sql.log" 2>&1
[ -f .device/higgs.json.xz ] && psql -X -f test/device/gpu_e2e.sql > "$OUT/e2e.log" 2>&1
tail -20 /opt/silvan-pg/run/log > "$OUT/server.log"
cat "$OUT/sql.log" "$OUT/e2e.log" 2>/dev/null
