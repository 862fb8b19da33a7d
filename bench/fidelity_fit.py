#!/usr/bin/env python3
# bench/fidelity_fit.py — how the compute-model efficiency defaults were fitted to
# spec/calibration.md (bench/RESULTS.md, "## Fidelity"). Inputs: the output of bench/fidelity.sh
# at the defaults being refined (base), and for each fitted parameter one more output with
# --compute-param NAME=X2. The predicted iteration time of each row is modelled as linear in
# each parameter's time scale (X0/X: every kernel the parameter governs takes X0/X as long), which
# holds while the critical path does not change; a grid search over the fitted parameters
# minimises the worst |error|, then the mean. Parameters not given stay at their documented value.
# usage: python3 bench/fidelity_fit.py base.txt NAME X0 X2 out.txt LO HI STEP [NAME X0 X2 ...]
# e.g.   python3 bench/fidelity_fit.py b.txt gemm_eff 0.76 0.4 g.txt 0.5 1 0.005 \
#                score_mem_eff 0.275 0.15 s.txt 0.1 0.6 0.0025
import itertools
import sys


def rows(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) > 4 and f[1] in ("full", "sp+sel"):
            out.append((f[0] + " " + f[1], float(f[2]), float(f[3])))
    return out


base, args = rows(sys.argv[1]), sys.argv[2:]
if not base or len(args) % 7:
    sys.exit("usage: fidelity_fit.py base.txt NAME X0 X2 out.txt LO HI STEP [...]")
params = []  # (name, x0, per-row seconds per unit of time scale, grid)
while args:
    name, x0, x2, path, lo, hi, step = args[:7]
    args = args[7:]
    x0, x2, lo, hi, step = float(x0), float(x2), float(lo), float(hi), float(step)
    r = rows(path)
    if [x[0] for x in r] != [x[0] for x in base]:
        sys.exit("%s: not the same rows as the base run" % path)
    d = [(t - b[1]) / (x0 / x2 - 1) for (_, t, _), b in zip(r, base)]
    grid = [round(lo + i * step, 6) for i in range(int(round((hi - lo) / step)) + 1)]
    params.append((name, x0, d, grid))
best = None
for xs in itertools.product(*[p[3] for p in params]):
    errs = []
    for i, (lab, tb, meas) in enumerate(base):
        t = tb + sum(p[2][i] * (p[1] / x - 1) for p, x in zip(params, xs))
        errs.append(100 * (t - meas) / meas)
    key = (max(abs(e) for e in errs), sum(abs(e) for e in errs) / len(errs))
    if best is None or key < best[0]:
        best = (key, xs, errs)
(worst, mean), xs, errs = best
print("fitted %s: predicted worst |error| %.2f%%, mean %.2f%%" % (
    ", ".join("%s %g" % (p[0], x) for p, x in zip(params, xs)), worst, mean))
for (lab, _, _), e in zip(base, errs):
    print("  %-12s %+6.2f%%" % (lab, e))
