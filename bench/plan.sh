#!/usr/bin/env bash
# bench/plan.sh — `etkit plan` speed: llama3-70b on 1,024 H100 (128 dgx-h100 nodes), global batch
# 512, the full default space, with -j 1, -j 2 and (when etkit has MPI) mpirun -np 2; the CSVs
# must be identical. Args: build dir, shared dir. bench/RESULTS.md "## plan", "## s22-plan".
set -u
BUILD=$1
E=$BUILD/etkit
scratch=$(mktemp -d "${TMPDIR:-/tmp}/etk_bench_plan.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
A="--model llama3-70b --global-batch 512 --cluster dgx-h100 --nodes 128 --quiet"
# each run in a session of its own (a CFS autogroup: the kernel shares the CPU between sessions
# first, so runs in one session would hold each other back; bench/RESULTS.md "## plan")
S=""; command -v setsid >/dev/null && S="setsid -w"
for j in 1 2; do
  $S /usr/bin/time -f "etkit plan -j $j: %e s wall, %U s user, %S s system, %M KB peak RSS" \
    "$E" plan $A -j $j --csv "$scratch/j$j.csv" | head -1
done
if command -v mpirun >/dev/null && ldd "$E" 2>/dev/null | grep -q libmpi; then
  $S /usr/bin/time -f "mpirun -np 2 etkit plan: %e s wall, %U s user, %S s system (both processes)" \
    mpirun --allow-run-as-root --oversubscribe -np 2 "$E" plan $A --csv "$scratch/np2.csv" | head -1
  cmp -s "$scratch/j1.csv" "$scratch/np2.csv" || { echo "plan: CSV of -np 2 differs from -j 1"; exit 1; }
fi
cmp -s "$scratch/j1.csv" "$scratch/j2.csv" || { echo "plan: CSV of -j 2 differs from -j 1"; exit 1; }
echo "CSV identical"
