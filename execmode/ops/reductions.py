"""Reductions over axes: sum, prod, max, min, argmax, argmin.

Attributes are normalised by dispatch: ``axis`` is a sorted tuple of non-negative axes
(argmax/argmin: one int or None) and ``keepdims`` a bool.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .complex_grad import complex_differentiable, holomorphic
from .registry import REDUCTION, F, OpDef, RuleError, normalize_axes, normalize_axis, register


def reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _rule(x, *, axis, keepdims):
    return reduced_shape(x.shape, axis, keepdims)


def _rule_nonempty(name):
    def rule(x, *, axis, keepdims):
        # ``axis`` is normalised (None is every axis). axis=() reduces nothing, so an empty
        # tensor passes through as NumPy passes it (eager does).
        if any(x.shape[i] == 0 for i in axis):
            raise RuleError(f"{name} of an empty axis has no identity")
        return reduced_shape(x.shape, axis, keepdims)

    return rule


def _arg_rule(name):
    def rule(x, *, axis, keepdims):
        # Only the axis searched must be non-empty: NumPy's argmax over axis 0 of a (3, 0)
        # tensor is an empty (0,) result, as eager returns it.
        if axis is None and 0 in x.shape:
            raise RuleError(f"{name} of an empty tensor (shape {tuple(x.shape)})")
        if axis is not None and x.shape and x.shape[axis] == 0:  # rank 0: no axis
            raise RuleError(f"{name} over an empty axis (axis {axis} of shape "
                            f"{tuple(x.shape)})")
        axes = tuple(range(len(x.shape))) if axis is None else (axis,)
        if axis is None and keepdims:
            return (1,) * len(x.shape)
        return reduced_shape(x.shape, axes, keepdims)

    return rule


def normalize_reduction_attrs(op_name: str, ndim: int, attrs: dict) -> dict:
    keepdims = attrs.get("keepdims", False)
    if not isinstance(keepdims, bool | np.bool_):
        raise RuleError(f"keepdims must be True or False, got {keepdims!r}", ArgumentError)
    keepdims = bool(keepdims)
    axis = attrs.get("axis")
    if op_name in ("argmax", "argmin"):
        if axis is not None:
            axis = normalize_axis(axis, ndim)
        return {"axis": axis, "keepdims": keepdims}
    return {"axis": normalize_axes(axis, ndim), "keepdims": keepdims}


def expand_reduced(g, shape, axis, keepdims):
    """Put back the reduced axes of ``g`` (size 1) so it broadcasts against ``shape``."""
    if not keepdims and axis:
        kept = reduced_shape(shape, axis, True)
        if kept != g.shape:  # the op itself: the shape is right by construction
            g = F.apply_op("reshape", g, shape=kept)
    return g


def _sum_vjp(g, out, x, *, axis, keepdims):
    g = expand_reduced(g, x.shape, axis, keepdims)
    shape = tuple(x.shape)
    return (g if g.shape == shape else F.apply_op("broadcast_to", g, shape=shape),)


def _prod_vjp(g, out, x, *, axis, keepdims):
    # d prod / dx_i = prod / x_i; inputs with zeros get NaN/Inf here (documented).
    g = expand_reduced(g, x.shape, axis, keepdims)
    o = expand_reduced(out, x.shape, axis, keepdims)
    return (g * o / x,)


def _extremum_vjp(g, out, x, *, axis, keepdims):
    # The gradient is shared evenly by every element equal to the extremum.
    o = expand_reduced(out, x.shape, axis, keepdims)
    mask = F.astype(F.equal(x, o), g.dtype)
    count = F.sum(mask, axis=axis, keepdims=True)
    return (expand_reduced(g, x.shape, axis, keepdims) * mask / count,)


# On NumPy, sum/prod/max/min call their ufunc's reduce directly. np.sum and friends are
# Python wrappers, so a warning about NaN or Inf (inf - inf in a sum) would point into
# NumPy's own module and escape the filter that keeps execmode's kernels quiet. sum and
# prod widen bool and int32 to int64 as np.sum does (plain add.reduce would keep bool).
_UFUNC_REDUCERS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_WIDENED = {np.dtype("bool"): np.dtype("int64"), np.dtype("int32"): np.dtype("int64")}


# argmax/argmin over a short axis (max pooling's window of 4): NumPy searches each of the
# many short rows in turn, ~15 ns a row. Instead: the extremum over the axis (its ufunc's
# reduce, vectorised), then the first position that equals it (or the first NaN, which is
# where the extremum is NaN, as NumPy's argmax finds it), over k whole slices.
_SHORT_AXIS = 16
_SHORT_ROWS = 1024
_EXTREMUM = {"argmax": np.maximum, "argmin": np.minimum}


def _short_axis_arg(extremum, a, axis, keepdims):
    """np.argmax/np.argmin(a, axis, keepdims=...) for a float ``a`` whose ``axis`` has
    2.._SHORT_AXIS elements: the same indices."""
    k = a.shape[axis]
    best = extremum.reduce(a, axis=axis)
    nan = bool(np.isnan(best).any())
    lead = (slice(None),) * axis
    found = np.zeros(best.shape, np.uint8)  # k <= 16: positions fit in a byte
    step = np.empty(best.shape, np.uint8)
    for j in range(k - 1, -1, -1):  # the last hit written is the first position
        x = a[lead + (j,)]
        hit = x == best
        if nan:
            hit |= np.isnan(x)
        np.subtract(j, found, out=step, dtype=np.uint8)  # found += (j - found) * hit
        step *= hit
        found += step
    out = found.astype(np.intp)
    return np.expand_dims(out, axis) if keepdims else out


# max/min over a short last axis of many rows (softmax's max over attention scores):
# NumPy reduces each row in turn, ~40-90 ns a row. The rows copied into columns reduce as
# whole vectors instead, elementwise across the columns. An extremum does not round: the
# same values. (Which of 0.0 and -0.0 a tie between them keeps, or which NaN's payload,
# may differ, as between NumPy's own vector lanes; graph mode's kernels differ there too.)
_SHORT_ROW = 64
_MANY_ROWS = 64
_SHORT_ROW_EXTREMA = frozenset(("max", "min"))


def _short_rows(a, axis) -> bool:
    k = a.shape[-1] if a.ndim >= 2 else 0
    return 2 <= k <= _SHORT_ROW and axis == (a.ndim - 1,) and a.size >= _MANY_ROWS * k \
        and a.dtype.kind in "fiu" and a.flags.c_contiguous


def _short_rows_extremum(ufunc, a, keepdims):
    columns = np.ascontiguousarray(a.reshape(-1, a.shape[-1]).T)
    out = ufunc.reduce(columns, axis=0)
    return out.reshape(a.shape[:-1] + (1,) if keepdims else a.shape[:-1])


def _reduction(name, fn_name, rule, vjp, identity, doc=""):
    ufunc = _UFUNC_REDUCERS.get(name)
    widens = name in ("sum", "prod")
    extremum = _EXTREMUM.get(name)
    short_rows = name in _SHORT_ROW_EXTREMA

    def impl(xp, a, *, axis, keepdims):
        if short_rows and xp is np and _short_rows(a, axis):
            return _short_rows_extremum(ufunc, a, keepdims)
        if xp is np and ufunc is not None:
            dtype = _WIDENED.get(a.dtype) if widens else None
            return ufunc.reduce(a, axis=axis, dtype=dtype, keepdims=keepdims)
        if extremum is not None and xp is np and axis is not None \
                and a.dtype.kind == "f" and 2 <= a.shape[axis] <= _SHORT_AXIS \
                and a.size >= _SHORT_ROWS * a.shape[axis]:
            return _short_axis_arg(extremum, a, axis, keepdims)
        return getattr(xp, fn_name)(a, axis=axis, keepdims=keepdims)

    register(OpDef(name=name, kind=REDUCTION, impl=impl, shape_rule=rule, vjp=vjp,
                   saves_output=name in ("prod", "max", "min"), template=identity, doc=doc))


# The template of a reduction names its combiner and identity for the kernel renderers.
_reduction("sum", "sum", _rule, _sum_vjp, "sum")
# prod is holomorphic in each element: for complex values, g * conj(prod / x_i).
_reduction("prod", "prod", _rule, holomorphic(_prod_vjp), "prod")
complex_differentiable("prod")
_reduction("max", "max", _rule_nonempty("max"), _extremum_vjp, "max")
_reduction("min", "min", _rule_nonempty("min"), _extremum_vjp, "min")
_reduction("argmax", "argmax", _arg_rule("argmax"), None, "argmax")
_reduction("argmin", "argmin", _arg_rule("argmin"), None, "argmin")
