#!/usr/bin/env bash
# silvan inside PostgreSQL on a lent GPU machine.  Here first:
#   bash ../shared/device/pack.sh && bash test/device/sql.sh pack
# then a device call with carry [".device"] and the command "bash test/device/sql.sh";
# the logs are $OUT/sql.log and $OUT/e2e.log (higgs over a million rows).
set -uo pipefail
if [ "${1:-}" = pack ]; then
	# what ../shared/device/pack.sh lacks: silvan's protobuf-c, and libpq's LDAP (a lent machine had neither)
	[ -f .device/higgs.json.xz ] ||
		xz -9 -c ../shared/models/asprasad_treebeard/xgb_models--higgs_xgb_model_save.json > .device/higgs.json.xz
	cd .device/debs
	for d in libprotobuf-c1 libldap-2.5-0 libsasl2-2 libsasl2-modules-db; do
		ls ${d}_*.deb >/dev/null 2>&1 || apt-get download $d >/dev/null 2>&1
	done
	exit 0
fi
OUT=${OUT:-/tmp/silvan-device-out}
mkdir -p "$OUT"
# start-pg.sh unpacks only on a fresh machine: unpack what a warm one may lack
mkdir -p /opt/silvan-pg
for f in .device/debs/*.deb; do dpkg-deb -x "$f" /opt/silvan-pg; done
rm -rf /opt/silvan-pg/data
source .device/start-pg.sh
psql -X -c 'CREATE EXTENSION silvan' && psql -X -f test/device/gpu.sql > "$OUT/sql.log" 2>&1
[ -f .device/higgs.json.xz ] && psql -X -f test/device/gpu_e2e.sql > "$OUT/e2e.log" 2>&1
tail -20 /opt/silvan-pg/run/log > "$OUT/server.log"
cat "$OUT/sql.log" "$OUT/e2e.log" 2>/dev/null
