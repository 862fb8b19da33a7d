#!/usr/bin/env bash
# cli_calibration_figures.sh — the figures of bench/RESULTS.md ("Calibration") pinned: every
# row of ../shared/spec/calibration-modern.json predicted with the presets as built (fitted: the
# H100 values of bench/refit-presets.sh, H200 transferred, B200 its measured figures, A100 as
# fitted to Korthikanti)
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
fitted all:all 47 7.76 38.79
fitted gpu:A100 3 8.51 19.21
fitted gpu:B200 5 16.49 38.79
fitted gpu:H100 37 6.73 27.34
fitted gpu:H200 2 3.88 6.69
fitted set:mbridge-b200 5 16.49 38.79
fitted set:mbridge-h100-fp8 7 12.71 27.34
fitted set:megatron-lm-llama-h100-fp8 3 8.45 10.25
fitted set:nemo-24.07-h100-fp8 12 4.85 14.00
fitted set:nemo-longseq-h100-fp8 5 4.20 10.69
fitted set:trtllm-0.9 15 5.91 19.21
held_out all:all 47 8.09 38.79
held_out gpu:A100 3 8.51 19.21
held_out gpu:B200 5 16.49 38.79
held_out gpu:H100 37 7.15 26.96
held_out gpu:H200 2 3.88 6.69
held_out set:mbridge-b200 5 16.49 38.79
held_out set:mbridge-h100-fp8 7 13.11 26.96
held_out set:megatron-lm-llama-h100-fp8 3 9.32 11.07
held_out set:nemo-24.07-h100-fp8 12 4.88 14.03
held_out set:nemo-longseq-h100-fp8 5 5.17 13.40
held_out set:trtllm-0.9 15 6.25 19.21
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
# The same rows expressed with their TP communication overlap (modern-plan-extra-tpo.json:
# tp_comm_overlap on the 19 TP > 1 SP training rows) and the presets as built: all rows 7.88%
# mean (docs/calibrate.md says why the presets are not fitted with it: worse held out).
"$ETKIT" calibrate "$SHARED/spec/calibration-modern.json" -j 2 \
  --plan-extra "$HERE/bench/calibration/modern-plan-extra-tpo.json" >"$T/tpo.txt" 2>&1 ||
  fail "calibrate with the TP overlap overlay failed: $(tail -3 "$T/tpo.txt")"
grep -Eq '^  all +47 +7\.88% +38\.79%' "$T/tpo.txt" ||
  fail "TP overlap overlay: want all 47 rows 7.88% mean, 38.79% worst; got: $(grep -E '^  all ' "$T/tpo.txt")"
# The MoE rows with EP across nodes expressed with Megatron's EP all-to-all overlap
# (modern-plan-extra-epo.json: ep_comm_overlap on 4 rows) and the presets as built: each row
# moves optimistic except B200 DeepSeek-V3 (docs/calibrate.md says why the presets are not fitted
# with it: worse held out, bench/RESULTS.md "s31-ep").
"$ETKIT" calibrate "$SHARED/spec/calibration-modern.json" -j 2 \
  --rows mb2606-h100-qwen3-30b-a3b,mb260401-h100-qwen3-235b-a22b,mb2509-h100-deepseek-v3,mb260401-b200-deepseek-v3 \
  --plan-extra "$HERE/bench/calibration/modern-plan-extra-epo.json" >"$T/epo.txt" 2>&1 ||
  fail "calibrate with the EP overlap overlay failed: $(tail -3 "$T/epo.txt")"
for want in 'mb2606-h100-qwen3-30b-a3b .* \+34\.86 ' 'mb260401-h100-qwen3-235b-a22b .* \+12\.38 ' \
            'mb2509-h100-deepseek-v3 .* \+29\.19 ' 'mb260401-b200-deepseek-v3 .* -5\.95 ' '^  all +4 +20\.59% +34\.86%'; do
  grep -Eq "$want" "$T/epo.txt" || fail "EP overlap overlay: want /$want/; got: $(grep -E '^mb|^  all ' "$T/epo.txt")"
done
exit $((fails > 0))
