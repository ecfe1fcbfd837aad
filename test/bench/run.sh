#!/usr/bin/env bash
# make bench: silvan (predict_table end to end, and its compiled kernel alone)
# beside the peer compilers (XGBoost, lleaves, TL2cgen, Hummingbird) on the
# same rows, in the same run; see test/bench/bench.py for what is timed.
#
# Environment (besides bench.py's SILVAN_BENCH_* knobs):
#   SILVAN_BENCH_SETUP=0   do not run scripts/setup.sh (apt-get, build, make
#                          install into the system's PostgreSQL): build only,
#                          and use the server in SILVAN_PG_BIN, where silvan
#                          must already be installed (e.g. a copy installed
#                          with make install DESTDIR=...)
#   SILVAN_PG_BIN          the server's bin directory (scripts/cluster.sh)
#   SILVAN_PGPORT          the bench cluster's port (scripts/cluster.sh)
#   SILVAN_PEERS_SRC       the peers' sources and setup.sh (default ../shared/peers)
#   SILVAN_PEERS_DIR       where setup.sh builds them (default /tmp/silvan-peers)
#   SILVAN_BENCH_PEERS=none  no peers: neither set up nor run
set -euo pipefail
cd "$(dirname "$0")/../.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
if [ "${SILVAN_BENCH_SETUP:-1}" = 0 ]; then
	make -s -j2 PG_CONFIG="$PG_CONFIG"
else
	SILVAN_WITH_PYTHON=1 bash scripts/setup.sh
fi

# The compiled kernel alone, on an in-memory array (bench_kernel --serve),
# linked with the objects make just built
llvm_config=$("$PG_CONFIG" --configure | tr ' ' '\n' | grep LLVM_CONFIG= | sed -e "s/'//g" -e 's/LLVM_CONFIG=//')
llvm_config=${llvm_config:-llvm-config-14}
mkdir -p test/bench/build
kernel=test/bench/build/bench_kernel
# (not llvm_stubs.o: silvan.so's way to LLVM; the kernel bench links LLVM)
objs=()
for o in src/core/*.o src/core/onnx/*.o src/compiler/*.o src/tune/*.o src/runtime/*.o; do
	[ "$o" = src/runtime/llvm_stubs.o ] || objs+=("$o")
done
if [ ! -x "$kernel" ] || [ -n "$(find test/bench/bench_kernel.c "${objs[@]}" include/silvan/*.h -newer "$kernel" -print -quit)" ]; then
	echo "== building $kernel"
	gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
		-Wno-missing-field-initializers -Iinclude $($llvm_config --cppflags) -I/usr/include/json-c \
		-o "$kernel" test/bench/bench_kernel.c "${objs[@]}" \
		$($llvm_config --ldflags) -lLLVM-$($llvm_config --version | cut -d. -f1) -lstdc++ -ljson-c -lprotobuf-c -lm -lpthread
fi
export SILVAN_BENCH_KERNEL=$PWD/$kernel

# The peers: set up (idempotent, offline, about 3 minutes the first time);
# a peer that is not there is reported absent by bench.py
peers_src=${SILVAN_PEERS_SRC:-$(dirname "$PWD")/shared/peers}
if [ "${SILVAN_BENCH_PEERS:-}" != none ]; then
	if [ -f "$peers_src/setup.sh" ]; then
		echo "== setting up the peers ($peers_src/setup.sh)"
		if line=$(bash "$peers_src/setup.sh" "${SILVAN_PEERS_DIR:-/tmp/silvan-peers}" 2>&1 | tee /tmp/silvan-peers-setup.log | grep '^PYTHONPATH=' | tail -1) && [ -n "$line" ]; then
			export SILVAN_BENCH_PEERS_PYTHONPATH=${line#PYTHONPATH=}
		else
			echo "!!! peers setup failed (log: /tmp/silvan-peers-setup.log); peers will be reported absent"
		fi
	else
		echo "(no peers at $peers_src: only silvan and XGBoost's Python package are timed)"
	fi
fi

source scripts/cluster.sh
# Every bench table stays in PostgreSQL's own cache, as the peers' rows stay
# in memory: a scan of a table over a quarter of shared_buffers goes
# through a small ring of buffers and rereads the table from the OS page
# cache every time, so shared_buffers holds four times the largest bench
# table (the 100,000-row wide table, about 270 MB).  Likewise the result
# rows stay in memory, as the peers' output arrays do: a set-returning
# function's results go to a tuplestore that spills to a temporary file past
# work_mem, and with the default 4 MB that happens at about 80,000 rows.
# silvan is preloaded, as the README advises for serving: a fresh backend's
# first prediction then does not link LLVM's library (test/bench/
# first_predict.sh times it both ways).
# The shared memory is in huge pages where the kernel has them: parallel
# workers are fresh processes, each of which maps the shared buffers it
# reads, and on a VM mapping them 4 kB at a time costs as much as the
# scoring.  As root the run reserves them (800 of 2 MB) and gives them back
# after; the report says what the server got.
huge_before=
if [ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/nr_hugepages ] && [ "$(cat /proc/sys/vm/nr_hugepages)" -lt 800 ]; then
	huge_before=$(cat /proc/sys/vm/nr_hugepages)
	echo 800 >/proc/sys/vm/nr_hugepages || huge_before=
fi
huge_restore() {
	[ -z "$huge_before" ] || echo "$huge_before" >/proc/sys/vm/nr_hugepages || true
}
SILVAN_PGOPTIONS="${SILVAN_PGOPTIONS:--c shared_buffers=1536MB -c huge_pages=try -c work_mem=64MB -c shared_preload_libraries=silvan}" cluster_start
trap 'cluster_stop; huge_restore' EXIT
/usr/bin/python3 test/bench/bench.py "$@"
