# test/fuzz/fuzz.mk: libFuzzer targets for the model readers, the binary
# form and the schedule language
#
# The top-level Makefile includes this file; it also works alone, where
# PostgreSQL's headers are missing:
#
#   make fuzz-build                  build the targets into test/fuzz/build/
#   make fuzz                        build, then run each for FUZZ_SECONDS (60)
#   make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="schedule lightgbm_text"
#   make -f test/fuzz/fuzz.mk fuzz   the same without the top-level Makefile
#   test/fuzz/build/fuzz_lightgbm_text FILE...      replay inputs
#   bash test/fuzz/make_seeds.sh     regenerate the committed seed corpora
#
# Targets (test/fuzz/fuzz_<name>.c): xgboost_json, lightgbm_text, onnx,
# forest_binary (ForestDeserialize, what a backend loads from the
# catalog) and schedule (ScheduleParse).  The model targets check that a
# model that parses serializes, reloads, re-serializes to the same bytes
# and interprets to the same margins (fuzz_forest.c); the XGBoost one
# also that json-c reading the whole document gives the same forest or
# error.  The schedule and binary-form targets lower what they accept
# through the compiler's front half: MIR, tiling, HIR and representation
# buffers, no code generation (fuzz_lower.c).
#
# Each target runs on a scratch copy of its seed corpus (corpus/<name>),
# so the committed corpus stays small, plus findings/<name> (inputs that
# once failed, replayed every run), with its dictionary <name>.dict.  A
# crash, a sanitizer report (AddressSanitizer with LeakSanitizer,
# UndefinedBehaviorSanitizer, which aborts), a timeout (FUZZ_TIMEOUT s per
# input) or an allocation or RSS over 2048 MB fails the target and leaves
# the input in test/fuzz/build/artifacts/<name>/ and the log in
# test/fuzz/build/<name>.log.  Add the input to findings/<name> and a test
# to test/unit/test_fuzz_findings.c once it is fixed.
#
# The model readers hold themselves to a budget of 8 MB plus 4 bytes per
# byte of the model (include/silvan/decode_budget.h); their targets count
# the heap a parse holds at its peak and fail past that budget
# (FuzzCheckBudget), and run with inputs of at most FUZZ_MAX_LEN bytes
# and a single allocation of at most FUZZ_MODEL_MALLOC_MB, the budget of
# the largest input plus some slack, so a reader that sizes something by
# an unchecked count is stopped at the allocation.
#
# Needs on Debian 12: apt-get install clang-14 libclang-rt-14-dev
# libjson-c-dev libprotobuf-c-dev llvm-14-dev make.  libFuzzer itself (libclang_rt.fuzzer)
# and the sanitizer runtimes are in libclang-rt-14-dev, under
# /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux; clang-14 only recommends
# that package, so name it.  llvm-14-dev gives llvm-config-14 and the
# libLLVM-14 that the schedule target links (the representations hold
# their code generators).  Objects are our own, compiled by clang-14 with
# sanitizers and coverage under test/fuzz/build/obj; the normal build's
# objects are never touched.

FUZZ_CC ?= clang-14
FUZZ_CXX ?= clang++-14
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_TARGETS ?= xgboost_json lightgbm_text onnx forest_binary schedule
FUZZ_MAX_LEN ?= 524288
FUZZ_MODEL_MALLOC_MB ?= $(shell expr 8 + 4 \* $(FUZZ_MAX_LEN) / 1048576 + 8)
FUZZ_LLVM_CONFIG ?= $(or $(LLVM_CONFIG),llvm-config-14)

FUZZ_DIR = test/fuzz
FUZZ_BUILD = $(FUZZ_DIR)/build
FUZZ_SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -g -O1 -std=gnu11 -fno-omit-frame-pointer $(FUZZ_SANITIZE) \
	-Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers -Iinclude -I$(FUZZ_DIR) \
	$(shell $(FUZZ_LLVM_CONFIG) --cppflags) -I/usr/include/json-c
FUZZ_LLVM_LIBS = $(shell $(FUZZ_LLVM_CONFIG) --ldflags) \
	-lLLVM-$(shell $(FUZZ_LLVM_CONFIG) --version | cut -d. -f1) -lstdc++
# The runtime's C++ shim (llvm_errors.cpp), built as LLVM is
FUZZ_CXXFLAGS = -g -O1 -fno-omit-frame-pointer $(FUZZ_SANITIZE) -Wall -Wextra -Werror \
	-Wno-unused-parameter -Iinclude \
	$(filter -std=% -fno-exceptions -fno-rtti,$(shell $(FUZZ_LLVM_CONFIG) --cxxflags)) \
	$(shell $(FUZZ_LLVM_CONFIG) --cppflags)

# Library objects get coverage hooks; libFuzzer's main comes at link time
FUZZ_CORE_OBJS = $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(sort $(wildcard src/core/*.c src/core/onnx/*.c)))
# (not llvm_stubs.c: generated for silvan.so, which does not link LLVM)
FUZZ_COMPILER_OBJS = $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,\
	$(filter-out src/runtime/llvm_stubs.c,$(sort $(wildcard src/compiler/*.c src/runtime/*.c)))) \
	$(patsubst %.cpp,$(FUZZ_BUILD)/obj/%.o,$(sort $(wildcard src/runtime/*.cpp)))
FUZZ_BINS = $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))
FUZZ_HEADERS = $(wildcard include/silvan/*.h src/core/*.h) $(FUZZ_DIR)/fuzz.h

.PHONY: fuzz fuzz-build fuzz-clean
.PRECIOUS: $(FUZZ_BUILD)/obj/%.o

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	FUZZ_MAX_LEN=$(FUZZ_MAX_LEN) FUZZ_MODEL_MALLOC_MB=$(FUZZ_MODEL_MALLOC_MB) \
		bash $(FUZZ_DIR)/run.sh $(FUZZ_SECONDS) $(FUZZ_TIMEOUT) $(FUZZ_TARGETS)

fuzz-clean:
	rm -rf $(FUZZ_BUILD)

$(FUZZ_BUILD)/obj/%.o: %.c $(FUZZ_HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/obj/%.o: %.cpp $(FUZZ_HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# These two lower forests through the compiler's front half, which links
# LLVM and the C++ shim: clang++ links them, with UBSan's C++ runtime
$(FUZZ_BUILD)/fuzz_schedule $(FUZZ_BUILD)/fuzz_forest_binary: $(FUZZ_BUILD)/fuzz_%: \
		$(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_%.o $(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_forest.o \
		$(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_lower.o $(FUZZ_CORE_OBJS) $(FUZZ_COMPILER_OBJS)
	$(FUZZ_CXX) $(FUZZ_SANITIZE) -fsanitize=fuzzer -o $@ $^ $(FUZZ_LLVM_LIBS) -ljson-c -lprotobuf-c -lm -lpthread

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_%.o \
		$(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_forest.o $(FUZZ_CORE_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -ljson-c -lprotobuf-c -lm
