"""Result: the report of ``etkit run`` / ``etkit sim`` as a Python object, built from the same
JSON document the command prints with ``--json`` (docs/sim.md "Machine-readable reports"), so
the two never disagree."""
from __future__ import annotations

import html
import json
from typing import Any, Dict, Iterator, List, Type, TypeVar


D = TypeVar("D", bound="JsonDoc")


class JsonDoc:
    """A command's JSON document as an object: its top-level fields are attributes; ``warnings``
    holds the lines the command printed on stderr, ``json_text`` the document as printed."""

    def __init__(self, doc: Dict[str, Any], warnings: str = "", text: str = ""):
        self._doc = doc
        self.warnings: List[str] = [l for l in warnings.splitlines() if l.strip()]
        self.json_text = text

    @classmethod
    def from_json(cls: Type[D], text: str, warnings: str = "") -> D:
        """An object from the JSON text the command printed."""
        return cls(json.loads(text), warnings, text)

    def __getattr__(self, name: str) -> Any:
        doc = self.__dict__.get("_doc")
        if doc is not None and name in doc:
            return doc[name]
        raise AttributeError(f"etkit.{type(self).__name__} has no field '{name}' (fields: {', '.join(sorted(doc or {}))})")

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._doc))

    def to_dict(self) -> Dict[str, Any]:
        """The whole JSON report as a dict (a deep copy)."""
        return json.loads(json.dumps(self._doc))

    def keys(self) -> Iterator[str]:
        return iter(self._doc)


class Result(JsonDoc):
    """One simulated step. Every top-level field of the JSON report is an attribute, with the
    report's name and unit: ``step_ns``, ``mfu``, ``tflops_per_gpu``, ``tokens_per_s``,
    ``n_ranks``, ``plan`` (dict), ``cluster`` (dict), ``memory`` (dict), ``ttft_ns`` /
    ``inference`` (dict: ttft_ns, tpot_ns, phase_end_ns, ...) for inference, ... ``per_rank`` and ``collectives`` are lists of dicts (one per
    rank / per collective type and group; ``pandas.DataFrame(r.per_rank)`` makes a table).
    ``warnings`` holds the lines the command printed on stderr."""

    @property
    def per_rank(self) -> List[Dict[str, Any]]:
        """One dict per rank: rank, finish_ns, compute_ns, exposed_comm_ns, overlapped_comm_ns,
        cpu_ns, idle_ns, flops, comm_bytes, nodes, mem_peak_bytes."""
        return [dict(r) for r in self._doc.get("ranks", [])]

    @property
    def collectives(self) -> List[Dict[str, Any]]:
        """One dict per collective type and group: type, group, group_size, n_groups, count,
        bytes, time_ns, algbw_GBps, busbw_GBps."""
        return [dict(c) for c in self._doc.get("communication", [])]

    @property
    def step_s(self) -> float:
        """The step time in seconds (step_ns / 1e9)."""
        return self._doc["step_ns"] / 1e9

    def __repr__(self) -> str:
        d = self._doc
        parts = [f"step {d.get('step_ns', 0) / 1e6:.3f} ms"]
        if d.get("mfu"):
            parts.append(f"MFU {d['mfu'] * 100:.1f}%")
        if d.get("tokens_per_s"):
            parts.append(f"{d['tokens_per_s']:.0f} tokens/s")
        inf = d.get("inference")
        if isinstance(inf, dict) and inf.get("ttft_ns"):
            parts.append(f"TTFT {inf['ttft_ns'] / 1e6:.3f} ms, TPOT {inf.get('tpot_ns', 0) / 1e6:.3f} ms")
        return f"<etkit.Result {d.get('workload', '')!r}: {', '.join(parts)}>"

    def _repr_html_(self) -> str:
        d = self._doc
        e = html.escape
        rows = [("workload", d.get("workload", "")), ("step", f"{d.get('step_ns', 0) / 1e6:.3f} ms")]
        for k, label, f in (("tflops_per_gpu", "TFLOP/s per GPU", "{:.1f}"), ("mfu", "MFU", "{:.2%}"),
                            ("tokens_per_s", "tokens/s", "{:,.0f}")):
            if d.get(k):
                rows.append((label, f.format(d[k])))
        inf = d.get("inference")
        if isinstance(inf, dict):
            rows.append(("TTFT", f"{inf.get('ttft_ns', 0) / 1e6:.3f} ms"))
            rows.append(("TPOT", f"{inf.get('tpot_ns', 0) / 1e6:.3f} ms"))
        mem = d.get("memory") or {}
        if mem.get("peak_bytes"):
            rows.append(("memory peak", f"{mem['peak_bytes'] / 2**30:.2f} GiB (rank {mem.get('peak_rank', 0)})"))
        out = ["<table>"] + [f"<tr><th style='text-align:left'>{e(str(k))}</th><td style='text-align:left'>"
                             f"{e(str(v))}</td></tr>" for k, v in rows] + ["</table>"]
        colls = d.get("communication") or []
        if colls:
            out.append("<table><tr><th>type</th><th>group</th><th>size</th><th>count</th>"
                       "<th>bytes</th><th>time (ms)</th><th>busbw (GB/s)</th></tr>")
            for c in colls:
                out.append(f"<tr><td>{e(str(c['type']))}</td><td>{e(str(c['group']))}</td>"
                           f"<td>{c['group_size']}</td><td>{c['count']}</td><td>{c['bytes']}</td>"
                           f"<td>{c['time_ns'] / 1e6:.3f}</td><td>{c['busbw_GBps']:.1f}</td></tr>")
            out.append("</table>")
        return "\n".join(out)
