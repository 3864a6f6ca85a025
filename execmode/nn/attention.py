"""Scaled dot-product attention, written over matmul, softmax and where.

``softmax(q @ k.mT * scale + mask) @ v``, with PyTorch's conventions: a bool ``attn_mask``
*keeps* the positions where it is True, a float mask is added to the scores, and
``is_causal`` keeps position j <= i (the mask aligned at the top left). A row whose every
position is masked comes out NaN, as in PyTorch's math implementation.
"""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from ..dispatch import plain_arrays, plain_tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..functional.linalg import plain_matmul
from ..op_errors import op_error
from ..ops.registry import RuleError, broadcast_shapes
from ..scope import named_scope
from . import plain as P
from .dropout import check_probability, dropout
from .softmax import softmax


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale=None):
    """Attention of ``query`` (..., L, E) over ``key`` (..., S, E) and ``value``
    (..., S, Ev) -> (..., L, Ev). Dropout on the attention weights whenever ``dropout_p``
    is positive (as PyTorch: pass 0.0 in eval)."""
    if dropout_p.__class__ in (int, float) and not dropout_p \
            and (scale is None or scale.__class__ is float) \
            and is_causal.__class__ is bool and not (is_causal and attn_mask is not None):
        arrays = plain_arrays(query, key, value) if attn_mask is None \
            else plain_arrays(query, key, value, attn_mask)
        if arrays is not None:  # nobody watches: the ops' NumPy calls (nn/plain.py)
            out = _plain_attention(arrays, is_causal, scale)
            if out is not None:
                return plain_tensor(out)
    return _scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                         scale)


def _plain_attention(arrays, is_causal, scale):
    """softmax(q @ k.mT * scale (masked)) @ v on arrays, or None (the ops decide)."""
    q, k, v = arrays[:3]
    mask = arrays[3] if len(arrays) == 4 else None
    dtype = q.dtype
    if dtype.kind != "f" or k.dtype != dtype or v.dtype != dtype or min(q.ndim, k.ndim,
                                                                         v.ndim) < 2 \
            or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2] \
            or 0 in q.shape[-2:] or k.shape[-2] == 0 \
            or (mask is not None and mask.dtype.kind not in "bf"):
        return None
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = plain_matmul(q, np.swapaxes(k, -1, -2))
    if scores is None:
        return None
    try:
        scores = np.multiply(scores, scale)
        if is_causal:
            length, source = q.shape[-2], k.shape[-2]
            mask = np.greater_equal(np.arange(length).reshape(length, 1), np.arange(source))
        if mask is not None:
            if np.broadcast_shapes(mask.shape, scores.shape) != scores.shape:
                return None
            if mask.dtype.kind == "b":
                scores = np.where(mask, scores, -math.inf)
            else:
                scores = np.add(scores, mask.astype(dtype, copy=False))
        weights = P.softmax(scores, scores.ndim - 1)
    except Exception:  # noqa: BLE001 - NumPy raising (np.errstate): the ops explain it
        return None
    return plain_matmul(weights, v)


@named_scope("scaled_dot_product_attention")
def _scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    out, _ = attention("scaled_dot_product_attention", query, key, value, attn_mask,
                       dropout_p, is_causal, scale)
    return out


def attention(op, query, key, value, attn_mask, dropout_p, is_causal, scale):
    """(output, weights) of scaled dot-product attention; ``op`` names the caller."""
    operands = tuple(t for t in (query, key, value, attn_mask) if t is not None)
    q, k, v = (F._require_tensor(op, t, operands) for t in (query, key, value))
    if attn_mask is not None:
        attn_mask = F._require_tensor(op, attn_mask, operands)
    dropout_p = check_probability(op, "dropout_p", dropout_p, operands)
    is_causal = F._bool_arg(op, "is_causal", is_causal, operands)
    _check_shapes(op, q, k, v, operands)
    if is_causal and attn_mask is not None:
        raise op_error(ArgumentError, op, operands,
                       "pass either attn_mask or is_causal=True, not both (as PyTorch)")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    else:
        scale = float(F._number_arg(op, "scale", scale, operands))
    scores = F.matmul(q, F.matrix_transpose(k)) * scale
    if is_causal:
        attn_mask = causal_mask(q.shape[-2], k.shape[-2], q.device)
    if attn_mask is not None:
        scores = apply_mask(op, scores, attn_mask, operands)
    weights = softmax(scores, axis=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return F.matmul(weights, v), weights


def causal_mask(length: int, source_length: int, device):
    """Bool (L, S): True where key position j <= query position i."""
    rows = F.reshape(F.arange(length, device=device), (length, 1))
    return F.greater_equal(rows, F.arange(source_length, device=device))


def apply_mask(op, scores, mask, operands):
    """Bool masks keep where True (the rest becomes -inf); float masks are added."""
    try:
        shape = broadcast_shapes(tuple(mask.shape), tuple(scores.shape))
    except RuleError:
        shape = None
    if shape != tuple(scores.shape):
        raise op_error(ShapeError, op, operands,
                       f"attn_mask {tuple(mask.shape)} does not broadcast to the attention "
                       f"scores {tuple(scores.shape)}")
    if mask.dtype.kind == "b":
        return F.where(mask, scores, -math.inf)
    if mask.dtype.kind != "f":
        raise op_error(DTypeError, op, operands,
                       f"attn_mask must be bool or floating, got {mask.dtype}")
    return scores + F.astype(mask, scores.dtype, copy=False)  # the scores' precision, as PyTorch keeps


def _check_shapes(op, q, k, v, operands):
    for t in (q, k, v):
        if t.dtype.kind != "f" or t.dtype != q.dtype:
            raise op_error(DTypeError, op, operands,
                           "query, key and value must share one floating dtype")
        if t.ndim < 2:
            raise op_error(ShapeError, op, operands,
                           "query, key and value need at least 2 dims (..., length, features)")
    if q.shape[-1] != k.shape[-1]:
        raise op_error(ShapeError, op, operands,
                       f"query and key feature sizes differ ({q.shape[-1]} vs {k.shape[-1]})")
    if k.shape[-2] != v.shape[-2]:
        raise op_error(ShapeError, op, operands,
                       f"key and value lengths differ ({k.shape[-2]} vs {v.shape[-2]})")
