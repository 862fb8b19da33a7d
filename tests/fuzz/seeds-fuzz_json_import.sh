#!/usr/bin/env bash
# Seeds for fuzz_json_import. The lossless documents themselves are committed as
# tests/fuzz/corpus-fuzz_json_import/ (run.sh always adds that folder); here we add the JSON
# files of ../shared/data that are small (other JSON shapes exercise the error paths).
set -eu
SHARED=$1; OUT=$2
mkdir -p "$OUT"
cp "$SHARED/data/chakra/json_feeder_small.0.json" "$OUT/feeder_small.json"
cp "$SHARED/data/stage/gpt_small_dp2_tp2_pp2/workload.json" "$OUT/groups.json"
