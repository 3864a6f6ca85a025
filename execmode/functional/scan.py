"""Functions along one axis: cumsum, argsort, sort, topk, as ``ops/scan.py``.

``sort`` follows the Array API (it returns the sorted values) unless called with PyTorch's
``dim=``, when it returns PyTorch's ``(values, indices)`` pair; ``topk`` always returns the
pair, as PyTorch does (the Array API has no topk). Values come from ``take_along_axis``
over the sorting indices, so their gradient flows back to the elements they came from.
"""

from __future__ import annotations

from typing import NamedTuple

from ..dispatch import apply
from ..dtypes import int64
from ..errors import ArgumentError, ShapeError, op_error
from ..ops import OPS
from .arguments import _UNSET, _axis_of, _bool_arg, _int_arg, _tensor_arg, normalize_axis_for
from .creation import astype, zeros
from .gather_scatter import take_along_axis
from .shape import reshape


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
        x = astype(x, dtype)
    return apply(OPS["cumsum"], x, axis=axis, reverse=False)


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
    values = take_along_axis(x, indices, axis=axis) if x.ndim else x
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
    return ValuesIndices(take_along_axis(x, indices, axis=axis), indices)
