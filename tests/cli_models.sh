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

# --recompute-modules (Megatron's selective recompute modules): the tensors a module makes are
# not kept, so one micro-batch's peak falls by exactly their bytes in every layer holding the
# module. DeepSeek-V3, 4 layers (3 dense), seq 1024, BF16, one micro-batch, one rank:
# mla_up_proj drops qan, ckvn, Q, K, V: layers x s x 2 B x (q_lora + kv_lora + heads x
# (2 (qk_nope + qk_rope) + v_head)) = 4 x 1024 x 2 x (1536 + 512 + 128 x 512) = 553648128;
# mlp drops the dense layers' gate, up and SwiGLU outputs: 3 x 1024 x 2 x 3 x 18432 = 339738624.
rm_peak() {
  "$ETKIT" run --model deepseek-v3 --layers 4 --seq 1024 --ep 1 --dp 1 --micro-batch 1 \
    --global-batch 1 --recompute-modules "$1" --json 2>/dev/null |
    python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["memory"]["peak_bytes"], d["step_ns"])'
}
read -r p0 t0 <<<"$(rm_peak none)"
read -r p1 t1 <<<"$(rm_peak mla_up_proj)"
read -r p2 t2 <<<"$(rm_peak mlp)"
read -r p3 t3 <<<"$(rm_peak mla_up_proj,mlp)"
[ "$((p0 - p1))" = 553648128 ] || fail "mla_up_proj: peak $p0 -> $p1, want 553648128 B less"
[ "$((p0 - p2))" = 339738624 ] || fail "mlp: peak $p0 -> $p2, want 339738624 B less"
[ "$((p0 - p3))" = 893386752 ] || fail "mla_up_proj,mlp: peak $p0 -> $p3, want 893386752 B less"
[ "$t1" -gt "$t0" ] && [ "$t3" -gt "$t2" ] || fail "recomputed up-projections cost no time ($t0 $t1 $t2 $t3)"
# Llama 3 8B, 2 layers, seq 1024: mlp drops gate, up and SwiGLU outputs, 2 x 1024 x 2 x 3 x 14336
l0=$("$ETKIT" run --model llama3-8b --layers 2 --seq 1024 --dp 1 --tp 1 --pp 1 --micro-batch 1 --global-batch 1 --json 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["memory"]["peak_bytes"])')
l1=$("$ETKIT" run --model llama3-8b --layers 2 --seq 1024 --dp 1 --tp 1 --pp 1 --micro-batch 1 --global-batch 1 \
  --recompute-modules mlp --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["memory"]["peak_bytes"])')
[ "$((l0 - l1))" = 176160768 ] || fail "llama3-8b mlp: peak $l0 -> $l1, want 176160768 B less"
expect 2 "'foo' is not a module (mla_up_proj, mlp, moe_act, or none)" run --model deepseek-v3 --recompute-modules foo
expect 2 "model llama3-8b (models/blocks/llama.yaml) has no op of this module" run --model llama3-8b --recompute-modules mla_up_proj
expect 2 "--recompute-modules is a training option" run --model deepseek-v3 --mode inference --recompute-modules mlp

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_models: ok"
