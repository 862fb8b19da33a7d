#!/usr/bin/env python3
"""bench/timeline_decomp.py — per rank class of an `etkit run --timeline` file: compute by kernel
class (s), exposed communication by type (s: time no compute kernel runs on the rank while a
collective or p2p of that type is in flight, split evenly among the types in flight), idle the rest.
Kernel classes by node name (expert GEMMs gate/up/down, shared expert, MoE glue, dense GEMMs,
flash attention, head, embedding, optimizer; elementwise the rest, FP8 casts included).
usage: timeline_decomp.py TIMELINE.json [-v: elementwise time by op, summed over the classes]"""
import json, re, sys, collections
CLASSES = [
 ('expert_gemm', r'\.(gate|up|down)(\.dgrad|\.wgrad)?$'),
 ('shared_exp',  r'shared'),
 ('moe_glue',    r'\.(router|topk|dispatch|combine|permute|unpermute)'),
 ('elementwise', r'_cat(\.bwd)?$|fp8_cast'),
 ('attn_gemm',   r'\.(q|k|v|qkv|proj|k_b|v_b|q_nope|q_rope|kv_down|q_down|q_up|kv_up|q_\w+|kv_\w+|wq\w*|wkv\w*|o|\w*_up|\w*_down|q_a|q_b|kv_a|kv_b)(\.dgrad|\.wgrad)?$'),
 ('flash_attn',  r'flash_attn'),
 ('head',        r'head\.'),
 ('embed',       r'embed\.'),
 ('optimizer',   r'optimizer'),
 ('elementwise', r'.'),
]
def cls(n):
    for c, p in CLASSES:
        if re.search(p, n): return c
ms = lambda x: x / 1e6  # us -> s
d = json.load(open(sys.argv[1])); ev = d['traceEvents'] if isinstance(d, dict) else d
names = {}; threads = {}
for e in ev:
    if e.get('ph') == 'M' and e['name'] == 'process_name': names[e['pid']] = e['args']['name']
    if e.get('ph') == 'M' and e['name'] == 'thread_name': threads[(e['pid'], e['tid'])] = e['args']['name']
comp = collections.defaultdict(collections.Counter); ivs = collections.defaultdict(list); end = 0
other = collections.Counter()
for e in ev:
    if e.get('ph') != 'X': continue
    t = threads.get((e['pid'], e.get('tid')), ''); end = max(end, e['ts'] + e['dur'])
    if 'compute' in t:
        c = cls(e['name']); comp[e['pid']][c] += e['dur']
        if c == 'elementwise': other[re.sub(r'mb\d+\.|L\d+\.|c\d+\.', '', e['name'])] += e['dur']
        ivs[e['pid']].append((e['ts'], e['ts'] + e['dur'], None))
    elif 'CPU' not in t:
        ivs[e['pid']].append((e['ts'], e['ts'] + e['dur'], e['name'].split()[0]))
for pid in sorted(comp):
    pts = sorted({p for a, b, _ in ivs[pid] for p in (a, b)} | {0, end})
    # sweep: count compute and per-type comm in flight per elementary segment
    evs = collections.defaultdict(list)
    for a, b, k in ivs[pid]: evs[a].append((k, 1)); evs[b].append((k, -1))
    ncomp = 0; act = collections.Counter(); exp = collections.Counter(); idle = 0; prev = 0
    for p in pts:
        seg = p - prev
        if seg > 0 and ncomp == 0:
            ks = [k for k, v in act.items() if v > 0]
            if ks:
                for k in ks: exp[k] += seg / len(ks)
            else: idle += seg
        for k, dv in evs.get(p, []):
            if k is None: ncomp += dv
            else: act[k] += dv
        prev = p
    tot = sum(comp[pid].values())
    print(f"{names.get(pid, pid).replace(' (class representative)','')}: step {ms(end):.2f} s; compute {ms(tot):.2f}: " +
          ", ".join(f"{k} {ms(v):.2f}" for k, v in comp[pid].most_common()) +
          f" | exposed comm {ms(sum(exp.values())):.2f}: " + ", ".join(f"{k} {ms(v):.2f}" for k, v in exp.most_common()) +
          f" | idle {ms(idle):.2f}")
if '-v' in sys.argv: print('elementwise by op (s, all ranks):', ', '.join(f'{k} {ms(v):.2f}' for k, v in other.most_common(30)))
