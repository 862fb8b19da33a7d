#!/usr/bin/env bash
# cli_models.sh — MoE, MLA and Hugging Face models through `etkit models` and `etkit gen`:
# the MoE presets with their parameter counts, every sample config of tests/hf generating a
# valid trace, FP8 GEMM marks in the written trace, and bad model inputs refused with a message
# naming the key and a non-zero exit.
# usage: bash tests/cli_models.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect

# presets: closed forms in tests/test_model_moe.c
expect 0 "mixtral-8x7b .* 46702792704" models
expect 0 "deepseek-v3 .* 671026404352" models
# every sample config lowers and validates (4 layers, short sequence, TP 2 with SP)
for f in tests/hf/*.json; do
  case $f in *gpt2.json) tp=1 sp= ;; *) tp=2 sp=--sp ;; esac   # GPT-2's vocab 50257 is odd
  b=$(basename "$f" .json)
  expect 0 "wrote" gen --model-file "$f" --layers 4 --seq 256 --tp $tp $sp -o "$T/$b"
  expect 0 "0 errors" validate "$T/$b.0.et"
done
# fp8: GEMM nodes carry "precision": "fp8", elementwise ones do not
expect 0 "wrote" gen --model mixtral-8x7b --layers 2 --seq 256 --precision fp8 -o "$T/f"
strings "$T/f.0.et" | grep -q "fp8" || fail "fp8 trace has no precision mark"
"$ETKIT" gen --model mixtral-8x7b --layers 2 --seq 256 -o "$T/b" >/dev/null 2>&1
strings "$T/b.0.et" | grep -q "fp8" && fail "bf16 trace carries an fp8 mark"
expect 2 "--precision wants bf16, fp16 or fp8, got 'int4'" gen --model mixtral-8x7b --precision int4 --summary
# bad model inputs name what is wrong
printf '{"model_type": "mixtral", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 64, "num_experts_per_tok": 2}' >"$T/mx.json"
expect 2 "mx.json: missing 'num_local_experts'" gen --model-file "$T/mx.json" --summary
printf '{"model_type": "deepseek_v2", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 64, "q_lora_rank": null}' >"$T/ds.json"
expect 2 "ds.json: 'q_lora_rank' is null" gen --model-file "$T/ds.json" --summary
printf 'name: m\narch: moe\nlayers: 2\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 64\nexperts: 4\ntopk: 8\nmoe_ffn: 128\n' >"$T/m.yaml"
expect 2 "topk 8 must be between 1 and experts 4" gen --model-file "$T/m.yaml" --summary
printf 'name: m\narch: moe\nlayers: 2\nhidden: 256\nheads: 8\nffn: 512\nvocab: 1000\nseq: 64\nexperts: 4\ntopk: 2\nmoe_ffn: 100\n' >"$T/m2.yaml"
expect 2 "tp 8 does not divide the expert FFN 100" gen --model-file "$T/m2.yaml" --tp 8 --summary

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_models: ok"
