#!/usr/bin/env bash
# bench/moe_rows.sh — the MoE training rows of ../shared/spec/calibration-modern.json (H100 and
# B200 Megatron-Bridge; plans as bench/calibration/modern-plan-extra.json completes them) as
# `etkit run` commands, each with its timeline, then bench/timeline_decomp.py on each: compute by
# kernel class, exposed communication by type and idle per rank class (bench/RESULTS.md s32-h100).
# usage: bash bench/moe_rows.sh <build-dir> <shared-dir> <out-dir> [extra etkit run flags...]
set -eu
E=$1/etkit; M=$2/data/models; T=$3; shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$T"
C="--zero 1 --grad-precision bf16 --precision fp8 --micro-batch 1 --seq 4096"
run() {
  n=$1; shift
  echo "== $n"
  "$E" run "$@" --timeline "$T/$n.json" | grep -E '^step time'
  python3 "$HERE/timeline_decomp.py" "$T/$n.json"
}
run h100-qwen3-30b  --model-file $M/qwen3-30b-a3b.json --cluster dgx-h100 --nodes 2 $C --ep 16 --global-batch 1024 --dp 16 "$@"
run h100-qwen3-235b --model-file $M/qwen3-235b-a22b.json --cluster dgx-h100 --nodes 32 $C --sp --tp 2 --pp 8 --vpp 4 --ep 32 --global-batch 8192 --dp 16 "$@"
run h100-dsv3       --model deepseek-v3 --cluster dgx-h100 --nodes 128 $C --sp --tp 2 --pp 8 --vpp 4 --ep 64 --global-batch 8192 --dp 64 --recompute-modules mla_up_proj,mlp --moe-max-nodes 4 "$@"
run h100-gptoss     --model-file $M/gpt-oss-120b.json --cluster dgx-h100 --nodes 8 --zero 1 --grad-precision bf16 --precision bf16 --pp 4 --ep 8 --micro-batch 1 --global-batch 1280 --seq 4096 --dp 16 "$@"
run b200-qwen3-30b  --model-file $M/qwen3-30b-a3b.json --cluster dgx-b200 --nodes 1 --zero 1 --grad-precision bf16 --precision fp8 --micro-batch 4 --seq 4096 --ep 8 --global-batch 512 --dp 8 "$@"
run b200-qwen3-235b --model-file $M/qwen3-235b-a22b.json --cluster dgx-b200 --nodes 32 $C --pp 8 --ep 8 --global-batch 8192 --dp 32 "$@"
run b200-dsv3       --model deepseek-v3 --cluster dgx-b200 --nodes 32 $C --pp 8 --vpp 2 --ep 32 --global-batch 4096 --dp 32 --recompute-modules mla_up_proj,mlp --moe-max-nodes 4 "$@"
