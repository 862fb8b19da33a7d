"""_lazy.py — deferred initialisation of large CPU parameters, so that a script building its model
on the CPU before `.cuda()` does not make every rank hold the model's FP32 weights in host memory
(GPT-2 small's 163 M parameters: 652 MB a rank, 32 ranks 21 GB).

`nn.Linear(...)`, `nn.Embedding(...)` allocate their parameters with `torch.empty` (no page
touched yet) and fill them in `reset_parameters` (uniform_, normal_, fill_, zero_). For a CPU
parameter of at least 1 MiB that covers its whole storage, such a fill is recorded instead of run:
the pages stay untouched (not resident). The random number generator still advances exactly as
the fill would advance it, by running the same operator on a small scratch buffer chunk by chunk
(at most 2 x 4 MiB; chunks of 2^20 elements, a multiple of 16, the last one taking the rest:
the CPU kernels of uniform_ and normal_ then draw the same numbers as one call on the whole
tensor, tests/live/torch/lazy.py), and its state before the fill is kept. Moving the parameter to
the GPU (`.cuda()`, `.to("cuda")`) needs only its shape: the fill never runs. Anything else that
reads it on the CPU — any operator (also views and `.data`, which dispatch `detach`), `.numpy()`,
`.tolist()`, `.storage()`, `data_ptr()`, `torch.save` — first replays the recorded fills with the
kept generator states, so the values are those of the plain run, to the bit.

Not covered: C++ code reading the storage without an operator (none on this path in torch 1.13),
and a module's CPU initialisation that mixes other tensors in (those fills simply run)."""
import ctypes
import weakref

import torch

MIN_BYTES = 1 << 20
CHUNK = 1 << 20  # elements, a multiple of 16 (normal_'s vectorised kernel works in blocks of 16)
FULL = {"aten::uniform_", "aten::normal_", "aten::fill_", "aten::zero_"}  # overwrite every element
RANDOM = {"aten::uniform_", "aten::normal_"}

pending = {}  # CPU storage key -> _Entry
_scratch = None
stats = {"deferred": 0, "deferred_bytes": 0, "materialized": 0}


class _Entry:
    __slots__ = ("ref", "ops", "nbytes", "__weakref__")

    def __init__(self, t):
        self.ref = weakref.ref(t)
        self.ops = []
        self.nbytes = t.numel() * t.element_size()


def _key(t):
    return t._storage()._cdata


def _only_tensor_is_self(args, kwargs):
    for x in args[1:]:
        if isinstance(x, torch.Tensor) or type(x) in (list, tuple):
            return False
    return not any(isinstance(v, torch.Tensor) for v in kwargs.values())


def _deferrable(t):
    return (type(t) is torch.nn.Parameter or (t.is_leaf and t.requires_grad)) and t.device.type == "cpu" and \
        t.dtype.is_floating_point and t._base is None and t.storage_offset() == 0 and t.is_contiguous() and \
        t.numel() * t.element_size() >= MIN_BYTES and t.numel() * t.element_size() == t._storage().nbytes()


def _advance(func, t, args, kwargs):
    """Run func on a scratch buffer of t's dtype, chunk by chunk, for its effect on the generator."""
    global _scratch
    n = t.numel()
    nb = min(n, 2 * CHUNK) * t.element_size()
    if _scratch is None or _scratch.numel() < nb:
        _scratch = torch.empty(nb, dtype=torch.uint8)  # kept: freeing it would raise glibc's mmap threshold
    s = _scratch[:nb].view(t.dtype)
    i = 0
    while n - i >= 2 * CHUNK:
        func(s[:CHUNK], *args[1:], **kwargs)
        i += CHUNK
    func(s[:n - i], *args[1:], **kwargs)


def defer(func, name, args, kwargs):
    """A CPU operator (the dispatch mode's CPU path, mode off). True if it was recorded instead of run."""
    if not args or name not in FULL:
        return False
    t = args[0]
    if not isinstance(t, torch.Tensor) or not _deferrable(t) or not _only_tensor_is_self(args, kwargs):
        return False
    key = _key(t)
    e = pending.get(key)
    if e is None or e.ref() is not t:
        if e is not None:
            materialize_key(key)
        e = pending[key] = _Entry(t)
        weakref.finalize(t, _drop, key, weakref.ref(e))
        stats["deferred"] += 1
        stats["deferred_bytes"] += e.nbytes
    state = None
    if name in RANDOM:
        gen = kwargs.get("generator") or torch.default_generator
        state = gen.get_state()
        _advance(func, t, args, kwargs)
    e.ops = [(func, args[1:], dict(kwargs), state)]  # a full overwrite: the earlier fills do not matter
    return True


def _drop(key, eref):
    e = eref()
    if e is not None and pending.get(key) is e:
        del pending[key]


def materialize_key(key):
    e = pending.pop(key, None)
    if e is None:
        return
    t = e.ref()
    if t is None:
        return
    with torch.no_grad():
        for func, rest, kwargs, state in e.ops:
            if state is not None:
                g = torch.Generator()
                g.set_state(state)
                kwargs = dict(kwargs, generator=g)
            func(t, *rest, **kwargs)
    stats["materialized"] += 1


def materialize(tensors):
    """Before a CPU operator reads these (only called while something is pending)."""
    for x in tensors:
        if isinstance(x, torch.Tensor) and x.device.type == "cpu":
            try:
                k = _key(x)
            except Exception:  # no storage (sparse, ...)
                continue
            if k in pending:
                materialize_key(k)


def _reader(meth):
    def f(self, *a, **k):
        if pending and self.device.type == "cpu":
            materialize((self,))
        return meth(self, *a, **k)
    f.__name__, f.__doc__ = meth.__name__, meth.__doc__
    return f


def install():
    """The Tensor methods that read a CPU tensor's memory without an operator; glibc's mmap
    threshold fixed (at its default, 128 KiB): a freed large block would otherwise raise it (up to
    32 MiB), and the next parameters would come from the heap, on pages earlier blocks touched."""
    try:
        ctypes.CDLL(None).mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc
        pass
    for m in ("numpy", "tolist", "__array__", "storage", "_typed_storage", "untyped_storage", "data_ptr",
              "__reduce_ex__"):
        meth = getattr(torch.Tensor, m, None)
        if meth is not None:
            setattr(torch.Tensor, m, _reader(meth))
