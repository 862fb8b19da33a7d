#!/usr/bin/env python3
"""bench/b200_decompose.py - where the time of the five B200 rows goes (s32-b200, issue #16).

usage: python3 bench/b200_decompose.py <etkit> <shared-dir> [--param NAME=V ...]
For each row of the mbridge-b200 set (its plan as `etkit calibrate` builds it, with
bench/calibration/modern-plan-extra.json's DeepSeek-V3 options): the full step's per-rank
split of `etkit run` (compute, exposed communication, idle = pipeline bubble and waits, of the
first stage's rank 0), and from a timeline of the same plan with fewer micro-batches (at most
32 per rank) rank 0's compute by kernel class and its exposed communication by type, as
fractions applied to the full step's totals. Kernel classes by node name (docs/gen.md):
attention (flash_attn*), FFN GEMMs (gate/up/down: grouped expert GEMMs in MoE layers),
other GEMMs (every other node with an FP8 cast: q/k/v/proj/router, MLA projections; the head),
FP8 casts (*fp8_cast*), MoE glue
(topk, dispatch, combine, their backward), the rest memory-bound (norms, RoPE, SwiGLU,
residuals, embedding, optimizer).
"""
import json, re, subprocess, sys, tempfile, os

ETKIT, SHARED = sys.argv[1], sys.argv[2]
EXTRA = [a for p in sys.argv[3:] for a in ("--compute-param", p.split("=", 1)[0] + "=" + p.split("=", 1)[1])]
COMMON = ["--cluster", "dgx-b200", "--precision", "fp8", "--zero", "1", "--grad-precision", "bf16"]
M = SHARED + "/data/models/"
ROWS = [
    ("mb2511-b200-llama3-8b", ["--model", "llama3-8b", "--nodes", "1", "--dp", "8", "--micro-batch", "2",
                               "--seq", "8192"], 128, 128),
    ("mb2511-b200-llama31-405b", ["--model", "llama3-405b", "--nodes", "16", "--tp", "4", "--pp", "8", "--cp", "2",
                                  "--vpp", "8", "--dp", "2", "--sp", "--cp-comm", "ring", "--micro-batch", "1",
                                  "--seq", "8192"], 64, 64),
    ("mb260401-b200-qwen3-30b-a3b", ["--model-file", M + "qwen3-30b-a3b.json", "--nodes", "1", "--ep", "8",
                                     "--dp", "8", "--micro-batch", "4", "--seq", "4096"], 512, 512),
    ("mb260401-b200-qwen3-235b-a22b", ["--model-file", M + "qwen3-235b-a22b.json", "--nodes", "32", "--pp", "8",
                                       "--ep", "8", "--dp", "32", "--micro-batch", "1", "--seq", "4096"], 8192, 1024),
    ("mb260401-b200-deepseek-v3", ["--model", "deepseek-v3", "--nodes", "32", "--pp", "8", "--vpp", "2", "--ep", "32",
                                   "--dp", "32", "--micro-batch", "1", "--seq", "4096",
                                   "--recompute-modules", "mla_up_proj,mlp", "--moe-max-nodes", "4"], 4096, 1024),
]
CLASSES = ["attention", "FFN GEMMs", "other GEMMs", "FP8 casts", "MoE glue", "memory-bound"]


def strip(name):
    n = re.sub(r"^mb\d+\.(c\d+\.)?", "", name)
    n = re.sub(r"^L\d+\.", "", n)
    return re.sub(r"^recompute\.", "", n)


GEMMS = set()  # the bases with an FP8 cast (TE linears), filled per timeline


def klass(name):
    n = strip(name)
    if "fp8_cast" in n:
        return "FP8 casts"
    if n.startswith("flash_attn") or n.startswith("attn_ring"):
        return "attention"
    base = n.split(".")[0]
    if base in ("gate", "up", "down", "shared_gate", "shared_up", "shared_down", "fc1", "fc2"):
        return "FFN GEMMs"
    if base in ("topk", "dispatch", "combine", "aux_loss", "permute", "unpermute"):
        return "MoE glue"
    if n.endswith((".dgrad", ".wgrad")) or base in GEMMS or base in ("head", "logits", "lm_head", "output"):
        return "other GEMMs"
    return "memory-bound"


def union(iv):
    iv.sort()
    out = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(a, b, u):
    s = 0.0
    for x, y in u:  # u sorted; fine for these sizes
        if y <= a:
            continue
        if x >= b:
            break
        s += min(b, y) - max(a, x)
    return s


def run(args, gbs, timeline=None):
    cmd = [ETKIT, "run"] + COMMON + args + ["--global-batch", str(gbs)] + EXTRA
    if timeline:
        cmd += ["--timeline", timeline]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return cmd, out


print("| row | step s | tokens/s/GPU | rank 0 compute s | exposed comm s | idle s | " +
      " | ".join(CLASSES) + " | exposed comm by type |")
print("|---|" + "---|" * (5 + len(CLASSES) + 1))
for name, args, gbs, small in ROWS:
    cmd, out = run(args, gbs)
    step = int(re.search(r"step time\s+([\d,]+) ns", out).group(1).replace(",", "")) / 1e9
    tok = float(re.search(r"tokens/s\s+([\d.]+)", out).group(1))
    gpus = int(re.search(r"= (\d+) ranks", out).group(1))
    r0 = re.search(r"^0 (\(\+\d+\))?\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
    comp, expo, idle = int(r0.group(2)) / 1e9, int(r0.group(3)) / 1e9, int(r0.group(6)) / 1e9
    with tempfile.TemporaryDirectory() as td:
        tl = os.path.join(td, "t.json")
        run(args, small, tl)
        d = json.load(open(tl))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    tname = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("pid") == 0
             and e.get("name") == "thread_name"}
    comp_ev = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 0 and "compute" in tname.get(e["tid"], "")]
    comm_ev = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 0 and "compute" not in tname.get(e["tid"], "")
               and "CPU" not in tname.get(e["tid"], "")]
    GEMMS.clear()
    GEMMS.update(strip(e["name"]).split(".")[0] for e in comp_ev if "fp8_cast" in e["name"])
    cls = dict.fromkeys(CLASSES, 0.0)
    for e in comp_ev:
        cls[klass(e["name"])] += e["dur"]
    tot = sum(cls.values()) or 1
    u = union([[e["ts"], e["ts"] + e["dur"]] for e in comp_ev])
    exp_t = {}
    for e in comm_ev:
        t = e["name"].split()[0]
        exp_t[t] = exp_t.get(t, 0.0) + e["dur"] - covered(e["ts"], e["ts"] + e["dur"], u)
    etot = sum(exp_t.values()) or 1
    # exposed time per type: overlapping comm events of different types can double-count, so
    # the types are shares of the small run's sum, applied to the full step's exposed total
    print("| %s | %.2f | %.0f | %.2f | %.2f | %.2f | %s | %s |" % (
        name, step, tok / gpus, comp, expo, idle,
        " | ".join("%.1f%%" % (100 * cls[c] / tot) for c in CLASSES),
        ", ".join("%s %.2f s" % (t, expo * v / etot) for t, v in sorted(exp_t.items(), key=lambda x: -x[1]) if v / etot > 0.02)))
    print("    " + " ".join(cmd[1:]), file=sys.stderr)
