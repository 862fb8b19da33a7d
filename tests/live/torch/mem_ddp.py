"""mem_ddp.py — DDP's gradient buckets charged to the modelled HBM (tests/live/torch.sh (f)):
4 bias-free Linear(1024, 1024) layers in BF16 (P = 4 x 1024^2 parameters), one bucket under
the default 25 MiB cap, input 64 x 1024. Prints memory_allocated after wrapping and after each
of 3 backward passes (the second forward rebuilds the buckets, in the order gradients arrived).
BUCKET_VIEW=1: gradient_as_bucket_view=True (the gradients are views of the bucket)."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
torch.cuda.set_device(0)
m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024, bias=False) for _ in range(4)]).cuda().to(torch.bfloat16)
print(f"params_bytes {torch.cuda.memory_allocated()}", flush=True)
d = DDP(m, device_ids=[0], gradient_as_bucket_view=os.environ.get("BUCKET_VIEW") == "1")
print(f"wrapped_bytes {torch.cuda.memory_allocated()}", flush=True)
x = torch.randn(64, 1024).cuda().to(torch.bfloat16)
for i in range(3):
    d(x).sum().backward()
    print(f"backward {i} bytes {torch.cuda.memory_allocated()}", flush=True)
dist.destroy_process_group()
