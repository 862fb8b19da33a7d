#!/usr/bin/env bash
# synth-label.sh — issue #13's conditional-generation criterion: for N target step times spread
# log-uniformly over the range of the training labels of a labeled model (`etkit synth fit
# --layerdag --cluster NAME`), `etkit synth sample --label step_time_ns=T --cluster NAME` writes a
# workload; `etkit sim` (an independent run on the written files) gives its step time; counts the
# targets met within 5 %.
# usage: [RANGE="LO HI"] [EXTRA="--attr-tries J --refine R"] bash bench/synth-label.sh MODEL [N] [CLUSTER] [TRIES] [ETKIT]
set -u
MODEL=${1:?usage: synth-label.sh MODEL [N] [CLUSTER] [TRIES] [ETKIT]}
N=${2:-20}
CLUSTER=${3:-dgx-h100}
TRIES=${4:-32}
ETKIT=${5:-build/etkit}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# RANGE="LO HI" (ns) overrides the model's label range (to run an unlabeled model for comparison)
range=${RANGE:-}
[ -n "$range" ] || range=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["layerdag"]["label_range_ns"]; print(r[0], r[1])' \
  "$MODEL") || { echo "synth-label.sh: $MODEL: no layerdag.label_range_ns (fit with --layerdag --cluster)" >&2; exit 2; }
read -r lo hi <<<"$range"
ok=0
for ((i = 0; i < N; i++)); do
  target=$(python3 -c "import math; print(round(math.exp(math.log($lo) + ($i + 0.5) / $N * (math.log($hi) - math.log($lo)))))")
  if ! "$ETKIT" synth sample "$MODEL" -q -o "$T/w$i" --seed $((1000 * i + 1)) --label "step_time_ns=$target" \
    --cluster "$CLUSTER" --tries "$TRIES" ${EXTRA:-} >"$T/out" 2>&1; then
    echo "target $target: sample failed: $(head -2 "$T/out")"; continue
  fi
  got=$("$ETKIT" sim "$T/w$i" --cluster "$CLUSTER" 2>/dev/null | awk '/^step time/ {gsub(",", "", $3); print $3}')
  err=$(python3 -c "print(f'{100 * ($got - $target) / $target:+.2f}')")
  hit=$(python3 -c "print(int(abs($got - $target) <= 0.05 * $target))")
  ok=$((ok + hit))
  echo "target $target ns: simulated $got ns ($err %)$([ "$hit" = 1 ] && echo "  within 5 %")"
  rm -rf "$T/w$i"* 
done
echo "synth label: $ok of $N targets within 5 % ($MODEL, $CLUSTER, best of $TRIES ${EXTRA:-}; range $lo .. $hi ns)"
