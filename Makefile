# etkit top-level Makefile. `make run` installs what is missing, builds and runs the main job;
# `make check` runs every test, then all again under ASan+UBSan. See README.md.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
SHARED     ?= ../shared
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
ETKIT      = $(BUILD)/etkit

.PHONY: all deps build run check test test-asan bench fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@bash scripts/run-main.sh $(ETKIT) $(SHARED)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DETK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

check: test test-asan
	@echo "make check: all tests passed (plain and ASan+UBSan)"

bench: build
	@cmake --build $(BUILD) --target benches -j $(JOBS)
	@bash bench/run.sh $(BUILD) $(SHARED)

fuzz: deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DETK_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETK_SHARED_DIR=$(abspath $(SHARED)) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@bash tests/fuzz/run.sh $(FUZZ_BUILD) $(SHARED) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
