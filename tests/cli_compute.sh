#!/usr/bin/env bash
# cli_compute.sh — the compute model, heterogeneity and memory over time through `etkit run` and
# `etkit sim`: flag errors (exit 2, the message names the flag), --slow-rank forcing the unfolded
# simulation and slowing the step, --compute roofline vs the model, the memory line and the
# Perfetto counter track.
# usage: bash tests/cli_compute.sh <etkit> <shared-dir>
set -u
ETKIT=$1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
check() { # name, condition result
  if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi
}
expect() { # name, want-exit, want-text, command...
  local name=$1 want=$2 text=$3; shift 3
  "$@" >"$T/out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ] || ! grep -qF -- "$text" "$T/out"; then
    echo "FAIL $name: exit $rc (want $want), output:"; sed 's/^/    /' "$T/out" | head -20; fail=1
  else echo "ok   $name"; fi
}
M="--model llama2-7b --layers 2 --seq 1024 --dp 8 --micro-batch 1 --global-batch 16 --cluster dgx-a100 --nodes 1"
expect "help lists --slow-rank" 0 "--slow-rank R:F" "$ETKIT" run --help
expect "bad --slow-rank" 2 "--slow-rank wants RANK:FACTOR (e.g. 17:0.8), got '17'" "$ETKIT" run $M --slow-rank 17
expect "bad --slow-rank factor" 2 "the factor must be a number in [0.001, 1000]" "$ETKIT" run $M --slow-rank 3:0
expect "--slow-rank rank out of range" 2 "rank 17 does not exist (the workload has ranks 0..7)" \
  "$ETKIT" run $M --slow-rank 17:0.8
expect "bad --compute" 2 "--compute wants 'model' or 'roofline', got 'fast'" "$ETKIT" run $M --compute fast
expect "unknown --compute-param" 2 "compute parameter 'speed' is unknown" "$ETKIT" run $M --compute-param speed=2
expect "bad --compute-param value" 2 "gemm_eff: expected a fraction in [0.001, 1], got 2" \
  "$ETKIT" run $M --compute-param gemm_eff=2
expect "--compute-param with roofline" 2 "--compute-param applies to the compute model" \
  "$ETKIT" run $M --compute roofline --compute-param gemm_eff=0.5

step_of() { grep -o '"step_ns": [0-9]*' | grep -o '[0-9]*$'; }
base=$("$ETKIT" run $M --json | step_of)
slow=$("$ETKIT" run $M --slow-rank 3:0.5 --json | step_of)
roof=$("$ETKIT" run $M --compute roofline --json | step_of)
# rank 3 at half speed: its compute doubles, and data parallelism waits for it at the gradient
# all-reduce, so the step grows by at least 1.6x (the all-reduce tail does not scale)
check "--slow-rank 3:0.5 slows the whole step ($base -> $slow ns)" \
  "$(awk "BEGIN{exit !($slow > 1.6 * $base && $slow < 2.0 * $base)}"; echo $?)"
check "the compute model is slower than the peak roofline ($roof -> $base ns)" \
  "$(awk "BEGIN{exit !($base > $roof)}"; echo $?)"
expect "--slow-rank runs unfolded" 0 "8 (8 simulated, not folded)" "$ETKIT" run $M --slow-rank 3:0.9
expect "memory line" 0 "; HBM 80.00 GiB: fits" "$ETKIT" run $M
"$ETKIT" run $M --timeline "$T/tl.json" >/dev/null 2>&1
check "timeline has a memory counter track" "$(grep -q '"ph":"C","pid":0,"name":"memory"' "$T/tl.json"; echo $?)"
expect "OOM predicted" 0 "OUT OF MEMORY on 8 rank(s)" "$ETKIT" run --model llama2-13b --dp 8 \
  --micro-batch 1 --global-batch 8 --seq 1024 --cluster dgx-a100 --nodes 1
# FP8 plans: MFU against the FP8 peak, labelled, and the BF16-peak MFU in JSON (issue 16: an FP8
# run never reports MFU > 100% of a peak it did not run at)
F8="--model llama3-8b --dp 8 --micro-batch 1 --global-batch 16 --precision fp8 --cluster dgx-h100 --nodes 1"
expect "fp8 MFU labelled" 0 "% of 1979 TFLOP/s FP8 peak" "$ETKIT" run $F8
expect "bf16 MFU labelled" 0 "% of 989 TFLOP/s BF16 peak" "$ETKIT" run --model llama3-8b --dp 8 \
  --micro-batch 1 --global-batch 16 --cluster dgx-h100 --nodes 1
"$ETKIT" run $F8 --json > "$T/f8.json"
check "fp8 JSON: peak_precision fp8, mfu = mfu_bf16 * 989 / 1979" "$(python3 -c "
import json,sys; j=json.load(open('$T/f8.json'))
sys.exit(0 if j['peak_precision']=='fp8' and j['peak_tflops']==1979 and abs(j['mfu']-j['mfu_bf16']*989/1979)<1e-9 and 0<j['mfu']<1 else 1)"; echo $?)"
# the fused attention of a prefill is causal (the compute model halves its s^2 FLOPs); no decode
# node carries the mark (one query sees every cached key)
"$ETKIT" gen --mode inference --model llama2-7b --layers 2 --batch 2 --prompt-len 128 --decode-steps 2 \
  --out "$T/inf" >/dev/null 2>&1
"$ETKIT" json "$T/inf.0.et" > "$T/inf.json"
check "prefill attention causal, decode not" "$(python3 -c "
import json,sys; j=json.load(open('$T/inf.json'))
c=[n['name'] for n in j['nodes'] if any(a['name']=='attn_causal' for a in n.get('attr',[]))]
sys.exit(0 if len(c)==2 and all(x.startswith('prefill/') and x.endswith('flash_attn') for x in c) else 1)"; echo $?)"
exit $fail
