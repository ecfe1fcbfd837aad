#!/usr/bin/env bash
# Install what silvan needs on Debian 12 (run as root), then build and install it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Python's libraries: the tests and the documentation's examples (test/docs)
# train models; SILVAN_WITH_PYTHON, which used to add them, is no longer needed
need=(postgresql-15 postgresql-server-dev-15 llvm-14-dev clang clang-14 libclang-rt-14-dev libjson-c-dev libprotobuf-c-dev protobuf-c-compiler make gcc g++ python3-psycopg postgresql-15-cron lld-14
	python3-xgboost python3-sklearn python3-numpy python3-pandas)
missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "== installing: ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "== building silvan"
make -s -j2 PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
make -s install PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config >/dev/null
