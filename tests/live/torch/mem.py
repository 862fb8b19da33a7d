"""mem.py — L bias-free Linear(h, h) layers in FP32 trained with Adam on a batch of B rows
(tests/live/torch.sh checks the peak against the closed form; a batch too large for the GPU
raises PyTorch's out-of-memory error). Sizes: MEM_L, MEM_H, MEM_B."""
import os

import torch

L, H, B = (int(os.environ.get(k, d)) for k, d in (("MEM_L", "4"), ("MEM_H", "1024"), ("MEM_B", "8192")))
model = torch.nn.Sequential(*[torch.nn.Linear(H, H, bias=False) for _ in range(L)]).cuda()
opt = torch.optim.Adam(model.parameters())
x = torch.randn(B, H, device="cuda")
for step in range(3):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
print(f"max_memory_allocated_bytes {torch.cuda.max_memory_allocated()} "
      f"memory_reserved_bytes {torch.cuda.memory_reserved()}", flush=True)
