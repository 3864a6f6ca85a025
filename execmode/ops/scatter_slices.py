"""``scatter_slices``: zeros of ``shape`` with each operand, plus zero, at its own slice.

A graph-only op: no eager call makes it. passes/slice_sums.py puts it where backward
summed ``index_add``s into pairwise disjoint slices (split's pieces), so it computes what
those adds gave, bit for bit: ``g + 0`` at each piece's elements (-0.0 becomes +0.0, as
in ``0.0 + -0.0``), zero elsewhere.
"""

from __future__ import annotations

from .movement import index_to_key
from .registry import INDEXING, F, OpDef, RuleError, register


def basic_key(index) -> tuple:
    """The NumPy key of a basic index (no index tensors), always making a view."""
    key = index_to_key(index, ())
    return key if Ellipsis in key else key + (Ellipsis,)


def _rule(*avals, shape, indices):
    if len(avals) != len(indices):
        raise RuleError(f"{len(avals)} operands for {len(indices)} slices")
    return tuple(shape)


def _dtype(dtypes, attrs):
    if len(set(dtypes)) != 1:
        raise RuleError(f"operands of one dtype, got {sorted(str(d) for d in dtypes)}")
    return dtypes[0]


def _impl(xp, *pieces, shape, indices):
    out = xp.zeros(shape, dtype=pieces[0].dtype)
    zero = pieces[0].dtype.type(0)
    for piece, index in zip(pieces, indices):
        out[basic_key(index)] = piece + zero
    return out


def _vjp(g, out, *pieces, shape, indices):
    return tuple(F.apply_op("getitem", g, index=index) for index in indices)


register(OpDef(
    name="scatter_slices", kind=INDEXING, impl=_impl, shape_rule=_rule, dtype_rule=_dtype,
    vjp=_vjp,
    doc="Zeros of `shape` with each operand plus zero at its slice (slices disjoint; graph "
        "mode's form of summed index_adds).",
))
