# silvan: tree-ensemble inference compiled inside PostgreSQL
EXTENSION = silvan
EXTVERSION = $(shell grep default_version $(EXTENSION).control | sed -e "s/default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/")

MODULE_big = silvan
# released versions: their install scripts (frozen) and every upgrade script
DATA = $(wildcard sql/*--*--*.sql) sql/$(EXTENSION)--0.1.0.sql sql/$(EXTENSION)--0.2.0.sql sql/$(EXTENSION)--0.3.0.sql sql/$(EXTENSION)--0.4.0.sql sql/$(EXTENSION)--0.5.0.sql sql/$(EXTENSION)--0.6.0.sql sql/$(EXTENSION)--0.7.0.sql sql/$(EXTENSION)--0.8.0.sql sql/$(EXTENSION)--0.9.0.sql sql/$(EXTENSION)--0.10.0.sql sql/$(EXTENSION)--0.11.0.sql
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql

# The core, compiler and runtime include no postgres.h; src/pg is the adapter
# The ONNX reader's protobuf decoder is generated (make onnx-proto) and committed
ONNX_PB_SRCS = src/core/onnx/onnx-ml-subset.pb-c.c
# llvm_stubs.c is generated (scripts/llvm_stubs.sh), for silvan.so alone
LLVM_STUBS_SRC = src/runtime/llvm_stubs.c
CORE_SRCS = $(filter-out $(LLVM_STUBS_SRC),$(sort $(wildcard src/core/*.c src/compiler/*.c src/tune/*.c src/runtime/*.c))) $(ONNX_PB_SRCS)
CORE_CXX_SRCS = $(sort $(wildcard src/runtime/*.cpp))
PG_SRCS = $(sort $(wildcard src/pg/*.c))
CORE_C_OBJS = $(CORE_SRCS:.c=.o)
PG_OBJS = $(PG_SRCS:.c=.o)
# silvan's C++ shims of LLVM: built into silvan_llvm.so, which links LLVM and
# is loaded on the first compile (src/runtime/llvm_load.c)
LLVM_SHIM_OBJS = $(CORE_CXX_SRCS:.cpp=.o)
# Programs that link LLVM directly (unit tests, fuzzers, benchmarks) take these
CORE_OBJS = $(CORE_C_OBJS) $(LLVM_SHIM_OBJS)
# silvan.so: no LLVM; its calls into LLVM go through the generated stubs
OBJS = $(CORE_C_OBJS) $(PG_OBJS) $(LLVM_STUBS_SRC:.c=.o)
LLVM_MODULE = silvan_llvm.so

# Link the LLVM that PostgreSQL's own JIT links (pg_config --configure)
PG_CONFIG ?= pg_config
LLVM_CONFIG ?= $(shell $(PG_CONFIG) --configure | tr ' ' '\n' | grep LLVM_CONFIG= | sed -e "s/'//g" -e 's/LLVM_CONFIG=//')
ifeq ($(LLVM_CONFIG),)
LLVM_CONFIG = llvm-config-14
endif
# override: PGXS's Makefile.global sets these as well, empty for a server built without LLVM
override LLVM_CONFIG := $(LLVM_CONFIG)
override LLVM_CPPFLAGS := $(shell $(LLVM_CONFIG) --cppflags)
override LLVM_LIBS := $(shell $(LLVM_CONFIG) --ldflags) -lLLVM-$(shell $(LLVM_CONFIG) --version | cut -d. -f1)

PG_CPPFLAGS = -I$(srcdir)/include $(LLVM_CPPFLAGS) -I/usr/include/json-c -DSILVAN_VERSION='"$(EXTVERSION)"'
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
# The C++ shim (llvm_errors.cpp) is built as LLVM is: its -std, no exceptions
PG_CXXFLAGS = $(filter -std=% -fno-exceptions -fno-rtti,$(shell $(LLVM_CONFIG) --cxxflags)) -Wextra -Werror -Wno-unused-parameter
override LLVM_LIBDSO := $(shell $(LLVM_CONFIG) --libdir)/libLLVM-$(shell $(LLVM_CONFIG) --version | cut -d. -f1).so
SHLIB_LINK = -ljson-c -lprotobuf-c -lm -lpthread -ldl

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/[0-9]*_*.sql)))
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)
ISOLATION = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
ISOLATION_OPTS = --load-extension=$(EXTENSION)

EXTRA_CLEAN = test/unit/bin results regression.diffs regression.out src/*/*.bc $(LLVM_STUBS_SRC) $(LLVM_MODULE)

# No bitcode for PostgreSQL's inliner: our objects are compiled code, not SQL helpers
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

srcdir ?= .

# Rebuild everything when a header changes (struct layouts are shared)
$(OBJS) $(LLVM_SHIM_OBJS): $(wildcard include/silvan/*.h src/pg/*.h src/core/*.h)

# LLVM beside silvan.so, and the stubs silvan.so reaches it through
all: $(LLVM_MODULE)

$(LLVM_MODULE): $(LLVM_SHIM_OBJS)
	$(CXX) $(CXXFLAGS) -shared -o $@ $^ $(LDFLAGS) $(LDFLAGS_SL) $(LLVM_LIBS) -lstdc++ -lpthread

$(LLVM_STUBS_SRC): scripts/llvm_stubs.sh $(CORE_C_OBJS) $(PG_OBJS) $(LLVM_SHIM_OBJS)
	bash scripts/llvm_stubs.sh $(LLVM_LIBDSO) "$(LLVM_SHIM_OBJS)" $(CORE_C_OBJS) $(PG_OBJS) > $@.tmp
	mv $@.tmp $@

install: install-llvm-module
uninstall: uninstall-llvm-module
.PHONY: install-llvm-module uninstall-llvm-module
install-llvm-module: $(LLVM_MODULE) installdirs
	$(INSTALL_SHLIB) $(LLVM_MODULE) '$(DESTDIR)$(pkglibdir)/$(LLVM_MODULE)'
uninstall-llvm-module:
	rm -f '$(DESTDIR)$(pkglibdir)/$(LLVM_MODULE)'

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	cp $< $@

# ---- C unit tests of the core (no server) ----
UNIT_SRCS = $(sort $(wildcard test/unit/test_*.c))
UNIT_BINS = $(patsubst test/unit/%.c,test/unit/bin/%,$(UNIT_SRCS))
UNIT_CFLAGS = -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers -fPIC -Iinclude -Itest/unit $(LLVM_CPPFLAGS) -I/usr/include/json-c

test/unit/bin/%: test/unit/%.c test/unit/unit.h $(CORE_OBJS)
	@mkdir -p test/unit/bin
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(CORE_OBJS) $(LLVM_LIBS) -lstdc++ -ljson-c -lprotobuf-c -lm -lpthread

# GPU timing on a CUDA device (built by test/device/pack.sh, run by test/device/run.sh)
test/bench/build/bench_gpu: test/bench/bench_gpu.c $(CORE_OBJS)
	@mkdir -p test/bench/build
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(CORE_OBJS) $(LLVM_LIBS) -lstdc++ -ljson-c -lprotobuf-c -lm -lpthread

.PHONY: unittest bench bench-citus fixtures onnx-proto doctest
unittest: $(UNIT_BINS)
	@fail=0; for t in $(UNIT_BINS); do echo "== $$t"; $$t || fail=1; done; exit $$fail

# The examples of README.md and docs/*.md (or DOCS=FILE.md ...) against the
# installed extension on a throwaway cluster (test/docs/README.md)
doctest:
	bash test/docs/run.sh $(DOCS)

bench: all
	bash test/bench/run.sh

bench-citus: all
	bash test/bench/citus.sh

fixtures:
	/usr/bin/python3 test/fixtures/make_fixtures.py

# Regenerate the ONNX decoder (needs protobuf-c-compiler); commit the result
onnx-proto:
	cd src/core/onnx && protoc-c --c_out=. onnx-ml-subset.proto

onnx-fixtures:
	/usr/bin/python3 test/fixtures/make_onnx_fixtures.py
-include test/soak/soak.mk
-include test/fuzz/fuzz.mk
