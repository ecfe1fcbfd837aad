#!/usr/bin/env bash
# make soak: SOAK_CLIENTS pgbench clients (16) for SOAK_SECONDS (300) mix
# every silvan call (scalar and batched scoring, loads, replaces, drops,
# schedules, explain, two roles; one and two threads) on real models in a
# throwaway cluster that runs the installed extension, then checks:
#   1. no backend crashed and no pgbench client was aborted;
#   2. every error is one of the SQLSTATEs that the races may give;
#   3. the private memory (RssAnon) of every client backend stays flat;
#   4. predictions, during and after the run, equal XGBoost's own;
#   5. attacks run beside the load, one after the other in sessions of
#      their own (test/trust shows each alone): the attack's compile bomb
#      is refused (54000) at once; a long compile within the limits (a
#      schedule of lleaves' blocks, tiles varied past the code cache) under
#      statement_timeout ends with 57014 soon after it, or is ended soon
#      by pg_cancel_backend or pg_terminate_backend; a 30 MB ONNX file of
#      empty attributes is refused (54000) quickly.  "Soon": within
#      SOAK_ATTACK_LATE (3) seconds, the load sharing the cores.
# Environment: SILVAN_PG_BIN (the server's bin directory), SILVAN_PGPORT
# (default 54331), SILVAN_SHARED (default ../shared: the LightGBM model;
# skipped when absent), SOAK_OUT (logs; default test/soak/results),
# SOAK_SAMPLE (seconds between memory samples; default 5, 2 for short runs),
# SOAK_JOBS (pgbench threads; default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."

SOAK_SECONDS=${SOAK_SECONDS:-300}
SOAK_CLIENTS=${SOAK_CLIENTS:-16}
SOAK_JOBS=${SOAK_JOBS:-2}
SOAK_OUT=${SOAK_OUT:-test/soak/results}
SOAK_SAMPLE=${SOAK_SAMPLE:-$([ "$SOAK_SECONDS" -ge 120 ] && echo 5 || echo 2)}
SHARED=${SILVAN_SHARED:-../shared}
LGBM_MODEL=$SHARED/models/siboehm_lleaves/tests--models--airline--model.txt
export SILVAN_PGPORT=${SILVAN_PGPORT:-54331}
# XGBoost 1.7 fixtures: every kind of output, missing values, categorical
# splits, dart, parallel trees, 80 features, depth 12
FIXTURES=(binary_logistic binary_logitraw binary_hinge multi_softprob multi_softmax
	reg_squarederror count_poisson missing_nan categorical dart multi_parallel_tree
	wide_features deep_tree)
# script@weight: scoring about 60%, catalog writes about 35%
SCRIPTS=(scalar@30 table@14 query@10 load@8 replace@8 drop@8 schedule@8 explain@5 roles@9)
# memory: a backend may grow by this much between the medians of the run's
# second and last quarter.  Its working set (compiled code of the ~100 model
# names at the batch sizes it ran, two 2 MB feature buffers, a result
# tuplestore of up to work_mem) fills mostly in the first half: 1.5-4.5 MB
# of growth on 25-30 MB in a run of 30 s to 5 minutes.  A backend that
# keeps what it no longer uses (100 kB for each dropped model it scored)
# grows 8-16 MB in 5 minutes.
GROWTH_PCT=10
GROWTH_MB=6
# attacks: how late a refusal or a cancel may land, in seconds, under the load
ATTACK_LATE=${SOAK_ATTACK_LATE:-3}

source scripts/cluster.sh
PSQL=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1)
PASSED=0
FAILED=0
PGBENCH_RC=0
SAMPLER=
ATTACKER=
HOSTILE=
REFERENCES="XGBoost's own outputs, float32-exact"

# Print a line of the soak's own output
say() {
	echo "soak: $*"
}

# Count a check's outcome and print it: report <ok 0|1> <text>
report() {
	if [ "$1" = 0 ]; then
		PASSED=$((PASSED + 1))
		echo "ok    $2"
	else
		FAILED=$((FAILED + 1))
		echo "FAIL  $2"
	fi
}

# Stop unless SILVAN_PG_BIN's server has silvan installed; warn when the
# installed library is not the one this tree built
require_installed() {
	local share lib
	share=$("$PG_BIN/pg_config" --sharedir)
	lib=$("$PG_BIN/pg_config" --pkglibdir)
	if [ ! -f "$share/extension/silvan.control" ] || [ ! -f "$lib/silvan.so" ]; then
		echo "soak: silvan is not installed for $PG_BIN: run make install first" >&2
		exit 2
	fi
	if [ -f silvan.so ] && ! cmp -s silvan.so "$lib/silvan.so"; then
		say "warning: $lib/silvan.so is not this tree's silvan.so (run make install)"
	fi
}

# Start the cluster; on exit stop the sampler and the cluster, keeping the server log
start_cluster() {
	mkdir -p "$SOAK_OUT"
	rm -f "$SOAK_OUT"/{server.log,pgbench.log,rss.tsv,calls.tsv,after.tsv,.stop}
	SILVAN_PGOPTIONS="-c max_connections=$((SOAK_CLIENTS + 20)) ${SILVAN_PGOPTIONS:-}" cluster_start
	trap finish EXIT
}

# Exit handler: stop the sampler and the attacks, keep the server log, stop the cluster
finish() {
	stop_sampler
	[ -n "$ATTACKER" ] && kill "$ATTACKER" 2>/dev/null
	[ -n "${CLUSTER_DIR:-}" ] && cp "$CLUSTER_DIR/server.log" "$SOAK_OUT/server.log" 2>/dev/null
	cluster_stop
}

# Create the extension and schema soak: fixtures, LightGBM model, seeded names
setup_soak() {
	local fx
	"${PSQL[@]}" -c "CREATE EXTENSION silvan"
	"${PSQL[@]}" -f test/soak/setup.sql
	for fx in "${FIXTURES[@]}"; do
		"${PSQL[@]}" -v fx="$fx" -f test/soak/load_fixture.psql >/dev/null
	done
	if [ -f "$LGBM_MODEL" ]; then
		"${PSQL[@]}" -v fx=lleaves_airline -v path="$LGBM_MODEL" -f test/soak/load_lightgbm.psql >/dev/null
		REFERENCES+="; LightGBM: silvan's interpreter, exact"
	else
		say "no $LGBM_MODEL: LightGBM skipped"
	fi
	"${PSQL[@]}" -Atc "SELECT 'schedules checked: ' || soak.check_schedules(), 'names seeded: ' || soak.seed_names()"
	"${PSQL[@]}" -Atc "SELECT 'models: ' || string_agg(format('%s (%s, %s features)', name, format, features), ', ' ORDER BY name) FROM soak.fixture"
}

# Print the extension's version and the silvan.so that a backend mapped
# (after a call of silvan's has loaded it)
show_library() {
	"${PSQL[@]}" -Atc "SELECT silvan.drop_model('soak_none'),
		'silvan ' || (SELECT extversion FROM pg_extension WHERE extname = 'silvan') || ' from '
		|| (regexp_match(pg_read_file('/proc/self/maps'), '(/\S*silvan\.so)'))[1]" | cut -d'|' -f2
}

# Every SOAK_SAMPLE seconds until told to stop: "seconds pid RssAnon-kB" of
# every pgbench client backend, in rss.tsv
sample_rss() {
	local t0=$1 pid kb
	while [ ! -e "$SOAK_OUT/.stop" ]; do
		for pid in $("${PSQL[@]}" -Atc "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'" 2>/dev/null); do
			kb=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || continue
			[ -n "$kb" ] && printf '%s\t%s\t%s\n' "$(($(date +%s) - t0))" "$pid" "$kb"
		done
		sleep "$SOAK_SAMPLE"
	done >>"$SOAK_OUT/rss.tsv"
}

# Stop the sampler, if it runs
stop_sampler() {
	[ -n "$SAMPLER" ] || return 0
	touch "$SOAK_OUT/.stop"
	wait "$SAMPLER" 2>/dev/null || true
	SAMPLER=
}

# Run pgbench with the weighted scripts, sampling memory meanwhile; its
# report goes to pgbench.log
run_pgbench() {
	local args=() s
	for s in "${SCRIPTS[@]}"; do
		args+=(-f "test/soak/scripts/${s%@*}.sql@${s#*@}")
	done
	say "pgbench: $SOAK_CLIENTS clients, $SOAK_SECONDS s, ${SCRIPTS[*]}"
	sample_rss "$(date +%s)" &
	SAMPLER=$!
	set +e
	"$PG_BIN/pgbench" -n -c "$SOAK_CLIENTS" -j "$SOAK_JOBS" -T "$SOAK_SECONDS" -P 30 "${args[@]}" 2>&1 |
		tee "$SOAK_OUT/pgbench.log" | grep --line-buffered -E '^progress'
	PGBENCH_RC=${PIPESTATUS[0]}
	set -e
	stop_sampler
	grep -E '^(number of transactions|SQL script| - [0-9]+ transactions)' "$SOAK_OUT/pgbench.log" || true
}

# The SQLSTATE and seconds of one psql call: "state seconds" (state ok, or the error's)
attack_call() {
	local t0 t1 out state
	t0=$(date +%s.%N)
	out=$("$PG_BIN/psql" -X -At -v VERBOSITY=verbose "$@" 2>&1)
	t1=$(date +%s.%N)
	state=$(echo "$out" | grep -oE '^(ERROR|FATAL): +[0-9A-Z]{5}' | head -1 | grep -oE '[0-9A-Z]{5}$')
	echo "${state:-ok} $(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')"
}

# Until the run ends: the attacks, in turn; one line each in attacks.tsv
# ("kind state seconds [late]": late, for a cancel, the seconds from the
# cancel to the end)
attack_loop() {
	local end=$(($(date +%s) + SOAK_SECONDS)) i=0 tile blocks pid sent r w

	set +e						# an attack's psql fails, by design
	while [ "$(date +%s)" -lt "$end" ] && [ ! -e "$SOAK_OUT/.stop" ]; do
		i=$((i + 1))
		tile=$((64 * (1 + RANDOM % 64)))
		blocks="tile(batch, b0, b1, $tile); tile(tree, t0, t1, 32); reorder(b0, t0, b1, t1); specialize(t0); specialize(t1); codeWalk(t1, 63, branchy); fullCodegen()"
		case $((i % 5)) in
			0) echo "bomb $(attack_call -c "SELECT silvan.set_schedule('soak_bomb', 'tile(batch, b0, b1, 64); reorder(b0, tree, b1); specialize(tree); interleave(b1)')")" ;;
			1) echo "hostile_onnx $(attack_call -c "SELECT silvan.load_model('soak_hostile', pg_read_binary_file('$HOSTILE'))")" ;;
			2) r=$(attack_call -c "SET statement_timeout = '500ms'" -c "SELECT silvan.set_schedule('soak_blocks', '$blocks')")
			   echo "timeout $r $(awk -v s="${r#* }" 'BEGIN { printf "%.3f", s - 0.5 }')" ;;
			*)
				local how=$([ $((i % 5)) = 3 ] && echo cancel || echo terminate)
				PGAPPNAME=soak_attack "$PG_BIN/psql" -X -At -v VERBOSITY=verbose \
					-c "SELECT silvan.set_schedule('soak_blocks', '$blocks')" >"$SOAK_OUT/attack.out" 2>&1 &
				pid=$!
				for ((w = 0; w < 100; w++)); do
					[ -n "$("${PSQL[@]}" -Atc "SELECT 1 FROM pg_stat_activity WHERE application_name = 'soak_attack' AND state = 'active'")" ] && break
					sleep 0.1
				done
				sleep 0.5
				sent=$(date +%s.%N)
				"${PSQL[@]}" -Atc "SELECT pg_${how}_backend(pid) FROM pg_stat_activity WHERE application_name = 'soak_attack'" >/dev/null
				wait "$pid"
				r=$(grep -oE '^(ERROR|FATAL): +[0-9A-Z]{5}' "$SOAK_OUT/attack.out" | head -1 | grep -oE '[0-9A-Z]{5}$')
				echo "$how ${r:-ok} 0 $(awk -v a="$(date +%s.%N)" -v b="$sent" 'BEGIN { printf "%.3f", a - b }')" ;;
		esac
	done >>"$SOAK_OUT/attacks.tsv"
}

# Start the attacks beside the load: the models they use, the hostile file
start_attacks() {
	rm -f "$SOAK_OUT/attacks.tsv"
	HOSTILE=$(cd "$SOAK_OUT" && pwd)/hostile.onnx
	/usr/bin/python3 - "$HOSTILE" <<'PY'
import sys
sys.path.insert(0, "test/fuzz")
import make_decode_findings as f
open(sys.argv[1], "wb").write(f.onnx_model(f.regressor(b"\x2a\x00" * (15 * 2**20))))
PY
	chmod 644 "$HOSTILE"
	chmod o+x "$SOAK_OUT" 2>/dev/null || true
	"${PSQL[@]}" -Atc "SELECT silvan.load_model('soak_bomb', soak.generated_model(512, 2)) > 0,
		silvan.load_model('soak_blocks', soak.generated_model(960, 64)) > 0" >/dev/null
	attack_loop &
	ATTACKER=$!
}

# Check 5: every attack ended as it must, in time
check_attacks() {
	local bad total
	wait "$ATTACKER" 2>/dev/null || true
	ATTACKER=
	awk '{ n[$1]++; s[$1 " " $2]++ } END { for (k in s) print "soak: attack " k ": " s[k] }' "$SOAK_OUT/attacks.tsv" | sort
	total=$(wc -l <"$SOAK_OUT/attacks.tsv")
	# a second, on an idle server (test/trust); here two cores also serve the load
	bad=$(awk -v late="$ATTACK_LATE" '
		$1 == "bomb" && !($2 == "54000" && $3 < late) { print; next }
		$1 == "hostile_onnx" && !($2 == "54000" && $3 < 2 * late) { print; next }
		$1 == "timeout" && !(($2 == "57014" && $4 < late) || $2 == "ok") { print; next }
		$1 == "cancel" && !(($2 == "57014" && $4 < late) || $2 == "ok") { print; next }
		$1 == "terminate" && !(($2 == "57P01" && $4 < late) || $2 == "ok") { print; next }
	' "$SOAK_OUT/attacks.tsv" | tee /dev/stderr | wc -l)
	report $([ "$bad" = 0 ] && [ "$total" -gt 0 ] && echo 0 || echo 1) \
		"check 5: $total attacks (compile bombs, timeouts, cancels and terminates during compiles, hostile ONNX); $bad ended otherwise or late"
}

# Check 1: no "terminated by signal", PANIC, TRAP, failed exit or warning in
# the server log; no pgbench client aborted
check_crashes() {
	local log=$CLUSTER_DIR/server.log crashes warnings aborted
	crashes=$(grep -cE 'terminated by signal|was terminated|PANIC|TRAP|server process .* exited with exit code [1-9]' "$log" || true)
	warnings=$(grep -c 'WARNING' "$log" || true)
	aborted=$(grep -cE 'aborted|Run was aborted' "$SOAK_OUT/pgbench.log" || true)
	grep -E 'terminated by signal|was terminated|PANIC|TRAP|exited with exit code|WARNING' "$log" | head -20 || true
	grep -E 'aborted' "$SOAK_OUT/pgbench.log" | head -5 || true
	CRASHES=$crashes
	report $([ "$crashes$warnings$aborted" = 000 ] && [ "$PGBENCH_RC" = 0 ] && echo 0 || echo 1) \
		"check 1: $crashes crashes, $warnings warnings in the server log; $aborted pgbench clients aborted (pgbench exit $PGBENCH_RC)"
}

# Check 2: every recorded error is one of the SQLSTATEs its pool allows
check_errors() {
	local bad
	"${PSQL[@]}" -c "SELECT kind, count(*) AS calls, count(sqlstate) AS errors,
			string_agg(DISTINCT sqlstate, ' ') AS sqlstates, round(avg(ms)::numeric, 1) AS avg_ms,
			sum(checked) AS rows_checked, sum(wrong) AS wrong
		  FROM soak.calls GROUP BY kind ORDER BY kind"
	ERRORS=$("${PSQL[@]}" -Atc "SELECT coalesce(sum(n), 0) || ' errors' || coalesce(' (' || string_agg(format('%s: %s', s, n), ', ' ORDER BY s) || ')', '')
		  FROM (SELECT sqlstate AS s, count(*) AS n FROM soak.calls WHERE sqlstate IS NOT NULL GROUP BY 1) AS t")
	bad=$("${PSQL[@]}" -Atc "SELECT count(*) FROM soak.calls WHERE sqlstate IS NOT NULL AND NOT soak.allowed(kind, pool, sqlstate)")
	if [ "$bad" != 0 ]; then
		"${PSQL[@]}" -c "SELECT kind, pool, sqlstate, count(*), min(message) AS message FROM soak.calls
			WHERE sqlstate IS NOT NULL AND NOT soak.allowed(kind, pool, sqlstate) GROUP BY 1, 2, 3 ORDER BY 4 DESC"
	fi
	report $([ "$bad" = 0 ] && echo 0 || echo 1) "check 2: $ERRORS; $bad not allowed"
}

# Check 3: per client backend, the median RssAnon of the run's last quarter
# exceeds that of its second quarter by less than GROWTH_PCT% + GROWTH_MB
check_memory() {
	local t=$SOAK_SECONDS bad
	"${PSQL[@]}" -c "CREATE TABLE soak.rss (t int, pid int, kb bigint)" \
		-c "\\copy soak.rss FROM '$SOAK_OUT/rss.tsv'"
	"${PSQL[@]}" -c "CREATE TABLE soak.rss_growth AS
		SELECT pid, count(*) AS samples,
			   (array_agg(kb ORDER BY t))[1] / 1024 AS first_mb,
			   (array_agg(kb ORDER BY t DESC))[1] / 1024 AS last_mb,
			   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY kb) FILTER (WHERE t >= $t / 4.0 AND t < $t / 2.0)::numeric / 1024, 1) AS q2_mb,
			   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY kb) FILTER (WHERE t >= $t * 3 / 4.0)::numeric / 1024, 1) AS q4_mb
		  FROM soak.rss GROUP BY pid" \
		-c "SELECT *, q4_mb - q2_mb AS growth_mb,
			   round(q2_mb * $GROWTH_PCT / 100.0 + $GROWTH_MB, 1) AS allowed_mb
		  FROM soak.rss_growth ORDER BY pid"
	bad=$("${PSQL[@]}" -Atc "SELECT count(*) FROM soak.rss_growth
		WHERE q2_mb IS NULL OR q4_mb IS NULL OR q4_mb - q2_mb >= q2_mb * $GROWTH_PCT / 100.0 + $GROWTH_MB")
	local backends
	backends=$("${PSQL[@]}" -Atc "SELECT count(*) FROM soak.rss_growth")
	GROWTH=$("${PSQL[@]}" -Atc "SELECT coalesce(max(q4_mb - q2_mb), 0) FROM soak.rss_growth")
	report $([ "$bad" = 0 ] && [ "$backends" -ge "$SOAK_CLIENTS" ] && echo 0 || echo 1) \
		"check 3: RssAnon of $backends client backends, max growth ${GROWTH} MB from the second to the last quarter (allowed: ${GROWTH_PCT}% + ${GROWTH_MB} MB); $bad grew more"
}

# Check 4: predictions checked during the run, and every model's afterwards
# (fresh loads and the survivors, in a new backend), equal the library's
check_predictions() {
	local during after
	during=$("${PSQL[@]}" -Atc "SELECT coalesce(sum(checked), 0) || ' rows, ' || coalesce(sum(wrong), 0) || ' differ'
		  FROM soak.calls WHERE kind LIKE 'predict%' AND pool <> 'swap'")
	"${PSQL[@]}" -c "CREATE TABLE soak.after AS SELECT * FROM soak.check_after()"
	"${PSQL[@]}" -c "SELECT fixture, count(DISTINCT model) AS models, sum(rows) AS rows, sum(differ) AS differ
		  FROM soak.after GROUP BY fixture ORDER BY fixture"
	"${PSQL[@]}" -c "SELECT * FROM soak.after WHERE differ > 0 ORDER BY model, fn, threads" | head -40
	after=$("${PSQL[@]}" -Atc "SELECT sum(rows) || ' rows, ' || sum(differ) || ' differ' FROM soak.after")
	PREDICTIONS=$after
	local wrong
	wrong=$("${PSQL[@]}" -Atc "SELECT (SELECT coalesce(sum(wrong), 0) FROM soak.calls)
		+ (SELECT coalesce(sum(differ), 0) FROM soak.after) + (SELECT (count(*) = 0)::int FROM soak.after)")
	report $([ "$wrong" = 0 ] && echo 0 || echo 1) \
		"check 4: predictions during the run: $during; afterwards: $after ($REFERENCES)"
}

# The summary line: counts of the run and of the checks
summary() {
	local transactions calls
	transactions=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$SOAK_OUT/pgbench.log")
	# a successful scalar transaction made one call per row it checked
	calls=$("${PSQL[@]}" -Atc "SELECT sum(CASE WHEN kind IN ('predict', 'predict_raw', 'predict_proba')
		AND sqlstate IS NULL THEN checked ELSE 1 END) FROM soak.calls")
	"${PSQL[@]}" -Atc "COPY soak.calls TO STDOUT" >"$SOAK_OUT/calls.tsv"
	"${PSQL[@]}" -Atc "COPY soak.after TO STDOUT" >"$SOAK_OUT/after.tsv"
	say "$SOAK_SECONDS s, $SOAK_CLIENTS clients, ${transactions:-0} transactions ($calls calls), $ERRORS, $CRASHES crashes, RssAnon max growth $GROWTH MB; predictions: $PREDICTIONS"
	echo "$PASSED passed, $FAILED failed"
}

require_installed
start_cluster
setup_soak
show_library
start_attacks
run_pgbench
check_crashes
check_errors
check_memory
check_predictions
check_attacks
summary
[ "$FAILED" = 0 ]
