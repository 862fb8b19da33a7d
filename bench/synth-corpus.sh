#!/usr/bin/env bash
# synth-corpus.sh — the training corpus of `etkit synth` (docs/synth.md "Corpus"): small training
# steps from `etkit gen` across model families, sizes, parallel plans and pipeline schedules
# (plus a few inference batches), and the PyTorch traces of tests/pytorch converted to Chakra.
# Every workload gives one rank graph per rank class (etkit synth fit keeps one rank per
# distinct program), well over 300 in all.
#
# Split by model family, so a family in test is never in train:
#   train: llama family (llama2-7b, llama3-8b, llama2-13b shapes: SwiGLU, RoPE, RMSNorm, GQA)
#          + the converted PyTorch traces (mlp, transformer)
#   val:   moe family (mixtral-8x7b shapes: experts, all-to-all)
#   test:  gpt family (gpt3-175b, megatron-22b shapes: GELU MLP, LayerNorm)
# Writes OUT/<family>/<name>.<rank>.et + .json and the lists OUT/train.txt, val.txt, test.txt
# (one workload prefix per line).
# usage: bash bench/synth-corpus.sh OUT [ETKIT]   (ETKIT default: build/etkit)
set -u
OUT=${1:?usage: synth-corpus.sh OUT [ETKIT]}
ETKIT=${2:-build/etkit}
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/llama" "$OUT/gpt" "$OUT/moe" "$OUT/pytorch"
: >"$OUT/train.txt"; : >"$OUT/val.txt"; : >"$OUT/test.txt"
n=0

# gen FAMILY LIST NAME ARGS...: one workload; impossible plans are skipped
gen() {
  local fam=$1 list=$2 name=$3; shift 3
  if "$ETKIT" gen -q "$@" --vocab 1000 -o "$OUT/$fam/$name" >/dev/null 2>&1; then
    echo "$OUT/$fam/$name" >>"$OUT/$list"; n=$((n + 1))
  fi
}

train_plans() { # family list model hidden heads ffn
  local fam=$1 list=$2 model=$3 hid=$4 heads=$5 ffn=$6
  for layers in 2 4; do
    for tp in 1 2; do
      for pp in 1 2 4; do
        [ "$pp" -le "$layers" ] || continue
        for dp in 1 2; do
          for sched in 1f1b gpipe zb-h1; do
            [ "$pp" -gt 1 ] || [ "$sched" = 1f1b ] || continue
            gb=$((dp * pp * 2))
            gen "$fam" "$list" "$model-l$layers-t$tp-p$pp-d$dp-$sched" --model "$model" --layers "$layers" \
              --hidden "$hid" --heads "$heads" --kv-heads "$heads" --ffn "$ffn" --seq 128 \
              --tp "$tp" --pp "$pp" --dp "$dp" --global-batch "$gb" --schedule "$sched"
          done
        done
      done
    done
  done
  # sequence parallelism, ZeRO, recompute on one plan each
  gen "$fam" "$list" "$model-sp" --model "$model" --layers 2 --hidden "$hid" --heads "$heads" --kv-heads "$heads" \
    --ffn "$ffn" --seq 128 --tp 2 --sp --dp 2 --global-batch 4
  gen "$fam" "$list" "$model-zero1" --model "$model" --layers 2 --hidden "$hid" --heads "$heads" --kv-heads "$heads" \
    --ffn "$ffn" --seq 128 --dp 4 --zero 1 --global-batch 4
  gen "$fam" "$list" "$model-zero3" --model "$model" --layers 2 --hidden "$hid" --heads "$heads" --kv-heads "$heads" \
    --ffn "$ffn" --seq 128 --dp 2 --zero 3 --global-batch 4
  gen "$fam" "$list" "$model-rfull" --model "$model" --layers 4 --hidden "$hid" --heads "$heads" --kv-heads "$heads" \
    --ffn "$ffn" --seq 128 --tp 2 --pp 2 --global-batch 4 --recompute full
  gen "$fam" "$list" "$model-infer" --mode inference --model "$model" --layers 2 --hidden "$hid" --heads "$heads" \
    --kv-heads "$heads" --ffn "$ffn" --tp 2 --batch 2 --prompt-len 64 --decode-steps 4
}

train_plans llama train.txt llama2-7b 256 4 512
train_plans llama train.txt llama3-8b 512 8 1024
train_plans llama train.txt llama2-13b 384 6 768
train_plans gpt test.txt gpt3-175b 256 4 1024
train_plans gpt test.txt megatron-22b 384 6 1536
# MoE: experts over EP ranks
for layers in 2 4; do
  for ep in 1 2; do
    for pp in 1 2; do
      for tp in 1 2; do
        gen moe val.txt "mixtral-l$layers-e$ep-p$pp-t$tp" --model mixtral-8x7b --layers "$layers" --hidden 256 \
          --heads 4 --kv-heads 4 --ffn 512 --seq 128 --ep "$ep" --dp 2 --pp "$pp" --tp "$tp" \
          $([ "$tp" -gt 1 ] && echo --sp) --global-batch $((2 * pp * 2))
      done
    done
  done
done

# the PyTorch traces recorded with Debian's torch (tests/pytorch/record.py), converted
P=$HERE/tests/pytorch
for m in mlp transformer; do
  if "$ETKIT" convert pytorch -q --host "$P/${m}_host_et.json" --device "$P/${m}_profiler.json" \
    -o "$OUT/pytorch/$m" >/dev/null 2>&1; then
    echo "$OUT/pytorch/$m" >>"$OUT/train.txt"; n=$((n + 1))
  fi
done
echo "synth corpus: $n workloads in $OUT (train $(wc -l <"$OUT/train.txt"), val $(wc -l <"$OUT/val.txt"), test $(wc -l <"$OUT/test.txt"))"
