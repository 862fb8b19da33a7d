"""_dist.py — torch.distributed's "nccl" (and "gloo" on CUDA tensors) backend served by etkit: a
ProcessGroup whose collectives call the stand-in libnccl.so.2 (live mode I), so they are timed by
the network model exactly as a CUDA/NCCL program's. As ProcessGroupNCCL: each group has its own
communication stream, which first waits for the current stream; Work.wait() makes the current
stream wait for the collective (the host does not block), barrier() blocks the host.
Rendezvous needs no store: every rank is a process of the same `etkit live` run."""
import collections
import ctypes
import weakref

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
from torch._C._distributed_c10d import ProcessGroup, Work

from . import _cuda, _lib, _state
from ._tensor import FakeCuda


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


_lib.nccl.ncclGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
_lib.nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
_BUF = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_lib.nccl.ncclAllReduce.argtypes = _BUF + [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
_lib.nccl.ncclReduce.argtypes = _BUF + [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
_lib.nccl.ncclBroadcast.argtypes = _BUF + [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
_lib.nccl.ncclAllGather.argtypes = _BUF + [ctypes.c_void_p, ctypes.c_void_p]
_lib.nccl.ncclReduceScatter.argtypes = _BUF + [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
_lib.nccl.ncclAlltoAll.argtypes = _BUF + [ctypes.c_void_p, ctypes.c_void_p]
_lib.nccl.ncclSend.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                               ctypes.c_void_p]
_lib.nccl.ncclRecv.argtypes = _lib.nccl.ncclSend.argtypes
INT8 = 0  # counts are passed in bytes


def _bytes(ts):
    n = 0
    for t in ts:
        if isinstance(t, (list, tuple)):
            n += _bytes(t)
        else:
            if not isinstance(t, FakeCuda) and t.device.type != "meta":
                _state.fatal(f"{_state.call_site()}: a collective on a CPU tensor ({tuple(t.shape)}) is not modelled: "
                             f"the etkit backend takes CUDA tensors")
            n += t.numel() * t.element_size()
    return n


def _weak(x):
    """The result's tensors by weak reference: the process group keeps its works alive (below), and
    a strong reference would keep their tensors' memory charged long after the script dropped them
    (a gradient shard FSDP reduce-scatters, a flattened bucket DDP broadcasts)."""
    if isinstance(x, torch.Tensor):
        return weakref.ref(x)
    if isinstance(x, (list, tuple)):
        return [_weak(y) for y in x]
    return x


def _strong(x):
    if isinstance(x, weakref.ref):
        return x()
    if isinstance(x, list):
        return [_strong(y) for y in x]
    return x


class EtkWork(Work):
    def __init__(self, pg, event, result, host_blocks=False):
        super().__init__()
        self.pg, self.event, self.host_blocks = pg, event, host_blocks
        self._result = _weak(result)

    def wait(self, timeout=None):
        if self.host_blocks:
            self.event.synchronize()
        else:
            _cuda.current_stream().wait_event(self.event)
        return True

    def is_completed(self):
        self.event.synchronize()
        return True

    def is_success(self):
        return True

    def result(self):
        return _strong(self._result)

    def synchronize(self):
        self.wait()

    def get_future(self):
        self.wait()
        f = torch.futures.Future()
        f.set_result(_strong(self._result))
        return f


class EtkProcessGroup(ProcessGroup):
    """Members `ranks` (global ranks in group order); this rank is member `rank`."""

    def __init__(self, rank, size, uid, name):
        super().__init__(rank, size)
        self._rank, self._size, self.name = rank, size, name
        comm = ctypes.c_void_p()
        if _lib.nccl.ncclCommInitRank(ctypes.byref(comm), size, uid, rank) != 0:
            _state.fatal(f"process group {name}: ncclCommInitRank failed")
        self.comm = comm.value
        self.stream = _cuda.Stream()
        self.seq = 0
        self.works = collections.deque(maxlen=1 << 16)

    def getBackendName(self):
        return "nccl"

    def _set_sequence_number_for_group(self):
        pass

    def _get_sequence_number_for_group(self):
        return self.seq

    def _run(self, call, result, host_blocks=False):
        self.seq += 1
        cur = _cuda.current_stream()
        self.stream.wait_stream(cur)
        call(self.stream.cuda_stream)
        ev = _cuda.Event()
        ev.record(self.stream)
        w = EtkWork(self, ev, result, host_blocks)
        # a C++ caller (DDP's Reducer) holds the work only on the C++ side: the Python object must
        # outlive it for pybind to find its methods (get_future, wait)
        self.works.append(w)
        return w

    def _coll(self, fn, nbytes, result, *extra):
        n = _lib.nccl
        f = getattr(n, fn)
        return self._run(lambda s: f(None, None, nbytes, INT8, *extra, self.comm, s), result)

    # the collectives, with PyTorch's signatures (tensors: lists, one per device: here one)
    def allreduce(self, tensors, opts=None):
        return self._coll("ncclAllReduce", _bytes(tensors), tensors, 0)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts=None):
        return self._coll("ncclReduce", _bytes(tensors), tensors, 0, opts.rootRank if opts else 0)

    def broadcast(self, tensors, opts=None):
        return self._coll("ncclBroadcast", _bytes(tensors), tensors, opts.rootRank if opts else 0)

    def allgather(self, output_tensors, input_tensors, opts=None):
        return self._coll("ncclAllGather", _bytes(input_tensors), output_tensors)

    def _allgather_base(self, output, input, opts=None):
        return self._coll("ncclAllGather", _bytes([input]), [output])

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        return self._coll("ncclAllGather", _bytes(input_list), output_lists)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        return self._coll("ncclReduceScatter", _bytes(output_tensors), output_tensors, 0)

    def _reduce_scatter_base(self, output, input, opts=None):
        return self._coll("ncclReduceScatter", _bytes([output]), [output], 0)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self._coll("ncclAlltoAll", _bytes([input]) // self._size, [output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        return self._coll("ncclAlltoAll", _bytes(input_tensors) // self._size, output_tensors)

    def send(self, tensors, dst, tag=0):
        nb = _bytes(tensors)
        return self._run(lambda s: _lib.nccl.ncclSend(None, nb, INT8, dst, self.comm, s), tensors)

    def recv(self, tensors, src, tag=0):
        nb = _bytes(tensors)
        return self._run(lambda s: _lib.nccl.ncclRecv(None, nb, INT8, src, self.comm, s), tensors)

    def recv_anysource(self, tensors, tag=0):
        _state.fatal(f"{_state.call_site()}: recv from any source is not modelled")

    def barrier(self, opts=None):
        return self._run(lambda s: _lib.nccl.ncclAllReduce(None, None, 4, INT8, 0, self.comm, s), [],
                         host_blocks=True)

    def gather(self, output_tensors, input_tensors, opts=None):
        _state.fatal(f"{_state.call_site()}: torch.distributed.gather is not modelled")

    def scatter(self, output_tensors, input_tensors, opts=None):
        _state.fatal(f"{_state.call_site()}: torch.distributed.scatter is not modelled")


def _rendezvous(url, rank=-1, world_size=-1, **kw):
    import os
    r = int(os.environ["RANK"]) if rank is None or rank < 0 else rank
    w = int(os.environ["WORLD_SIZE"]) if world_size is None or world_size < 0 else world_size
    yield (dist.HashStore(), r, w)


def _new_pg(group_size, group_rank, global_ranks_in_group, backend, store, pg_options=None, group_name=None,
            timeout=None):
    """distributed_c10d._new_process_group_helper: called by every rank, member or not (the
    communicator's unique id is the k-th of every process)."""
    if not group_name:
        group_name = str(c10d._group_count)
        c10d._group_count += 1
    uid = UniqueId()
    _lib.nccl.ncclGetUniqueId(ctypes.byref(uid))
    backend = dist.Backend(backend)
    if backend not in (dist.Backend.NCCL, dist.Backend.GLOO):
        _state.fatal(f"{_state.call_site()}: process-group backend '{backend}' is not modelled (nccl, gloo are)")
    if global_ranks_in_group:
        me = c10d._get_default_group().rank()
        if me not in global_ranks_in_group:
            return c10d.GroupMember.NON_GROUP_MEMBER
    pg = EtkProcessGroup(group_rank, group_size, uid, group_name)
    c10d._pg_map[pg] = (backend, store)
    c10d._pg_names[pg] = group_name
    return pg


def _broadcast_coalesced(pg, tensors, buffer_size, src=0):
    """dist._broadcast_coalesced (DDP's start-up sync of parameters and buffers): one broadcast of
    each bucket of at most buffer_size bytes, as the C++ version does through the dispatcher (whose
    c10d operators have no kernel for the meta tensors under the fake ones)."""
    opts = dist.BroadcastOptions()
    opts.rootRank = src
    bucket, size = [], 0
    for t in list(tensors) + [None]:
        if t is not None and not isinstance(t, FakeCuda):
            continue
        nb = 0 if t is None else t.numel() * t.element_size()
        if bucket and (t is None or size + nb > buffer_size):
            flat = torch.cat([b.reshape(-1) for b in bucket]) if len(bucket) > 1 else bucket[0]
            pg.broadcast([flat], opts).wait()
            bucket, size = [], 0
        if t is not None:
            bucket.append(t)
            size += nb


C10D_OPS = ("broadcast_", "allreduce_", "allgather_", "reduce_scatter_", "reduce_", "gather_", "scatter_",
            "alltoall_", "barrier", "send", "recv_")
_lib_keep = []


def _autograd_meta_kernels():
    """The C++ callers (DDP's Reducer) reach the process group through the dispatcher's c10d
    operators, which have no kernel for AutogradMeta (the key of the meta tensors inside the
    fake ones): one that goes on below autograd, to the fake tensors' dispatch (_tensor.py)."""
    lib = torch.library.Library("c10d", "IMPL", "AutogradMeta")
    for name in C10D_OPS:
        op = getattr(torch.ops.c10d, name)

        def kernel(*args, _op=op):
            guard = torch._C._AutoDispatchBelowAutograd()  # an RAII guard: active while it lives
            try:
                return _op(*args)
            finally:
                del guard
        lib.impl(name, kernel)
    _lib_keep.append(lib)


def install():
    dist._broadcast_coalesced = _broadcast_coalesced
    _autograd_meta_kernels()
    c10d.rendezvous = _rendezvous
    c10d._store_based_barrier = lambda *a, **k: None
    c10d._new_process_group_helper = _new_pg
    c10d.is_nccl_available = lambda: True
    dist.is_nccl_available = lambda: True
    import torch.nn.parallel.distributed as ddp
    # DDP compares the parameter shapes of all ranks through an all-gather of their values: tensors
    # here hold no data, and every rank runs the same program
    ddp._verify_param_shape_across_processes = lambda *a, **k: None
