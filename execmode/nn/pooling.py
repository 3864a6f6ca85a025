"""Max and average pooling over 1-D and 2-D windows, with PyTorch's arguments.

Max pooling is its own primitives (ops/pooling.py: the values, their gradient and the
indices, in C on CPU): each window's *first* maximum, so the gradient of a tie goes to that
one position as in PyTorch (a plain ``max`` would share it among ties), and NaN wins as in
PyTorch. Average pooling gathers the windows with the same ``im2col`` primitive as
convolution and sums each column; it divides
by a count that depends only on shapes (``count_include_pad``, ``ceil_mode``), so it is a
constant of the graph.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..errors import ArgumentError, DTypeError
from ..op_errors import op_error
from ..ops import OPS
from ..ops.conv import im2col_array, output_size
from ..scope import named_scope
from .conv import check_rank, tuple_arg


class _Windows:
    """The windows of one pooling call: sizes, paddings (with ceil_mode's extra) and the
    columns (N, C, K, L) of a padded input."""

    def __init__(self, op, x, kernel_size, stride, padding, dilation, ceil_mode, dims):
        operands = (x,)
        x = F._require_tensor(op, x)
        layout = "(N, C, H, W) or (C, H, W)" if dims == 2 else "(N, C, L) or (C, L)"
        check_rank(op, x, (dims + 1, dims + 2), layout, operands)
        if x.dtype.kind != "f":
            raise op_error(DTypeError, op, operands, "expected a floating-point input")
        kernel = tuple_arg(op, "kernel_size", kernel_size, dims, operands, minimum=1)
        stride = kernel if stride is None or stride == () else \
            tuple_arg(op, "stride", stride, dims, operands, minimum=1)
        pads = tuple_arg(op, "padding", padding, dims, operands, minimum=0)
        dilation = tuple_arg(op, "dilation", dilation, dims, operands, minimum=1)
        ceil_mode = F._bool_arg(op, "ceil_mode", ceil_mode, operands)
        if any(p > k // 2 for p, k in zip(pads, kernel)):
            raise op_error(ArgumentError, op, operands,
                           f"padding {pads} must be at most half of kernel_size {kernel}")
        self.unbatched = x.ndim == dims + 1
        if self.unbatched:
            x = F.expand_dims(x, 0)
        if dims == 1:
            x = F.expand_dims(x, 2)
            kernel, stride, pads, dilation = ((1,) + kernel, (1,) + stride, (0,) + pads,
                                              (1,) + dilation)
        self.op, self.dims, self.x = op, dims, x
        self.kernel, self.stride, self.pads, self.dilation = kernel, stride, pads, dilation
        self.size = tuple(x.shape[2:])
        self.out = tuple(_pooled_size(s, k, st, p, d, ceil_mode, op, operands)
                         for s, k, st, p, d in zip(self.size, kernel, stride, pads, dilation))
        # ceil_mode's last window may reach past the padding: pad that much more after.
        self.extra = tuple(max(0, (o - 1) * st + d * (k - 1) + 1 - (s + 2 * p))
                           for o, s, k, st, p, d in zip(self.out, self.size, kernel, stride,
                                                        pads, dilation))

    def widths(self):
        return ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(self.pads, self.extra))

    def columns(self, fill):
        x = self.x
        widths = self.widths()
        if any(b or a for b, a in widths):
            x = F.apply(OPS["pad"], x, widths=widths, value=fill)
        cols = F.apply(OPS["im2col"], x, kernel=self.kernel, stride=self.stride,
                       dilation=self.dilation)
        n, c = self.x.shape[:2]
        k = self.kernel[0] * self.kernel[1]
        return F.reshape(cols, (n, c, k, cols.shape[2]))

    def max_pool_attrs(self) -> dict:
        """The max_pool2d primitives' attributes (ops/pooling.py; ceil_mode's count is
        ``out_size``)."""
        return {"kernel": self.kernel, "stride": self.stride, "padding": self.pads,
                "dilation": self.dilation, "out_size": self.out}

    def constant_columns(self, image: np.ndarray) -> np.ndarray:
        """im2col of a (H', W') NumPy image already padded to the windows' extent: (K, L)."""
        cols = im2col_array(np, image[None, None], kernel=self.kernel, stride=self.stride,
                            dilation=self.dilation)
        return cols[0]

    def finish(self, pooled):
        out = F.reshape(pooled, pooled.shape[:2] + self.out)
        if self.dims == 1:
            out = F.squeeze(out, axis=2)
        return F.squeeze(out, axis=0) if self.unbatched else out


def _pooled_size(size, kernel, stride, pad, dilation, ceil_mode, op, operands):
    span = dilation * (kernel - 1) + 1
    if size + 2 * pad < span:
        raise op_error(ArgumentError, op, operands,
                       f"kernel_size {kernel} (dilation {dilation}) is larger than the "
                       f"padded input size {size + 2 * pad}")
    if not ceil_mode:
        return output_size(size + 2 * pad, kernel, stride, dilation)
    out = -(-(size + 2 * pad - span) // stride) + 1
    # PyTorch: the last window must start inside the input or its left padding.
    if (out - 1) * stride >= size + pad:
        out -= 1
    return out


# --- max pooling ------------------------------------------------------------------------

@named_scope("max_pool2d")
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """The maximum of each window (padding counts as -inf). With ``return_indices``, also
    the flat index into H*W of each maximum (as PyTorch, for max_unpool)."""
    win = _Windows("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, 2)
    return _max_pool(win, return_indices)


@named_scope("max_pool1d")
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """max_pool2d over (N, C, L) windows."""
    win = _Windows("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, 1)
    return _max_pool(win, return_indices)


def _max_pool(win, return_indices):
    return_indices = F._bool_arg(win.op, "return_indices", return_indices, (win.x,))
    attrs = win.max_pool_attrs()
    out = win.finish(F.apply(OPS["max_pool2d"], win.x, **attrs))
    if not return_indices:
        return out
    return out, win.finish(F.apply(OPS["max_pool2d_indices"], win.x, **attrs))


# --- average pooling --------------------------------------------------------------------

@named_scope("avg_pool2d")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """The mean of each window. ``count_include_pad``: zero padding counts in the divisor
    (PyTorch's default); ``divisor_override``: divide by this instead."""
    win = _Windows("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode, 2)
    return _avg_pool(win, count_include_pad, divisor_override)


@named_scope("avg_pool1d")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True):
    """avg_pool2d over (N, C, L) windows."""
    win = _Windows("avg_pool1d", input, kernel_size, stride, padding, 1, ceil_mode, 1)
    return _avg_pool(win, count_include_pad, None)


def _avg_pool(win, count_include_pad, divisor_override):
    operands = (win.x,)
    count_include_pad = F._bool_arg(win.op, "count_include_pad", count_include_pad, operands)
    total = F.sum(win.columns(0.0), axis=2)
    if divisor_override is not None:
        if not F._is_int(divisor_override) or divisor_override <= 0:
            raise op_error(ArgumentError, win.op, operands,
                           f"divisor_override must be a positive int, got {divisor_override!r}")
        return win.finish(total / float(divisor_override))
    win_divisor = _divisors(win, count_include_pad)
    divisor = F.tensor(win_divisor.astype(win.x.dtype), device=win.x.device)
    return win.finish(total / divisor)


def _divisors(win, count_include_pad) -> np.ndarray:
    """Per output position: how many elements its window averages (L,). PyTorch counts
    the zero padding when ``count_include_pad``, never ceil_mode's extra beyond it."""
    (ph, pw), (eh, ew) = win.pads, win.extra
    h, w = win.size
    counted = np.zeros((h + 2 * ph + eh, w + 2 * pw + ew))
    if count_include_pad:
        counted[:h + 2 * ph, :w + 2 * pw] = 1
    else:
        counted[ph:ph + h, pw:pw + w] = 1
    return win.constant_columns(counted).sum(axis=0)


# --- adaptive pooling -------------------------------------------------------------------

def _adaptive_sizes(op, x, output_size, dims):
    """The output sizes (PyTorch's: an int, or a tuple whose None keeps the input's)."""
    size = tuple(x.shape[-dims:])
    wanted = (output_size,) * dims if F._is_int(output_size) else tuple(output_size)
    if len(wanted) != dims or not all(w is None or (F._is_int(w) and w >= 1)
                                      for w in wanted):
        raise op_error(ArgumentError, op, (x,),
                       f"output_size must be a positive int or a tuple of {dims}, got "
                       f"{output_size!r}")
    return size, tuple(s if w is None else int(w) for s, w in zip(size, wanted))


def _adaptive_windows(size: int, out: int) -> list:
    """PyTorch's windows: output i averages [floor(i*size/out), ceil((i+1)*size/out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _averaging_matrix(size: int, out: int, dtype) -> np.ndarray:
    m = np.zeros((out, size), dtype=dtype)
    for i, (start, stop) in enumerate(_adaptive_windows(size, out)):
        m[i, start:stop] = 1.0 / (stop - start)
    return m


@named_scope("adaptive_avg_pool2d")
def adaptive_avg_pool2d(input, output_size):  # noqa: A002 - PyTorch's names
    """The mean over PyTorch's adaptive windows, to an (oh, ow) output of (N, C, H, W)
    (or (C, H, W)). Sizes that divide the input are average pooling; others multiply by
    constant averaging matrices (the windows then overlap or differ in size)."""
    x = F._require_tensor("adaptive_avg_pool2d", input)
    check_rank("adaptive_avg_pool2d", x, (3, 4), "(N, C, H, W) or (C, H, W)", (x,))
    return _adaptive_avg(x, "adaptive_avg_pool2d", output_size, 2)


@named_scope("adaptive_avg_pool1d")
def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """adaptive_avg_pool2d over (N, C, L) (or (C, L))."""
    x = F._require_tensor("adaptive_avg_pool1d", input)
    check_rank("adaptive_avg_pool1d", x, (2, 3), "(N, C, L) or (C, L)", (x,))
    return _adaptive_avg(x, "adaptive_avg_pool1d", output_size, 1)


def _adaptive_avg(x, op, output_size, dims):
    if x.dtype.kind != "f":
        raise op_error(DTypeError, op, (x,), "expected a floating-point input")
    size, out = _adaptive_sizes(op, x, output_size, dims)
    if all(o == 1 for o in out):  # global average pooling
        return F.mean(x, axis=tuple(range(x.ndim - dims, x.ndim)), keepdims=True)
    if all(s % o == 0 for s, o in zip(size, out)):
        kernel = tuple(s // o for s, o in zip(size, out))
        pool = avg_pool2d if dims == 2 else avg_pool1d
        return pool(x, kernel)
    y = x
    for axis, (s, o) in enumerate(zip(size, out)):
        if s == o:
            continue
        m = F.tensor(_averaging_matrix(s, o, x.dtype), device=x.device)
        moved = F.swapaxes(y, x.ndim - dims + axis, -1)      # this axis last
        y = F.swapaxes(F.matmul(moved, F.matrix_transpose(m)), x.ndim - dims + axis, -1)
    return y


@named_scope("adaptive_max_pool2d")
def adaptive_max_pool2d(input, output_size, return_indices: bool = False):  # noqa: A002
    """The maximum over PyTorch's adaptive windows (see adaptive_avg_pool2d). Sizes that
    divide the input are max pooling; others take each window's max (one small reduction
    per output position). ``return_indices`` only where the sizes divide."""
    x = F._require_tensor("adaptive_max_pool2d", input)
    check_rank("adaptive_max_pool2d", x, (3, 4), "(N, C, H, W) or (C, H, W)", (x,))
    return _adaptive_max(x, "adaptive_max_pool2d", output_size, 2, return_indices)


@named_scope("adaptive_max_pool1d")
def adaptive_max_pool1d(input, output_size, return_indices: bool = False):  # noqa: A002
    """adaptive_max_pool2d over (N, C, L) (or (C, L))."""
    x = F._require_tensor("adaptive_max_pool1d", input)
    check_rank("adaptive_max_pool1d", x, (2, 3), "(N, C, L) or (C, L)", (x,))
    return _adaptive_max(x, "adaptive_max_pool1d", output_size, 1, return_indices)


def _adaptive_max(x, op, output_size, dims, return_indices):
    if x.dtype.kind != "f":
        raise op_error(DTypeError, op, (x,), "expected a floating-point input")
    size, out = _adaptive_sizes(op, x, output_size, dims)
    if all(s % o == 0 for s, o in zip(size, out)):
        kernel = tuple(s // o for s, o in zip(size, out))
        pool = max_pool2d if dims == 2 else max_pool1d
        return pool(x, kernel, return_indices=return_indices)
    if return_indices:
        raise op_error(ArgumentError, op, (x,),
                       "return_indices needs output sizes that divide the input's")
    lead = x.ndim - dims
    windows = [_adaptive_windows(s, o) for s, o in zip(size, out)]
    if dims == 1:
        cells = [F.max(x[..., a:b], axis=-1) for a, b in windows[0]]
        return F.stack(cells, axis=-1)
    rows = []
    for a, b in windows[0]:
        band = x[..., a:b, :]
        rows.append(F.stack([F.max(band[..., c:d], axis=(lead, lead + 1))
                             for c, d in windows[1]], axis=-1))
    return F.stack(rows, axis=-2)
