#!/usr/bin/env python3
"""bench/calibration_figures.py — the figures of bench/RESULTS.md ("Calibration") on the rows of
calibration-modern.json: every row predicted with the presets as built (the `fitted` column: the
H100 values fitted by bench/refit-presets.sh, H200 transferred from them, B200 its own measured
figures (s32-b200), A100 as fitted to
the Korthikanti rows), and `held-out`: each H100 set predicted with the parameters fitted without
it (leave-one-set-out, LOSO_FILE: lines "SET NAME=VALUE ..." from `etkit calibrate --loso`);
rows of other GPUs are never fitted to, so their held-out figure is their fitted one.
Prints the per-row table and the mean / worst |error| per set, per GPU and overall, both columns;
--json prints the summaries as one JSON object (tests/cli_calibration_figures.sh pins them).
The full report and the held-out sets run as concurrent processes of N threads each (-j, default 1).
--plan-extra FILE is passed to every `etkit calibrate` (plan options of the runs' recipes that the
rows do not carry: bench/calibration/modern-plan-extra.json).
usage: calibration_figures.py ETKIT ROWS.json LOSO_FILE [--json] [--json-out FILE] [-j N]
                              [--plan-extra FILE]"""
import json
import os
import subprocess
import sys


def calibrate_all(etkit, rows, arglists, jobs):
    """one `etkit calibrate --json` per argument list, all at once (the predictions do not depend
    on it); jobs threads each"""
    procs = [subprocess.Popen([etkit, "calibrate", rows, "--json", "-j", str(jobs)] + args,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for args in arglists]
    out = []
    for args, p in zip(arglists, procs):
        so, se = p.communicate()
        if p.returncode not in (0, 2) or not so:
            sys.exit("calibration_figures: etkit calibrate %s failed: %s" % (" ".join(args), se))
        out.append(json.loads(so))
    return out


def summarize(rows, col):
    groups = {}
    for r in rows:
        e = r.get(col)
        if e is None:
            continue
        for kind, key in (("set", r["set"]), ("gpu", r["gpu"]), ("all", "all")):
            g = groups.setdefault((kind, key), {"rows": 0, "sum": 0.0, "worst": 0.0, "worst_row": ""})
            g["rows"] += 1
            g["sum"] += abs(e)
            if abs(e) > g["worst"] or not g["worst_row"]:
                g["worst"], g["worst_row"] = abs(e), r["name"]
    return {"%s:%s" % k: {"rows": g["rows"], "mean_abs_err_pct": round(g["sum"] / g["rows"], 2),
                          "worst_abs_err_pct": round(g["worst"], 2), "worst_row": g["worst_row"]}
            for k, g in groups.items()}


def main():
    argv = sys.argv[1:]
    as_json = "--json" in argv
    jobs = 1
    if "-j" in argv:
        jobs = int(argv[argv.index("-j") + 1])
        del argv[argv.index("-j"):argv.index("-j") + 2]
    json_out = None
    if "--json-out" in argv:
        json_out = argv[argv.index("--json-out") + 1]
        del argv[argv.index("--json-out"):argv.index("--json-out") + 2]
    extra = []
    if "--plan-extra" in argv:
        extra = ["--plan-extra", argv[argv.index("--plan-extra") + 1]]
        del argv[argv.index("--plan-extra"):argv.index("--plan-extra") + 2]
    argv = [a for a in argv if a != "--json"]
    etkit, rows_file, loso_file = argv[:3]
    loso = {}
    for line in open(loso_file):
        f = line.split()
        if f and not f[0].startswith("#"):
            loso[f[0]] = f[1:]
    sets = sorted(loso.items())
    arglists = [list(extra)]
    for s, params in sets:
        args = ["--gpu", "h100", "--set", s] + extra
        for p in params:
            args += ["--param", p]
        arglists.append(args)
    results = calibrate_all(etkit, rows_file, arglists, jobs)
    full = results[0]
    rows, notex = [], []
    for r in full["rows"]:
        if r["status"] != "ok":
            notex.append(r)
            continue
        e = r["predicted"]["err_pct"]
        rows.append({"name": r["name"], "set": r["set"], "gpu": r["gpu"], "measured": r["measured"],
                     "metric": r["metric"], "fitted_value": r["predicted"]["predicted"],
                     "fitted": e, "held": e if r["gpu"] != "H100" else None,
                     "oom": r["predicted"]["oom"]})
    for d in results[1:]:
        for r in d["rows"]:
            if r["status"] != "ok":
                continue
            for x in rows:
                if x["name"] == r["name"]:
                    x["held"] = r["given"]["err_pct"]
    missing = [x["name"] for x in rows if x["held"] is None]
    if missing:
        sys.exit("calibration_figures: no held-out prediction for %s (sets missing from %s)"
                 % (", ".join(missing), loso_file))
    fitted, held = summarize(rows, "fitted"), summarize(rows, "held")
    if json_out:
        with open(json_out + ".tmp", "w") as f:
            json.dump({"fitted": fitted, "held_out": held}, f, indent=1, sort_keys=True)
        os.replace(json_out + ".tmp", json_out)
    if as_json:
        json.dump({"fitted": fitted, "held_out": held}, sys.stdout, indent=1, sort_keys=True)
        print()
        return
    print("| row | set | GPU | metric | measured | predicted | fitted err | held-out err | OOM |")
    print("|---|---|---|---|---|---|---|---|---|")
    for x in rows:
        print("| %s | %s | %s | %s | %.6g | %.6g | %+.2f%% | %+.2f%% | %s |"
              % (x["name"], x["set"], x["gpu"], x["metric"], x["measured"], x["fitted_value"],
                 x["fitted"], x["held"], "OOM" if x["oom"] else ""))
    print()
    print("| group | rows | fitted mean | fitted worst | held-out mean | held-out worst | worst row (held-out) |")
    print("|---|---|---|---|---|---|---|")
    for k in sorted(fitted, key=lambda k: (k.split(":")[0] != "set", k.split(":")[0] != "gpu", k)):
        f, h = fitted[k], held[k]
        print("| %s | %d | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %s |"
              % (k, f["rows"], f["mean_abs_err_pct"], f["worst_abs_err_pct"],
                 h["mean_abs_err_pct"], h["worst_abs_err_pct"], h["worst_row"]))
    for r in notex:
        print("\nnot predicted: %s (%s, %s): %s" % (r["name"], r["set"], r["gpu"], r.get("reason", "")))


if __name__ == "__main__":
    main()
