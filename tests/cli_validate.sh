#!/usr/bin/env bash
# cli_validate.sh — `etkit validate`, `etkit info` and `etkit dot` from the command line: exit
# statuses (0 clean, 1 errors found, 2 usage/input error), messages naming what is wrong, --help
# with an example, unknown flags, JSON output, atomic DOT output.
# usage: bash tests/cli_validate.sh <etkit> <shared-dir>
set -u
ETK=$1
SHARED=$2
D=$SHARED/data
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in "$D/chakra/converted_cnn_ddp.0.et" "$D/stage/gpt_small_dp2_tp2_pp2/workload.0.et" \
         "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce.0.et"; do
    [ -e "$f" ] || { echo "missing shared data file: $f"; exit 1; }
done

# expect STATUS PATTERN CMD...: run CMD, check exit status and that stdout+stderr match PATTERN
expect() {
    local want=$1 pat=$2
    shift 2
    local out st
    out=$("$@" 2>&1)
    st=$?
    if [ "$st" != "$want" ]; then
        echo "FAIL: '$*' exited $st, expected $want"; echo "$out" | head -20; fails=$((fails + 1))
    elif ! grep -qE -- "$pat" <<<"$out"; then
        echo "FAIL: '$*' output lacks /$pat/"; echo "$out" | head -20; fails=$((fails + 1))
    fi
}

# validate: real files
expect 1 'error \[missing-ctrl-dep\]: 210 control-dependency ids' "$ETK" validate "$D/chakra/converted_cnn_ddp.0.et"
expect 0 'workload: 8 ranks, 2816 nodes.*: 0 errors, 24 warnings' "$ETK" validate "$D/stage/gpt_small_dp2_tp2_pp2/workload"
expect 0 '8 ranks, 8 nodes: 0 errors, 0 warnings' "$ETK" validate "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce"
# -q hides warnings
out=$("$ETK" validate -q "$D/stage/gpt_small_dp2_tp2_pp2/workload")
[ "$(wc -l <<<"$out")" = 1 ] || { echo "FAIL: validate -q printed more than the summary"; fails=$((fails + 1)); }
# JSON: count and ok flag
expect 1 '"count": 210' "$ETK" validate --json "$D/chakra/converted_cnn_ddp.0.et"
expect 0 '"ok": true' "$ETK" validate --json "$D/astra-sim-microbenchmarks/all_gather/4npus_1MB/all_gather"
# usage and input errors
expect 0 'example' "$ETK" validate --help
expect 2 "unknown or incomplete option '--frobnicate'" "$ETK" validate --frobnicate x
expect 2 'no trace given' "$ETK" validate
expect 2 '--max-ids wants a non-negative integer' "$ETK" validate --max-ids abc x
expect 2 "$tmp/nope: no such trace file" "$ETK" validate "$tmp/nope"
printf '\x09\x0a\x03abc' >"$tmp/trunc.0.et"   # length 9 but only 5 bytes follow
expect 2 "trunc.0.et" "$ETK" validate "$tmp/trunc"
# a groups file naming a rank outside the workload: an error finding, exit 1
cp "$D/astra-sim-microbenchmarks/all_reduce/4npus_1MB/"all_reduce.*.et "$tmp/"
echo '{"1": [0, 1, 2, 9]}' >"$tmp/g.json"
expect 1 'bad-group.*group "1" names 1 ranks outside 0..3' "$ETK" validate -g "$tmp/g.json" "$tmp/all_reduce"
echo '{"1": [0, 1' >"$tmp/bad.json"
expect 2 'bad.json' "$ETK" validate -g "$tmp/bad.json" "$tmp/all_reduce"

# info
expect 0 'ALL_REDUCE +1 +1048576' "$ETK" info "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce"
expect 0 'total over 8 ranks: 8 nodes, 0 FLOPs, 8 collectives of 8388608 bytes' "$ETK" info "$D/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce"
expect 0 '5 +ALL_GATHER +48 +25165824' "$ETK" info -r 0 "$D/stage/gpt_small_dp2_tp2_pp2/workload"
expect 0 '5 +REDUCE_SCATTER +32 +33554432' "$ETK" info -r 0 "$D/stage/gpt_small_dp2_tp2_pp2/workload"
expect 0 'num_ops 356258414592 FLOPs \(356.26 GFLOP\)' "$ETK" info -r 0 "$D/stage/gpt_small_dp2_tp2_pp2/workload"
# totals over the 8 STAGE ranks, summed with an independent decoder: 2816 nodes, 2850151202816
# num_ops, 720 collectives of 1396703232 (elements), 32 sends of 16777216
expect 0 'total over 8 ranks: 2816 nodes, 2850151202816 FLOPs, 720 collectives of 1396703232 bytes, 32 sends of 16777216 bytes' "$ETK" info "$D/stage/gpt_small_dp2_tp2_pp2/workload"
out=$("$ETK" info -s "$D/stage/gpt_small_dp2_tp2_pp2/workload")
[ "$out" = "$D/stage/gpt_small_dp2_tp2_pp2/workload: total over 8 ranks: 2816 nodes, 2850151202816 FLOPs, 720 collectives of 1396703232 bytes, 32 sends of 16777216 bytes" ] ||
    { echo "FAIL: info -s printed: $out"; fails=$((fails + 1)); }
expect 0 '"longest_path_nodes": 36' "$ETK" info --json -r 0 "$D/stage/gpt_small_dp2_tp2_pp2/workload"
expect 0 'example' "$ETK" info --help
expect 2 "unknown or incomplete option '--bogus'" "$ETK" info --bogus x
expect 2 '--rank 8 but the workload has 8 ranks' "$ETK" info -r 8 "$D/stage/gpt_small_dp2_tp2_pp2/workload"
expect 2 "$tmp/nope: no such trace file" "$ETK" info "$tmp/nope"

# dot: the 4-rank all-reduce has 1 node and no edges; STAGE rank 0 has 469 data edges
expect 0 'example' "$ETK" dot --help
expect 2 "unknown or incomplete option '--nope'" "$ETK" dot --nope x
expect 2 'one trace at a time' "$ETK" dot a b
expect 2 '--max-nodes wants at least 1' "$ETK" dot -n 0 x
"$ETK" dot "$D/stage/gpt_small_dp2_tp2_pp2/workload.0.et" -o "$tmp/g.dot" || { echo "FAIL: dot -o"; fails=$((fails + 1)); }
n=$(grep -c -- ' -> ' "$tmp/g.dot")
[ "$n" = 469 ] || { echo "FAIL: dot wrote $n edges, expected 469 data deps"; fails=$((fails + 1)); }
ls "$tmp" | grep -q 'tmp\.' && { echo "FAIL: dot left a temporary file"; fails=$((fails + 1)); }
expect 0 'cut by --max-nodes to the first 10' "$ETK" dot -n 10 "$D/stage/gpt_small_dp2_tp2_pp2/workload.0.et"
: >"$tmp/afile" # a parent that is a file: refused (missing folders are created)
expect 2 "$tmp/afile is not a folder" "$ETK" dot "$D/stage/gpt_small_dp2_tp2_pp2/workload.0.et" -o "$tmp/afile/x.dot"

if [ $fails -ne 0 ]; then
    echo "cli_validate: $fails failures"
    exit 1
fi
echo "cli_validate: all passed"
