"""Algebraic simplification, as a table of rules.

Each rule maps an op name to a function ``rule(node, nodes)`` that returns a replacement
(an existing node id, a Literal, or a new node keeping the same id) or None. None of them
changes NaN/Inf behaviour: ``x * 0 -> 0`` is deliberately absent, since NaN * 0 and
Inf * 0 are NaN. One caveat is documented: ``x + 0 -> x`` keeps -0.0 where IEEE addition
would give +0.0 (they compare equal).

One rule looks past its node: ``(A @ B)^T -> B^T @ A^T`` (:func:`turn_transposed_products`),
for a product read only through its transpose. Backward makes those: the gradient of
``x @ w.T`` with respect to ``w`` is the transpose of ``x^T @ g``, so the optimizer's
update ``w - lr * grad`` would read a (256, 512) gradient across its rows, a strided
gather at every element (a third of the non-BLAS time of an MLP training step). Turned
round, the product is ``g^T @ x``, contiguous where the update reads it, at no cost.
"""

from __future__ import annotations

import math

import numpy as np

from ..graph.ir import Literal, Node, make_attrs, replace
from ..matmul_bits import turned_same_bits
from .record import Rewrite
from .rewrite import rewire
from .slice_sums import merge_slice_sums


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


def _empty_sum(n, nodes):
    """A sum over no axes is its input for integers; a float's or a complex's adds the
    identity 0.0 (NumPy's reduce does), which turns -0.0 into +0.0: not the input."""
    x = n.inputs[0]
    return _empty_reduction(n, nodes) if isinstance(x, int) and nodes[x].dtype.kind in "biu" \
        else None


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
    "sum": [_empty_sum],
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
    g, turned = turn_transposed_products(g)
    g, placed = merge_slice_sums(g)
    return g, rewrites + turned + placed, merged, {}


def turn_transposed_products(graph):
    """``%t = permute_dims[(1, 0)] %p`` with ``%p = matmul A B`` (2-D, CPU, read by
    nothing else) becomes ``%t = matmul B^T A^T``: an operand that is itself a transpose
    gives back its input, another gets a new ``permute_dims`` view node. Only where
    NumPy's matmul gives the turned product eager's bits (execmode/matmul_bits.py); the
    old product is left for dead-code elimination. Returns (graph, rewrites)."""
    nodes = {n.id: n for n in graph.nodes}
    users = graph.users()
    outputs = set(graph.outputs)
    fresh = graph.max_id() + 1
    out, rewrites = [], []
    for n in graph.nodes:
        product = _transposed_product(n, nodes, users, outputs)
        if product is None:
            out.append(n)
            continue
        a, b = (nodes[i] for i in product.inputs)
        operands = []
        for operand in (b, a):
            if _is_transpose(operand):
                operands.append(operand.inputs[0])
                continue
            view = Node(fresh, "permute_dims", (operand.id,), make_attrs({"axes": (1, 0)}),
                        operand.shape[::-1], operand.dtype, operand.device, n.scope, n.loc)
            fresh += 1
            out.append(view)
            nodes[view.id] = view
            operands.append(view.id)
        turned = replace(n, op="matmul", inputs=tuple(operands), attrs=())
        nodes[n.id] = turned
        out.append(turned)
        rewrites.append(Rewrite(
            f"simplified %{n.id} = permute_dims %{product.id} -> matmul "
            f"%{operands[0]} %{operands[1]} (the product turned round: (A @ B)^T = B^T @ A^T)",
            (n.id, product.id) + tuple(operands), "simplify"))
    if not rewrites:
        return graph, []
    return graph.copy(nodes=out), rewrites


def _is_transpose(n: Node) -> bool:
    return n.op == "permute_dims" and n.attr["axes"] == (1, 0)


def _transposed_product(n: Node, nodes, users, outputs):
    """The matmul ``n`` transposes, when turning it round is allowed, else None."""
    if not _is_transpose(n) or not isinstance(n.inputs[0], int):
        return None
    product = nodes.get(n.inputs[0])
    if product is None or product.op != "matmul" or str(product.device) != "cpu":
        return None
    if users.get(product.id) != [n.id] or product.id in outputs:
        return None
    if not all(isinstance(i, int) for i in product.inputs):
        return None
    a, b = (nodes[i] for i in product.inputs)
    if len(a.shape) != 2 or len(b.shape) != 2 or product.dtype.kind not in "fiu":
        return None
    if not turned_same_bits(np.dtype(product.dtype).str, a.shape[0], a.shape[1], b.shape[1],
                            _is_transpose(a), _is_transpose(b)):
        return None
    return product


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
