#!/usr/bin/env bash
# cli_convert.sh — `etkit convert pytorch` from the command line, run by ctest as
#   bash tests/cli_convert.sh <etkit> <shared-dir>
# Help and flag errors (exit 2), the real 1.0.2 trace and the recorded 1.13 traces, --json,
# --ranks with %d patterns, and bad inputs: exit status and the message naming the problem.
set -u
ETKIT=$1; SHARED=$2
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect STATUS PATTERN cmd...: runs cmd, checks exit status and that stdout+stderr match PATTERN
expect() {
  local want=$1 pat=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want: $out"
  grep -qE -- "$pat" <<<"$out" || fail "'$*' output lacks /$pat/: $out"
}
P=tests/pytorch
H102=$SHARED/data/chakra/pytorch_host_et_1.0.2.json

# --- help and flags
expect 0 'example' "$ETKIT" convert --help
expect 0 'example' "$ETKIT" convert pytorch --help
expect 2 'usage' "$ETKIT" convert
expect 2 "unknown input format 'onnx'" "$ETKIT" convert onnx --host x -o y
expect 2 "unknown option '--bogus'" "$ETKIT" convert pytorch --bogus --host "$H102" -o "$T/x"
expect 2 'needs a value' "$ETKIT" convert pytorch --host
expect 2 '--host HOST.json or --device KINETO.json .* is required' "$ETKIT" convert pytorch -o "$T/x"
expect 2 '-o PREFIX is required' "$ETKIT" convert pytorch --host "$H102"
expect 2 '--rank wants a non-negative integer' "$ETKIT" convert pytorch --host "$H102" --rank x -o "$T/x"
expect 2 '--ranks needs a %d in --host' "$ETKIT" convert pytorch --host "$H102" --ranks 2 -o "$T/x"
expect 2 'exclude each other' "$ETKIT" convert pytorch --host "$H102" --rank 1 --ranks 2 -o "$T/x"
expect 2 "unexpected argument 'extra'" "$ETKIT" convert pytorch --host "$H102" -o "$T/x" extra

# --- the real 1.0.2 trace: 263 host nodes -> 262 (261 COMP + 1 METADATA). Its group "0" is
# [0, 1]: rank 1 converted alone is written as rank 0 of a 1-rank workload, group "0" cut to [0],
# and the result passes etkit validate (it named rank 1 in a 1-rank workload before)
expect 0 '263 host nodes -> 262 nodes \(261 COMP, 1 METADATA' \
  "$ETKIT" convert pytorch -q --host "$H102" --rank 1 -o "$T/pt"
[ -s "$T/pt.0.et" ] || fail "no $T/pt.0.et"
tr -d ' \n' < "$T/pt.json" | grep -qF '{"0":[0]}' || fail "comm groups: $(cat "$T/pt.json")"
ls "$T" | grep -q tmp && fail "temporary files left in $T: $(ls "$T")"
expect 0 'note: rank 1 of a 2-rank job converted alone: written as rank 0 of a 1-rank workload; 1 process groups cut to it' \
  "$ETKIT" convert pytorch --host "$H102" --rank 1 -o "$T/pt"
expect 0 '1 ranks, 262 nodes, groups .*: 0 errors' "$ETKIT" validate "$T/pt"

# --- gzip-compressed input is read transparently
gzip -c "$H102" > "$T/h102.json.gz"
expect 0 '263 host nodes -> 262 nodes' "$ETKIT" convert pytorch -q --host "$T/h102.json.gz" -o "$T/gz"
cmp -s "$T/gz.0.et" "$T/pt.0.et" || fail "gzip input gives different bytes than plain input"

# --- recorded PyTorch 1.13 (schema 1.0.1) traces with their profiler lists, --json
"$ETKIT" convert pytorch -q --json --host $P/mlp_host_et.json --device $P/mlp_profiler.json \
  -o "$T/mlp" > "$T/mlp.out" || fail "mlp convert"
grep -qF '"nodes": 127' "$T/mlp.out" || fail "mlp: 127 nodes expected: $(cat "$T/mlp.out")"
grep -qF '"matched_host_ops": 125' "$T/mlp.out" || fail "mlp: 125 matched ops expected"
grep -qF '"schema": "1.0.1"' "$T/mlp.out" || fail "mlp: schema 1.0.1"
[ -e "$T/mlp.json" ] && fail "mlp has no process group: no $T/mlp.json expected"
expect 0 'warning: 1 host ops have no duration' \
  "$ETKIT" convert pytorch --host $P/transformer_host_et.json --device $P/transformer_profiler.json -o "$T/tr"

# --- --ranks with %d: the hand-made 2-rank job (rank 1 receives what rank 0 sends) converts and
# passes etkit validate (groups, matched all-reduce and send/recv, no deadlock)
expect 0 'rank 1: .*job.1.et' "$ETKIT" convert pytorch -q --host "$P/kineto_host_%d.json" \
  --device "$P/kineto_device_%d.json" --ranks 2 -o "$T/job"
[ -s "$T/job.0.et" ] && [ -s "$T/job.1.et" ] || fail "--ranks 2 wrote $(ls "$T")"
expect 0 '2 ranks, 28 nodes, groups .*: 0 errors' "$ETKIT" validate "$T/job"
# rank 1 (the Kineto trace's distributedInfo.rank) of the 2-rank job alone: rank 0 of a 1-rank
# workload, its all-reduce and receive kept as GPU work (13 COMP, no COMM nodes), validates
expect 0 'rank 0: .*r.0.et .*13 COMP, 1 METADATA, 0 COMM_COLL, 0 SEND, 0 RECV' "$ETKIT" convert pytorch -q --host $P/kineto_host_1.json --device $P/kineto_device_1.json -o "$T/r"
expect 0 'rank 1 of a 2-rank job converted alone.* 2 NCCL kernels kept as GPU work' "$ETKIT" convert pytorch --host $P/kineto_host_1.json --device $P/kineto_device_1.json -o "$T/r"
expect 0 '1 ranks, 14 nodes, groups .*: 0 errors' "$ETKIT" validate "$T/r"
# rank 1's host trace with rank 0's Kineto trace: refused, naming the file
cp $P/kineto_host_1.json "$T/h_1.json"; cp $P/kineto_device_0.json "$T/d_1.json"
cp $P/kineto_host_0.json "$T/h_0.json"; cp $P/kineto_device_0.json "$T/d_0.json"
expect 2 'd_1.json' "$ETKIT" convert pytorch -q --host "$T/h_%d.json" --device "$T/d_%d.json" --ranks 2 -o "$T/job2"
expect 0 '"gpu_ops": 3' "$ETKIT" convert pytorch -q --json --host $P/kineto_host_0.json --device $P/kineto_device_0.json -o "$T/k"

# --- etkit sim on converted traces: the MLP step replays its exclusive durations, one CPU chain
# summing to 10,548 us (= the outermost profiler events); the 2-rank job ends at 135.5 us: the
# 90 us CPU chain up to c10d::send, the 500 ns link latency of the 64-byte send that aten::item
# waits for, aten::item's 15 us (90 us minus the 75 us of its cudaStreamSynchronize that the
# send kernel explains, modelled by that dependency) and MmBackward0's 30 us
printf 'gpu: h100\nnetwork:\n  - {size: 1, topology: Switch, bandwidth: 450, latency: 500}\n' > "$T/one.yaml"
printf 'gpu: h100\nnetwork:\n  - {size: 2, topology: Switch, bandwidth: 450, latency: 500}\n' > "$T/two.yaml"
expect 0 'step time +10,548,000 ns' "$ETKIT" sim "$T/mlp" --cluster "$T/one.yaml"
expect 0 '"step_ns": 135500' "$ETKIT" sim "$T/job" --cluster "$T/two.yaml" --json

# --- bad inputs
head -c 20000 $P/mlp_host_et.json > "$T/trunc.json"
expect 2 'trunc.json: truncated JSON' "$ETKIT" convert pytorch --host "$T/trunc.json" -o "$T/y"
expect 2 'kineto_device_0.json: no "nodes" list' "$ETKIT" convert pytorch --host $P/kineto_device_0.json -o "$T/y"
expect 2 'do not belong together: only 40 of 126' \
  "$ETKIT" convert pytorch --host $P/mlp_host_et.json --device $P/transformer_profiler.json -o "$T/y"
expect 2 '/nonexistent.json' "$ETKIT" convert pytorch --host /nonexistent.json -o "$T/y"
[ -e "$T/y.0.et" ] && fail "a failed conversion left $T/y.0.et"

# --- real traces (../shared/data/real-traces; a missing file is named by the failing check)
RT=$SHARED/data/real-traces
for f in dlrm-8gpu-v100/host_0.json.gz dlrm-etplus-chakra-linked/host_0.json.gz \
         kineto-only/nccl_parser_config__nccl_data.json.gz linear-2080ti/kineto.json.gz; do
  [ -e "$RT/$f" ] || fail "missing real trace $RT/$f"
done
# DLRM, 8 ranks: validates, the all-to-alls are ALL_TO_ALL (no "written as ALL_REDUCE" warning)
out=$("$ETKIT" convert pytorch --host "$RT/dlrm-8gpu-v100/host_%d.json.gz" \
  --device "$RT/dlrm-8gpu-v100/kineto_%d.json.gz" --ranks 8 -o "$T/dlrm" 2>&1) || fail "dlrm: $out"
grep -q "ALL_REDUCE" <<<"$out" && fail "dlrm: an NCCL kernel written as ALL_REDUCE: $out"
grep -q "19 stream-wait" <<<"$out" || fail "dlrm: 19 stream-wait dependencies per rank: $out"
expect 0 '8 ranks, 15636 nodes: 0 errors' "$ETKIT" validate "$T/dlrm"
printf 'gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500}\n' > "$T/eight.yaml"
expect 0 'step time' "$ETKIT" sim "$T/dlrm" --cluster "$T/eight.yaml" --cpu-streams 2
# linear: a Kineto trace of 40 iterations against a host trace of 1: the rest is dropped, said
expect 0 'covers more than the host trace: 10179 GPU events launched outside the matched host ops' \
  "$ETKIT" convert pytorch --host "$RT/linear-2080ti/host.json.gz" --device "$RT/linear-2080ti/kineto.json.gz" -o "$T/lin"
# ET+ (Chakra's old linker): refused, saying what the file is and what to give instead
expect 2 'host_0.json.gz: nodes\[[0-9]+\] \(id [0-9]+, line [0-9]+\): .* "ET\+" file' \
  "$ETKIT" convert pytorch --host "$RT/dlrm-etplus-chakra-linked/host_0.json.gz" -o "$T/etp"
[ -e "$T/etp.0.et" ] && fail "ET+ refusal left $T/etp.0.et"
# a Kineto trace alone (no host trace): rank 0 of a 2-rank job, the last ProfilerStep
expect 0 'converting the last, ProfilerStep#6 \(224.936 ms\)' \
  "$ETKIT" convert pytorch --device "$RT/kineto-only/nccl_parser_config__nccl_data.json.gz" -o "$T/ko"
expect 0 '1 ranks, 6054 nodes, groups .*: 0 errors' "$ETKIT" validate "$T/ko"
expect 0 'step time' "$ETKIT" sim "$T/ko" --cluster "$T/one.yaml" --cpu-streams 2
# --ranks N past the files present: every input checked first, nothing written
mkdir -p "$T/part"
expect 2 'host_8.json.gz: cannot open .*--ranks N needs the files of ranks 0..N-1: nothing written' \
  "$ETKIT" convert pytorch --host "$RT/dlrm-8gpu-v100/host_%d.json.gz" --ranks 9 -o "$T/part/x"
cp "$RT/dlrm-8gpu-v100/host_0.json.gz" "$RT/dlrm-8gpu-v100/host_1.json.gz" "$T/part/"
cp "$RT/dlrm-8gpu-v100/kineto_0.json.gz" "$T/part/"
cp "$RT/dlrm-8gpu-v100/kineto_0.json.gz" "$T/part/kineto_1.json.gz"  # rank 0's trace as rank 1's
expect 2 'kineto_1.json.gz is the device trace of rank 0' "$ETKIT" convert pytorch \
  --host "$T/part/host_%d.json.gz" --device "$T/part/kineto_%d.json.gz" --ranks 2 -o "$T/part/y"
[ -e "$T/part/y.0.et" ] && fail "a failed --ranks run left $T/part/y.0.et behind"
# distributedInfo.world_size 8 against --ranks 2: warned
expect 0 'world_size is 8 but --ranks is 2' "$ETKIT" convert pytorch \
  --host "$RT/dlrm-8gpu-v100/host_%d.json.gz" --device "$RT/dlrm-8gpu-v100/kineto_%d.json.gz" --ranks 2 -o "$T/part/z"
# Kineto bad values (issue 18): negative dur, absurd ranks, numbers that do not fit
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": -3}]}' > "$T/neg.json"
expect 2 'neg.json: traceEvents\[0\] "a" \(line 1\): "dur" is negative' "$ETKIT" convert pytorch --device "$T/neg.json" -o "$T/n"
printf '{"distributedInfo": {"rank": 1099511627776, "world_size": 8}, "traceEvents": []}' > "$T/r40.json"
expect 2 'r40.json: distributedInfo.rank must be an integer in \[0, 8\)' "$ETKIT" convert pytorch --device "$T/r40.json" -o "$T/n"
printf '{"distributedInfo": {"rank": -5}, "traceEvents": []}' > "$T/rm5.json"
expect 2 'rm5.json: distributedInfo.rank must be an integer' "$ETKIT" convert pytorch --device "$T/rm5.json" -o "$T/n"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1e300, "dur": 1}]}' > "$T/big.json"
expect 2 'big.json: .*do not fit a 64-bit nanosecond time' "$ETKIT" convert pytorch --device "$T/big.json" -o "$T/n"
ls "$T"/n.* >/dev/null 2>&1 && fail "a refused Kineto trace left output: $(ls "$T"/n.*)"
# STAGE's traces: detected, units applied with a note; --no-stage-units reads them as they are
S=$SHARED/data/stage/gpt_small_dp2_tp2_pp2/workload
expect 0 'note: .* is a STAGE trace' "$ETKIT" sim "$S" --cluster dgx-h100 --nodes 1
expect 0 '"flops_per_step": 5697714520064' "$ETKIT" sim "$S" --cluster dgx-h100 --nodes 1 --json --quiet
expect 0 '"flops_per_step": 2850151202816' "$ETKIT" sim "$S" --cluster dgx-h100 --nodes 1 --json --no-stage-units

# --- progress (issue #15): one line per phase of a single conversion on a terminal (script(1)
# gives a pty; ETK_PROGRESS_DELAY_MS=0 draws from the first update), none off a terminal or with
# --quiet. The written phase counts the host ops plus the GPU events of the --json summary.
K="--host $P/kineto_host_0.json --device $P/kineto_device_0.json"
"$ETKIT" convert pytorch $K -o "$T/pg" --json >"$T/pg.out" 2>"$T/pg.err" || fail "convert for progress failed"
grep -q 'parsed' "$T/pg.err" && fail "progress line on a non-terminal stderr: $(head -c 200 "$T/pg.err")"
if command -v script >/dev/null; then
  want=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))[0]; print(d["host_nodes"] + d["gpu_ops"])' "$T/pg.out")
  [ "$want" = 15 ] || fail "kineto_host_0 + device: $want host ops + GPU events, expected 12 + 3"
  ETK_PROGRESS_DELAY_MS=0 script -qec "$ETKIT convert pytorch $K -o $T/pg" /dev/null >"$T/tty.txt" 2>&1
  for pat in "host trace MiB parsed 0/1 " "device trace MiB parsed 0/1 " "host ops and GPU events written 0/$want "; do
    grep -qF "$pat" "$T/tty.txt" || fail "no '$pat' progress on a terminal: $(head -c 400 "$T/tty.txt")"
  done
  ETK_PROGRESS_DELAY_MS=0 script -qec "$ETKIT convert pytorch $K -o $T/pg --quiet" /dev/null >"$T/tty.txt" 2>&1
  grep -q 'parsed' "$T/tty.txt" && fail "progress despite --quiet"
fi

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_convert: all checks passed"
