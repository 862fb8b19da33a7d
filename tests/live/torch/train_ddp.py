"""train_ddp.py — GPT-2-small-like training with DistributedDataParallel, unmodified PyTorch
(tests/live/torch.sh runs it under `etkit live`). Prints its own step time and peak memory."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt  # noqa: E402

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
torch.manual_seed(0)
model = gpt.GPT().cuda().to(torch.bfloat16)
model = DDP(model, device_ids=[torch.cuda.current_device()])
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
gpt.train(model, opt, rank)
dist.destroy_process_group()
