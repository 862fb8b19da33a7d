"""gpt_mem.py — the closed form of the peak of torch.cuda.max_memory_allocated() that train_ddp.py
(gpt.py's model in BF16, DDP, AdamW, STEPS steps) reads on a GPU, from the same environment
(GPT_LAYERS, GPT_HIDDEN, GPT_HEADS, GPT_SEQ, GPT_VOCAB, GPT_BATCH, GPT_DROPOUT, STEPS) and from
torch 1.13's autograd and CUDA caching allocator alone (no torch, no etkit import): what each
operator of the forward saves for backward, which saved tensors share storage, and the order in
which backward frees them. tests/live/torch.sh compares it with what `etkit live` measures.
Prints the peak, the point where it is reached, the other candidate points and the terms.

Notation: N = B S tokens, h hidden, H heads, V vocabulary, L layers, e = 2 (BF16), r(n) = the
caching allocator's block of an n-byte request (n rounded up to 512 B; memory_allocated and its
peak count blocks). The parameters (P of them) are all multiples of 256 elements when h is, so
every parameter, gradient, Adam moment and DDP bucket is an exact number of 512-byte blocks.

Persistent (at the peak of step >= 2):
  weights 2P, AdamW's exp_avg and exp_avg_sq 2 x 2P (zeros_like(p): BF16; torch 1.13's AdamW keeps
  `step` as a CPU tensor and runs its single-tensor path, foreach=None meaning False), DDP's
  gradient buckets 2P (one flat tensor per bucket; the first step has one bucket of all the
  parameters, from the second forward on the rebuilt buckets: the same bytes);
  no gradients (zero_grad(set_to_none=True)); idx, tgt int64 r(8N) each, pos (arange) r(8S).
Saved at the end of forward (checked against the tensors the grad_fn nodes hold, `_saved_*`, of a
CPU run of gpt.py by gpt_saved.py, which `gpt_mem.py --cpu` gives the terms of: the CPU differs
only in layer_norm's mean and rstd, kept in the input's dtype on the CPU and in FP32 on CUDA —
torch/_refs native_layer_norm — and in dropout, fused on CUDA only, which gpt_saved.py makes it):
  embeddings: wte(idx) + wpe(pos) is freed after the dropout; the dropout's output x0 r(2Nh) (the
    first block's input) and its mask r(Nh) (native_dropout saves only the mask: 1 byte/element)
  per block, x the block's input (saved by ln1, counted as the previous one's output):
    ln1: mean, rstd 2 r(4N) (FP32) and its output r(2Nh) (addmm's input: linear on a contiguous
      3D input is addmm of its 2D view; the QKV output r(6Nh) itself is saved by nothing: split,
      view and transpose save no tensor)
    q @ k^T: matmul reshapes the transposed (non-contiguous) q and k^T to 3D, which copies them:
      bmm saves both copies, 2 r(2Nh); its output r(2BHS^2) is freed after * 1/sqrt(d)
      (MulBackward saves only the Python scalar); softmax saves its output r(2BHS^2)
    attention dropout: mask r(BHS^2) and output r(2BHS^2) (saved by the next bmm, as its view)
    att @ v: the copy of v r(2Nh); the output's transpose(1, 2).reshape copies: r(2Nh), saved by
      the projection's addmm; the projection's output is freed after the dropout: its mask r(Nh)
    x1 = x + ...: r(2Nh) (ln2's input); ln2: 2 r(4N) + output r(2Nh); fc: output r(8Nh) (GELU's
      input); GELU's output r(8Nh) (out's input); dropout mask r(Nh); x2 = x1 + ...: r(2Nh)
    = 8 r(2Nh) + 2 r(8Nh) + 2 r(Nh) + 4 r(4N) + 2 r(2BHS^2) + r(BHS^2)
  without dropout (GPT_DROPOUT=0: F.dropout returns its input): no masks, no dropout outputs
    = 8 r(2Nh) + 2 r(8Nh) + 4 r(4N) + r(2BHS^2); x0 is the embeddings' sum
  final ln: 2 r(4N) + output r(2Nh) (the head's mm input); the logits r(2NV) are freed when
  forward returns; log_softmax saves its output r(2NV) (nll_loss saves the same tensor); nll_loss
  returns the loss and total_weight, r(2) = 512 B each (BF16 0-dim).
Candidate points (the peak is the largest; every later point of backward is lower, each block
freeing more saved bytes than its gradients add):
  H  the head's backward, in _log_softmax_backward_data: the persistent bytes + the saved ones
     (total_weight released after NllLossBackward runs) + the loss and backward()'s ones_like
     gradient 2 x 512 + log_softmax's saved output, nll_loss_backward's gradient and the new
     one, 3 r(2NV)
  F  the last block's fc2 (addmm) backward: H - 3 r(2NV) (freed) + the head's weight gradient
     r(2Vh) + the final norm's gradients 2 r(2h) - its mean, rstd 2 r(4N) - the dropout's mask
     r(Nh) + fc2's input gradient r(8Nh), weight gradient r(8h^2) and bias gradient r(2h); the
     r(2Nh) terms cancel (ln_f's output and x2 freed, ln_f's and the dropout's gradients made).
     Without dropout: also - r(2Nh) (no dropout gradient) and + r(Nh) (no mask freed).
  O  the optimizer step: the weights, gradients (2P), Adam state, buckets, idx, tgt and the loss
     (pos and the saved tensors freed by backward) + the temporaries of one parameter's update,
     the largest over the parameters: exp_avg_sq.sqrt() and its quotient, 2 r(2n_i), and the
     previous parameter's `denom`, r(2n_(i-1)), which the loop's variable holds until the new one
     is assigned (at GPT-2 small the head, after ln_f's bias: 2 r(2Vh) + r(2h)).
With STEPS = 1 the backward runs before AdamW allocates its state: H and F without 2 x 2P.
Not modelled (a real GPU's figure can be higher): the caching allocator handing out a cached
block of up to 1 MiB more than a large request without splitting it (counted whole)."""
import os
import sys


def r(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def saved_bytes(L, h, H, S, B, dropout, stat=4):
    """The forward's saved tensors up to the head (the embeddings, L blocks, ln_f), e = 2;
    stat: bytes of an element of layer_norm's mean and rstd (4 on CUDA, 2 on the CPU)."""
    N, e = B * S, 2
    if dropout > 0:
        block = 8 * r(e * N * h) + 2 * r(4 * e * N * h) + 2 * r(N * h) + 4 * r(stat * N) \
            + 2 * r(e * B * H * S * S) + r(B * H * S * S)
        emb = r(e * N * h) + r(N * h)
    else:
        block = 8 * r(e * N * h) + 2 * r(4 * e * N * h) + 4 * r(stat * N) + r(e * B * H * S * S)
        emb = r(e * N * h)
    return emb + L * block + 2 * r(stat * N) + r(e * N * h), block


def closed_form(L, h, H, S, V, B, dropout, steps):
    if h % 256:
        raise SystemExit("gpt_mem.py: GPT_HIDDEN must be a multiple of 256 (parameters in whole 512-byte blocks)")
    N, e = B * S, 2
    P = 2 * V * h + S * h + L * (12 * h * h + 13 * h) + 2 * h  # wte, head (untied), wpe, blocks, ln_f
    drop = dropout > 0
    saved, block = saved_bytes(L, h, H, S, B, dropout)
    inputs = 2 * r(8 * N) + r(8 * S)
    adam = 2 * e * P if steps >= 2 else 0
    persistent = e * P + adam + e * P  # weights, Adam, buckets
    Hp = persistent + inputs + saved + 2 * 512 + 3 * r(e * N * V)
    Fp = Hp - 3 * r(e * N * V) + r(e * V * h) + 2 * r(e * h) - 2 * r(4 * N) + r(4 * e * N * h) \
        + r(4 * e * h * h) + r(e * h) - (r(N * h) if drop else r(e * N * h))
    # the parameters in model.parameters()'s order (gpt.py's registration order)
    sizes = [V * h, S * h] + L * [h, h, h, h, 3 * h * h, 3 * h, h * h, h, 4 * h * h, 4 * h, 4 * h * h, h] \
        + [h, h, V * h]
    assert sum(sizes) == P
    Op = 5 * e * P + 2 * r(8 * N) + 512 + max(2 * r(e * n) + (r(e * sizes[i - 1]) if i else 0)
                                             for i, n in enumerate(sizes))
    points = {"H": Hp, "F": Fp, "O": Op}
    where = max(points, key=points.get)
    return points[where], where, points, dict(P=P, persistent=persistent, saved=saved, block=block,
                                                inputs=inputs)


if __name__ == "__main__":
    env = os.environ.get
    L, h, H = int(env("GPT_LAYERS", 12)), int(env("GPT_HIDDEN", 768)), int(env("GPT_HEADS", 12))
    S, V, B = int(env("GPT_SEQ", 1024)), int(env("GPT_VOCAB", 50304)), int(env("GPT_BATCH", 8))
    dropout = float(env("GPT_DROPOUT", "0.1"))
    if sys.argv[1:] == ["--cpu"]:
        # what gpt_saved.py counts on the CPU: the saved tensors with layer_norm's statistics in
        # BF16, + idx, tgt, pos (saved by the embeddings and nll_loss), log_softmax's output and
        # nll_loss's total_weight
        N = B * S
        print(f"saved_bytes {saved_bytes(L, h, H, S, B, dropout, stat=2)[0] + 2 * r(8 * N) + r(8 * S) + r(2 * N * V) + 512}")
        sys.exit(0)
    peak, where, points, terms = closed_form(L, h, H, S, V, B, dropout, int(env("STEPS", "3")))
    print(f"closed_form_bytes {peak} at {where} " + " ".join(f"{k} {v}" for k, v in points.items()))
    print(" ".join(f"{k} {v}" for k, v in terms.items()))
