#!/usr/bin/env bash
# cli_simnet.sh — the network half of Simulation II end to end: --net-model and --link-factor
# usage errors (exit 2, message naming the problem), the expected slowdown of a whole step when
# one NIC is halved (hand-computed from the data-parallel all-reduce bytes), the flow model on
# the SuperPOD and Llama 3 presets.
# usage: bash tests/cli_simnet.sh <etkit> <shared-dir>
set -u
ETKIT=$1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
check() { if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
expect() { # name, want-exit, want-text, command...
  local name=$1 want=$2 text=$3; shift 3
  "$@" >"$T/out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ] || ! grep -qF -- "$text" "$T/out"; then
    echo "FAIL $name: exit $rc (want $want), output:"; sed 's/^/    /' "$T/out" | head -20; fail=1
  else echo "ok   $name"; fi
}
P="--model llama2-7b --layers 2 --tp 8 --pp 1 --dp 2 --global-batch 2"
expect "help lists --link-factor" 0 "--link-factor nic:17:0.5" "$ETKIT" run --help
expect "help lists --net-model" 0 "--net-model flow|analytical" "$ETKIT" sim --help
expect "bad --net-model" 2 "--net-model wants 'flow' or 'analytical', got 'fluid'" \
  "$ETKIT" run $P --cluster dgx-h100 --nodes 2 --net-model fluid
expect "bad --link-factor rank" 2 "rank 99 out of range (the cluster has 16 GPUs)" \
  "$ETKIT" run $P --cluster dgx-h100 --nodes 2 --link-factor nic:99:0.5
expect "bad --link-factor kind" 2 "unknown link kind 'pci'" \
  "$ETKIT" run $P --cluster dgx-h100 --nodes 2 --link-factor pci:1:0.5
expect "bad --link-factor value" 2 "factor -1: expected a number in [0.001, 1000]" \
  "$ETKIT" run $P --cluster dgx-h100 --nodes 2 --link-factor nic:1:-1
expect "--link-factor refused in ASTRA-compat" 2 "does not apply in ASTRA-sim compatibility mode" \
  "$ETKIT" run $P --cluster dgx-h100 --nodes 2 --astra-compat --link-factor nic:1:0.5

j() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# TP 8 inside a node, DP 2 across the two nodes: each TP rank's gradients are all-reduced with
# its peer on the other node (2-rank ring: 2α + S/B, B = 50 GB/s). The JSON says how many
# bytes group {0, 8} all-reduces per step; halving GPU 8's NIC makes each of those all-reduces
# take S/(25 GB/s) instead of S/(50 GB/s), and they are exposed at the end of the step, so the
# step grows by bytes / 50 B/ns (to the ns per operation). One comm stream: the buckets are
# serialized, as this derivation assumes (the default of 2 would let two share the NIC).
base=$("$ETKIT" run $P --cluster dgx-h100 --nodes 2 --comm-streams 1 --json 2>/dev/null)
slow=$("$ETKIT" run $P --cluster dgx-h100 --nodes 2 --comm-streams 1 --json --link-factor nic:8:0.5 2>/dev/null)
b0=$(echo "$base" | j "d['step_ns']")
b1=$(echo "$slow" | j "d['step_ns']")
bytes=$(echo "$base" | j "[c['bytes'] for c in d['communication'] if c['group_size']==2][0]")
folded=$(echo "$slow" | j "d['folded']")
want=$(python3 -c "print(round($bytes/50))")
echo "     step $b0 -> $b1 ns with nic:8:0.5; DP all-reduce $bytes B per group: +$want ns expected"
check "link factor slows the step by bytes/50 B/ns" \
  "$(python3 -c "print(0 if abs(($b1-$b0)-$want) <= 8 else 1)")"
check "link factor forces the unfolded simulation" "$([ "$folded" = False ]; echo $?)"
# a whole-dimension factor on the NIC dimension slows every DP group the same way
dim=$("$ETKIT" run $P --cluster dgx-h100 --nodes 2 --comm-streams 1 --json --link-factor dim:1:0.5 2>/dev/null | j "d['step_ns']")
check "dim:1:0.5 = the same slowdown (every group shares it)" "$([ "$dim" = "$b1" ]; echo $?)"

# flow model: the DP all-reduce busbw per NIC is the calibrated 47 GB/s (NIC efficiency 47/50)
fl=$("$ETKIT" run $P --cluster dgx-h100 --nodes 2 --comm-streams 1 --json --net-model flow 2>/dev/null)
bw=$(echo "$fl" | j "[c['busbw_GBps'] for c in d['communication'] if c['group_size']==2][0]")
check "flow model: 2-node DP all-reduce near 47 GB/s ($bw)" \
  "$(python3 -c "print(0 if 46 <= $bw <= 47.01 else 1)")"
fslow=$("$ETKIT" run $P --cluster dgx-h100 --nodes 2 --json --net-model flow --link-factor nic:8:0.5 2>/dev/null | j "d['step_ns']")
f0=$(echo "$fl" | j "d['step_ns']")
check "flow model: nic:8:0.5 slows the step ($f0 -> $fslow ns)" "$([ "$fslow" -gt "$f0" ]; echo $?)"
expect "superpod preset runs (flow model by default)" 0 "step time" \
  "$ETKIT" run $P --cluster dgx-h100-superpod --nodes 2
expect "llama3 preset runs" 0 "step time" "$ETKIT" run $P --cluster llama3 --nodes 2
# above 1,024 ranks a preset's flow model (unfolded) gives way to the folded analytical model,
# with a warning; --net-model flow would force it
BIG="--model llama3-8b --layers 2 --tp 8 --dp 256 --global-batch 256"
expect "llama3 preset, 2048 ranks: analytical fallback warned" 0 \
  "with 2048 ranks (more than 1024) the analytical model is used instead" "$ETKIT" run $BIG --cluster llama3
expect "llama3 preset, 2048 ranks: folded" 0 "ranks          2048 (1 simulated, folded into classes)" \
  "$ETKIT" run $BIG --cluster llama3
exit $fail
