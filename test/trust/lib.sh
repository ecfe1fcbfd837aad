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
session_backend() {
	local name=$1 pid=
	for ((i = 0; i < 100; i++)); do
		pid=$(psql -XAtq -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$name' AND state = 'active'")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	echo "$pid"
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

# A SQL function text(trees, leaves) that writes a LightGBM model of
# complete trees (leaves a power of two) over four features
define_model_generator() {
	psql -XAtq -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE FUNCTION generated_model(trees int, leaves int) RETURNS text LANGUAGE sql AS $$
SELECT E'tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n' ||
       E'max_feature_idx=3\nobjective=regression\nfeature_names=a b c d\n' ||
       E'feature_infos=[-1:1] [-1:1] [-1:1] [-1:1]\n\n' ||
       string_agg(format(E'Tree=%s\nnum_leaves=%s\nnum_cat=0\nsplit_feature=%s\nsplit_gain=%s\n' ||
                         E'threshold=%s\ndecision_type=%s\nleft_child=%s\nright_child=%s\n' ||
                         E'leaf_value=%s\nshrinkage=1\n\n',
                         t, leaves,
                         (SELECT string_agg(((t + s) % 4)::text, ' ') FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg('1', ' ') FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg(round(((t * 7 + s * 3) % 17) / 17.0 - 0.5, 4)::text, ' ')
                            FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg('2', ' ') FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg(CASE WHEN 2 * s + 1 < leaves - 1 THEN 2 * s + 1
                                                 ELSE -(2 * s + 1 - (leaves - 1)) - 1 END::text, ' ')
                            FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg(CASE WHEN 2 * s + 2 < leaves - 1 THEN 2 * s + 2
                                                 ELSE -(2 * s + 2 - (leaves - 1)) - 1 END::text, ' ')
                            FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg((((t + l) % 9) * 0.125 - 0.5)::text, ' ')
                            FROM generate_series(0, leaves - 1) l)), '' ORDER BY t) ||
       E'end of trees\n'
  FROM generate_series(0, trees - 1) AS t
$$;
SQL
}
