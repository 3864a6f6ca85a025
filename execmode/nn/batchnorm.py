"""BatchNorm1d / BatchNorm2d, with running statistics as buffers.

In training mode a batch is normalized with its own mean and (biased) variance, and the
buffers ``running_mean``, ``running_var`` (unbiased variance, as PyTorch keeps it) and
``num_batches_tracked`` are updated in place under ``no_grad``. Those are in-place writes
of captured tensors, so under ``em.jit`` they become assign nodes of the step's graph and
the statistics advance exactly as eagerly. In eval mode the running statistics are used.
"""

from __future__ import annotations

import math

from .. import functional as F
from ..dtypes import int64
from ..errors import ArgumentError, ShapeError
from ..grad_mode import no_grad
from ..op_errors import op_error
from .module import Module, Parameter


class _BatchNorm(Module):
    _input_ndims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, *, dtype=None,
                 device=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        shape = (num_features,)
        self.weight = Parameter(F.ones(shape, dtype=dtype, device=device)) if affine else None
        self.bias = Parameter(F.zeros(shape, dtype=dtype, device=device)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", F.zeros(shape, dtype=dtype, device=device))
            self.register_buffer("running_var", F.ones(shape, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked",
                                 F.zeros((), dtype=int64, device=device))

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                F.assign(self.running_mean, F.zeros_like(self.running_mean))
                F.assign(self.running_var, F.ones_like(self.running_var))
                F.assign(self.num_batches_tracked, F.zeros_like(self.num_batches_tracked))

    def _check(self, x) -> None:
        name = type(self).__name__
        if x.ndim not in self._input_ndims:
            want = " or ".join(f"{n}-d" for n in self._input_ndims)
            raise op_error(ShapeError, name, (x,), f"expects a {want} input (N, C, ...), "
                           f"got shape {tuple(x.shape)}")
        if x.shape[1] != self.num_features:
            raise op_error(ShapeError, name, (x,), f"expects {self.num_features} channels "
                           f"in dimension 1, got shape {tuple(x.shape)}")

    def forward(self, x):
        """Normalized ``x``: by the batch's statistics while training (updating the running
        ones), by the running statistics in eval."""
        self._check(x)
        use_batch = self.training or not self.track_running_stats
        update = self.training and self.track_running_stats
        factor = self.momentum
        if update:
            with no_grad():
                F.assign(self.num_batches_tracked, self.num_batches_tracked + 1)
            if self.momentum is None:  # a cumulative average, as PyTorch
                factor = 1.0 / F.astype(self.num_batches_tracked, self.running_mean.dtype)
        return _batch_norm(type(self).__name__, x,
                           self.running_mean if update or not use_batch else None,
                           self.running_var if update or not use_batch else None,
                           self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5):
    """PyTorch's ``F.batch_norm``: normalize (N, C, ...) per channel by the batch's
    statistics (``training``; the running ones, when given, move by ``momentum`` in
    place, the variance unbiased) or by ``running_mean``/``running_var``."""
    return _batch_norm("batch_norm", input, running_mean, running_var, weight, bias,
                       training, momentum, eps)


def _batch_norm(op, x, running_mean, running_var, weight, bias, training, momentum, eps):
    x = F._require_tensor(op, x)
    if x.ndim < 2:
        raise op_error(ShapeError, op, (x,), f"expects an input (N, C, ...), got shape "
                                            f"{tuple(x.shape)}")
    channels = x.shape[1]
    axes = (0, *range(2, x.ndim))  # every dimension but the channels
    per_channel = (1, channels) + (1,) * (x.ndim - 2)
    if training:
        count = math.prod(x.shape) // channels  # values per channel
        if count <= 1:
            raise op_error(ShapeError, op, (x,),
                           f"expects more than 1 value per channel when training, got "
                           f"input shape {tuple(x.shape)}")
        mean = F.mean(x, axis=axes, keepdims=True)
        var = F.var(x, axis=axes, keepdims=True)
        if running_mean is not None:
            with no_grad():
                batch_mean = F.reshape(mean.detach(), (channels,))
                batch_var = F.reshape(var.detach(), (channels,)) * (count / (count - 1))
                F.assign(running_mean, (1 - momentum) * running_mean + momentum * batch_mean)
                F.assign(running_var, (1 - momentum) * running_var + momentum * batch_var)
    else:
        if running_mean is None or running_var is None:
            raise op_error(ArgumentError, op, (x,), "running_mean and running_var are needed "
                                                   "when not training")
        mean = F.reshape(running_mean, per_channel)
        var = F.reshape(running_var, per_channel)
    y = (x - mean) / F.sqrt(var + eps)
    if weight is not None:
        y = y * F.reshape(weight, per_channel)
    if bias is not None:
        y = y + F.reshape(bias, per_channel)
    return y


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs."""

    _input_ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs."""

    _input_ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) inputs."""

    _input_ndims = (5,)


__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "batch_norm"]
