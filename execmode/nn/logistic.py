"""The logistic functions, sigmoid and softplus, each written so that nothing overflows.

Their own module because the activations built on them (silu, mish, logsigmoid, glu,
the recurrent layers' gates) import them, and ``nn.functional`` (which re-exports them)
re-exports those activations too.
"""

from __future__ import annotations

from .. import functional as F
from ..dtypes import float32, float64
from ..scope import named_scope

_tensor = F._tensor_arg


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


__all__ = ["sigmoid", "softplus"]
