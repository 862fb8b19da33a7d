"""skip.py — rank 1 skips an all-reduce the others make (a bug in a data-dependent branch): the
run must end with etkit live's deadlock report, never hang."""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
x = torch.ones(1 << 20, device="cuda")
if dist.get_rank() != 1:
    dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {dist.get_rank()} done", flush=True)
