#!/usr/bin/env bash
# cli_reliability.sh — issue #18, the input side: hostile and extreme inputs to every reader
# and flag get an error naming the file, the line or flag and the limit, a non-zero exit, and
# no crash, hang or wrapped number: deep nesting, /dev/zero, FIFOs, directories, gzip bombs,
# dimensions past the limits, unknown and duplicate keys, out-of-range numbers.
# usage: bash tests/cli_reliability.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect
SHARED=${2:-}

# expectf STATUS TEXT ARGS...: like expect, with TEXT a fixed string
expectf() {
  local want=$1 pat=$2; shift 2
  timeout 60 "$ETKIT" "$@" >"$T/out" 2>&1
  local rc=$?
  [ "$rc" = "$want" ] || fail "etkit $* exited $rc, want $want: $(head -3 "$T/out")"
  grep -qF -- "$pat" "$T/out" || fail "etkit $*: output lacks '$pat': $(head -5 "$T/out")"
}

GOOD='name: x
arch: llama
layers: 2
hidden: 256
heads: 4
ffn: 512
vocab: 1000
seq: 64'

# 1. deep nesting: a SIGSEGV (model, config.json) or minutes (cluster) before
python3 -c "print('[' * 30000)" >"$T/deep.yaml"
python3 -c "print('{\"a\":' * 100000 + '1' + '}' * 100000)" >"$T/config.json"
python3 -c "print('[' * 1000000)" >"$T/deepc.yaml"
expectf 2 "deep.yaml:1: nesting deeper than 256 levels" gen --model-file "$T/deep.yaml" --summary
expectf 2 "config.json:1: nesting deeper than 256 levels" gen --model-file "$T/config.json" --summary
start=$(date +%s)
expectf 2 "deepc.yaml:1: nesting deeper than 256 levels" run --cluster "$T/deepc.yaml" --layers 2
[ $(( $(date +%s) - start )) -le 10 ] || fail "cluster [ x 1e6 took more than 10 s"

# 2. unbounded and non-regular inputs: say what they are
mkfifo "$T/fifo" && mkdir "$T/dir"
expectf 2 "/dev/zero: is a character device, not a regular file, expected a model file" gen --model-file /dev/zero --summary
expectf 2 "fifo: is a FIFO (named pipe), not a regular file, expected a model file" gen --model-file "$T/fifo" --summary
expectf 2 "dir: is a directory, expected a model file" gen --model-file "$T/dir" --summary
expectf 2 "/dev/zero: is a character device, not a regular file, expected a cluster file" run --cluster /dev/zero --layers 2
expectf 2 "dir: is a directory, expected a cluster file" run --cluster "$T/dir" --layers 2
expectf 2 "/dev/zero: is a character device, not a regular file, expected a .et trace file" info /dev/zero
expectf 2 "fifo: is a FIFO (named pipe), not a regular file, expected a .et trace file" validate "$T/fifo"
expectf 2 "dir: is a directory, expected a .et trace file" sim "$T/dir" --cluster dgx-h100
# readers that opened the file before looking at it: convert's input check and `etkit json`'s
# JSON sniff blocked on a FIFO (no writer: a hang), `report` read with no limit and called a
# folder "'[' or '{' expected"; `--cluster fifo` was taken for a preset name
expectf 2 "fifo: is a FIFO (named pipe), not a regular file, expected a PyTorch host trace (JSON): nothing written" \
  convert pytorch --host "$T/fifo" -o "$T/cvf"
expectf 2 "fifo: is a FIFO (named pipe), not a regular file, expected a Kineto device trace (JSON)" \
  convert pytorch --host tests/pytorch/mlp_host_et.json --device "$T/fifo" -o "$T/cvf"
expectf 2 "dir: is a directory, expected a PyTorch host trace (JSON)" convert pytorch --host "$T/dir" -o "$T/cvf"
expectf 2 "fifo: is a FIFO (named pipe), not a regular file, expected a .et trace file" json "$T/fifo"
expectf 2 "fifo: is a FIFO (named pipe), not a regular file, expected an input file" json --to-et "$T/fifo" -o "$T/x.et"
expectf 2 "fifo: is a FIFO (named pipe), not a regular file, expected a JSON file" report "$T/fifo" -o "$T/r.html"
expectf 2 "dir: is a directory, expected a JSON file" report "$T/dir" -o "$T/r.html"
expectf 2 "/dev/zero: is a character device, not a regular file, expected an ASTRA-sim network file" \
  run --astra-network /dev/zero --astra-system /dev/zero
out=$(cd "$T" && timeout 60 "$ETKIT" run --cluster fifo 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "fifo: is a FIFO (named pipe), not a regular file, expected a cluster file" <<<"$out" ||
  fail "run --cluster fifo (a FIFO in the current folder): exit $rc: $out"
out=$(cd "$T" && timeout 60 "$ETKIT" plan --model llama3-8b --global-batch 64 --cluster fifo --quiet 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "fifo: is a FIFO (named pipe), not a regular file, expected a cluster file" <<<"$out" ||
  fail "plan --cluster fifo (a FIFO in the current folder; it said 'is a preset: give --nodes'): exit $rc: $out"
[ ! -e "$T/cvf.0.et" ] && [ ! -e "$T/r.html" ] || fail "a refused input left an output"
head -c $((9 << 20)) /dev/zero | tr '\0' ' ' >"$T/big.yaml"
expectf 2 "big.yaml: 9437184 bytes, more than the limit of 8388608 bytes (8 MiB) for a model file" gen --model-file "$T/big.yaml" --summary
python3 -c "import gzip,sys; sys.stdout.buffer.write(gzip.compress(b' ' * (9 << 20)))" >"$T/bigz.yaml"
expectf 2 "bigz.yaml: decompresses to more than the limit of 8388608 bytes (8 MiB) for a model file" gen --model-file "$T/bigz.yaml" --summary

# 3. a 510 KB gzip of empty frames grew to 7.5 GB before failing: now after 1 MiB
python3 -c "import gzip,sys; sys.stdout.buffer.write(gzip.compress(b'\0' * (500 << 20), 6))" >"$T/bomb.et"
expectf 2 "bomb.et: 1048575 nodes in 1048576 bytes (1.0 bytes per node; a Chakra node takes at least 8" info "$T/bomb.et"

# 4. overflow is an error, never a wrapped value
printf '%s\n' "$GOOD" | sed 's/^hidden: 256/hidden: 1099511627776/' >"$T/hid.yaml"
expectf 2 "model x: hidden 1099511627776 is out of range (at most 1048576" gen --model-file "$T/hid.yaml" --summary
expectf 2 "model llama2-7b: hidden 2097152 is out of range (at most 1048576" gen --hidden 2097152 --summary
printf '{"num_hidden_layers": 2, "hidden_size": 4611686018427387904, "num_attention_heads": 4, "intermediate_size": 512,
 "vocab_size": 1000, "max_position_embeddings": 64}\n' >"$T/hf62.json"
expectf 2 "hidden 4611686018427387904 is out of range" gen --model-file "$T/hf62.json" --summary
expectf 2 "tensor layer.sc has 5.37e+16 elements at batch 100000000 (at most 2^52" gen --micro-batch 100000000 -o "$T/mb"
expectf 2 "FLOPs does not fit num_ops (at most 9.2e18)" gen --layers 1 --hidden 1048576 --heads 16 --ffn 4194304 \
  --vocab 1000 --seq 4096 --micro-batch 1024 -o "$T/huge"
[ ! -e "$T/mb.0.et" ] && [ ! -e "$T/huge.0.et" ] || fail "a refused gen left a trace"

# 5. ranges
for f in "--efficiency 1e-17" "--efficiency 0" "--efficiency nan"; do
  expectf 2 "--efficiency" run --layers 1 --dp 8 $f
done
expectf 2 "--efficiency must be in [0.001, 1], got 1e-17" run --layers 1 --dp 8 --efficiency 1e-17
expectf 2 "the factor must be a number in [0.001, 1000]" run --layers 1 --dp 8 --slow-rank 0:1e-300
# the same kind of factor elsewhere: 1e-300 simulated into a 1.84e19 ns node before failing
expectf 2 "--link-factor 'nvlink:0:1e-300': factor 1e-300: expected a number in [0.001, 1000]" run --layers 1 --dp 8 --link-factor nvlink:0:1e-300
expectf 2 "--link-factor 'nic:0:1e300': factor 1e+300: expected a number in [0.001, 1000]" run --layers 1 --dp 8 --link-factor nic:0:1e300
expectf 2 "compute model: gemm_eff: expected a fraction in [0.001, 1], got 1e-300" run --layers 1 --dp 8 --compute-param gemm_eff=1e-300
expectf 2 "--model-flops wants a finite number, got 'nan'" run --layers 1 --dp 8 --model-flops nan
expectf 2 "--model-flops wants a finite number, got 'inf'" run --layers 1 --dp 8 --model-flops inf
expectf 2 "--model-flops must be a positive number of FLOPs, got -5" run --layers 1 --dp 8 --model-flops -5
# --tokens 1e300 printed tokens/s as a 300-digit number: a count of tokens is at most 2^53
expectf 2 "--tokens must be a number of tokens per step in [0, 2^53 = 9.0e15], got 1e20" run --layers 1 --dp 8 --tokens 1e20
expectf 2 "--tokens must be a number of tokens per step in [0, 2^53 = 9.0e15], got -1" run --layers 1 --dp 8 --tokens -1
# a finite but impossible --model-flops printed "MFU 151879834820254112.0%" without a word: now a
# warning with the bound (8 GPUs x peak x step time), which the JSON figures reproduce
"$ETKIT" run --layers 1 --dp 8 --model-flops 1e30 --json >"$T/mf.json" 2>"$T/mf.err" || fail "run --model-flops 1e30 failed: $(cat "$T/mf.err")"
grep -qF "warning: --model-flops 1e+30 gives MFU" "$T/mf.err" && grep -qF "past 100%: more than the 8 GPUs can do" "$T/mf.err" ||
  fail "run --model-flops 1e30: no MFU warning: $(cat "$T/mf.err")"
python3 - "$T/mf.json" "$T/mf.err" <<'PY' || fail "run --model-flops 1e30: the warning's bound does not match the report"
import json, re, sys
d = json.load(open(sys.argv[1]))
bound = d["peak_tflops"] * 1e12 * d["n_ranks"] * d["step_ns"] / 1e9
m = re.search(r"gives MFU ([0-9.e+]+)%.*\(([0-9.e+]+) FLOPs\)", open(sys.argv[2]).read())
assert m and abs(float(m.group(2)) / bound - 1) < 1e-3, (m and m.groups(), bound)
assert abs(float(m.group(1)) / (100 * 1e30 / bound) - 1) < 1e-3 and abs(d["mfu"] * bound / 1e30 - 1) < 1e-9
PY
"$ETKIT" run --layers 1 --dp 8 --model-flops 1e14 2>&1 >/dev/null | grep -q "past 100%" && fail "an MFU under 100% warned"
printf 'gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 1e-14, latency: 500}\n' >"$T/bw.yaml"
expectf 2 "bw.yaml:3: network[0].bandwidth: expected GB/s per direction, 10^9 B/s, in [0.001, 1e+06], got 1e-14" run --cluster "$T/bw.yaml" --layers 1 --dp 8
printf 'gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 1e300}\n' >"$T/lat.yaml"
expectf 2 "lat.yaml:3: network[0].latency: expected ns in [0, 1e+09], got 1e300" run --cluster "$T/lat.yaml" --layers 1 --dp 8
three='  - {size: 1000000000, topology: Switch, bandwidth: 450, latency: 500}'
printf 'gpu: h100\nnetwork:\n%s\n%s\n%s\n' "$three" "$three" "$three" >"$T/npus.yaml"
expectf 2 "the dimension sizes multiply to 1e+27 NPUs, more than etkit supports" run --cluster "$T/npus.yaml" --layers 2

# 7. unknown and duplicate keys
printf '%s\nkv_head: 1\n' "$GOOD" >"$T/typo.yaml"
expectf 2 "typo.yaml:9: unknown key 'kv_head': did you mean 'kv_heads'?" gen --model-file "$T/typo.yaml" --summary
printf '%s\nhidden: 512\n' "$GOOD" >"$T/dup.yaml"
expectf 2 "dup.yaml:9: duplicate key 'hidden' (first given on line 4)" gen --model-file "$T/dup.yaml" --summary
printf 'gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwith: 450, latency: 500}\n' >"$T/typoc.yaml"
expectf 2 "typoc.yaml:3: unknown key 'bandwith' in network[0]: did you mean 'bandwidth'?" run --cluster "$T/typoc.yaml" --layers 1 --dp 8
printf 'gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500}\ngpu: a100\n' >"$T/dupc.yaml"
expectf 2 "dupc.yaml:4: duplicate key 'gpu' (first given on line 1)" run --cluster "$T/dupc.yaml" --layers 1 --dp 8
printf '{"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
 "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 64, "hidden_size": 512}\n' >"$T/hfdup.json"
expectf 2 "hfdup.json:2: duplicate key 'hidden_size' (first given on line 1)" gen --model-file "$T/hfdup.json" --summary

# 6. validate and sim agree: what validate flags, sim at least warns about
mkj() { # mkj FILE NODE-JSON...: a lossless-JSON trace written as FILE (.et)
  local out=$1; shift
  local IFS=,
  printf '{"format": "etkit-chakra-json", "version": 1, "metadata": {"version": "0.0.4", "attr": []},\n"nodes": [%s]}\n' "$*" >"$out.json"
  "$ETKIT" json --to-et "$out.json" -o "$out" >/dev/null 2>&1 || fail "cannot build $out"
}
coll() { # coll ID COMM_TYPE
  printf '{"id": %s, "name": "c%s", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "kind": "int64_val", "value": %s}, {"name": "comm_size", "kind": "int64_val", "value": 1024}]}' "$1" "$1" "$2"
}
comp() { # comp ID NUM_OPS [DURATION_MICROS]
  printf '{"id": %s, "name": "m%s", "type": "COMP_NODE", "duration_micros": %s, "attr": [{"name": "num_ops", "kind": "int64_val", "value": %s}]}' "$1" "$1" "${3:-0}" "$2"
}
mkj "$T/ct.0.et" "$(coll 1 100)" "$(coll 2 -1)" "$(comp 3 -1)"
expectf 1 "error [bad-comm-type]: COMM_COLL_NODE with comm_type outside ALL_REDUCE..BARRIER (0..9); the simulator rejects it: 2 nodes" validate "$T/ct.0.et"
expectf 1 "error [negative-ops]: COMP_NODE with a negative num_ops: 1 nodes" validate "$T/ct.0.et"
printf 'gpu: h100\nnetwork:\n  - {size: 1, topology: Switch, bandwidth: 450, latency: 500}\n' >"$T/one.yaml"
# sim: a collective without comm_type, a negative num_ops, a duplicate id
nt='{"id": 1, "name": "ar", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_size", "kind": "int64_val", "value": 1024}]}'
mkj "$T/w.0.et" "$nt" "$(comp 2 -1)" "$(comp 2 1000)"
expectf 0 "1 collectives without comm_type, timed as ALL_REDUCE" sim "$T/w.0.et" --cluster "$T/one.yaml"
expectf 0 "1 compute nodes with a negative num_ops, timed as 0 FLOPs" sim "$T/w.0.et" --cluster "$T/one.yaml"
expectf 0 "1 nodes repeat the id of an earlier node" sim "$T/w.0.et" --cluster "$T/one.yaml"
# a rank set with a gap: validate saw one rank and said nothing
mkj "$T/gap.0.et" "$(comp 1 1000)"
cp "$T/gap.0.et" "$T/gap.2.et"
expectf 2 "rank 1 is missing (no $T/gap.1.et) but rank files up to $T/gap.2.et exist" validate "$T/gap"
expectf 2 "rank 1 is missing" sim "$T/gap.0.et" --cluster "$T/one.yaml"
# a simulated time past 1e18 ns is an error naming the node (9e18 FLOPs on the slowest GPU allowed)
printf 'gpu: {name: slow, peak_tflops: {bf16: 0.001}, hbm_bw_GBps: 1}\nnetwork:\n  - {size: 1, topology: Switch, bandwidth: 450, latency: 500}\n' >"$T/slow.yaml"
mkj "$T/long.0.et" "$(comp 7 9000000000000000000)"
expectf 2 "rank 0 node id 7 (m7): simulated duration 9e+18 ns is past 1e18 ns" sim "$T/long.0.et" --cluster "$T/slow.yaml" --compute roofline
# three nodes of num_ops 2^63-1: FLOPs/step saturated at 9.22e18
mkj "$T/sat.0.et" "$(comp 1 9223372036854775807 1)" "$(comp 2 9223372036854775807 1)" "$(comp 3 9223372036854775807 1)"
expectf 2 "rank 0: the sum of num_ops passes 1.8e19 FLOPs" sim "$T/sat.0.et" --cluster "$T/one.yaml"
# info summed the same three nodes into a wrapped 9223372036854775805 FLOPs (3 (2^63 - 1) mod 2^64), exit 0
expectf 2 "sat.0.et: the sum of the num_ops of the COMP_NODEs passes 1.8e19 (2^64 - 1) at node #2 id 3 'm3'" info "$T/sat.0.et"
expectf 2 "passes 1.8e19" info --json "$T/sat.0.et"
# sums that fit 64 bits but not 63 (3 x 2^62 per rank) are exact in text and positive in JSON
# (json_int_t is signed: they printed negative), and the total over 5 ranks (15 x 2^62, past
# 2^64) is exact: 15 * 4611686018427387904 = 69175290276410818560
mkj "$T/q.0.et" "$(comp 1 4611686018427387904)" "$(comp 2 4611686018427387904)" "$(comp 3 4611686018427387904)"
for k in 1 2 3 4; do cp "$T/q.0.et" "$T/q.$k.et"; done
expectf 0 "compute: num_ops 13835058055282163712 FLOPs" info "$T/q.0.et"
expectf 0 "total over 5 ranks: 15 nodes, 69175290276410818560 FLOPs" info -s "$T/q"
"$ETKIT" info --json "$T/q" >"$T/qinfo.out" 2>&1 || fail "info --json of 5 ranks of 3 x 2^62 FLOPs: $(head -3 "$T/qinfo.out")"
python3 - "$T/qinfo.out" <<'PY' || fail "info --json sums past 2^63: $(head -c 300 "$T/qinfo.out")"
import json, sys
w = json.load(open(sys.argv[1]))["workloads"][0]
assert w["total"]["num_ops_flops"] == float(15 * 2**62), w["total"]
assert all(r["compute"]["num_ops_flops"] == float(3 * 2**62) for r in w["ranks"]), w["ranks"]
PY

# 8. a file name that is not UTF-8 kept every field of --json (jansson dropped them)
bad=$(printf "$T/caf\xe9.0.et")
cp "$T/gap.0.et" "$bad"
"$ETKIT" validate --json "$bad" >"$T/v.json" 2>/dev/null
python3 - "$T/v.json" <<'PY' || fail "validate --json with a non-UTF-8 name: $(head -c 300 "$T/v.json")"
import json, sys
d = json.load(open(sys.argv[1]))
s = json.dumps(d)
assert "caf\\\\xe9.0.et" in s, s[:300]
PY
# the same name through info --json and sim --json: valid JSON, the name kept with \xe9
for cmd in "info --json" "sim --json --quiet --cluster $T/one.yaml"; do
  "$ETKIT" $cmd "$bad" >"$T/n.out" 2>"$T/n.err" || fail "$cmd NON-UTF-8: $(cat "$T/n.err")"
  python3 - "$T/n.out" <<'PY' || fail "$cmd with a non-UTF-8 name: $(head -c 300 "$T/n.out" | cat -v)"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
s = json.dumps(d)
assert "caf\\\\xe9.0.et" in s, s[:300]
PY
done
# convert --json wrote the name's raw bytes: not JSON at all (and a quote in a name broke it too)
"$ETKIT" convert pytorch -q --json --host tests/pytorch/mlp_host_et.json -o "$(printf "$T/cv\xe9\"q")" >"$T/cv.json" 2>"$T/cv.err" ||
  fail "convert --json -o NON-UTF-8: $(cat "$T/cv.err")"
python3 - "$T/cv.json" "$T" <<'PY' || fail "convert --json with a non-UTF-8 name: $(head -c 300 "$T/cv.json" | cat -v)"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert d[0]["output"] == sys.argv[2] + '/cv\\xe9"q.0.et', d[0]["output"]
assert d[0]["nodes"] > 0, d[0]
PY

# 8. misleading messages: 1e400 said "expected a YAML mapping"
printf '{"model_type": "llama",\n "hidden_size": 1e400}\n' >"$T/hf400.json"
expectf 2 "hf400.json:2: number 1e400 is out of range" gen --model-file "$T/hf400.json" --summary

# 9. -o /dev/stderr with stderr redirected to a regular file: the report is appended to that file
# and /dev/stderr stays the link it was (it was renamed over: a temporary file replaced the link)
before=$(ls -ld /dev/stderr | sed 's/.*-> //')
echo "first line" >"$T/err.txt"
"$ETKIT" run --model llama2-7b --layers 2 --tp 2 --dp 2 --global-batch 8 -o /dev/stderr 2>>"$T/err.txt" >/dev/null ||
  fail "run -o /dev/stderr failed: $(cat "$T/err.txt")"
[ -L /dev/stderr ] && [ "$(ls -ld /dev/stderr | sed 's/.*-> //')" = "$before" ] ||
  fail "/dev/stderr is no longer the link to '$before': $(ls -ld /dev/stderr)"
head -1 "$T/err.txt" | grep -q "first line" || fail "-o /dev/stderr truncated what stderr held"
grep -q "step time" "$T/err.txt" || fail "-o /dev/stderr: no report in the redirected file: $(head -c 300 "$T/err.txt")"

# 10. a send/recv pair that disagrees on comm_size (the library's warning, test_input_limits.c,
# seen by a user): a 2-stage pipeline whose rank 1 expects twice what rank 0 sends in its first
# receive; sim warns naming both nodes and the sizes, and still times the step (exit 0)
"$ETKIT" gen --layers 2 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 128 --pp 2 \
  --global-batch 2 --micro-batch 1 --out "$T/pp" >/dev/null 2>&1 || fail "gen of the pp 2 workload failed"
"$ETKIT" json "$T/pp.1.et" -o "$T/pp1.json" || fail "json export of rank 1 failed"
python3 - "$T/pp1.json" <<'PY' || fail "could not edit rank 1's first receive"
import json, sys
d = json.load(open(sys.argv[1]))
n = d["nodes"][0]
assert n["type"] == "COMM_RECV_NODE", n["type"]
for a in n["attr"]:
    if a["name"] == "comm_size":
        assert a["value"] == 65536, a["value"]   # 1 x 128 tokens x 256 hidden x 2 bytes
        a["value"] = 131072
json.dump(d, open(sys.argv[1], "w"))
PY
"$ETKIT" json --to-et "$T/pp1.json" -o "$T/pp.1.et" || fail "json import of rank 1 failed"
expectf 0 "warning: 1 send/recv pairs of different comm_size, timed at the send's size (the first: rank 0 id 17 sends 65536 B, rank 1 id 1 expects 131072 B)" \
  sim "$T/pp" --cluster dgx-h100
grep -q "step time" "$T/out" || fail "sim with a size mismatch printed no step time: $(head -5 "$T/out")"

exit $((fails > 0))
