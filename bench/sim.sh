#!/usr/bin/env bash
# bench/sim.sh — simulator benchmarks (make bench): node events per second unfolded, the 1 MiB
# halving-doubling all-reduce on 4,096 and 16,384 ranks (each in its own process so peak memory
# is per case), and `etkit run` for llama3-405b on 16,384 H100s folded. Record in bench/RESULTS.md.
# usage: bash bench/sim.sh <build-dir> <shared-dir>
set -u
BUILD=$1
rc=0
"$BUILD/bench_sim" events || rc=1
"$BUILD/bench_sim" hd4096 || rc=1
"$BUILD/bench_sim" hd16384 || rc=1
t0=$(date +%s.%N)
"$BUILD/etkit" run --model llama3-405b --tp 8 --pp 16 --dp 128 --sp --global-batch 2048 \
  --cluster dgx-h100 --nodes 2048 >"${TMPDIR:-/tmp}/etk_bench_run.txt" || rc=1
t1=$(date +%s.%N)
step=$(grep '^step time' "${TMPDIR:-/tmp}/etk_bench_run.txt")
echo "sim: etkit run llama3-405b, 16,384 H100 (tp 8, pp 16, dp 128, seq 8192, global batch 2048), folded: $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s wall; $step"
exit $rc
