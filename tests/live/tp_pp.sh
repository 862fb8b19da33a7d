#!/usr/bin/env bash
# tp_pp.sh — issue #11 test (c): tensor x pipeline parallelism (tp_pp.cu: ncclCommSplit into 4 TP
# pairs and 2 pipelines of 4 stages, grouped send/recv between stages) under `etkit live
# --ranks 8` on tests/live/ring8.yaml, --compute roofline, --cpu-scale 0. Closed form
# (docs/live.md): GEMM G = floor(2 x 2048^3 / 989e12 s) = 17,370 ns; TP all-reduce of 8 MiB on 2
# ranks 2a + S/B = 85,886 ns; stage-to-stage send (ring distance 2) 2a + S/B = 85,886 ns. With
# M = 4 micro-batches and P = 4 stages, the first stage's step is M (G + AR + X) = 756,568 ns and
# the last stage's first step (M + P - 2)(G + AR + X) + G + AR = 1,238,108 ns. The record
# replays to the ns and names the split groups.
# usage: bash tests/live/tp_pp.sh <etkit>
. "$(dirname "$0")/livelib.sh"
# nvcc where the toolkit is, else a C compiler against etkit's own headers (no kernels in it)
if have_cuda; then cuda_build nvcc "$T/tp_pp" "$HERE/tp_pp.cu" -lcublas -lnccl
else cuda_build own "$T/tp_pp" "$HERE/tp_pp.cu" -lcublas -lnccl; fi
timeout 120 "$ETKIT" live --cluster "$HERE/ring8.yaml" --ranks 8 --cpu-scale 0 --compute roofline --record "$T/rec" \
  -- "$T/tp_pp" >"$T/out" 2>"$T/err" || fail "etkit live exited $?: $(tail -3 "$T/err")"
G=17370 AR=85886 X=85886 M=4 P=4
first=$((M * (G + AR + X))); last=$(((M + P - 2) * (G + AR + X) + G + AR))
got0=$(awk '$2 == 0 {print $4}' "$T/out" | sort -u); got7=$(awk '$2 == 7 {print $4; exit}' "$T/out")
[ "$got0" = "$first" ] && ok "first stage: 2 steps of $got0 ns = M (G + AR + X)" || fail "rank 0: '$got0', want $first"
[ "$got7" = "$last" ] && ok "last stage, first step: $got7 ns = (M + P - 2)(G + AR + X) + G + AR" ||
  fail "rank 7: '$got7', want $last"
grep -Eq '^SEND_RECV +p2p +2 +1 +48 ' "$T/err" && ok "48 sends (3 stage boundaries x 2 pipelines x 4 x 2 steps)" ||
  fail "send count: $(grep SEND_RECV "$T/err")"
grep -Eq '^ALL_REDUCE +\S+ +2 +4 +8 ' "$T/err" && ok "all-reduce on 4 TP pairs, 8 each" ||
  fail "all-reduce groups: $(grep ALL_REDUCE "$T/err")"
grep -q '"nccl:id0.0sc0": \[0, 1\]' "$T/rec.json" && grep -q '"nccl:id0.1sc1": \[1, 3, 5, 7\]' "$T/rec.json" &&
  ok "split groups recorded: TP {0,1}, pipeline {1,3,5,7}" || fail "groups: $(cat "$T/rec.json")"
step() { sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p' "$1"; }
"$ETKIT" sim "$T/rec" --cluster "$HERE/ring8.yaml" --compute roofline >"$T/sim" 2>&1
[ -n "$(step "$T/sim")" ] && [ "$(step "$T/err")" = "$(step "$T/sim")" ] &&
  ok "etkit sim of the record: $(step "$T/sim") ns = live" || fail "live $(step "$T/err"), sim $(step "$T/sim")"
exit $((fails > 0))
