"""ML functions, composed of primitives, each inside a named scope.

The scope groups their ops in the profiler and in graphs ("softmax/exp", "mse_loss/mean").
"""

from __future__ import annotations

import math

from .. import functional as F
from ..dtypes import float32, float64
from ..errors import ArgumentError, ShapeError, op_error
from ..ops import OPS
from ..scope import named_scope

# Arguments are checked up front so that bad input names the function the user called
# (softmax), not the primitive inside it that would fail (max).
_tensor = F._tensor_arg


def _axis(op: str, x, axis):
    """``axis`` checked (an int or None) so errors name ``op``."""
    if axis is not None and not F._is_int(axis):
        raise op_error(ArgumentError, op, (x,), f"axis must be an int, got {axis!r}")
    return axis


@named_scope("relu")
def relu(x):
    """max(x, 0), one primitive (one kernel op); NaN stays NaN. At exactly 0 the gradient
    is 0, as in PyTorch."""
    return F.apply(OPS["relu"], _tensor("relu", x))


@named_scope("sigmoid")
def sigmoid(x):
    """1 / (1 + exp(-x)), written so that nothing overflows: the exp is of -|x|, at most 1,
    and for x < 0 the result is e / (1 + e) (no inf / inf in the gradient either).

    Integers compute in float64 and bool in float32, as exp does: negating an integer
    first would wrap INT_MIN to itself and give sigmoid(INT_MIN) = 1.
    """
    x = _tensor("sigmoid", x)
    if x.dtype.kind in "iu":
        x = F.astype(x, float64)
    elif x.dtype.kind == "b":
        x = F.astype(x, float32)
    positive = F.greater_equal(x, 0)
    e = F.exp(F.where(positive, F.negative(x), x))
    return F.where(positive, 1 / (1 + e), e / (1 + e))


@named_scope("gelu")
def gelu(x, approximate: str = "none"):
    """Gaussian error linear unit; ``approximate="tanh"`` uses the tanh formula."""
    x = _tensor("gelu", x)
    if not isinstance(approximate, str) or approximate not in ("none", "tanh"):
        raise op_error(ArgumentError, "gelu", (x,),
                       f"approximate must be 'none' or 'tanh', got {approximate!r}")
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + F.tanh(inner))
    return 0.5 * x * (1 + F.erf(x * (1 / math.sqrt(2))))


def _stable_max(x, axis):
    # The shift by the max only guards exp against overflow: it is a constant for autograd.
    m = F.max(x, axis=axis, keepdims=True).detach()
    return F.where(F.isfinite(m), m, 0.0)


@named_scope("softmax")
def softmax(x, axis: int = -1, **torch_keywords):
    """``dim=`` is accepted as PyTorch's spelling of ``axis``."""
    x = _tensor("softmax", x)
    if torch_keywords:
        axis = F._one_axis_keyword("softmax", x, axis, torch_keywords, default=-1)
    F.normalize_axis_for("softmax", x, _axis("softmax", x, axis))
    e = F.exp(x - _stable_max(x, axis))
    return e / F.sum(e, axis=axis, keepdims=True)


@named_scope("logsumexp")
def logsumexp(x, axis=None, keepdims: bool = False, **torch_keywords):
    x = _tensor("logsumexp", x)
    if torch_keywords:
        axis, keepdims = F._torch_axis("logsumexp", x, axis, keepdims, torch_keywords)
    if axis is not None:
        F.normalize_axis_for("logsumexp", x, _axis("logsumexp", x, axis))
    keepdims = F._bool_arg("logsumexp", "keepdims", keepdims, (x,))
    m = _stable_max(x, axis)
    out = F.log(F.sum(F.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else F.squeeze(out, axis=axis if axis is not None else None)


@named_scope("log_softmax")
def log_softmax(x, axis: int = -1, **torch_keywords):
    """``dim=`` is accepted as PyTorch's spelling of ``axis``."""
    x = _tensor("log_softmax", x)
    if torch_keywords:
        axis = F._one_axis_keyword("log_softmax", x, axis, torch_keywords, default=-1)
    F.normalize_axis_for("log_softmax", x, _axis("log_softmax", x, axis))
    # (x - m) - log(sum(exp(x - m))) rather than x - logsumexp(x): adding the max back
    # into logsumexp rounds away a small log term at the scale of the max (float32: 41 +
    # 1.7e-6 is 41), which the largest logit's log-probability then loses.
    shifted = x - _stable_max(x, axis)
    return shifted - F.log(F.sum(F.exp(shifted), axis=axis, keepdims=True))


@named_scope("linear")
def linear(x, weight, bias=None):
    """``x @ weight.mT + bias`` with PyTorch's (out_features, in_features) weight layout."""
    x = _tensor("linear", x, (x, weight))
    weight = F._require_tensor("linear", weight, (x, weight))
    if bias is not None:
        bias = F._require_tensor("linear", bias, (x, weight, bias))
    if weight.ndim != 2:
        raise op_error(ShapeError, "linear", (x, weight), "weight must be (out, in)")
    out = F.matmul(x, F.matrix_transpose(weight))
    return out + bias if bias is not None else out


@named_scope("layer_norm")
def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    x = F._require_tensor("layer_norm", x)
    if F._is_int(normalized_shape):
        normalized_shape = (normalized_shape,)
    if not isinstance(normalized_shape, tuple | list) or not normalized_shape \
            or not all(F._is_int(d) for d in normalized_shape):
        raise op_error(ArgumentError, "layer_norm", (x,),
                       f"normalized_shape must be an int or a tuple of ints, "
                       f"got {normalized_shape!r}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and not isinstance(t, F.Tensor):
            raise op_error(ArgumentError, "layer_norm", (x, t),
                           f"{name} must be a Tensor or None, got {type(t).__name__}")
    eps = F._number_arg("layer_norm", "eps", eps, (x,))
    n = len(normalized_shape)
    if x.ndim < n or tuple(x.shape[-n:]) != tuple(normalized_shape):
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


@named_scope("softplus")
def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta * x)) / beta, written so that nothing overflows (max(z, 0) +
    log1p(exp(-|z|))); above ``threshold`` (in beta * x) it is x itself, as in PyTorch."""
    x = _tensor("softplus", x)
    beta = F._number_arg("softplus", "beta", beta, (x,))
    threshold = F._number_arg("softplus", "threshold", threshold, (x,))
    if x.dtype.kind != "f":
        x = F.astype(x, float64 if x.dtype.kind in "iu" else float32)
    z = x * beta if beta != 1 else x
    soft = F.maximum(z, 0) + F.log1p(F.exp(F.negative(F.abs(z))))
    if beta != 1:
        soft = soft / beta
    return F.where(F.greater(z, threshold), x, soft)


# The losses (losses.py), and convolution, pooling, dropout and attention, each in its own
# file: re-exported here so that ``em.nn.functional`` reads like ``torch.nn.functional``.
from ..functional import one_hot  # noqa: E402, F401 - torch.nn.functional.one_hot
from .attention import scaled_dot_product_attention  # noqa: E402, F401
from .conv import conv1d, conv2d, pad  # noqa: E402, F401
from .dropout import dropout  # noqa: E402, F401
from .losses import (  # noqa: E402,F401
    binary_cross_entropy_with_logits,
    cross_entropy,
    mse_loss,
    nll_loss,
)
from .pooling import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d  # noqa: E402, F401
