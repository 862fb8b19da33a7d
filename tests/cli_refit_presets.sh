#!/usr/bin/env bash
# cli_refit_presets.sh — the GPU presets are what `etkit calibrate` fits: re-runs the exact refit
# of bench/refit-presets.sh (the H100 fit on its row subset with its evaluation cap, the H200 and
# B200 transfers) and checks each YAML it writes is byte-identical to presets/gpus/<gpu>.yaml.
# A change that moves a prediction of the fitted rows moves the fit: rerun
# `bash bench/refit-presets.sh build ../shared presets/gpus` (docs/calibrate.md) and the figures
# pinned in tests/cli_calibration_figures.sh.
# usage: bash tests/cli_refit_presets.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect
HERE=$(cd "$(dirname "$0")/.." && pwd)
SHARED=$2
BUILD=$(cd "$(dirname "$ETKIT")" && pwd)
bash "$HERE/bench/refit-presets.sh" "$BUILD" "$SHARED" "$T/refit" -j 2 >"$T/refit.out" 2>&1 ||
  fail "bench/refit-presets.sh failed: $(tail -5 "$T/refit.out")"
for g in h100 h200 b200; do
  cmp -s "$T/refit/$g.yaml" "$HERE/presets/gpus/$g.yaml" ||
    fail "presets/gpus/$g.yaml is not what the refit writes: $(diff "$T/refit/$g.yaml" "$HERE/presets/gpus/$g.yaml" | head -8)"
done
exit $((fails > 0))
