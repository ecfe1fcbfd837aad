# Shared by the attack tests of test/trust: a session run in the
# background whose end can be timed, and the generated models.
# Source after test/check.sh and scripts/cluster.sh.

# Seconds since the epoch, with fractions
now() {
	date +%s.%N
}

# a - b in seconds, three decimals
seconds_between() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'
}

# Is a <= b (numbers)?
at_most() {
	awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b) ? "yes" : "no (" a " > " b ")" }'
}

# Start SQL in a background session named $1 (application_name); its
# output goes to $SESSION_DIR/$1.out, its end time to $SESSION_DIR/$1.end
session_start() {
	local name=$1 sql=$2
	rm -f "$SESSION_DIR/$name".*
	(
		PGAPPNAME=$name psql -X -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c "$sql" \
			>"$SESSION_DIR/$name.out" 2>&1
		now >"$SESSION_DIR/$name.end"
	) &
	eval "SESSION_PID_$name=$!"
}

# The backend pid of session $1, waiting up to 10 s for it to be active
# (polled often: a cancel timed from here must not come late)
session_backend() {
	local name=$1 pid=
	for ((i = 0; i < 500; i++)); do
		pid=$(psql -XAtq -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$name' AND state = 'active'")
		[ -n "$pid" ] && break
		sleep 0.02
	done
	echo "$pid"
}

# Send pg_cancel_backend ($1 = cancel) or pg_terminate_backend ($1 =
# terminate) to backend $2; prints when the server sent the signal (the
# server's clock, this host's: the client's connection time is not counted)
signal_backend() {
	psql -XAtq -c "SELECT extract(epoch FROM clock_timestamp()) FROM pg_catalog.pg_${1}_backend($2)"
}

# Wait for session $1 to end
session_wait() {
	local pid_var="SESSION_PID_$1"
	wait "${!pid_var}" 2>/dev/null
}

# The SQLSTATE session $1 ended with (from psql's verbose error line), or "ok"
session_sqlstate() {
	local state
	state=$(grep -oE '^(ERROR|FATAL): +[0-9A-Z]{5}' "$SESSION_DIR/$1.out" | head -1 | grep -oE '[0-9A-Z]{5}$')
	[ -n "$state" ] && echo "$state" || { grep -q "terminat" "$SESSION_DIR/$1.out" && echo terminated || echo ok; }
}

# A SQL function generated_model(trees, leaves) that writes a LightGBM
# model of complete trees (leaves a power of two) over four features
define_model_generator() {
	psql -XAtq -v ON_ERROR_STOP=1 -f test/trust/generated_model.sql >/dev/null
}
