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
# table from the OS page cache every time.  Likewise the 100,000 result
# rows stay in memory, as XGBoost's output array does: a set-returning
# function's results go to a tuplestore that spills to a temporary file past
# work_mem, and with the default 4 MB that happens at about 80,000 rows.
SILVAN_PGOPTIONS="${SILVAN_PGOPTIONS:--c shared_buffers=512MB -c work_mem=64MB}" cluster_start
/usr/bin/python3 test/bench/bench.py "$@"
