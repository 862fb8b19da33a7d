#!/usr/bin/env python3
"""Record the small PyTorch traces the converter tests use (tests/pytorch/*.json).

Usage: python3 tests/pytorch/record.py OUTDIR

For each model (a 2-layer MLP and a 1-layer transformer encoder, both CPU, float32) it runs one
warm-up training step, then records one training step (zero_grad, forward, loss, backward,
SGD step) twice at the same time:
  <model>_host_et.json   host execution trace written by torch.profiler.ExecutionGraphObserver
                         (PyTorch 1.13: schema 1.0.1; newer PyTorch writes ExecutionTraceObserver
                         schemas 1.0.2+ with the same calls)
  <model>_profiler.json  the profiler's chrome trace (PyTorch 1.13 without Kineto: a bare list of
                         {name, ph, ts, dur, tid, pid, args} events; with Kineto: traceEvents)
The converter links the two (etkit convert pytorch --host ... --device ...). Recorded with
Debian's python3-torch 1.13.1 (CPU only); the committed files are what the tests read, so CI
needs no torch.
"""
import os
import sys

import torch
from torch.profiler import ExecutionGraphObserver, ProfilerActivity, profile


def mlp():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    return m, x, y


def transformer():
    torch.manual_seed(0)
    m = torch.nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, dropout=0.0,
                                         batch_first=True)
    x, y = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
    return m, x, y


def record(name, build, outdir):
    torch.set_num_threads(1)
    m, x, y = build()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()

    step()  # warm-up: allocator and dispatcher caches, as in a real run
    et_path = os.path.join(outdir, name + "_host_et.json")
    prof_path = os.path.join(outdir, name + "_profiler.json")
    eg = ExecutionGraphObserver()
    eg.register_callback(et_path)
    with profile(activities=[ProfilerActivity.CPU]) as p:
        eg.start()
        step()
        eg.stop()
    eg.unregister_callback()
    p.export_chrome_trace(prof_path)
    print(f"{name}: {et_path} ({os.path.getsize(et_path)} bytes), "
          f"{prof_path} ({os.path.getsize(prof_path)} bytes), torch {torch.__version__}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    record("mlp", mlp, outdir)
    record("transformer", transformer, outdir)


if __name__ == "__main__":
    main()
