#!/usr/bin/env python3
"""torch_ops.py — where one training step's GPU time goes, by kind of operator, in a live-mode
PyTorch recording (`etkit live --record P -- python3 train.py`, then `etkit sim P --timeline
LIVE.json`) against `etkit run`'s generated workload (`etkit run ... --timeline RUN.json`) for
the same model, plan and cluster: rank 0's compute stream, summed per kind, and the
collectives' time on the communication streams (they overlap compute: not additive).

usage: torch_ops.py LIVE.json END_NS STEP_NS RUN.json
  END_NS, STEP_NS: the script's clock at the end of its last step and that step's time (train.py
  prints both: end_ns, last_step_ns): the live window is [END_NS - STEP_NS, END_NS].
The run's timeline holds one step. Standard library only."""
import json
import sys

LIVE_KINDS = [
    ("linear GEMMs (fwd, dgrad, wgrad)", ("aten::mm", "aten::addmm")),
    ("attention BMMs", ("aten::bmm", "aten::baddbmm")),
    ("softmax (+bwd)", ("aten::_softmax", "aten::_softmax_backward_data")),
    ("layer norm (+bwd)", ("aten::native_layer_norm", "aten::native_layer_norm_backward")),
    ("GELU (+bwd)", ("aten::gelu", "aten::gelu_backward")),
    ("embedding (+bwd)", ("aten::embedding", "aten::embedding_dense_backward")),
    # train_tp.py's vocabulary-parallel cross-entropy: its max, gather, exp, log and scatter_add_
    # (its subtraction, sum, division and FP32 cast fall under other elementwise and casts)
    ("loss: log_softmax + nll (+bwd)", ("aten::_log_softmax", "aten::_log_softmax_backward_data",
                                        "aten::nll_loss_forward", "aten::nll_loss_backward",
                                        "aten::max", "aten::gather", "aten::exp", "aten::log",
                                        "aten::scatter_add_")),
    ("optimizer (AdamW, in-place)", ("aten::addcmul_", "aten::addcdiv_", "aten::sqrt", "aten::lerp_",
                                     "aten::mul_", "aten::div_", "aten::add_", "aten::div",
                                     "aten::_foreach_mul_", "aten::_foreach_add_", "aten::_foreach_add",
                                     "aten::_foreach_addcmul_", "aten::_foreach_addcdiv_",
                                     "aten::_foreach_sqrt", "aten::_foreach_div_")),
    ("copies, casts, fills, pads", ("aten::clone", "aten::_to_copy", "aten::copy_", "aten::cat", "memcpy",
                                    "aten::constant_pad_nd", "aten::zeros", "aten::zeros_like",
                                    "aten::ones_like", "aten::fill_", "aten::zero_")),
    ("dropout, bias-dropout-add", ("aten::native_dropout", "aten::native_dropout_backward")),
    ("other elementwise, reductions", None),  # the rest
]
RUN_KINDS = {
    "linear GEMMs (fwd, dgrad, wgrad)": ("q", "k", "v", "qkv", "proj", "fc1", "fc2", "logits"),
    "attention BMMs": ("scores", "av", "dgrad_pd", "dgrad_v", "dgrad_q", "dgrad_k"),
    "softmax (+bwd)": ("softmax",),
    "layer norm (+bwd)": ("ln1", "ln2", "ln_f"),
    "GELU (+bwd)": ("gelu",),
    "embedding (+bwd)": ("tok_embed", "pos_add"),
    "loss: log_softmax + nll (+bwd)": ("loss",),
    "optimizer (AdamW, in-place)": ("adam",),
    "dropout, bias-dropout-add": ("attn_drop", "emb_drop", "attn_bda", "ffn_bda", "drop"),
}


def events(path):
    d = json.load(open(path))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return [e for e in ev if e.get("ph") == "X" and e.get("pid") == 0], names


def live_kind(name):
    op = name.split(" ")[0]
    for kind, ops in LIVE_KINDS:
        if ops is None or op in ops:
            return kind
    return LIVE_KINDS[-1][0]


def run_kind(name):
    parts = name.split(".")
    base = parts[-2] if parts[-1] in ("bwd", "dgrad", "wgrad") and len(parts) > 1 else parts[-1]
    for kind, ops in RUN_KINDS.items():
        if base in ops:
            return kind
    return LIVE_KINDS[-1][0]


def summary(evs, names, kind_of, t0_us=None, t1_us=None):
    comp, comm = {}, {}
    for e in evs:
        if t0_us is not None and not (e["ts"] >= t0_us - 1e-3 and e["ts"] + e["dur"] <= t1_us + 1e-3):
            continue
        stream = names.get((e["pid"], e["tid"]), "")
        if stream.startswith("GPU compute"):
            k = kind_of(e["name"])
            c = comp.setdefault(k, [0, 0.0])
            c[0] += 1
            c[1] += e["dur"]
        elif stream.startswith("GPU comm"):
            k = e["name"].split(" ")[0].replace("nccl", "").upper()
            c = comm.setdefault(k, [0, 0.0])
            c[0] += 1
            c[1] += e["dur"]
    return comp, comm


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    live, end_ns, step_ns, run = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    lev, lnames = events(live)
    rev, rnames = events(run)
    lc, lm = summary(lev, lnames, live_kind, (end_ns - step_ns) / 1e3, end_ns / 1e3)
    rc, rm = summary(rev, rnames, run_kind)
    print(f"{'rank 0, one step, compute stream':38} {'live n':>7} {'live us':>10} {'run n':>7} {'run us':>10} "
          f"{'live-run us':>12}")
    tl = tr = 0.0
    for kind, _ in LIVE_KINDS:
        a, b = lc.get(kind, [0, 0.0]), rc.get(kind, [0, 0.0])
        tl, tr = tl + a[1], tr + b[1]
        print(f"{kind:38} {a[0]:7} {a[1]:10.1f} {b[0]:7} {b[1]:10.1f} {a[1] - b[1]:12.1f}")
    print(f"{'compute total':38} {'':7} {tl:10.1f} {'':7} {tr:10.1f} {tl - tr:12.1f}")
    for k in sorted(set(lm) | set(rm)):
        a, b = lm.get(k, [0, 0.0]), rm.get(k, [0, 0.0])
        print(f"{'comm ' + k + ' (overlaps)':38} {a[0]:7} {a[1]:10.1f} {b[0]:7} {b[1]:10.1f} {a[1] - b[1]:12.1f}")


if __name__ == "__main__":
    main()
