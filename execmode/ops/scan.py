"""Ops along one axis that look at every element before them: cumsum and argsort.

Both run under jit as one plan step (NumPy/CuPy's own cumsum and argsort). Sorting values,
topk and sort's indices are composed from argsort and take_along_axis (ops/gather.py), so
their gradients are gather's.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from .registry import OPAQUE, F, OpDef, RuleError, register


def _axis_rule(name):
    def rule(x, *, axis, **attrs):
        if len(x.shape) == 0:
            raise RuleError(f"{name} needs a tensor of rank >= 1")
        return tuple(x.shape)

    return rule


def _sum_dtype(dt):
    # bool and the narrower signed ints sum in int64, unsigned ints in uint64, as np.sum
    # does and the standard asks (torch.cumsum has no unsigned ints).
    return np.dtype(np.int64) if dt.kind in "bi" else np.dtype(np.uint64) \
        if dt.kind == "u" else None


def _cumsum_impl(xp, a, *, axis, reverse):
    dtype = _sum_dtype(a.dtype)
    if not reverse:
        return xp.cumsum(a, axis=axis, dtype=dtype)
    flipped = xp.flip(a, axis=axis)
    return xp.ascontiguousarray(xp.flip(xp.cumsum(flipped, axis=axis, dtype=dtype), axis=axis))


def _cumsum_dtype(dtypes, attrs):
    # Said here rather than probed: the probe's rank-1 dummy has no axis 1.
    return _sum_dtype(dtypes[0]) or dtypes[0]


register(OpDef(
    name="cumsum", kind=OPAQUE, impl=_cumsum_impl, shape_rule=_axis_rule("cumsum"),
    dtype_rule=_cumsum_dtype,
    # d out_j / d x_i = 1 for i <= j: the gradient is the sum of g from the end (a reversed
    # cumsum), and a reversed cumsum's gradient is a forward one.
    vjp=lambda g, out, x, *, axis, reverse: (
        F.apply_op("cumsum", g, axis=axis, reverse=not reverse),),
    doc="Running sum along an axis (reverse=True sums from the end).",
))


def _stable(xp) -> dict:
    # CuPy's sort is always stable and refuses the kind argument.
    return {"kind": "stable"} if xp is np else {}


def _argsort_impl(xp, a, *, axis, descending):
    if a.dtype.kind == "b":
        a = a.astype(np.int8)
    if not descending:
        return xp.argsort(a, axis=axis, **_stable(xp))
    # A stable descending sort (ties keep their order, NaN first as in PyTorch): sort the
    # reversed array ascending, reverse the order, and map positions back.
    n = a.shape[axis]
    order = xp.argsort(xp.flip(a, axis=axis), axis=axis, **_stable(xp))
    return xp.ascontiguousarray(n - 1 - xp.flip(order, axis=axis))


def _argsort_dtype(dtypes, attrs):
    if dtypes[0].kind not in "biuf":
        raise RuleError(f"cannot sort {dtypes[0]}", DTypeError)
    return np.dtype(np.int64)


register(OpDef(
    name="argsort", kind=OPAQUE, impl=_argsort_impl, shape_rule=_axis_rule("argsort"),
    dtype_rule=_argsort_dtype,
    doc="Indices that sort along an axis (stable; NaN sorts as the largest value).",
))


def _searchsorted_rule(x1, x2, *, side):
    if len(x1.shape) != 1:
        raise RuleError(f"the sorted sequence must be 1-D, got shape {tuple(x1.shape)}")
    return tuple(x2.shape)


def _searchsorted_dtype(dtypes, attrs):
    if dtypes[0].kind not in "biuf" or dtypes[1].kind not in "biuf":
        raise RuleError(f"cannot search {dtypes[1]} in {dtypes[0]}", DTypeError)
    return np.dtype(np.int64)


def _searchsorted_impl(xp, x1, x2, *, side):
    # NumPy's own search (NaN sorts last, as in sort); int64 indices on every platform
    return xp.searchsorted(x1, x2, side=side).astype(np.int64, copy=False)


register(OpDef(
    name="searchsorted", kind=OPAQUE, impl=_searchsorted_impl, shape_rule=_searchsorted_rule,
    dtype_rule=_searchsorted_dtype, nondiff_inputs=(0, 1),
    doc="Where each value of x2 goes in the sorted 1-D x1 (the first place, or the last "
        "with side='right').",
))
