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
from ..errors import ShapeError, op_error
from ..grad_mode import no_grad
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
        self._check(x)
        axes = (0, *range(2, x.ndim))  # every dimension but the channels
        per_channel = (1, self.num_features) + (1,) * (x.ndim - 2)
        use_batch = self.training or not self.track_running_stats
        if use_batch:
            count = math.prod(x.shape) // self.num_features  # values per channel
            if count <= 1:
                raise op_error(ShapeError, type(self).__name__, (x,),
                               f"expects more than 1 value per channel when training, got "
                               f"input shape {tuple(x.shape)}")
            mean = F.mean(x, axis=axes, keepdims=True)
            var = F.var(x, axis=axes, keepdims=True)
            if self.training and self.track_running_stats:
                self._update_running(mean, var, count)
        else:
            mean = F.reshape(self.running_mean, per_channel)
            var = F.reshape(self.running_var, per_channel)
        y = (x - mean) / F.sqrt(var + self.eps)
        if self.affine:
            y = y * F.reshape(self.weight, per_channel) + F.reshape(self.bias, per_channel)
        return y

    def _update_running(self, mean, var, count: int) -> None:
        with no_grad():
            F.assign(self.num_batches_tracked, self.num_batches_tracked + 1)
            if self.momentum is None:  # a cumulative average, as PyTorch
                factor = 1.0 / F.astype(self.num_batches_tracked, self.running_mean.dtype)
            else:
                factor = self.momentum
            batch_mean = F.reshape(mean.detach(), (self.num_features,))
            batch_var = F.reshape(var.detach(), (self.num_features,)) * (count / (count - 1))
            F.assign(self.running_mean, (1 - factor) * self.running_mean + factor * batch_mean)
            F.assign(self.running_var, (1 - factor) * self.running_var + factor * batch_var)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs."""

    _input_ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs."""

    _input_ndims = (4,)


__all__ = ["BatchNorm1d", "BatchNorm2d"]
