"""read_trace: the nodes of a Chakra trace (.et, plain or gzip) with their attributes, read by
the library (``etkit json``'s lossless form, docs/json.md)."""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Iterator, List

from ._native import check


class Node:
    """One trace node: ``id``, ``name``, ``type`` (e.g. "COMP_NODE"), ``data_deps``,
    ``ctrl_deps``, ``duration_micros`` and the other fields of the lossless JSON form, plus
    ``attrs`` (attribute name -> value; ``node.num_ops`` reads one too) and ``attr_kinds``
    (attribute name -> protobuf kind, e.g. "int64_val")."""

    __slots__ = ("_d", "attrs", "attr_kinds")

    def __init__(self, d: Dict[str, Any]):
        self._d = d
        self.attrs: Dict[str, Any] = {a["name"]: a.get("value") for a in d.get("attr", [])}
        self.attr_kinds: Dict[str, str] = {a["name"]: a.get("kind", "") for a in d.get("attr", [])}

    def __getattr__(self, name: str) -> Any:
        d = object.__getattribute__(self, "_d")
        if name in d:
            return d[name]
        attrs = object.__getattribute__(self, "attrs")
        if name in attrs:
            return attrs[name]
        if name in ("data_deps", "ctrl_deps"):
            return []
        raise AttributeError(f"node {d.get('id')} has no field or attribute '{name}'")

    def to_dict(self) -> Dict[str, Any]:
        """The node's lossless JSON form."""
        return dict(self._d)

    def __repr__(self) -> str:
        return f"<etkit.Node {self._d.get('id')} {self._d.get('type', '')} {self._d.get('name', '')!r}>"


class Trace:
    """A whole trace: ``metadata`` (dict), ``nodes`` (list of Node); iterating gives the
    nodes in file order, ``len()`` their count."""

    def __init__(self, doc: Dict[str, Any]):
        self.metadata: Dict[str, Any] = doc.get("metadata") or {}
        self.nodes: List[Node] = [Node(n) for n in doc.get("nodes", [])]

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)


def read_trace(path: str) -> Trace:
    """Read one Chakra trace file; raises etkit.Error naming the file on a bad one."""
    with tempfile.TemporaryDirectory(prefix="etkit-") as d:
        out = os.path.join(d, "trace.json")
        check(["json", "--quiet", os.fspath(path), "-o", out])
        with open(out, encoding="utf-8") as f:
            return Trace(json.load(f))
