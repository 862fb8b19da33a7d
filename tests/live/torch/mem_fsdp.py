"""mem_fsdp.py — mem.py's L bias-free Linear(h, h) layers (FP32, Adam, B rows) under torch 1.13's
FullyShardedDataParallel, one unit per layer (tests/live/torch.sh checks the memory against the
closed form). Prints memory_allocated after wrapping and after the optimizer's first step, and
the peak. Sizes: MEM_L, MEM_H, MEM_B."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

L, H, B = (int(os.environ.get(k, d)) for k, d in (("MEM_L", "4"), ("MEM_H", "1024"), ("MEM_B", "8192")))
dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.Sequential(*[torch.nn.Linear(H, H, bias=False) for _ in range(L)]).cuda()


def policy(module, recurse, unwrapped_params):
    return recurse or isinstance(module, torch.nn.Linear)


model = FSDP(model, auto_wrap_policy=policy, device_id=torch.cuda.current_device())
wrapped = torch.cuda.memory_allocated()
opt = torch.optim.Adam(model.parameters())
x = torch.randn(B, H, device="cuda")
for step in range(3):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    if step == 0:
        stepped = torch.cuda.memory_allocated()
    opt.zero_grad(set_to_none=True)
if dist.get_rank() == 0:
    print(f"wrapped_bytes {wrapped} after_step_bytes {stepped} max_memory_allocated_bytes "
          f"{torch.cuda.max_memory_allocated()}", flush=True)
