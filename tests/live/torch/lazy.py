"""lazy.py — a model built on the CPU, as scripts do before .cuda(): under etkit live the large
parameters' initialisation is deferred (live/torch/etkit_torch/_lazy.py), and must give the values
of a plain run to the bit. torch.sh runs this with plain python3 and under `etkit live` and
compares the lines starting with "val"; "rss" is the growth of resident memory while building
(plain: the parameters' bytes; live: a few MiB)."""
import io

import torch
import torch.nn as nn


def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))


torch.manual_seed(0)
r0 = rss_kib()
emb = nn.Embedding(50304, 768)                 # normal_: 154.5 MB FP32 (not a multiple of 2^20 elements)
lin = nn.Linear(768, 3072)                     # uniform_ (kaiming): 9.4 MB; bias 12 KB: runs
ln = nn.LayerNorm(1 << 20)                     # fill_ (ones) and zero_: 4 MiB each
odd = nn.Linear(1000, 333).to(torch.float64)   # 2.66 MB; .to(float64) on the CPU reads it: replayed
w = torch.empty(1 << 19, dtype=torch.bfloat16, requires_grad=True)
with torch.no_grad():
    w.normal_(0.5, 2.0, generator=torch.Generator().manual_seed(7))  # its own generator
big = nn.Linear(4096, 4096)                    # 64 MiB, moved to the GPU below: never filled
print(f"rss_growth_kib {rss_kib() - r0}")
after = torch.rand(3)                          # the default generator after every fill
gpu = big.cuda() if torch.cuda.is_available() else big
del big
print(f"rss_after_cuda_kib {rss_kib() - r0}")
print("val after", after.tolist())
print("val emb", emb.weight.double().sum().item(), emb.weight[50303, -3:].tolist())
print("val lin", lin.weight.double().sum().item(), lin.weight.detach().numpy()[5, :2].tolist(), lin.bias[:2].tolist())
print("val ln", ln.weight.sum().item(), ln.bias.abs().sum().item())
print("val odd", odd.weight.sum().item(), odd.weight.dtype)
print("val w", w.float().sum().item())
buf = io.BytesIO()
torch.save(nn.Linear(1024, 512).state_dict(), buf)  # torch.save reads the storage directly
buf.seek(0)
print("val saved", torch.load(buf)["weight"].double().sum().item())
