#!/usr/bin/env bash
# On the development machine, before a device call for the GPU tests and benchmark: fills
# .device-gpu/ (ignored by git) with Debian 12's shared libraries that the test binaries link
# (LLVM 14 and what it needs, json-c, protobuf-c), the binaries themselves (built here), and the
# models they read, compressed.  The working tree and the carried paths must stay under 64 MiB,
# which leaves no room for PostgreSQL's packages as well: silvan inside PostgreSQL on the device
# is ../shared/device/pack.sh's job, in a call of its own.  Then call the device tool with
#   carry [".device-gpu"], command "bash test/device/run.sh"
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
dir=.device-gpu
mkdir -p $dir/debs $dir/bin
debs=(libllvm14 libz3-4 libjson-c5 libprotobuf-c1 libicu72 libxml2 libedit2 libffi8 libbsd0
      libmd0 libtinfo6)
need=()
for d in "${debs[@]}"; do ls $dir/debs/"${d}"_*.deb >/dev/null 2>&1 || need+=("$d"); done
if ((${#need[@]})); then
	(cd $dir/debs && apt-get download "${need[@]}" >/dev/null 2>&1) ||
		{ apt-get update -qq >/dev/null 2>&1; (cd $dir/debs && apt-get download "${need[@]}" >/dev/null); }
fi
make -s test/unit/bin/test_gpu test/unit/bin/test_gpu_targets test/bench/build/bench_gpu PG_CONFIG="$PG_CONFIG"
for b in test/unit/bin/test_gpu test/unit/bin/test_gpu_targets test/bench/build/bench_gpu; do
	strip -o $dir/bin/"$(basename $b)" $b
done
models=(asprasad_treebeard/xgb_models--higgs_xgb_model_save.json
	asprasad_treebeard/xgb_models--airline_xgb_model_save.json
	asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json
	asprasad_treebeard/xgb_models--bosch_xgb_model_save.json
	dmlc_treelite/tests--examples--xgb_toy_categorical--xgb_toy_categorical_model.json
	dmitryikh_leaves/testdata--lg_rf_iris.model
	siboehm_lleaves/tests--models--NYC_taxi--model.txt
	siboehm_lleaves/tests--models--airline--model.txt
	siboehm_lleaves/tests--models--multiclass--model.txt
	siboehm_lleaves/tests--models--mixed_categorical--model.txt)
tar -C ../shared/models -cJf $dir/models.tar.xz "${models[@]}"
echo "carry $dir: $(du -sh $dir | cut -f1); working tree: $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes"
