#!/usr/bin/env bash
# bench/fidelity.sh — measured fidelity (make bench): `etkit run` for every row of
# ../shared/spec/calibration.md (Korthikanti et al. 2022 on Selene, DGX A100: four GPT models,
# full recompute and sequence parallelism + selective recompute) and the generator's memory
# estimate, against the published measurements. Prints predicted vs measured iteration time,
# MFU and memory per row with the errors, and the mean and maximum |error|. Every plan passes
# --attention unfused to both `etkit run` and `etkit gen`: those runs executed Megatron-LM 2022's
# unfused attention (the generator's default is flash).
# usage: bash bench/fidelity.sh <build-dir> <shared-dir> [extra etkit run flags...]
# Extra flags (e.g. --compute-param gemm_eff=0.8) are how the defaults were fitted (RESULTS.md).
# Exit status 1 if a run fails, the iteration-time errors exceed the issue's goals
# (FID_MEAN_MAX / FID_WORST_MAX percent, default 3 / 6) or a memory error exceeds FID_MEM_MAX
# percent (default 5).
set -u
BUILD=$1
shift 2 || true
ETKIT="$BUILD/etkit"
exec python3 - "$ETKIT" "${FID_MEAN_MAX:-3}" "${FID_WORST_MAX:-6}" "${FID_MEM_MAX:-5}" "$@" <<'PY'
import json, subprocess, sys, time
etkit, mean_max, worst_max, mem_max = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
extra = sys.argv[5:]
GiB = 2.0 ** 30
# model preset, PP, micro-batch, global batch, vpp, nodes; measured (calibration.md):
# time full, time SP+sel, MFU SP+sel, params+optimizer GiB, activations no-recompute GiB,
# activations SP+sel GiB, full-recompute activations (% of no-recompute)
rows = [
    ("22B", "megatron-22b", 1, 4, 4, 1, 1, 1.42, 1.10, 41.5, 45.56, 59.25, 9.56, 7.64),
    ("175B", "gpt3-175b", 8, 1, 64, 3, 8, 18.13, 13.75, 51.4, 45.56, 66.84, 12.35, 8.71),
    ("530B", "megatron-530b", 35, 1, 280, 3, 35, 49.05, 37.83, 56.0, 31.64, 114.02, 23.08, 9.42),
    ("1T", "megatron-1t", 64, 1, 512, 1, 64, 94.42, 71.49, 56.3, 32.96, 131.25, 26.56, 9.42),
]
modes = [("full", ["--recompute", "full"]), ("sp+sel", ["--sp", "--recompute", "selective"])]
print("fidelity: etkit run vs Korthikanti et al. 2022 (Selene, DGX A100 80GB), extra flags: %s"
      % (" ".join(extra) or "(none)"))
print("%-5s %-7s %9s %9s %7s %6s %6s %9s %9s %7s %9s %9s %7s %8s %6s" % (
    "model", "mode", "pred_s", "meas_s", "err%", "MFU%", "meas%", "w+o_GiB", "meas_GiB", "err%",
    "act_GiB", "meas_GiB", "err%", "+emb_GiB", "wall_s"))
terr, merr, rc = [], [], 0
for (lab, model, pp, mb, gb, vpp, nodes, t_full, t_sel, mfu_sel, m_wo, m_act0, m_act_sel,
     full_pct) in rows:
    for mode, mflags in modes:
        plan = ["--model", model, "--tp", "8", "--pp", str(pp), "--dp", "1", "--micro-batch",
                str(mb), "--global-batch", str(gb), "--vpp", str(vpp), "--seq", "2048",
                "--precision", "fp16", "--attention", "unfused"] + mflags
        t0 = time.time()
        # two communication streams: Megatron runs pipeline p2p and collectives on separate
        # NCCL streams (and the tied-embedding all-reduce must not block the last send)
        r = subprocess.run([etkit, "run"] + plan + ["--cluster", "dgx-a100", "--nodes",
                           str(nodes), "--comm-streams", "2", "--json", "--quiet"] + extra,
                           capture_output=True, text=True)
        wall = time.time() - t0
        g = subprocess.run([etkit, "gen"] + plan + ["--gpu", "a100", "--summary", "--json"],
                           capture_output=True, text=True)
        if r.returncode or g.returncode:
            print("%-5s %-7s FAILED: %s%s" % (lab, mode, r.stderr.strip()[:300], g.stderr.strip()[:300]))
            rc = 1
            continue
        d = json.loads(r.stdout)
        stages = json.loads(g.stdout)["stages"]
        st = stages[0]["memory_bytes"]
        # the paper's "parameters + optimizer state" is the transformer layers' state only
        # (e.g. 530B: 3 layers x 12 h^2 / 8 x 18 B = 31.64 GiB): compare a stage holding neither
        # the embedding nor the head where there is one (PP > 2); activations: the first stage
        mid = next((x for x in stages if not x["embedding"] and not x["head"]), stages[0])
        stw = mid["memory_bytes"]
        pred = d["step_ns"] / 1e9
        meas = t_full if mode == "full" else t_sel
        e = 100.0 * (pred - meas) / meas
        terr.append(abs(e))
        wo = (stw["weights"] + stw["gradients"] + stw["optimizer"]) / GiB
        ewo = 100.0 * (wo - m_wo) / m_wo
        # the paper's activation figures are its per-layer formula (Korthikanti et al. eq. 1-6)
        # times the layers held in flight: transformer layers only. The embedding's saved
        # tensors (its dropout mask, s*b*h bytes per micro-batch, /t with SP) are outside that
        # formula, like the output layer; shown separately (+emb_GiB), not compared
        act = st["activations_layers"] / GiB
        emb = (st["activations"] - st["activations_layers"]) / GiB
        mact = m_act_sel if mode == "sp+sel" else m_act0 * full_pct / 100.0
        eact = 100.0 * (act - mact) / mact
        merr += [abs(ewo), abs(eact)]
        mfu = 100.0 * d["mfu"]
        print("%-5s %-7s %9.3f %9.2f %+7.2f %6.1f %6s %9.2f %9.2f %+7.2f %9.2f %9.2f %+7.2f %8.2f %6.1f" % (
            lab, mode, pred, meas, e, mfu, ("%.1f" % mfu_sel) if mode == "sp+sel" else "-", wo,
            m_wo, ewo, act, mact, eact, emb, wall))
        sys.stdout.flush()
if terr:
    mean, worst = sum(terr) / len(terr), max(terr)
    print("iteration time |error|: mean %.2f%%, max %.2f%% over %d rows (goal: mean <= 3%%, max <= 6%%)"
          % (mean, worst, len(terr)))
    print("memory |error| (weights+gradients+optimizer of a layers-only stage, transformer-layer activations of the first stage): mean %.2f%%, max %.2f%%"
          " (goal: within 5%%)" % (sum(merr) / len(merr), max(merr)))
    if mean > mean_max or worst > worst_max or max(merr) > mem_max:
        rc = 1
sys.exit(rc)
PY
