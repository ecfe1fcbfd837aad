#!/usr/bin/env bash
# The tuning queue against its attacks (issue: an advisory lock any role
# could take stalled every role's jobs and a job's query could release
# it; cancel_tuning left a job running; no quota).
#  - A role holding pg_advisory_lock(7451200312345), the key the worker
#    once used, stalls nothing: a queued job still runs to its end.
#  - Jobs whose sample queries release every advisory lock of their
#    session still run one at a time: at most one job is ever running.
#  - cancel_tuning() of a job stuck in its sample query (pg_sleep) stops
#    it within a few seconds, and the worker goes on to the next job.
#  - A job's sample query runs under a statement timeout of its budget.
#  - Per-role limits: the ninth queued job and a job of a day's budget
#    are refused with 53400 and a hint.
# Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/check.sh
source scripts/cluster.sh
source test/trust/lib.sh

SESSION_DIR=$(mktemp -d /tmp/silvan-trust.XXXXXX)
chmod 777 "$SESSION_DIR"

# Poll a query until it returns want or seconds pass; prints what it returned last
wait_for() {
	local query=$1 want=$2 seconds=$3 got=
	for ((i = 0; i < seconds * 5; i++)); do
		got=$(psql -XAtq -c "$query" 2>&1)
		[ "$got" = "$want" ] && break
		sleep 0.2
	done
	echo "$got"
}

cluster_start || { echo "0 passed, 1 failed"; exit 1; }
psql -XAtq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION silvan" >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 -v fx=binary_logistic -f sql/fixture.psql >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE ROLE regress_tuner LOGIN;
CREATE ROLE regress_other LOGIN;
ALTER TABLE fx_in OWNER TO regress_tuner;
SELECT silvan.reassign_models(current_user::regrole, 'regress_tuner');
SQL

# 1. the old advisory lock, held by another role, stalls nothing
session_start holder "SELECT pg_advisory_lock(7451200312345); SELECT pg_sleep(30)"
sleep 0.5
job=$(PGUSER=regress_tuner psql -XAtq -c "SELECT silvan.tune_async('binary_logistic', 'fx_in', 'id', batch_sizes => '{64}', budget => '1 s')")
check "a job runs to its end while a role holds the old advisory lock" \
	"$(wait_for "SELECT state FROM silvan.tuning_job WHERE id = $job" done 30)" done
psql -XAtq -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'holder'" >/dev/null
session_wait holder

# 2. jobs whose queries release every advisory lock still run one at a time
for i in 1 2 3 4; do
	PGUSER=regress_tuner psql -XAtq -c "SELECT silvan.tune_query_async('binary_logistic',
		'SELECT id, f FROM public.fx_in, (SELECT pg_advisory_unlock_all(), pg_sleep(0.5)) AS s',
		batch_sizes => '{64}', budget => '1 s')" >/dev/null
done
most=0
for ((i = 0; i < 60; i++)); do
	n=$(psql -XAtq -c "SELECT count(*) FROM silvan.tuning_job WHERE state = 'running'")
	[ "$n" -gt "$most" ] && most=$n
	left=$(psql -XAtq -c "SELECT count(*) FROM silvan.tuning_job WHERE state IN ('queued', 'running')")
	[ "$left" = 0 ] && break
	sleep 0.25
done
check "the four jobs all ran" "$(psql -XAtq -c "SELECT count(*) FROM silvan.tuning_job WHERE state = 'done'")" 5
check "at most one job was ever running" "$most" 1

# 3. cancel_tuning stops a job stuck in its sample query, and the queue goes on
stuck=$(PGUSER=regress_tuner psql -XAtq -c "SELECT silvan.tune_query_async('binary_logistic',
	'SELECT id, f FROM public.fx_in, (SELECT pg_sleep(600)) AS s', batch_sizes => '{64}', budget => '10 min')")
next=$(PGUSER=regress_tuner psql -XAtq -c "SELECT silvan.tune_async('binary_logistic', 'fx_in', 'id', batch_sizes => '{64}', budget => '1 s')")
check "the stuck job is running" "$(wait_for "SELECT state FROM silvan.tuning_job WHERE id = $stuck" running 30)" running
sleep 1
sent=$(now)
check "cancel_tuning of the running job" "$(PGUSER=regress_tuner psql -XAtq -c "SELECT silvan.cancel_tuning($stuck)")" t
check "its worker leaves the sample query within 5 s" \
	"$(wait_for "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()" 0 5)" 0
echo "  cancel: the sample query ended $(seconds_between "$(now)" "$sent") s after cancel_tuning"
check "the job stays cancelled" "$(psql -XAtq -c "SELECT state FROM silvan.tuning_jobs WHERE job = $stuck")" cancelled
check "the next job runs to its end" "$(wait_for "SELECT state FROM silvan.tuning_job WHERE id = $next" done 30)" done
check "another role may not cancel a job" "$(PGUSER=regress_other psql -XAtq -c "SELECT silvan.cancel_tuning($next)" 2>&1 | grep -c 'must be owner of tuning job')" 1

# 4. the sample query runs under a statement timeout of the job's budget
slow=$(PGUSER=regress_tuner psql -XAtq -c "SELECT silvan.tune_query_async('binary_logistic',
	'SELECT id, f FROM public.fx_in, (SELECT pg_sleep(600)) AS s', batch_sizes => '{64}', budget => '2 s')")
check "a job whose sample query outlives its budget fails" \
	"$(wait_for "SELECT state FROM silvan.tuning_jobs WHERE job = $slow" failed 15)" failed
check "... on the statement timeout" \
	"$(psql -XAtq -c "SELECT error FROM silvan.tuning_jobs WHERE job = $slow")" \
	"canceling statement due to statement timeout"

# 5. per-role limits on queued jobs and on their budget
out=$(PGUSER=regress_tuner psql -X -v VERBOSITY=verbose 2>&1 <<'SQL'
SELECT silvan.tune_query_async('binary_logistic', 'SELECT id, f FROM public.fx_in, (SELECT pg_sleep(60)) AS s',
	batch_sizes => '{64}', budget => '1 min') FROM generate_series(1, 8);
SELECT silvan.tune_async('binary_logistic', 'fx_in', 'id', batch_sizes => '{64}', budget => '1 s');
SQL
)
check "the ninth queued job of a role is refused with 53400" "$(echo "$out" | grep -c 'ERROR:  53400: too many tuning jobs queued by role')" 1
check "... with a hint" "$(echo "$out" | grep -c 'HINT:  Wait for them to finish')" 1
psql -XAtq -c "SELECT silvan.cancel_tuning(id) FROM silvan.tuning_job WHERE state IN ('queued', 'running')" >/dev/null
out=$(PGUSER=regress_tuner psql -X -v VERBOSITY=verbose -c "SELECT silvan.tune_async('binary_logistic', 'fx_in', 'id', strategy => 'exhaustive', budget => '1 day')" 2>&1)
check "a job of a day's budget is refused with 53400" "$(echo "$out" | grep -c 'ERROR:  53400: tuning budget of role "regress_tuner" exceeded')" 1
check "a role may not raise its own limit" "$(PGUSER=regress_tuner psql -XAtq 2>&1 <<'SQL' | grep -c 'permission denied to set parameter'
SELECT silvan.predict('binary_logistic', f) IS NOT NULL FROM fx_in LIMIT 1;
SET silvan.tune_max_budget_per_role = 0;
SQL
)" 1

check "the server is up" "$(psql -XAtq -c "SELECT 1")" 1
check "no crash in the server log" "$(grep -cE 'PANIC|terminated by signal' "$CLUSTER_DIR/server.log")" 0
cluster_stop
rm -rf "$SESSION_DIR"
check_summary
