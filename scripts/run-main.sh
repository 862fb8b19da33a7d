#!/usr/bin/env bash
# The main job on built-in defaults (make run): `etkit run` generates one training step of
# llama3-8b (TP 4 x PP 2 x DP 8, sequence parallelism, FlashAttention, global batch 256 x 8192 tokens, 1F1B) in
# memory and simulates it on 8 DGX H100 nodes (64 GPUs), printing the summary: step time, where
# each rank's time goes, TFLOP/s per GPU, MFU, tokens/s and per-collective bus bandwidth.
# It needs no files (the shared dir argument is accepted for symmetry with the other scripts).
set -u
ETKIT=$1
echo "== etkit run   (llama3-8b training on 8 x dgx-h100; 'etkit run --help' for the flags)"
"$ETKIT" run
