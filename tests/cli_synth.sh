#!/usr/bin/env bash
# cli_synth.sh — `etkit synth fit | sample | eval` from the command line: help, usage errors
# naming the option, a model fitted to generated workloads, sampled workloads that `etkit
# validate` finds clean and `etkit sim` runs, byte-identical output for a seed, a broken model
# file named with its field.
# usage: bash tests/cli_synth.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect

expect 0 "example" synth --help
expect 2 "missing subcommand" synth
expect 2 "unknown subcommand 'bogus'" synth bogus
expect 2 "unknown option '--bogus'" synth fit --bogus
expect 2 "fit: give -o MODEL" synth fit x
expect 2 "give at least one WORKLOAD" synth fit -o "$T/m.json"
expect 2 "needs a value" synth sample m --seed
expect 2 "--seed wants a non-negative integer, got 'x'" synth sample m --seed x -o "$T/s"

# a small corpus: a TP x DP step and a pipelined one (sends/recvs)
G="--model llama2-7b --layers 2 --hidden 256 --heads 4 --kv-heads 4 --ffn 512 --seq 64 --vocab 1000"
"$ETKIT" gen $G --tp 2 --dp 2 --global-batch 4 -o "$T/a" >/dev/null 2>&1 || fail "gen a"
"$ETKIT" gen $G --tp 2 --pp 2 --dp 2 --global-batch 8 -o "$T/b" >/dev/null 2>&1 || fail "gen b"
printf '# corpus\n%s\n\n' "$T/b" >"$T/list.txt"
expect 0 "fitted the model to 3 rank graphs .* from 2 workloads" synth fit "$T/a" --list "$T/list.txt" -o "$T/m.json"
grep -q '"format":"etkit-synth-model","version":5' "$T/m.json" || fail "model file lacks format/version: $(head -c 200 "$T/m.json")"
# privacy: no operator name of the corpus in the model file
grep -q 'attn_norm\|swiglu\|mb0' "$T/m.json" && fail "an operator name leaked into the model file"
expect 2 "nothere: " synth fit "$T/nothere" -o "$T/m2.json"
printf '# nothing\n\n' >"$T/empty.txt"
expect 2 "empty.txt: no workload listed" synth fit --list "$T/empty.txt" -o "$T/m2.json"

# samples: valid, simulated, deterministic
expect 0 "wrote 4 rank files" synth sample "$T/m.json" -o "$T/s" --seed 3
expect 0 "0 errors, 0 warnings" validate "$T/s"
expect 0 "step time" sim "$T/s" -c dgx-h100 --gpus 4
"$ETKIT" synth sample "$T/m.json" -o "$T/s2" --seed 3 -q || fail "second sample"
for r in 0 1 2 3; do cmp -s "$T/s.$r.et" "$T/s2.$r.et" || fail "rank $r differs between two runs with one seed"; done
cmp -s "$T/s.json" "$T/s2.json" || fail "groups differ between two runs with one seed"
"$ETKIT" synth sample "$T/m.json" -o "$T/s3" --seed 4 -q || fail "third sample"
cmp -s "$T/s.0.et" "$T/s3.0.et" && fail "seeds 3 and 4 gave the same rank 0"
# --ranks scales: 16 ranks in inner groups of 2 (the corpus' TP size) and in groups of 4
expect 0 "wrote 16 rank files" synth sample "$T/m.json" -o "$T/big" --ranks 16 --seed 5
expect 0 "0 errors, 0 warnings" validate "$T/big"
expect 0 "step time" sim "$T/big" -c dgx-h100 -n 2
grep -q '"2": \[0, 1\]' "$T/big.json" || fail "inner group 2 is not ranks 0,1: $(head -c 300 "$T/big.json")"
expect 0 "wrote 8 rank files" synth sample "$T/m.json" -o "$T/g4" --ranks 8 --inner 4 --seed 6
grep -q '"2": \[0, 1, 2, 3\]' "$T/g4.json" || fail "--inner 4: group 2 is not ranks 0-3"
expect 0 "0 errors, 0 warnings" validate "$T/g4"
expect 0 "wrote 1 rank files" synth sample "$T/m.json" -o "$T/one" --ranks 1 --seed 7
expect 0 "0 errors, 0 warnings" validate "$T/one"
expect 2 "--inner 3 must be at least 1 and divide --ranks 8" synth sample "$T/m.json" -o "$T/x" --ranks 8 --inner 3
expect 2 "--ranks wants 1 to 1048576, got 0" synth sample "$T/m.json" -o "$T/x" --ranks 0
expect 0 "wrote 4 rank files" synth sample "$T/m.json" -o "$T/cut" --max-nodes 30 --seed 1
n=$("$ETKIT" info "$T/cut.0.et" | sed -n 's/.*nodes: \([0-9]*\).*/\1/p' | head -1)
[ "${n:-999}" -le 60 ] || fail "--max-nodes 30: rank 0 has $n nodes (30 + at most as many point-to-point twins)"
expect 2 "m.json" synth sample "$T/m.json" -o "$T/m.json/x"
ls "$T" | grep -q 'tmp\|lock' && fail "temporary files left behind: $(ls "$T")"

# a broken model file: the file and the field
sed 's/"version":5/"version":7/' "$T/m.json" >"$T/bad.json"
expect 2 "bad.json: field 'version': wanted 5" synth sample "$T/bad.json" -o "$T/x"
# a version-4 file (s29 and before: its LayerDAG nets read the whole prefix's token histogram) is refused
sed 's/"version":5/"version":4/' "$T/m.json" >"$T/v4.json"
expect 2 "v4.json: field 'version': wanted 5 (this etkit reads synth model files of version 5; version 5 changed the inputs of the LayerDAG nets; refit older files with 'etkit synth fit')" synth sample "$T/v4.json" -o "$T/x"
printf '{"format": "etkit-synth-model", "version": 5, "kind": "count", "graphs": 1, "bins": 8,
 "position_buckets": 8, "size_cap": 4096, "tokens": []}\n' >"$T/bad2.json"
expect 2 "bad2.json: field 'tokens'" synth sample "$T/bad2.json" -o "$T/x"
printf '{"format":' >"$T/bad3.json"
expect 2 "bad3.json" synth sample "$T/bad3.json" -o "$T/x"
expect 2 "nothere.json" synth sample "$T/nothere.json" -o "$T/x"

# the LayerDAG model: trained, reported, sampled valid; --count falls back to the baseline
expect 0 "LayerDAG model: 2 epochs, final mean losses" synth fit "$T/a" "$T/b" --layerdag --epochs 2 -o "$T/ld.json"
grep -q '"kind":"layerdag"' "$T/ld.json" || fail "LayerDAG model file lacks kind layerdag"
expect 0 "(LayerDAG model)" synth sample "$T/ld.json" -o "$T/l" --seed 2 --max-nodes 150
expect 0 "0 errors, 0 warnings" validate "$T/l"
expect 0 "(count model)" synth sample "$T/ld.json" -o "$T/lc" --seed 2 --count
expect 2 "--epochs wants 1 to 1000, got 0" synth fit "$T/a" --layerdag --epochs 0 -o "$T/x.json"
# --nodes N: a LayerDAG rank graph of exactly N nodes (docs/synth.md "Same-size sampling"),
# valid, deterministic; one rank: no point-to-point twins, so the rank file has the N nodes
expect 0 "wrote 4 rank files .*: 37 nodes (" synth sample "$T/ld.json" -o "$T/n37" --seed 2 --nodes 37
expect 0 "0 errors, 0 warnings" validate "$T/n37"
expect 0 "wrote 1 rank files .*: 523 nodes (" synth sample "$T/ld.json" -o "$T/n523" --seed 2 --nodes 523 --ranks 1
n=$("$ETKIT" info "$T/n523.0.et" | sed -n 's/.*nodes: \([0-9]*\).*/\1/p' | head -1)
[ "${n:-0}" = 523 ] || fail "--nodes 523 --ranks 1: rank 0 has ${n:-no} nodes"
"$ETKIT" synth sample "$T/ld.json" -o "$T/n37b" --seed 2 --nodes 37 -q || fail "second --nodes sample"
for r in 0 1 2 3; do cmp -s "$T/n37.$r.et" "$T/n37b.$r.et" || fail "--nodes 37: rank $r differs between two runs with one seed"; done
expect 2 "--nodes samples the LayerDAG model at a node count: not with --count" synth sample "$T/ld.json" -o "$T/x" --nodes 9 --count
expect 2 "not with --max-nodes" synth sample "$T/ld.json" -o "$T/x" --nodes 9 --max-nodes 20
expect 2 "--nodes wants 1 to 10000000, got 0" synth sample "$T/ld.json" -o "$T/x" --nodes 0
expect 2 "m.json: --nodes wants a LayerDAG model (fit --layerdag); this one is the count model" synth sample "$T/m.json" -o "$T/x" --nodes 9
# --average 0: the last iterate, not the default's mean of the last 4 epochs' iterates
expect 0 "LayerDAG model: 2 epochs" synth fit "$T/a" "$T/b" --layerdag --epochs 2 --average 0 -o "$T/ld0.json"
cmp -s "$T/ld.json" "$T/ld0.json" && fail "--average 0 wrote the same model as the default (averaged) fit"
expect 0 "LayerDAG model: 2 epochs" synth fit "$T/a" "$T/b" --layerdag --epochs 2 --average 4 -o "$T/ld4.json"
cmp -s "$T/ld.json" "$T/ld4.json" || fail "--average 4 differs from the default fit"
expect 2 "--average wants 0 to 1000, got 1001" synth fit "$T/a" --layerdag --average 1001 -o "$T/x.json"
expect 2 "--average wants a non-negative integer, got 'x'" synth fit "$T/a" --layerdag --average x -o "$T/x.json"

# eval: the two halves of a list, the count model and random DAGs; JSON form
printf '%s\n%s\n' "$T/a" "$T/b" >"$T/real.txt"
expect 0 "real rank graphs 3" synth eval "$T/m.json" --real "$T/real.txt" --samples 4
expect 0 '"edge_token_pair": {"real_vs_real"' synth eval "$T/m.json" --real "$T/real.txt" --samples 4 --json
expect 0 '"step_time_ks": {"cluster": "dgx-h100", "ranks": 4' synth eval "$T/m.json" --real "$T/real.txt" --samples 4 \
  --cluster dgx-h100 --json
# the regressor protocol: trained on --train's real graphs and on each model's samples
expect 0 '"regressor": {"real_train": {"pearson": ' synth eval "$T/m.json" --real "$T/real.txt" --samples 4 \
  --cluster dgx-h100 --train "$T/real.txt" --json
# the training graphs' own scores against half b: --real lists workload a (one rank class) three
# times (halves {a, a} and {a}) and --train twice, so the training graphs equal half b's: every
# MMD and the KS are 0
printf '%s\n%s\n%s\n' "$T/a" "$T/a" "$T/a" >"$T/aaa.txt"
printf '%s\n%s\n' "$T/a" "$T/a" >"$T/a.txt"
expect 0 '"train_reference": {"mmd2": {"in_degree": 0, "out_degree": 0, "layer_size": 0, "token": 0, "edge_token_pair": 0, "layer_skip": 0, "attr_bin": 0}, "step_time_ks": 0}' \
  synth eval "$T/m.json" --real "$T/aaa.txt" --samples 4 --cluster dgx-h100 --train "$T/a.txt" --json
# ... and the regressor's correlations with constant step times are undefined: JSON null (was
# nan, which is not JSON); the whole document parses
"$ETKIT" synth eval "$T/m.json" --real "$T/aaa.txt" --samples 4 --cluster dgx-h100 --train "$T/a.txt" --json >"$T/aaa.json" 2>/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["regressor"]["real_train"]; assert r["pearson"] is None and r["spearman"] is None, r' "$T/aaa.json" ||
  fail "synth eval --json with constant step times: not JSON, or a correlation not null: $(head -c 300 "$T/aaa.json")"
expect 0 "training graphs (--train) vs half b" synth eval "$T/m.json" --real "$T/real.txt" --samples 4 \
  --cluster dgx-h100 --train "$T/real.txt"
# a LayerDAG model: its samples, and its samples at half a's node counts (the random DAG's sizes).
# Fitted for 6 epochs: the 2-epoch model above draws ~3,000-node rank graphs (its size stage is
# near uniform), which its edge stage takes ~12 s to sample (minutes under ASan); this one ~260 nodes
expect 0 "LayerDAG model: 6 epochs" synth fit "$T/a" "$T/b" --layerdag --epochs 6 -o "$T/ld6.json"
expect 0 "LayerDAG   LD same size" synth eval "$T/ld6.json" --real "$T/real.txt" --samples 4
expect 0 '"layerdag": [-0-9.e]*, "layerdag_same_size": [-0-9.e]*}' synth eval "$T/ld6.json" --real "$T/real.txt" \
  --samples 4 --cluster dgx-h100 --json

# conditional generation: --label needs a cluster; the best of K samples is reported
expect 2 "--label wants --cluster NAME" synth sample "$T/m.json" -o "$T/l" --label step_time_ns=1000000
expect 2 "--label wants step_time_ns=T" synth sample "$T/m.json" -o "$T/l" --label 1000000 --cluster dgx-h100
expect 2 "--tries wants 1 to 10000" synth sample "$T/m.json" -o "$T/l" --tries 0
expect 2 "--attr-tries wants 1 to 10000" synth sample "$T/m.json" -o "$T/l" --attr-tries 0
expect 2 "--refine wants 0 to 100000" synth sample "$T/m.json" -o "$T/l" --refine 100001
# 3 structures x 2 attribute draws, then up to 32 single-node redraws (all reported)
expect 0 "up to 3 x 2; unconditioned model), " synth sample "$T/m.json" \
  -o "$T/l" --label step_time_ns=500000 --cluster dgx-h100 --tries 3 --attr-tries 2 --refine 32
expect 0 "0 errors, 0 warnings" validate "$T/l"
got=$("$ETKIT" sim "$T/l" -c dgx-h100 --gpus 4 | awk '/^step time/ {gsub(",", "", $3); print $3}')
"$ETKIT" synth sample "$T/m.json" -o "$T/l2" --label step_time_ns=500000 --cluster dgx-h100 --tries 3 --attr-tries 2 \
  --refine 32 | \
  grep -q "simulates to $got ns" || fail "--label: the reported step time is not the simulated one ($got ns)"
# a labeled model: attribute bins per label bucket in the file; a broken bucket bound is named
expect 0 "fitted the model to 3 rank graphs" synth fit "$T/a" --list "$T/list.txt" --layerdag --epochs 1 \
  --cluster dgx-h100 -o "$T/lab.json"
grep -q '"attr_bins_by_label":{"bounds_ns":\[' "$T/lab.json" || fail "labeled model lacks attr_bins_by_label"
sed 's/"bounds_ns":\[[^]]*\]/"bounds_ns":[3,2,1,1,1,1,1]/' "$T/lab.json" >"$T/badlab.json"
expect 2 "badlab.json: field 'attr_bins_by_label.bounds_ns': wanted 7 ascending positive numbers" \
  synth sample "$T/badlab.json" -o "$T/x"
expect 0 "model conditioned on the label), " synth sample "$T/lab.json" -o "$T/lab" --label step_time_ns=500000 \
  --cluster dgx-h100 --tries 2 --attr-tries 2 --refine 8
expect 0 "0 errors, 0 warnings" validate "$T/lab"

echo "$T/a" >"$T/one.txt"
expect 2 "one.txt: 1 rank graph(s): eval needs at least 2" synth eval "$T/m.json" --real "$T/one.txt"
expect 2 "give --real FILE" synth eval "$T/m.json"
exit $((fails > 0))
