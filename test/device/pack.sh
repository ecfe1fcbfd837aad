#!/usr/bin/env bash
# On the development machine, before a device call: fills .device/ (ignored by git) with all
# that a bare GPU machine lacks for every device step, in one carry under 64 MiB:
#   root.tar.xz   Debian 12's PostgreSQL 15 server and the shared libraries that it, silvan and
#                 the test binaries link (LLVM 14, json-c, protobuf-c, ...), unpacked from their
#                 .deb files and trimmed (no documentation, locales, JIT bitcode or client tools
#                 but psql), so that it fits beside the rest;
#   stage/        silvan installed with `make install DESTDIR=`, and start-pg.sh (../shared/device);
#   bin/          test_gpu, test_gpu_targets and bench_gpu, built here and stripped;
#   models.tar.xz the models they read; higgs.json.xz for the end-to-end SQL.
# The .deb files stay in .device-cache/ (not carried).  Then one device call:
#   carry [".device"], command "bash test/device/all.sh"
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
dir=.device
cache=.device-cache
for d in /.device/ /.device-cache/; do
	grep -qx "$d" .git/info/exclude 2>/dev/null || echo "$d" >>.git/info/exclude
done
mkdir -p $dir/bin $cache/debs
debs=(postgresql-15 postgresql-client-15 libpq5 libllvm14 libz3-4 libjson-c5 libprotobuf-c1 libicu72
      libxml2 libedit2 libffi8 libbsd0 libmd0 libtinfo6 libldap-2.5-0 libsasl2-2 libsasl2-modules-db)
need=()
for d in "${debs[@]}"; do ls $cache/debs/"${d}"_*.deb >/dev/null 2>&1 || need+=("$d"); done
if ((${#need[@]})); then
	(cd $cache/debs && apt-get download "${need[@]}" >/dev/null 2>&1) ||
		{ apt-get update -qq >/dev/null 2>&1; (cd $cache/debs && apt-get download "${need[@]}" >/dev/null); }
fi
# the trimmed root, remade only when the .deb files change (xz -9 takes two minutes)
stamp=$(ls $cache/debs | sha256sum | cut -c1-16)
if [ "$(cat $dir/root.stamp 2>/dev/null)" != "$stamp" ]; then
	root=$(mktemp -d)
	for f in $cache/debs/*.deb; do dpkg-deb -x "$f" "$root"; done
	rm -rf "$root"/usr/share/{locale,doc,man,lintian} "$root"/usr/lib/postgresql/15/lib/bitcode
	(cd "$root"/usr/lib/postgresql/15/bin &&
		ls | grep -vxE 'postgres|postmaster|initdb|pg_ctl|psql|pg_isready|pg_config' | xargs rm -f)
	tar -C "$root" -cf - usr | xz -T2 -9 >$dir/root.tar.xz
	rm -rf "$root"
	echo "$stamp" >$dir/root.stamp
fi
rm -rf $dir/stage $dir/debs
make -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
make -s install DESTDIR="$PWD/$dir/stage" PG_CONFIG="$PG_CONFIG" >/dev/null
cp ../shared/device/start-pg.sh $dir/start-pg.sh
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
[ -f $dir/higgs.json.xz ] ||
	xz -9 -c ../shared/models/asprasad_treebeard/xgb_models--higgs_xgb_model_save.json >$dir/higgs.json.xz
tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
carried=$(du -sb $dir | cut -f1)
echo "carry $dir: $((carried >> 20)) MiB; working tree: $((tree >> 20)) MiB; together under 64 MiB: $([ $((carried + tree)) -lt $((64 << 20)) ] && echo yes || echo NO)"
