"""Shape manipulation: reshape, permute, squeeze, broadcast, and joining and splitting
along an axis (concat/cat, stack, split, chunk), PyTorch's expand and repeat.

All are views or compositions of the movement primitives (``ops/movement.py``), so eager,
jit and gradients come with them.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._tensor import Tensor
from ..dispatch import apply, plain_arrays, plain_tensor
from ..errors import ArgumentError, ArgumentValueError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from ..ops.movement import resolve_shape
from ..ops.registry import RuleError, normalize_axes, normalize_axis
from ..symbolic_sizes import decides_same
from .arguments import (
    _axes,
    _int_arg,
    _is_int,
    _one_axis_keyword,
    _rule_error,
    _shape_like,
    _tensor_arg,
    _tensor_list_arg,
    normalize_axis_for,
    size_arg,
)
from .elementwise import copy

_copy = copy  # the function, under a name that reshape's copy= parameter does not shadow


def reshape(x, shape, copy=None) -> Tensor:
    """``x`` with ``shape`` (one -1 is inferred): a view where the layout allows it.
    ``copy`` as the Array API's: True always copies; False never does, and raises
    ``ValueError`` for a tensor whose layout is not C-contiguous (a view cannot be had)."""
    if copy is None and x.__class__ is Tensor and shape.__class__ is tuple \
            and x._data.__class__ is _ndarray:
        # Every view(), reshape and vjp of a training step comes here with a tuple of
        # exact ints: their resolution is kept (a float or bool dimension, equal to an
        # int as a key, takes the general path and its checks).
        for d in shape:
            if d.__class__ is not int:
                break
        else:
            resolved = _resolved_shape(shape, x._data.size)
            if resolved is not None:
                if resolved == x._data.shape:
                    return x
                arrays = plain_arrays(x)  # nobody watches and no node to record: the view
                if arrays is not None:
                    if _RESHAPE.impl is _RESHAPE_IMPL:  # np.reshape's call, without its wrapper
                        return plain_tensor(arrays[0].reshape(resolved))
                    return plain_tensor(_RESHAPE.impl(np, arrays[0], shape=resolved))
                return apply(_RESHAPE, x, shape=resolved)
    x = _tensor_arg("reshape", x)
    try:
        shape = resolve_shape(_shape_like(shape), x.size)
    except RuleError as exc:
        raise _rule_error("reshape", (x,), exc) from None
    if copy is False and not _c_contiguous(x):
        raise op_error(ArgumentValueError, "reshape", (x,),
                       "copy=False, but this layout can only be reshaped by a copy")
    out = x if decides_same(shape, tuple(x.shape)) else apply(OPS["reshape"], x, shape=shape)
    return _copy(out) if copy else out


_RESHAPE = OPS["reshape"]
_RESHAPE_IMPL = _RESHAPE.impl  # the registered one (a test may put another in place)
_ndarray = np.ndarray


@functools.lru_cache(maxsize=1024)
def _resolved_shape(shape: tuple, size: int):
    """``shape`` (exact ints) with its -1 resolved for ``size`` elements; None where
    that is an error (the general path raises it, naming the operand)."""
    try:
        return resolve_shape(shape, size)
    except RuleError:
        return None


def _c_contiguous(x) -> bool:
    # the array's own flags eagerly; the traced value's layout proxy under jit
    data = x._data
    flags = getattr(getattr(data, "proxy", data), "flags", None)
    return flags is None or bool(flags.c_contiguous)


def permute_dims(x, axes=None) -> Tensor:
    """Reorder axes (reverse them when ``axes`` is None)."""
    x = _tensor_arg("permute_dims", x)
    ndim = x.ndim
    if axes is None:
        axes = _reversed_axes(ndim)
    if not isinstance(axes, tuple | list) or len(axes) != ndim:
        raise op_error(ShapeError, "permute_dims", (x,),
                       f"axes {axes!r} are not a permutation of the {ndim} axes")
    try:
        # x.T and x.permute(...) ask at every eager call (~1.3 us for two axes): the
        # answers for tuples of exact ints are kept (bools and errors never are)
        axes = _normalized_permutation(axes, ndim) if axes.__class__ is tuple and all(
            a.__class__ is int for a in axes) else _normalize_permutation(axes, ndim)
    except RuleError as exc:
        raise _rule_error("permute_dims", (x,), exc) from None
    if axes == _reversed_axes(ndim)[::-1]:
        return x
    return apply(OPS["permute_dims"], x, axes=axes)


@functools.cache
def _reversed_axes(ndim: int) -> tuple:
    return tuple(reversed(range(ndim)))


def _normalize_permutation(axes, ndim: int) -> tuple:
    return tuple(normalize_axis(a, ndim) for a in axes)


@functools.lru_cache(maxsize=1024)
def _normalized_permutation(axes: tuple, ndim: int) -> tuple:
    return _normalize_permutation(axes, ndim)


transpose = permute_dims


def swapaxes(x, axis1, axis2) -> Tensor:
    x = _tensor_arg("swapaxes", x)
    a1, a2 = normalize_axis_for("swapaxes", x, axis1), normalize_axis_for("swapaxes", x, axis2)
    if x.ndim == 0:
        return x
    axes = list(range(x.ndim))
    axes[a1], axes[a2] = axes[a2], axes[a1]
    return permute_dims(x, tuple(axes))  # a tuple of ints: permute_dims keeps its answer


def expand_dims(x, axis=None, **torch_keywords) -> Tensor:
    x = _tensor_arg("expand_dims", x)
    axis = _one_axis_keyword("expand_dims", x, axis, torch_keywords)
    try:
        axes = (axis,) if not isinstance(axis, tuple | list) else axis
        axes = normalize_axes(axes, x.ndim + len(axes))
    except RuleError as exc:
        raise _rule_error("expand_dims", (x,), exc) from None
    dims = iter(x.shape)
    shape = tuple(1 if i in axes else next(dims) for i in range(x.ndim + len(axes)))
    return reshape(x, shape)


def squeeze(x, axis=None, **torch_keywords) -> Tensor:
    x = _tensor_arg("squeeze", x)
    if torch_keywords:
        axis = _one_axis_keyword("squeeze", x, axis, torch_keywords)
        if axis is not None:
            # PyTorch's squeeze(dim=d) leaves a dim of another size alone; the Array
            # API's (axis=) refuses it.
            axis = tuple(a for a in _axes("squeeze", x, axis) if x.shape[a] == 1)
            if not axis:
                return x  # (PyTorch returns a view of x; writes reach x either way)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = _axes("squeeze", x, axis)
        bad = [i for i in axes if x.shape[i] != 1]
        if bad:
            raise op_error(ShapeError, "squeeze", (x,),
                           f"cannot squeeze axis {bad[0]} of size {x.shape[bad[0]]}")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def flatten(x, start_axis=0, end_axis=-1, *, start_dim=None, end_dim=None) -> Tensor:
    """Merge axes ``start_axis..end_axis`` (PyTorch's ``start_dim``/``end_dim``) into one."""
    x = _tensor_arg("flatten", x)
    start_axis = start_axis if start_dim is None else start_dim
    end_axis = end_axis if end_dim is None else end_dim
    if x.ndim == 0:
        return reshape(x, (1,))
    try:
        s, e = normalize_axis(start_axis, x.ndim), normalize_axis(end_axis, x.ndim)
    except RuleError as exc:
        raise _rule_error("flatten", (x,), exc) from None
    if s > e:
        raise op_error(ShapeError, "flatten", (x,),
                       f"start axis {start_axis} comes after end axis {end_axis}")
    shape = x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape)


def broadcast_to(x, shape) -> Tensor:
    x = _tensor_arg("broadcast_to", x)
    try:
        shape = _shape_like(shape)
    except RuleError as exc:
        raise _rule_error("broadcast_to", (x,), exc) from None
    if decides_same(shape, tuple(x.shape)):
        return x
    return apply(OPS["broadcast_to"], x, shape=shape)


def concat(tensors, axis=0, **torch_keywords) -> Tensor:
    """Join tensors along an existing axis, or flattened when ``axis`` is None (``em.cat``
    and ``dim=`` are PyTorch's spellings)."""
    tensors = _tensor_list_arg("concat", tensors)
    if torch_keywords:
        axis = _one_axis_keyword("concat", tensors[0], axis, torch_keywords, default=0)
    elif axis is None:  # the Array API's: the tensors flattened, then joined
        tensors, axis = [reshape(t, (-1,)) for t in tensors], 0
    if tensors[0].ndim == 0:
        raise op_error(ShapeError, "concat", tuple(tensors),
                       "cannot concatenate rank-0 tensors (use stack)")
    try:
        axis = normalize_axis(axis, tensors[0].ndim)
    except RuleError as exc:
        raise _rule_error("concat", tuple(tensors), exc) from None
    # One tensor too: a new tensor, as NumPy's concatenate and torch.cat give (never the
    # input itself, which a later write would reach).
    return apply(OPS["concat"], *tensors, axis=axis)


def stack(tensors, axis=0, **torch_keywords) -> Tensor:
    """Join tensors along a new axis (``dim=`` too)."""
    tensors = _tensor_list_arg("stack", tensors)
    if torch_keywords:
        axis = _one_axis_keyword("stack", tensors[0], axis, torch_keywords, default=0)
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise op_error(ShapeError, "stack", tuple(tensors), "all tensors must have the same shape")
    try:
        axis = normalize_axis(axis, tensors[0].ndim + 1)
    except RuleError as exc:
        raise _rule_error("stack", tuple(tensors), exc) from None
    return concat([expand_dims(t, axis) for t in tensors], axis=axis)


def split(x, split_size_or_sections, dim=0):
    """PyTorch's ``split``: pieces of ``split_size`` along ``dim`` (the last may be
    smaller), or pieces of the listed sizes. Returns a tuple of views."""
    x = _tensor_arg("split", x)
    axis = normalize_axis_for("split", x, dim)
    n = x.shape[axis] if x.ndim else 0
    if _is_int(split_size_or_sections):
        size = int(split_size_or_sections)
        if size <= 0:
            raise op_error(ArgumentError, "split", (x,), f"split_size must be > 0, got {size}")
        sizes = [min(size, n - start) for start in range(0, n, size)] or [0]
    elif isinstance(split_size_or_sections, list | tuple) and all(
            _is_int(s) and s >= 0 for s in split_size_or_sections):
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n:
            raise op_error(ShapeError, "split", (x,),
                           f"sizes {sizes} add up to {sum(sizes)}, not to the {n} elements "
                           f"of axis {axis}")
    else:
        raise op_error(ArgumentError, "split", (x,),
                       "split_size_or_sections must be an int or a list of non-negative "
                       f"ints, got {split_size_or_sections!r}")
    pieces, start = [], 0
    for size in sizes:
        index = (slice(None),) * axis + (slice(start, start + size),)
        pieces.append(x[index])
        start += size
    return tuple(pieces)


def chunk(x, chunks, dim=0):
    """PyTorch's ``chunk``: at most ``chunks`` pieces of ceil(size / chunks) along ``dim``
    (fewer when the size does not divide so)."""
    x = _tensor_arg("chunk", x)
    chunks = _int_arg("chunk", "chunks", chunks, (x,))
    if chunks <= 0:
        raise op_error(ArgumentError, "chunk", (x,), f"chunks must be > 0, got {chunks}")
    axis = normalize_axis_for("chunk", x, dim)
    n = x.shape[axis] if x.ndim else 0
    return split(x, max(1, math.ceil(n / chunks)), dim=axis)


def cat(tensors, dim=0, *, axis=None):
    """PyTorch's spelling of :func:`concat` (``dim`` or ``axis``, not both)."""
    if axis is not None and dim != 0:
        raise op_error(ArgumentError, "cat", tuple(tensors) if isinstance(tensors, list | tuple)
                       else (tensors,), "got both dim= and axis=; give one")
    return concat(tensors, axis=dim if axis is None else axis)


def expand(x, *sizes):
    """PyTorch's ``expand``: broadcast to ``sizes`` (-1 keeps a dimension); a view."""
    x = _tensor_arg("expand", x)
    if len(sizes) == 1 and isinstance(sizes[0], tuple | list):
        sizes = tuple(sizes[0])
    if not all(_is_int(s) for s in sizes) or len(sizes) < x.ndim:
        raise op_error(ShapeError, "expand", (x,),
                       f"cannot expand shape {tuple(x.shape)} to {tuple(sizes)}")
    lead = len(sizes) - x.ndim
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else size_arg(s)
                  for i, s in enumerate(sizes))
    if any(s < 0 for s in shape):
        raise op_error(ShapeError, "expand", (x,),
                       f"-1 is only allowed for existing dimensions, got {tuple(sizes)}")
    return broadcast_to(x, shape)


def tile(x, *repetitions):
    """The tensor tiled ``repetitions`` times along each axis (the Array API's ``tile``,
    NumPy's; PyTorch's ``Tensor.repeat``, which installs as ``x.repeat(2, 3)``). One tuple
    or ints; fewer repetitions than axes repeat the last axes, more add leading axes. A
    copy, built as broadcast + reshape, so it traces and differentiates as those do."""
    x = _tensor_arg("tile", x)
    if len(repetitions) == 1 and isinstance(repetitions[0], tuple | list):
        repetitions = tuple(repetitions[0])
    if not all(_is_int(r) and r >= 0 for r in repetitions):
        raise op_error(ArgumentError, "tile", (x,),
                       f"repetitions {tuple(repetitions)} must be non-negative ints")
    reps = (1,) * (x.ndim - len(repetitions)) + tuple(size_arg(r) for r in repetitions)
    shape = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    # (d0, d1) -> (1, d0, 1, d1) -> (r0, d0, r1, d1) -> (r0 * d0, r1 * d1)
    spread = tuple(v for d in shape for v in (1, d))
    tiled = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    out = broadcast_to(reshape(x, spread), tiled)
    return copy(reshape(out, tuple(r * d for r, d in zip(reps, shape))))


def _axes_or_dims(op, x, axis, dims):
    """``axis`` (the Array API's keyword) or PyTorch's ``dims`` (not both), normalised to
    a tuple of distinct non-negative axes; None means every axis."""
    if dims is not None:
        if axis is not None:
            raise op_error(ArgumentError, op, (x,),
                           "got both axis= and its PyTorch spelling dims=; give one")
        axis = dims
    if axis is None:
        return tuple(range(x.ndim))
    axes = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    try:
        out = tuple(normalize_axis(a, x.ndim) for a in axes)
    except RuleError as exc:
        raise _rule_error(op, (x,), exc) from None
    if len(set(out)) != len(out):
        raise op_error(ArgumentError, op, (x,), f"axis {axes} repeats an axis")
    return out


def flip(x, axis=None, *, dims=None) -> Tensor:
    """Reverse the order of elements along ``axis`` (every axis when None). PyTorch's
    ``torch.flip(x, dims)`` is the same call (a positional ``dims`` is the axis). Returns a
    copy, as PyTorch does (NumPy's flip is a view): writing to it leaves ``x`` alone."""
    x = _tensor_arg("flip", x)
    axes = _axes_or_dims("flip", x, axis, dims)
    if x.ndim == 0 or not axes:
        return copy(x)
    index = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim))
    return copy(x[index])


def roll(x, shift=None, axis=None, *, shifts=None, dims=None) -> Tensor:
    """Shift elements along ``axis`` by ``shift`` places, wrapping around (the Array API's
    ``roll(x, shift, axis=)``; PyTorch's ``roll(x, shifts, dims)`` is the same call). Without
    an axis the tensor is rolled flattened and keeps its shape. ``shift`` and ``axis`` may
    be tuples of the same length. Built from slices and one concat per axis."""
    x = _tensor_arg("roll", x)
    if shifts is not None:
        if shift is not None:
            raise op_error(ArgumentError, "roll", (x,),
                           "got both shift= and its PyTorch spelling shifts=; give one")
        shift = shifts
    if shift is None:
        raise op_error(ArgumentError, "roll", (x,), "missing the shift (shifts=)")
    if axis is None and dims is None:
        if not _is_int(shift):
            raise op_error(ArgumentError, "roll", (x,),
                           f"without an axis, shift must be one int, got {shift!r}")
        return reshape(roll(reshape(x, (-1,)), size_arg(shift), 0), x.shape)
    axes = _axes_or_dims("roll", x, axis, dims)
    shift_list = tuple(shift) if isinstance(shift, tuple | list) else (shift,)
    if len(shift_list) != len(axes) or not all(_is_int(s) for s in shift_list):
        raise op_error(ArgumentError, "roll", (x,),
                       f"shift {shift!r} must be ints, one per axis {axes}")
    if x.ndim == 0:
        return copy(x)
    out = x
    for s, a in zip(shift_list, axes):
        n = x.shape[a]
        s = size_arg(s) % n if n else 0  # (fftshift's n // 2 stays a size's expression)
        if s == 0:
            continue
        head = (slice(None),) * a + (slice(n - s, None),)
        tail = (slice(None),) * a + (slice(0, n - s),)
        out = concat([out[head], out[tail]], axis=a)
    return out if out is not x else copy(x)


def meshgrid(*arrays, indexing="xy") -> list:
    """Coordinate grids from 1-D tensors (the Array API's ``meshgrid``: ``indexing="xy"``
    by default, the first two axes swapped; ``"ij"`` keeps the order). A single list or
    tuple of tensors is accepted too, as PyTorch does. Each grid is a broadcast view."""
    if len(arrays) == 1 and isinstance(arrays[0], list | tuple):
        arrays = tuple(arrays[0])
    tensors = _tensor_list_arg("meshgrid", arrays)
    if indexing not in ("xy", "ij"):
        raise op_error(ArgumentError, "meshgrid", tuple(tensors),
                       f"indexing must be 'xy' or 'ij', got {indexing!r}")
    bad = [t for t in tensors if t.ndim > 1]
    if bad:
        raise op_error(ShapeError, "meshgrid", tuple(tensors),
                       "every input must be 0-d or 1-D")
    sizes = [t.size for t in tensors]
    if indexing == "xy" and len(tensors) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, t in enumerate(tensors):
        position = i
        if indexing == "xy" and len(tensors) >= 2 and i < 2:
            position = 1 - i
        shape = [1] * len(tensors)
        shape[position] = t.size
        grids.append(broadcast_to(reshape(t, tuple(shape)), tuple(sizes)))
    return grids
