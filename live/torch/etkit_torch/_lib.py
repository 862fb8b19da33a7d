"""_lib.py — the live-mode client through ctypes: libetklive.so (the rank's connection to
`etkit live`, already preloaded), the stand-in libcudart.so.13 (streams, events, device memory)
and libnccl.so.2 (communicators, collectives). No second protocol implementation: every node is
sent by the C client (live/client.c), so `etkit sim` of a recording sees what live mode I sees."""
import ctypes
from ctypes import (POINTER, Structure, byref, c_char, c_char_p, c_double, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

MAX_DEPS = 8
LM_NODE = 2
LF_CPU, LF_KERNEL, LF_GEMM = 1, 2, 4
NODE_METADATA, NODE_COMP, NODE_COLL = 1, 4, 7


class Msg(Structure):  # etk_live_msg (src/live/proto.h)
    _fields_ = [("op", c_uint32), ("rank", c_uint32), ("id", c_uint64), ("deps", c_uint64 * MAX_DEPS),
                ("n_deps", c_uint32), ("type", c_int32), ("coll", c_int32), ("peer", c_int32), ("tag", c_int32),
                ("flags", c_uint32), ("dur_ns", c_uint64), ("bytes", c_uint64), ("flops", c_uint64),
                ("m", c_int64), ("n", c_int64), ("k", c_int64), ("mem_alloc", c_int64), ("mem_free", c_int64),
                ("name", c_char * 128), ("group", c_char * 64)]


class Reply(Structure):  # etk_live_reply
    _fields_ = [("op", c_uint32), ("status", c_int32), ("t_ns", c_uint64), ("dep_end", c_uint64 * 2),
                ("version", c_uint32), ("world", c_uint32), ("local_world", c_uint32), ("sms", c_uint32),
                ("cc_major", c_uint32), ("cc_minor", c_uint32), ("gpus", c_uint32), ("hbm_bytes", c_uint64), ("hbm_Bps", c_double),
                ("pcie_Bps", c_double), ("nvlink_Bps", c_double), ("cpu_scale", c_double), ("epoch_ns", c_uint64),
                ("gpu_name", c_char * 64), ("msg", c_char * 384)]


live = ctypes.CDLL("libetklive.so")
cudart = ctypes.CDLL("libcudart.so.13")
nccl = ctypes.CDLL("libnccl.so.2")

live.etl_abi_size.restype = c_size_t
live.etl_abi_size.argtypes = [c_int]
for _s, _r in ((Msg, 0), (Reply, 1)):
    if ctypes.sizeof(_s) != live.etl_abi_size(_r):  # the mirrors must follow src/live/proto.h
        raise ImportError(f"etkit_torch: {_s.__name__} is {ctypes.sizeof(_s)} bytes but libetklive.so's is "
                          f"{live.etl_abi_size(_r)}: live/torch/etkit_torch/_lib.py does not match src/live/proto.h")
live.etl_config.restype = POINTER(Reply)
live.etl_issue.argtypes = [c_void_p, POINTER(Msg)]
live.etl_issue.restype = c_uint64
live.etl_now.restype = c_uint64
live.etl_rank.restype = c_int
for f in ("cudaStreamCreate", "cudaEventCreate"):
    getattr(cudart, f).argtypes = [POINTER(c_void_p)]
for f in ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaStreamDestroy", "cudaEventDestroy", "cudaFree"):
    getattr(cudart, f).argtypes = [c_void_p]
cudart.cudaEventRecord.argtypes = [c_void_p, c_void_p]
cudart.cudaStreamWaitEvent.argtypes = [c_void_p, c_void_p, ctypes.c_uint]
cudart.cudaEventElapsedTime.argtypes = [POINTER(c_float), c_void_p, c_void_p]
cudart.cudaMalloc.argtypes = [POINTER(c_void_p), c_size_t]
cudart.cudaMemGetInfo.argtypes = [POINTER(c_size_t), POINTER(c_size_t)]
cudart.cudaSetDevice.argtypes = [c_int]

CONFIG = live.etl_config().contents


def check(rc, call):
    if rc != 0:
        raise RuntimeError(f"etkit live: {call} failed ({rc})")


def issue(stream, name, nbytes=0, gemm=None, deps=(), dur_ns=0):
    """One GPU node on `stream` (a cudaStream_t, None: the default stream): a GEMM timed by the
    compute model from gemm = (m, n, k, flops), or an operator timed from the bytes it moves."""
    m = Msg()
    m.type = NODE_COMP
    m.bytes = int(nbytes)
    m.dur_ns = int(dur_ns)
    if gemm is not None:
        m.flags = LF_GEMM
        m.m, m.n, m.k, m.flops = int(gemm[0]), int(gemm[1]), int(gemm[2]), int(gemm[3])
    m.name = name.encode()[:127]
    for d in deps:
        m.deps[m.n_deps] = d
        m.n_deps += 1
    live.etl_lock()
    try:
        return live.etl_issue(stream, byref(m))
    finally:
        live.etl_unlock()




def new_stream():
    s = c_void_p()
    check(cudart.cudaStreamCreate(byref(s)), "cudaStreamCreate")
    return s.value


def new_event():
    e = c_void_p()
    check(cudart.cudaEventCreate(byref(e)), "cudaEventCreate")
    return e.value


def elapsed_ms(a, b):
    ms = c_float()
    check(cudart.cudaEventElapsedTime(byref(ms), a, b), "cudaEventElapsedTime")
    return ms.value


def malloc(nbytes):
    """A segment of device memory from the modelled HBM; None when it does not fit."""
    p = c_void_p()
    if cudart.cudaMalloc(byref(p), c_size_t(int(nbytes))) != 0:
        return None
    return p.value


def mem_get_info():
    f, t = c_size_t(), c_size_t()
    cudart.cudaMemGetInfo(byref(f), byref(t))
    return f.value, t.value


__all__ = ["Msg", "Reply", "live", "cudart", "nccl", "CONFIG", "issue", "new_stream", "new_event", "elapsed_ms",
           "malloc", "mem_get_info", "c_int", "c_void_p", "c_size_t", "c_char_p", "byref", "POINTER"]
