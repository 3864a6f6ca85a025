"""Functions along one axis: cumsum, argsort, sort, topk, as ``ops/scan.py``.

``sort`` follows the Array API (it returns the sorted values) unless called with PyTorch's
``dim=``, when it returns PyTorch's ``(values, indices)`` pair; ``topk`` always returns the
pair, as PyTorch does (the Array API has no topk). Values come from ``take_along_axis``
over the sorting indices, so their gradient flows back to the elements they came from.
"""

from __future__ import annotations

from typing import NamedTuple

from ..dispatch import apply
from ..dtypes import int64, uint64
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from .arguments import _UNSET, _axis_of, _bool_arg, _int_arg, _tensor_arg, normalize_axis_for
from .creation import astype, full, zeros
from .elementwise import copy
from .gather_scatter import gather_along, take_along_axis
from .shape import concat, reshape


class ValuesIndices(NamedTuple):
    """PyTorch's ``(values, indices)`` result of sort, topk, and max/min over ``dim=``."""

    values: object
    indices: object


def cumsum(x, axis=_UNSET, *, dtype=None, **kwargs):
    """Running sum along ``axis`` (``dim=`` too). Ints and bool sum in int64 (as PyTorch);
    without an axis a 1-D tensor is summed along its only axis."""
    x = _tensor_arg("cumsum", x)
    axis = _axis_of("cumsum", x, axis, kwargs, default=None)
    if axis is None:
        if x.ndim > 1:
            raise op_error(ArgumentError, "cumsum", (x,),
                           f"give axis= (or dim=) for a tensor of rank {x.ndim}")
        axis = 0
    if x.ndim == 0:
        x = reshape(x, (1,))
    if dtype is not None:
        x = astype(x, dtype, copy=False)
    out = apply(OPS["cumsum"], x, axis=axis, reverse=False)
    # dtype=int32 asked for: the op's int64 sums, wrapped back (as NumPy's in int32)
    return astype(out, x.dtype) if dtype is not None and out.dtype != x.dtype else out


def _cumulative(op, x, axis, dtype, include_initial):
    """The checks and casts cumulative_sum and cumulative_prod share: ``x`` (of ``dtype``,
    else ints and bools widened to int64, unsigned ints to uint64, as sum does) and the
    normalised axis."""
    x = _tensor_arg(op, x)
    if x.ndim == 0:
        raise op_error(ShapeError, op, (x,), "needs a tensor of rank >= 1")
    if axis is None:
        if x.ndim > 1:
            raise op_error(ArgumentError, op, (x,), f"give axis= for a tensor of rank {x.ndim}")
        axis = 0
    axis = normalize_axis_for(op, x, axis)
    _bool_arg(op, "include_initial", include_initial, (x,))
    if dtype is None and x.dtype.kind in "bi":
        dtype = int64
    elif dtype is None and x.dtype.kind == "u":
        dtype = uint64
    return (x if dtype is None else astype(x, dtype, copy=False)), axis


def _with_initial(out, axis, value):
    """``out`` with one slice of ``value`` before its first along ``axis``."""
    shape = out.shape[:axis] + (1,) + out.shape[axis + 1:]
    first = full(shape, value, dtype=out.dtype, device=out.device)
    return concat([first, out], axis=axis)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along ``axis`` (the Array API's; optional for a 1-D tensor), with a
    leading 0 when ``include_initial``. One cumsum op: a plan step on NumPy under jit."""
    x, axis = _cumulative("cumulative_sum", x, axis, dtype, include_initial)
    out = apply(OPS["cumsum"], x, axis=axis, reverse=False)
    if out.dtype != x.dtype:  # dtype=int8 asked for: the op's int64 sums, wrapped back
        out = astype(out, x.dtype)
    return _with_initial(out, axis, 0) if include_initial else out


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running products along ``axis`` (the Array API's), with a leading 1 when
    ``include_initial``. One multiply per position along the axis (as ``Tensor.cumprod``),
    so the gradient is right at zeros too and the chain fuses under jit."""
    x, axis = _cumulative("cumulative_prod", x, axis, dtype, include_initial)
    n = x.shape[axis]
    if n == 0:
        out = copy(x)
    else:
        head = (slice(None),) * axis
        products = [x[head + (slice(0, 1),)]]
        for i in range(1, n):
            products.append(products[-1] * x[head + (slice(i, i + 1),)])
        out = concat(products, axis=axis) if n > 1 else copy(products[0])
    return _with_initial(out, axis, 1) if include_initial else out


def argsort(x, axis=_UNSET, descending=False, stable=True, **kwargs):
    """Indices that sort ``x`` along ``axis`` (default -1; ``dim=`` too): stable, NaN
    last (first when descending)."""
    x = _tensor_arg("argsort", x)
    axis = _axis_of("argsort", x, axis, kwargs)
    descending = _bool_arg("argsort", "descending", descending, (x,))
    _bool_arg("argsort", "stable", stable, (x,))  # always stable; accepted for the API
    if x.ndim == 0:
        return zeros((), dtype=int64, device=x.device)
    return apply(OPS["argsort"], x, axis=axis, descending=descending)


def sort(x, axis=_UNSET, descending=False, stable=True, **kwargs):
    """Sorted values along ``axis`` (default -1). Called with PyTorch's ``dim=``, returns
    PyTorch's ``(values, indices)`` named pair instead."""
    torch_style = "dim" in kwargs
    x = _tensor_arg("sort", x)
    axis = _axis_of("sort", x, axis, kwargs)
    indices = argsort(x, axis=axis, descending=descending, stable=stable)
    values = gather_along(x, indices, axis) if x.ndim else x
    return ValuesIndices(values, indices) if torch_style else values


def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's names
    """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their
    indices, as PyTorch's ``(values, indices)``; ties keep their order."""
    x = _tensor_arg("topk", x)
    k = _int_arg("topk", "k", k, (x,))
    axis = normalize_axis_for("topk", x, dim)
    _bool_arg("topk", "sorted", sorted, (x,))
    size = x.shape[axis] if x.ndim else 1
    if not 0 <= k <= size:
        raise op_error(ShapeError, "topk", (x,), f"k={k} is out of range for a dimension of "
                       f"size {size}")
    order = argsort(x, axis=axis, descending=_bool_arg("topk", "largest", largest, (x,)))
    if x.ndim == 0:
        return ValuesIndices(x, order)
    index = (slice(None),) * axis + (slice(0, k),)
    indices = order[index]
    return ValuesIndices(gather_along(x, indices, axis), indices)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Where each value of ``x2`` goes in the sorted 1-D ``x1`` to keep it sorted: the first
    such index (``side="left"``) or the last (``"right"``), as int64. ``sorter`` (indices
    that sort ``x1``) is read through first. One op, NumPy's search: a plan step under jit
    (no kernel template), so graph mode gives eager's indices."""
    x1 = _tensor_arg("searchsorted", x1, (x1, x2))
    x2 = _tensor_arg("searchsorted", x2, (x1, x2))
    if side not in ("left", "right"):
        raise op_error(ArgumentError, "searchsorted", (x1, x2),
                       f"side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise op_error(ShapeError, "searchsorted", (x1, x2),
                       f"the sorted sequence must be 1-D, got rank {x1.ndim}")
    if sorter is not None:
        x1 = take_along_axis(x1, _tensor_arg("searchsorted", sorter, (x1, x2, sorter)), axis=0)
    return apply(OPS["searchsorted"], x1, x2, side=side)
