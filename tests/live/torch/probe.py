"""probe.py — torch.cuda under etkit live: the modelled GPU, a 4096^3 BF16 GEMM timed between two
events (virtual time), nn.Dropout as one fused kernel (ATen's CUDA native_dropout: output and 1-byte
mask), .item() placeholders (one warning per call site), and with PROBE_NONZERO=1
an operator that is not modelled (aten::nonzero: its output shape depends on the values)."""
import os
import time

import torch

p = torch.cuda.get_device_properties(0)
print(f"available {torch.cuda.is_available()} count {torch.cuda.device_count()} name {p.name} "
      f"cc {p.major}.{p.minor} hbm_bytes {p.total_memory}", flush=True)
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
print(f"device {x.device} is_cuda {x.is_cuda}", flush=True)
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda.synchronize()
t0 = time.perf_counter_ns()
a.record()
y = x @ x
b.record()
torch.cuda.synchronize()
t1 = time.perf_counter_ns()
print(f"gemm_ns {round(a.elapsed_time(b) * 1e6)} perf_counter_ns {t1 - t0}", flush=True)
z = y.detach().requires_grad_()
torch.cuda.synchronize()
t0 = time.perf_counter_ns()
d = torch.nn.Dropout(0.1)(z)
torch.cuda.synchronize()
t1 = time.perf_counter_ns()
d.backward(torch.ones_like(d))
print(f"dropout_ns {t1 - t0} grad {tuple(z.grad.shape)} {z.grad.dtype}", flush=True)
for i in range(3):
    v = y.sum().item()
print(f"item {v}", flush=True)
if os.environ.get("PROBE_NONZERO"):
    n = torch.nonzero(y)
    print(f"nonzero {tuple(n.shape)}", flush=True)
