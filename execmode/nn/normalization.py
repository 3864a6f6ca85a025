"""Group normalization, RMS normalization and ``F.normalize``, with PyTorch's arguments.

(LayerNorm is in layers.py, BatchNorm in batchnorm.py.) Each is a composite of
reductions and elementwise ops in a named scope, so it differentiates and fuses as they
do; the variance is the biased one, as PyTorch's.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..scope import named_scope
from .module import Module, Parameter


@named_scope("group_norm")
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):  # noqa: A002
    """Normalize (N, C, ...) over each group of ``C / num_groups`` channels (and every
    position), then scale and shift per channel."""
    x = F._require_tensor("group_norm", input)
    if x.ndim < 2:
        raise op_error(ShapeError, "group_norm", (x,),
                       f"expects an input (N, C, ...), got shape {tuple(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    if not F._is_int(num_groups) or num_groups < 1 or c % num_groups:
        raise op_error(ArgumentError, "group_norm", (x,),
                       f"num_groups {num_groups!r} must divide the {c} channels")
    grouped = F.reshape(x, (n, num_groups, -1))
    mu = F.mean(grouped, axis=-1, keepdims=True)
    d = grouped - mu
    var = F.mean(d * d, axis=-1, keepdims=True)
    y = F.reshape(d / F.sqrt(var + eps), x.shape)
    per_channel = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * F.reshape(weight, per_channel)
    if bias is not None:
        y = y + F.reshape(bias, per_channel)
    return y


@named_scope("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):  # noqa: A002
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last ``len(normalized_shape)``
    dims (PyTorch's; ``eps=None`` is the dtype's machine epsilon)."""
    x = F._require_tensor("rms_norm", input)
    shape = (normalized_shape,) if F._is_int(normalized_shape) else tuple(normalized_shape)
    k = len(shape)
    if x.ndim < k or tuple(x.shape[x.ndim - k:]) != shape:
        raise op_error(ShapeError, "rms_norm", (x,), f"the last dims must be {shape}")
    if eps is None:
        eps = float(np.finfo(x.dtype).eps)
    axes = tuple(range(x.ndim - k, x.ndim))
    y = x / F.sqrt(F.mean(x * x, axis=axes, keepdims=True) + eps)
    return y * weight if weight is not None else y


@named_scope("normalize")
def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):  # noqa: A002
    """``x / max(||x||_p, eps)`` along ``dim`` (PyTorch's ``F.normalize``)."""
    x = F._require_tensor("normalize", input)
    a = F.abs(x)
    if p == 2:
        norm = F.sqrt(F.sum(x * x, axis=dim, keepdims=True))
    elif p == 1:
        norm = F.sum(a, axis=dim, keepdims=True)
    elif p == float("inf"):
        norm = F.max(a, axis=dim, keepdims=True)
    else:
        norm = F.power(F.sum(F.power(a, p), axis=dim, keepdims=True), 1.0 / p)
    return x / F.maximum(norm, eps)


class GroupNorm(Module):
    """Group normalization (Wu & He): ``num_channels`` split into ``num_groups`` groups;
    ``weight`` and ``bias`` per channel (ones and zeros) when ``affine``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, *, device=None, dtype=None):
        super().__init__()
        if not isinstance(num_groups, int) or num_groups < 1 or num_channels % num_groups:
            raise op_error(ArgumentError, "GroupNorm", (),
                           f"num_groups {num_groups!r} must divide num_channels "
                           f"{num_channels!r}")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.affine = affine
        self.weight = Parameter(F.ones(num_channels, dtype=dtype, device=device)) \
            if affine else None
        self.bias = Parameter(F.zeros(num_channels, dtype=dtype, device=device)) \
            if affine else None

    def forward(self, x):
        """``group_norm(x, num_groups, weight, bias, eps)``; x is (N, C, ...)."""
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise op_error(ShapeError, "GroupNorm", (x,),
                           f"expects {self.num_channels} channels in dimension 1, got shape "
                           f"{tuple(x.shape)}")
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """Root-mean-square normalization over the last dims (``weight`` of ones when
    ``elementwise_affine``), as PyTorch's ``nn.RMSNorm``."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, *, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(F.ones(shape, dtype=dtype, device=device)) \
            if elementwise_affine else None

    def forward(self, x):
        """``rms_norm(x, normalized_shape, weight, eps)``."""
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, " \
               f"elementwise_affine={self.elementwise_affine}"


__all__ = ["GroupNorm", "RMSNorm", "group_norm", "normalize", "rms_norm"]
