#!/usr/bin/env bash
# The attacks of the second trust review, against real servers: compile
# bombs and cancels during a compile, the decoders' memory by format, the
# AMDGPU link against a local racer, the tuning queue, a server without
# silvan_llvm.so.  Each script starts
# and stops its own cluster and prints "N passed, N failed"; so does this,
# over all of them.  A script that runs past TRUST_SCRIPT_SECONDS (default
# 600) is ended and counts as a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
passed=0
failed=0
for script in compile_bombs decode_memory link_race tuning_queue llvm_missing; do
	echo "== test/trust/$script.sh"
	log=$(mktemp)
	timeout -k 10 "${TRUST_SCRIPT_SECONDS:-600}" bash "test/trust/$script.sh" 2>&1 | tee "$log" | sed -u 's/^/  /'
	status=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
	rm -f "$log"
	if [ -z "$line" ]; then
		[ "$status" -eq 124 ] && echo "test/trust/$script.sh: ran past ${TRUST_SCRIPT_SECONDS:-600} s"
		failed=$((failed + 1))
		continue
	fi
	passed=$((passed + $(echo "$line" | awk '{print $1}')))
	failed=$((failed + $(echo "$line" | awk '{print $3}')))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
