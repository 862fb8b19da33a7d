#!/usr/bin/env bash
# bench/calibrate.sh — `etkit calibrate` on the shared calibration rows (make bench): the report
# with the presets as built on the eight Korthikanti A100 rows (bench/calibration/korthikanti.json)
# and the 48 rows of ../shared/spec/calibration-modern.json, then the presets' refit
# (bench/refit-presets.sh: the H100 fit on its row subset, the H200/B200 transfers) with
# leave-one-set-out, and every row's fitted and held-out error per set, per GPU and overall
# (bench/calibration_figures.py; docs/calibrate.md "The project's presets").
# usage: bash bench/calibrate.sh <build-dir> <shared-dir>
# Environment: CAL_REFIT=0 skips the refit and held-out figures; CAL_MAX_EVALS (objective
# evaluations per fit, default 24: the presets' recipe); CAL_JOBS (threads, default 2);
# CAL_OUT (default <build>/calibrated/); CAL_WRITE_PRESETS=1 copies the refit YAMLs over
# presets/gpus/ and the leave-one-set-out parameters to bench/calibration/loso-h100.txt
# (rebuild afterwards: presets are embedded); CAL_FIGURES=0 skips the figures (before a rebuild).
# Cost: one evaluation of the 21 fitted rows is a few seconds of CPU; the refit with
# leave-one-set-out is 6 x 24 of them plus the transfers: ~10 minutes on 2 busy CPUs.
# Exit status 1 if a report or a fit fails.
set -u
BUILD=$1; SHARED=$2
ETKIT="$BUILD/etkit"
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${CAL_OUT:-$BUILD/calibrated}
JOBS=${CAL_JOBS:-2}
mkdir -p "$OUT"
rc=0
echo "-- report, presets as built: Korthikanti et al. 2022 (8 rows, bench/calibration/korthikanti.json)"
"$ETKIT" calibrate "$HERE/calibration/korthikanti.json" -j "$JOBS" || rc=1
[ "${CAL_REFIT:-1}" = 0 ] && exit $rc
echo "-- refit of the presets with leave-one-set-out (bench/refit-presets.sh --loso)"
t0=$(date +%s)
MAX_EVALS=${CAL_MAX_EVALS:-24} bash "$HERE/refit-presets.sh" "$BUILD" "$SHARED" "$OUT" -j "$JOBS" --loso \
  >"$OUT/refit.txt" || rc=1
sed -n '1,/^calibration rows/p' "$OUT/refit.txt"
echo "   ($(( $(date +%s) - t0 )) s; YAMLs in $OUT; the fit's report: $OUT/refit.txt)"
# "  without SET  NAME VALUE NAME VALUE" -> "SET NAME=VALUE ..."
awk '$1 == "without" && NF > 2 {printf "%s", $2; for (i = 3; i < NF; i += 2) printf " %s=%s", $i, $(i + 1); print ""}' \
  "$OUT/refit.txt" >"$OUT/loso-h100.txt"
for g in h100 h200 b200; do
  cmp -s "$OUT/$g.yaml" "$HERE/../presets/gpus/$g.yaml" || echo "   presets/gpus/$g.yaml differs from the refit ($OUT/$g.yaml)"
done
if [ "${CAL_WRITE_PRESETS:-0}" = 1 ]; then
  for g in h100 h200 b200; do
    cp "$OUT/$g.yaml" "$HERE/../presets/gpus/$g.yaml.tmp" && mv "$HERE/../presets/gpus/$g.yaml.tmp" "$HERE/../presets/gpus/$g.yaml"
  done
  cp "$OUT/loso-h100.txt" "$HERE/calibration/loso-h100.txt.tmp" && mv "$HERE/calibration/loso-h100.txt.tmp" "$HERE/calibration/loso-h100.txt"
  echo "   written: presets/gpus/{h100,h200,b200}.yaml, bench/calibration/loso-h100.txt (rebuild, then rerun for the figures)"
fi
[ "${CAL_FIGURES:-1}" = 0 ] && exit $rc
echo "-- every row of $SHARED/spec/calibration-modern.json: presets as built (fitted) and held out"
python3 "$HERE/calibration_figures.py" "$ETKIT" "$SHARED/spec/calibration-modern.json" \
  "$HERE/calibration/loso-h100.txt" -j 1 --json-out "$OUT/figures.json" \
  --plan-extra "$HERE/calibration/modern-plan-extra.json" || rc=1
exit $rc
