"""_alloc.py — PyTorch's CUDA caching allocator as far as the memory statistics see it: a request
is rounded up to 512 bytes (memory_allocated counts rounded sizes); requests up to 1 MiB come
from 2 MiB segments of the small pool, larger ones from segments of 20 MiB (under 10 MiB) or
of the request rounded up to 2 MiB; a segment is taken from the modelled HBM (the stand-in
cudaMalloc) only when the pool's cached free bytes do not hold the request. Freed blocks stay
cached (memory_reserved does not shrink; empty_cache() releases nothing). Fragmentation inside
segments is not modelled: reserved is a lower bound of PyTorch's.

ETKIT_TORCH_MEMLOG=PREFIX (in the environment of `etkit live`) writes every block's allocation and
release to PREFIX.<rank>, one line each: "+" or "-", the block's rounded bytes, memory_allocated
after it, and the ATen operator being run (the last one dispatched: a release by Python's garbage
collection names the operator that ran before it)."""
import os

from . import _lib, _state

MiB = 1 << 20
SMALL, LARGE = 0, 1


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def segment_size(n):
    if n <= MiB:
        return 2 * MiB
    if n < 10 * MiB:
        return 20 * MiB
    return (n + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


class Stats:
    def __init__(self):
        self.allocated = 0
        self.peak_allocated = 0
        self.reserved = 0
        self.peak_reserved = 0
        self.free = [0, 0]   # cached free bytes per pool
        self.n_alloc = 0


stats = Stats()
op = ""  # the operator being dispatched (_tensor.py), for the memory log
_log = None
if os.environ.get("ETKIT_TORCH_MEMLOG"):
    _log = open(f"{os.environ['ETKIT_TORCH_MEMLOG']}.{_state.rank}", "w", buffering=1 << 16)


def oom_error(size):
    import torch
    free, total = _lib.mem_get_info()
    gib = 1 << 30

    def fmt(b):
        return f"{b / gib:.2f} GiB" if b >= gib else f"{b / MiB:.2f} MiB"
    return torch.cuda.OutOfMemoryError(
        f"CUDA out of memory. Tried to allocate {fmt(size)} (GPU {_state.device}; {fmt(total)} total capacity; "
        f"{fmt(stats.allocated)} already allocated; {fmt(free)} free; {fmt(stats.reserved)} reserved in total "
        f"by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
        f"fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")


class Block:
    """One allocation (a storage); freed when the last tensor using its storage goes away, or when
    its storage is resized to 0 (FSDP frees and re-allocates parameter storage that way)."""
    __slots__ = ("nbytes", "size", "pool")

    def __init__(self, nbytes):
        self.nbytes, self.size, self.pool = 0, 0, SMALL
        self.resize(nbytes)

    def resize(self, nbytes):
        """storage().resize_(): the old block back to its pool, a new one of nbytes (0: none)."""
        self._release()
        self.nbytes = int(nbytes)
        if self.nbytes == 0:
            return
        size = round_size(self.nbytes)
        pool = SMALL if size <= MiB else LARGE
        if stats.free[pool] < size:
            seg = segment_size(size)
            if _lib.malloc(seg) is None:
                self.nbytes = 0
                raise oom_error(size)
            stats.reserved += seg
            stats.peak_reserved = max(stats.peak_reserved, stats.reserved)
            stats.free[pool] += seg
        stats.free[pool] -= size
        stats.allocated += size
        stats.n_alloc += 1
        stats.peak_allocated = max(stats.peak_allocated, stats.allocated)
        self.size, self.pool = size, pool
        if _log:
            _log.write(f"+ {size} {stats.allocated} {op}\n")

    def _release(self):
        if self.size:
            stats.allocated -= self.size
            stats.free[self.pool] += self.size
            if _log:
                _log.write(f"- {self.size} {stats.allocated} {op}\n")
            self.size = 0

    def __del__(self):
        self._release()


def reset_peak():
    stats.peak_allocated = stats.allocated
    stats.peak_reserved = stats.reserved
