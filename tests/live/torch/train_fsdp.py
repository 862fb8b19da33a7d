"""train_fsdp.py — GPT-2-small-like training with torch 1.13's FullyShardedDataParallel (full
sharding, ZeRO-3 style: one FSDP unit per transformer block, the root unit holding the embeddings,
final norm and head), unmodified PyTorch (tests/live/torch.sh runs it under `etkit live`). Prints
its own step time and peak memory."""
import functools
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt  # noqa: E402

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
torch.manual_seed(0)
model = gpt.GPT().cuda().to(torch.bfloat16)
policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={gpt.Block})
model = FSDP(model, auto_wrap_policy=policy, device_id=torch.cuda.current_device())
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
gpt.train(model, opt, rank)
dist.destroy_process_group()
