#!/usr/bin/env bash
# cli_calibration_figures.sh — the figures of bench/RESULTS.md ("Calibration") pinned: every
# row of ../shared/spec/calibration-modern.json predicted with the presets as built (fitted: the
# H100 values of bench/refit-presets.sh, H200/B200 transferred, A100 as fitted to Korthikanti)
# and held out (each H100 set with the parameters fitted without it,
# bench/calibration/loso-h100.txt), mean and worst |error| per set, per GPU and overall, to
# 0.01 percentage points (bench/calibration_figures.py --json). The goal of issue #16 is mean
# <= 10% and worst <= 25% in every group, both columns; the groups that miss it are listed in
# RESULTS.md with their cause. A change that moves a prediction moves these: rerun the refit
# (docs/calibrate.md, "The project's presets") and update them from the script's output.
# usage: bash tests/cli_calibration_figures.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect
SHARED=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
python3 "$HERE/bench/calibration_figures.py" "$ETKIT" "$SHARED/spec/calibration-modern.json" \
  "$HERE/bench/calibration/loso-h100.txt" --json -j 2 \
  --plan-extra "$HERE/bench/calibration/modern-plan-extra.json" >"$T/fig.json" 2>"$T/fig.err" ||
  fail "calibration_figures.py failed: $(tail -3 "$T/fig.err")"
# column group rows mean% worst%
cat >"$T/pins" <<'PINS'
fitted all:all 47 7.70 34.03
fitted gpu:A100 3 8.51 19.21
fitted gpu:B200 5 17.94 34.03
fitted gpu:H100 37 6.42 26.83
fitted gpu:H200 2 4.41 5.39
fitted set:mbridge-b200 5 17.94 34.03
fitted set:mbridge-h100-fp8 7 12.57 26.83
fitted set:megatron-lm-llama-h100-fp8 3 8.03 10.59
fitted set:nemo-24.07-h100-fp8 12 3.70 13.24
fitted set:nemo-longseq-h100-fp8 5 4.34 13.02
fitted set:trtllm-0.9 15 6.26 19.21
held_out all:all 47 8.60 34.03
held_out gpu:A100 3 8.51 19.21
held_out gpu:B200 5 17.94 34.03
held_out gpu:H100 37 7.57 26.72
held_out gpu:H200 2 4.41 5.39
held_out set:mbridge-b200 5 17.94 34.03
held_out set:mbridge-h100-fp8 7 12.55 26.72
held_out set:megatron-lm-llama-h100-fp8 3 7.84 10.55
held_out set:nemo-24.07-h100-fp8 12 6.31 16.36
held_out set:nemo-longseq-h100-fp8 5 6.10 16.77
held_out set:trtllm-0.9 15 6.46 19.21
PINS
python3 - "$T/fig.json" "$T/pins" <<'PY' || fail "the calibration figures moved"
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
pins = [l.split() for l in open(sys.argv[2]) if l.strip()]
for col, key, rows, mean, worst in pins:
    g = d[col].get(key)
    if not g or g["rows"] != int(rows) or abs(g["mean_abs_err_pct"] - float(mean)) > 0.011 \
            or abs(g["worst_abs_err_pct"] - float(worst)) > 0.011:
        bad.append("%s %s: want %s rows, mean %s%%, worst %s%%; got %s" % (col, key, rows, mean, worst, g))
extra = sorted(set((c, k) for c in d for k in d[c]) - set((p[0], p[1]) for p in pins))
if extra:
    bad.append("groups not pinned: %s" % extra)
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
exit $((fails > 0))
