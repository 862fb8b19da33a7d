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
# The head of the Megatron-LM Llama 3 70B row's plans (docs/plan.md "Validation", the per-kernel
# breakdown): per micro-batch and TP rank (TP 4, s 8192, h 8192, V/t 32064) the output GEMM runs
# in BF16 among FP8 layers (Megatron's output layer is not a Transformer Engine module) at the
# measured large-GEMM efficiency: 2 s h V/t = 4.3036e12 FLOPs / (989 TFLOP/s x 0.80 x
# h'/(h' + 64)), h' = 1/(2/8192 + 1/32064) = 3632.03, + 3 us launch = 5,538.12 us (an FP8 GEMM
# would take 3.56 ms); the cross entropy one pass over the BF16 logits each way, s V/t x 2 bytes /
# (3,350 GB/s x 0.8) + 3 us = 199.02 us. Derived here, independently of the generator.
"$ETKIT" run --model llama3-70b --layers 2 --precision fp8 --grad-precision bf16 --seq 8192 --cluster dgx-h100 \
  --nodes 1 --tp 4 --dp 2 --sp --micro-batch 1 --global-batch 2 --timeline "$T/head.json" >"$T/head.txt" 2>&1 ||
  fail "etkit run of the 70B head failed: $(tail -2 "$T/head.txt")"
python3 - "$T/head.json" <<'PY' || fail "70B head kernel times differ from the closed form"
import json, sys
s, h, V, t = 8192, 8192, 128256, 4
hp = 1 / (2 / s + 1 / (V / t))
gemm = 2 * s * h * V / t / (989e12 * 0.80 * hp / (hp + 64)) * 1e6 + 3
ce = s * V / t * 2 / (3350e9 * 0.8) * 1e6 + 3
want = {"mb0.head.logits": (gemm, gemm), "mb0.head.logits.wgrad": (gemm, gemm),
        # the input gradient may run while a transfer is in flight: x (1 + overlap_slowdown 0.1)
        "mb0.head.logits.dgrad": (gemm, 1.1 * gemm), "mb0.head.loss": (ce, ce), "mb0.head.loss.bwd": (ce, ce)}
got = {e["name"]: e["dur"] for e in json.load(open(sys.argv[1]))["traceEvents"]
       if e.get("ph") == "X" and e.get("pid") == 0 and e["name"] in want}
bad = [n for n, (lo, hi) in want.items() if n not in got or not (lo * 0.9999 <= got[n] <= hi * 1.0001)]
for n in sorted(want):
    print("%-24s %10.3f us (closed form %.3f-%.3f)" % (n, got.get(n, -1), want[n][0], want[n][1]))
sys.exit(1 if bad else 0)
PY
exit $((fails > 0))
