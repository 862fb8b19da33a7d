#!/usr/bin/env bash
# bench/calibrate.sh — `etkit calibrate` on the shared calibration rows (make bench): the report
# with the current models on the eight Korthikanti A100 rows (bench/calibration/korthikanti.json)
# and the 48 rows of ../shared/spec/calibration-modern.json (per row, per set, per GPU: mean and
# worst |error|), then the refit of the compute-model parameters of each GPU preset from those
# rows with leave-one-set-out (docs/calibrate.md): the fitted and held-out errors per set and
# per GPU, and the fitted GPU YAMLs in $CAL_OUT (default <build>/calibrated/).
# usage: bash bench/calibrate.sh <build-dir> <shared-dir>
# Environment: CAL_GPUS (default "a100 h100 h200 b200"; "none" skips the refit), CAL_MAX_EVALS
# (objective evaluations per fit, default 40), CAL_JOBS (threads, default: the CPUs),
# CAL_PARAMS_<GPU> (the parameters fitted, e.g. CAL_PARAMS_H100=fp8_gemm_eff,attn_eff),
# CAL_WRITE_PRESETS=1 (copy the fitted YAMLs over presets/gpus/<gpu>.yaml).
# Cost: each evaluation simulates every row of the GPU (the H100 rows: about a minute of CPU), so
# a refit with leave-one-set-out is (1 + sets) x CAL_MAX_EVALS evaluations: hours on 2 CPUs,
# well under an hour on 16. Exit status 1 if a report or a fit fails.
set -u
BUILD=$1; SHARED=$2
ETKIT="$BUILD/etkit"
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${CAL_OUT:-$BUILD/calibrated}
JOBS=${CAL_JOBS:+-j $CAL_JOBS}
MAXEV=${CAL_MAX_EVALS:-40}
mkdir -p "$OUT"
rc=0
echo "-- report, current models: Korthikanti et al. 2022 (8 rows, bench/calibration/korthikanti.json)"
"$ETKIT" calibrate "$HERE/calibration/korthikanti.json" $JOBS || rc=1
echo "-- report, current models: $SHARED/spec/calibration-modern.json"
"$ETKIT" calibrate "$SHARED/spec/calibration-modern.json" $JOBS || rc=1
[ "${CAL_GPUS:-}" = none ] && exit $rc
# both sets in one file for the refit (model files found through --models-dir)
python3 - "$SHARED/spec/calibration-modern.json" "$HERE/calibration/korthikanti.json" "$OUT/rows.json" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1])) + json.load(open(sys.argv[2]))
json.dump(rows, open(sys.argv[3] + ".tmp", "w"), indent=1)
import os; os.replace(sys.argv[3] + ".tmp", sys.argv[3])
PY
for g in ${CAL_GPUS:-a100 h100 h200 b200}; do
  G=$(echo "$g" | tr a-z A-Z)
  var="CAL_PARAMS_$G"
  case $g in
    a100) def=gemm_eff,score_mem_eff,launch_ns ;;   # bf16/fp16 rows (Korthikanti unfused, TRT-LLM)
    *)    def=fp8_gemm_eff,attn_eff,launch_ns ;;    # the FP8 rows of current stacks
  esac
  params=${!var:-$def}
  echo "-- refit $g: --fit $params --loso --max-evals $MAXEV"
  t0=$(date +%s)
  "$ETKIT" calibrate "$OUT/rows.json" --models-dir "$SHARED/data/models" --gpu "$g" --fit "$params" \
    --loso --max-evals "$MAXEV" $JOBS -o "$OUT/$g.yaml" || rc=1
  echo "   ($(( $(date +%s) - t0 )) s; fitted GPU YAML $OUT/$g.yaml)"
  if [ "${CAL_WRITE_PRESETS:-0}" = 1 ] && [ -s "$OUT/$g.yaml" ]; then
    cp "$OUT/$g.yaml" "$HERE/../presets/gpus/$g.yaml.tmp" && mv "$HERE/../presets/gpus/$g.yaml.tmp" "$HERE/../presets/gpus/$g.yaml"
  fi
done
exit $rc
