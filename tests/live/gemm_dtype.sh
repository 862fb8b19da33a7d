#!/usr/bin/env bash
# gemm_dtype.sh — issue #11: cuBLAS / cuBLASLt GEMMs are timed at the peak of the dtype the call
# names (gemm_dtype.c: one 4096^3 GEMM per dtype between two CUDA events). The GPU is given here
# with all five peaks (test inputs, H100-like: bf16 989, fp16 989, fp8 1979, fp32 67, tf32 495
# TFLOP/s), one rank. Closed forms:
#   --compute roofline: floor(2 x 4096^3 / peak[dtype]) ns (the bytes term, at most 3 x 4096^2 x
#     4 B / 3.35 TB/s = 60 us, stays below every compute term): BF16 and FP16 138,967, FP8
#     69,448, FP32 2,051,327, TF32 277,654; FP32 inputs with CUBLAS_COMPUTE_32F_FAST_16BF run
#     at BF16; cublasSgemm at FP32, at TF32 in CUBLAS_TF32_TENSOR_OP_MATH; cublasLtMatmul by its
#     descriptor's compute type;
#   the default compute model: flops / (peak x eff(shape)) + launch_ns (3,000 ns, set here); the
#     efficiency is the same function of the shape for every non-FP8 dtype, so (FP32 - launch) /
#     (BF16 - launch) = 989 / 67 and TF32's = 989 / 495 (to 1e-5: each time is rounded to the ns).
# The h100 preset has no FP32/TF32 peak: a GEMM in FP32 is then timed at the cluster's precision
# with one warning naming it.
# usage: bash tests/live/gemm_dtype.sh <etkit>
. "$(dirname "$0")/livelib.sh"
if [ "$CUDA_CC" = own ]; then LT=-l:libcublasLt.so.13; else LT=-lcublasLt; fi
cuda_build $CUDA_CC "$T/gemm_dtype" "$HERE/gemm_dtype.c" -lcublas $LT -lcudart
cat >"$T/gpu5.yaml" <<'Y'
name: dtype-test
gpu:
  name: H100-5peaks
  peak_tflops: {bf16: 989, fp16: 989, fp8: 1979, fp32: 67, tf32: 495}
  hbm_bw_GBps: 3350
  hbm_MiB: 81559
  compute: {launch_ns: 3000}
network:
  - size: 1
    topology: Ring
    bandwidth: 100
    latency: 1000
Y
v() { sed -n "s/^$1 \([0-9]*\)$/\1/p" "$2"; }
timeout 60 "$ETKIT" live --cluster "$T/gpu5.yaml" --ranks 1 --cpu-scale 0 --compute roofline -- "$T/gemm_dtype" \
  >"$T/r.out" 2>"$T/r.err" || fail "roofline run exited $?: $(tail -3 "$T/r.err")"
F=137438953472 # 2 x 4096^3
want() { awk -v f=$F -v p="$1" 'BEGIN { printf "%d", f / (p * 1e12) * 1e9 }'; }
for c in gemmex_bf16:989 gemmex_fp16:989 gemmex_fp8:1979 gemmex_fp32:67 gemmex_tf32:495 gemmex_fp32_fast_bf16:989 \
         sgemm:67 sgemm_tf32_math:495 lt_fp32:67 lt_tf32:495; do
  n=${c%%:*} p=${c##*:} w=$(want ${c##*:}); g=$(v $n "$T/r.out")
  [ "$g" = "$w" ] && ok "roofline $n: $g ns = floor(2 x 4096^3 / ${p}e12 s)" || fail "roofline $n: '$g' ns, want $w"
done
timeout 60 "$ETKIT" live --cluster "$T/gpu5.yaml" --ranks 1 --cpu-scale 0 -- "$T/gemm_dtype" >"$T/c.out" 2>"$T/c.err" ||
  fail "compute-model run exited $?: $(tail -3 "$T/c.err")"
b=$(v gemmex_bf16 "$T/c.out")
for c in gemmex_fp32:67 gemmex_tf32:495 lt_fp32:67 sgemm_tf32_math:495; do
  n=${c%%:*} p=${c##*:} g=$(v ${c%%:*} "$T/c.out")
  awk -v g="${g:-0}" -v b="${b:-1}" -v p=$p 'BEGIN { r = (g - 3000) / (b - 3000); w = 989 / p; exit !(r / w - 1 < 1e-5 && 1 - r / w < 1e-5) }' &&
    ok "compute model ($n - launch) / (bf16 - launch) = ($g - 3000) / ($b - 3000) = 989 / $p" ||
    fail "compute model ($n - 3000) / (bf16 - 3000) = ($g - 3000) / ($b - 3000), want 989 / $p"
done
# the preset without FP32: the cluster's precision, said once
timeout 60 "$ETKIT" live --ranks 1 --cpu-scale 0 --compute roofline -- "$T/gemm_dtype" >"$T/p.out" 2>"$T/p.err" ||
  fail "preset run exited $?: $(tail -3 "$T/p.err")"
[ "$(v gemmex_fp32 "$T/p.out")" = 138967 ] && [ "$(grep -c 'has no fp32 peak: timed at the bf16 peak' "$T/p.err")" = 1 ] &&
  ok "h100 preset: FP32 at the bf16 peak, one warning: $(grep -o 'etkit live: .* has no fp32 peak' "$T/p.err")" ||
  fail "preset: fp32 $(v gemmex_fp32 "$T/p.out") ns; $(grep -c 'no fp32 peak' "$T/p.err") warnings"
exit $((fails > 0))
