"""ML functions, composed of primitives, each inside a named scope.

The scope groups their ops in the profiler and in graphs ("softmax/exp", "mse_loss/mean").
"""

from __future__ import annotations

import math

from .. import functional as F
from ..errors import ShapeError, op_error
from ..scope import named_scope


@named_scope("relu")
def relu(x):
    """max(x, 0); NaN stays NaN. At exactly 0 the gradient is 0.5 (maximum splits ties)."""
    return F.maximum(x, 0)


@named_scope("sigmoid")
def sigmoid(x):
    return 1 / (1 + F.exp(F.negative(x)))


@named_scope("gelu")
def gelu(x, approximate: str = "none"):
    """Gaussian error linear unit; ``approximate="tanh"`` uses the tanh formula."""
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + F.tanh(inner))
    return 0.5 * x * (1 + F.erf(x * (1 / math.sqrt(2))))


def _stable_max(x, axis):
    # The shift by the max only guards exp against overflow: it is a constant for autograd.
    m = F.max(x, axis=axis, keepdims=True).detach()
    return F.where(F.isfinite(m), m, 0.0)


@named_scope("softmax")
def softmax(x, axis: int = -1):
    e = F.exp(x - _stable_max(x, axis))
    return e / F.sum(e, axis=axis, keepdims=True)


@named_scope("logsumexp")
def logsumexp(x, axis=None, keepdims: bool = False):
    m = _stable_max(x, axis)
    out = F.log(F.sum(F.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else F.squeeze(out, axis=axis if axis is not None else None)


@named_scope("log_softmax")
def log_softmax(x, axis: int = -1):
    return x - logsumexp(x, axis=axis, keepdims=True)


@named_scope("linear")
def linear(x, weight, bias=None):
    """``x @ weight.mT + bias`` with PyTorch's (out_features, in_features) weight layout."""
    out = F.matmul(x, F.matrix_transpose(weight))
    return out + bias if bias is not None else out


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


@named_scope("mse_loss")
def mse_loss(pred, target, reduction: str = "mean"):
    if pred.shape != target.shape:
        raise op_error(ShapeError, "mse_loss", (pred, target), "pred and target shapes differ")
    d = pred - target
    return _reduce(d * d, reduction)


@named_scope("cross_entropy")
def cross_entropy(logits, target, reduction: str = "mean"):
    """Softmax cross-entropy. ``target``: class indices (N,) or probabilities (N, C)."""
    if logits.ndim != 2:
        raise op_error(ShapeError, "cross_entropy", (logits, target),
                       "logits must be (batch, classes)")
    logp = log_softmax(logits, axis=-1)
    if target.dtype.kind in "iu":
        if target.shape != logits.shape[:1]:
            raise op_error(ShapeError, "cross_entropy", (logits, target),
                           "class-index targets must have shape (batch,)")
        classes = F.arange(logits.shape[1], device=logits.device)
        target = F.astype(F.equal(F.expand_dims(target, -1), classes), logp.dtype)
    elif target.shape != logits.shape:
        raise op_error(ShapeError, "cross_entropy", (logits, target),
                       "probability targets must have the logits' shape")
    return _reduce(F.negative(F.sum(logp * target, axis=-1)), reduction)


@named_scope("layer_norm")
def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    n = len(normalized_shape)
    if tuple(x.shape[-n:]) != tuple(normalized_shape):
        raise op_error(ShapeError, "layer_norm", (x,),
                       f"the last dims must be {tuple(normalized_shape)}")
    axes = tuple(range(x.ndim - n, x.ndim))
    mu = F.mean(x, axis=axes, keepdims=True)
    d = x - mu
    var = F.mean(d * d, axis=axes, keepdims=True)
    out = d / F.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out
