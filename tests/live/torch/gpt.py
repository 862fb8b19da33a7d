"""gpt.py — a GPT-2-small-like decoder in plain torch.nn (no etkit import), shared by the live
mode II scripts. Sizes from the environment so the tests stay small: GPT_LAYERS, GPT_HIDDEN,
GPT_HEADS, GPT_SEQ, GPT_VOCAB, GPT_BATCH (GPT-2 small: 12, 768, 12, 1024, 50304), GPT_DROPOUT
(GPT-2's 0.1, where GPT-2 has it: after the embeddings, on the attention probabilities, after the
attention projection and after the MLP; 0: none)."""
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def env(name, default):
    return int(os.environ.get(name, default))


LAYERS, HIDDEN, HEADS = env("GPT_LAYERS", 12), env("GPT_HIDDEN", 768), env("GPT_HEADS", 12)
SEQ, VOCAB, BATCH = env("GPT_SEQ", 1024), env("GPT_VOCAB", 50304), env("GPT_BATCH", 8)
DROPOUT = float(os.environ.get("GPT_DROPOUT", "0.1"))


class Attention(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.attn_drop, self.resid_drop = nn.Dropout(DROPOUT), nn.Dropout(DROPOUT)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.heads))
        att = self.attn_drop(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.attn = Attention(h, heads)
        self.fc, self.out = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.drop = nn.Dropout(DROPOUT)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(SEQ, HIDDEN)
        self.drop = nn.Dropout(DROPOUT)
        self.blocks = nn.ModuleList(Block(HIDDEN, HEADS) for _ in range(LAYERS))
        self.ln = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def train(model, opt, rank, after_backward=None):
    """STEPS training steps on one fixed random batch (the script's own clock times each one);
    rank 0 prints every step's time, then the last step's, the clock at the end and the peak of
    torch.cuda.max_memory_allocated()."""
    steps = int(os.environ.get("STEPS", "3"))
    idx = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")
    tgt = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")
    t = 0.0
    for step in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = model(idx, tgt)
        loss.backward()
        if after_backward:
            after_backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t = time.perf_counter() - t0
        if rank == 0:
            print(f"step {step} loss {loss.item():.3f} time_ns {round(t * 1e9)}", flush=True)
    if rank == 0:
        print(f"last_step_ns {round(t * 1e9)} end_ns {round(time.perf_counter() * 1e9)} "
              f"max_memory_allocated_bytes {torch.cuda.max_memory_allocated()}", flush=True)
