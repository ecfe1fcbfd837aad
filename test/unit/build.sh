#!/usr/bin/env bash
# Build one unit-test program out of tree, for working on a part alone.
#   test/unit/build.sh OUTDIR test/unit/test_x.c [sources...]
# Sources default to every file of src/core, src/compiler and src/runtime
# (the .cpp ones with g++, as LLVM is built).
set -euo pipefail
out=$1; test_src=$2; shift 2
srcs=("$@")
[ ${#srcs[@]} -gt 0 ] || srcs=(src/core/*.c src/compiler/*.c src/runtime/*.c src/runtime/*.cpp)
llvm_config=${LLVM_CONFIG:-llvm-config-14}
mkdir -p "$out"
cflags="-O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers -fPIC -Iinclude -Itest/unit $($llvm_config --cppflags) -I/usr/include/json-c"
objs=()
for s in "${srcs[@]}"; do
	[ -f "$s" ] || continue
	[ "$s" = src/runtime/llvm_stubs.c ] && continue	# silvan.so's way to LLVM; this links LLVM
	o="$out/$(echo "$s" | tr / _).o"
	case "$s" in
	*.cpp) g++ -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -fPIC -Iinclude $($llvm_config --cxxflags) -c "$s" -o "$o" ;;
	*) gcc $cflags -c "$s" -o "$o" ;;
	esac
	objs+=("$o")
done
name=$(basename "$test_src" .c)
gcc $cflags -o "$out/$name" "$test_src" "${objs[@]}" $($llvm_config --ldflags) -lLLVM-14 -lstdc++ -ljson-c -lm -lpthread
echo "$out/$name"
