"""Convolution and pooling layers: Conv1d, Conv2d, ConvTranspose1d/2d, MaxPool1d/2d,
AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d.

Initialised as PyTorch initialises them (kaiming_uniform_ with a = sqrt(5) for the weight,
which is uniform in +-1/sqrt(fan_in), and the bias in the same range), with parameter
names that match a PyTorch ``state_dict`` ("weight", "bias").
"""

from __future__ import annotations

import math

from .. import random as em_random
from ..errors import ArgumentError
from ..op_errors import op_error
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
    """The maximum of each window over (N, C, H, W): ``nn.functional.max_pool2d``'s
    arguments, fixed at construction."""

    _pool = staticmethod(P.max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        """The pooled ``x`` (and the indices, with ``return_indices``)."""
        return self._pool(x, self.kernel_size, self.stride, self.padding, self.dilation,
                  self.ceil_mode, self.return_indices)

    def __repr__(self) -> str:
        stride = self.kernel_size if self.stride is None else self.stride
        return (f"{type(self).__name__}(kernel_size={self.kernel_size}, stride={stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode})")


class MaxPool1d(MaxPool2d):
    """MaxPool2d over (N, C, L)."""

    _pool = staticmethod(P.max_pool1d)


class AvgPool2d(Module):
    """The mean of each window over (N, C, H, W): ``nn.functional.avg_pool2d``'s
    arguments, fixed at construction."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        """The pooled ``x``."""
        return P.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def __repr__(self) -> str:
        stride = self.kernel_size if self.stride is None else self.stride
        return f"{type(self).__name__}(kernel_size={self.kernel_size}, stride={stride}, " \
               f"padding={self.padding})"


class AvgPool1d(AvgPool2d):
    """AvgPool2d over (N, C, L)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)

    def forward(self, x):
        """The pooled ``x``."""
        return P.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _ConvTransposeNd(Module):
    dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros", *,
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        n = self.dims
        if not isinstance(in_channels, int) or not isinstance(out_channels, int) \
                or not isinstance(groups, int) or groups < 1 \
                or in_channels % groups or out_channels % groups:
            raise op_error(ArgumentError, name, (),
                           f"in_channels {in_channels!r} and out_channels {out_channels!r} "
                           f"must be ints divisible by groups {groups!r}")
        if padding_mode != "zeros":
            raise op_error(ArgumentError, name, (),
                           f"only padding_mode='zeros' is supported (as PyTorch), got "
                           f"{padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = C.tuple_arg(name, "kernel_size", kernel_size, n, (), minimum=1)
        self.stride = C.tuple_arg(name, "stride", stride, n, (), minimum=1)
        self.padding = C.tuple_arg(name, "padding", padding, n, (), minimum=0)
        self.output_padding = C.tuple_arg(name, "output_padding", output_padding, n, (),
                                          minimum=0)
        self.dilation = C.tuple_arg(name, "dilation", dilation, n, (), minimum=1)
        self.padding_mode = padding_mode
        # PyTorch's init: the fan-in of a (in, out/groups, k...) weight is out/groups * k.
        fan_in = out_channels // groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in)
        shape = (in_channels, out_channels // groups) + self.kernel_size
        self.weight = Parameter(em_random.uniform(shape, -bound, bound, dtype=dtype,
                                                  device=device))
        self.bias = (Parameter(em_random.uniform((out_channels,), -bound, bound, dtype=dtype,
                                                 device=device)) if bias else None)

    def forward(self, x, output_size=None):
        """The transposed convolution of ``x``; ``output_size`` (the spatial sizes, or
        the whole shape) picks the output padding that gives them, as PyTorch's."""
        extra = self.output_padding
        if output_size is not None:
            extra = self._output_padding(x, output_size)
        fn = C.conv_transpose2d if self.dims == 2 else C.conv_transpose1d
        return fn(x, self.weight, self.bias, self.stride, self.padding, extra, self.groups,
                  self.dilation)

    def _output_padding(self, x, output_size):
        wanted = tuple(output_size)[-self.dims:]
        extra = []
        for k in range(self.dims):
            size = x.shape[x.ndim - self.dims + k]
            least = (size - 1) * self.stride[k] - 2 * self.padding[k] + \
                self.dilation[k] * (self.kernel_size[k] - 1) + 1
            if not least <= wanted[k] < least + self.stride[k]:
                raise op_error(ArgumentError, type(self).__name__, (x,),
                               f"output_size {tuple(output_size)} is not reachable: sizes "
                               f"{least} to {least + self.stride[k] - 1} along that axis")
            extra.append(wanted[k] - least)
        return tuple(extra)

    def __repr__(self) -> str:
        text = (f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.output_padding != (0,) * self.dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text + ")"


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W): weight (in, out/groups, kh, kw)."""

    dims = 2


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L): weight (in, out/groups, k)."""

    dims = 1


class AdaptiveAvgPool2d(Module):
    """The mean over PyTorch's adaptive windows, to ``output_size`` (an int, or a pair
    whose None keeps the input's size): ``AdaptiveAvgPool2d(1)`` is global average
    pooling."""

    _pool = staticmethod(P.adaptive_avg_pool2d)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        """The pooled ``x``."""
        return self._pool(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """AdaptiveAvgPool2d over (N, C, L)."""

    _pool = staticmethod(P.adaptive_avg_pool1d)


class AdaptiveMaxPool2d(Module):
    """The maximum over PyTorch's adaptive windows, to ``output_size``."""

    _pool = staticmethod(P.adaptive_max_pool2d)

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        """The pooled ``x`` (and the indices, with ``return_indices``)."""
        return self._pool(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """AdaptiveMaxPool2d over (N, C, L)."""

    _pool = staticmethod(P.adaptive_max_pool1d)
