"""The plain paths of the composites people call most: their ops' NumPy calls, made
directly on arrays that nobody watches.

``dispatch.plain_arrays`` answers when a composite may skip ``apply`` for each of its ops:
no tracer, no listener, nothing for autograd (no input requires grad, or grad mode is
off). Then softmax, log_softmax, cross_entropy, layer_norm, gelu, dropout, embedding and
scaled_dot_product_attention call the functions here, which make the same NumPy calls, in
the same order, with the same dtypes, as the ops the composite would dispatch: the same
bits (tests/engine/test_plain_paths.py compares every one with its ops run under a
listener). Each returns None for whatever it does not take (another dtype, an odd
shape, an argument to check, NumPy raising under ``np.errstate``): the composite then runs
its ops, which explain the error or do the rest.

Reductions call their op's implementation (``OPS["sum"].impl``: NumPy's ufunc reduce,
with the op's normalised axes); elementwise ops call the ufunc the operator calls
(``x - m`` is ``np.subtract``); random draws come from the generator the random ops
use, in the same order.
"""

from __future__ import annotations

import math

import numpy as np

from ..functional.linalg import plain_matmul
from ..ops import OPS
from ..ops import rng as _rng
from ..ops.erf import erf_array, gelu_native
from ..ops.registry import normalize_axes

_SUM = OPS["sum"].impl
_MAX = OPS["max"].impl
SQRT_HALF = 1 / math.sqrt(2)  # gelu scales x by it (nn/functional.py, one_node_layers.py)


def float_array(a) -> bool:
    """A floating NumPy array (float32 or float64) with at least one element."""
    return a.dtype.kind == "f" and a.size > 0


def on_class_axis(fn, a, axis, torch_keywords):
    """``fn(a, axis)`` (softmax, log_softmax or what their ops' backward keeps) for a float
    array and an axis :func:`class_axis` takes, or None (the ops decide, and explain
    NumPy raising under ``np.errstate``)."""
    if not float_array(a):
        return None
    axis = class_axis(a, axis, torch_keywords)
    if axis is None:
        return None
    try:
        return fn(a, axis)
    except Exception:  # noqa: BLE001 - NumPy raising (np.errstate): the ops explain it
        return None


def class_axis(a, axis, torch_keywords) -> int | None:
    """softmax's axis (``axis=`` or PyTorch's ``dim=``) as a non-negative int, or None when
    the ops should check it (anything unusual)."""
    if torch_keywords:
        if len(torch_keywords) != 1 or "dim" not in torch_keywords \
                or axis.__class__ is not int or axis != -1:
            return None
        axis = torch_keywords["dim"]
    if axis.__class__ is not int or not -a.ndim <= axis < a.ndim:
        return None
    return axis % a.ndim


def _stable_max(a, axis: int):
    """softmax.py's _stable_max: the max over ``axis`` (kept), 0 where not finite."""
    m = _MAX(np, a, axis=(axis,), keepdims=True)
    return np.where(np.isfinite(m), m, 0.0)


def softmax(a, axis: int):
    """``e / sum(e)`` with ``e = exp(x - max)``."""
    return softmax_saving(a, axis)[0]


def softmax_saving(a, axis: int):
    """``(out, (e, total))``: :func:`softmax` and what its ops' backward reads
    (nn/one_node_layers.py)."""
    e = np.exp(np.subtract(a, _stable_max(a, axis)))
    total = _SUM(np, e, axis=(axis,), keepdims=True)
    return np.true_divide(e, total), (e, total)


def log_softmax(a, axis: int):
    """``shifted - log(sum(exp(shifted)))`` with ``shifted = x - max``."""
    shifted = np.subtract(a, _stable_max(a, axis))
    total = _SUM(np, np.exp(shifted), axis=(axis,), keepdims=True)
    return np.subtract(shifted, np.log(total))


def cross_entropy(logits, target, ignore_index: int, reduction: str):
    """losses.cross_entropy for (N, C) logits and (N,) class indices, without weights or
    label smoothing. The label check is the op's (check_labels): a bad label raises and
    the ops explain it."""
    return cross_entropy_saving(logits, target, ignore_index, reduction)[0]


def cross_entropy_saving(logits, target, ignore_index: int, reduction: str):
    """``(loss, saved)``: :func:`cross_entropy`'s loss, and the values its ops' backward
    reads (nn/one_node.py): ``exp(shifted)``, the sum of it, the index of each label, the
    samples' weights and, for the mean, their sum."""
    n, classes = logits.shape
    shifted = np.subtract(logits, _stable_max(logits, 1))
    e = np.exp(shifted)
    total = _SUM(np, e, axis=(1,), keepdims=True)
    keep = OPS["check_labels"].impl(np, target, num_classes=classes,
                                    ignore_index=ignore_index, caller="cross_entropy")
    index = np.where(keep, target, 0).reshape(n, 1)
    # log_softmax's ``shifted - log(total)`` at the picked class only: each element of
    # that subtraction is its own rounding, so the picked ones have the bits of the
    # whole (N, C) result the ops compute, at N subtractions instead of N x C.
    picked = np.subtract(OPS["take_along_axis"].impl(np, shifted, index, axis=1),
                         np.log(total))
    nll = np.negative(picked.reshape(n))
    w = keep.astype(picked.dtype)
    loss = np.multiply(nll, w)
    saved = [e, total, index, w, None]
    if reduction == "none":
        return loss, saved
    total_loss = np.asarray(_SUM(np, loss, axis=(0,), keepdims=False))
    if reduction == "sum":
        return total_loss, saved
    saved[4] = np.asarray(_SUM(np, w, axis=(0,), keepdims=False))
    return np.true_divide(total_loss, saved[4]), saved


def _mean(a, axes: tuple):
    """functional.mean: the sum over ``axes`` (kept) divided by the count."""
    return np.true_divide(_SUM(np, a, axis=axes, keepdims=True),
                          math.prod(a.shape[i] for i in axes))


def linear(x, weight, bias=None):
    """linear's ops on arrays nobody watches (dispatch.plain_arrays): the NumPy calls they
    make - matmul of x and weight's transposed view, then add - so the same bits, for
    float operands of one dtype and shapes that every check passes; else None (also when
    NumPy raises: the ops run and explain it). An MLP's eager forward spent most of its
    time in apply for the transpose and the matmul."""
    dtype = x.dtype
    if weight.ndim != 2 or x.ndim < 1 or dtype.kind != "f" or weight.dtype != dtype \
            or x.shape[-1] != weight.shape[1]:
        return None
    if bias is not None and (bias.dtype != dtype or bias.shape != weight.shape[:1]):
        return None
    rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) if x.ndim > 2 else x
    out = plain_matmul(rows, weight.T)
    if out is None:
        return None
    out = out.reshape(x.shape[:-1] + weight.shape[:1])
    if bias is None:
        return out
    try:
        return np.add(out, bias, out=out)
    except Exception:  # noqa: BLE001 - NumPy raising (np.errstate): the ops explain it
        return None


def layer_norm_of(arrays, normalized_shape, has_weight: bool, has_bias: bool, eps):
    """:func:`layer_norm_saving` of x (``arrays[0]``) and its weight and bias (those given,
    after it) where every argument is one the ops take without a word (normalized_shape as
    ints that end x's shape, a number eps, a float weight and bias of x's rank at most, x
    float), or None (also when NumPy raises: the ops explain it)."""
    a = arrays[0]
    shape = (normalized_shape,) if normalized_shape.__class__ is int \
        else tuple(normalized_shape) if isinstance(normalized_shape, tuple | list) else None
    if not shape or not all(d.__class__ is int for d in shape) or not float_array(a) \
            or a.ndim < len(shape) \
            or tuple(a.shape[a.ndim - len(shape):]) != shape \
            or eps.__class__ not in (int, float) \
            or any(t.dtype.kind != "f" or t.ndim > a.ndim for t in arrays[1:]):
        return None
    weight = arrays[1] if has_weight else None
    bias = arrays[1 + has_weight] if has_bias else None
    try:
        return layer_norm_saving(a, len(shape), weight, bias, eps)
    except Exception:  # noqa: BLE001 - NumPy raising (np.errstate, shapes): the ops explain
        return None


def layer_norm_saving(a, n: int, weight, bias, eps: float):
    """``(out, (d, root, normed, axes))``: :func:`layer_norm` and what its ops' backward
    reads (nn/one_node_layers.py): ``x - mean``, ``sqrt(var + eps)``, their quotient and
    the normalised axes."""
    axes = normalize_axes(tuple(range(a.ndim - n, a.ndim)), a.ndim)
    d = np.subtract(a, _mean(a, axes))
    var = _mean(np.multiply(d, d), axes)
    root = np.sqrt(np.add(var, eps))
    out = normed = np.true_divide(d, root)
    if weight is not None:
        out = np.multiply(out, weight)
    if bias is not None:
        out = np.add(out, bias)
    return out, (d, root, normed, axes)


def gelu(a):
    """``0.5 * x * (1 + erf(x / sqrt 2))``."""
    return gelu_saving(a)[0]


def gelu_saving(a):
    """``(out, (half, scaled, shifted))``: :func:`gelu` and what its ops' backward reads
    (nn/one_node_layers.py): ``0.5 * x``, ``x / sqrt 2`` and ``1 + erf(x / sqrt 2)``. In
    C where it applies (ops/erf.py: the same operations, so the same bits)."""
    native = gelu_native(a)
    if native is not None:
        return native
    scaled = np.multiply(a, SQRT_HALF)
    half, shifted = np.multiply(0.5, a), np.add(1, erf_array(scaled))
    return np.multiply(half, shifted), (half, scaled, shifted)


def dropout(a, p: float):
    """Keep each element with probability 1 - p (the uniform draw of the random op, from
    the same generator), scaled by 1 / (1 - p); 0 < p < 1."""
    u = _rng.generator().uniform(0.0, 1.0, size=a.shape).astype(a.dtype)
    keep = np.greater_equal(u, p).astype(a.dtype)
    return np.multiply(np.multiply(a, keep), 1.0 / (1.0 - p))


def embedding(ids, weight):
    """The rows of ``weight`` at ``ids``, after the op's range check (which raises for an
    index outside the table: the ops explain it)."""
    OPS["check_labels"].impl(np, ids, num_classes=weight.shape[0], ignore_index=-(2**62),
                             caller="embedding", noun="row")
    return weight[ids]


__all__ = ["class_axis", "cross_entropy", "dropout", "embedding", "float_array", "gelu",
           "gelu_saving", "layer_norm_of", "layer_norm_saving", "linear",
           "log_softmax", "on_class_axis", "softmax", "softmax_saving"]
