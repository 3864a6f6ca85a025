"""The graph IR: SSA nodes in topological order, readable as text, storable as JSON.

A :class:`Graph` has input nodes (function arguments and captured tensors), op nodes,
outputs, and assign nodes (in-place updates of inputs, applied at the end). Nodes are
immutable; passes build new graphs and keep node ids stable, so that "CSE: %7 is %4" means
the same %7 and %4 in the snapshots before and after.

The text form follows jaxprs: captures, then ``;``, then arguments, then one node per line
with its type inline and its source line as a trailing comment::

    { lambda %0:f32[3,3] ; %1:f32[4,3] .
      let %2:f32[4,3] = matmul %1 %0          # train.py:12 in step
          %3:f32[4,3] = maximum %2 0          # train.py:13 in step  [relu]
      in ( %3 ) }
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from ..dtypes import from_short_name, short_name, type_text
from ..source import SourceLocation

INPUT = "input"
FUSED = "fused"
ASSIGN = "assign"


class Literal(NamedTuple):
    """A Python scalar operand, weakly typed as in NumPy (``x * 0.5`` stays f32)."""

    value: Any

    def __str__(self) -> str:
        v = self.value
        if isinstance(v, float):
            return repr(v) if not np.isnan(v) else "nan"
        return repr(v)


@dataclass(frozen=True, eq=False)  # identity equality: attrs may hold arrays
class Node:
    """One SSA value. ``inputs`` holds node ids (ints) and Literals.

    A fused node (``op == "fused"``) keeps the nodes it replaced, in order, in ``body``;
    their inputs refer to each other or to the fused node's own ``inputs`` by id.
    """

    id: int
    op: str
    inputs: tuple = ()
    attrs: tuple = ()          # sorted (name, value) pairs, hashable
    shape: tuple = ()
    dtype: np.dtype = np.dtype("float32")
    device: str = "cpu"
    scope: str = ""
    loc: SourceLocation | None = None
    body: tuple = ()           # fused nodes: the member nodes, in order
    label: str = ""            # input nodes: "arg 0", "w", "fc1.weight"; fused: "k0"

    @property
    def attr(self) -> dict:
        return dict(self.attrs)

    @cached_property  # read by every pass and verification: computed once per node
    def node_inputs(self) -> tuple:
        return tuple(i for i in self.inputs if isinstance(i, int))

    @cached_property  # memory planning reads it per candidate buffer: np.prod is slow
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def member_ids(self) -> tuple:
        return tuple(n.id for n in self.body)

    def type_str(self) -> str:
        return type_text(self.shape, self.dtype)


def make_attrs(attrs: dict) -> tuple:
    return tuple(sorted(attrs.items()))


@dataclass
class Graph:
    """A traced function segment. ``inputs`` lists input node ids: the arguments, then the
    captures in the order the function first read them (each input node's ``kind`` attr
    says which; the text form prints the captures first, before the ``;``, as jaxprs do)."""

    name: str
    nodes: list[Node] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    # Results of analyses that do not change nodes (the memory plan), keyed by name.
    meta: dict = field(default_factory=dict)

    # --- access ------------------------------------------------------------------------
    def node_map(self) -> dict[int, Node]:
        return {n.id: n for n in self.nodes}

    def node(self, node_id: int) -> Node:
        # From the end: a tracer asks for nodes it has just made.
        for n in reversed(self.nodes):
            if n.id == node_id:
                return n
        raise KeyError(f"%{node_id} is not in graph {self.name}")

    @property
    def input_nodes(self) -> list[Node]:
        m = self.node_map()
        return [m[i] for i in self.inputs]

    @property
    def op_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.op != INPUT]

    @property
    def assigns(self) -> list[Node]:
        return [n for n in self.nodes if n.op == ASSIGN]

    def max_id(self) -> int:
        ids = [n.id for n in self.nodes]
        for n in self.nodes:
            ids.extend(m.id for m in n.body)
        return max(ids, default=-1)

    def users(self) -> dict[int, list[int]]:
        """node id -> ids of the nodes that read it (in order)."""
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.node_inputs:
                out.setdefault(i, []).append(n.id)
        return out

    def copy(self, **changes) -> Graph:
        g = Graph(self.name, list(self.nodes), list(self.inputs), list(self.outputs),
                  dict(self.meta))
        for k, v in changes.items():
            setattr(g, k, v)
        return g

    def __str__(self) -> str:
        return format_graph(self)

    # --- JSON --------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "name": self.name,
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "nodes": [_node_to_json(n) for n in self.nodes],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def from_json(cls, data: dict) -> Graph:
        return cls(
            name=data["name"],
            nodes=[_node_from_json(n) for n in data["nodes"]],
            inputs=list(data["inputs"]),
            outputs=list(data["outputs"]),
        )

    # --- structural hash ---------------------------------------------------------------
    def structural_hash(self) -> str:
        """Equal for graphs that compute the same thing the same way, whatever their ids,
        source lines or input labels (used to cache compiled segments)."""
        renumber: dict[int, int] = {}
        parts = []
        for n in self.nodes:
            renumber[n.id] = len(renumber)
            parts.append(_canonical(n, renumber))
        parts.append("in:" + ",".join(str(renumber[i]) for i in self.inputs))
        parts.append("out:" + ",".join(str(renumber[i]) for i in self.outputs))
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _canonical(n: Node, renumber: dict) -> str:
    ins = ",".join(f"%{renumber[i]}" if isinstance(i, int) else f"lit{i.value!r}"
                   for i in n.inputs)
    body = ""
    if n.body:
        inner = dict(renumber)
        body_parts = []
        for m in n.body:
            inner[m.id] = len(inner)
            body_parts.append(_canonical(m, inner))
        body = "{" + ";".join(body_parts) + "}"
    return f"{n.op}|{ins}|{_attrs_text(n.attrs, canonical=True)}|{n.type_str()}|{n.device}{body}"


# --- text form ------------------------------------------------------------------------

def _value_text(v) -> str:
    if isinstance(v, np.ndarray):
        if v.size <= 6:
            return np.array2string(v, separator=",").replace("\n", "")
        return f"<{type_text(v.shape, v.dtype)} array>"
    if isinstance(v, np.dtype):
        return short_name(v)
    if isinstance(v, float):
        return repr(v)
    return repr(v) if isinstance(v, str) else str(v)


def _attrs_text(attrs, canonical: bool = False) -> str:
    if not attrs:
        return ""
    items = []
    for k, v in attrs:
        if k == "device" and not canonical:
            continue
        if k == "index":
            from ..ops.movement import format_index

            items.append(f"index={format_index(v)}")
            continue
        if canonical and isinstance(v, np.ndarray):
            v = hashlib.sha256(v.tobytes() + str(v.dtype).encode()).hexdigest()[:16]
        items.append(f"{k}={_value_text(v)}")
    return "[" + ", ".join(items) + "]" if items else ""


def _operand(i) -> str:
    return f"%{i}" if isinstance(i, int) else str(i)


def format_node(n: Node, loc_width: int = 0) -> str:
    rhs = f"{n.op}{_attrs_text(n.attrs)}"
    if n.op == FUSED:
        rhs = f"fused[{n.label}: {' '.join(m.op for m in n.body)}]"
    if n.inputs:
        rhs += " " + " ".join(_operand(i) for i in n.inputs)
    line = f"%{n.id}:{n.type_str()} = {rhs}"
    comment = []
    if n.loc is not None:
        comment.append(f"{os.path.basename(n.loc.filename)}:{n.loc.lineno} in {n.loc.function}")
    if n.scope:
        comment.append(f"[{n.scope}]")
    if comment:
        line = line.ljust(loc_width) + "  # " + "  ".join(comment)
    return line


def format_graph(g: Graph, fused_bodies: bool = True) -> str:
    m = g.node_map()
    ins = [m[i] for i in g.inputs]
    captures = [n for n in ins if n.attr.get("kind") == "capture"]
    args = [n for n in ins if n.attr.get("kind") != "capture"]

    def decl(n: Node) -> str:
        return f"%{n.id}:{n.type_str()}"

    head = "{ lambda "
    if captures:
        head += " ".join(decl(n) for n in captures) + " ; "
    head += " ".join(decl(n) for n in args) + " ."
    lines = [head]
    body_nodes = [n for n in g.nodes if n.op != INPUT]
    width = max((len(format_node(n)) for n in body_nodes), default=0)
    width = min(width, 60)
    for k, n in enumerate(body_nodes):
        prefix = "  let " if k == 0 else "      "
        lines.append(prefix + format_node(n, width))
        if n.op == FUSED and fused_bodies:
            for b in n.body:
                lines.append("        | " + format_node(b, width - 4))
    outs = " ".join(f"%{i}" for i in g.outputs)
    lines.append(f"  in ( {outs} ) }}")
    labels = [f"%{n.id}={n.label}" for n in ins if n.label]
    if labels:
        lines.append("  # inputs: " + ", ".join(labels))
    return "\n".join(lines)


# --- JSON helpers ---------------------------------------------------------------------

def _encode_value(v):
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "c":  # JSON has no complex numbers: [real, imag] pairs
            return {"__array__": np.stack([v.real, v.imag], axis=-1).tolist(),
                    "dtype": short_name(v.dtype), "shape": list(v.shape)}
        return {"__array__": v.tolist(), "dtype": short_name(v.dtype), "shape": list(v.shape)}
    if isinstance(v, complex):
        return {"__complex__": [_encode_value(v.real), _encode_value(v.imag)]}
    if isinstance(v, np.dtype):
        return {"__dtype__": short_name(v)}
    if isinstance(v, tuple):
        return {"__tuple__": [_encode_value(x) for x in v]}
    if isinstance(v, float) and not np.isfinite(v):
        return {"__float__": repr(v)}
    return v


def _decode_value(v):
    if isinstance(v, dict):
        if "__array__" in v:
            dtype = from_short_name(v["dtype"])
            if dtype.kind == "c":
                pairs = np.array(v["__array__"], dtype=np.float64).reshape(
                    (*v["shape"], 2))
                out = np.empty(tuple(v["shape"]), dtype)
                out.real, out.imag = pairs[..., 0], pairs[..., 1]  # inf parts stay apart
                return out
            return np.array(v["__array__"], dtype=dtype).reshape(v["shape"])
        if "__complex__" in v:
            real, imag = (_decode_value(x) for x in v["__complex__"])
            return complex(real, imag)
        if "__dtype__" in v:
            return from_short_name(v["__dtype__"])
        if "__tuple__" in v:
            return tuple(_decode_value(x) for x in v["__tuple__"])
        if "__float__" in v:
            return float(v["__float__"])
    if isinstance(v, list):
        return tuple(_decode_value(x) for x in v)
    return v


def _node_to_json(n: Node) -> dict:
    out = {
        "id": n.id,
        "op": n.op,
        "inputs": [i if isinstance(i, int) else {"literal": _encode_value(i.value)}
                   for i in n.inputs],
        "attrs": [[k, _encode_value(v)] for k, v in n.attrs],
        "shape": list(n.shape),
        "dtype": short_name(n.dtype),
        "device": n.device,
    }
    if n.scope:
        out["scope"] = n.scope
    if n.loc is not None:
        out["loc"] = n.loc.to_json()
    if n.body:
        out["body"] = [_node_to_json(m) for m in n.body]
    if n.label:
        out["label"] = n.label
    return out


def _node_from_json(d: dict) -> Node:
    return Node(
        id=int(d["id"]),
        op=str(d["op"]),
        inputs=tuple(i if isinstance(i, int) else Literal(_decode_value(i["literal"]))
                     for i in d["inputs"]),
        attrs=tuple((k, _decode_value(v)) for k, v in d["attrs"]),
        shape=tuple(d["shape"]),
        dtype=from_short_name(d["dtype"]),
        device=d.get("device", "cpu"),
        scope=d.get("scope", ""),
        loc=SourceLocation(**d["loc"]) if "loc" in d else None,
        body=tuple(_node_from_json(m) for m in d.get("body", ())),
        label=d.get("label", ""),
    )


__all__ = ["ASSIGN", "FUSED", "INPUT", "Graph", "Literal", "Node", "format_graph",
           "format_node", "make_attrs", "replace"]
