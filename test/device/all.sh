#!/usr/bin/env bash
# Every device step in one call (a machine starts bare, and each start costs device time):
# the GPU unit tests, silvan inside PostgreSQL (fixtures against XGBoost's outputs, a million
# rows end to end, tune() on the device), then the GPU benchmark against Hummingbird's
# strategies in torch.  Here first: bash test/device/pack.sh.  Device call: carry [".device"],
# command "bash test/device/all.sh".  Logs under $OUT; each step's time is printed.
set -uo pipefail
OUT=${OUT:-/tmp/silvan-device-out}
mkdir -p "$OUT"
step() {
	local t0=$SECONDS
	echo "=== $1"
	shift
	"$@"
	echo "=== done in $((SECONDS - t0)) s"
}
step "unpack" bash -c 'source test/device/unpack.sh && du -sh /opt/silvan-pg'
step "unit tests" env SILVAN_DEVICE_STEPS=tests bash test/device/run.sh
step "sql" bash test/device/sql.sh
step "bench" env SILVAN_DEVICE_STEPS=bench SILVAN_DEVICE_MODELS="${SILVAN_DEVICE_MODELS:-higgs airline year_prediction_msd}" bash test/device/run.sh
