#!/usr/bin/env bash
# dp_train.sh — issue #11 test (b): the data-parallel loop (dp_train.cu: four BF16 GEMMs of
# 4096^3 through cuBLAS, an all-reduce of 32 MiB through NCCL, a straggler rank with one extra
# kernel) under `etkit live --ranks 8` on tests/live/ring8.yaml with --compute roofline and
# --cpu-scale 0. Closed form (docs/live.md): GEMM g = floor(2 x 4096^3 / 989e12 s) = 138,967 ns,
# all-reduce 14,000 + 1.75 x 33,554,432 / 100 = 601,203 ns, straggler kernel X = 250,000 ns
# (--kernels); every rank's step, read by the program's clock_gettime, is 4g + X + 601,203 with
# the straggler and 4g + 601,203 without: it delays every rank by exactly X. The recorded run
# (--record) simulated by `etkit sim` gives the live step time to the ns, with the roofline and
# with the default compute model and on the flow network model, and it re-simulates on another
# cluster.
# usage: bash tests/live/dp_train.sh <etkit>
. "$(dirname "$0")/livelib.sh"
need_cuda
cuda_build nvcc "$T/dp" "$HERE/dp_train.cu" -lcublas -lnccl
printf '# the straggler kernel of dp_train.cu\n*slow_down* ns 250000\n' >"$T/k.txt"
g=$(awk 'BEGIN { printf "%d", 2 * 4096^3 * 1e9 / 989e12 }')
[ "$g" = 138967 ] || fail "GEMM closed form $g"
ar=601203
live() { # out-prefix straggler [options]
  local o=$1 s=$2; shift 2
  timeout 120 "$ETKIT" live --cluster "$HERE/ring8.yaml" --ranks 8 --cpu-scale 0 --kernels "$T/k.txt" "$@" \
    -- "$T/dp" "$s" >"$o.out" 2>"$o.err" || fail "etkit live (straggler $s $*) exited $?: $(tail -3 "$o.err")"
}
live "$T/a" 3 --compute roofline --record "$T/rec_a"
live "$T/b" -1 --compute roofline
want_a=$((4 * g + 250000 + ar)); want_b=$((4 * g + ar))
got_a=$(awk '{print $3}' "$T/a.out" | sort -u); got_b=$(awk '{print $3}' "$T/b.out" | sort -u)
[ "$got_a" = "$want_a" ] && ok "straggler: 4 steps of $got_a ns = 4g + X + all-reduce" ||
  fail "straggler: steps '$got_a', want $want_a"
[ "$got_b" = "$want_b" ] && ok "no straggler: 4 steps of $got_b ns = 4g + all-reduce" ||
  fail "no straggler: steps '$got_b', want $want_b"
[ $((got_a - got_b)) = 250000 ] && ok "the straggler delays rank 0 by X = 250,000 ns" || fail "delay $((got_a - got_b))"
grep -Eq "^3 +$((4 * (4 * g + 250000))) " "$T/a.err" && ok "rank 3 computes 4 x (4g + X)" ||
  fail "rank 3's compute_ns: $(grep -E '^3 ' "$T/a.err")"
step() { sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p' "$1"; }
"$ETKIT" sim "$T/rec_a" --cluster "$HERE/ring8.yaml" --compute roofline >"$T/sim_a" 2>&1
[ "$(step "$T/a.err")" = "$(step "$T/sim_a")" ] && [ -n "$(step "$T/sim_a")" ] &&
  ok "etkit sim of the record (roofline): $(step "$T/sim_a") ns = live" ||
  fail "roofline: live $(step "$T/a.err"), sim $(step "$T/sim_a")"
live "$T/c" 3 --record "$T/rec_c"
"$ETKIT" sim "$T/rec_c" --cluster "$HERE/ring8.yaml" >"$T/sim_c" 2>&1
[ "$(step "$T/c.err")" = "$(step "$T/sim_c")" ] && [ -n "$(step "$T/sim_c")" ] &&
  ok "etkit sim of the record (compute model): $(step "$T/sim_c") ns = live" ||
  fail "compute model: live $(step "$T/c.err"), sim $(step "$T/sim_c")"
"$ETKIT" sim "$T/rec_c" --cluster dgx-h100 >"$T/sim_d" 2>&1 && [ -n "$(step "$T/sim_d")" ] &&
  ok "re-simulated on dgx-h100: $(step "$T/sim_d") ns" || fail "dgx-h100: $(tail -3 "$T/sim_d")"
# the flow network model (dgx-h100-superpod's default): the engine's next event includes the
# transfers in flight (regression: a live run on it used to end in a false deadlock)
timeout 120 "$ETKIT" live --cluster dgx-h100-superpod --nodes 1 --ranks 8 --cpu-scale 0 --kernels "$T/k.txt" \
  --record "$T/rec_f" -- "$T/dp" 3 >"$T/f.out" 2>"$T/f.err" || fail "flow model: exit $?: $(tail -3 "$T/f.err")"
"$ETKIT" sim "$T/rec_f" --cluster dgx-h100-superpod --nodes 1 >"$T/sim_f" 2>&1
[ -n "$(step "$T/sim_f")" ] && [ "$(step "$T/f.err")" = "$(step "$T/sim_f")" ] &&
  ok "flow network model: live = etkit sim of the record, $(step "$T/sim_f") ns" ||
  fail "flow model: live $(step "$T/f.err"), sim $(step "$T/sim_f")"
exit $((fails > 0))
