#!/usr/bin/env bash
# cli_sim.sh — `etkit sim` and `etkit run` end to end: help and usage errors (exit 2), ASTRA-sim
# inputs reproducing ASTRA-sim's measured 64,440 ns all-reduce, JSON/CSV/timeline outputs, the
# STAGE workload, the converted trace with and without --missing-deps=ignore, a cluster whose
# size does not match, a corrupt trace, and `etkit run` on its defaults.
# usage: bash tests/cli_sim.sh <etkit> <shared-dir>
set -u
ETKIT=$1; SHARED=$2; D=$SHARED/data
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
for f in "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce.0.et" \
         "$D/stage/gpt_small_dp2_tp2_pp2/workload.0.et" "$D/chakra/converted_cnn_ddp.0.et"; do
  [ -f "$f" ] || { echo "FAIL missing shared data file: $f"; exit 1; }
done

expect "sim --help" 0 "example" "$ETKIT" sim --help
expect "run --help" 0 "example" "$ETKIT" run --help
expect "sim unknown flag" 2 "unknown option '--bogus'" "$ETKIT" sim --bogus x
expect "run unknown flag" 2 "unknown option '--bogus'" "$ETKIT" run --bogus
expect "sim no workload" 2 "no workload given" "$ETKIT" sim --cluster dgx-h100
expect "sim no cluster" 2 "no cluster" "$ETKIT" sim "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce"
expect "sim bad streams" 2 "--comm-streams must be between 1 and 32" "$ETKIT" sim x --comm-streams 0
expect "sim bad missing-deps" 2 "--missing-deps wants 'error' or 'ignore'" "$ETKIT" sim x --missing-deps=maybe
expect "sim missing file" 2 "nonexistent" "$ETKIT" sim "$T/nonexistent.0.et" --cluster dgx-h100

# ASTRA-sim's own inputs: Ring of 8, 50 GB/s (2^30), 500 ns, ring algorithms, C = 4.
cat >"$T/net.yml" <<'Y'
topology: [ Ring ]
npus_count: [ 8 ]
bandwidth: [ 50.0 ]
latency: [ 500.0 ]
Y
cat >"$T/sys.json" <<'J'
{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
 "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"],
 "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
 "all-to-all-implementation": ["ring"], "collective-optimization": "localBWAware",
 "local-mem-bw": 1600, "peak-perf": 900, "roofline-enabled": 0}
J
AR=$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce
expect "astra all-reduce 64,440 ns (ASTRA-sim measured)" 0 "step time      64,440 ns" \
  "$ETKIT" sim "$AR" --astra-network "$T/net.yml" --astra-system "$T/sys.json"
expect "astra json" 0 '"step_ns": 64440' \
  "$ETKIT" sim "$AR" --astra-network "$T/net.yml" --astra-system "$T/sys.json" --json
"$ETKIT" sim "$AR" --astra-network "$T/net.yml" --astra-system "$T/sys.json" --json -o "$T/r.json" >/dev/null 2>&1
check "json -o written" $([ -s "$T/r.json" ] && echo 0 || echo 1)
if command -v python3 >/dev/null; then
  python3 -c "import json,sys; d=json.load(open('$T/r.json')); sys.exit(0 if d['step_ns']==64440 and len(d['ranks'])==8 else 1)"
  check "json parses, 8 ranks" $?
fi
# -o / --timeline to a pipe (like /dev/stdout): written in place, never renamed over
mkfifo "$T/pipe"
cat "$T/pipe" >"$T/pipe.out" &
"$ETKIT" sim "$AR" --astra-network "$T/net.yml" --astra-system "$T/sys.json" --json -o "$T/pipe" >/dev/null 2>&1
wait
check "-o to a pipe: written in place, still a pipe" \
  $([ -p "$T/pipe" ] && grep -q '"step_ns": 64440' "$T/pipe.out" && echo 0 || echo 1)
expect "astra csv" 0 "rank,7,64440" \
  "$ETKIT" sim "$AR" --astra-network "$T/net.yml" --astra-system "$T/sys.json" --csv --no-fold
expect "astra-network without system" 2 "go together" "$ETKIT" sim "$AR" --astra-network "$T/net.yml"

# rank count != cluster size: 8 ranks on 2 DGX H100 nodes (16 GPUs)
expect "cluster size mismatch" 2 "has 16 NPUs (8 Switch x 2 Switch) but the workload has 8 ranks" "$ETKIT" sim "$AR" --cluster dgx-h100 --nodes 2
expect "unknown preset" 2 "dgx-z9" "$ETKIT" sim "$AR" --cluster dgx-z9

# a corrupt trace
mkdir -p "$T/bad"; head -c 100 "$AR.0.et" >"$T/bad/w.0.et"; printf '\xff\xff\xff\xff\x0f' >>"$T/bad/w.0.et"
expect "corrupt trace" 2 "w.0.et" "$ETKIT" sim "$T/bad/w.0.et" --cluster dgx-h100

# STAGE workload on one DGX H100 node, with a timeline
expect "stage workload" 0 "step time" "$ETKIT" sim "$D/stage/gpt_small_dp2_tp2_pp2/workload" \
  --cluster dgx-h100 --stage-units --timeline "$T/tl.json" --quiet
if command -v python3 >/dev/null; then
  python3 - "$T/tl.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
x = [e for e in d["traceEvents"] if e["ph"] == "X"]
# folded: 2 representatives (one per pipeline stage) x 352 nodes per STAGE rank file
sys.exit(0 if len(x) == 704 and any(e["name"].startswith("ALL_REDUCE ") for e in x) else 1)
P
  check "timeline: valid JSON, 704 events" $?
fi

# Chakra's converted trace (one rank): dangling deps are an error unless ignored
cat >"$T/one.yaml" <<'Y'
name: one-gpu
gpu: h100
network:
  - {size: 1, topology: Switch, bandwidth: 50, latency: 500}
Y
CNN=$D/chakra/converted_cnn_ddp.0.et
expect "converted: missing deps error" 2 "dependencies on node ids absent from the trace" \
  "$ETKIT" sim "$CNN" --cluster "$T/one.yaml"
expect "converted: --missing-deps=ignore" 0 "node events    3,664" \
  "$ETKIT" sim "$CNN" --cluster "$T/one.yaml" --missing-deps=ignore --quiet

# the same step three ways: etkit run (in memory, folded), etkit gen + etkit sim on the files
# (classes detected from the traces), and etkit sim --no-fold: identical step times
F="--model llama2-7b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 8"
step_of() { grep -o '"step_ns": [0-9]*' | grep -o '[0-9]*$'; }
mkdir -p "$T/gen"
"$ETKIT" gen $F -o "$T/gen/w" >/dev/null 2>&1
s_run=$("$ETKIT" run $F --cluster dgx-h100 --nodes 1 --json 2>/dev/null | step_of)
s_sim=$("$ETKIT" sim "$T/gen/w" --cluster dgx-h100 --nodes 1 --json --quiet 2>/dev/null | step_of)
s_all=$("$ETKIT" sim "$T/gen/w" --cluster dgx-h100 --nodes 1 --json --quiet --no-fold 2>/dev/null | step_of)
check "run == gen+sim == gen+sim --no-fold ($s_run, $s_sim, $s_all ns)" \
  $([ -n "$s_run" ] && [ "$s_run" = "$s_sim" ] && [ "$s_sim" = "$s_all" ] && echo 0 || echo 1)

# a deadlock (exit 1): a comm-group file that puts rank 2 (the other pipeline stage, which never
# issues on group 1) into stage 0's TP group: ranks 0 and 1 wait for it forever
mkdir -p "$T/dl"
"$ETKIT" gen --model llama2-7b --layers 2 --tp 2 --pp 2 --dp 1 --global-batch 2 -o "$T/dl/w" >/dev/null 2>&1
echo '{"1": [0, 1, 2], "2": [2, 3]}' >"$T/dl/bad.json"
cat >"$T/dl/c4.yaml" <<'Y'
name: four
gpu: h100
network:
  - {size: 4, topology: Switch, bandwidth: 450, latency: 500}
Y
expect "deadlock reported, exit 1" 1 'on group "1" (node id 2) waits for rank(s) 2' \
  "$ETKIT" sim "$T/dl/w" --groups "$T/dl/bad.json" --cluster "$T/dl/c4.yaml" --quiet --no-fold
expect "deadlock lists every rank unfolded" 1 "deadlock at t = 49142 ns: 4 rank(s) cannot proceed" \
  "$ETKIT" sim "$T/dl/w" --groups "$T/dl/bad.json" --cluster "$T/dl/c4.yaml" --quiet --no-fold --compute roofline

# --write-traces: etkit run also writes the workload it simulated
expect "run --write-traces" 0 "step time" "$ETKIT" run --model llama2-7b --layers 2 --tp 2 --pp 2 \
  --dp 2 --global-batch 4 --cluster dgx-h100 --nodes 1 --write-traces "$T/wt"
check "written traces: 8 rank files + groups" \
  $([ -f "$T/wt.7.et" ] && [ -f "$T/wt.json" ] && [ ! -f "$T/wt.8.et" ] && echo 0 || echo 1)

# etkit run on the built-in defaults
expect "run defaults" 0 "llama3-8b: tp 4 x cp 1 x pp 2 x dp 8 = 64 ranks, ep 1, sp on, zero 0, recompute none, seq 8192, bf16, global batch 256, micro-batch 1, 1f1b, flash attention" "$ETKIT" run
expect "run defaults: MFU with flash attention" 0 "MFU 52.7% of 989 TFLOP/s BF16 peak" "$ETKIT" run
# two comm streams by default (pipeline sends beside the TP collectives); one stream queues them
expect "run defaults, one comm stream" 0 "MFU 51.0%" "$ETKIT" run --comm-streams 1
expect "run help: the default is flash" 0 "global-batch 256 --attention flash" "$ETKIT" run --help
expect "run defaults unfused" 0 "MFU 29.3%" "$ETKIT" run --attention unfused
# Llama 3 405B on 16,384 H100 with Meta's plan (docs/sim.md, the table's MFU column; Meta: 38-43%)
for vm in "1 31.0" "2 41.7" "4 49.2"; do
  set -- $vm
  expect "405B on the llama3 cluster, --vpp $1" 0 "MFU $2% of 989 " "$ETKIT" run --model llama3-405b --tp 8 \
    --pp 16 --dp 128 --sp --global-batch 2048 --first-stage-layers 7 --last-stage-layers 7 --vpp "$1" --cluster llama3
done
expect "run bad --attention" 2 "--attention wants unfused or flash, got 'bogus'" "$ETKIT" run --attention bogus
expect "run bad plan" 2 "tp" "$ETKIT" run --model llama3-8b --tp 3 --dp 1
exit $fail
