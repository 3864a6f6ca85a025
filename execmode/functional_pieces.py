"""Splitting, repeating and filling: the shape helpers PyTorch users reach for
(re-exported by ``functional``). All are compositions of existing primitives (slices,
broadcast_to, reshape, where), so eager, jit and gradients come with them.
"""

from __future__ import annotations

import math

from . import functional as F
from .errors import ArgumentError, ShapeError, op_error
from .ops.registry import RuleError, broadcast_shapes
from .random import _draw_multinomial


def split(x, split_size_or_sections, dim=0):
    """PyTorch's ``split``: pieces of ``split_size`` along ``dim`` (the last may be
    smaller), or pieces of the listed sizes. Returns a tuple of views."""
    x = F._tensor_arg("split", x)
    axis = F.normalize_axis_for("split", x, dim)
    n = x.shape[axis] if x.ndim else 0
    if F._is_int(split_size_or_sections):
        size = int(split_size_or_sections)
        if size <= 0:
            raise op_error(ArgumentError, "split", (x,), f"split_size must be > 0, got {size}")
        sizes = [min(size, n - start) for start in range(0, n, size)] or [0]
    elif isinstance(split_size_or_sections, list | tuple) and all(
            F._is_int(s) and s >= 0 for s in split_size_or_sections):
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
    x = F._tensor_arg("chunk", x)
    chunks = F._int_arg("chunk", "chunks", chunks, (x,))
    if chunks <= 0:
        raise op_error(ArgumentError, "chunk", (x,), f"chunks must be > 0, got {chunks}")
    axis = F.normalize_axis_for("chunk", x, dim)
    n = x.shape[axis] if x.ndim else 0
    return split(x, max(1, math.ceil(n / chunks)), dim=axis)


def cat(tensors, dim=0, *, axis=None):
    """PyTorch's spelling of :func:`concat` (``dim`` or ``axis``, not both)."""
    if axis is not None and dim != 0:
        raise op_error(ArgumentError, "cat", tuple(tensors) if isinstance(tensors, list | tuple)
                       else (tensors,), "got both dim= and axis=; give one")
    return F.concat(tensors, axis=dim if axis is None else axis)


def clamp(x, min=None, max=None):  # noqa: A002 - PyTorch's names
    """PyTorch's spelling of :func:`clip`: bounds are numbers or tensors (broadcast)."""
    return F.clip(x, min, max)


def masked_fill(x, mask, value):
    """``value`` where ``mask`` (bool, broadcast against ``x``) is set, ``x`` elsewhere;
    keeps ``x``'s dtype and shape."""
    x = F._tensor_arg("masked_fill", x, (x, mask))
    mask = F._require_tensor("masked_fill", mask, (x, mask))
    if mask.dtype != F.bool_:
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
    if isinstance(value, F.Tensor):
        if value.ndim != 0:
            raise op_error(ShapeError, "masked_fill", (x, mask, value),
                           "value must be a number or a 0-d tensor")
        value = F.astype(value, x.dtype)
    else:
        value = F._number_arg("masked_fill", "value", value, (x, mask))
    return F.where(mask, value, x)


def expand(x, *sizes):
    """PyTorch's ``expand``: broadcast to ``sizes`` (-1 keeps a dimension); a view."""
    x = F._tensor_arg("expand", x)
    if len(sizes) == 1 and isinstance(sizes[0], tuple | list):
        sizes = tuple(sizes[0])
    if not all(F._is_int(s) for s in sizes) or len(sizes) < x.ndim:
        raise op_error(ShapeError, "expand", (x,),
                       f"cannot expand shape {tuple(x.shape)} to {tuple(sizes)}")
    lead = len(sizes) - x.ndim
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else int(s)
                  for i, s in enumerate(sizes))
    if any(s < 0 for s in shape):
        raise op_error(ShapeError, "expand", (x,),
                       f"-1 is only allowed for existing dimensions, got {tuple(sizes)}")
    return F.broadcast_to(x, shape)


def repeat(x, *repeats):
    """PyTorch's ``Tensor.repeat`` (NumPy's ``tile``): the tensor tiled ``repeats`` times
    along each axis (leading repeats add axes). A copy, built as broadcast + reshape."""
    x = F._tensor_arg("repeat", x)
    if len(repeats) == 1 and isinstance(repeats[0], tuple | list):
        repeats = tuple(repeats[0])
    if not all(F._is_int(r) and r >= 0 for r in repeats) or len(repeats) < x.ndim:
        raise op_error(ArgumentError, "repeat", (x,),
                       f"repeats {tuple(repeats)} must be non-negative ints, at least one "
                       f"per axis of shape {tuple(x.shape)}")
    shape = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    # (d0, d1) -> (1, d0, 1, d1) -> (r0, d0, r1, d1) -> (r0 * d0, r1 * d1)
    spread = tuple(v for d in shape for v in (1, d))
    tiled = tuple(v for r, d in zip(repeats, shape) for v in (int(r), d))
    out = F.broadcast_to(F.reshape(x, spread), tiled)
    return F.copy(F.reshape(out, tuple(r * d for r, d in zip(repeats, shape))))


def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow: max(a, b) + log1p(exp(-|a - b|)). One fused
    kernel under jit; its gradient is sigmoid(a - b) and sigmoid(b - a)."""
    if not isinstance(a, F.Tensor) and not isinstance(b, F.Tensor):
        a = F._tensor_arg("logaddexp", a, (a, b))
    d = a - b
    # a == b == +-inf gives inf - inf = NaN: the two terms are equal, so the gap is 0 (a NaN
    # operand still gives NaN, through the maximum).
    d = F.where(F.isnan(d), 0.0, d)
    return F.maximum(a, b) + F.log1p(F.exp(F.negative(F.abs(d))))


def multinomial(probs, num_samples, replacement=False):
    """Indices drawn from each row of (unnormalised) probabilities, on execmode's seeded
    generator: the same draws eagerly and under jit for the same seed."""
    return _draw_multinomial(probs, num_samples, replacement)


__all__ = ["split", "chunk", "cat", "clamp", "masked_fill", "expand", "repeat", "logaddexp",
           "multinomial"]
