#!/usr/bin/env bash
# cli_calibrate.sh — `etkit calibrate`: help; bad input (missing file, malformed JSON, unknown
# model preset, unknown parameter, a row with a bad plan) named with file, row and field and a
# non-zero exit; a training row's prediction equal to `etkit run`'s tokens/s; --fit writing the
# same YAML twice; and the report on the eight Korthikanti rows reproducing bench/fidelity.sh's
# figures (mean 2.11%, max 3.04%, spec/calibration.md).
# usage: bash tests/cli_calibrate.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect
HERE=$(cd "$(dirname "$0")/.." && pwd)

expect 0 "leave-one-set-out" calibrate --help
expect 2 "missing input file" calibrate
expect 2 "error: $T/nosuch.json" calibrate "$T/nosuch.json"
printf '[{"name": "a",' >"$T/bad.json"
expect 2 "$T/bad.json:1:.*malformed JSON" calibrate "$T/bad.json"
row() { # row <name> <model> <plan>
  printf '{"name": "%s", "set": "t", "gpu_type": "H100", "gpus": 8, "cluster": "dgx-h100", "model": %s, "plan": %s, "measured": {"metric": "tokens_per_s_per_gpu", "value": 1000}}' "$1" "$2" "$3"
}
SMALL='{"preset": "llama2-7b", "overrides": {"layers": 2, "hidden": 1024, "heads": 8, "ffn": 2816, "vocab": 16000}}'
PLAN='{"tp": 2, "dp": 4, "mbs": 1, "gbs": 8, "seq": 1024, "sp": true, "zero": 1}'
echo "[$(row good "$SMALL" "$PLAN"), $(row nomodel '{"preset": "llama9-1t"}' "$PLAN")]" >"$T/nomodel.json"
expect 2 "$T/nomodel.json: row 1 'nomodel': model.preset: .*llama9-1t" calibrate "$T/nomodel.json"
# the good row is still reported
expect 2 "^good " calibrate "$T/nomodel.json"
echo "[$(row badplan "$SMALL" '{"tp": 8, "pp": 3, "dp": 1}')]" >"$T/badplan.json"
expect 2 "$T/badplan.json: row 0 'badplan': plan: " calibrate "$T/badplan.json"
echo "[$(row good "$SMALL" "$PLAN")]" >"$T/good.json"
expect 2 "parameter .warp_speed. is unknown" calibrate "$T/good.json" --fit warp_speed
expect 2 "'warp_speed' is unknown" calibrate "$T/good.json" --param warp_speed=1
expect 2 "--loso applies to --fit" calibrate "$T/good.json" --loso
expect 2 "no row matches --gpu b200" calibrate "$T/good.json" --gpu b200
expect 2 "no row matches and the --rows names" calibrate "$T/good.json" --rows goo,od

# --plan-extra: plan options a row's run used that its plan does not carry (the recipe's)
printf '[1]' >"$T/x1.json"
expect 2 "$T/x1.json: expected a JSON object" calibrate "$T/good.json" --plan-extra "$T/x1.json"
printf '{"good": {"plan": {"dp": 4}}}' >"$T/x2.json"
expect 2 "$T/x2.json: 'good': expected {\"plan\": {plan options}, \"source\"" calibrate "$T/good.json" --plan-extra "$T/x2.json"
printf '{"nosuch": {"plan": {"dp": 4}, "source": "s"}}' >"$T/x3.json"
expect 2 "$T/x3.json: 'nosuch': no row of that name in $T/good.json" calibrate "$T/good.json" --plan-extra "$T/x3.json"
printf '{"good": {"plan": {"warp": 9}, "source": "s"}}' >"$T/x4.json"
expect 2 "row 0 'good': plan-extra plan.warp: not a plan option" calibrate "$T/good.json" --plan-extra "$T/x4.json"
# applied after the row's plan: recompute full predicts what the row with recompute full does
echo "[$(row good "$SMALL" '{"tp": 2, "dp": 4, "mbs": 1, "gbs": 8, "seq": 1024, "sp": true, "zero": 1, "recompute": "full"}')]" >"$T/full.json"
printf '{"good": {"plan": {"recompute": "full"}, "source": "s"}}' >"$T/x5.json"
a=$("$ETKIT" calibrate "$T/good.json" --plan-extra "$T/x5.json" | grep '^good ')
b=$("$ETKIT" calibrate "$T/full.json" | grep '^good ')
c=$("$ETKIT" calibrate "$T/good.json" | grep '^good ')
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ] || fail "--plan-extra recompute full: '$a', want '$b' (not '$c')"

# a row the rows file marks not expressible, expressed by a plan-extra entry giving its model,
# cluster and complete plan (the source quoting the row's description): predicted as the same
# row written out in full, and the report says where it came from
printf '[{"name": "ne", "set": "t", "gpu_type": "H100", "gpus": 8, "description": "D 7B, TP2", "measured": {"metric": "tokens_per_s_per_gpu", "value": 1000}, "expressible": false, "why_not": "w"}]' >"$T/ne.json"
printf '{"ne": {"model": %s, "cluster": "dgx-h100", "plan": %s, "source": "the row: D 7B, TP2"}}' "$SMALL" "$PLAN" >"$T/x6.json"
a=$("$ETKIT" calibrate "$T/ne.json" --plan-extra "$T/x6.json" | grep '^ne ' | awk '{print $6, $7}')
b=$("$ETKIT" calibrate "$T/good.json" | grep '^good ' | awk '{print $6, $7}')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "--plan-extra expressing row ne: '$a', want '$b'"
expect 0 "ne: marked not expressible in the rows file, expressed by the plan-extra file" calibrate "$T/ne.json" --plan-extra "$T/x6.json"
expect 0 "not expressible: w" calibrate "$T/ne.json"
# an empty why_not is a missing one (fuzz_calib: the row had neither a prediction nor a reason)
sed 's/"why_not": "w"/"why_not": ""/' "$T/ne.json" >"$T/ne0.json"
expect 0 "not expressible: marked not expressible (no why_not given)" calibrate "$T/ne0.json"
"$ETKIT" calibrate "$T/ne.json" --plan-extra "$T/x6.json" --json | grep -q '"expressed_by": "plan-extra"' ||
  fail "--json: no expressed_by for row ne"
printf '{"ne": {"model": %s, "cluster": "dgx-h100", "plan": %s, "source": "s"}}' "$SMALL" "$PLAN" >"$T/x7.json"
expect 2 "row 0 'ne': plan-extra entry: its 'source' must quote the row's description (\"D 7B, TP2\")" calibrate "$T/ne.json" --plan-extra "$T/x7.json"
printf '{"good": {"model": %s, "cluster": "dgx-h100", "plan": %s, "source": "s"}}' "$SMALL" "$PLAN" >"$T/x8.json"
expect 2 "row 0 'good': plan-extra entry: gives a model, but the row is expressible" calibrate "$T/good.json" --plan-extra "$T/x8.json"

# one path with etkit run: the same plan's tokens/s per GPU, to the printed digit
"$ETKIT" calibrate "$T/good.json" --json >"$T/good.out" || fail "calibrate good.json failed: $(head -3 "$T/good.out")"
"$ETKIT" run --model llama2-7b --layers 2 --hidden 1024 --heads 8 --ffn 2816 --vocab 16000 --tp 2 --dp 4 \
  --micro-batch 1 --global-batch 8 --seq 1024 --sp --zero 1 --cluster dgx-h100 --json --quiet >"$T/run.out" \
  || fail "etkit run failed"
python3 - "$T/good.out" "$T/run.out" <<'PY' || fail "calibrate's prediction differs from etkit run's"
import json, sys
c = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
pred = c["rows"][0]["predicted"]["predicted"]
want = r["tokens_per_s"] / r["n_ranks"]
assert abs(pred - want) <= 1e-9 * want, (pred, want)
assert c["rows"][0]["predicted"]["step_ns"] == r["step_ns"]
err = abs(100 * (want - 1000) / 1000)  # the JSON carries 10 significant digits
assert abs(c["summary"]["predicted"]["overall"]["mean_abs_err_pct"] - err) <= 1e-9 * err, err
PY

# --fit: before/after per row, the YAML written atomically and byte-identical on a rerun
echo "[$(row a "$SMALL" "$PLAN"), $(row b '{"preset": "llama2-7b", "overrides": {"layers": 2, "hidden": 2048, "heads": 16, "ffn": 5504}}' "$PLAN")]" >"$T/two.json"
expect 0 "gemm_eff" calibrate "$T/two.json" --fit gemm_eff,launch_ns --max-evals 40 -o "$T/f1.yaml"
grep -q "^compute:" "$T/f1.yaml" || fail "fitted YAML lacks compute:"
grep -q "^  launch_ns: " "$T/f1.yaml" || fail "fitted YAML lacks launch_ns"
"$ETKIT" calibrate "$T/two.json" --fit gemm_eff,launch_ns --max-evals 40 -o "$T/f2.yaml" -j 1 >/dev/null \
  || fail "second fit failed"
cmp -s "$T/f1.yaml" "$T/f2.yaml" || fail "the same fit gave different YAML"
ls "$T" | grep -q tmp && fail "a temporary file was left behind"

# --loso: each fold (here one row per set) starts from the full fit's values, reports its
# objective there and fitted (never worse) and whether it converged
sed 's/"set": "t"/"set": "u"/2' "$T/two.json" >"$T/twosets.json"
"$ETKIT" calibrate "$T/twosets.json" --fit gemm_eff --loso --max-evals 300 >"$T/loso.out" ||
  fail "--loso fit failed: $(head -3 "$T/loso.out")"
[ "$(grep -c "^  without [tu] .*gemm_eff" "$T/loso.out")" = 2 ] || fail "--loso: not two folds: $(cat "$T/loso.out")"
awk '/objective on the other sets. rows/ {n++; if ($13 + 0 > $7 + 0 || $NF != "converged") bad = 1}
     END {exit !(n == 2 && !bad)}' "$T/loso.out" ||
  fail "--loso: a fold ended worse than the full fit or did not converge: $(grep objective "$T/loso.out")"

# -o without --fit writes the --param values (the presets' transfers, bench/refit-presets.sh)
expect 2 "--output writes fitted values (--fit) or given ones (--param)" calibrate "$T/good.json" -o "$T/g.yaml"
expect 2 "--note applies to --output" calibrate "$T/good.json" --note x
"$ETKIT" calibrate "$T/good.json" --param fp8_gemm_eff=0.5 -o "$T/g.yaml" --note "a note" >/dev/null ||
  fail "-o with --param failed"
grep -q "^  fp8_gemm_eff: 0.5$" "$T/g.yaml" || fail "-o with --param: no fp8_gemm_eff 0.5: $(cat "$T/g.yaml")"
grep -q "^# a note$" "$T/g.yaml" || fail "--note not in the YAML header: $(cat "$T/g.yaml")"
grep -q "^name: H100-SXM$" "$T/g.yaml" || fail "-o with --param: not the rows' GPU: $(cat "$T/g.yaml")"

# a --param that is not fitted stays fixed in the fit and is written to the YAML
"$ETKIT" calibrate "$T/two.json" --fit gemm_eff --param launch_ns=5000 --max-evals 10 -o "$T/f3.yaml" >"$T/f3.out" \
  || fail "fit with a fixed parameter failed: $(head -3 "$T/f3.out")"
grep -q "^  launch_ns: 5000$" "$T/f3.yaml" || fail "the fixed launch_ns is not in the YAML: $(cat "$T/f3.yaml")"
# a parameter the rows do not depend on is named (one node: no NIC on any path)
expect 0 "warning: nic_GBps changes no prediction" calibrate "$T/good.json" --fit gemm_eff,nic_GBps --max-evals 8
# rows not expressible are listed in a fit's report, not fitted
echo "[$(row a "$SMALL" "$PLAN"), {\"name\": \"ssm\", \"set\": \"t\", \"gpu_type\": \"H100\", \"expressible\": false, \"why_not\": \"Mamba layers\"}]" >"$T/ne.json"
expect 0 "ssm (t, H100): not expressible: Mamba layers" calibrate "$T/ne.json" --fit gemm_eff --max-evals 6
expect 0 "1 rows, 0 predicted, 1 not expressible" calibrate "$T/ne.json" --rows ssm

KORTH=${CAL_TEST_KORTH:-1}
# the eight Korthikanti rows: bench/fidelity.sh's iteration-time errors (RESULTS.md)
[ "$KORTH" = 1 ] || exit $((fails > 0))
"$ETKIT" calibrate "$HERE/bench/calibration/korthikanti.json" --json >"$T/k.json" || fail "korthikanti report failed"
python3 - "$T/k.json" <<'PY' || fail "the Korthikanti figures moved"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]["predicted"]["overall"]
assert s["rows"] == 8, s
assert abs(s["mean_abs_err_pct"] - 2.11) < 0.006, s
assert abs(s["worst_abs_err_pct"] - 3.04) < 0.006, s
assert s["worst_row"] == "korthikanti-530b-sp-sel", s
assert not any(r["predicted"]["oom"] for r in d["rows"])
PY
exit $((fails > 0))
