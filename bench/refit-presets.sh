#!/usr/bin/env bash
# bench/refit-presets.sh — the one command that produces the compute: mappings of
# presets/gpus/h100.yaml, h200.yaml and b200.yaml from the shared calibration rows
# (docs/calibrate.md, "The project's presets"; bench/RESULTS.md, "Calibration").
# usage: bash bench/refit-presets.sh <build-dir> <shared-dir> <out-dir> [extra calibrate options]
#   e.g. --loso for the leave-one-set-out report (not needed for the YAMLs; hours without a cap).
# What it does:
# 1. H100: fits fp8_gemm_eff (the in-step FP8 GEMM efficiency, of the FP8 peak) and attn_bwd_eff
#    (fused attention backward, of the BF16 peak) on the H100 rows of
#    calibration-modern.json named in FIT_ROWS, starting from the measured kernel figures
#    (kernels-measured.md: MAMF e4m3 1402.6 of 1979 = 0.71, section 1; in-step FlashAttention-3
#    backward 0.44, section 3), with at most MAX_EVALS objective evaluations; writes
#    <out-dir>/h100.yaml.
# 2. H200: the same stack on another GPU. Each parameter is the GPU's own measured figure
#    times the H100 ratio fitted / measured (a fraction of each GPU's peak and bandwidth, shared):
#    H200's two rows are never fitted to, so its figures are transfers.
# 3. B200: its own measured figures (MXFP8 GEMMs, in-step attention backward), neither fitted nor
#    transferred (s32-b200; docs/compute-model.md): its single set is never fitted to.
# FIT_ROWS: every H100 set is represented (so leave-one-set-out holds each set out); the rows
# left out are the ones whose simulation costs seconds per evaluation (2048-step decodes, the
# 405B/235B/DeepSeek-V3 plans, 1M-token sequences): they are predicted, not fitted to.
# Deterministic: the same build gives the same bytes (tests: refit_presets, cli_calibrate.sh).
set -eu
BUILD=$1; SHARED=$2; OUT=$3; shift 3
ETKIT="$BUILD/etkit"
ROWS="$SHARED/spec/calibration-modern.json"
MAX_EVALS=${MAX_EVALS:-24}
FIT_ROWS=nemo2407-gpt3-5b,nemo2407-gpt3-20b,nemo2407-llama2-7b,nemo2407-llama2-13b,\
nemo2407-llama2-70b,nemo2407-nemotron-8b,nemo2407-nemotron-22b,nemo2407-nemotron-340b,\
nemo2407-llama3-8b,mb2511-h100-llama3-8b-fsdp,mb2606-h100-qwen3-30b-a3b,mlm-h100-llama3-8b,\
nemolong-h100-llama2-7b-4k,nemolong-h100-llama2-7b-16k,nemolong-h100-llama2-7b-64k,\
nemolong-h100-llama2-7b-256k,trt-h100-fp8-llama2-7b-b896-tp1-128-128,\
trt-h100-fp8-llama2-7b-b84-tp1-2048-128,trt-h100-fp8-llama2-70b-b1024-tp2-128-128,\
trt-h100-fp8-llama2-70b-b96-tp2-2048-128,trt-h100-fp8-mixtral-8x7b-b512-tp2-128-128
# measured starting figures (kernels-measured.md sections 1 and 4; docs/compute-model.md)
H100_FP8=0.71; H200_FP8=0.73
H100_BWD=0.44; H200_BWD=0.44; B200_BWD=0.36
B200_MXFP8=0.639   # B200's preset (below): TE MXFP8 GEMMs, kernels only, 2702 TFLOP/s at M 15872
mkdir -p "$OUT"
NOTE1="NVIDIA H100 SXM (../shared/spec/hardware.md): dense figures, no sparsity; capacity as the device reports it (kernels-measured.md section 4)"
"$ETKIT" calibrate "$ROWS" --gpu h100 --rows "$FIT_ROWS" --fit fp8_gemm_eff,attn_bwd_eff \
  --param fp8_gemm_eff=$H100_FP8 --param attn_bwd_eff=$H100_BWD \
  --max-evals "$MAX_EVALS" -o "$OUT/h100.yaml" --note "$NOTE1" \
  --note "made by bench/refit-presets.sh (starts: the measured figures fp8_gemm_eff $H100_FP8, attn_bwd_eff $H100_BWD; at most $MAX_EVALS evaluations)" "$@"
val() { awk -v k="$1:" '$1 == k {print $2}' "$OUT/h100.yaml"; }
fp8=$(val fp8_gemm_eff); bwd=$(val attn_bwd_eff)
[ -n "$fp8" ] && [ -n "$bwd" ] ||
  { echo "refit-presets: no fitted values in $OUT/h100.yaml" >&2; exit 1; }
scale() { awk -v a="$1" -v x="$2" -v s="$3" 'BEGIN {printf "%.4g", a * x / s}'; }
transfer() { # gpu row fp8-measured attn-bwd-measured note
  "$ETKIT" calibrate "$ROWS" --gpu "$1" --rows "$2" \
    --param fp8_gemm_eff="$(scale "$3" "$fp8" $H100_FP8)" \
    --param attn_bwd_eff="$(scale "$4" "$bwd" $H100_BWD)" -o "$OUT/$1.yaml" --note "$5" \
    --note "made by bench/refit-presets.sh: this GPU's measured figures (fp8_gemm_eff $3, attn_bwd_eff $4) times the H100 fit's ratios to H100's ($fp8/$H100_FP8, $bwd/$H100_BWD); not fitted to this GPU's rows" >/dev/null
}
transfer h200 trt-h200-fp8-llama2-70b-b1024-tp1-128-128 $H200_FP8 $H200_BWD \
  "NVIDIA H200 SXM (../shared/spec/hardware.md): dense figures, no sparsity; capacity as the device reports it (kernels-measured.md section 4)"
# B200: measured figures, neither fitted nor transferred (s32-b200): fp8_gemm_eff from Transformer
# Engine's MXFP8 GEMMs, kernels only (prequantized), on the four LLM-shaped GEMMs of a layer at
# M 15872 (B300, same 4500 TFLOP/s dense FP8 peak as B200 taken): 2702 TFLOP/s, which etkit's GEMM
# formula (fp8_gemm_half_dim 150, launch 3 us) reproduces at 0.639 (kernels-measured.md section 1);
# attn_bwd_eff the in-step FlashAttention-4 figure (834 TFLOP/s fwd+bwd, split as on H100, section 3).
"$ETKIT" calibrate "$ROWS" --gpu b200 --rows mb2511-b200-llama3-8b \
  --param fp8_gemm_eff=$B200_MXFP8 --param attn_bwd_eff=$B200_BWD -o "$OUT/b200.yaml" \
  --note "NVIDIA B200 (HGX) (../shared/spec/hardware.md): dense figures, no sparsity; capacity as the device reports it (kernels-measured.md section 4)" \
  --note "made by bench/refit-presets.sh: this GPU's measured figures, not fitted or transferred: fp8_gemm_eff $B200_MXFP8 (TE MXFP8 prequantized GEMMs, LLM shapes, kernels-measured.md section 1), attn_bwd_eff $B200_BWD (in-step FlashAttention-4, section 3)" >/dev/null
