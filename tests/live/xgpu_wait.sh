#!/usr/bin/env bash
# xgpu_wait.sh — issue #11: cudaStreamWaitEvent between two GPUs of one process (xgpu_wait.c,
# etkit live --ranks 1 --gpus-per-process 2). A 64 MiB memset on the H100 preset's HBM takes
# M = 67,108,864 B / 3,350 GB/s = 20,032.5 -> 20,033 ns (as streams.sh). GPU 1's memset alone:
# M; after waiting for the event recorded behind GPU 0's memset (issued at the same virtual time):
# it starts at the event's time, so GPU 1's stream spans M + M = 40,066 ns. The wait is modelled
# by holding the host until the event (one note on stderr; docs/live.md).
# usage: bash tests/live/xgpu_wait.sh <etkit>
. "$(dirname "$0")/livelib.sh"
cuda_build $CUDA_CC "$T/xgpu_wait" "$HERE/xgpu_wait.c" -lcudart
sed 's/size: 8/size: 2/; s/live-ring8/live-ring2/' "$HERE/ring8.yaml" >"$T/ring2.yaml"
timeout 60 "$ETKIT" live --cluster "$T/ring2.yaml" --ranks 1 --gpus-per-process 2 --cpu-scale 0 -- "$T/xgpu_wait" \
  >"$T/out" 2>"$T/err" || fail "etkit live exited $?: $(tail -3 "$T/err")"
v() { sed -n "s/^$1 \([0-9]*\)$/\1/p" "$T/out"; }
[ "$(v alone)" = 20033 ] && ok "GPU 1's memset alone: 20,033 ns" || fail "alone: '$(v alone)' ns, want 20033"
[ "$(v wait)" = 40066 ] && ok "GPU 1 waits for GPU 0's event, then its memset: 40,066 ns = 2 x 20,033" ||
  fail "wait: '$(v wait)' ns, want 40066"
grep -q "cudaStreamWaitEvent between GPUs (0 -> 1): modelled by holding the host" "$T/err" &&
  ok "the approximation is said: $(grep -o 'cudaStreamWaitEvent between GPUs.*' "$T/err" | head -1)" ||
  fail "no note on stderr: $(tail -2 "$T/err")"
exit $((fails > 0))
