"""Padding and convolution, with PyTorch's arguments and weight layout.

A convolution is ``pad`` -> ``im2col`` (every window as a column) -> one batched BLAS
matmul with the (out, in/groups * kh * kw) weight matrix -> reshape. The primitives are in
``execmode/ops/conv.py``; their vjps give the input, weight and bias gradients, and under
``em.jit`` each is a plan step, so a convolution never breaks a graph.

conv1d is conv2d over a height of 1.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..errors import ArgumentError, DTypeError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from ..scope import named_scope

PAD_MODES = ("constant", "reflect", "replicate", "circular")


# --- argument checks shared by conv and pooling -----------------------------------------

def tuple_arg(op: str, name: str, value, n: int, operands, *, minimum: int) -> tuple:
    """An int or a sequence of ``n`` ints, each at least ``minimum``, as a tuple of ``n``."""
    items = (value,) * n if F._is_int(value) else value
    if not isinstance(items, tuple | list) or len(items) != n \
            or not all(F._is_int(v) for v in items):
        raise op_error(ArgumentError, op, operands,
                       f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    items = tuple(int(v) for v in items)
    if any(v < minimum for v in items):
        raise op_error(ArgumentError, op, operands,
                       f"{name} must be at least {minimum}, got {value!r}")
    return items


def check_rank(op: str, x, ranks: tuple, layout: str, operands) -> None:
    if x.ndim not in ranks:
        raise op_error(ShapeError, op, operands,
                       f"expected a {layout} input (rank {' or '.join(map(str, ranks))}), "
                       f"got rank {x.ndim}")


def check_windows_fit(op: str, size, kernel, stride, dilation, operands) -> None:
    """Name the spatial sizes when not even one window fits (the primitive would say less)."""
    for s, k, d in zip(size, kernel, dilation):
        if d * (k - 1) + 1 > s:
            raise op_error(ShapeError, op, operands,
                           f"kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger "
                           f"than the padded input {tuple(size)}")


# --- pad --------------------------------------------------------------------------------

@named_scope("pad")
def pad(input, pad, mode: str = "constant", value=None):  # noqa: A002 - PyTorch's names
    """PyTorch's ``F.pad``: ``pad`` lists (before, after) pairs from the *last* axis
    backwards, so ``(1, 1, 2, 0)`` pads the last axis by 1 on both sides and the one before
    it by 2 at the start. Negative widths crop (constant mode). Modes: constant (``value``,
    default 0), reflect (mirror without repeating the edge), replicate (repeat the edge),
    circular (wrap around)."""
    x = F._require_tensor("pad", input)
    if not isinstance(pad, tuple | list) or len(pad) % 2 \
            or not all(F._is_int(p) for p in pad):
        raise op_error(ArgumentError, "pad", (x,),
                       f"pad must be a tuple of an even number of ints, got {pad!r}")
    if len(pad) // 2 > x.ndim:
        raise op_error(ShapeError, "pad", (x,),
                       f"pad {tuple(pad)} has {len(pad) // 2} pairs for a tensor of rank "
                       f"{x.ndim}")
    if not isinstance(mode, str) or mode not in PAD_MODES:
        raise op_error(ArgumentError, "pad", (x,),
                       f"mode must be one of {', '.join(PAD_MODES)}, got {mode!r}")
    if value is not None and mode != "constant":
        raise op_error(ArgumentError, "pad", (x,),
                       f"value is only used in constant mode, not {mode!r}")
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (F.size_arg(pad[2 * k]), F.size_arg(pad[2 * k + 1]))
    if mode == "constant":
        fill = 0 if value is None else F._number_arg("pad", "value", value, (x,))
        return _pad_constant(x, widths, fill)
    return _pad_by_index(x, widths, mode)


def _pad_constant(x, widths, fill):
    if any(b < 0 or a < 0 for b, a in widths):
        # Negative widths crop first (as PyTorch), then the rest pads.
        crop = tuple(slice(max(-b, 0), d - max(-a, 0)) for d, (b, a) in zip(x.shape, widths))
        if any(s.start > s.stop for s in crop):
            raise op_error(ShapeError, "pad", (x,),
                           f"negative pad widths crop more than the tensor {tuple(x.shape)}")
        x = F.getitem(x, crop)
        widths = [(max(b, 0), max(a, 0)) for b, a in widths]
    return F.apply(OPS["pad"], x, widths=tuple(widths), value=fill)


def _pad_by_index(x, widths, mode):
    """reflect/replicate/circular: a gather of source positions along each padded axis (so
    the gradient is getitem's: repeated positions add up)."""
    for axis, (before, after) in enumerate(widths):
        if before == 0 and after == 0:
            continue
        size = x.shape[axis]
        if before < 0 or after < 0:
            raise op_error(ArgumentError, "pad", (x,),
                           f"negative pad widths are only allowed in constant mode ({mode})")
        limit = size - 1 if mode == "reflect" else size
        if before > limit or after > limit or size == 0:
            raise op_error(ShapeError, "pad", (x,),
                           f"{mode} padding of ({before}, {after}) on axis {axis} needs "
                           f"widths below the size {size}" + (" minus 1" if mode == "reflect"
                                                               else ""))
        positions = np.arange(-before, size + after)
        if mode == "reflect":
            positions = np.abs(positions)
            positions = np.where(positions >= size, 2 * (size - 1) - positions, positions)
        elif mode == "replicate":
            positions = np.clip(positions, 0, size - 1)
        else:
            positions = positions % size
        index = (slice(None),) * axis + (F.tensor(positions.astype(np.int64),
                                                  device=x.device),)
        x = F.getitem(x, index)
    return x


# --- convolution ------------------------------------------------------------------------

@named_scope("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-D convolution (cross-correlation, as PyTorch): input (N, C, H, W) or (C, H, W),
    weight (out, C/groups, kh, kw), bias (out,). ``padding``: an int, a pair, ``"valid"``
    (none) or ``"same"`` (the output has the input's size; stride 1 only)."""
    return _convolve("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@named_scope("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-D convolution: input (N, C, L) or (C, L), weight (out, C/groups, k), bias (out,)."""
    return _convolve("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _convolve(op, dims, x, weight, bias, stride, padding, dilation, groups):
    operands = (x, weight) if bias is None else (x, weight, bias)
    x = F._require_tensor(op, x, operands)
    weight = F._require_tensor(op, weight, operands)
    if bias is not None:
        bias = F._require_tensor(op, bias, operands)
    layout = "(N, C, H, W) or (C, H, W)" if dims == 2 else "(N, C, L) or (C, L)"
    check_rank(op, x, (dims + 1, dims + 2), layout, operands)
    if weight.ndim != dims + 2:
        raise op_error(ShapeError, op, operands,
                       f"weight must be (out, in/groups{', kh, kw' if dims == 2 else ', k'})")
    for t in operands:
        if t.dtype.kind != "f" or t.dtype != x.dtype:
            raise op_error(DTypeError, op, operands,
                           "input, weight and bias must share one floating dtype")
    groups = F._int_arg(op, "groups", groups, operands)
    out_channels, in_per_group = weight.shape[:2]
    channels = x.shape[-dims - 1]
    if groups < 1 or channels % groups or out_channels % groups \
            or in_per_group * groups != channels:
        raise op_error(ShapeError, op, operands,
                       f"groups={groups}: input channels {channels} and weight "
                       f"{tuple(weight.shape)} do not fit (weight must be "
                       f"(out, in/groups, ...) with out and in divisible by groups)")
    if bias is not None and bias.shape != (out_channels,):
        raise op_error(ShapeError, op, operands, f"bias must have shape ({out_channels},)")
    stride = tuple_arg(op, "stride", stride, dims, operands, minimum=1)
    dilation = tuple_arg(op, "dilation", dilation, dims, operands, minimum=1)
    kernel = tuple(weight.shape[2:])
    widths = conv_padding(op, padding, kernel, stride, dilation, operands)

    unbatched = x.ndim == dims + 1
    if unbatched:
        x = F.expand_dims(x, 0)
    if dims == 1:  # a height of 1
        x, weight = F.expand_dims(x, 2), F.expand_dims(weight, 2)
        kernel, stride, dilation = (1,) + kernel, (1,) + stride, (1,) + dilation
        widths = ((0, 0),) + widths
    out = _conv2d_core(op, x, weight, bias, stride, widths, dilation, groups, kernel,
                       operands)
    if dims == 1:
        out = F.squeeze(out, axis=2)
    return F.squeeze(out, axis=0) if unbatched else out


def conv_padding(op, padding, kernel, stride, dilation, operands) -> tuple:
    """((top, bottom), (left, right)) per spatial axis from PyTorch's ``padding``."""
    dims = len(kernel)
    if padding == "valid":
        return ((0, 0),) * dims
    if padding == "same":
        if any(s != 1 for s in stride):
            raise op_error(ArgumentError, op, operands,
                           "padding='same' needs stride 1 (as in PyTorch)")
        # An odd total pads one more after than before, as PyTorch does.
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, str):
        raise op_error(ArgumentError, op, operands,
                       f"padding must be an int, a tuple, 'valid' or 'same', got {padding!r}")
    pads = tuple_arg(op, "padding", padding, dims, operands, minimum=0)
    return tuple((p, p) for p in pads)


def _conv2d_core(op, x, weight, bias, stride, widths, dilation, groups, kernel, operands):
    n, channels, h, w = x.shape
    size = (h + sum(widths[0]), w + sum(widths[1]))
    check_windows_fit(op, size, kernel, stride, dilation, operands)
    if any(b or a for b, a in widths):
        x = F.apply(OPS["pad"], x, widths=((0, 0), (0, 0)) + tuple(widths), value=0)
    cols = F.apply(OPS["im2col"], x, kernel=kernel, stride=stride, dilation=dilation)
    out_channels = weight.shape[0]
    rows = cols.shape[1] // groups
    if groups == 1:
        out = F.matmul(F.reshape(weight, (out_channels, rows)), cols)
    else:
        # (groups, out/groups, rows) @ (N, groups, rows, L) -> (N, groups, out/groups, L)
        cols = F.reshape(cols, (n, groups, rows, cols.shape[2]))
        w = F.reshape(weight, (groups, out_channels // groups, rows))
        out = F.matmul(w, cols)
    oh = (size[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (size[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = F.reshape(out, (n, out_channels, oh, ow))
    if bias is not None:
        out = out + F.reshape(bias, (out_channels, 1, 1))
    return out


# --- transposed convolution -----------------------------------------------------------------

@named_scope("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """The adjoint of conv2d (a "deconvolution"), PyTorch's: input (N, C_in, H, W) or
    (C_in, H, W), weight (C_in, C_out/groups, kh, kw), bias (C_out,). The output is
    (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1 high (and
    likewise wide): the weight's transpose times the input, summed back into an image by
    ``col2im`` (im2col's adjoint), then cropped by ``padding``."""
    return _convolve_transposed("conv_transpose2d", 2, input, weight, bias, stride, padding,
                                output_padding, groups, dilation)


@named_scope("conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """conv_transpose2d over a height of 1: input (N, C_in, L), weight (C_in, C_out/groups,
    k)."""
    return _convolve_transposed("conv_transpose1d", 1, input, weight, bias, stride, padding,
                                output_padding, groups, dilation)


def _convolve_transposed(op, dims, x, weight, bias, stride, padding, output_padding, groups,
                         dilation):
    operands = (x, weight) if bias is None else (x, weight, bias)
    x = F._require_tensor(op, x, operands)
    weight = F._require_tensor(op, weight, operands)
    if bias is not None:
        bias = F._require_tensor(op, bias, operands)
    layout = "(N, C, H, W) or (C, H, W)" if dims == 2 else "(N, C, L) or (C, L)"
    check_rank(op, x, (dims + 1, dims + 2), layout, operands)
    if weight.ndim != dims + 2:
        raise op_error(ShapeError, op, operands,
                       f"weight must be (in, out/groups{', kh, kw' if dims == 2 else ', k'})")
    for t in operands:
        if t.dtype.kind != "f" or t.dtype != x.dtype:
            raise op_error(DTypeError, op, operands,
                           "input, weight and bias must share one floating dtype")
    groups = F._int_arg(op, "groups", groups, operands)
    in_channels, out_per_group = weight.shape[:2]
    channels = x.shape[-dims - 1]
    if groups < 1 or in_channels % groups or channels != in_channels:
        raise op_error(ShapeError, op, operands,
                       f"groups={groups}: input channels {channels} and weight "
                       f"{tuple(weight.shape)} do not fit (weight must be "
                       f"(in, out/groups, ...) with in divisible by groups)")
    out_channels = out_per_group * groups
    if bias is not None and bias.shape != (out_channels,):
        raise op_error(ShapeError, op, operands, f"bias must have shape ({out_channels},)")
    stride = tuple_arg(op, "stride", stride, dims, operands, minimum=1)
    dilation = tuple_arg(op, "dilation", dilation, dims, operands, minimum=1)
    pads = tuple_arg(op, "padding", padding, dims, operands, minimum=0)
    extra = tuple_arg(op, "output_padding", output_padding, dims, operands, minimum=0)
    if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise op_error(ArgumentError, op, operands,
                       f"output_padding {extra} must be smaller than stride {stride} or "
                       f"dilation {dilation}")
    kernel = tuple(weight.shape[2:])
    unbatched = x.ndim == dims + 1
    if unbatched:
        x = F.expand_dims(x, 0)
    if dims == 1:  # a height of 1
        x, weight = F.expand_dims(x, 2), F.expand_dims(weight, 2)
        kernel, stride, dilation = (1,) + kernel, (1,) + stride, (1,) + dilation
        pads, extra = (0,) + pads, (0,) + extra
    n, _, h, w = x.shape
    full = tuple((size - 1) * s + d * (k - 1) + 1 + e for size, s, d, k, e in
                 zip((h, w), stride, dilation, kernel, extra))
    if any(f - 2 * p <= 0 for f, p in zip(full, pads)):
        raise op_error(ShapeError, op, operands,
                       f"padding {pads} leaves no output of the {full} image")
    k = kernel[0] * kernel[1]
    cols = F.reshape(x, (n, groups, in_channels // groups, h * w))
    wt = F.matrix_transpose(F.reshape(weight, (groups, in_channels // groups,
                                               out_per_group * k)))
    cols = F.reshape(F.matmul(wt, cols), (n, out_channels * k, h * w))
    out = F.apply(OPS["col2im"], cols, size=full, kernel=kernel, stride=stride,
                  dilation=dilation)
    if any(pads):
        out = out[:, :, pads[0]:full[0] - pads[0], pads[1]:full[1] - pads[1]]
    if bias is not None:
        out = out + F.reshape(bias, (out_channels, 1, 1))
    if dims == 1:
        out = F.squeeze(out, axis=2)
    return F.squeeze(out, axis=0) if unbatched else out
