"""Functions along one axis: cumsum, argsort, sort, topk (re-exported by ``functional``).

``sort`` follows the Array API (it returns the sorted values) unless called with PyTorch's
``dim=``, when it returns PyTorch's ``(values, indices)`` pair; ``topk`` always returns the
pair, as PyTorch does (the Array API has no topk). Values come from ``take_along_axis``
over the sorting indices, so their gradient flows back to the elements they came from.
"""

from __future__ import annotations

from typing import NamedTuple

from . import functional as F
from .errors import ArgumentError, ShapeError, op_error
from .ops import OPS


class ValuesIndices(NamedTuple):
    """PyTorch's ``(values, indices)`` result of sort, topk, and max/min over ``dim=``."""

    values: object
    indices: object


_UNSET = object()


def _axis_of(op, x, axis, kwargs, default=-1):
    """The axis given as ``axis=`` or PyTorch's ``dim=`` (not both), normalised; and any
    keywords left over, which are refused."""
    if "dim" in kwargs:
        if axis is not _UNSET:
            raise op_error(ArgumentError, op, (x,),
                           "got both axis= and its PyTorch spelling dim=; give one")
        axis = kwargs.pop("dim")
    if kwargs:
        raise op_error(ArgumentError, op, (x,),
                       f"unexpected keyword argument {next(iter(kwargs))!r}")
    axis = default if axis is _UNSET else axis
    return axis if axis is None else F.normalize_axis_for(op, x, axis)


def cumsum(x, axis=_UNSET, *, dtype=None, **kwargs):
    """Running sum along ``axis`` (``dim=`` too). Ints and bool sum in int64 (as PyTorch);
    without an axis a 1-D tensor is summed along its only axis."""
    x = F._tensor_arg("cumsum", x)
    axis = _axis_of("cumsum", x, axis, kwargs, default=None)
    if axis is None:
        if x.ndim > 1:
            raise op_error(ArgumentError, "cumsum", (x,),
                           f"give axis= (or dim=) for a tensor of rank {x.ndim}")
        axis = 0
    if x.ndim == 0:
        x = F.reshape(x, (1,))
    if dtype is not None:
        x = F.astype(x, dtype)
    return F.apply(OPS["cumsum"], x, axis=axis, reverse=False)


def argsort(x, axis=_UNSET, descending=False, stable=True, **kwargs):
    """Indices that sort ``x`` along ``axis`` (default -1; ``dim=`` too): stable, NaN
    last (first when descending)."""
    x = F._tensor_arg("argsort", x)
    axis = _axis_of("argsort", x, axis, kwargs)
    descending = F._bool_arg("argsort", "descending", descending, (x,))
    F._bool_arg("argsort", "stable", stable, (x,))  # always stable; accepted for the API
    if x.ndim == 0:
        return F.zeros((), dtype=F.int64, device=x.device)
    return F.apply(OPS["argsort"], x, axis=axis, descending=descending)


def sort(x, axis=_UNSET, descending=False, stable=True, **kwargs):
    """Sorted values along ``axis`` (default -1). Called with PyTorch's ``dim=``, returns
    PyTorch's ``(values, indices)`` named pair instead."""
    torch_style = "dim" in kwargs
    x = F._tensor_arg("sort", x)
    axis = _axis_of("sort", x, axis, kwargs)
    indices = argsort(x, axis=axis, descending=descending, stable=stable)
    values = take_along_axis(x, indices, axis=axis) if x.ndim else x
    return ValuesIndices(values, indices) if torch_style else values


def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's names
    """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their
    indices, as PyTorch's ``(values, indices)``; ties keep their order."""
    x = F._tensor_arg("topk", x)
    k = F._int_arg("topk", "k", k, (x,))
    axis = F.normalize_axis_for("topk", x, dim)
    F._bool_arg("topk", "sorted", sorted, (x,))
    size = x.shape[axis] if x.ndim else 1
    if not 0 <= k <= size:
        raise op_error(ShapeError, "topk", (x,), f"k={k} is out of range for a dimension of "
                       f"size {size}")
    order = argsort(x, axis=axis, descending=F._bool_arg("topk", "largest", largest, (x,)))
    if x.ndim == 0:
        return ValuesIndices(x, order)
    index = (slice(None),) * axis + (slice(0, k),)
    indices = order[index]
    return ValuesIndices(take_along_axis(x, indices, axis=axis), indices)


def take_along_axis(x, indices, axis=_UNSET, **kwargs):
    """``x`` read at ``indices`` along ``axis`` (default -1; ``dim=`` too). Array API name;
    ``em.gather`` is PyTorch's spelling. On other axes the index may be smaller than ``x``;
    an index outside [0, size) is an error that names it (in graph mode too)."""
    x = F._tensor_arg("take_along_axis", x, (x, indices))
    indices = F._require_tensor("take_along_axis", indices, (x, indices))
    if x.ndim == 0:
        raise op_error(ShapeError, "take_along_axis", (x, indices),
                       "needs a tensor of rank >= 1")
    axis = _axis_of("take_along_axis", x, axis, kwargs)
    return F.apply(OPS["take_along_axis"], x, indices, axis=axis)


def gather(x, dim, index):
    """PyTorch's ``gather(input, dim, index)``: ``take_along_axis(x, index, axis=dim)``."""
    return take_along_axis(x, index, axis=dim)


__all__ = ["cumsum", "argsort", "sort", "topk", "take_along_axis", "gather", "ValuesIndices"]
