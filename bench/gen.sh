#!/usr/bin/env bash
# bench/gen.sh — trace synthesis speed and scale (bench_gen.c). Args: build dir, shared dir.
set -eu
BUILD=$1
scratch=$(mktemp -d "${TMPDIR:-/tmp}/etk_bench_gen.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
"$BUILD/bench_gen" "$scratch"
# the command line path, timed end to end (process start, summary, printing)
for dp in 128 256; do
  /usr/bin/time -f "etkit gen --summary llama3-405b dp $dp: %e s wall, %M KB peak RSS" \
    "$BUILD/etkit" gen --model llama3-405b --tp 8 --pp 16 --dp $dp --global-batch 2048 --summary >/dev/null
done
