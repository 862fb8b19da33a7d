"""Loading libetkit-cli.so and calling a command in it (etkit/call.h), with ctypes.

The library is looked up, in order: the file named by $ETKIT_LIBRARY; libetkit-cli.so next to
this module (the package staged by CMake in build/python); the installed libetkit-cli.so.0
(``make install``). ctypes releases the GIL for the whole call, so other Python threads run
while a simulation does; calls into the library are serialized by the library itself.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import List, Optional, Sequence, Tuple

_lib: Optional[ctypes.CDLL] = None


class Error(Exception):
    """An etkit command failed: ``str(e)`` is the C library's message (what the ``etkit`` command
    prints on stderr), ``e.status`` the exit status (1 a finding such as a deadlock, 2 a usage
    or input error), ``e.args_list`` the command line."""

    def __init__(self, message: str, status: int = 2, args_list: Sequence[str] = ()):
        super().__init__(message)
        self.status = status
        self.args_list = list(args_list)


Error.__module__ = "etkit"


def _candidates() -> List[str]:
    env = os.environ.get("ETKIT_LIBRARY")
    if env:
        return [env]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libetkit-cli.so")
    out = [here] if os.path.exists(here) else []
    found = ctypes.util.find_library("etkit-cli")
    out += [found] if found else []
    out.append("libetkit-cli.so.0")
    return out


def library() -> ctypes.CDLL:
    """The loaded libetkit-cli (loaded on first use); raises Error when it cannot be found."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
            continue
        lib.etk_call.restype = ctypes.c_int
        lib.etk_call.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
        lib.etk_call_free.restype = None
        lib.etk_call_free.argtypes = [ctypes.c_void_p]
        lib.etk_call_version.restype = ctypes.c_char_p
        lib.etk_call_version.argtypes = []
        _lib = lib
        return lib
    raise Error("etkit: cannot load libetkit-cli.so (build it with CMake, 'make install' it, or set "
                "ETKIT_LIBRARY): " + "; ".join(tried))


def call(args: Sequence[str]) -> Tuple[int, str, str]:
    """Run ``etkit ARGS...`` in process; returns (exit status, stdout text, stderr text)."""
    lib = library()
    argv = ["etkit"] + [str(a) for a in args]
    arr = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    out, err = ctypes.c_void_p(), ctypes.c_void_p()
    olen, elen = ctypes.c_size_t(), ctypes.c_size_t()
    rc = lib.etk_call(len(argv), arr, ctypes.byref(out), ctypes.byref(olen), ctypes.byref(err),
                      ctypes.byref(elen))
    try:
        if rc < 0:
            raise MemoryError("etkit: out of memory capturing a command's output")
        text = ctypes.string_at(out.value, olen.value).decode("utf-8", "replace") if out.value else ""
        etext = ctypes.string_at(err.value, elen.value).decode("utf-8", "replace") if err.value else ""
    finally:
        lib.etk_call_free(out)
        lib.etk_call_free(err)
    return rc, text, etext


def check(args: Sequence[str], ok: Sequence[int] = (0,)) -> Tuple[int, str, str]:
    """call(), raising Error with the command's message when its status is not in ``ok``."""
    rc, out, err = call(args)
    if rc not in ok:
        msg = err.strip() or f"etkit {args[0] if args else ''}: failed with status {rc}"
        raise Error(msg, rc, args)
    return rc, out, err


def version() -> str:
    """The library's version and build: "VERSION (compiler, build type, git revision)"."""
    return library().etk_call_version().decode()
