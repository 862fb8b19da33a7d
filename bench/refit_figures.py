#!/usr/bin/env python3
"""bench/refit_figures.py — fitted and held-out figures of an experimental refit without rebuilding
the presets (bench/RESULTS.md s32-h100):
usage: refit_figures.py ETKIT REFIT_DIR PLAN_EXTRA ROWS.json (REFIT_DIR: bench/refit-presets.sh's
output directory, run with --loso; its report saved there as refit.txt)
H100 rows at the refit's h100.yaml values, H200/B200 at the transferred ones (their YAMLs),
A100 as built; held out: each H100 set at the parameters fitted without it (refit.txt)."""
import json, subprocess, sys, re, collections
E, D, X, ROWS = sys.argv[1:5]
def vals(g):
    v = {}
    for l in open(f'{D}/{g}.yaml'):
        m = re.match(r'\s+(fp8_gemm_eff|attn_bwd_eff):\s*(\S+)', l)
        if m: v[m[1]] = m[2]
    return v
def cal(args):
    p = subprocess.run([E, 'calibrate', ROWS, '--json', '-j', '2', '--plan-extra', X] + args, capture_output=True, text=True)
    return json.loads(p.stdout)
def rows(j):
    out = {}
    for r in j['rows']:
        p = r.get('given', r.get('predicted'))
        if isinstance(p, dict) and 'err_pct' in p: out[r['name']] = (r['set'], r['gpu'], p['err_pct'])
    return out
fit = {}
for g in ['h100', 'h200', 'b200']:
    ps = sum((['--param', f'{k}={v}'] for k, v in vals(g).items()), [])
    fit.update(rows(cal(['--gpu', g] + ps)))
fit.update(rows(cal(['--gpu', 'a100'])))
held = dict(fit)
for l in open(f'{D}/refit.txt'):
    f = l.split()
    if len(f) > 2 and f[0] == 'without':
        ps = sum((['--param', f'{f[i]}={f[i+1]}'] for i in range(2, len(f) - 1, 2)), [])
        held.update({k: v for k, v in rows(cal(['--gpu', 'h100', '--set', f[1]] + ps)).items()})
def summ(d, key):
    g = collections.defaultdict(list)
    for n, (s, gpu, e) in d.items(): g[key(s, gpu)].append((abs(e), n))
    return {k: (len(v), sum(a for a, _ in v) / len(v), max(v)) for k, v in sorted(g.items())}
for n in sorted(fit): print(f'{n:44s} {fit[n][0]:28s} fitted {fit[n][2]:+7.2f} held-out {held[n][2]:+7.2f}')
for title, key in [('set', lambda s, g: s), ('GPU', lambda s, g: g), ('all', lambda s, g: 'all')]:
    a, b = summ(fit, key), summ(held, key)
    for k in a: print(f'{title:4s} {k:28s} n {a[k][0]:2d}  fitted mean {a[k][1]:6.2f} worst {a[k][2][0]:6.2f}  held-out mean {b[k][1]:6.2f} worst {b[k][2][0]:6.2f} ({b[k][2][1]})')
