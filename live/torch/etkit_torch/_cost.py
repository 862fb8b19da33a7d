"""_cost.py — what one ATen operator on fake CUDA tensors costs on the modelled GPU: GEMMs and
batched GEMMs (mm, addmm, bmm, baddbmm) and convolutions (as the implicit GEMM) become compute-
model GEMM nodes (m, n, k, FLOPs 2mnk·batch); views and uninitialised allocations cost nothing;
the gather/scatter family (gather, index, index_select, take_along_dim, embedding; scatter,
scatter_add, scatter_reduce, index_add_, index_put_; nll_loss and its backward) moves the index and the
elements it selects, not the whole tensor it selects them from (index_moved); every other operator
(elementwise, reductions, norms, softmax, copies, foreach kernels) moves the bytes of its tensor
inputs and outputs — a tensor passed twice (addcmul(v, g, g)) read once — and is timed by the
compute model's roofline (bytes / HBM bandwidth)."""
import math

import torch

# output shape depends on the values: cannot be run on tensors without data
DATA_DEPENDENT = {"aten::nonzero", "aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_dim",
                  "aten::unique_consecutive", "aten::masked_select", "aten::bincount", "aten::histc",
                  "aten::repeat_interleave", "aten::_local_scalar_dense", "aten::equal", "aten::allclose"}
NO_KERNEL = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
             "aten::new_empty_strided", "aten::_unsafe_view", "aten::lift_fresh", "aten::set_",
             "aten::resize_", "aten::record_stream", "aten::_has_compatible_shallow_copy_type"}


def tensors(x, out):
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            tensors(y, out)
    return out


def nbytes(t):
    return t.numel() * t.element_size()


# gather-like: self (or the embedding's weight) first, the index tensor(s) after it; the kernel
# reads the index and, per output element, one element of self, and writes the output
GATHER = {"aten::gather", "aten::index", "aten::index_select", "aten::take_along_dim", "aten::embedding"}
# scatter-like: (self, dim, index, src or value); in place, or out of place = a copy of self first
SCATTER = {"aten::scatter", "aten::scatter_", "aten::scatter_add", "aten::scatter_add_",
           "aten::scatter_reduce", "aten::scatter_reduce_", "aten::index_add", "aten::index_add_"}
# x[i, j] = v: (self, indices (a list, None for a dimension not indexed), values, accumulate)
INDEX_PUT = {"aten::index_put_", "aten::index_put", "aten::_index_put_impl_"}
INDEXED = GATHER | SCATTER | INDEX_PUT | {"aten::nll_loss_forward", "aten::nll_loss_backward"}


def index_moved(name, a, ous):
    """The bytes a gather/scatter-family CUDA kernel moves: the index tensor(s) and the elements it
    selects, read or written (read and written for the accumulating scatters) — not every element
    of the tensor it selects from, which the kernel never touches (ATen's gather/scatter kernels
    run one thread per index element; nll_loss reads one logit per target; its backward fills the
    gradient with zeros, one pass, then writes one element per target)."""
    if name in GATHER:
        return sum(nbytes(t) for t in tensors(a[1:], [])) + 2 * sum(nbytes(t) for t in ous)
    if name in SCATTER:
        self, index = a[0], a[2]
        src = a[3] if isinstance(a[3], torch.Tensor) else None
        k = src.numel() if name.startswith("aten::index_add") else index.numel()
        rmw = 1 if name.startswith("aten::scatter") and not name.startswith(("aten::scatter_add", "aten::scatter_reduce")) else 2
        moved = nbytes(index) + k * rmw * self.element_size() + (k * src.element_size() if src is not None else 0)
        if not name.endswith("_"):
            moved += 2 * nbytes(self)  # the output starts as a copy of self
        return moved
    if name in INDEX_PUT:
        return index_put_moved(name, a)
    if name == "aten::nll_loss_forward":
        self, target, weight = a[0], a[1], a[2]
        w = target.numel() * weight.element_size() if isinstance(weight, torch.Tensor) else 0
        return nbytes(target) + target.numel() * self.element_size() + w + sum(nbytes(t) for t in ous)
    # nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight)
    g, target, tw = a[0], a[2], a[6]
    gi = ous[0]
    w = target.numel() * a[3].element_size() if isinstance(a[3], torch.Tensor) else 0
    return nbytes(g) + nbytes(target) + w + nbytes(tw) + nbytes(gi) + target.numel() * gi.element_size()


def index_put_moved(name, a):
    """x[i, j] = v (index_put_): ATen's CUDA kernel (index_put_stub, a TensorIterator over the
    indexed elements) reads the index tensors and the values and writes the k selected elements,
    k = the broadcast shape of the indices x the dimensions not indexed; accumulate=True (its
    sorting kernel, the sort of the k linear indices not charged) reads them too. Out of place
    (index_put) the output starts as a copy of self. A boolean mask (its selection depends on
    the values) is charged the whole tensor, read and written."""
    self, idx, vals = a[0], a[1], a[2]
    acc = len(a) > 3 and bool(a[3])
    ix = [t for t in idx if t is not None] if isinstance(idx, (list, tuple)) else []
    if not ix or any(t.dtype in (torch.bool, torch.uint8) for t in ix):
        moved = 2 * nbytes(self) + sum(nbytes(t) for t in ix) + (nbytes(vals) if isinstance(vals, torch.Tensor) else 0)
    else:
        k = math.prod(torch.broadcast_shapes(*(t.shape for t in ix)))
        k *= math.prod(d for j, d in enumerate(self.shape) if j >= len(idx) or idx[j] is None)
        moved = sum(nbytes(t) for t in ix) + nbytes(vals) + k * (2 if acc else 1) * self.element_size()
    if name == "aten::index_put":
        moved += 2 * nbytes(self)
    return moved


def is_view(func):
    rets = func._schema.returns
    return bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)


_NAME = {}   # operator -> its schema name ('aten::addmm'): built once, not per call
_KERNEL = {}  # operator -> whether it runs a GPU kernel (not a view, not in NO_KERNEL)


def name_of(func):
    n = _NAME.get(func)
    if n is None:
        n = _NAME[func] = func._schema.name
        _KERNEL[func] = not (n in NO_KERNEL or is_view(func))
    return n


def describe(func, ins):
    """'aten::addmm [768]bf16 [512x768]bf16 ...' (the node name, at most 127 characters)."""
    parts = [name_of(func)]
    for t in ins[:4]:
        parts.append("[" + "x".join(str(d) for d in t.shape) + "]" + str(t.dtype).replace("torch.", ""))
    if len(ins) > 4:
        parts.append(f"+{len(ins) - 4} tensors")
    return " ".join(parts)[:127]


def conv_gemm(x, w, out, transposed, groups):
    """The implicit GEMM of a convolution: m = N·output positions, n = output channels,
    k = input channels per group · kernel size (transposed: input and output swapped)."""
    if transposed:
        x, out = out, x
    n_batch = x.shape[0]
    pos = math.prod(out.shape[2:])
    ksz = math.prod(w.shape[2:])
    cout = out.shape[1]
    cin_g = x.shape[1] // groups
    m, n, k = n_batch * pos, cout, cin_g * ksz
    return m, n, k, 2 * m * n * k


def gemm_of(name, a, out):
    """(m, n, k, flops) of a GEMM-family operator, or None."""
    if name == "aten::mm":
        m, k = a[0].shape
        n = a[1].shape[1]
        return m, n, k, 2 * m * n * k
    if name == "aten::addmm":
        m, k = a[1].shape
        n = a[2].shape[1]
        return m, n, k, 2 * m * n * k
    if name in ("aten::bmm", "aten::baddbmm"):
        x, y = (a[0], a[1]) if name == "aten::bmm" else (a[1], a[2])
        b, m, k = x.shape
        n = y.shape[2]
        return m, n, k, 2 * b * m * n * k
    if name == "aten::convolution":
        return conv_gemm(a[0], a[1], out[0], a[6], a[8])
    if name == "aten::convolution_backward":
        # grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
        # groups, output_mask: the input-gradient and weight-gradient GEMMs (each the forward's size)
        g, x, w = a[0], a[1], a[2]
        m, n, k, f = conv_gemm(x, w, g, a[7], a[9])
        mask = a[10]
        return m, n, k, f * (int(bool(mask[0])) + int(bool(mask[1])))
    return None


def cost(func, args, outs):
    """None: no GPU work; else (name, bytes, gemm or None)."""
    name = name_of(func)
    if not _KERNEL[func]:
        return None
    ins = tensors(args, [])
    ous = tensors(outs, [])
    conv = name.startswith("aten::convolution")
    if not conv:  # the cost follows from the operator and its tensors' shapes and dtypes
        first = {}  # which inputs are the same tensor (their bytes count once)
        pat = tuple(first.setdefault(id(t), k) for k, t in enumerate(ins))
        sig = (func, pat) + tuple((t.shape, t.dtype) for t in ins) + tuple((t.shape, t.dtype) for t in ous)
        c = _COST.get(sig, False)
        if c is not False:
            return c
    if name in INDEXED:
        moved = index_moved(name, args, ous)
    else:
        seen = set()  # a tensor passed twice is read once (the second load hits the cache)
        moved = sum(nbytes(t) for t in ins if not (id(t) in seen or seen.add(id(t)))) + sum(nbytes(t) for t in ous)
    g = gemm_of(name, args, ous)
    c = None if g is None and moved == 0 else (describe(func, ins), moved, g)
    if not conv:
        _COST[sig] = c
    return c


_COST = {}  # (operator, tensor count, (shape, dtype) of each input and output) -> cost()'s result
