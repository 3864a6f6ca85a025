"""Algebraic simplification, as a table of rules.

Each rule maps an op name to a function ``rule(node, nodes)`` that returns a replacement
(an existing node id, a Literal, or a new node keeping the same id) or None. None of them
changes NaN/Inf behaviour: ``x * 0 -> 0`` is deliberately absent, since NaN * 0 and
Inf * 0 are NaN. One caveat is documented: ``x + 0 -> x`` keeps -0.0 where IEEE addition
would give +0.0 (they compare equal).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph.ir import Literal, Node, make_attrs, replace
from .record import Rewrite
from .rewrite import rewire


def _scalar_value(ref, nodes):
    """The scalar a Literal or a ``full`` node stands for, else None."""
    if isinstance(ref, Literal):
        return ref.value
    n = nodes.get(ref)
    if n is not None and n.op == "full":
        return n.attr["value"]
    return None


def _is(ref, nodes, value) -> bool:
    v = _scalar_value(ref, nodes)
    return v is not None and not isinstance(v, bool) and v == value


def _same_type(node: Node, ref, nodes) -> bool:
    """Replacing ``node`` by ``ref`` keeps its shape and dtype."""
    if not isinstance(ref, int):
        return False
    other = nodes[ref]
    return other.shape == node.shape and other.dtype == node.dtype


def _identity(value, side):
    """x OP value -> x (side "right"), value OP x -> x (side "left"), or either ("both")."""
    def rule(n, nodes):
        a, b = n.inputs
        if side in ("right", "both") and _is(b, nodes, value) and _same_type(n, a, nodes):
            return a
        if side in ("left", "both") and _is(a, nodes, value) and _same_type(n, b, nodes):
            return b
        return None
    return rule


def _add_zero(n, nodes):
    """x + 0 -> x, except where IEEE addition changes x: -0.0 + 0.0 is +0.0, so for
    floats only a -0.0 operand is an identity (x + -0.0 is x for every x)."""
    if n.dtype.kind not in "iub":
        a, b = n.inputs
        for ref, other in ((b, a), (a, b)):
            v = _scalar_value(ref, nodes)
            if v is not None and not isinstance(v, bool) and v == 0 and \
                    math.copysign(1.0, v) < 0 and _same_type(n, other, nodes):
                return other
        return None
    return _identity(0, "both")(n, nodes)


def _subtract_zero(n, nodes):
    """x - 0 -> x, except where IEEE subtraction changes x: x - (-0.0) is x + 0.0, which
    turns -0.0 into +0.0, so for floats only a +0.0 operand is an identity (fuzz
    1795535866-8265: ``z -= -0.0``)."""
    if n.dtype.kind not in "iub":
        a, b = n.inputs
        v = _scalar_value(b, nodes)
        if v is not None and not isinstance(v, bool) and v == 0 and \
                math.copysign(1.0, v) > 0 and _same_type(n, a, nodes):
            return a
        return None
    return _identity(0, "right")(n, nodes)


def _involution(n, nodes):
    (x,) = n.inputs
    inner = nodes.get(x)
    if inner is not None and inner.op == n.op:
        return inner.inputs[0]
    return None


def _permute_chain(n, nodes):
    (x,) = n.inputs
    axes = n.attr["axes"]
    if axes == tuple(range(len(axes))):
        return x
    inner = nodes.get(x)
    if inner is not None and inner.op == "permute_dims":
        inner_axes = inner.attr["axes"]
        composed = tuple(inner_axes[i] for i in axes)
        if composed == tuple(range(len(composed))):
            return inner.inputs[0]
        return replace(n, inputs=(inner.inputs[0],), attrs=make_attrs({"axes": composed}))
    return None


def _reshape_chain(n, nodes):
    (x,) = n.inputs
    src = nodes.get(x)
    if src is not None and src.shape == n.shape:
        return x
    if src is not None and src.op == "reshape":
        base = src.inputs[0]
        if isinstance(base, int) and nodes[base].shape == n.shape:
            return base
        return replace(n, inputs=(base,))
    return None


def _noop_if_same_type(n, nodes):
    (x,) = n.inputs[:1]
    return x if _same_type(n, x, nodes) else None


def _empty_reduction(n, nodes):
    return n.inputs[0] if n.attr.get("axis") == () and _same_type(n, n.inputs[0], nodes) else None


def _square(n, nodes):
    a, b = n.inputs
    v = _scalar_value(b, nodes)
    if isinstance(v, int | float) and not isinstance(v, bool) and nodes[a].dtype.kind == "f":
        if v == 1 and _same_type(n, a, nodes):
            return a
        if v == 2 and n.dtype == nodes[a].dtype:
            return replace(n, op="square", inputs=(a,), attrs=())
    return None


def _scalar_operand(n, nodes):
    """A uniform constant operand of the node's dtype becomes a Literal (a broadcast of a
    scalar constant needs no buffer): ``multiply %3 %9(full 0.5)`` -> ``multiply %3 0.5``."""
    changed = False
    new_inputs = []
    for k, ref in enumerate(n.inputs):
        src = nodes.get(ref) if isinstance(ref, int) else None
        others = [nodes[i] for j, i in enumerate(n.inputs) if j != k and isinstance(i, int)]
        if (src is not None and src.op == "full" and others
                and all(o.dtype == src.dtype for o in others)
                and any(o.shape == n.shape for o in others)
                and not isinstance(src.attr["value"], bool)):
            new_inputs.append(Literal(src.attr["value"]))
            changed = True
        else:
            new_inputs.append(ref)
    if changed and not any(isinstance(i, int) for i in new_inputs):
        # Every operand was a constant (add(%full, %full)): one stays a tensor, which
        # carries the node's shape and dtype.
        keep = next(k for k, ref in enumerate(n.inputs) if nodes[ref].shape == n.shape)
        new_inputs[keep] = n.inputs[keep]
        changed = any(isinstance(i, Literal) and not isinstance(r, Literal)
                      for i, r in zip(new_inputs, n.inputs))
    return replace(n, inputs=tuple(new_inputs)) if changed else None


RULES = {
    "multiply": [_identity(1, "both"), _scalar_operand],
    "add": [_add_zero, _scalar_operand],
    "subtract": [_subtract_zero, _scalar_operand],
    "divide": [_identity(1, "right"), _scalar_operand],
    "maximum": [_scalar_operand],
    "minimum": [_scalar_operand],
    "power": [_square],
    "negative": [_involution],
    "logical_not": [_involution],
    "permute_dims": [_permute_chain],
    "reshape": [_reshape_chain],
    "broadcast_to": [_noop_if_same_type],
    "copy": [_noop_if_same_type],
    "cast": [_noop_if_same_type],
    "sum": [_empty_reduction],
    "prod": [_empty_reduction],
    "max": [_empty_reduction],
    "min": [_empty_reduction],
}


def simplify(graph):
    nodes = {n.id: n for n in graph.nodes}
    mapping: dict = {}
    rewrites: list[Rewrite] = []
    out = []
    for n in graph.nodes:
        n = _with_mapping(n, mapping)
        for rule in RULES.get(n.op, ()):
            result = rule(n, nodes)
            if result is None:
                continue
            if isinstance(result, Node):
                rewrites.append(Rewrite(
                    f"simplified %{n.id} = {n.op} -> {result.op} "
                    + " ".join(_text(i) for i in result.inputs), (n.id,) + result.node_inputs,
                    "simplify"))
                n = result
                continue
            mapping[n.id] = result
            rewrites.append(Rewrite(f"simplified %{n.id} = {_describe(n)} -> {_text(result)}",
                                    (n.id,) + ((result,) if isinstance(result, int) else ()),
                                    "simplify"))
            n = None
            break
        if n is not None:
            nodes[n.id] = n
            out.append(n)
    merged = {k: v for k, v in mapping.items() if isinstance(v, int)}
    g = rewire(graph.copy(nodes=out), mapping)
    return g, rewrites, merged, {}


def _with_mapping(n: Node, mapping: dict) -> Node:
    if not mapping or not any(isinstance(i, int) and i in mapping for i in n.inputs):
        return n
    return replace(n, inputs=tuple(mapping.get(i, i) if isinstance(i, int) else i
                                   for i in n.inputs))


def _text(ref) -> str:
    return f"%{ref}" if isinstance(ref, int) else str(ref)


def _describe(n: Node) -> str:
    return f"{n.op} " + " ".join(_text(i) for i in n.inputs)


__all__ = ["RULES", "simplify", "np"]
