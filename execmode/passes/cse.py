"""Common subexpression elimination: one node per distinct (op, operands, attrs, type).

Impure nodes (random numbers), assigns and inputs are never merged.
"""

from __future__ import annotations

from ..graph.ir import ASSIGN, FUSED, INPUT, Graph
from ..ops import OPS
from .record import Rewrite
from .rewrite import attr_key, operand_key, rewire


def eliminate_common_subexpressions(graph: Graph):
    seen: dict = {}
    mapping: dict[int, int] = {}
    rewrites: list[Rewrite] = []
    out = []
    for n in graph.nodes:
        if n.op in (INPUT, ASSIGN, FUSED) or (n.op in OPS and OPS[n.op].impure):
            out.append(n)
            continue
        inputs = tuple(operand_key(mapping.get(i, i) if isinstance(i, int) else i)
                       for i in n.inputs)
        key = (n.op, inputs, attr_key(n.attrs), n.shape, n.dtype.str, n.device)
        first = seen.get(key)
        if first is None:
            seen[key] = n.id
            out.append(n)
        else:
            mapping[n.id] = first
            rewrites.append(Rewrite(f"CSE: %{n.id} is %{first} ({n.op})", (n.id, first), "cse"))
    return rewire(graph.copy(nodes=out), mapping), rewrites, dict(mapping), {}
