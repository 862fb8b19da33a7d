"""train_ddp.py — GPT-2-small-like training with DistributedDataParallel, unmodified PyTorch
(tests/live/torch.sh runs it under `etkit live`). Prints its own step time and peak memory."""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt  # noqa: E402

steps = int(os.environ.get("STEPS", "3"))
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
torch.manual_seed(0)
model = gpt.GPT().cuda().to(torch.bfloat16)
model = DDP(model, device_ids=[torch.cuda.current_device()])
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
idx = torch.randint(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ), device="cuda")
tgt = torch.randint(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ), device="cuda")
times = []
for step in range(steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = model(idx, tgt)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
    if rank == 0:
        print(f"step {step} loss {loss.item():.3f} time_ns {round(times[-1] * 1e9)}", flush=True)
if rank == 0:
    print(f"last_step_ns {round(times[-1] * 1e9)} end_ns {round(time.perf_counter() * 1e9)} "
          f"max_memory_allocated_bytes {torch.cuda.max_memory_allocated()}", flush=True)
dist.destroy_process_group()
