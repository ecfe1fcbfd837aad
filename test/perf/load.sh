#!/usr/bin/env bash
# Measure loading time and peak memory of large synthetic models.
#   bash test/perf/load.sh [TREES [DEPTH]]     (defaults: 1000000 trees, depth 0)
# Writes the models to test/perf/build/ (large: ~400 bytes a one-leaf
# XGBoost tree) and runs load_model on each, XGBoost then LightGBM.
set -euo pipefail
cd "$(dirname "$0")/../.."
trees=${1:-1000000}
depth=${2:-0}
out=test/perf/build
mkdir -p "$out"
${CC:-cc} -O2 -std=gnu11 -Iinclude -I/usr/include/json-c -o "$out/load_model" \
	test/perf/load_model.c src/core/*.c -ljson-c -lm
for format in xgboost lightgbm; do
	model="$out/${format}_${trees}x${depth}.model"
	[ -s "$model" ] || /usr/bin/env python3 test/perf/make_big_model.py "$format" "$trees" "$depth" "$model"
	"$out/load_model" "$model"
done
