"""_cuda.py — torch.cuda on the modelled GPUs: devices and their properties from the
coordinator's answer (etkit's cluster), streams and events on the stand-in libcudart (events'
elapsed_time is virtual time), the caching allocator's statistics (_alloc.py)."""
import contextlib
from collections import namedtuple

import torch

from . import _alloc, _lib, _state

Props = namedtuple("_CudaDeviceProperties", "name major minor total_memory multi_processor_count is_integrated "
                   "is_multi_gpu_board")


def _index(device):
    if device is None:
        return _state.device
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        return _state.device if device.index is None else device.index
    return int(device)


class Stream:
    """A CUDA stream of the modelled GPU (cuda_stream: the stand-in's cudaStream_t; 0 the default)."""

    def __init__(self, device=None, priority=0, _ptr=-1, **kw):
        self.device = torch.device("cuda", _index(device))
        self.priority = priority
        self.cuda_stream = _lib.new_stream() if _ptr == -1 else _ptr

    def wait_event(self, event):
        _lib.check(_lib.cudart.cudaStreamWaitEvent(self.cuda_stream, event._ptr(), 0), "cudaStreamWaitEvent")

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def query(self):
        self.synchronize()
        return True

    def synchronize(self):
        _lib.check(_lib.cudart.cudaStreamSynchronize(self.cuda_stream), "cudaStreamSynchronize")

    def __eq__(self, o):
        return isinstance(o, Stream) and o.cuda_stream == self.cuda_stream

    def __hash__(self):
        return hash(self.cuda_stream)

    def __enter__(self):
        self._prev = current_stream()
        _state.streams[_state.device] = self

    def __exit__(self, *a):
        _state.streams[_state.device] = self._prev

    def __repr__(self):
        return f"<torch.cuda.Stream device={self.device} cuda_stream={self.cuda_stream or 0:#x}>"


class Event:
    """A CUDA event: record() is a marker on the stream; elapsed_time() the virtual time between two."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self.cuda_event = _lib.new_event()
        self.recorded = False

    def _ptr(self):
        if not self.recorded:  # waiting on an unrecorded event waits for nothing
            self.record()
        return self.cuda_event

    def record(self, stream=None):
        stream = stream or current_stream()
        _lib.check(_lib.cudart.cudaEventRecord(self.cuda_event, stream.cuda_stream), "cudaEventRecord")
        self.recorded = True

    def wait(self, stream=None):
        (stream or current_stream()).wait_event(self)

    def query(self):
        self.synchronize()
        return True

    def synchronize(self):
        if self.recorded:
            _lib.check(_lib.cudart.cudaEventSynchronize(self.cuda_event), "cudaEventSynchronize")

    def elapsed_time(self, end):
        if not self.enable_timing or not end.enable_timing:
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not self.recorded or not end.recorded:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return _lib.elapsed_ms(self.cuda_event, end.cuda_event)


_default = {}


def default_stream(device=None):
    d = _index(device)
    if d not in _default:
        _default[d] = Stream(d, _ptr=None)
    return _default[d]


def current_stream(device=None):
    d = _index(device)
    return _state.streams.get(d) or default_stream(d)


def set_stream(stream):
    if stream is not None:
        _state.streams[stream.device.index] = stream


@contextlib.contextmanager
def stream(s):
    if s is None:
        yield
        return
    prev = current_stream()
    set_stream(s)
    try:
        yield
    finally:
        set_stream(prev)


def set_device(device):
    d = _index(device)
    if d < 0 or d >= device_count():
        raise RuntimeError(f"CUDA error: invalid device ordinal (device {d}; {device_count()} modelled GPUs)")
    _state.device = d
    _lib.cudart.cudaSetDevice(d)


class device:
    def __init__(self, dev):
        self.idx = _index(dev) if dev is not None else -1

    def __enter__(self):
        self.prev = _state.device
        if self.idx >= 0:
            set_device(self.idx)

    def __exit__(self, *a):
        set_device(self.prev)
        return False


def device_count():
    return int(_lib.CONFIG.local_world) or 1


def get_device_properties(device=None):
    c = _lib.CONFIG
    return Props(c.gpu_name.decode(), int(c.cc_major), int(c.cc_minor), int(c.hbm_bytes), int(c.sms), 0, 0)


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return p.major, p.minor


def synchronize(device=None):
    _lib.check(_lib.cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize")


def mem_get_info(device=None):
    return _lib.mem_get_info()


def memory_allocated(device=None):
    return _alloc.stats.allocated


def max_memory_allocated(device=None):
    return _alloc.stats.peak_allocated


def memory_reserved(device=None):
    return _alloc.stats.reserved


def max_memory_reserved(device=None):
    return _alloc.stats.peak_reserved


def reset_peak_memory_stats(device=None):
    _alloc.reset_peak()


def memory_stats(device=None):
    s = _alloc.stats
    return {"allocated_bytes.all.current": s.allocated, "allocated_bytes.all.peak": s.peak_allocated,
            "reserved_bytes.all.current": s.reserved, "reserved_bytes.all.peak": s.peak_reserved,
            "num_alloc_retries": 0, "num_ooms": 0, "allocation.all.allocated": s.n_alloc}


def _noop(*a, **k):
    return None


def install():
    cuda = torch.cuda
    funcs = dict(is_available=lambda: True, is_initialized=lambda: True, _lazy_init=_noop, init=_noop,
                 device_count=device_count, current_device=lambda: _state.device, set_device=set_device,
                 get_device_properties=get_device_properties, get_device_name=get_device_name,
                 get_device_capability=get_device_capability, synchronize=synchronize, mem_get_info=mem_get_info,
                 memory_allocated=memory_allocated, max_memory_allocated=max_memory_allocated,
                 memory_reserved=memory_reserved, max_memory_reserved=max_memory_reserved,
                 memory_cached=memory_reserved, max_memory_cached=max_memory_reserved,
                 reset_peak_memory_stats=reset_peak_memory_stats, reset_max_memory_allocated=reset_peak_memory_stats,
                 reset_accumulated_memory_stats=_noop, memory_stats=memory_stats, empty_cache=_noop,
                 manual_seed=_noop, manual_seed_all=_noop, seed=_noop, seed_all=_noop, is_bf16_supported=lambda: True,
                 Stream=Stream, Event=Event, current_stream=current_stream, default_stream=default_stream,
                 set_stream=set_stream, stream=stream, device=device, _is_in_bad_fork=lambda: False)
    for k, v in funcs.items():
        setattr(cuda, k, v)
    torch.backends.cuda.is_built = lambda: True
    torch.version.cuda = torch.version.cuda or "13.0"
