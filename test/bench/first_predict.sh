#!/usr/bin/env bash
# The first prediction in fresh backends, of a model whose machine code an
# earlier backend compiled (so it is in the code cache).
#   bash test/bench/first_predict.sh MODEL_FILE [ROUNDS]
# Starts a throwaway cluster (scripts/cluster.sh) with
# shared_preload_libraries = 'silvan' (SILVAN_PRELOAD=0: without), loads the
# model, predicts once, then opens ROUNDS (default 7) fresh sessions; each
# times (psql \timing, so with the client round trip) its first and second
# silvan.predict of one row.  Prints every round and the medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=$1
rounds=${2:-7}
source scripts/cluster.sh
options=""
[ "${SILVAN_PRELOAD:-1}" = 1 ] && options="-c shared_preload_libraries=silvan"
SILVAN_PGPORT=${SILVAN_PGPORT:-54412} SILVAN_PGOPTIONS="$options" cluster_start
psql -qX -v ON_ERROR_STOP=1 -c "CREATE EXTENSION silvan" >/dev/null
printf '%s\n' "\\set m \`cat $model\`" "SELECT silvan.load_model('m', :'m');" |
	psql -qX -v ON_ERROR_STOP=1 >/dev/null
features=$(psql -qXAt -c "SELECT num_features FROM silvan.model WHERE name = 'm'")
row="(SELECT array_agg(i * 0.25)::real[] FROM generate_series(1, $features) AS i)"
psql -qX -v ON_ERROR_STOP=1 -c "SELECT silvan.predict('m', $row)" >/dev/null
times=()
for i in $(seq "$rounds"); do
	line=$(psql -qXAt -c '\timing on' -c "SELECT silvan.predict('m', $row)" \
		-c "SELECT silvan.predict('m', $row)" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tr '\n' ' ')
	echo "round $i: first $(echo $line | cut -d' ' -f1) ms, second $(echo $line | cut -d' ' -f2) ms"
	times+=("$line")
done
printf '%s\n' "${times[@]}" | /usr/bin/python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
print("median: first %.1f ms, second %.2f ms" % (statistics.median(r[0] for r in rows),
                                                  statistics.median(r[1] for r in rows)))'
cluster_stop
