#!/usr/bin/env bash
# cli_plan_calibration.sh — the published Megatron-LM plan of the 8-GPU calibration row
# (Llama 3 8B on one DGX H100, FP8, CP 2, DP 4: shared/spec/calibration-modern.json) is within 5%
# of the best plan `etkit plan` finds under the same model, GPUs, global batch and sequence
# (bench/plan_calibration.py; docs/plan.md "Validation: the Megatron-LM plans" for every row).
# usage: bash tests/cli_plan_calibration.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail
SHARED=$2
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 0; }
[ -f "$SHARED/spec/calibration-modern.json" ] || { echo "SKIP: no $SHARED/spec/calibration-modern.json"; exit 0; }
python3 "$(dirname "$0")/../bench/plan_calibration.py" "$(dirname "$ETKIT")" "$SHARED" mlm-h100-llama3-8b >"$T/table.md" 2>&1
rc=$?
cat "$T/table.md"
[ "$rc" = 0 ] || fail "published plan more than 5% behind the best (exit $rc)"
grep -q "^| mlm-h100-llama3-8b | 8 |" "$T/table.md" || fail "no row for mlm-h100-llama3-8b"
grep -q "failed" "$T/table.md" && fail "a command failed"
exit $((fails > 0))
