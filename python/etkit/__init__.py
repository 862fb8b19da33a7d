"""etkit: predict the step time, MFU, memory, TTFT/TPOT of distributed LLM training and
inference on GPU clusters (the C library libetkit, through libetkit-cli.so).

    >>> import etkit
    >>> r = etkit.run(model="llama3-8b", tp=4, pp=2, dp=8, cluster="dgx-h100", nodes=8)
    >>> r.step_ns, r.mfu

Every call runs the ``etkit`` command of the same name in process and reads its JSON report,
so the numbers are the command's (docs/python.md). Keyword arguments are the command's long
options with ``_`` for ``-``: ``global_batch=512`` is ``--global-batch 512``, ``sp=True`` is
``--sp``, a list repeats the option (``slow_rank=["3:0.8"]``); None and False leave it out.
Errors raise :class:`etkit.Error` with the library's message. The GIL is released while the
library works.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Union

from ._native import Error, call, check, version
from .planresult import PlanResult
from .result import Result
from .trace import Node, Trace, read_trace

__all__ = ["Error", "Result", "PlanResult", "Node", "Trace", "run", "simulate", "gen", "read_trace", "validate",
           "convert_pytorch", "models", "plan", "report", "version", "call", "options"]
__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]


def options(**kw: Any) -> List[str]:
    """The command-line options for keyword arguments: ``options(tp=4, sp=True,
    global_batch=512)`` is ``['--tp', '4', '--sp', '--global-batch', '512']``."""
    out: List[str] = []
    for k, v in kw.items():
        flag = "--" + k.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            out.append(flag)
        elif isinstance(v, (list, tuple)):
            for x in v:
                out += [flag, os.fspath(x) if isinstance(x, os.PathLike) else str(x)]
        else:
            out += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    return out


def run(model: Optional[str] = None, tp: Optional[int] = None, pp: Optional[int] = None,
        dp: Optional[int] = None, cluster: Optional[str] = None, nodes: Optional[int] = None,
        **plan: Any) -> Result:
    """Generate one training step (or, with ``mode="inference"``, a batch of requests) in memory
    and simulate it, as ``etkit run``: the same defaults (no arguments: llama3-8b, TP 4 x PP 2 x
    DP 8 with SP on 8 DGX H100 nodes) and the same options (``cp``, ``sp``, ``seq``,
    ``global_batch``, ``micro_batch``, ``zero``, ``recompute``, ``gpu``, ``net_model``, ...;
    ``etkit run --help``). Returns the report as a :class:`Result`."""
    args = ["run"] + options(model=model, tp=tp, pp=pp, dp=dp, cluster=cluster, nodes=nodes, **plan)
    _, out, err = check(args + ["--json"])
    return Result.from_json(out, err)


def simulate(prefix_or_workload: PathLike, cluster: Optional[str] = "dgx-h100",
             nodes: Optional[int] = None, **opts: Any) -> Result:
    """Simulate a workload of trace files (a prefix of PREFIX.<rank>.et files, with the comm
    groups in PREFIX.json, or one .et file), as ``etkit sim``; ``cluster`` is a preset or a
    cluster YAML; other options as ``etkit sim --help`` (``groups``, ``no_fold``,
    ``missing_deps``, ``net_model``, ...). Returns the report as a :class:`Result`."""
    args = ["sim", os.fspath(prefix_or_workload)] + options(cluster=cluster, nodes=nodes, **opts)
    _, out, err = check(args + ["--json"])
    return Result.from_json(out, err)


def gen(out: Optional[PathLike] = None, **plan: Any) -> Dict[str, Any]:
    """Synthesize per-rank traces, as ``etkit gen``. With ``out=PREFIX`` writes
    PREFIX.<rank>.et and PREFIX.json and returns {"files": [...], "summary": ...}; without it
    writes nothing and returns {"summary": ...}. ``summary`` is ``etkit gen --summary --json``
    (per-stage FLOPs, collectives and memory) for the same plan."""
    opts = options(**plan)
    _, text, _ = check(["gen"] + opts + ["--summary", "--json"])
    res: Dict[str, Any] = {"summary": json.loads(text)}
    if out is not None:
        prefix = os.fspath(out)
        check(["gen"] + opts + ["--out", prefix])
        d = os.path.dirname(prefix) or "."
        base = os.path.basename(prefix) + "."
        ranks = sorted(int(f[len(base):-3]) for f in os.listdir(d)
                       if f.startswith(base) and f.endswith(".et") and f[len(base):-3].isdigit())
        res["files"] = [f"{prefix}.{r}.et" for r in ranks] + [prefix + ".json"]
    return res


def validate(*workloads: PathLike, groups: Optional[PathLike] = None, per_file: bool = False,
             deadlock: bool = True, max_ids: Optional[int] = None) -> Dict[str, Any]:
    """Check traces and workloads, as ``etkit validate --json``: returns its document (the
    findings, each with severity, code, rank, file, node, message) with ``ok`` added (no
    errors: exit status 0). Findings are not exceptions; an unreadable input raises Error."""
    if not workloads:
        raise Error("etkit validate: missing input file", 2, ["validate"])
    args = ["validate", "--json"] + options(groups=groups, per_file=per_file, no_deadlock=not deadlock,
                                           max_ids=max_ids) + [os.fspath(w) for w in workloads]
    rc, text, _ = check(args, ok=(0, 1))
    doc = json.loads(text)
    doc["ok"] = rc == 0
    return doc


def convert_pytorch(out: PathLike, host: Optional[PathLike] = None, device: Optional[PathLike] = None,
                    rank: Optional[int] = None, ranks: Optional[int] = None) -> List[Dict[str, Any]]:
    """Convert a PyTorch execution trace (``host``) and/or a Kineto trace (``device``) to
    Chakra files ``out``.<rank>.et, as ``etkit convert pytorch --json``; returns its summary
    (one dict per rank converted: output, nodes, comp, comm_coll, warnings, ...)."""
    args = ["convert", "pytorch", "--json", "--quiet"] + options(host=host, device=device, rank=rank,
                                                              ranks=ranks, output=out)
    _, text, _ = check(args)
    return json.loads(text)


def models() -> List[Dict[str, Any]]:
    """The built-in model presets (``etkit models --json``): name, arch, layers, hidden, ...,
    params."""
    _, text, _ = check(["models", "--json"])
    return json.loads(text)["models"]


def _list(v: Any) -> Any:
    """A list or tuple as the comma-separated value the command takes (``--nodes 4,8``)."""
    return ",".join(str(x) for x in v) if isinstance(v, (list, tuple)) else v


def plan(model: Optional[str] = None, cluster: Union[str, Sequence[str], None] = None,
         nodes: Union[int, Sequence[int], None] = None, global_batch: Optional[int] = None,
         **flags: Any) -> PlanResult:
    """Search the parallel plans of a model on a cluster, as ``etkit plan``: the same defaults
    and options (``tp``, ``pp``, ... fix a choice; ``max_tp``, ``schedules``, ``zero_stages``,
    ``top``, ``rank_by``, ``gpu_hour_cost``, ``memory_margin``, ``jobs``, ``seq``, ``mode``, ...;
    ``etkit plan --help``; ``html="plan.html"`` writes the page too). ``cluster`` and ``nodes``
    may be lists (a sweep: ``cluster=["dgx-h100", "hgx-h200"], nodes=[4, 8]``). Returns the
    ``--json`` report, every candidate with its fate, as a :class:`PlanResult`; ``.best["flags"]``
    are the top plan's flags for :func:`run`. No plan simulated (none fits) raises Error."""
    args = ["plan"] + options(model=model, cluster=_list(cluster), nodes=_list(nodes),
                              global_batch=global_batch, **flags)
    _, out, err = check(args + ["--quiet", "--json", "-"])
    return PlanResult.from_json(out, err)


def report(result: Union[Result, PathLike], html: PathLike, timeline: Optional[PathLike] = None) -> str:
    """Write the HTML report of a Result (or of a run/sim JSON file) to ``html``, as
    ``etkit report``; returns the path."""
    import tempfile
    if isinstance(result, Result):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(json.dumps(result.to_dict()))
            src = f.name
        try:
            check(["report", src, "--html", os.fspath(html)] + options(timeline=timeline))
        finally:
            os.unlink(src)
    else:
        check(["report", os.fspath(result), "--html", os.fspath(html)] + options(timeline=timeline))
    return os.fspath(html)
