"""Reads and writes at index tensors along an axis: take_along_axis (PyTorch's gather),
scatter_add and index_add, and one_hot, as ``ops/gather.py``.

``scatter_add`` and ``index_add`` are the transposes of ``take_along_axis`` and of integer
indexing: their gradients are those gathers. PyTorch's argument order (``dim`` before the
index) is kept for the names PyTorch owns.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..dispatch import apply
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from .arguments import (
    _UNSET,
    _axis_of,
    _number_arg,
    _require_tensor,
    _tensor_arg,
    normalize_axis_for,
)
from .creation import arange
from .elementwise import add, less, where
from .shape import reshape


def take_along_axis(x, indices, axis=_UNSET, **kwargs):
    """``x`` read at ``indices`` along ``axis`` (default -1; ``dim=`` too). Array API name:
    a negative index counts from the end, as the standard's. On other axes the index may be
    smaller than ``x``; an index outside [-size, size) is an error that names it (in graph
    mode too). ``em.gather`` is PyTorch's spelling, which refuses negative indices."""
    x, indices, axis = _take_args("take_along_axis", x, indices, axis, kwargs)
    if indices.dtype.kind == "i":
        # wrapped here, so the op keeps one rule (PyTorch's, [0, size)) for gather too
        indices = where(less(indices, 0), add(indices, x.shape[axis]), indices)
    return apply(OPS["take_along_axis"], x, indices, axis=axis)


def _take_args(op, x, indices, axis, kwargs):
    x = _tensor_arg(op, x, (x, indices))
    indices = _require_tensor(op, indices, (x, indices))
    if x.ndim == 0:
        raise op_error(ShapeError, op, (x, indices), "needs a tensor of rank >= 1")
    return x, indices, _axis_of(op, x, axis, kwargs)


def gather_along(x, indices, axis):
    """take_along_axis for indices known to be in [0, size) (argmax's, argsort's, checked
    labels): the op alone, as PyTorch's gather."""
    x, indices, axis = _take_args("take_along_axis", x, indices, axis, {})
    return apply(OPS["take_along_axis"], x, indices, axis=axis)


def gather(x, dim, index):
    """PyTorch's ``gather(input, dim, index)``: ``x`` read at ``index`` along ``dim``; an
    index outside [0, size) is an error, as in PyTorch."""
    return gather_along(x, index, dim)


def scatter_add(x, dim, index, src):
    """PyTorch's ``scatter_add(input, dim, index, src)``: a copy of ``x`` with ``src[i]``
    added at ``index[i]`` along ``dim`` (and at ``i`` on the other axes); repeats add up.
    ``src`` may be larger than ``index`` (only its leading block is used, as PyTorch)."""
    x = _tensor_arg("scatter_add", x, (x, index, src))
    index = _require_tensor("scatter_add", index, (x, index, src))
    src = _tensor_arg("scatter_add", src, (x, index, src))
    if x.ndim == 0:
        raise op_error(ShapeError, "scatter_add", (x, index, src), "needs a tensor of rank >= 1")
    axis = normalize_axis_for("scatter_add", x, dim)
    if src.ndim != index.ndim or any(s < i for s, i in zip(src.shape, index.shape)):
        raise op_error(ShapeError, "scatter_add", (x, index, src),
                       f"src {tuple(src.shape)} must be at least as large as the index "
                       f"{tuple(index.shape)} on every axis")
    if src.shape != index.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]
    return apply(OPS["scatter_add"], x, index, src, axis=axis)


def index_add(x, dim, index, source, alpha=1):
    """PyTorch's ``index_add(input, dim, index, source)``: a copy of ``x`` with slice ``i``
    of ``source`` along ``dim`` added at ``index[i]`` (a 1-D integer tensor)."""
    x = _tensor_arg("index_add", x, (x, index, source))
    index = _require_tensor("index_add", index, (x, index, source))
    source = _tensor_arg("index_add", source, (x, index, source))
    axis = normalize_axis_for("index_add", x, dim)
    if index.ndim != 1 or index.dtype.kind not in "iu":
        raise op_error(ArgumentError, "index_add", (x, index, source),
                       "the index must be a 1-D integer tensor")
    want = x.shape[:axis] + (index.shape[0],) + x.shape[axis + 1:]
    if source.shape != want:
        raise op_error(ShapeError, "index_add", (x, index, source),
                       f"source must have shape {want}, got {tuple(source.shape)}")
    alpha = _number_arg("index_add", "alpha", alpha, (x, index, source))
    if alpha != 1:
        source = source * alpha
    static = (("slice", None, None, None),) * axis + (("tensor", 0),)
    # index_add is the op behind the gradient of x[index]: zeros with source added at index.
    added = apply(OPS["index_add"], source, index, shape=tuple(x.shape), index=static)
    return x + added



def scatter(x, dim, index, src=None, value=None, *, reduce=None):
    """PyTorch's ``scatter(input, dim, index, src)`` (or a number ``value`` in place of
    ``src``): a copy of ``x`` with ``src[i]`` written at ``index[i]`` along ``dim`` (and at
    ``i`` on the other axes). Where the index repeats a position the last write wins (as
    PyTorch's CPU kernel; PyTorch leaves it unspecified). ``reduce="add"``/``"multiply"``
    are PyTorch's deprecated spellings: use :func:`scatter_add`. One ``index_put``, so the
    gradient is PyTorch's: zero at the written positions for ``x``, gathered for ``src``."""
    if reduce is not None:
        raise op_error(ArgumentError, "scatter", (x, index),
                       f"reduce={reduce!r} is not supported; use em.scatter_add "
                       "(PyTorch deprecated reduce= for scatter_reduce)")
    x = _tensor_arg("scatter", x, (x, index))
    index = _require_tensor("scatter", index, (x, index))
    if src is not None and value is not None:
        raise op_error(ArgumentError, "scatter", (x, index), "give src or value, not both")
    fill = value if src is None else src
    if fill is None:
        raise op_error(ArgumentError, "scatter", (x, index), "missing src (or value=)")
    if x.ndim == 0:
        raise op_error(ShapeError, "scatter", (x, index), "needs a tensor of rank >= 1")
    axis = normalize_axis_for("scatter", x, dim)
    if index.dtype.kind not in "iu" or index.ndim != x.ndim or any(
            i > n for k, (i, n) in enumerate(zip(index.shape, x.shape)) if k != axis):
        raise op_error(ShapeError, "scatter", (x, index),
                       f"the index must be an integer tensor of rank {x.ndim}, no larger than "
                       "the input on the other axes")
    if isinstance(fill, Tensor):
        if fill.ndim != index.ndim or any(s < i for s, i in zip(fill.shape, index.shape)):
            raise op_error(ShapeError, "scatter", (x, index, fill),
                           f"src {tuple(fill.shape)} must be at least as large as the index "
                           f"{tuple(index.shape)} on every axis")
        if fill.shape != index.shape:
            fill = fill[tuple(slice(0, n) for n in index.shape)]
    else:
        fill = _number_arg("scatter", "value", fill, (x, index))
    positions = []
    for k, size in enumerate(index.shape):
        if k == axis:
            positions.append(index)
        else:
            shape = [1] * x.ndim
            shape[k] = size
            positions.append(reshape(arange(size, device=x.device), tuple(shape)))
    static = tuple(("tensor", k) for k in range(x.ndim))
    return apply(OPS["index_put"], x, fill, *positions, index=static)
