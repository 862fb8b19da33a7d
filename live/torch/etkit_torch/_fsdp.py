"""_fsdp.py — torch 1.13's FullyShardedDataParallel on fake tensors, installed when the script
imports it (a finder on sys.meta_path; nothing is imported before the script does):
- Debian's python3-torch 1.13 on Python 3.11 cannot import torch.distributed.fsdp at all: its
  ShardedTensorMetadata declares `field(default=TensorProperties())`, a mutable default that
  Python 3.11's dataclasses refuse (ValueError). PyTorch 2.0 declares it
  `field(default_factory=TensorProperties)`; that module is loaded with this one change.
- FlatParameter(fake tensor) would give a fake tensor that is no FlatParameter (Parameter of a
  tensor subclass): it makes a FakeFlatParameter, both.
The rest FSDP needs of the fake tensors is in _tensor.py: .data = (the flat parameter switching
between its shard and the gathered tensor), set_ (the shard), storage().resize_ (freeing and
re-allocating the gathered parameters, charged to the modelled HBM)."""
import importlib.abc
import importlib.machinery
import sys

_SOURCE_FIXES = {"torch.distributed._shard.sharded_tensor.metadata":
                 ("field(default=TensorProperties())", "field(default_factory=TensorProperties)")}


def _patch_flat_param(mod):
    import torch.nn as nn

    from ._tensor import FakeCuda
    flat = mod.FlatParameter

    class FakeFlatParameter(FakeCuda, flat):
        """A FlatParameter of fake CUDA tensors."""

    def new(cls, data=None, requires_grad=True):
        if isinstance(data, FakeCuda):
            r = FakeFlatParameter(data._inner, data._dev, data._mem)  # (detach() here would be a fake one)
            r.requires_grad_(requires_grad)
            r._is_param = True
            return r
        return nn.Parameter.__new__(cls, data, requires_grad)
    flat.__new__ = staticmethod(new)
    mod.FakeFlatParameter = FakeFlatParameter


def _patch_fsdp(mod):
    # on its first iteration FSDP all-gathers each rank's forward order (the values of small int32
    # tensors) and compares them on the host: fake tensors hold no values and every rank runs the
    # same program (as DDP's parameter-shape check, _dist.py)
    mod._ExecOrderData._check_order = lambda self, handles_key, is_training: None


_AFTER = {"torch.distributed.fsdp.flat_param": _patch_flat_param,
          "torch.distributed.fsdp.fully_sharded_data_parallel": _patch_fsdp}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name not in _SOURCE_FIXES and name not in _AFTER:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.origin is None:
            return spec
        self.loaders = getattr(self, "loaders", {})
        self.loaders[name] = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        if name in _SOURCE_FIXES:
            old, new = _SOURCE_FIXES[name]
            with open(module.__spec__.origin) as f:
                src = f.read()
            exec(compile(src.replace(old, new), module.__spec__.origin, "exec"), module.__dict__)
        else:
            self.loaders[name].exec_module(module)
        if name in _AFTER:
            _AFTER[name](module)


def install():
    sys.meta_path.insert(0, _Finder())
