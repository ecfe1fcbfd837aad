#!/usr/bin/env bash
# Regenerate the committed seed corpora of the fuzz targets from test/fixtures.
#   bash test/fuzz/make_seeds.sh
# Text seeds come from make_seeds.py, ONNX seeds from test/fixtures/onnx;
# binary-form seeds are the text seeds
# parsed and serialized by make_binary_seeds.c.
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=test/fuzz/corpus
rm -rf "$corpus"
/usr/bin/env python3 test/fuzz/make_seeds.py
# ONNX seeds: a few of the ONNX fixtures (make_onnx_fixtures.py)
mkdir -p "$corpus/onnx"
for f in modes_opset1 modes_opset3_double aggregate_min classifier_softmax \
	sk_gb_binary_logistic sk_dt_clf sk_rf_reg_sum bad/cycle bad/raw_data_short \
	v5_modes v5_double v5_aggregate_min bad/v5_cycle; do
	cp "test/fixtures/onnx/$f.onnx" "$corpus/onnx/"
done
mkdir -p test/fuzz/build "$corpus/forest_binary"
${CC:-cc} -O1 -std=gnu11 -Iinclude -I/usr/include/json-c -o test/fuzz/build/make_binary_seeds \
	test/fuzz/make_binary_seeds.c src/core/*.c src/core/onnx/*.c -ljson-c -lprotobuf-c -lm
test/fuzz/build/make_binary_seeds "$corpus/forest_binary" \
	"$corpus"/xgboost_json/* "$corpus"/lightgbm_text/* \
	"$corpus"/onnx/modes_opset3_double.onnx "$corpus"/onnx/aggregate_min.onnx \
	"$corpus"/onnx/classifier_softmax.onnx
du -sh "$corpus"/*
