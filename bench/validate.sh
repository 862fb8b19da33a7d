#!/usr/bin/env bash
# validate.sh — read + validate + info throughput (bench_validate): synthetic workloads of
# 2 M nodes on 8 and on 1024 ranks, the real Chakra CNN trace, and validation alone of 2 M nodes
# in memory on 8 to 65,536 ranks. Figures go to bench/RESULTS.md (## validate).
# usage: bash bench/validate.sh <build-dir> <shared-dir>
set -eu
BUILD=$1
"$BUILD/bench_validate" 8 250000
"$BUILD/bench_validate" 1024 2000
"$BUILD/bench_validate" 32768 64 mem
"$BUILD/bench_validate" 8 250000 mem
"$BUILD/bench_validate" 4096 512 mem
"$BUILD/bench_validate" 65536 32 mem
