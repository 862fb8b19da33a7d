"""train_tp.py — a Megatron-style tensor-parallel GPT-2-like model in plain PyTorch (no etkit
import): attention heads and the MLP split over a TP group (column-parallel QKV and FC1,
row-parallel projection and FC2 followed by an all-reduce; the all-reduce of the input gradient
in backward), data parallel across TP groups (gradients all-reduced over the DP group); dropout
where GPT-2 has it (gpt.DROPOUT: the attention probabilities, after the embeddings and after each
row-parallel all-reduce, as Megatron's bias-dropout-add). As Megatron-LM, the word embedding and
the output layer are split over the TP group by vocabulary (VocabParallelEmbedding: each rank looks
up its V/TP rows, zeroes the others, all-reduce over TP; the output layer column-parallel) and the
cross-entropy is vocabulary-parallel (all-reduces over TP of the max logit, the sum of exponentials
and the target's logit, in FP32 as Megatron's default); the gradients are all-reduced over the DP
group by DistributedDataParallel (buckets, overlapped with backward; the gradients are views of
the buckets, as Megatron's contiguous buffer); AdamW runs its foreach
(multi-tensor) kernels. TP size from the environment (TP, default the world). Prints its own step
time."""
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt  # noqa: E402

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
TP = int(os.environ.get("TP", world))
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
tp_group = dp_group = None
for g in range(world // TP):  # every rank creates every group, in the same order
    ranks = list(range(g * TP, (g + 1) * TP))
    pg = dist.new_group(ranks)
    if rank in ranks:
        tp_group = pg
for i in range(TP):
    ranks = list(range(i, world, TP))
    pg = dist.new_group(ranks)
    if rank in ranks:
        dp_group = pg


class CopyToTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        dist.all_reduce(g, group=tp_group)
        return g


class ReduceFromTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        dist.all_reduce(x, group=tp_group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class VocabParallelCrossEntropy(torch.autograd.Function):
    """Megatron's vocab_parallel_cross_entropy: logits (B, S, V/TP) of this rank's vocabulary
    slice [start, start + V/TP); per token loss = log(sum exp) - target logit."""
    @staticmethod
    def forward(ctx, logits, target, start):
        logits = logits.float()
        m = logits.max(dim=-1)[0]
        dist.all_reduce(m, op=dist.ReduceOp.MAX, group=tp_group)
        logits = logits - m.unsqueeze(-1)
        mask = (target < start) | (target >= start + logits.shape[-1])
        local = (target - start).masked_fill(mask, 0).unsqueeze(-1)
        pred = logits.gather(-1, local).squeeze(-1).masked_fill(mask, 0.0)
        dist.all_reduce(pred, group=tp_group)
        e = logits.exp()
        s = e.sum(dim=-1)
        dist.all_reduce(s, group=tp_group)
        e.div_(s.unsqueeze(-1))
        ctx.save_for_backward(e, mask, local)
        return s.log() - pred

    @staticmethod
    def backward(ctx, g):
        e, mask, local = ctx.saved_tensors
        e.scatter_add_(-1, local, (mask.float() - 1.0).unsqueeze(-1))  # softmax - one-hot
        return (e * g.unsqueeze(-1)).to(torch.bfloat16), None, None


class TPBlock(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.hl, self.heads = h // TP, heads // TP
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * self.hl)             # column-parallel
        self.proj = nn.Linear(self.hl, h, bias=False)    # row-parallel
        self.fc = nn.Linear(h, 4 * self.hl)              # column-parallel
        self.out = nn.Linear(4 * self.hl, h, bias=False)  # row-parallel
        self.attn_drop, self.drop1, self.drop2 = (nn.Dropout(gpt.DROPOUT) for _ in range(3))

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(CopyToTP.apply(self.ln1(x))).split(self.hl, dim=2)
        d = self.hl // self.heads
        q, k, v = (t.view(b, s, self.heads, d).transpose(1, 2) for t in (q, k, v))
        q, k, v = (t.reshape(b * self.heads, s, d) for t in (q, k, v))
        # as Megatron's CoreAttention: the 1/sqrt(d) scale folded into the score GEMM (baddbmm, beta 0)
        att = torch.baddbmm(torch.empty(b * self.heads, s, s, dtype=q.dtype, device=q.device), q,
                            k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(d))
        att = self.attn_drop(att.softmax(dim=-1))
        y = (att @ v).view(b, self.heads, s, d).transpose(1, 2).reshape(b, s, self.hl)
        x = x + self.drop1(ReduceFromTP.apply(self.proj(y)))
        return x + self.drop2(ReduceFromTP.apply(self.out(F.gelu(self.fc(CopyToTP.apply(self.ln2(x)))))))


class TPGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.vl = gpt.VOCAB // TP
        self.start = (rank % TP) * self.vl                 # this rank's vocabulary slice
        self.wte, self.wpe = nn.Embedding(self.vl, gpt.HIDDEN), nn.Embedding(gpt.SEQ, gpt.HIDDEN)
        self.drop = nn.Dropout(gpt.DROPOUT)
        self.blocks = nn.ModuleList(TPBlock(gpt.HIDDEN, gpt.HEADS) for _ in range(gpt.LAYERS))
        self.ln = nn.LayerNorm(gpt.HIDDEN)
        self.head = nn.Linear(gpt.HIDDEN, self.vl, bias=False)  # column-parallel over vocabulary

    def forward(self, idx, targets):
        mask = (idx < self.start) | (idx >= self.start + self.vl)
        x = self.wte((idx - self.start).masked_fill(mask, 0)).masked_fill(mask.unsqueeze(-1), 0.0)
        x = self.drop(ReduceFromTP.apply(x) + self.wpe(torch.arange(idx.shape[1], device=idx.device)))
        for b in self.blocks:
            x = b(x)
        logits = self.head(CopyToTP.apply(self.ln(x)))
        return VocabParallelCrossEntropy.apply(logits, targets, self.start).mean()


model = TPGPT().cuda().to(torch.bfloat16)
if world > TP:
    model = DDP(model, device_ids=[torch.cuda.current_device()], process_group=dp_group,
                gradient_as_bucket_view=True)  # as Megatron's contiguous gradient buffer: no copies
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
gpt.train(model, opt, rank)
dist.destroy_process_group()
