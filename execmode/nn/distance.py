"""Similarities, distances and resampling of ``torch.nn.functional``: ``cosine_similarity``,
``pairwise_distance``, ``unfold`` (every window as a column: convolution's own ``im2col``)
and ``interpolate`` (nearest, whole-number scales). Composites of em ops: they trace and
differentiate as the ops do."""

from __future__ import annotations

from .. import functional as F
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from ..scope import named_scope


@named_scope("cosine_similarity")
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """``sum(x1 * x2) / sqrt(max(sum(x1^2) * sum(x2^2), eps^2))`` along ``dim`` (PyTorch's
    formula), the operands broadcast."""
    x1, x2 = F._require_tensor("cosine_similarity", x1), F._require_tensor(
        "cosine_similarity", x2)
    dot = F.sum(x1 * x2, axis=dim)
    squares = F.sum(x1 * x1, axis=dim) * F.sum(x2 * x2, axis=dim)
    return dot / F.sqrt(F.maximum(squares, eps * eps))


@named_scope("pairwise_distance")
def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """``||x1 - x2 + eps||_p`` over the last axis (PyTorch's ``F.pairwise_distance``)."""
    x1 = F._require_tensor("pairwise_distance", x1)
    return (x1 - x2 + eps).norm(p, dim=-1, keepdim=keepdim)


def _pair(op, name, value, x):
    if isinstance(value, int):
        return value, value
    if isinstance(value, tuple | list) and len(value) == 2 and all(
            isinstance(v, int) for v in value):
        return tuple(value)
    raise op_error(ArgumentError, op, (x,), f"{name} must be an int or a pair, got {value!r}")


@named_scope("unfold")
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Every ``kernel_size`` window of a (N, C, H, W) tensor as a column: (N, C * kh * kw,
    L), PyTorch's ``F.unfold`` (im2col; ``conv2d`` is a matmul with it)."""
    x = F._require_tensor("unfold", input)
    if x.ndim != 4:
        raise op_error(ShapeError, "unfold", (x,), "expects a 4-d (N, C, H, W) input")
    kernel = _pair("unfold", "kernel_size", kernel_size, x)
    dil, pad, step = (_pair("unfold", n, v, x) for n, v in (
        ("dilation", dilation), ("padding", padding), ("stride", stride)))
    if any(pad):
        x = F.apply(OPS["pad"], x, widths=((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])),
                    value=0)
    return F.apply(OPS["im2col"], x, kernel=kernel, stride=step, dilation=dil)


@named_scope("interpolate")
def interpolate(input, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
                align_corners=None, recompute_scale_factor=None, antialias=False):
    """Resize the spatial axes (after N, C) by whole-number factors, ``mode="nearest"``
    (each element repeated): PyTorch's ``F.interpolate`` for upsampling as U-Nets and
    GAN generators use it. Other modes and fractional factors are refused."""
    x = F._require_tensor("interpolate", input)
    spatial = x.shape[2:]
    if mode != "nearest":
        raise op_error(ArgumentError, "interpolate", (x,), f"mode={mode!r} is not "
                       "supported; mode='nearest' with whole-number factors is")
    if (size is None) == (scale_factor is None):
        raise op_error(ArgumentError, "interpolate", (x,), "give exactly one of size and "
                       "scale_factor")
    if size is not None:
        sizes = (size,) * len(spatial) if isinstance(size, int) else tuple(size)
        factors = [s // n if n and s % n == 0 else None for s, n in zip(sizes, spatial)]
    else:
        scales = (scale_factor,) * len(spatial) if isinstance(scale_factor, int | float) \
            else tuple(scale_factor)
        factors = [int(f) if float(f).is_integer() and f >= 1 else None for f in scales]
    if len(factors) != len(spatial) or None in factors:
        raise op_error(ArgumentError, "interpolate", (x,), "only whole-number upsampling "
                       f"factors are supported (input spatial size {tuple(spatial)})")
    for axis, factor in enumerate(factors, start=2):
        if factor != 1:
            x = F.repeat_interleave(x, factor, dim=axis)
    return x


__all__ = ["cosine_similarity", "interpolate", "pairwise_distance", "unfold"]
