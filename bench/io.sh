#!/usr/bin/env bash
# bench/io.sh — trace I/O throughput and peak memory (bench_io.c), run by `make bench` as
#   bash bench/io.sh <build-dir> <shared-dir>
# Prints MB/s for read, read + index + check, encode, write, and peak memory / file size, on
# the real converted_cnn_ddp.0.et and a synthetic 1M-node trace; compare with bench/RESULTS.md.
set -eu
BUILD=$1; SHARED=$2
[ -x "$BUILD/bench_io" ] || cmake --build "$BUILD" --target bench_io >/dev/null
"$BUILD/bench_io" "$(cd "$SHARED" && pwd)"
