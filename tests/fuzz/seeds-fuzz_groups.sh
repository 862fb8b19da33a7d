#!/usr/bin/env bash
# Seeds for fuzz_groups: STAGE's comm-group JSON from ../shared/data and a few small forms
# (empty, all-ranks group "0", an empty id).
set -eu
SHARED=$1; OUT=$2
mkdir -p "$OUT"
cp "$SHARED/data/stage/gpt_small_dp2_tp2_pp2/workload.json" "$OUT/stage.json"
printf '{}' > "$OUT/empty.json"
printf '{"0": [0, 1, 2, 3]}' > "$OUT/all.json"
printf '{"": [0, 1], "7": [2, 3], "8": [3]}' > "$OUT/mixed.json"
