#!/usr/bin/env bash
# cli_plan.sh — `etkit plan` (docs/plan.md): help; pruned rows' reasons and memory estimates
# against `etkit gen --summary` of the same plan; the lower bound below every
# simulated step; branch and bound keeping the exact top k (against the search without pruning);
# byte-identical CSV with -j 1 and -j 2 and with 1, 2 and 4 MPI processes and 2 processes of -j 2
# threads each (skipped when etkit was built without MPI); a cluster sweep; impossible requests and
# bad flags.
# usage: bash tests/cli_plan.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect

expect 0 "--gpu-hour-cost" plan --help
expect 0 "plan" --help
expect 2 "no model: give --model" plan --global-batch 16 --nodes 1
expect 2 "no batch: give --global-batch" plan --model llama3-8b --nodes 1
expect 2 "is a preset: give --nodes N" plan --model llama3-8b --global-batch 16
expect 2 "--rank-by wants step, tokens, mfu or cost, got 'speed'" plan --model llama3-8b --global-batch 16 --nodes 1 --rank-by speed
expect 2 "--rank-by cost: give --gpu-hour-cost for dgx-h100 x 1" plan --model llama3-8b --global-batch 16 --nodes 1 --rank-by cost
expect 2 "--schedules: unknown 'pipedream'" plan --model llama3-8b --global-batch 16 --nodes 1 --schedules 1f1b,pipedream
expect 2 "--memory-margin wants a fraction in \[0, 1), got '1.5'" plan --model llama3-8b --global-batch 16 --nodes 1 --memory-margin 1.5
expect 2 "--gpu-hour-cost hgx-h200=3: no such cluster" plan --model llama3-8b --global-batch 16 --nodes 1 --gpu-hour-cost hgx-h200=3
expect 2 "--tp 16 is larger than a node of dgx-h100 x 2 (8 GPUs): give --tp-across-nodes" \
  plan --model llama3-8b --global-batch 16 --nodes 2 --tp 16
expect 2 "--recompute-num-layers 1 is partial full recompute: not with --recompute none / --no-recompute" \
  plan --model llama3-8b --global-batch 16 --nodes 1 --recompute-num-layers 1 --no-recompute
# impossible requests say why and what to relax
expect 2 "no candidate plan: --global-batch 7 must be divisible by the data-parallel degree" \
  plan --model llama3-8b --global-batch 7 --nodes 1 --max-tp 4 --max-pp 1 --max-cp 1
expect 2 "no plan fits in memory" plan --model llama3-405b --global-batch 16 --nodes 1 --quiet
# --html: an unwritable page is refused before the search; no page when nothing was simulated
: >"$T/afile"
expect 2 "etkit plan: error: $T/afile/p.html: $T/afile is not a folder" \
  plan --model llama3-8b --layers 4 --global-batch 16 --nodes 1 --html "$T/afile/p.html"
expect 2 "no plan fits in memory" plan --model llama3-405b --global-batch 16 --nodes 1 --quiet --html "$T/none.html"
[ -e "$T/none.html" ] && fail "plan --html wrote a page with no plan simulated"
grep -q "relax: more nodes" "$T/out" || fail "the memory error does not say what to relax: $(cat "$T/out")"

W="--model llama3-8b --layers 4 --seq 2048 --global-batch 16 --cluster dgx-h100 --nodes 1"
"$ETKIT" plan $W -j 1 --csv "$T/j1.csv" >"$T/j1.txt" 2>&1 || fail "plan -j 1 failed: $(cat "$T/j1.txt")"
"$ETKIT" plan $W -j 2 --csv "$T/j2.csv" --html "$T/p.html" >/dev/null 2>&1 || fail "plan -j 2 failed"
# the page: one point per simulated plan (python/tests/test_plan.py checks the values and the front)
nsim=$(grep -c ',simulated,' "$T/j2.csv"); npt=$(grep -c '<circle class="pt' "$T/p.html")
[ "$nsim" -gt 0 ] && [ "$nsim" = "$npt" ] || fail "plan --html: $npt points for $nsim simulated plans"
cmp -s "$T/j1.csv" "$T/j2.csv" || fail "plan: CSV with -j 1 and -j 2 differ"
grep -q "ranked by step; top 10" "$T/j1.txt" || fail "plan: no table: $(head -3 "$T/j1.txt")"
# without partial recompute: the 200 candidates of none and full recompute only
"$ETKIT" plan $W --no-partial-recompute --quiet >"$T/np.txt" 2>&1 || fail "plan --no-partial-recompute failed"
grep -q "^plans: 200 candidates" "$T/np.txt" || fail "plan --no-partial-recompute: $(head -1 "$T/np.txt")"
# --no-sp: TP 2 plans without sequence parallelism; a plan's step is
# `etkit run`'s of its flags (which leave --sp out) and differs from the same plan with --sp
"$ETKIT" plan $W --no-sp --tp 2 --pp 1 --zero 1 --recompute none --quiet --csv "$T/nosp.csv" >/dev/null 2>&1 ||
  fail "plan --no-sp failed"
python3 - "$T/nosp.csv" "$ETKIT" <<'EOF2' || fail "plan --no-sp (above)"
import csv, subprocess, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sim = [r for r in rows if r["status"] == "simulated"]
if not sim or any("--sp" in r["flags"].split() for r in rows):
    print("--no-sp: %d simulated, flags %s" % (len(sim), [r["flags"] for r in rows])); sys.exit(1)
def step(flags):
    p = subprocess.run([sys.argv[2], "run", "--model", "llama3-8b", "--layers", "4", "--seq", "2048"] + flags +
                       ["--cluster", "dgx-h100", "--nodes", "1", "--quiet", "--csv"], capture_output=True, text=True)
    hdr, val = p.stdout.splitlines()[0].split(","), p.stdout.splitlines()[1].split(",")
    return val[hdr.index("step_ns")]
r = sim[0]
off, on = step(r["flags"].split()), step(r["flags"].split() + ["--sp"])
if off != r["step_ns"] or on == off:
    print("--no-sp: step %s, etkit run %s, with --sp %s" % (r["step_ns"], off, on)); sys.exit(1)
EOF2
expect 2 "(--no-sp turns it off)" plan --model llama3-8b --global-batch 16 --nodes 1 --sp
# the table's first line is the CSV's rank 1, with flags ready for `etkit run`
"$ETKIT" plan $W --top 1000000 --csv "$T/all.csv" >/dev/null 2>&1 || fail "plan --top 1000000 failed"

python3 - "$T" "$ETKIT" <<'EOF' || fail "plan: CSV checks (above)"
import csv, subprocess, sys, re
T, etkit = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(T + "/j1.csv")))
allr = list(csv.DictReader(open(T + "/all.csv")))
bad = 0
def err(msg):
    global bad
    print(msg); bad += 1
model = "--model llama3-8b --layers 4 --seq 2048".split()
st = {}
for r in rows:
    st[r["status"]] = st.get(r["status"], 0) + 1
# 320 candidates: tp 1, 2, 4, 8 with pp <= 4 and dp | 16 on 8 GPUs, recompute none, full and
# full of N layers per stage (pp 1: 1, 2, 3 of 4; pp 2: 1 of 2) (the enumeration test checks counts)
if len(rows) != 320: err("rows %d, want 320" % len(rows))
if not st.get("invalid") or not st.get("bound") or not st.get("simulated") or not st.get("dominated"):
    err("statuses %s: want invalid, dominated, bound and simulated rows" % st)
# dominated rows: the twin the reason names (the same flags with its recompute) fits in memory
byflags = {r["flags"]: r for r in rows}
for r in rows:
    if r["status"] != "dominated":
        continue
    m = re.search(r"the same plan with (--recompute [a-z]+(?: --recompute-stage-layers [0-9]+)?) fits", r["reason"])
    twin = m and byflags.get(re.sub(r"--recompute [a-z]+(?: --recompute-stage-layers [0-9]+)?", m.group(1), r["flags"]))
    if not twin or twin["status"] in ("invalid", "memory") or r["zero"] == "3":
        err("dominated %s: twin %s" % (r["flags"], twin and (twin["flags"], twin["status"])))
# the lower bound is below every simulated step (a bound above would prune wrongly)
for r in allr:
    if r["status"] == "simulated" and int(r["lower_bound_ns"]) > int(r["step_ns"]):
        err("lower bound %s > step %s: %s" % (r["lower_bound_ns"], r["step_ns"], r["flags"]))
# branch and bound keeps the exact top 10: the same plans and steps as the search without pruning
top = sorted((int(r["rank"]), r["flags"], r["step_ns"]) for r in rows if r["status"] == "simulated")[:10]
ref = sorted((int(r["rank"]), r["flags"], r["step_ns"]) for r in allr if r["status"] == "simulated")[:10]
if top != ref: err("top 10 with pruning %s != without %s" % (top, ref))
# the rows pruned by the bound: their bound exceeds the 10th best simulated step
tenth = sorted(int(r["step_ns"]) for r in allr if r["status"] == "simulated")[9]
for r in rows:
    if r["status"] == "bound" and int(r["lower_bound_ns"]) <= tenth:
        err("pruned by the bound with bound %s <= 10th best %d" % (r["lower_bound_ns"], tenth))
# invalid rows: the reason is etkit gen's message for the same plan
inv = [r for r in rows if r["status"] == "invalid"]
for r in inv[:3]:
    p = subprocess.run([etkit, "gen"] + model + r["flags"].split() + ["--summary"], capture_output=True, text=True)
    if p.returncode != 2 or r["reason"] not in p.stderr:
        err("invalid: reason '%s' vs gen (%d): %s" % (r["reason"], p.returncode, p.stderr.strip()))
# simulated rows: the memory estimate is etkit gen --summary's peak, and etkit run gives the step
for r in [x for x in rows if x["status"] == "simulated"][:2]:
    p = subprocess.run([etkit, "gen"] + model + r["flags"].split() + ["--summary"], capture_output=True, text=True)
    m = re.search(r"memory: peak [0-9.]+ GiB \(([0-9]+) bytes\)", p.stdout)
    if not m or m.group(1) != r["mem_bytes"]:
        err("memory %s vs gen --summary %s" % (r["mem_bytes"], m and m.group(1)))
    p = subprocess.run([etkit, "run"] + model + r["flags"].split() + ["--cluster", "dgx-h100", "--nodes", "1", "--quiet", "--csv"],
                       capture_output=True, text=True)
    m = re.search(r"^run,.*", p.stdout, re.M)
    hdr = p.stdout.splitlines()[0].split(",") if p.stdout else []
    vals = m.group(0).split(",") if m else []
    if "step_ns" not in hdr or vals[hdr.index("step_ns")] != r["step_ns"]:
        err("step %s vs etkit run %s" % (r["step_ns"], vals[hdr.index("step_ns")] if "step_ns" in hdr else p.stdout[:200]))
sys.exit(1 if bad else 0)
EOF

# memory rows: with a 75% margin plans of llama3-8b on one node run out; the reason's figure is
# etkit gen --summary's peak
"$ETKIT" plan --model llama3-8b --global-batch 16 --nodes 1 --memory-margin 0.75 --csv "$T/m.csv" >/dev/null 2>&1 ||
  fail "plan --memory-margin 0.75 failed"
python3 - "$T" "$ETKIT" <<'EOF' || fail "plan: memory reasons (above)"
import csv, subprocess, sys, re
T, etkit = sys.argv[1], sys.argv[2]
rows = [r for r in csv.DictReader(open(T + "/m.csv")) if r["status"] == "memory"]
if not rows:
    print("no memory rows"); sys.exit(1)
for r in rows[:3]:
    cap = 85520809984 * 0.25 / 2**30
    if "> %.2f GiB = 79.65 GiB HBM x (1 - margin 0.75)" % cap not in r["reason"]:
        print("memory reason", r["reason"]); sys.exit(1)
    p = subprocess.run([etkit, "gen", "--model", "llama3-8b"] + r["flags"].split() + ["--summary"], capture_output=True, text=True)
    m = re.search(r"memory: peak ([0-9.]+) GiB \(([0-9]+) bytes\)", p.stdout)
    if not m or m.group(2) != r["mem_bytes"] or ("memory estimate %s GiB" % m.group(1)) not in r["reason"]:
        print("memory", r["mem_bytes"], r["reason"], "vs gen", m and m.groups()); sys.exit(1)
EOF

# a sweep: two clusters x two node counts, per-cluster best plan and tokens per dollar
"$ETKIT" plan --model llama3-8b --layers 4 --seq 2048 --global-batch 32 --cluster dgx-h100,hgx-h200 --nodes 1,2 \
  --gpu-hour-cost dgx-h100=2.5,hgx-h200=3.5 --rank-by cost --tp 2 --json "$T/sw.json" >"$T/sw.txt" 2>&1 ||
  fail "plan sweep failed: $(head -3 "$T/sw.txt")"
# (a cluster none of whose plans can reach the top k shows "<= N" tokens/s from its best lower
# bound: checked against the cluster searched alone, whose best plan must not beat it)
for c in "dgx-h100 x 1" "dgx-h100 x 2" "hgx-h200 x 1" "hgx-h200 x 2"; do
  grep -q "^$c  *\(<= \)\?[0-9]" "$T/sw.txt" || fail "sweep: no per-cluster line for $c: $(tail -6 "$T/sw.txt")"
  up=$(sed -n "s/^$c  *<= \([0-9]*\) .*none in the top 10 (lower bound)\$/\1/p" "$T/sw.txt")
  [ -n "$up" ] || continue
  cl=${c% x *} n=${c##* x }
  best=$("$ETKIT" plan --model llama3-8b --layers 4 --seq 2048 --global-batch 32 --cluster "$cl" --nodes "$n" \
    --tp 2 --rank-by tokens --top 1 --quiet --csv - | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "tokens_per_s") k = i; next } $5 == 1 { print $k }')
  [ -n "$best" ] || fail "sweep: $c alone: no best plan"
  awk -v b="$best" -v u="$up" 'BEGIN { exit !(b <= u + 0.5) }' || fail "sweep: $c alone reaches $best tokens/s, above the sweep's bound $up"
  bounded=1
done
[ -n "${bounded:-}" ] || echo "note: no cluster of the sweep was pruned whole by the bound"

grep -q "tokens/USD" "$T/sw.txt" || fail "sweep: no tokens/USD column"
python3 - "$T/sw.json" <<'EOF' || fail "sweep JSON (above)"
import json, sys
d = json.load(open(sys.argv[1]))
sim = [p for p in d["plans"] if p["status"] == "simulated"]
best = min(sim, key=lambda p: p["usd_per_mtok"])
if best["rank"] != 1: print("rank 1 is not the cheapest", best); sys.exit(1)
# USD per 1M tokens = GPUs x USD/hour / 3600 / tokens/s x 1e6
gpus = {c["cluster"]: (c["gpus"], c["gpu_hour_usd"]) for c in d["clusters"]}
for p in sim[:5]:
    n, usd = gpus[p["cluster"]]
    want = n * usd / 3600 / p["tokens_per_s"] * 1e6
    if abs(p["usd_per_mtok"] - want) > 1e-9 * want: print("cost", p, want); sys.exit(1)
EOF

# uneven ends: 6 layers on 4 stages split evenly as 2, 2, 1, 1; (6 + 2) / 4 = 2 gives the ends
# 1, 2, 2, 1 too (VPP 1 only: an end stage of 1 layer has no second chunk), each with 1f1b and
# zb-h1: 4 candidates, 2 with --even-stages; the flags carry the ends to `etkit run`
E="--model llama3-8b --layers 6 --seq 2048 --global-batch 16 --cluster dgx-h100 --nodes 1 --tp 1 --pp 4 --micro-batch 1 --zero 1 --recompute none --quiet --csv -"
[ "$("$ETKIT" plan $E | tail -n +2 | wc -l)" = 4 ] || fail "uneven ends: want 4 candidates"
[ "$("$ETKIT" plan $E | grep -c -- '--first-stage-layers 1 --last-stage-layers 1')" = 2 ] || fail "uneven ends: flags"
[ "$("$ETKIT" plan $E --even-stages | tail -n +2 | wc -l)" = 2 ] || fail "--even-stages: want 2 candidates"

# the lower bound (compute, and each TP / CP / DP group's collectives on its stream) is below the
# simulated step of every plan of a space where communication weighs: 16 GPUs on 2 nodes, CP 2
# (8,192 tokens), TP across the nodes, ZeRO 0 to 3, nothing pruned by the bound
"$ETKIT" plan --model llama3-8b --layers 4 --seq 8192 --global-batch 16 --cluster dgx-h100 --nodes 2 \
  --tp-across-nodes --zero-stages 0,1,2,3 --top 1000000 --quiet --csv "$T/comm.csv" >/dev/null 2>&1 ||
  fail "plan (communication bound space) failed"
python3 - "$T/comm.csv" <<'EOF2' || fail "communication bound"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "simulated"]
if len(rows) < 100: print("only %d plans simulated" % len(rows)); sys.exit(1)
bad = [r for r in rows if int(r["lower_bound_ns"]) > int(r["step_ns"])]
for r in bad[:5]: print("lower bound %s > step %s: %s" % (r["lower_bound_ns"], r["step_ns"], r["flags"]))
sys.exit(1 if bad else 0)
EOF2

# the compute bound is the compute model's time of each stage's kernels (the summary times them as
# the simulator does; test_plan checks the sum against the simulator's compute stream): below the
# step of every plan of a MoE space (EP, FP8, every schedule), and tight: the FLOP bound alone
# (every kernel at the best GEMM efficiency) left MoE plans at 0.1-0.3 of their step
"$ETKIT" plan --model mixtral-8x7b --layers 2 --seq 4096 --global-batch 16 --cluster dgx-h100 --nodes 1 \
  --precision fp8 --top 1000000 --quiet --csv "$T/moe.csv" >/dev/null 2>&1 || fail "plan (MoE space) failed"
python3 - "$T/moe.csv" <<'EOF2' || fail "MoE lower bound"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "simulated"]
if len(rows) < 100: print("only %d MoE plans simulated" % len(rows)); sys.exit(1)
q = sorted(int(r["lower_bound_ns"]) / int(r["step_ns"]) for r in rows)
bad = [r for r in rows if int(r["lower_bound_ns"]) > int(r["step_ns"])]
for r in bad[:5]: print("lower bound %s > step %s: %s" % (r["lower_bound_ns"], r["step_ns"], r["flags"]))
if q[len(q) // 2] < 0.6: print("MoE bound / step median %.3f, want >= 0.6" % q[len(q) // 2]); sys.exit(1)
sys.exit(1 if bad else 0)
EOF2

# inference: the bound is the timed compute of the whole request (prefill and every decode step);
# below every plan's step, and equal to it where nothing else takes time (TP 1, PP 1: no
# collective, no pipeline; the simulator's step is its compute stream)
"$ETKIT" plan --model llama3-8b --mode inference --global-batch 16 --cluster dgx-h100 --nodes 1 --top 1000000 \
  --quiet --csv "$T/inf.csv" >/dev/null 2>&1 || fail "plan (inference space) failed"
python3 - "$T/inf.csv" <<'EOF2' || fail "inference lower bound"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "simulated"]
if len(rows) < 8: print("only %d inference plans simulated" % len(rows)); sys.exit(1)
bad = [r for r in rows if int(r["lower_bound_ns"]) > int(r["step_ns"])]
for r in bad[:5]: print("lower bound %s > step %s: %s" % (r["lower_bound_ns"], r["step_ns"], r["flags"]))
solo = [r for r in rows if r["tp"] == "1" and r["pp"] == "1"]
if not solo: print("no TP 1 PP 1 plan"); sys.exit(1)
for r in solo:
    if r["lower_bound_ns"] != r["step_ns"]:
        print("TP 1 PP 1: bound %s, step %s: %s" % (r["lower_bound_ns"], r["step_ns"], r["flags"])); sys.exit(1)
sys.exit(1 if bad else 0)
EOF2

# progress: silent when stderr is not a terminal; on one (script(1) gives a pty) plans done/total
"$ETKIT" plan $W >/dev/null 2>"$T/err.txt" || fail "plan failed"
[ -s "$T/err.txt" ] && fail "plan wrote to a non-terminal stderr: $(head -2 "$T/err.txt")"
if command -v script >/dev/null; then
  # etkit/progress.h's line (drawn from the first update with ETK_PROGRESS_DELAY_MS=0, and on every
  # update with ETK_PROGRESS_INTERVAL_MS=0: the search takes ~0.3 s, and at ten lines a second the
  # line could miss the first simulated plan), the best plan so far in its label
  ETK_PROGRESS_DELAY_MS=0 ETK_PROGRESS_INTERVAL_MS=0 script -qec "$ETKIT plan $W" /dev/null >"$T/tty.txt" 2>&1
  grep -Eq "plans decided [0-9]+/320 \(" "$T/tty.txt" || fail "no progress on a terminal: $(head -c 300 "$T/tty.txt")"
  grep -Eq "plans decided \(best [0-9.]+ ms: tp [0-9]+ cp [0-9]+ pp [0-9]+ dp [0-9]+\) [0-9]+/320 \([0-9.]+%\)" "$T/tty.txt" ||
    fail "no best plan in the progress line: $(head -c 600 "$T/tty.txt")"
  ETK_PROGRESS_DELAY_MS=0 script -qec "$ETKIT plan $W --quiet" /dev/null >"$T/tty.txt" 2>&1
  grep -q "decided" "$T/tty.txt" && fail "progress despite --quiet"
fi

# --fp8-weight-cache (a workload flag) reaches the search's memory estimate: each simulated row's
# memory is etkit gen --summary's peak with the flag, 2 bytes per FP8-GEMM weight element above
# the same plan's without it (TP 2, 4 layers: 4 x 2 x 4096 x (4096 + 2 x 1024 + 4096 + 3 x 14336) / 2
# = 872,415,232 bytes; tests/test_gen.c derives the term for Llama 3 70B)
FC="$W --precision fp8 --tp 2 --max-pp 1 --top 2"
"$ETKIT" plan $FC --quiet --csv "$T/fc0.csv" >/dev/null 2>&1 || fail "plan --precision fp8 failed"
"$ETKIT" plan $FC --fp8-weight-cache --quiet --csv "$T/fc1.csv" >/dev/null 2>&1 || fail "plan --fp8-weight-cache failed"
python3 - "$T" "$ETKIT" <<'EOF2' || fail "plan --fp8-weight-cache: memory checks (above)"
import csv, re, subprocess, sys
T, etkit = sys.argv[1], sys.argv[2]
r0 = {r["flags"]: r for r in csv.DictReader(open(T + "/fc0.csv"))}
sim = [r for r in csv.DictReader(open(T + "/fc1.csv")) if r["status"] == "simulated"]
if not sim: print("no simulated row"); sys.exit(1)
if not [r for r in sim if r["zero"] != "3"]: print("no simulated row without ZeRO-3"); sys.exit(1)
for r in sim:  # ZeRO-3 gathers the weights per layer: no cache counted
    want = 0 if r["zero"] == "3" else 872415232
    if int(r["mem_bytes"]) - int(r0[r["flags"]]["mem_bytes"]) != want:
        print("%s: cache %d bytes, want %d" % (r["flags"], int(r["mem_bytes"]) - int(r0[r["flags"]]["mem_bytes"]), want))
        sys.exit(1)
for r in [x for x in sim if x["zero"] != "3"][:2]:
    p = subprocess.run([etkit, "gen", "--model", "llama3-8b", "--layers", "4", "--seq", "2048", "--precision", "fp8",
                        "--fp8-weight-cache"] + r["flags"].split() + ["--summary"], capture_output=True, text=True)
    m = re.search(r"memory: peak [0-9.]+ GiB \(([0-9]+) bytes\)", p.stdout)
    if not m or m.group(1) != r["mem_bytes"]:
        print("memory %s vs gen --summary %s" % (r["mem_bytes"], m and m.group(1))); sys.exit(1)
EOF2

# MPI: the same CSV with 1, 2 and 4 processes and with 2 processes of 2 threads each (dynamic load
# balancing must not change the result)
if command -v mpirun >/dev/null && ldd "$ETKIT" 2>/dev/null | grep -q libmpi; then
  # under ASan (make test-asan) Open MPI's own allocations kept until exit are not etkit's leaks
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
  MPI="mpirun --allow-run-as-root --oversubscribe"
  [ "$(id -u)" = 0 ] || MPI="mpirun --oversubscribe"
  # "2j": mpirun -np 2 ... -j 2, two worker threads in each process (rank 0's beside its server)
  for np in 1 2 4 2j; do
    J=""
    case $np in *j) J="-j ${np%j}"; np=2 ;; esac
    name="mpi$np${J:+j}"
    $MPI -np $np "$ETKIT" plan $W $J --quiet --csv "$T/$name.csv" >"$T/$name.txt" 2>&1 ||
      fail "mpirun -np $np etkit plan $J failed: $(tail -3 "$T/$name.txt")"
    cmp -s "$T/j1.csv" "$T/$name.csv" || fail "plan: CSV with mpirun -np $np $J differs from -j 1"
    [ "$(grep -c "ranked by step" "$T/$name.txt")" = 1 ] || fail "mpirun -np $np $J: the table is not printed once"
  done
  # -j under mpirun: each process runs that many worker threads (ETK_PLAN_MPI_STATS counts them)
  $MPI -np 2 -x ETK_PLAN_MPI_STATS=1 "$ETKIT" plan $W -j 2 --quiet --csv "$T/mpis.csv" >"$T/mpis.txt" 2>&1 ||
    fail "mpirun -np 2 etkit plan -j 2 (stats) failed: $(tail -3 "$T/mpis.txt")"
  grep -q "rank 0 local workers (2 threads)" "$T/mpis.txt" && grep -q "rank 1 workers (2 threads)" "$T/mpis.txt" ||
    fail "mpirun -np 2 ... -j 2: not 2 worker threads per process: $(grep "etkit plan: rank" "$T/mpis.txt")"
  cmp -s "$T/j1.csv" "$T/mpis.csv" || fail "plan: CSV with mpirun -np 2 -j 2 and the stats differs from -j 1"
  # phase 1 (validity, memory, bound) batches its results: a remote process sends them only with
  # its requests for more rows, so of rank 0's phase-1 messages exactly one per remote process
  # (its final message) carries no request; before s27 every row finished between two requests
  # went alone (~1 message per row, 1,400 for 2,400 rows: bench/RESULTS.md "s27-plan"); at least
  # two (a request, the final message).
  p1=$(sed -n 's/.*rank 0 server.*(phase 1: \([0-9]*\), \([0-9]*\) of them without a request, \([0-9]*\) rows).*/\1 \2 \3/p' "$T/mpis.txt")
  read -r m1 b1 r1 <<<"$p1"
  [ -n "$r1" ] && [ "$b1" = 1 ] && [ "$m1" -ge 2 ] ||
    fail "mpirun -np 2 -j 2: phase 1 not batched (messages, without a request, rows: '$p1'): $(grep "rank 0 server" "$T/mpis.txt")"
  # ETK_PLAN_MPI_STATS's timeline (s29): every step of each process once, in order, times not
  # decreasing, each step's wall time the difference of its "at" times, the steps' CPU summing to
  # the process's CPU, and that CPU split into the worker threads' (as the workers line counts
  # them), the main thread's and the rest (docs/plan.md "Parallel search")
  # s30: on one node the plan space is built and the workers start before MPI_Init (it overlaps
  # the search); ETK_PLAN_MPI_EARLY=0 keeps MPI_Init first, with the same CSV
  $MPI -np 2 -x ETK_PLAN_MPI_EARLY=0 -x ETK_PLAN_MPI_STATS=1 "$ETKIT" plan $W -j 2 --quiet --csv "$T/mpie.csv" \
    >"$T/mpie.txt" 2>&1 || fail "mpirun -np 2 etkit plan -j 2 (ETK_PLAN_MPI_EARLY=0) failed: $(tail -3 "$T/mpie.txt")"
  cmp -s "$T/j1.csv" "$T/mpie.csv" || fail "plan: CSV with mpirun -np 2 -j 2 and ETK_PLAN_MPI_EARLY=0 differs from -j 1"
  for f in mpis mpie; do
  python3 - "$T/$f.txt" "$f" <<'EOF2' || fail "mpirun -np 2 -j 2 ($f): ETK_PLAN_MPI_STATS timeline wrong: $(grep "rank . at\|rank . CPU" "$T/$f.txt")"
import re, sys
txt = open(sys.argv[1]).read()
init = ["plan space built", "MPI_Init done"] if sys.argv[2] == "mpis" else ["MPI_Init done", "plan space built"]
steps = ["process started", "etkit plan entered", "flags, presets, clusters parsed"] + init + ["phase 1 (assess) done", "phase 2 (simulate) done", "result gathered",
         "output written", "MPI_Finalize done"]
for rank in (0, 1):
    got = re.findall(r"rank %d at ([0-9.]+) s: ([^\n]+?) \((?:step ([0-9.]+) s wall, ([0-9.]+) s CPU, main thread ([0-9.]+) s|times)" % rank, txt)
    want = [x for x in steps if rank == 0 or x != "result gathered"]
    if [g[1] for g in got] != want:
        print("rank %d steps" % rank, [g[1] for g in got]); sys.exit(1)
    at = [float(g[0]) for g in got]
    if at != sorted(at):
        print("rank %d times decrease" % rank, at); sys.exit(1)
    for i in range(1, len(got)):
        if abs(float(got[i][2]) - (at[i] - at[i - 1])) > 0.0025:
            print("rank %d step %s: %s s against %.3f" % (rank, got[i][1], got[i][2], at[i] - at[i - 1])); sys.exit(1)
    cpu = sum(float(g[3]) for g in got[1:])
    m = re.search(r"rank %d CPU ([0-9.]+) s: worker threads ([0-9.]+) s, main thread ([0-9.]+) s, other threads \(Open MPI's\) ([0-9.]+) s; [0-9]+ page faults, [0-9]+ context switches; PML (.*)" % rank, txt)
    if not m:
        print("rank %d: no CPU line" % rank); sys.exit(1)
    total, work, main, other = (float(m.group(i)) for i in range(1, 5))
    main_steps = sum(float(g[4]) for g in got[1:])
    if abs(cpu - total) > 0.006 or abs(main_steps - main) > 0.006 or abs(work + main + other - total) > 0.003 or work <= 0:
        print("rank %d: steps' CPU %.3f, main %.3f; line %s" % (rank, cpu, main_steps, m.group(0))); sys.exit(1)
    w = re.search(r"rank 0 local workers.*?([0-9.]+) s CPU," if rank == 0 else r"rank 1 workers.*?([0-9.]+) s CPU \(main thread ([0-9.]+) s\)", txt)
    wcpu = float(w.group(1)) - (float(w.group(2)) if rank else 0)
    if abs(wcpu - work) > 0.003:
        print("rank %d: workers line %.3f s, CPU line %.3f s" % (rank, wcpu, work)); sys.exit(1)
    if m.group(5) != "ob1 (all processes on one node)":
        print("rank %d: PML %s" % (rank, m.group(5))); sys.exit(1)
EOF2
  done
  # one node: etkit asks Open MPI for the ob1 PML only, so MPI_Init opens no other (with Debian's
  # defaults it also opened cm and its MTLs: MPI_Init 0.29-0.45 -> 0.10-0.22 s, bench/RESULTS.md "s29-plan");
  # ETK_PLAN_MPI_PML=default and a user's OMPI_MCA_pml leave the choice to Open MPI / the user
  W1="--model llama3-8b --global-batch 8 --cluster dgx-h100 --nodes 1 --tp 8 --pp 1 --cp 1 --micro-batch 1 --zero 1 --recompute none --quiet"
  $MPI -np 2 --mca pml_base_verbose 100 --mca mtl_base_verbose 100 -x ETK_PLAN_MPI_STATS=1 "$ETKIT" plan $W1 \
    >"$T/pml.txt" 2>&1 || fail "mpirun -np 2 (pml verbose) failed: $(tail -3 "$T/pml.txt")"
  [ "$(grep -c "initializing pml component ob1" "$T/pml.txt")" = 2 ] && ! grep -q "component cm\|opening mtl" "$T/pml.txt" &&
    [ "$(grep -c "PML ob1 (all processes on one node)" "$T/pml.txt")" = 2 ] ||
    fail "one node: not ob1 alone: $(grep -i "pml\|mtl" "$T/pml.txt" | head -5)"
  $MPI -np 2 -x ETK_PLAN_MPI_PML=default -x ETK_PLAN_MPI_STATS=1 "$ETKIT" plan $W1 >"$T/pml2.txt" 2>&1 &&
    [ "$(grep -c "PML Open MPI's choice (ETK_PLAN_MPI_PML=default)" "$T/pml2.txt")" = 2 ] ||
    fail "ETK_PLAN_MPI_PML=default not honoured: $(grep "PML" "$T/pml2.txt")"
  $MPI -np 2 -x OMPI_MCA_pml=ob1 -x ETK_PLAN_MPI_STATS=1 "$ETKIT" plan $W1 >"$T/pml3.txt" 2>&1 &&
    [ "$(grep -c "PML the user's OMPI_MCA_pml" "$T/pml3.txt")" = 2 ] ||
    fail "a user's OMPI_MCA_pml not left alone: $(grep "PML" "$T/pml3.txt")"
else
  echo "cli_plan: MPI tests skipped (etkit built without MPI or no mpirun)"
fi

exit $((fails > 0))
