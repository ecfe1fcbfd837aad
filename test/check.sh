# Counting checks for the shell tests (test/cron/retune.sh,
# test/preload/preloaded.sh): source it, call check for each, end with
# check_summary, whose last line is "N passed, N failed" and whose status
# says whether every check passed.
passed=0
failed=0

# check NAME GOT WANT: passes when GOT equals WANT
check() {
	if [ "$2" = "$3" ]; then
		passed=$((passed + 1))
		echo "ok: $1"
	else
		failed=$((failed + 1))
		echo "FAILED: $1: got '$2', want '$3'"
	fi
}

# Print the totals; fail when any check failed
check_summary() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
