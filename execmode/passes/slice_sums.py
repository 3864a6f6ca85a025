"""A sum of gradients that each fill disjoint slices of zeros becomes one ``scatter_slices``.

Backward through ``q, k, v = x.split(C, dim=-1)`` (or any set of basic slices of one
value) gives each piece's gradient as an ``index_add`` into zeros of ``x``'s shape, and
accumulates them with adds: three full-size buffers written, read and summed where the
result only places each piece at its slice. Where the slices are pairwise disjoint, every
element of the sum is ``0 + ... + g + ... + 0``: ``g + 0`` (which turns -0.0 into +0.0,
as the adds do; NaN and infinities pass) inside a piece, zero outside them. The node
``scatter_slices`` writes exactly that, once (ops/scatter_slices.py; C in programs).

Only where every term of the add tree is such an ``index_add`` (no index tensors, the
sum's shape and dtype) read by nothing else, and the dtype is a float or an integer.

A piece that is ``reshape(permute_dims(x))`` read by nothing else (attention's heads put
back in order: a copy) is read from ``x`` through the permutation instead, where the two
shapes nest into common loops (ops/scatter_slices.py ``common_loops``).
"""

from __future__ import annotations

import numpy as np

from ..graph.ir import make_attrs, replace
from ..graph.views import VIEW_OPS
from ..ops.movement import basic_key
from ..ops.scatter_slices import common_loops
from .record import Rewrite

# Disjointness is checked on a one-byte mask of the sum's shape: compile-time memory
# bounded by this many elements (larger sums keep their adds).
MASK_LIMIT = 1 << 24


def merge_slice_sums(graph):
    """Returns (graph, rewrites); the replaced adds' terms are left for dead-code
    elimination."""
    nodes = {n.id: n for n in graph.nodes}
    users = graph.users()
    outputs = set(graph.outputs)
    # Whether each add's tree holds only qualifying index_adds: one pass in graph order
    # (an add's operands come before it), so a long chain of adds costs linear time.
    whole = {}
    for n in graph.nodes:
        if n.op == "add":
            whole[n.id] = all(_term_of(ref, n, nodes, users, outputs, whole)
                              for ref in n.inputs)
    replaced, inside, rewrites = {}, set(), []
    for n in reversed(graph.nodes):  # a tree's root before the adds inside it
        if not whole.get(n.id) or n.id in inside or np.dtype(n.dtype).kind not in "fiu" \
                or not _plain(n.shape):
            continue
        terms, adds = _tree(n, nodes)
        inside |= adds  # (tried once: a tree that fails is not tried again piece by piece)
        indices = tuple(t.attr["index"] for t in terms)
        if not _disjoint(tuple(n.shape), indices):
            continue
        reads = [_read_through(t.inputs[0], t, nodes, users, outputs) for t in terms]
        operands = tuple(t.inputs[0] if r is None else r[0] for t, r in zip(terms, reads))
        replaced[n.id] = replace(n, op="scatter_slices", inputs=operands, attrs=make_attrs({
            "shape": tuple(n.shape), "indices": indices,
            "reads": tuple(None if r is None else r[1] for r in reads)}))
        through = sum(r is not None for r in reads)
        rewrites.append(Rewrite(
            f"simplified %{n.id} = a sum of {len(terms)} index_adds into disjoint slices -> "
            f"scatter_slices " + " ".join(f"%{i}" for i in operands)
            + " (each piece written once at its slice"
            + (f"; {through} read through their permutation" if through else "") + ")",
            (n.id,) + tuple(t.id for t in terms) + tuple(sorted(adds)), "simplify"))
    if not replaced:
        return graph, []
    return graph.copy(nodes=[replaced.get(n.id, n) for n in graph.nodes]), rewrites


def _term_of(ref, node, nodes, users, outputs, whole: dict) -> bool:
    """Whether operand ``ref`` of the add ``node`` belongs to a tree of qualifying terms:
    an index_add (basic index, plain bounds, ``node``'s shape and dtype) or an add whose
    own tree qualifies, read by ``node`` alone."""
    if not isinstance(ref, int) or ref in outputs or users.get(ref) != [node.id]:
        return False
    m = nodes[ref]
    if m.shape != node.shape or m.dtype != node.dtype or m.device != node.device:
        return False
    if m.op == "add":
        return whole.get(m.id, False)
    return m.op == "index_add" and len(m.inputs) == 1 and \
        tuple(m.attr["shape"]) == tuple(node.shape) and not any(
            item[0] == "tensor" or not _plain(item[1:]) for item in m.attr["index"])


def _tree(root, nodes) -> tuple[list, set]:
    """The index_add terms under the qualifying add ``root``, left to right, and its
    inner adds (a stack, not recursion: a chain of adds can be thousands long)."""
    terms, adds, stack = [], set(), list(reversed(root.inputs))
    while stack:
        m = nodes[stack.pop()]
        if m.op == "add":
            adds.add(m.id)
            stack.extend(reversed(m.inputs))
        else:
            terms.append(m)
    return terms, adds


def _read_through(ref, term, nodes, users, outputs):
    """(x, axes) where the piece ``ref`` is ``reshape(permute_dims(x, axes))`` that only
    ``term`` reads, ``x`` a value of its own (not a view), and the shapes nest; else
    None."""
    piece = nodes[ref]
    if piece.op != "reshape" or ref in outputs or users.get(ref) != [term.id] \
            or not isinstance(piece.inputs[0], int):
        return None
    permuted = nodes[piece.inputs[0]]
    if permuted.op != "permute_dims" or not isinstance(permuted.inputs[0], int):
        return None
    source = nodes[permuted.inputs[0]]
    if source.op in VIEW_OPS or source.dtype != piece.dtype or common_loops(
            tuple(piece.shape), tuple(permuted.shape)) is None:
        return None
    return source.id, tuple(permuted.attr["axes"])


def _plain(values) -> bool:
    """Sizes and slice bounds known when compiling (a symbolic size is not: its graph
    serves every size, and disjointness would be a question per size)."""
    return all(v is None or type(v) is int for v in values)


def _disjoint(shape: tuple, indices: tuple) -> bool:
    """Whether the basic indices select pairwise disjoint elements of ``shape``."""
    if int(np.prod(shape)) > MASK_LIMIT:
        return False
    taken = np.zeros(shape, np.bool_)
    for index in indices:
        region = taken[basic_key(index)]
        if region.any():
            return False
        region[...] = True
    return True
