#!/usr/bin/env bash
# Run each fuzz target for a while on a scratch copy of its seed corpus.
#   test/fuzz/run.sh SECONDS TIMEOUT TARGET...
# The model readers' targets take inputs of up to $FUZZ_MAX_LEN bytes and
# allocations of up to $FUZZ_MODEL_MALLOC_MB (fuzz.mk).
# Prints one line per target, then "N passed, N failed"; fails on any finding.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=$1
timeout=$2
shift 2
dir=test/fuzz
build=$dir/build
passed=0
failed=0
lines=()
for t in "$@"; do
	scratch=$build/scratch/$t
	artifacts=$build/artifacts/$t
	log=$build/$t.log
	rm -rf "$scratch"
	mkdir -p "$scratch" "$artifacts"
	cp "$dir/corpus/$t"/* "$scratch"/
	corpora=("$scratch")
	[ -d "$dir/findings/$t" ] && corpora+=("$dir/findings/$t")
	limits=(-malloc_limit_mb=2048)
	case $t in
	xgboost_json | lightgbm_text | onnx)
		limits=(-malloc_limit_mb="${FUZZ_MODEL_MALLOC_MB:-18}" -max_len="${FUZZ_MAX_LEN:-524288}")
		;;
	esac
	echo "== fuzz_$t: ${seconds} s, log in $log"
	"$build/fuzz_$t" -max_total_time="$seconds" -timeout="$timeout" \
		-rss_limit_mb=2048 "${limits[@]}" -dict="$dir/$t.dict" \
		-artifact_prefix="$artifacts/" -print_final_stats=1 "${corpora[@]}" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	found=$(ls -t "$artifacts" 2>/dev/null | head -1)
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		lines+=("fuzz_$t: ok, ${runs:-?} runs in $seconds s, corpus $(ls "$scratch" | wc -l) inputs")
	else
		failed=$((failed + 1))
		grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz check failed|.*runtime error)' "$log" | head -5
		lines+=("fuzz_$t: FAILED (exit $rc), input ${found:+$artifacts/$found}, log $log")
	fi
done
printf '%s\n' "${lines[@]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
