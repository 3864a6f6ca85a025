"""Max pooling's primitives: each window's first maximum, its value, its position, and the
gradient sent back to it.

All four find the windows' maxima the same way: over the positions inside the image (the
padding is never chosen; every window holds at least one image position), the first
maximum in row-major order, and the first NaN where a window holds one (NumPy's argmax's
rule, so the gradient of a tie goes to one position, as in PyTorch).

* ``max_pool2d(x)``: the maxima (N, C, OH, OW); its vjp is ``max_pool2d_backward``.
* ``max_pool2d_backward(g, x)``: zeros of x's shape with g added at each window's maximum
  (windows in row-major order: where they overlap, that is the order of the sums); its vjp
  for g is ``max_pool2d_select``.
* ``max_pool2d_select(h, x)``: h's values at x's windows' maxima; its vjp for h is
  ``max_pool2d_backward``. With these two, gradients of any order exist.
* ``max_pool2d_indices(x)``: the flat index into H*W of each maximum (``return_indices``).

x is (N, C, H, W); attrs: ``kernel``, ``stride``, ``padding`` (before, on each side),
``dilation`` and ``out_size`` (OH, OW: ceil_mode's count, decided by execmode.nn.pooling).
On CPU a small C library runs them (native/windows.c, through window_kernels.py); the
NumPy version below is the reference, and the path on a GPU or without a compiler. Every
op is a plan step under ``em.jit``.
"""

from __future__ import annotations

import numpy as np

from . import window_kernels
from .registry import INDEXING, F, OpDef, RuleError, register


def _rule(x, *, kernel, stride, padding, dilation, out_size):
    if len(x.shape) != 4:
        raise RuleError(f"expected a (N, C, H, W) tensor, got shape {tuple(x.shape)}")
    return tuple(x.shape[:2]) + tuple(out_size)


def _pair_rule(a, x, **attrs):
    if tuple(a.shape) != tuple(x.shape):
        raise RuleError(f"expected two tensors of one shape, got {tuple(a.shape)} and "
                        f"{tuple(x.shape)}")
    return _rule(x, **attrs)


def _backward_rule(g, x, **attrs):
    pooled = _rule(x, **attrs)
    if tuple(g.shape) != pooled:
        raise RuleError(f"expected a gradient of shape {pooled}, got {tuple(g.shape)}")
    return tuple(x.shape)


# --- the NumPy (or CuPy) version ---------------------------------------------------------

def _positions(h, w, *, kernel, stride, padding, dilation, out_size):
    """(kh*kw, OH*OW): the flat index y*W + x each window position reads, -1 outside."""
    oh, ow = out_size
    rows = np.arange(kernel[0])[:, None] * dilation[0] \
        + np.arange(oh)[None, :] * stride[0] - padding[0]                # (kh, OH)
    cols = np.arange(kernel[1])[:, None] * dilation[1] \
        + np.arange(ow)[None, :] * stride[1] - padding[1]                # (kw, OW)
    inside = ((rows >= 0) & (rows < h))[:, None, :, None] \
        & ((cols >= 0) & (cols < w))[None, :, None, :]
    flat = rows[:, None, :, None] * w + cols[None, :, None, :]          # (kh, kw, OH, OW)
    return np.where(inside, flat, -1).reshape(kernel[0] * kernel[1], oh * ow)


def _argmax_array(xp, x, attrs):
    """(N*C, OH*OW) flat positions of every window's first maximum."""
    n, c, h, w = x.shape
    table = _positions(h, w, **attrs)
    inside = table >= 0
    planes = x.reshape(n * c, h * w)
    lowest = xp.asarray(-np.inf, dtype=x.dtype)
    values = xp.where(xp.asarray(inside), planes[:, xp.asarray(np.maximum(table, 0))],
                      lowest)                                            # (P, K, L)
    best = values.max(axis=1, keepdims=True)                             # NaN wins
    hit = ((values == best) | xp.isnan(values)) & xp.asarray(inside)
    first = hit.argmax(axis=1)                                           # (P, L)
    return xp.asarray(table)[first, xp.arange(table.shape[1])]


def _select_numpy(xp, h, x, attrs):
    n, c = x.shape[:2]
    at = _argmax_array(xp, x, attrs)
    picked = xp.take_along_axis(h.reshape(n * c, -1), at, axis=1).astype(x.dtype, copy=False)
    return picked.reshape((n, c) + tuple(attrs["out_size"]))


def _scatter_numpy(xp, g, x, attrs):
    n, c, h, w = x.shape
    at = _argmax_array(xp, x, attrs)
    out = xp.zeros((n * c, h * w), dtype=x.dtype)
    planes = xp.arange(n * c)[:, None]
    # ufunc.at adds in index order (row-major windows), as the C does.
    xp.add.at(out, (xp.broadcast_to(planes, at.shape), at),
              g.reshape(n * c, -1).astype(x.dtype, copy=False))
    return out.reshape(x.shape)


# --- the C version -----------------------------------------------------------------------

def _dims(x, attrs):
    n, c, h, w = x.shape
    return window_kernels.dims(n * c, h, w, attrs["out_size"], attrs["kernel"],
                               attrs["stride"], attrs["padding"], attrs["dilation"])


def _select(xp, h, x, *, with_index=False, **attrs):
    kernels = window_kernels.kernels_for(xp, x.dtype)
    if kernels is None:
        if with_index:
            n, c = x.shape[:2]
            return _argmax_array(xp, x, attrs).reshape((n, c) + tuple(attrs["out_size"]))
        return _select_numpy(xp, h, x, attrs)
    x = np.ascontiguousarray(x)
    h = np.ascontiguousarray(h, dtype=x.dtype)
    shape = tuple(x.shape[:2]) + tuple(attrs["out_size"])
    out = np.empty(shape, x.dtype)
    index = np.empty(shape, np.int64) if with_index else None
    kernels.select(h, x, out, index, _dims(x, attrs))
    return index if with_index else out


def _scatter(xp, g, x, **attrs):
    kernels = window_kernels.kernels_for(xp, x.dtype)
    if kernels is None:
        return _scatter_numpy(xp, g, x, attrs)
    x = np.ascontiguousarray(x)
    g = np.ascontiguousarray(g, dtype=x.dtype)
    out = np.empty(x.shape, x.dtype)
    kernels.scatter(g, x, out, _dims(x, attrs))
    return out


# --- the ops -----------------------------------------------------------------------------

def _same_dtype(dtypes, attrs):
    return dtypes[-1]


def _backward(g, x, attrs):
    return F.apply_op("max_pool2d_backward", g, x, **attrs)


register(OpDef(
    name="max_pool2d", kind=INDEXING, shape_rule=_rule, dtype_rule=_same_dtype,
    impl=lambda xp, x, **attrs: _select(xp, x, x, **attrs),
    vjp=lambda g, out, x, **attrs: (_backward(g, x, attrs),),
    doc="The first maximum of every window of a (N, C, H, W) tensor.",
))

register(OpDef(
    name="max_pool2d_backward", kind=INDEXING, shape_rule=_backward_rule,
    dtype_rule=_same_dtype, impl=_scatter, nondiff_inputs=(1,),
    vjp=lambda gg, out, g, x, **attrs: (F.apply_op("max_pool2d_select", gg, x, **attrs),
                                        None),
    doc="max_pool2d's input gradient: g added at each window's maximum in x.",
))

register(OpDef(
    name="max_pool2d_select", kind=INDEXING, shape_rule=_pair_rule, dtype_rule=_same_dtype,
    impl=lambda xp, h, x, **attrs: _select(xp, h, x, **attrs), nondiff_inputs=(1,),
    vjp=lambda g, out, h, x, **attrs: (_backward(g, x, attrs), None),
    doc="h's values at the positions of x's windows' maxima.",
))

register(OpDef(
    name="max_pool2d_indices", kind=INDEXING, shape_rule=_rule,
    dtype_rule=lambda dtypes, attrs: np.dtype(np.int64),
    impl=lambda xp, x, **attrs: _select(xp, x, x, with_index=True, **attrs),
    doc="The flat H*W index of every window's first maximum (return_indices).",
))
