"""Dropout: zero each element with probability ``p`` and scale the rest by 1 / (1 - p).

The mask comes from ``em.random.uniform``, execmode's seeded generator, so
``em.random.seed(n)`` reproduces it. Random ops are impure: under ``em.jit`` the plan draws
from the same global generator at every call, in the traced order, so a jitted step draws
exactly the numbers the eager step would have drawn after the same seed.
"""

from __future__ import annotations

from .. import functional as F
from .. import random as em_random
from ..dispatch import plain_arrays, plain_tensor
from ..errors import ArgumentError, DTypeError
from ..op_errors import op_error
from ..scope import named_scope
from . import plain as P


def check_probability(op: str, name: str, p, operands) -> float:
    p = F._number_arg(op, name, p, operands)
    if isinstance(p, bool) or not 0.0 <= p <= 1.0:
        raise op_error(ArgumentError, op, operands,
                       f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


def dropout(input, p: float = 0.5, training: bool = True,  # noqa: A002 - PyTorch's names
            inplace: bool = False):
    """Zero elements with probability ``p`` (training only), scaling the kept ones by
    1 / (1 - p) so that the expected value is unchanged. In eval mode or with ``p == 0``,
    ``input`` itself comes back, as in PyTorch. ``inplace`` writes the result into it."""
    if training is True and inplace is False and p.__class__ is float and 0.0 < p < 1.0:
        arrays = plain_arrays(input)
        if arrays is not None and arrays[0].dtype.kind == "f":
            try:  # nobody watches: the ops' NumPy calls and draw at once (nn/plain.py)
                return plain_tensor(P.dropout(arrays[0], p))
            except Exception:  # noqa: BLE001 - NumPy raising: the ops explain it
                pass
    return _dropout(input, p, training, inplace)


@named_scope("dropout")
def _dropout(input, p, training, inplace):  # noqa: A002
    x = F._require_tensor("dropout", input)
    p = check_probability("dropout", "p", p, (x,))
    training = F._bool_arg("dropout", "training", training, (x,))
    inplace = F._bool_arg("dropout", "inplace", inplace, (x,))
    if x.dtype.kind != "f":
        raise op_error(DTypeError, "dropout", (x,), "expected a floating-point input")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        out = x * 0.0  # no draw, as PyTorch: every element is dropped
    else:
        keep = F.greater_equal(em_random.uniform(x.shape, dtype=x.dtype, device=x.device), p)
        out = x * F.astype(keep, x.dtype) * (1.0 / (1.0 - p))
    if inplace:
        return F.assign(x, out)
    return out


def _channel_dropout(op, input, p, training, inplace, dims):
    """Zero whole channels: each (n, c) of an (N, C, *spatial) input (or (C, *spatial))
    is kept or dropped together, the kept ones scaled by 1 / (1 - p)."""
    x = F._require_tensor(op, input)
    p = check_probability(op, "p", p, (x,))
    training = F._bool_arg(op, "training", training, (x,))
    inplace = F._bool_arg(op, "inplace", inplace, (x,))
    if x.dtype.kind != "f":
        raise op_error(DTypeError, op, (x,), "expected a floating-point input")
    if x.ndim not in (dims + 1, dims + 2):
        raise op_error(ArgumentError, op, (x,),
                       f"expects a {dims + 2}-d (N, C, ...) or {dims + 1}-d (C, ...) input, "
                       f"got shape {tuple(x.shape)}")
    if not training or p == 0.0:
        return x
    mask_shape = tuple(x.shape[:x.ndim - dims]) + (1,) * dims
    if p == 1.0:
        out = x * 0.0
    else:
        keep = F.greater_equal(em_random.uniform(mask_shape, dtype=x.dtype, device=x.device),
                               p)
        out = x * F.astype(keep, x.dtype) * (1.0 / (1.0 - p))
    return F.assign(x, out) if inplace else out


@named_scope("dropout1d")
def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Channel dropout over (N, C, L): whole channels are zeroed with probability p."""
    return _channel_dropout("dropout1d", input, p, training, inplace, 1)


@named_scope("dropout2d")
def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Channel dropout over (N, C, H, W): whole feature maps are zeroed with probability
    p."""
    return _channel_dropout("dropout2d", input, p, training, inplace, 2)


@named_scope("dropout3d")
def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Channel dropout over (N, C, D, H, W)."""
    return _channel_dropout("dropout3d", input, p, training, inplace, 3)
