"""gpt_saved.py — checks gpt_mem.py's count of what gpt.py's forward saves for backward against
torch itself, without etkit: plain python3 on the CPU, real tensors, the model in BF16 at the
environment's sizes. After one forward it walks the autograd graph from the loss and sums, over
the distinct storages the nodes hold in their `_saved_*` attributes, the caching allocator's block
of each (512-byte multiples), leaving out the parameters and the 0-dim CPU scalars (the Python
scalar of `* 1/sqrt(d)`: a CPU tensor on a GPU too). F.dropout is made ATen's CUDA path,
`native_dropout` (is_fused_kernel_acceptable: a CUDA tensor, 0 < p < 1; the CPU path would build
the mask by bernoulli_ in the input's dtype). Prints saved_bytes and the number of storages;
tests/live/torch.sh compares them with `gpt_mem.py --cpu` (layer_norm's mean and rstd in the
input's dtype, as torch keeps them on the CPU)."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt  # noqa: E402

plain = F.dropout


def dropout(x, p=0.5, training=True, inplace=False):
    if training and not inplace and 0.0 < p < 1.0:
        return torch.native_dropout(x, p, True)[0]
    return plain(x, p, training, inplace)


F.dropout = dropout
torch.manual_seed(0)
model = gpt.GPT().to(torch.bfloat16)
idx = torch.randint(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ))
tgt = torch.randint(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ))
loss = model(idx, tgt)
params = {p.storage().data_ptr() for p in model.parameters()}
storages, seen, todo = {}, set(), [loss.grad_fn]
while todo:
    node = todo.pop()
    if node is None or node in seen:
        continue
    seen.add(node)
    for a in dir(node):
        if not a.startswith("_saved_"):
            continue
        v = getattr(node, a)
        for t in v if isinstance(v, (tuple, list)) else [v]:
            if not isinstance(t, torch.Tensor) or t.numel() == 0 or t.dim() == 0 and t.dtype == torch.float64:
                continue
            s = t.storage()
            if s.data_ptr() not in params:
                storages[s.data_ptr()] = s.nbytes()
    todo.extend(f for f, _ in node.next_functions)
blocks = sum(512 if n < 512 else (n + 511) // 512 * 512 for n in storages.values())
print(f"saved_bytes {blocks} storages {len(storages)}")
