"""Primitives behind convolution and pooling: ``pad``, ``im2col`` and its adjoint ``col2im``.

Convolutions are written over these three (``execmode.nn.conv``): pad the input, gather
every sliding window into the columns of a matrix (im2col), and multiply by the weight
matrix with BLAS. Pooling reduces the same columns. Each primitive is a plan step under
``em.jit`` (it runs its eager implementation, as matmul and indexing do), so a
convolution traces into the graph without a break.

The three are linear, and each one's vjp is another of them (pad <-> a slice,
im2col <-> col2im), so gradients of any order are available eagerly and when traced.

On CPU, im2col and col2im of float32/float64 run in C (native/windows.c, through
window_kernels.py) with the NumPy versions' bits; those stay the reference.

Every implementation returns fresh memory: the tracer treats only the ops listed in
``graph/views.py`` as views, so a 1x1 im2col must not hand back a view of its input.
"""

from __future__ import annotations

import numpy as np

from . import window_kernels
from .registry import INDEXING, F, OpDef, RuleError, register


def _same_dtype(dtypes, attrs):
    return dtypes[0]


# --- pad --------------------------------------------------------------------------------
# ``widths``: one (before, after) pair of non-negative ints per axis, NumPy's order (axis 0
# first). PyTorch's last-axis-first tuple and negative widths are handled by nn.conv.pad.

def _pad_rule(x, *, widths, value):
    if len(widths) != len(x.shape):
        raise RuleError(f"pad widths {widths} do not give one (before, after) pair for each "
                        f"of the {len(x.shape)} axes")
    if any(b < 0 or a < 0 for b, a in widths):
        raise RuleError(f"pad widths {widths} must not be negative")
    return tuple(d + b + a for d, (b, a) in zip(x.shape, widths))


def _pad_impl(xp, a, *, widths, value):
    if xp is np and a.dtype.kind == "f" and value.__class__ in (float, int) \
            and a.ndim and len(widths) == a.ndim and a.flags.c_contiguous:
        # np.pad is Python around a few copies (~2x this for a conv's input): a filled
        # array with the input copied in, the same values (the fill cast as np.pad casts
        # it) and, for a C-contiguous input, the same layout
        out = np.full(tuple(d + b + e for d, (b, e) in zip(a.shape, widths)), value, a.dtype)
        out[tuple(slice(b, b + d) for d, (b, _) in zip(a.shape, widths))] = a
        return out
    return xp.pad(a, widths, mode="constant", constant_values=value)


def _pad_vjp(g, out, x, *, widths, value):
    index = tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, widths))
    return (F.getitem(g, index),)


register(OpDef(
    name="pad", kind=INDEXING, impl=_pad_impl, shape_rule=_pad_rule, dtype_rule=_same_dtype,
    vjp=_pad_vjp,
    doc="x surrounded by `value`: widths[i] = (before, after) elements on axis i.",
))


# --- im2col / col2im --------------------------------------------------------------------
# x: (N, C, H, W), already padded. A window starts every ``stride`` elements and reads
# ``kernel`` elements spaced ``dilation`` apart. Columns: (N, C * kh * kw, OH * OW) with C
# the slowest of the three row indices, as PyTorch's unfold and its weight layout order them.

def output_size(size: int, kernel: int, stride: int, dilation: int) -> int:
    """How many windows fit along one axis (0 when even one does not fit)."""
    span = dilation * (kernel - 1) + 1
    return max(0, (size - span) // stride + 1)


def _windows_shape(shape, kernel, stride, dilation):
    if len(shape) != 4:
        raise RuleError(f"expected a (N, C, H, W) tensor, got shape {tuple(shape)}")
    n, c, h, w = shape
    oh = output_size(h, kernel[0], stride[0], dilation[0])
    ow = output_size(w, kernel[1], stride[1], dilation[1])
    if oh == 0 or ow == 0:
        raise RuleError(f"a {kernel[0]}x{kernel[1]} window (dilation {dilation}) does not "
                        f"fit in a {h}x{w} input")
    return n, c, oh, ow


def _im2col_rule(x, *, kernel, stride, dilation):
    n, c, oh, ow = _windows_shape(x.shape, kernel, stride, dilation)
    return (n, c * kernel[0] * kernel[1], oh * ow)


def _windows(xp, a, kernel, stride, dilation):
    """A strided view (N, C, kh, kw, OH, OW) of every window; no copy."""
    n, c, oh, ow = _windows_shape(a.shape, kernel, stride, dilation)
    sn, sc, sh, sw = a.strides
    shape = (n, c, kernel[0], kernel[1], oh, ow)
    strides = (sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1])
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def im2col_array(xp, a, *, kernel, stride, dilation):
    """The columns of a NumPy/CuPy array (the eager implementation, also used for
    constant tables that depend only on shapes)."""
    kernels = window_kernels.kernels_for(xp, a.dtype)
    if kernels is not None:
        n, c, oh, ow = _windows_shape(a.shape, kernel, stride, dilation)
        a = np.ascontiguousarray(a)
        cols = np.empty((n, c * kernel[0] * kernel[1], oh * ow), a.dtype)
        kernels.im2col(a, cols, _dims(n * c, a.shape[2:], (oh, ow), kernel, stride,
                                      dilation))
        return cols
    view = _windows(xp, a, kernel, stride, dilation)
    n, c, kh, kw, oh, ow = view.shape
    # copy(order="C") always copies, so the result never aliases the input (1x1 windows).
    return view.copy(order="C").reshape(n, c * kh * kw, oh * ow)


register(OpDef(
    name="im2col", kind=INDEXING, impl=im2col_array, shape_rule=_im2col_rule,
    dtype_rule=_same_dtype,
    vjp=lambda g, out, x, *, kernel, stride, dilation: (
        F.apply_op("col2im", g, size=tuple(x.shape[2:]), kernel=kernel, stride=stride,
                   dilation=dilation),),
    doc="Every sliding window of a (N, C, H, W) tensor as columns (N, C*kh*kw, OH*OW).",
))


def _col2im_rule(cols, *, size, kernel, stride, dilation):
    if len(cols.shape) != 3:
        raise RuleError(f"expected (N, C*kh*kw, L) columns, got shape {tuple(cols.shape)}")
    n, rows, length = cols.shape
    k = kernel[0] * kernel[1]
    oh = output_size(size[0], kernel[0], stride[0], dilation[0])
    ow = output_size(size[1], kernel[1], stride[1], dilation[1])
    if rows % k or length != oh * ow:
        raise RuleError(f"columns of shape {tuple(cols.shape)} are not the {kernel[0]}x"
                        f"{kernel[1]} windows of a {size[0]}x{size[1]} image")
    return (n, rows // k, size[0], size[1])


def _dims(planes, size, out_size, kernel, stride, dilation):
    return window_kernels.dims(planes, *size, out_size, kernel, stride, (0, 0), dilation)


def _col2im_impl(xp, cols, *, size, kernel, stride, dilation):
    n, rows, _ = cols.shape
    kh, kw = kernel
    c = rows // (kh * kw)
    oh = output_size(size[0], kh, stride[0], dilation[0])
    ow = output_size(size[1], kw, stride[1], dilation[1])
    kernels = window_kernels.kernels_for(xp, cols.dtype)
    if kernels is not None:  # the strided adds' order, so their bits
        out = np.empty((n, c) + tuple(size), cols.dtype)
        kernels.col2im(np.ascontiguousarray(cols), out,
                       _dims(n * c, size, (oh, ow), kernel, stride, dilation))
        return out
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    if xp is np and tuple(dilation) == (1, 1):
        if tuple(stride) == (kh, kw):
            return _col2im_tiles(blocks, size)
        if tuple(stride) == (1, 1):
            return _col2im_rows(blocks, size)
    out = xp.zeros((n, c) + tuple(size), dtype=cols.dtype)
    # One strided add per kernel offset: windows that overlap add up, as the adjoint must.
    for i in range(kh):
        top = i * dilation[0]
        rows_hit = slice(top, top + stride[0] * (oh - 1) + 1, stride[0])
        for j in range(kw):
            left = j * dilation[1]
            out[:, :, rows_hit, left:left + stride[1] * (ow - 1) + 1:stride[1]] += \
                blocks[:, :, i, j]
    return out


def _col2im_tiles(blocks, size):
    """col2im of windows that tile the image (stride = kernel, max pooling's): each
    position is in at most one window, so it is 0 + that window's value. The values are
    copied into an (N, C, OH, kh, OW, kw) view of the output, then 0.0 is added once
    (-0.0 becomes 0.0, as 0 + v gives it): the strided adds' bits, ~2.5x faster (the adds
    ran over rows of OW elements with a stride of kw in the output)."""
    n, c, kh, kw, oh, ow = blocks.shape
    exact = size[0] == oh * kh and size[1] == ow * kw
    out = (np.empty if exact else np.zeros)((n, c) + tuple(size), dtype=blocks.dtype)
    sn, sc, sh, sw = out.strides
    tiles = np.lib.stride_tricks.as_strided(out, (n, c, oh, kh, ow, kw),
                                            (sn, sc, sh * kh, sh, sw * kw, sw))
    for i in range(kh):
        for j in range(kw):
            tiles[:, :, :, i, :, j] = blocks[:, :, i, j]
    out += 0.0
    return out


def _col2im_rows(blocks, size):
    """col2im of stride-1 windows (a convolution's input gradient) with the strided adds'
    bits, each add over whole image rows: the columns are widened to the image's width W
    with zeros, so that offset (i, j) adds one run of OH * W values at i * W + j of the
    flattened image (a run of OW with a stride of W otherwise). The extra values are +0.0
    and the image starts at +0.0, so a position never holds -0.0 and x + 0.0 is x: the
    same sums in the same order, the same bits but for which NaN's payload survives where
    two NaNs meet (NumPy's contiguous add may order the operands otherwise); 687 -> 508 us
    for the CNN's (32,144,196) columns."""
    n, c, kh, kw, oh, ow = blocks.shape
    h, w = size
    wide = np.zeros((n, c, oh, w), dtype=blocks.dtype)  # one offset's columns, widened
    runs = wide.reshape(n, c, oh * w)
    out = np.zeros((n, c, h * w), dtype=blocks.dtype)
    for i in range(kh):
        for j in range(kw):
            wide[..., :ow] = blocks[:, :, i, j]  # the columns past ow stay +0.0
            start = i * w + j
            stop = min(start + oh * w, h * w)  # past the image: only widened zeros
            out[:, :, start:stop] += runs[:, :, :stop - start]
    return out.reshape(n, c, h, w)


register(OpDef(
    name="col2im", kind=INDEXING, impl=_col2im_impl, shape_rule=_col2im_rule,
    dtype_rule=_same_dtype,
    vjp=lambda g, out, cols, *, size, kernel, stride, dilation: (
        F.apply_op("im2col", g, kernel=kernel, stride=stride, dilation=dilation),),
    doc="The adjoint of im2col: columns summed back into a (N, C, H, W) image.",
))

