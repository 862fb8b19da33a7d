"""PlanResult: the report of ``etkit plan --json`` as a Python object (docs/plan.md "Output"),
built from the same JSON document, so the two never disagree."""
from __future__ import annotations

import html
from typing import Any, Dict, List, Optional

from .result import JsonDoc


class PlanResult(JsonDoc):
    """A plan search. Every top-level field of ``etkit plan --json`` is an attribute: ``model``,
    ``mode``, ``global_batch``, ``rank_by``, ``top``, ``memory_margin``, ``clusters`` (list of
    dicts: cluster, gpus, gpu_hour_usd), ``counts`` (dict: candidates, invalid, memory,
    dominated, bound, simulated, failed). ``plans`` lists every candidate (dicts: cluster, index, status, rank,
    tp, cp, pp, ..., flags, mem_bytes, step_ns / mfu / tokens_per_s when simulated, reason when
    pruned; ``pandas.DataFrame(p.plans)`` makes a table), ``ranked`` the simulated ones best
    first and ``best`` the first of them (its ``flags`` paste into ``etkit run``)."""

    @property
    def plans(self) -> List[Dict[str, Any]]:
        """Every candidate, simulated or pruned, in the JSON's order (cluster, index)."""
        return [dict(p) for p in self._doc.get("plans", [])]

    @property
    def ranked(self) -> List[Dict[str, Any]]:
        """The simulated plans, best first (by ``rank``, 1 is the best)."""
        return sorted((dict(p) for p in self._doc.get("plans", []) if p.get("status") == "simulated"),
                      key=lambda p: p["rank"])

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        """The top-ranked plan, or None when none was simulated."""
        r = self.ranked
        return r[0] if r else None

    def __repr__(self) -> str:
        b = self.best
        c = self._doc.get("counts", {})
        head = (f"<etkit.PlanResult {self._doc.get('model')}: {c.get('candidates')} candidates, "
                f"{c.get('simulated')} simulated")
        if b is None:
            return head + ">"
        return head + f"; best {b['step_ns'] / 1e6:.3f} ms: {b['flags']}>"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{p['rank']}</td><td>{html.escape(p['cluster'])}</td><td>{p['step_ns'] / 1e6:.3f}</td>"
            f"<td>{p['tokens_per_s']:.0f}</td><td>{100 * p['mfu']:.1f}</td>"
            f"<td>{p['mem_bytes'] / 2 ** 30:.2f}</td><td><code>{html.escape(p['flags'])}</code></td></tr>"
            for p in self.ranked[: int(self._doc.get("top", 10))])
        return ("<table><tr><th>rank</th><th>cluster</th><th>step ms</th><th>tokens/s</th><th>MFU %</th>"
                "<th>mem GiB</th><th>etkit run flags</th></tr>" + rows + "</table>")
