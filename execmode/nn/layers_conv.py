"""Convolution and pooling layers: Conv1d, Conv2d, MaxPool1d/2d, AvgPool1d/2d.

Initialised as PyTorch initialises them (kaiming_uniform_ with a = sqrt(5) for the weight,
which is uniform in +-1/sqrt(fan_in), and the bias in the same range), with parameter
names that match a PyTorch ``state_dict`` ("weight", "bias").
"""

from __future__ import annotations

import math

from .. import random as em_random
from ..errors import ArgumentError, op_error
from . import conv as C
from . import pooling as P
from .modules import Module, Parameter

PADDING_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "replicate",
                 "circular": "circular"}


class _ConvNd(Module):
    dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", *, device=None,
                 dtype=None):
        super().__init__()
        name = type(self).__name__
        n = self.dims
        if not isinstance(in_channels, int) or not isinstance(out_channels, int) \
                or not isinstance(groups, int) or groups < 1 \
                or in_channels % groups or out_channels % groups:
            raise op_error(ArgumentError, name, (),
                           f"in_channels {in_channels!r} and out_channels {out_channels!r} "
                           f"must be ints divisible by groups {groups!r}")
        if padding_mode not in PADDING_MODES:
            raise op_error(ArgumentError, name, (),
                           f"padding_mode must be one of {', '.join(PADDING_MODES)}, got "
                           f"{padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = C.tuple_arg(name, "kernel_size", kernel_size, n, (), minimum=1)
        self.stride = C.tuple_arg(name, "stride", stride, n, (), minimum=1)
        self.dilation = C.tuple_arg(name, "dilation", dilation, n, (), minimum=1)
        self.padding = padding if isinstance(padding, str) else \
            C.tuple_arg(name, "padding", padding, n, (), minimum=0)
        self.padding_mode = padding_mode
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in)
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(em_random.uniform(shape, -bound, bound, dtype=dtype,
                                                  device=device))
        self.bias = (Parameter(em_random.uniform((out_channels,), -bound, bound, dtype=dtype,
                                                 device=device)) if bias else None)

    def forward(self, x):
        fn = C.conv2d if self.dims == 2 else C.conv1d
        if self.padding_mode == "zeros":
            return fn(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups)
        # Other modes pad first (PyTorch's order: the last axis first), then convolve.
        widths = C.conv_padding(type(self).__name__, self.padding, self.kernel_size,
                                self.stride, self.dilation, (x,))
        flat = tuple(w for pair in reversed(widths) for w in pair)
        x = C.pad(x, flat, mode=PADDING_MODES[self.padding_mode])
        return fn(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def __repr__(self) -> str:
        text = (f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode!r}"
        return text + ")"


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W): weight (out, in/groups, kh, kw)."""

    dims = 2


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L): weight (out, in/groups, k)."""

    dims = 1


class MaxPool2d(Module):
    _pool = staticmethod(P.max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        return self._pool(x, self.kernel_size, self.stride, self.padding, self.dilation,
                  self.ceil_mode, self.return_indices)

    def __repr__(self) -> str:
        stride = self.kernel_size if self.stride is None else self.stride
        return (f"{type(self).__name__}(kernel_size={self.kernel_size}, stride={stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode})")


class MaxPool1d(MaxPool2d):
    _pool = staticmethod(P.max_pool1d)


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return P.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def __repr__(self) -> str:
        stride = self.kernel_size if self.stride is None else self.stride
        return f"{type(self).__name__}(kernel_size={self.kernel_size}, stride={stride}, " \
               f"padding={self.padding})"


class AvgPool1d(AvgPool2d):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)

    def forward(self, x):
        return P.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)
