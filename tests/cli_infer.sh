#!/usr/bin/env bash
# cli_infer.sh — `etkit gen --mode inference` and `etkit run --mode inference` / `etkit sim` on
# its traces: help, refused flags naming the flag, summary text and JSON (KV cache bytes against
# the closed form), validator-clean files, TTFT/TPOT in the text, JSON and CSV reports.
# usage: bash tests/cli_infer.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect

expect 0 "--decode-steps N" gen --help
expect 0 "TTFT" run --help
expect 2 "--mode wants training or inference, got 'bogus'" gen --mode bogus --summary
expect 2 "--prompt-len wants a positive integer, got '0'" gen --mode inference --prompt-len 0 --summary
expect 2 "--decode-steps wants a positive integer, got '0'" gen --mode inference --decode-steps 0 --summary
expect 2 "--zero is a training option" gen --mode inference --zero 1 --summary
expect 2 "--global-batch is a training option" run --mode inference --global-batch 8
expect 2 "--decode-steps needs --mode inference" gen --decode-steps 8 --summary
expect 2 "--micro-batches 3 does not divide --batch 4" gen --mode inference --batch 4 --micro-batches 3 --summary

# summary: llama3-8b TP 2, B 4, P 1000, N 24: KV cache per rank 2 x 32 layers x 4 KV heads x
# 128 x 2 bytes x 4 x 1024 tokens = 268435456 bytes
A="--mode inference --model llama3-8b --tp 2 --batch 4 --prompt-len 1000 --decode-steps 24"
expect 0 "KV cache 0.25 GiB (268435456 bytes)" gen $A --summary
expect 0 "tokens: 4000 prompt, 100 generated" gen $A --summary
"$ETKIT" gen $A --summary --json >"$T/s.json" || fail "gen --summary --json failed"
grep -q '"kv_cache": 268435456' "$T/s.json" || fail "summary JSON lacks the KV cache bytes"
grep -q '"kv_bytes_per_token": 131072' "$T/s.json" || fail "summary JSON lacks kv_bytes_per_token"
grep -q '"mode": "inference"' "$T/s.json" || fail "summary JSON lacks the mode"
# the prefill's attention: flash by default (as in training), unfused on request
grep -q '"attention": "flash"' "$T/s.json" || fail "summary JSON: the default prefill attention is not flash"
expect 0 "KV cache 16-bit, prefill attention flash" gen $A --summary
expect 0 "prefill attention unfused" gen $A --attention unfused --summary
expect 0 '"attention": "unfused"' gen $A --attention unfused --summary --json
expect 0 "each head replicated on 2 ranks" gen --mode inference --model llama3-8b --tp 16 --prompt-len 64 --summary
expect 2 "inference replicates KV heads only when the KV heads divide --tp" gen --mode inference --model llama3-8b \
  --hidden 6144 --heads 48 --tp 12 --summary
expect 0 "DOES NOT FIT" gen --mode inference --model llama3-70b --batch 8 --prompt-len 4096 --summary

# files: validator-clean, phases in the node names; etkit sim reports TTFT/TPOT
B="--mode inference --model llama3-8b --layers 4 --tp 2 --pp 2 --batch 4 --micro-batches 2 --prompt-len 64 --decode-steps 3"
expect 0 "wrote 4 rank files" gen $B -o "$T/inf"
expect 0 "0 errors, 0 warnings" validate "$T/inf"
"$ETKIT" json "$T/inf.0.et" 2>/dev/null | grep -q '"prefill/mb0.L0.q"' || fail "no prefill/ node names in rank 0"
"$ETKIT" json "$T/inf.0.et" 2>/dev/null | grep -q '"decode3/mb1.recv_token"' || fail "no decode3/ token receive in rank 0"
cat >"$T/c4.yaml" <<'Y'
name: four
gpu: h100
network:
  - {size: 4, topology: Switch, bandwidth: 450, latency: 500}
Y
expect 0 "TPOT .* over 3 steps" sim "$T/inf" --cluster "$T/c4.yaml"
expect 0 "TTFT " sim "$T/inf" --cluster "$T/c4.yaml" --no-fold --timeline "$T/tl.json"
python3 - "$T/tl.json" <<'P' || fail "timeline: no phase track"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["name"] for e in ev if e.get("pid") == 4 and e["ph"] == "X"]
assert names == ["prefill (TTFT)", "decode1", "decode2", "decode3"], names
assert any(e.get("name", "").startswith("decode2/mb1.L3.") for e in ev)
P

# DeepSeek-V3: decode steps run MLA absorbed (q_absorb, v_up; no k_b/v_b over the cache), the
# prefill the naive form
D="--mode inference --model deepseek-v3 --layers 4 --tp 2 --batch 1 --prompt-len 16 --decode-steps 1"
expect 0 "wrote 2 rank files" gen $D -o "$T/ds"
"$ETKIT" json "$T/ds.0.et" >"$T/ds.json" 2>/dev/null || fail "etkit json of the deepseek trace failed"
grep -q '"decode1/mb0.L3.q_absorb"' "$T/ds.json" || fail "deepseek decode: no q_absorb"
grep -q '"decode1/mb0.L0.v_up"' "$T/ds.json" || fail "deepseek decode dense layer: no v_up"
grep -q '"decode1/mb0.L3.k_b"' "$T/ds.json" && fail "deepseek decode still decompresses K"
grep -q '"prefill/mb0.L3.k_b"' "$T/ds.json" || fail "deepseek prefill: no k_b"

# run: text, JSON (TTFT + N TPOT = the request) and CSV
expect 0 "TPOT .* over 8 steps" run --mode inference --model llama3-8b --tp 8 --batch 8 --prompt-len 512 \
  --decode-steps 8 --cluster dgx-h100 --nodes 1
"$ETKIT" run --mode inference --model llama3-8b --tp 8 --batch 8 --prompt-len 512 --decode-steps 8 \
  --cluster dgx-h100 --nodes 1 --json >"$T/r.json" || fail "run --json failed"
python3 - "$T/r.json" <<'P' || fail "run --json: inference figures inconsistent"
import json, sys
r = json.load(open(sys.argv[1]))
x = r["inference"]
e = x["phase_end_ns"]
assert x["decode_steps"] == 8 and len(e) == 9
assert x["ttft_ns"] == e[0] and e[-1] == r["step_ns"]
assert abs(x["ttft_ns"] + 8 * x["tpot_ns"] - r["step_ns"]) < 1e-6 * r["step_ns"]
steps = [b - a for a, b in zip(e, e[1:])]
assert min(steps) == x["tpot_min_ns"] and max(steps) == x["tpot_max_ns"]
assert r["tokens_per_step"] == 8 * 9
P
expect 0 "^decode8,," run --mode inference --model llama3-8b --tp 8 --batch 8 --prompt-len 512 --decode-steps 8 \
  --cluster dgx-h100 --nodes 1 --csv

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_infer: ok"
