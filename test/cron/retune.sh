#!/usr/bin/env bash
# Periodic re-tuning with pg_cron, as the README shows it: a cluster with
# pg_cron preloaded, a cron job that calls silvan.tune_async() every
# minute, and checks that cron ran it, that the tuning worker then ran the
# job it queued (as the cron job's user), and that unscheduling stops it.
# pg_cron 1.4 (Debian 12) schedules by the minute: this takes 1-2 minutes.
# Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/check.sh

# Poll a query until it returns want or seconds pass; prints what it returned last
wait_for() {
	local query=$1 want=$2 seconds=$3 got=
	for ((i = 0; i < seconds; i++)); do
		got=$(psql -XAtq -c "$query" 2>&1)
		[ "$got" = "$want" ] && break
		sleep 1
	done
	echo "$got"
}

source scripts/cluster.sh
SILVAN_PGOPTIONS="-c shared_preload_libraries=pg_cron -c cron.database_name=postgres -c cron.use_background_workers=on -c max_worker_processes=16" \
	cluster_start || { echo "0 passed, 1 failed"; exit 1; }
model=$(cat test/fixtures/binary_logistic.json)
psql -XAtq -v ON_ERROR_STOP=1 -v model="$model" <<'SQL' >/dev/null
CREATE EXTENSION pg_cron;
CREATE EXTENSION silvan;
SELECT silvan.load_model('retuned', :'model');
SELECT cron.schedule('silvan-retune', '* * * * *',
	$$SELECT silvan.tune_async('retuned', batch_sizes => '{64}', budget => '5 seconds')$$);
SQL
check "the cron job is scheduled" "$(psql -XAtq -c "SELECT count(*) FROM cron.job WHERE jobname = 'silvan-retune'")" 1
check "cron ran silvan.tune_async()" \
	"$(wait_for "SELECT count(*) > 0 FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE j.jobname = 'silvan-retune' AND d.status = 'succeeded'" t 130)" t
check "the tuning worker ran the job cron queued" \
	"$(wait_for "SELECT state FROM silvan.tuning_jobs WHERE model = 'retuned' ORDER BY job LIMIT 1" done 120)" done
check "as the cron job's user" "$(psql -XAtq -c "SELECT owner FROM silvan.tuning_jobs WHERE model = 'retuned' ORDER BY job LIMIT 1")" postgres
check "its result covers the batch size" \
	"$(psql -XAtq -c "SELECT result->0->>'batch_size' FROM silvan.tuning_jobs WHERE model = 'retuned' ORDER BY job LIMIT 1")" 64
check "unscheduled" "$(psql -XAtq -c "SELECT cron.unschedule('silvan-retune')")" t
cluster_stop
check_summary
