"""Helpers shared by the passes: rewiring uses, constants, hashable keys."""

from __future__ import annotations

import numpy as np

from ..graph.ir import Graph, Literal, Node, replace


def rewire(graph: Graph, mapping: dict) -> Graph:
    """Replace uses of node ids by other operands (ids or Literals) everywhere: node
    inputs, fused bodies and graph outputs. Chains (a -> b -> c) resolve to the end."""
    if not mapping:
        return graph

    def resolve(ref):
        seen = 0
        while isinstance(ref, int) and ref in mapping and seen < 1000:
            ref = mapping[ref]
            seen += 1
        return ref

    def fix(node: Node) -> Node:
        new_inputs = tuple(resolve(i) for i in node.inputs)
        body = tuple(fix(m) for m in node.body) if node.body else node.body
        if new_inputs == node.inputs and body == node.body:
            return node
        return replace(node, inputs=new_inputs, body=body)

    g = graph.copy()
    g.nodes = [fix(n) for n in graph.nodes]
    outputs = []
    for o in graph.outputs:
        r = resolve(o)
        if not isinstance(r, int):
            raise ValueError("a graph output cannot become a literal")
        outputs.append(r)
    g.outputs = outputs
    return g


def attr_key(attrs: tuple):
    """A hashable form of attributes (arrays by content; numbers by type and repr, since
    0.0 == -0.0 and 1 == 1.0 are different values to a kernel)."""
    out = []
    for k, v in attrs:
        if isinstance(v, np.ndarray):
            v = ("array", v.dtype.str, v.shape, v.tobytes())
        elif isinstance(v, np.dtype):
            v = ("dtype", v.str)
        elif isinstance(v, float | int | complex | np.generic):
            v = ("number", type(v).__name__, repr(v))
        out.append((k, v))
    return tuple(out)


def operand_key(ref):
    if isinstance(ref, Literal):
        v = ref.value
        return ("lit", type(v).__name__, repr(v))
    return ref


def describe_operand(ref, nodes: dict) -> str:
    if isinstance(ref, Literal):
        return str(ref)
    n = nodes.get(ref)
    if n is not None and n.op == "full":
        return f"%{ref}={n.attr['value']!r}"
    return f"%{ref}"
