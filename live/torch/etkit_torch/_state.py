"""_state.py — the rank's PyTorch-side state shared by the modules: current device and stream,
the options `etkit live` passes in the environment, and the warnings listed at exit."""
import os
import sys
import traceback

allow_unmodelled = os.environ.get("ETKIT_TORCH_ALLOW_UNMODELLED") == "1"
rank = int(os.environ.get("ETK_LIVE_RANK", "0"))
device = 0          # torch.cuda.current_device()
streams = {}        # device -> current torch.cuda.Stream
placeholder_sites = set()
unmodelled = {}     # op name -> [calls, first call site]
_here = os.path.dirname(os.path.abspath(__file__))
_torch_dir = None


def call_site():
    """file:line of the script's frame that led here (the first frame outside torch and etkit_torch)."""
    global _torch_dir
    if _torch_dir is None:
        import torch
        _torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    for fs in reversed(traceback.extract_stack()):
        f = os.path.abspath(fs.filename)
        if f.startswith(_here) or f.startswith(_torch_dir) or fs.filename.startswith("<"):
            continue
        return f"{os.path.relpath(f) if not os.path.relpath(f).startswith('..') else f}:{fs.lineno}"
    return "<unknown>"


def warn(text):
    sys.stderr.write(f"etkit live: rank {rank}: {text}\n")
    sys.stderr.flush()


def fatal(text):
    warn(text)
    sys.stdout.flush()
    os._exit(3)


def report_at_exit():
    if unmodelled and rank == 0:
        warn(f"{len(unmodelled)} operator(s) not modelled, timed by the bytes they move (--allow-unmodelled):")
        for name, (calls, site) in sorted(unmodelled.items()):
            sys.stderr.write(f"  {name}  calls {calls}  first at {site}\n")
        sys.stderr.flush()
