"""_tensor.py — fake CUDA tensors: a wrapper subclass over a meta tensor (shape, strides, dtype;
no storage) whose `device` says cuda:N, and a dispatch mode that sees every ATen operator. An
operator on fake tensors runs on the meta tensors (output shapes), is sent to the coordinator as
one GPU node on the current stream (_cost.py) and charges its new outputs to the modelled HBM
(_alloc.py); CPU tensors stay real. Reading a value back (.item(), .cpu(), printing) gives
placeholder zeros, with one warning per call site of the script."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode


def tree_map(f, x):
    """f over the leaves of an operator's arguments or results (tuples, lists, dicts): what
    torch.utils._pytree.tree_map does for these, at a fraction of its cost (it was about 40% of
    the host time per operator)."""
    t = type(x)
    if t is tuple or t is list:
        return t(tree_map(f, y) for y in x)
    if t is dict:
        return {k: tree_map(f, v) for k, v in x.items()}
    return f(x)

from . import _alloc, _cost, _lazy, _lib, _state

aten = torch.ops.aten


def cur_stream():
    s = _state.streams.get(_state.device)
    return s.cuda_stream if s is not None else None


class FakeCuda(torch.Tensor):
    """A CUDA tensor of the modelled GPU. C++ sees a meta tensor; Python sees cuda:N."""
    __slots__ = ("_inner", "_dev", "_mem", "_key")

    @staticmethod
    def __new__(cls, inner, dev, mem, key=None):
        r = torch.Tensor._make_wrapper_subclass(cls, inner.size(), strides=inner.stride(),
                                                storage_offset=inner.storage_offset(), dtype=inner.dtype,
                                                device="meta", requires_grad=inner.requires_grad)
        r._inner, r._dev, r._mem = inner, dev, mem
        r._key = _storage_key(inner) if key is None else key  # the meta storage's identity (wrap)
        return r

    @property
    def device(self):
        return self._dev

    @property
    def is_cuda(self):
        return True

    @property
    def is_meta(self):
        return False

    def get_device(self):
        return self._dev.index

    def __repr__(self, **kw):
        return (f"tensor(<placeholder: etkit live fake CUDA tensor>, size={tuple(self.shape)}, "
                f"device='{self._dev}', dtype={self.dtype})")

    __str__ = __repr__
    __torch_function__ = torch._C._disabled_torch_function_impl

    # tensor.data (a detached alias, through aten::detach) and tensor.data = other, which swaps the
    # C++ tensor under this one: the meta tensor and the allocation follow (FSDP switches its flat
    # parameters between the shard and the gathered tensor this way)
    @property
    def data(self):
        return _DATA.__get__(self)

    @data.setter
    def data(self, v):
        _set_data(self, v)

    def storage(self):
        return FakeStorage(self)

    _typed_storage = storage

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return MODE.run(func, args, kwargs or {})


_DATA = torch._C._TensorBase.data


def install_dropout():
    """F.dropout (nn.Dropout, the functional API) on a fake CUDA tensor runs aten::native_dropout,
    as ATen's dropout does for a CUDA tensor (is_fused_kernel_acceptable: one fused kernel writing
    the output and a 1-byte mask; backward native_dropout_backward). C++ sees a meta tensor here,
    for which ATen would decompose it into bernoulli_, div_ and mul: three kernels a GPU never runs.
    In-place dropout (inplace=True) has no fused path in ATen either way: unchanged."""
    import torch.nn.functional as F
    plain = F.dropout

    def dropout(input, p=0.5, training=True, inplace=False):
        if isinstance(input, FakeCuda) and training and not inplace and 0.0 < p < 1.0 and input.numel() > 0:
            return torch.native_dropout(input, p, True)[0]
        return plain(input, p, training, inplace)
    dropout.__doc__ = plain.__doc__
    F.dropout = dropout


def _set_data(t, v):
    _DATA.__set__(t, v)
    if isinstance(v, FakeCuda):
        t._inner, t._dev, t._mem, t._key = v._inner, v._dev, v._mem, v._key
    else:
        _state.fatal(f"{_state.call_site()}: assigning a {v.device} tensor to the .data of a GPU tensor is not modelled")


class FakeStorage:
    """tensor.storage() of a fake tensor: its allocation (_alloc.Block) in elements of the tensor's
    dtype. resize_(n) frees the block (n = 0) or charges n elements again, for every tensor on it;
    this is how torch 1.13's FSDP frees and re-allocates the gathered parameters."""

    def __init__(self, t):
        self.t, self.mem, self.esize, self.dtype = t, t._mem, t.element_size(), t.dtype
        self.device = t._dev

    def size(self):
        return self.mem.nbytes // self.esize if self.mem is not None else 0

    __len__ = size

    def nbytes(self):
        return self.mem.nbytes if self.mem is not None else 0

    def resize_(self, n):
        if self.mem is None:
            if n == 0:
                return self
            self.mem = self.t._mem = _alloc.Block(0)
        self.mem.resize(n * self.esize)
        return self

    def data_ptr(self):
        return id(self.mem) if self.mem is not None and self.mem.nbytes else 0

    @property
    def _cdata(self):
        return id(self.mem)

    def __eq__(self, o):
        return isinstance(o, FakeStorage) and o.mem is self.mem

    def __hash__(self):
        return id(self.mem)


def _dev_of(d):
    d = torch.device(d)
    return torch.device("cuda", _state.device if d.index is None else d.index)


def _placeholder(what):
    site = _state.call_site()
    if site not in _state.placeholder_sites:
        _state.placeholder_sites.add(site)
        _state.warn(f"{site}: {what} reads a value of a GPU tensor: placeholder 0 (etkit live tensors hold no data; "
                    f"docs/live.md)")


def _sync():
    _lib.check(_lib.cudart.cudaStreamSynchronize(cur_stream()), "cudaStreamSynchronize")


def _zero_value(dtype):
    if dtype == torch.bool:
        return False
    return 0.0 if dtype.is_floating_point or dtype.is_complex else 0


def _scalar_to_meta(x):
    return x.to("meta") if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() == 0 else x


def _cpu_zeros(t):
    return torch.zeros(t.shape, dtype=t.dtype)


class Mode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.run(func, args, kwargs or {})

    def run(self, func, args, kwargs):
        dev = None
        aliases = []  # FakeCuda inputs by position (for outputs that alias them)

        scalars = False

        def un(x):
            nonlocal dev, scalars
            if isinstance(x, FakeCuda):
                dev = x._dev
                return x._inner
            if isinstance(x, torch.Tensor):
                typ = x.device.type
                if typ == "meta" and dev is None:
                    dev = torch.device("cuda", _state.device)
                elif typ == "cpu" and x.dim() == 0:
                    scalars = True
            return x
        a = tree_map(un, args)
        k = tree_map(un, kwargs)
        kdev = k.get("device")
        if kdev is not None and torch.device(kdev).type in ("cuda", "meta"):
            if dev is None:
                dev = _dev_of(kdev)
            k["device"] = torch.device("meta")
        name = _alloc.op = _cost.name_of(func)
        if dev is None:  # a CPU operator: real (a large parameter's initialisation deferred: _lazy.py)
            if name in _lazy.FULL and _lazy.defer(func, name, args, kwargs):
                return args[0]
            if _lazy.pending:
                _lazy.materialize(_cost.tensors(args, _cost.tensors(list(kwargs.values()), [])))
            return func(*args, **kwargs)
        # CPU -> GPU copy (.cuda(), .to("cuda")): the bytes over the host link
        if name in ("aten::_to_copy", "aten::copy_") and any(
                isinstance(x, torch.Tensor) and not isinstance(x, FakeCuda) and x.device.type == "cpu" and x.dim() > 0
                for x in _cost.tensors(args, [])):
            return self.host_copy(func, args, kwargs, a, k, dev)
        # GPU -> CPU: a placeholder read
        if name == "aten::_to_copy" and kdev is not None and torch.device(kdev).type == "cpu":
            _sync()
            _placeholder(".cpu()/.to('cpu')")
            return _cpu_zeros(a[0]).to(kwargs.get("dtype") or a[0].dtype)
        if name == "aten::_local_scalar_dense":
            _sync()
            _placeholder(".item()")
            return _zero_value(a[0].dtype)
        # 0-dim CPU tensors mix with CUDA tensors in PyTorch: make them meta too
        if scalars:
            a = tree_map(_scalar_to_meta, a)
            k = tree_map(_scalar_to_meta, k)
        if name.startswith("c10d::"):  # a collective from C++ (DDP): the process group's method (_dist.py)
            out = func(*a, **k)
            if isinstance(out, tuple) and out and isinstance(out[0], list):
                return (args[0],) + tuple(out[1:])
            return out
        if name.startswith("aten::_foreach_"):  # torch 1.13 has no meta kernels for them
            return self.foreach(func, name, args, a, dev)
        if name in _cost.DATA_DEPENDENT or not name.startswith("aten::"):
            out = self.unmodelled(func, a, k, why="its output depends on the tensor's values"
                                  if name.startswith("aten::") else "it is not an ATen operator")
        else:
            try:
                out = func(*a, **k)
            except NotImplementedError:
                out = self.unmodelled(func, a, k, why="it has no shape function (meta kernel)")
        c = _cost.cost(func, a, out)
        if c is not None:
            _lib.issue(cur_stream(), c[0], c[1], c[2])
        res = self.wrap(func, args, out, dev, kwargs)
        if name == "aten::set_" and isinstance(args[0], FakeCuda):
            # in place: the fake tensor itself takes the new storage and shape (FSDP's shard())
            _set_data(args[0], res)
            return args[0]
        return res

    def foreach(self, func, name, args, a, dev):
        """A multi-tensor (foreach) operator, as the optimizers' foreach=True path runs them: every
        output has the shape and dtype of the first list's tensor at its position. In place
        (name ending in _): the first list is written (read + written, as one in-place kernel per
        tensor would be) and nothing is returned; else a new list. One kernel node for the list,
        timed by all the bytes it moves (CUDA's multi_tensor_apply launches one kernel per chunk
        of tensors; the launches are not modelled separately)."""
        lst = a[0]
        inplace = name.endswith("_")
        out = lst if inplace else [torch.empty_like(t) for t in lst]
        c = _cost.cost(func, a, out)
        if c is not None:
            _lib.issue(cur_stream(), c[0], c[1], c[2])
        return None if inplace else self.wrap(func, args, out, dev)

    def unmodelled(self, func, a, k, why):
        name = str(func._schema.name)
        site = _state.call_site()
        if not _state.allow_unmodelled:
            _state.fatal(f"{site}: {name} is not modelled ({why}); --allow-unmodelled times it by the bytes it moves")
        e = _state.unmodelled.setdefault(name, [0, site])
        e[0] += 1
        # run on CPU zeros for the output shapes
        ca = tree_map(lambda x: _cpu_zeros(x) if isinstance(x, torch.Tensor) and x.device.type == "meta" else x, a)
        ck = tree_map(lambda x: torch.device("cpu") if isinstance(x, torch.device) else x, k)
        out = func(*ca, **ck)
        return tree_map(lambda x: x.to("meta") if isinstance(x, torch.Tensor) else x, out)

    def host_copy(self, func, args, kwargs, a, k, dev):
        src = [x for x in _cost.tensors(args, []) if not isinstance(x, FakeCuda)][0]
        nb = _cost.nbytes(src)
        cfg = _lib.CONFIG
        dur = int(-(-nb * 1e9 // cfg.pcie_Bps)) if cfg.pcie_Bps > 0 else 0
        m = tree_map(lambda x: x.to("meta") if isinstance(x, torch.Tensor) and x.device.type == "cpu" else x, a)
        out = func(*m, **k)
        _lib.issue(cur_stream(), f"memcpy HtoD {nb} B", 0, dur_ns=max(dur, 1))
        return self.wrap(func, args, out, dev)

    def wrap(self, func, args, out, dev, kwargs=None):
        """Fake tensors of the meta outputs. An output on the storage of an input (a view, an
        in-place result, also the views without alias annotation such as _unsafe_view, and the
        `out=` argument of an out-variant, which comes as a keyword: DDP's reducer writes each
        gradient into its bucket by mul_out(bucket_view, grad, 1/world)) shares that input's
        allocation; any other is a new block of the caching allocator."""
        owners = {}
        for t in _cost.tensors(args, _cost.tensors(list(kwargs.values()), []) if kwargs else []):
            if isinstance(t, FakeCuda):
                owners[t._key] = t._mem
            elif t.device.type == "meta":  # made by C++ outside the mode (the slices of all-reduce results DDP takes): not charged
                owners[_storage_key(t)] = None

        def one(x):
            if not isinstance(x, torch.Tensor) or x.device.type != "meta":
                return x
            key = _storage_key(x)
            mem = owners.get(key, False)
            if mem is False:
                nb = _storage_bytes(x)
                mem = _alloc.Block(nb) if nb else None
                owners[key] = mem  # several outputs on one new storage: one block
            return FakeCuda(x, dev, mem, key)
        return tree_map(one, out)


def _storage_key(t):
    return t._storage()._cdata  # (storage() would build a TypedStorage around it: 3x the time)


def _storage_bytes(t):
    try:
        return t._storage().nbytes()
    except Exception:
        return _cost.nbytes(t)


MODE = Mode()
