# etkit top-level Makefile. `make run` installs what is missing, builds and runs the main job;
# `make check` runs every test, then all again under ASan+UBSan. See README.md.
# The project's own builds (build, test, check, CI) treat warnings as errors (WERROR=ON); a plain
# `cmake -S . -B build` does not. `make install PREFIX=/usr/local DESTDIR=...` installs the
# command, libetkit.so, the headers and etkit.pc.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
SHARED     ?= ../shared
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
WERROR     ?= ON
PREFIX     ?= /usr/local
REL_BUILD  ?= build-release
CLANG_BUILD ?= build-clang
ETKIT      = $(BUILD)/etkit

.PHONY: all deps build man run check test test-asan bench fuzz clean install release-check clang-check

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DETK_WERROR=$(WERROR) -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# man pages from the help texts (build/man/etkit*.1; also built by `make build`)
man: build
	@cmake --build $(BUILD) --target man

run: build
	@bash scripts/run-main.sh $(ETKIT) $(SHARED)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DETK_SANITIZE=ON -DETK_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=Debug -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

check: test test-asan release-check
	@echo "make check: all tests passed (plain and ASan+UBSan)"

bench: build
	@cmake --build $(BUILD) --target benches -j $(JOBS)
	@bash bench/run.sh $(BUILD) $(SHARED)

fuzz: deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DETK_FUZZ=ON -DETK_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@bash tests/fuzz/run.sh $(FUZZ_BUILD) $(SHARED) $(FUZZ_SECONDS)

# a user's build: plain cmake, Release (-O3: more warnings than -O2), gcc; warnings as errors
# here so a new one fails the project's checks (a user's build never gets -Werror)
release-check: deps
	@CC=gcc cmake -S . -B $(REL_BUILD) -DCMAKE_BUILD_TYPE=Release -DETK_WERROR=ON -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(REL_BUILD) -j $(JOBS) --target etkit_cli etkit_shared
	@echo "make release-check: Release build (gcc) warning-free"

# the same with clang (the library and the command)
clang-check: deps
	@CC=clang cmake -S . -B $(CLANG_BUILD) -DCMAKE_BUILD_TYPE=Release -DETK_WERROR=ON -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(CLANG_BUILD) -j $(JOBS) --target etkit_cli etkit_shared
	@echo "make clang-check: Release build (clang) warning-free"

install: build
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target etkit_cli etkit_shared
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(REL_BUILD) $(CLANG_BUILD)
