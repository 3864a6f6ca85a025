"""Indexing: ``x[index]`` and ``x[index] = value`` (ints, slices, None, Ellipsis, integer
index tensors, a bool mask), argwhere/nonzero, and PyTorch's masked_fill."""

from __future__ import annotations

import builtins

import numpy as np

from .._tensor import Tensor
from ..dispatch import apply
from ..dtypes import bool_, int64
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from ..ops.registry import RuleError, broadcast_shapes
from ..symbolic_sizes import SymInt, decides_equal
from . import reductions  # reductions.max: this module's bodies use Python's max
from .arguments import (
    _int_arg,
    _is_int,
    _number_arg,
    _require_tensor,
    _tensor_arg,
    normalize_axis_for,
    size_arg,
)
from .creation import arange, astype, tensor
from .elementwise import copy, where
from .shape import broadcast_to, expand_dims, reshape
from .state import assign


def _is_index_tensor(v) -> bool:
    return isinstance(v, Tensor) and v.ndim == 0 and v.dtype.kind in "iu"


def _index_int(v) -> int:
    """A Python int for an index or bound; a symbolic size stays one (``x[:t // 2]``
    under jit keeps ``t``'s symbol, so one graph serves every size, symbolic_sizes.py)."""
    return v if isinstance(v, SymInt) else int(v)


def _normalize_index(x, index, op="getitem"):
    """Split a user's index into a static description and its integer index tensors.

    A bool mask comes back alone, as ``(None, [mask])``: it must be the whole index.
    """
    x = _require_tensor(op, x)
    if not isinstance(index, tuple):
        index = (index,)
    items, tensors = [], []
    for item in index:
        if isinstance(item, bool):
            raise op_error(ArgumentError, op, (x,), "a Python bool is not a valid index")
        if isinstance(item, int | np.integer):
            items.append(("int", _index_int(item)))
        elif isinstance(item, slice):
            # a 0-d integer tensor is a bound too (NumPy takes anything with __index__);
            # its value is read, so under jit it is a graph break
            bounds = tuple(int(v) if _is_index_tensor(v) else v
                           for v in (item.start, item.stop, item.step))
            if not builtins.all(v is None or _is_int(v) for v in bounds):
                raise op_error(ArgumentError, op, (x,),
                               f"slice bounds must be ints or None, got {item!r}")
            items.append(("slice",) + tuple(None if v is None else _index_int(v) for v in bounds))
        elif item is None:
            items.append(("none",))
        elif item is Ellipsis:
            items.append(("ellipsis",))
        else:
            if isinstance(item, list | np.ndarray):
                item = tensor(item) if np.asarray(item).size else tensor(item, dtype=int64)
            if not isinstance(item, Tensor):
                raise op_error(ArgumentError, op, (x,),
                               f"unsupported index type {type(item).__name__}")
            if item.dtype == bool_:
                if len(index) != 1:
                    raise op_error(ArgumentError, op, (x, item),
                                   "a bool mask must be the whole index (x[mask])")
                return None, [item]
            items.append(("tensor", len(tensors)))
            tensors.append(item)
    return tuple(items), tensors


def getitem(x, index) -> Tensor:
    """``x[index]``: ints, slices, None, Ellipsis, integer index tensors, a bool mask."""
    static, tensors = _normalize_index(x, index)
    if static is None:  # a bool mask: the output size depends on the mask's values
        return apply(OPS["boolean_mask"], x, tensors[0])
    if static == (("slice", None, None, None),) or static == (("ellipsis",),):
        return x
    return apply(OPS["getitem"], x, *tensors, index=static)


def setitem(x, index, value) -> None:
    """``x[index] = value``: writes into ``x`` (an in-place update, like ``assign``)."""
    static, tensors = _normalize_index(x, index, "setitem")
    if static is None:
        mask = tensors[0]
        assign(x, where(mask, value, x))
        return
    if isinstance(value, Tensor | float | int | bool):
        pass
    else:
        value = tensor(value, dtype=x.dtype)
    assign(x, apply(OPS["index_put"], x, value, *tensors, index=static))


def argwhere(x) -> Tensor:
    """Indices of the non-zero elements, one row each (its size depends on the values)."""
    return apply(OPS["argwhere"], _tensor_arg("argwhere", x))


def nonzero(x) -> tuple:
    """The indices of the non-zero elements, one tensor per axis (a rank >= 1 tensor: a
    0-d one has no axis to index, as NumPy 2 says too)."""
    x = _tensor_arg("nonzero", x)
    if x.ndim == 0:
        raise op_error(ShapeError, "nonzero", (x,), "needs a tensor of rank >= 1")
    rows = argwhere(x)
    return tuple(rows[:, i] for i in range(x.ndim))


def masked_fill(x, mask, value):
    """``value`` where ``mask`` (bool, broadcast against ``x``) is set, ``x`` elsewhere;
    keeps ``x``'s dtype and shape."""
    x = _tensor_arg("masked_fill", x, (x, mask))
    mask = _require_tensor("masked_fill", mask, (x, mask))
    if mask.dtype != bool_:
        raise op_error(ArgumentError, "masked_fill", (x, mask),
                       f"the mask must be bool, got {mask.dtype}")
    try:
        out_shape = broadcast_shapes(x.shape, mask.shape)
    except RuleError:
        out_shape = None
    if out_shape != x.shape:
        raise op_error(ShapeError, "masked_fill", (x, mask),
                       f"the mask {tuple(mask.shape)} must broadcast to the tensor's shape "
                       f"{tuple(x.shape)}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise op_error(ShapeError, "masked_fill", (x, mask, value),
                           "value must be a number or a 0-d tensor")
        value = astype(value, x.dtype, copy=False)
    else:
        value = _number_arg("masked_fill", "value", value, (x, mask))
    return where(mask, value, x)


def one_hot(x, num_classes=-1):
    """int64 one-hot rows (a new last axis of ``num_classes``). A value outside
    [0, num_classes) is an error naming it. ``num_classes=-1`` counts ``max(x) + 1``
    classes: the shape depends on the values, so under jit that reads the value (a graph
    break); pass ``num_classes`` to avoid it."""
    x = _tensor_arg("one_hot", x)
    num_classes = _int_arg("one_hot", "num_classes", num_classes, (x,))
    if x.dtype.kind not in "iu":
        raise op_error(ArgumentError, "one_hot", (x,),
                       f"needs an integer tensor of class indices, got {x.dtype}")
    if num_classes == -1:
        num_classes = int(reductions.max(x)) + 1 if x.size else 0
    if num_classes < 0:
        raise op_error(ArgumentError, "one_hot", (x,),
                       f"num_classes must be >= 0 (or -1), got {num_classes}")
    return apply(OPS["one_hot"], x, num_classes=num_classes)


def index_select(x, dim, index) -> Tensor:
    """PyTorch's ``index_select(input, dim, index)``: the slices of ``x`` at the integer
    positions ``index`` (1-D, or 0-d for one slice) along ``dim``; a copy. An index out of
    range is an error naming it."""
    x = _tensor_arg("index_select", x, (x, index))
    index = _require_tensor("index_select", index, (x, index))
    if index.ndim > 1 or index.dtype.kind not in "iu":
        raise op_error(ArgumentError, "index_select", (x, index),
                       "the index must be a 1-D (or 0-d) integer tensor")
    if x.ndim == 0:
        raise op_error(ShapeError, "index_select", (x, index), "needs a tensor of rank >= 1")
    axis = normalize_axis_for("index_select", x, dim)
    if index.ndim == 0:
        index = reshape(index, (1,))
    return x[(slice(None),) * axis + (index,)]


def repeat_interleave(x, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """PyTorch's ``repeat_interleave``: each element (each slice along ``dim``; of the
    flattened tensor when ``dim`` is None) repeated ``repeats`` times in place, ``[1, 2]`` ->
    ``[1, 1, 2, 2]``. An int repeats every element alike (broadcast + reshape, so it traces
    without a break); a tensor of counts, one per element, decides the output's size by its
    values, so under jit it reads them (a graph break). ``repeat_interleave(counts)`` alone
    repeats each position ``i`` ``counts[i]`` times."""
    if repeats is None:  # torch.repeat_interleave(counts)
        counts = _require_tensor("repeat_interleave", x)
        return repeat_interleave(arange(counts.shape[0] if counts.ndim else 1,
                                        device=counts.device), counts, 0)
    x = _tensor_arg("repeat_interleave", x)
    if dim is None:
        x, axis = reshape(x, (-1,)), 0
    else:
        axis = normalize_axis_for("repeat_interleave", x, dim)
    if x.ndim == 0:
        x = reshape(x, (1,))
    n = x.shape[axis]
    if isinstance(repeats, Tensor) and repeats.ndim == 0 or _is_int(repeats):
        r = size_arg(repeats) if _is_int(repeats) else \
            _int_arg("repeat_interleave", "repeats", int(repeats), (x,))
        if r < 0:
            raise op_error(ArgumentError, "repeat_interleave", (x,),
                           f"repeats must be >= 0, got {r}")
        spread = expand_dims(x, axis + 1)
        shape = x.shape[:axis + 1] + (r,) + x.shape[axis + 1:]
        merged = x.shape[:axis] + (n * r,) + x.shape[axis + 1:]
        return x if decides_equal(r, 1) else reshape(broadcast_to(spread, shape), merged)
    counts = _require_tensor("repeat_interleave", repeats, (x, repeats))
    if counts.ndim != 1 or counts.shape[0] != n or counts.dtype.kind not in "iu":
        raise op_error(ShapeError, "repeat_interleave", (x, counts),
                       f"repeats must be an int or a 1-D integer tensor of {n} counts")
    values = counts.numpy()  # the output's size depends on them (a graph break under jit)
    if (values < 0).any():
        raise op_error(ArgumentError, "repeat_interleave", (x, counts),
                       "repeats must be >= 0")
    positions = np.repeat(np.arange(n), values)
    if output_size is not None and int(output_size) != positions.size:
        raise op_error(ShapeError, "repeat_interleave", (x, counts),
                       f"output_size={output_size} but the counts add up to {positions.size}")
    return index_select(x, axis, tensor(positions, dtype=int64, device=x.device))


def repeat(x, repeats, /, *, axis=None) -> Tensor:
    """Each element repeated ``repeats`` times in place (the Array API's ``repeat``,
    NumPy's; PyTorch's ``repeat_interleave``): ``[1, 2]`` -> ``[1, 1, 2, 2]``, along
    ``axis``, or over the flattened tensor when it is None. ``repeats`` is an int, or a 1-D
    integer tensor with one count per element of that axis (or one for all); counts decide
    the output's size by their values, so under jit they are read (a graph break).
    ``x.repeat(2, 3)``, PyTorch's method, tiles instead: see :func:`tile`."""
    x = _tensor_arg("repeat", x)
    if isinstance(repeats, Tensor) and repeats.size == 1 and repeats.ndim <= 1:
        repeats = reshape(repeats, ())
    out = repeat_interleave(x, repeats, axis)
    return copy(out) if out is x else out  # a new tensor, as the standard's functions give
