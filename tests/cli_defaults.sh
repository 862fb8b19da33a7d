#!/usr/bin/env bash
# cli_defaults.sh — the defaults and outputs a new user trips over (issue 17, "Defaults and output
# people trip over"): missing output folders created, run's default job kept per part, --gpu and
# --gpus, Hugging Face seq and tied embeddings, the whole plan in the workload line, --csv's run
# row and --json's plan/cluster/version/command line, the shipped examples/, JSON inputs named as
# JSON, and warnings on wasteful pipeline plans.
# usage: cli_defaults.sh ETKIT SHARED_DIR
. "$(dirname "$0")/clilib.sh"
D=$2/data
S="--layers 2" # small models keep the runs fast

# --- missing parent folders of outputs are created (README's `gen -o out/llama7b`) ---
expect 0 "wrote 2 rank files $T/o1/deep/llama7b" gen --model llama2-7b $S --dp 2 -o "$T/o1/deep/llama7b"
[ -s "$T/o1/deep/llama7b.1.et" ] && [ -s "$T/o1/deep/llama7b.json" ] || fail "gen -o: rank files not in the new folder"
"$ETKIT" run --model llama2-7b $S --tp 2 -o "$T/rep/a/r.txt" --timeline "$T/tl/b/t.json" || fail "run -o/--timeline into new folders"
grep -q "step time" "$T/rep/a/r.txt" 2>/dev/null || fail "run -o into a new folder: no report"
[ -s "$T/tl/b/t.json" ] || fail "run --timeline into a new folder: no timeline"
"$ETKIT" run --model llama2-7b $S --tp 2 --write-traces "$T/wt/c/job" >/dev/null 2>&1 || fail "run --write-traces into a new folder"
[ -s "$T/wt/c/job.1.et" ] && [ -s "$T/wt/c/job.json" ] || fail "run --write-traces: rank files not in the new folder"
"$ETKIT" convert pytorch -q --host tests/pytorch/mlp_host_et.json -o "$T/cv/x/mlp" >/dev/null 2>&1
[ -s "$T/cv/x/mlp.0.et" ] || fail "convert -o into a new folder"
"$ETKIT" json "$T/o1/deep/llama7b.0.et" -o "$T/js/x.json" && [ -s "$T/js/x.json" ] || fail "json -o into a new folder"
"$ETKIT" dot -n 10 "$T/o1/deep/llama7b.0.et" -o "$T/dot/x.dot" && [ -s "$T/dot/x.dot" ] || fail "dot -o into a new folder"
: >"$T/afile"
expect 2 "$T/afile is not a folder" run --model llama2-7b $S -o "$T/afile/r.txt"

# --- run: a flag changes only itself; the default job (llama3-8b, tp 4 x pp 2 x dp 8, sp,
# global batch 256 of 8192 tokens) stays ---
# --seq 4096: still 64 ranks; tokens per step 256 x 4096 = 1,048,576
expect 0 "llama3-8b: tp 4 x cp 1 x pp 2 x dp 8 = 64 ranks, ep 1, sp on, zero 0, recompute none, seq 4096, bf16, global batch 256, micro-batch 1, 1f1b, flash attention" run --seq 4096
expect 0 "(1048576 tokens per step)" run --seq 4096
# --global-batch 512 alone: the default degrees stay; 512 x 8192 = 4,194,304 tokens
expect 0 "(4194304 tokens per step)" run $S --global-batch 512
expect 0 "ranks          64 " run $S --global-batch 512
# --model only: the default plan on another model
expect 0 "llama2-7b: tp 4 x cp 1 x pp 2 x dp 8 = 64 ranks" run --model llama2-7b $S
# a degree flag replaces the default degrees (the others 1) and, with fewer than 8 ranks, the
# preset becomes one node of that many GPUs
expect 0 "dgx-h100: 2 x H100-SXM, network 2 x 1" run --model llama2-7b $S --tp 2
# a bad plan built on the defaults says what the default job supplied
expect 2 "the default job supplied --model llama3-8b" run --tp 3
# inference: the default model only
expect 0 "llama3-8b inference: tp 8 x pp 1 x dp 1 (ep 1) = 8 ranks" run --mode inference --tp 8 --batch 8 \
  --prompt-len 512 --decode-steps 2
# --gpu replaces the cluster's GPU: the MFU is against the A100's 312 TFLOP/s (bf16)
expect 0 "of 312 TFLOP/s BF16 peak" run --model llama2-7b $S --tp 2 --gpu a100
expect 0 "dgx-h100: 2 x A100-SXM-80GB" run --model llama2-7b $S --tp 2 --gpu a100
expect 0 "GPU H100-SXM replaced by A100-SXM-80GB (--gpu)" run --model llama2-7b $S --tp 2 --gpu a100

# --- fewer than 8 GPUs on a preset: --gpus N (one node of N), also for sim ---
expect 0 "dgx-a100: 4 x A100-SXM-80GB, network 4 x 1" run --model llama2-7b $S --dp 4 --cluster dgx-a100 --gpus 4
expect 2 "one node of 1 to 8 GPUs" run --model llama2-7b $S --tp 2 --cluster dgx-a100 --gpus 9
expect 2 "has 4 NPUs (4 Switch x 1 Switch) but the workload has 2 ranks" run --model llama2-7b $S --tp 2 --cluster dgx-a100 --gpus 4
expect 2 "--gpus applies to presets" sim "$T/o1/deep/llama7b" --cluster examples/one-gpu.yaml --gpus 1

# --- examples/ shipped and valid: one-gpu.yaml and ASTRA-sim's network/system inputs ---
"$ETKIT" gen --model llama2-7b $S -o "$T/one" >/dev/null || fail "gen one rank"
expect 0 "one-gpu: 1 x H100-SXM" sim "$T/one" --cluster examples/one-gpu.yaml
# sim takes --gpu too (and --gpus' default: one rank on one GPU of the preset)
expect 0 "dgx-h100: 1 x A100-SXM-80GB, network 1 x 1" sim "$T/one" --cluster dgx-h100 --gpu a100
expect 2 "unknown GPU preset 'z9' (known: a100, h100, h200, b200, mi300x)" sim "$T/one" --cluster dgx-h100 --gpu z9
# ASTRA-sim printed 64,440 ns for this all-reduce with these inputs
expect 0 "step time      64,440 ns" sim "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce" \
  --astra-network examples/astra-net-ring8.yml --astra-system examples/astra-sys-ring.json
expect 0 "lab-cluster: 128 x H100-SXM, network 8 x 16" run --model llama2-7b $S --tp 8 --dp 16 --global-batch 16 \
  --cluster examples/lab-cluster.yaml

# --- Hugging Face configs: seq 4096 (not max_position_embeddings), tied embeddings ---
# Llama 3.2 1B (max_position_embeddings 131072, tie_word_embeddings true): 1,235,814,400
# parameters as published; by hand: embedding 128256 x 2048 = 262,668,288, 16 layers of
# 2 x 2048^2 (q, o) + 2 x 2048 x 512 (k, v) + 3 x 2048 x 8192 (MLP) + 2 x 2048 (norms) = 60,821,504,
# final norm 2048, the output layer the embedding's table
expect 0 "seq 4096; 1235814400 parameters" gen --model-file tests/hf/llama3.2-1b.json --summary
expect 0 "output layer tied to the token embedding" gen --model-file tests/hf/llama3.2-1b.json --summary
sed 's/"tie_word_embeddings": true/"tie_word_embeddings": false/' tests/hf/llama3.2-1b.json >"$T/untied.json"
# untied: + 128256 x 2048 = 1,498,482,688
expect 0 "seq 4096; 1498482688 parameters" gen --model-file "$T/untied.json" --summary
# gradients (fp32) of the tied model, one rank: 4 x 1,235,814,400 bytes
"$ETKIT" gen --model-file tests/hf/llama3.2-1b.json --summary --json >"$T/t.json" || fail "gen --json"
python3 - "$T/t.json" <<'P' || fail "tied embeddings: gradient bytes are not 4 x 1235814400"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["stages"][0]["memory_bytes"]["gradients"] == 4 * 1235814400 else 1)
P
# Qwen2.5-0.5B (tied, QKV biases): 494,032,768 parameters as published
expect 0 "seq 4096; 494032768 parameters" gen --model-file tests/hf/qwen2.5-0.5b.json --summary
# Qwen3-30B-A3B (max_position_embeddings 40960): trains at 4096; --seq sets it
expect 0 "seq 4096; 30532110336 parameters" gen --model-file "$D/models/qwen3-30b-a3b.json" --summary
expect 0 "vocab 151936, seq 8192;" gen --model-file "$D/models/qwen3-30b-a3b.json" --seq 8192 --summary
# GPT-2 (n_positions 1024, shorter than 4096): its own
expect 0 "seq 1024;" gen --model-file tests/hf/gpt2.json --summary
# and run shows it in the workload line
expect 0 "seq 4096, bf16" run --model-file tests/hf/qwen2.5-0.5b.json --layers 2 --tp 2

# --- the whole plan in the workload line (CP, EP, ZeRO, VPP, recompute, seq, precision) ---
P16="--model llama2-7b $S --tp 2 --cp 4 --dp 2 --global-batch 4 --zero 1 --recompute selective --precision fp8"
expect 0 "llama2-7b: tp 2 x cp 4 x pp 1 x dp 2 = 16 ranks, ep 1, sp off, zero 1, recompute selective, seq 4096, fp8, global batch 4, micro-batch 1" run $P16
expect 0 "tp 2 x cp 1 x pp 2 (vpp 2) x dp 1 = 4 ranks" run --model llama2-7b --layers 4 --tp 2 --pp 2 --vpp 2 --global-batch 4

# --- --json: plan and cluster as fields, version, command line; --csv: one run row ---
"$ETKIT" run $P16 --json >"$T/r.json" 2>/dev/null || fail "run --json"
"$ETKIT" run $P16 --csv >"$T/r.csv" 2>/dev/null || fail "run --csv"
ver=$("$ETKIT" --version | cut -d' ' -f2)
python3 - "$T/r.json" "$T/r.csv" "$ver" <<'P' || fail "run --json / --csv: plan, cluster or run row wrong"
import csv, json, sys
d = json.load(open(sys.argv[1]))
p, c = d["plan"], d["cluster"]
want = {"tp": 2, "cp": 4, "pp": 1, "dp": 2, "ep": 1, "zero": 1, "recompute": "selective", "seq": 4096,
        "precision": "fp8", "ranks": 16, "sp": False, "global_batch": 4, "model": "llama2-7b"}
bad = [k for k, v in want.items() if p.get(k) != v]
assert not bad, ("plan", bad, p)
assert c["name"] == "dgx-h100" and c["npus"] == 16 and c["gpu"]["name"] == "H100-SXM", c
assert [x["size"] for x in c["network"]] == [8, 2], c["network"]
assert d["etkit_version"] == sys.argv[3], d["etkit_version"]
assert "--cp 4" in d["command_line"] and d["command_line"].startswith("etkit run"), d["command_line"]
lines = open(sys.argv[2]).read().split("\n\n")
rows = list(csv.DictReader(lines[0].splitlines()))
assert len(rows) == 1 and rows[0]["section"] == "run", rows
r = rows[0]
assert int(r["step_ns"]) == d["step_ns"], (r["step_ns"], d["step_ns"])
assert abs(float(r["mfu"]) - d["mfu"]) < 1e-4 and abs(float(r["tokens_per_s"]) - d["tokens_per_s"]) < 0.1
assert int(r["mem_peak_bytes"]) == d["memory"]["peak_bytes"] and r["oom"] == "false"
assert (r["tp"], r["cp"], r["dp"], r["zero"], r["precision"]) == ("2", "4", "2", "1", "fp8"), r
assert r["ttft_ns"] == "" and r["etkit_version"] == sys.argv[3]
# the per-rank and communication tables follow, each after a blank line with its own header
assert lines[1].startswith("section,rank,") and lines[2].startswith("section,type,group"), lines[1][:40]
P
"$ETKIT" run --mode inference --model llama2-7b $S --tp 2 --batch 2 --prompt-len 256 --decode-steps 2 --csv \
  --json >/dev/null 2>&1 # last format flag wins; both accepted
"$ETKIT" run --mode inference --model llama2-7b $S --tp 2 --batch 2 --prompt-len 256 --decode-steps 2 --csv >"$T/i.csv" 2>/dev/null
"$ETKIT" run --mode inference --model llama2-7b $S --tp 2 --batch 2 --prompt-len 256 --decode-steps 2 --json >"$T/i.json" 2>/dev/null
python3 - "$T/i.json" "$T/i.csv" <<'P' || fail "inference --csv: TTFT/TPOT columns differ from --json"
import csv, json, sys
d = json.load(open(sys.argv[1]))
r = next(csv.DictReader(open(sys.argv[2]).read().split("\n\n")[0].splitlines()))
assert r["mode"] == "inference" and int(r["ttft_ns"]) == d["inference"]["ttft_ns"], r
assert abs(float(r["tpot_ns"]) - d["inference"]["tpot_ns"]) <= 0.5, (r["tpot_ns"], d["inference"]["tpot_ns"])
P
# sim: the same row with empty plan columns, the cluster filled
# (ASTRA-sim printed 64,440 ns for this all-reduce on these inputs)
expect 0 "^run,,,,,,,,,,,,,,,,,,astra-net-ring8.yml,[^,]*,8,64440,.*,etkit sim [^,]*all_reduce --astra-network" \
  sim "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce" --astra-network examples/astra-net-ring8.yml \
  --astra-system examples/astra-sys-ring.json --csv

# --- JSON inputs are named as JSON, with the converting command ---
expect 2 "JSON file, not a Chakra protobuf trace: a PyTorch host execution trace.*etkit convert pytorch --host FILE" \
  validate tests/pytorch/mlp_host_et.json
expect 2 "JSON file, not a Chakra protobuf trace: a Kineto / Chrome trace" sim tests/pytorch/mlp_profiler.json --cluster dgx-h100
"$ETKIT" json "$T/one.0.et" -o "$T/lossless.json" || fail "json export"
expect 2 "etkit's lossless Chakra JSON.*etkit json --to-et FILE" validate "$T/lossless.json"
"$ETKIT" json --feeder "$T/one.0.et" -o "$T/feeder.json" || fail "json --feeder"
expect 2 "Chakra's JSON-feeder form" info "$T/feeder.json"
# a real protobuf error stays a protobuf error
head -c 40 "$T/one.0.et" >"$T/trunc.et"
"$ETKIT" validate "$T/trunc.et" >"$T/out" 2>&1
grep -q "JSON" "$T/out" && fail "a truncated .et is reported as JSON: $(head -2 "$T/out")"

# --- warnings on plans that waste the machine ---
# pp 4 with 2 micro-batches: fewer than the stages; bubble (4-1)/(2+4-1) = 60%; 6 layers on 4
# stages: 2, 2, 1, 1
"$ETKIT" run --model llama2-7b --layers 6 --pp 4 --global-batch 2 >/dev/null 2>"$T/w"
grep -q "2 micro-batches per DP rank for 4 pipeline stages" "$T/w" || fail "no micro-batch warning: $(cat "$T/w")"
grep -q "pipeline bubble 60% of the step" "$T/w" || fail "no bubble warning: $(cat "$T/w")"
grep -q "unbalanced pipeline: stage 0 holds 2 layers, stage 2 1" "$T/w" || fail "no imbalance warning: $(cat "$T/w")"
# 8 layers on 2 stages, 8 micro-batches: bubble 1/9 = 11%, balanced: no warning
"$ETKIT" run --model llama2-7b --layers 8 --pp 2 --global-batch 8 >/dev/null 2>"$T/w"
[ ! -s "$T/w" ] || fail "balanced plan warned: $(cat "$T/w")"
# gen says it too; --quiet silences run
expect 0 "pipeline bubble 60% of the step" gen --model llama2-7b --layers 6 --pp 4 --global-batch 2 --summary
"$ETKIT" run --model llama2-7b --layers 6 --pp 4 --global-batch 2 --quiet >/dev/null 2>"$T/w"
[ ! -s "$T/w" ] || fail "--quiet still warned: $(cat "$T/w")"

[ "$fails" = 0 ] && echo "cli_defaults: all passed"
exit $((fails > 0))
