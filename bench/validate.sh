#!/usr/bin/env bash
# validate.sh — read + validate + info throughput (bench_validate): a synthetic 8-rank workload
# of 2 M nodes and the real Chakra CNN trace. Figures go to bench/RESULTS.md (## validate).
# usage: bash bench/validate.sh <build-dir> <shared-dir>
set -eu
BUILD=$1
"$BUILD/bench_validate" 8 250000
