"""etkit_torch — live mode II: an unmodified PyTorch script on etkit's simulated cluster
(docs/live.md, "PyTorch"). Loaded by sitecustomize.py when `etkit live` runs a Python interpreter,
installed when the script imports torch: torch.cuda reports the modelled GPUs, CUDA tensors are
fake (shapes only) and every operator on them is timed by etkit's compute model, torch.distributed's
"nccl" backend is etkit's, and the script's clocks (time.time, perf_counter, monotonic: the clock
shim of libetklive.so) read the rank's virtual time."""
import atexit

_installed = False


def install():
    global _installed
    if _installed:
        return
    _installed = True
    import torch
    from . import _cuda, _dist, _fsdp, _lazy, _state, _tensor

    _cuda.install()

    def cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        d = torch.device("cuda", _cuda._index(device))
        return self.to(d, non_blocking=non_blocking)
    torch.Tensor.cuda = cuda
    # Module.to(dtype)/.cuda() would assign param.data, which swaps the C++ tensor under a fake one
    # but not the meta tensor it holds: make them replace the parameters instead
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    torch.Tensor.record_stream = lambda self, stream: None
    torch.Tensor.pin_memory = lambda self, device=None: self
    torch.Tensor.is_pinned = lambda self, device=None: False
    # A Parameter of a tensor subclass is the tensor with _is_param set, which Parameter's metaclass
    # also lets pass as UninitializedParameter (torch 1.13): only Parameter itself may match so
    meta = type(torch.nn.Parameter)
    base_check = torch._C._TensorMeta.__instancecheck__

    def instancecheck(cls, inst):
        return base_check(cls, inst) or (cls is torch.nn.Parameter and isinstance(inst, torch.Tensor) and
                                         getattr(inst, "_is_param", False))
    meta.__instancecheck__ = instancecheck
    _tensor.install_dropout()
    _lazy.install()
    if torch.distributed.is_available():
        _dist.install()
        _fsdp.install()
    _tensor.MODE.__enter__()
    atexit.register(_state.report_at_exit)
