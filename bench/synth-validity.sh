#!/usr/bin/env bash
# synth-validity.sh — issue #13's validity criterion: N sampled workloads (default 1,000; ranks
# cycling over 1, 2, 3, 4, 8, 16) written by `etkit synth sample` and checked by `etkit validate`
# (acyclic, attribute kinds, groups, collective sequences, send/recv matching, deadlock).
# usage: bash bench/synth-validity.sh MODEL [N] [--count] [ETKIT]
set -u
MODEL=${1:?usage: synth-validity.sh MODEL [N] [--count] [ETKIT]}
N=${2:-1000}
MODE=${3:-}
ETKIT=${4:-build/etkit}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
ranks=(1 2 3 4 8 16)
bad=0
for ((s = 1; s <= N; s++)); do
  r=${ranks[$((s % 6))]}
  if ! "$ETKIT" synth sample "$MODEL" -q -o "$T/w" --seed "$s" --ranks "$r" --max-nodes 2000 $MODE >"$T/out" 2>&1 ||
     ! "$ETKIT" validate -q "$T/w" >"$T/v" 2>&1 || ! grep -q " 0 errors" "$T/v"; then
    bad=$((bad + 1)); echo "seed $s ($r ranks): $(head -3 "$T/out" "$T/v")"
  fi
done
echo "synth validity: $((N - bad)) of $N sampled workloads pass etkit validate ($MODEL ${MODE:-default model})"
[ "$bad" = 0 ]
