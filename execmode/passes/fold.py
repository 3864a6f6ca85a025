"""Constant folding: evaluate nodes whose inputs are all constants created in the trace.

Only values built inside the trace from literals are constants (``full``, ``constant``,
``arange``, ``linspace``, ``eye`` and what is folded from them). Captured tensors (weights)
are graph inputs, read at every call, and are never folded. Random ops are impure and never
folded. A uniform value stays a ``full`` node whatever its size; other folded values are
kept only up to FOLD_LIMIT elements, so folding never bloats the graph. A node whose
shape or attributes hold a symbolic size is never folded (its value depends on the call).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph.interpret import Interpreter
from ..graph.ir import ASSIGN, FUSED, INPUT, Graph, Node, make_attrs, replace
from ..ops import OPS
from ..ops.registry import CREATION
from ..symbolic_sizes import has_symbolic
from .record import Rewrite
from .rewrite import describe_operand

CONSTANT_OPS = {"constant", "full", "arange", "linspace", "eye"}
FOLD_LIMIT = 4096
_SHAPE_ONLY = {"reshape", "broadcast_to", "permute_dims"}


def fold_constants(graph: Graph):
    nodes = {n.id: n for n in graph.nodes}
    # Folded values are NumPy arrays kept in the graph, whatever the node's device.
    folder = Interpreter(graph, xp=np)
    rewrites: list[Rewrite] = []
    out = []
    for n in graph.nodes:
        folded = _fold(n, nodes, folder)
        if folded is not None:
            rewrites.append(Rewrite(
                f"folded %{n.id} = {n.op} "
                + " ".join(describe_operand(i, nodes) for i in n.inputs)
                + f" -> {_describe_value(folded)}",
                (n.id,) + n.node_inputs, "fold"))
            n = folded
            nodes[n.id] = n
        out.append(n)
    g = graph.copy(nodes=out)
    return g, rewrites, {}, {}


def _fold(n: Node, nodes: dict, folder: Interpreter) -> Node | None:
    try:
        return _folded(n, nodes, folder)
    except Exception:
        # Values the op refuses (an integer to a negative power, an index out of range):
        # not folded, so the step raises eager's error, naming the op, when it runs.
        return None


def _folded(n: Node, nodes: dict, folder: Interpreter) -> Node | None:
    if n.op in (INPUT, ASSIGN, FUSED) or n.op in CONSTANT_OPS:
        return None
    if has_symbolic(n.shape) or has_symbolic(n.attrs):
        # A size that is symbolic (symbolic_sizes.py): an array folded at the traced size
        # would be wrong at every other one; it is computed at each call instead.
        return None
    op = OPS.get(n.op)
    if op is None or op.impure or op.data_dependent_shape or op.kind == CREATION:
        return None
    if n.op in ("to_device", "debug_print"):
        return None
    producers = [nodes[i] for i in n.node_inputs]
    if not producers or not all(p.op in CONSTANT_OPS for p in producers):
        return None
    if any(has_symbolic(p.shape) or has_symbolic(p.attrs) for p in producers):
        return None  # a constant of a symbolic size (eye's k = t // 2): as above
    if all(p.op == "full" for p in producers) and (op.is_elementwise or n.op in _SHAPE_ONLY):
        # A uniform value stays uniform: compute one element exactly as the op would.
        ones = {p.id: np.full((1,), p.attr["value"], dtype=p.dtype) for p in producers}
        if n.op in _SHAPE_ONLY:
            value = ones[n.node_inputs[0]]
        else:
            value = np.asarray(folder.run_node(n, ones)).astype(n.dtype)
        return _full_node(n, value.reshape(-1)[0].item())
    if math.prod(n.shape) > FOLD_LIMIT or any(math.prod(p.shape) > FOLD_LIMIT for p in producers):
        return None
    constants = {p.id: np.asarray(folder.run_node(p, {})) for p in producers}
    value = np.asarray(folder.run_node(n, constants)).astype(n.dtype)
    flat = value.reshape(-1)
    # Uniform bit for bit: == would call 0.0 and -0.0 the same, and 1/x tells them apart.
    if value.size and (flat.view(np.uint8).reshape(flat.size, -1) ==
                       flat[:1].view(np.uint8)).all():
        return _full_node(n, flat[0].item())
    return replace(n, op="constant", inputs=(), attrs=make_attrs({
        "value": np.ascontiguousarray(value), "shape": n.shape, "dtype": n.dtype,
        "device": n.device}))


def _full_node(n: Node, value) -> Node:
    return replace(n, op="full", inputs=(), attrs=make_attrs({
        "shape": n.shape, "value": value, "dtype": n.dtype, "device": n.device}))


def _describe_value(n: Node) -> str:
    if n.op == "full":
        return f"full {n.attr['value']!r}:{n.type_str()}"
    v = n.attr["value"]
    if v.size <= 6:
        return np.array2string(v, separator=",").replace("\n", "")
    return f"constant {n.type_str()}"


__all__ = ["CONSTANT_OPS", "fold_constants"]
