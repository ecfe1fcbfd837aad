#!/usr/bin/env bash
# make bench: predict_table over 100k-row tables beside XGBoost's own
# single-thread inplace_predict on the same rows, in the same run.
set -euo pipefail
cd "$(dirname "$0")/../.."
SILVAN_WITH_PYTHON=1 bash scripts/setup.sh
source scripts/cluster.sh
cluster_start
/usr/bin/python3 test/bench/bench.py "$@"
