"""bytes.py — what etkit live charges a foreach (multi-tensor) operator and a gather/scatter: each
timed alone between two synchronizations (run with --compute roofline, where a memory-bound
kernel takes its bytes / HBM bandwidth). Lists of N = 3 tensors of 1,000,000 BF16, 2,000,000
FP32 and 3,000,000 BF16 elements (x, y; torch.sh has the closed forms); a gather of one FP32 logit
per row of a 4096 x 50,000 tensor (index int64 4096 x 1), and its scatter_add_ back; 64 of its rows
set to 0 (x[rows] = 0.0: index_put_) and index_put_ with accumulate=True."""
import time

import torch


def timed(f):
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    r = f()
    torch.cuda.synchronize()
    return time.perf_counter_ns() - t0, r


dt = (torch.bfloat16, torch.float32, torch.bfloat16)
x = [torch.empty(n, dtype=d, device="cuda") for n, d in zip((1000000, 2000000, 3000000), dt)]
y = [torch.empty_like(t) for t in x]
print(f"foreach_add_ns {timed(lambda: torch._foreach_add_(x, y))[0]}")
print(f"foreach_mul_ns {timed(lambda: torch._foreach_mul_(x, 0.5))[0]}")
print(f"foreach_addcmul_ns {timed(lambda: torch._foreach_addcmul_(x, y, y, 0.1))[0]}")
ns, s = timed(lambda: torch._foreach_sqrt(x))
print(f"foreach_sqrt_ns {ns} out {[tuple(t.shape) for t in s]} {[str(t.dtype) for t in s]}")
logits = torch.empty(4096, 50000, device="cuda")
idx = torch.zeros(4096, 1, dtype=torch.int64, device="cuda")
ns, g = timed(lambda: logits.gather(-1, idx))
print(f"gather_ns {ns} out {tuple(g.shape)}")
print(f"scatter_add_ns {timed(lambda: logits.scatter_add_(-1, idx, g))[0]}")
rows = torch.zeros(64, dtype=torch.int64, device="cuda")
ns, _ = timed(lambda: logits.__setitem__(rows, 0.0))
print(f"index_put_ns {ns}")
v = torch.empty(64, 50000, device="cuda")
print(f"index_put_acc_ns {timed(lambda: logits.index_put_((rows,), v, accumulate=True))[0]}")
