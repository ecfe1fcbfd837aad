#!/usr/bin/env bash
# On a lent GPU machine, from the project's root, after test/device/pack.sh here: the GPU unit
# tests (driver round trips, every Table 5 schedule on the device against the interpreter) and
# the GPU benchmark (silvan's kernel against Hummingbird's strategies in torch, same rows).
# Logs go to $OUT.  SILVAN_DEVICE_STEPS picks steps (default "tests bench"),
# SILVAN_DEVICE_ROWS the benchmark's rows, SILVAN_DEVICE_MODELS its XGBoost models,
# SILVAN_DEVICE_BATCHES its batch sizes (default 4096, 65536 and all rows).
set -uo pipefail
OUT=${OUT:-/tmp/silvan-device-out}
dir=$PWD/.device
mkdir -p "$OUT"
steps=${SILVAN_DEVICE_STEPS:-tests bench}
rows=${SILVAN_DEVICE_ROWS:-262144}
batches=${SILVAN_DEVICE_BATCHES:-4096 65536 $rows}
source test/device/unpack.sh
missing=$(ldd "$dir"/bin/* | grep 'not found' | sort -u)
[ -z "$missing" ] || echo "run.sh: missing shared libraries: $missing"
nvidia-smi -L
if [[ " $steps " == *" tests "* ]]; then
	for t in test_gpu test_gpu_targets; do
		"$dir/bin/$t" > "$OUT/$t.log" 2>&1
		echo "== $t: rc $? $(tail -1 "$OUT/$t.log")"
		grep -E "device|skip|check failed|runs" "$OUT/$t.log" | head -20
	done
fi
if [[ " $steps " == *" bench "* ]]; then
	for m in ${SILVAN_DEVICE_MODELS:-higgs airline year_prediction_msd bosch}; do
		model=$SILVAN_MODELS/asprasad_treebeard/xgb_models--${m}_xgb_model_save.json
		features=$(python3 -c "import json; print(json.load(open('$model'))['learner']['learner_model_param']['num_feature'])")
		"$dir/bin/bench_gpu" "$model" "$rows" /tmp/rows.bin $batches \
			| sed "s|^[^\t]*/|$m\t|" >> "$OUT/bench.tsv" 2>> "$OUT/bench.err"
		python3 test/bench/gpu_peer.py "$model" /tmp/rows.bin "$features" /tmp/rows.bin.margins \
			$batches | sed "s|^|$m\t|" >> "$OUT/bench.tsv" 2>> "$OUT/bench.err"
		echo "== bench $m done"
	done
	tail -5 "$OUT/bench.err"
fi
