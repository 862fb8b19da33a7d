"""sitecustomize.py — put on PYTHONPATH by `etkit live` when the program is a Python interpreter:
when the script imports torch, etkit_torch.install() makes it run on the simulated cluster (the
script is not edited). Any other sitecustomize on the path still runs."""
import importlib.abc
import importlib.util
import os
import sys


class _TorchHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def run(module):
            exec_module(module)
            import etkit_torch
            etkit_torch.install()
        loader.exec_module = run
        return spec


if os.environ.get("ETK_LIVE_SOCKET"):
    sys.meta_path.insert(0, _TorchHook())


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    for p in sys.path:
        if not p or os.path.abspath(p) == here:
            continue
        f = os.path.join(p, "sitecustomize.py")
        if os.path.isfile(f):
            with open(f) as fh:
                exec(compile(fh.read(), f, "exec"), {"__name__": "sitecustomize", "__file__": f})
            return


_chain()
