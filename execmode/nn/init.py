"""``em.nn.init``: PyTorch's initializers, filling a tensor in place.

Each draws from ``em.random`` (so ``em.random.seed(n)`` makes it reproducible), writes
under ``no_grad`` into the tensor's own storage (a Parameter stays the same object, so an
optimizer built before still holds it) and returns the tensor. Fans and gains follow
PyTorch's ``torch.nn.init`` (fan_in = shape[1] * receptive field, fan_out = shape[0] *
receptive field).
"""

from __future__ import annotations

import math

from .. import functional as F
from .. import random as em_random
from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..grad_mode import no_grad
from .module import copy_into

_GAINS = {"linear": 1.0, "identity": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3,
          "relu": math.sqrt(2.0), "selu": 3.0 / 4}
_CONV = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
         "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity, as ``torch.nn.init.calculate_gain``."""
    if nonlinearity in _CONV:
        return 1.0
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity in _GAINS:
        return _GAINS[nonlinearity]
    raise ArgumentError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}; known: "
                        f"{', '.join(sorted([*_GAINS, 'leaky_relu', *_CONV]))}")


def _fans(tensor: Tensor, fn: str) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ShapeError(f"nn.init.{fn}: fan in and fan out need a tensor with at least 2 "
                         f"dimensions, got shape {tuple(tensor.shape)}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fill(tensor: Tensor, fn: str, values) -> Tensor:
    with no_grad():
        copy_into(tensor, values)
    return tensor


def _check(tensor, fn: str) -> None:
    if not isinstance(tensor, Tensor):
        raise ArgumentError(f"nn.init.{fn} fills a Tensor in place, got "
                            f"{type(tensor).__name__}")
    if tensor.dtype.kind != "f" and fn not in ("zeros_", "ones_", "constant_"):
        raise ArgumentError(f"nn.init.{fn} needs a floating-point tensor, got {tensor.dtype}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with U(a, b)."""
    _check(tensor, "uniform_")
    return _fill(tensor, "uniform_", em_random.uniform(tensor.shape, a, b, dtype=tensor.dtype,
                                                       device=tensor.device))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with N(mean, std^2)."""
    _check(tensor, "normal_")
    return _fill(tensor, "normal_", em_random.normal(tensor.shape, mean, std,
                                                     dtype=tensor.dtype, device=tensor.device))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``, in place; returns it."""
    _check(tensor, "constant_")
    return _fill(tensor, "constant_", F.full(tensor.shape, val, dtype=tensor.dtype,
                                             device=tensor.device))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros, in place; returns it."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones, in place; returns it."""
    return constant_(tensor, 1)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor, a, mode, nonlinearity, fn) -> float:
    _check(tensor, fn)
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"nn.init.{fn}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, fn)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """He: U(-b, b), b = gain * sqrt(3 / fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """He: N(0, std^2), std = gain / sqrt(fan)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"))


__all__ = ["calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_",
           "ones_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_"]
