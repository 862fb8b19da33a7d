#!/usr/bin/env python3
# bench/fidelity_fit.py — how the compute-model efficiency defaults (gemm_eff, mem_eff) were
# fitted to spec/calibration.md (bench/RESULTS.md, "## Fidelity"). Inputs: the outputs of
# bench/fidelity.sh at the defaults being refined (base), with --compute-param gemm_eff=G2 and
# with --compute-param mem_eff=M2. The predicted iteration time of each row is modelled as linear
# in the GEMM time scale (1/gemm_eff) and the memory-bound time scale (1/mem_eff), which holds
# while the critical path does not change; the grid search minimises the worst |error|, then the
# mean. Only these two efficiencies are fitted; everything else stays at its documented value.
# usage: python3 bench/fidelity_fit.py base.txt G0 G2 g.txt M0 M2 m.txt
import sys
def rows(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) > 4 and f[1] in ("full", "sp+sel"):
            out.append((f[0] + " " + f[1], float(f[2]), float(f[3])))
    return out
base, g0, g2, gf, m0, m2, mf = sys.argv[1:8]
g0, g2, m0, m2 = float(g0), float(g2), float(m0), float(m2)
B, G, M = rows(base), rows(gf), rows(mf)
best = None
for gi in range(500, 1001):
    ge = gi / 1000
    for mi in range(300, 1001, 5):
        me = mi / 1000
        errs = []
        for (lab, tb, meas), (_, tg, _), (_, tm, _) in zip(B, G, M):
            dg = (tg - tb) / (g0 / g2 - 1)      # time per unit of GEMM scale (1/gemm_eff * g0)
            dm = (tm - tb) / (m0 / m2 - 1)
            t = tb + dg * (g0 / ge - 1) + dm * (m0 / me - 1)
            errs.append(100 * (t - meas) / meas)
        key = (max(abs(e) for e in errs), sum(abs(e) for e in errs) / len(errs))
        if best is None or key < best[0]:
            best = (key, ge, me, errs)
(worst, mean), ge, me, errs = best
print("fitted gemm_eff %.3f, mem_eff %.3f: predicted worst |error| %.2f%%, mean %.2f%%" % (ge, me, worst, mean))
for (lab, _, _), e in zip(B, errs):
    print("  %-12s %+6.2f%%" % (lab, e))
