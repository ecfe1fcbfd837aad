#!/usr/bin/env bash
# make bench: predict_table over 100k-row tables beside XGBoost's own
# single-thread inplace_predict on the same rows, in the same run.
set -euo pipefail
cd "$(dirname "$0")/../.."
SILVAN_WITH_PYTHON=1 bash scripts/setup.sh
source scripts/cluster.sh
# Every bench table stays in PostgreSQL's own cache, as XGBoost's rows stay in
# memory: with the default 128 MB, a scan of a table over 32 MB (the 20,000-row
# wide table is 53 MB) goes through a small ring of buffers and rereads the
# table from the OS page cache every time.
SILVAN_PGOPTIONS="${SILVAN_PGOPTIONS:--c shared_buffers=512MB}" cluster_start
/usr/bin/python3 test/bench/bench.py "$@"
