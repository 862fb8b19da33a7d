#!/usr/bin/env bash
# live.sh — live mode's speed (issue #11; bench/RESULTS.md "live"): wall and CPU time of
#   1. test (a)'s sweep (tests/live/nccl_sweep.cu) on 64 ranks, dgx-h100 x 8 nodes, 8 B - 1 GiB;
#   2. test (b)'s DP loop (tests/live/dp_train.cu) on 256 ranks, dgx-h100 x 32 nodes;
#   3. the per-call overhead: one rank making N cudaMemsetAsync calls, then one synchronize
#      (CPU of the rank and the coordinator together / N);
#   4. one process driving 8 GPUs (tests/live/nccl_multi.cu, ncclCommInitAll).
# All with --cpu-scale 0. Needs the CUDA toolkit (nvcc) to build the programs.
# usage: bash bench/live.sh [build/etkit] [N calls, default 200000]
set -u
ETKIT=${1:-build/etkit}
N=${2:-200000}
CUDA=${CUDA:-/usr/local/cuda}
HERE=$(cd "$(dirname "$0")/../tests/live" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
[ -x "$CUDA/bin/nvcc" ] || { echo "no nvcc at $CUDA/bin: cannot build the programs"; exit 77; }
"$CUDA/bin/nvcc" -cudart shared -o "$T/sweep" "$HERE/nccl_sweep.cu" -lnccl || exit 1
"$CUDA/bin/nvcc" -cudart shared -o "$T/dp" "$HERE/dp_train.cu" -lcublas -lnccl || exit 1
"$CUDA/bin/nvcc" -cudart shared -I"$HERE" -o "$T/multi" "$HERE/nccl_multi.cu" -lnccl || exit 1
cat >"$T/calls.c" <<'C'
#include <cuda_runtime.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    void *p;
    cudaMalloc(&p, 4096);
    for (long i = 0; i < n; i++)
        cudaMemsetAsync(p, 0, 4096, 0);
    return cudaDeviceSynchronize() != cudaSuccess;
}
C
cc -std=c11 -I"$CUDA/include" -o "$T/calls" "$T/calls.c" -L"$CUDA/lib64" -lcudart || exit 1
run() { # LABEL ARGS...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$T/time" "$ETKIT" live --cpu-scale 0 "$@" >"$T/out" 2>"$T/err" ||
    { echo "$label: failed: $(tail -3 "$T/err")"; return; }
  read -r wall user sys <"$T/time"
  printf '%-44s wall %7.2f s  CPU %7.2f s  %s\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" \
    "$(sed -n 's/^step time *\([0-9,]*\) ns.*/step \1 ns/p' "$T/err")"
}
run "(a) sweep, 64 ranks (8 x dgx-h100)" --cluster dgx-h100 --nodes 8 --ranks 64 -- "$T/sweep"
run "(b) DP loop, 256 ranks (32 x dgx-h100)" --cluster dgx-h100 --nodes 32 --ranks 256 -- "$T/dp"
run "1 process x 8 GPUs, ncclCommInitAll" --ranks 1 --gpus-per-process 8 -- "$T/multi" all
run "$N cudaMemsetAsync, 1 rank" --ranks 1 -- "$T/calls" "$N"
echo "per call: $(echo "scale=2; ($(cut -d' ' -f2 "$T/time") + $(cut -d' ' -f3 "$T/time")) * 1000000 / $N" | bc) us of CPU (rank + coordinator)"
