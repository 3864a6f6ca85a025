"""``scatter_slices``: zeros of ``shape`` with each piece, plus zero, at its own slice.

A graph-only op: no eager call makes it. passes/slice_sums.py puts it where backward
summed ``index_add``s into pairwise disjoint slices (split's pieces), so it computes what
those adds gave, bit for bit: ``g + 0`` at each piece's elements (-0.0 becomes +0.0, as
in ``0.0 + -0.0``), zero elsewhere.

A piece may be read through a permutation (``reads[k]``: axes, else None): operand ``k``
is then ``x`` with ``permute_dims(x, axes).reshape(slice shape)`` the piece, as attention's
heads come back from ``(B, heads, T, d)`` to ``(B, T, heads * d)``; the op reads ``x`` in
place instead of a copy of it in the slice's order.
"""

from __future__ import annotations

import math

from .movement import basic_key, inverse_permutation
from .registry import INDEXING, F, OpDef, RuleError, register


def permuted_shape(shape: tuple, axes: tuple) -> tuple:
    return tuple(shape[a] for a in axes)


def common_loops(a: tuple, b: tuple) -> list | None:
    """The loops that walk shapes ``a`` and ``b`` (the same elements, each in C order)
    together: (size, dim of a, what that dim's inner rest multiplies, the same for b) per
    loop, outermost first, or None where the shapes do not nest ((2, 3) against (3, 2))."""
    if math.prod(a) != math.prod(b):
        return None
    if math.prod(a) == 0:
        return []
    loops, i, j = [], 0, 0
    x, y = (a[0] if a else 1), (b[0] if b else 1)
    while True:
        while x == 1 and i < len(a):
            i += 1
            x = a[i] if i < len(a) else 1
        while y == 1 and j < len(b):
            j += 1
            y = b[j] if j < len(b) else 1
        if i >= len(a) or j >= len(b):
            return loops
        size = min(x, y)
        if x % size or y % size:
            return None
        loops.append((size, i, x // size, j, y // size))
        x, y = x // size, y // size


def _rule(*avals, shape, indices, reads):
    if not len(avals) == len(indices) == len(reads):
        raise RuleError(f"{len(avals)} operands for {len(indices)} slices")
    return tuple(shape)


def _dtype(dtypes, attrs):
    if len(set(dtypes)) != 1:
        raise RuleError(f"operands of one dtype, got {sorted(str(d) for d in dtypes)}")
    return dtypes[0]


def _impl(xp, *operands, shape, indices, reads):
    out = xp.zeros(shape, dtype=operands[0].dtype)
    zero = operands[0].dtype.type(0)
    for x, index, axes in zip(operands, indices, reads):
        region = out[basic_key(index)]
        piece = x if axes is None else xp.transpose(x, axes).reshape(region.shape)
        region[...] = piece + zero
    return out


def _vjp(g, out, *operands, shape, indices, reads):
    grads = []
    for x, index, axes in zip(operands, indices, reads):
        piece = F.apply_op("getitem", g, index=index)
        if axes is not None:
            piece = F.apply_op("reshape", piece, shape=permuted_shape(tuple(x.shape), axes))
            piece = F.apply_op("permute_dims", piece, axes=inverse_permutation(axes))
        grads.append(piece)
    return tuple(grads)


register(OpDef(
    name="scatter_slices", kind=INDEXING, impl=_impl, shape_rule=_rule, dtype_rule=_dtype,
    vjp=_vjp,
    doc="Zeros of `shape` with each piece plus zero at its slice (slices disjoint; a piece "
        "read through a permutation where `reads` names one): graph mode's form of summed "
        "index_adds.",
))
