"""Softmax and its log-space relatives (softmax, log_softmax, logsumexp), shifted by the
max for stability. Their own module because attention and the losses use them, and
``nn.functional`` (which re-exports them) re-exports attention and the losses too."""

from __future__ import annotations

from .. import functional as F
from ..dispatch import plain_arrays, plain_tensor
from ..errors import ArgumentError
from ..op_errors import op_error
from ..scope import named_scope
from . import one_node_layers
from . import plain as P
from .one_node import ran_its_ops

_tensor = F._tensor_arg


def _axis(op: str, x, axis):
    """``axis`` checked (an int or None) so errors name ``op``."""
    if axis is not None and not F._is_int(axis):
        raise op_error(ArgumentError, op, (x,), f"axis must be an int, got {axis!r}")
    return axis


def _class_axis(op: str, x, axis, torch_keywords):
    """The one axis softmax and log_softmax normalize over (PyTorch's ``dim=`` or
    ``axis=``), checked so that errors name ``op``."""
    if torch_keywords:
        axis = F._one_axis_keyword(op, x, axis, torch_keywords, default=-1)
    F.normalize_axis_for(op, x, _axis(op, x, axis))
    return axis


def _stable_max(x, axis):
    # The shift by the max only guards exp against overflow: it is a constant for autograd.
    m = F.max(x, axis=axis, keepdims=True).detach()
    return F.where(F.isfinite(m), m, 0.0)


def softmax(x, axis: int = -1, **torch_keywords):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (PyTorch's ``dim=`` is
    accepted too), shifted by the max so that nothing overflows."""
    arrays = plain_arrays(x)
    if arrays is not None:  # nobody watches: the ops' NumPy calls at once (nn/plain.py)
        out = P.on_class_axis(P.softmax, arrays[0], axis, torch_keywords)
        if out is not None:
            return plain_tensor(out)
    elif getattr(x, "requires_grad", False):  # training: one node (nn/one_node_layers.py)
        out = one_node_layers.softmax(x, axis, torch_keywords)
        if out is not None:
            return out
        return ran_its_ops(_softmax(x, axis, **torch_keywords), one_node_layers.softmax_grads)
    return _softmax(x, axis, **torch_keywords)


@named_scope("softmax")
def _softmax(x, axis: int = -1, **torch_keywords):
    x = _tensor("softmax", x)
    axis = _class_axis("softmax", x, axis, torch_keywords)
    e = F.exp(x - _stable_max(x, axis))
    return e / F.sum(e, axis=axis, keepdims=True)


@named_scope("logsumexp")
def logsumexp(x, axis=None, keepdims: bool = False, **torch_keywords):
    """``log(sum(exp(x)))`` over ``axis`` (every axis when None), shifted by the max."""
    x = _tensor("logsumexp", x)
    if torch_keywords:
        axis, keepdims = F._torch_axis("logsumexp", x, axis, keepdims, torch_keywords)
    if axis is not None:
        F.normalize_axis_for("logsumexp", x, _axis("logsumexp", x, axis))
    keepdims = F._bool_arg("logsumexp", "keepdims", keepdims, (x,))
    m = _stable_max(x, axis)
    out = F.log(F.sum(F.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else F.squeeze(out, axis=axis if axis is not None else None)


def log_softmax(x, axis: int = -1, **torch_keywords):
    """``log(softmax(x))`` along ``axis`` (PyTorch's ``dim=`` is accepted too), computed
    as ``(x - max) - log(sum(exp(x - max)))``."""
    arrays = plain_arrays(x)
    if arrays is not None:  # nobody watches: the ops' NumPy calls at once (nn/plain.py)
        out = P.on_class_axis(P.log_softmax, arrays[0], axis, torch_keywords)
        if out is not None:
            return plain_tensor(out)
    return _log_softmax(x, axis, **torch_keywords)


@named_scope("log_softmax")
def _log_softmax(x, axis: int = -1, **torch_keywords):
    x = _tensor("log_softmax", x)
    axis = _class_axis("log_softmax", x, axis, torch_keywords)
    # (x - m) - log(sum(exp(x - m))) rather than x - logsumexp(x): adding the max back
    # into logsumexp rounds away a small log term at the scale of the max (float32: 41 +
    # 1.7e-6 is 41), which the largest logit's log-probability then loses.
    shifted = x - _stable_max(x, axis)
    return shifted - F.log(F.sum(F.exp(shifted), axis=axis, keepdims=True))
