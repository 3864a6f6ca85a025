"""Losses, as PyTorch spells and computes them: mse_loss, l1_loss, smooth_l1_loss,
huber_loss, cross_entropy, nll_loss, binary_cross_entropy, binary_cross_entropy_with_logits
and kl_div (re-exported by ``execmode.nn.functional``; the ``nn.CrossEntropyLoss`` ...
modules are in loss_modules.py).

Class labels go through ``check_labels``, an op that raises for a label outside
[0, classes) naming it (in graph mode too: the op may raise, so it always runs), rather
than the silent loss of 0 that a one-hot comparison gives. The log-probability of each
label is read with ``take_along_axis`` (a gather, whose vjp is scatter_add), not through a
one-hot product.
"""

from __future__ import annotations

from .. import functional as F
from ..dispatch import plain_arrays, plain_tensor
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from ..scope import named_scope
from . import one_node
from . import plain as P
from .softmax import log_softmax


def _check_reduction(op, operands, reduction):
    if not isinstance(reduction, str) or reduction not in ("mean", "sum", "none"):
        raise op_error(ArgumentError, op, operands,
                       f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


def _difference(op, pred, target, reduction):
    """``pred - target`` after the checks every regression loss makes."""
    pred = F._require_tensor(op, pred, (pred, target))
    target = F._require_tensor(op, target, (pred, target))
    _check_reduction(op, (pred, target), reduction)
    if pred.shape != target.shape:
        raise op_error(ShapeError, op, (pred, target),
                       "pred and target shapes differ (PyTorch would broadcast them with a "
                       "warning, usually a bug: reshape one)")
    return pred - target


@named_scope("mse_loss")
def mse_loss(pred, target, reduction: str = "mean"):
    """Mean squared error: ``(pred - target) ** 2``, reduced (``"mean"``, ``"sum"`` or
    ``"none"``). Shapes must be equal."""
    d = _difference("mse_loss", pred, target, reduction)
    return _reduce(d * d, reduction)


@named_scope("l1_loss")
def l1_loss(pred, target, reduction: str = "mean"):
    """Mean absolute error: ``|pred - target|``, reduced. The gradient at 0 is 0, as
    PyTorch's (the sign)."""
    d = _difference("l1_loss", pred, target, reduction)
    return _reduce(F.abs(d), reduction)


@named_scope("smooth_l1_loss")
def smooth_l1_loss(pred, target, reduction: str = "mean", beta: float = 1.0):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (PyTorch's;
    ``beta=0`` is the L1 loss)."""
    d = _difference("smooth_l1_loss", pred, target, reduction)
    beta = F._number_arg("smooth_l1_loss", "beta", beta, (d,))
    if beta < 0:
        raise op_error(ArgumentError, "smooth_l1_loss", (d,),
                       f"beta must be >= 0, got {beta}")
    a = F.abs(d)
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(F.where(F.less(a, beta), d * d * (0.5 / beta), a - 0.5 * beta), reduction)


@named_scope("huber_loss")
def huber_loss(pred, target, reduction: str = "mean", delta: float = 1.0):
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``
    (PyTorch's; ``smooth_l1_loss`` times ``delta``)."""
    d = _difference("huber_loss", pred, target, reduction)
    delta = F._number_arg("huber_loss", "delta", delta, (d,))
    if delta <= 0:
        raise op_error(ArgumentError, "huber_loss", (d,), f"delta must be > 0, got {delta}")
    a = F.abs(d)
    return _reduce(F.where(F.less(a, delta), d * d * 0.5, (a - 0.5 * delta) * delta),
                   reduction)


def _classes_last(op, logits, target):
    """PyTorch's (N, C, d1, ...) logits with (N, d1, ...) targets as (M, C) and (M,), and
    the shape to give back per-element losses."""
    if logits.ndim == 1:  # one unbatched sample: (C,) with a 0-d target
        return F.reshape(logits, (1, -1)), target, ()
    if logits.ndim == 2:
        return logits, target, (logits.shape[0],)
    n, c = logits.shape[0], logits.shape[1]
    rest = tuple(logits.shape[2:])
    if target.dtype.kind in "iu" and tuple(target.shape) == (n,) + rest:
        moved = F.permute_dims(logits, (0,) + tuple(range(2, logits.ndim)) + (1,))
        return F.reshape(moved, (-1, c)), F.reshape(target, (-1,)), (n,) + rest
    if target.dtype.kind in "iu" and tuple(target.shape) == tuple(logits.shape[:-1]):
        raise op_error(ShapeError, op, (logits, target),
                       f"logits {tuple(logits.shape)} have the classes last, but PyTorch's "
                       "layout (which execmode follows) puts them on axis 1: reshape to "
                       f"(B*T, C) and (B*T,), e.g. {op}(logits.reshape(-1, "
                       f"{logits.shape[-1]}), target.reshape(-1))")
    return logits, target, None  # probabilities: checked by the caller


def _check_class_target(op, logits, target, expect):
    if target.dtype.kind not in "iu":
        return
    if tuple(target.shape) != expect:
        raise op_error(ShapeError, op, (logits, target),
                       f"class-index targets must have shape {expect}, got "
                       f"{tuple(target.shape)}")


def _class_losses(op, logp, target, weight, ignore_index, label_smoothing):
    """Per-sample losses (M,) for class labels, and the per-sample weights (M,) the mean
    divides by (0 for ignored samples)."""
    classes = logp.shape[-1]
    keep = F.apply(OPS["check_labels"], target, num_classes=classes,
                   ignore_index=int(ignore_index), caller=op)
    safe = F.where(keep, target, 0)
    picked = F.gather(logp, 1, F.expand_dims(safe, -1))  # labels checked: in range
    nll = F.negative(F.reshape(picked, (-1,)))
    w = F.astype(keep, logp.dtype)
    if weight is not None:
        w = w * weight[safe]
    loss = nll * w
    if label_smoothing:
        # PyTorch: (1 - eps) * nll + eps / C * sum_c (-w_c log p_c), ignored samples 0.
        spread = logp * weight if weight is not None else logp
        smooth = F.negative(F.sum(spread, axis=-1)) * F.astype(keep, logp.dtype)
        loss = loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)
    return loss, w


def _finish(loss, w, reduction, shape):
    if reduction == "none":
        return F.reshape(loss, shape)
    if reduction == "sum":
        return F.sum(loss)
    # PyTorch's weighted mean: divided by the weights of the samples that count (NaN
    # when every sample is ignored, as PyTorch).
    return F.sum(loss) / F.sum(w)


def _check_common(op, logits, target, weight, reduction, ignore_index, label_smoothing=0.0):
    _check_reduction(op, (logits, target), reduction)
    F._int_arg(op, "ignore_index", ignore_index, (logits, target))
    eps = F._number_arg(op, "label_smoothing", label_smoothing, (logits, target))
    if not 0.0 <= eps <= 1.0:
        raise op_error(ArgumentError, op, (logits, target),
                       f"label_smoothing must be in [0, 1], got {eps}")
    if weight is not None:
        weight = F._require_tensor(op, weight, (logits, target, weight))
        if weight.shape != (logits.shape[1 if logits.ndim > 1 else 0],):
            raise op_error(ShapeError, op, (logits, target, weight),
                           "weight must have one entry per class")
    return weight, eps


def cross_entropy(logits, target, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """Softmax cross-entropy, as PyTorch's: logits (N, C) (or (C,), or (N, C, d1, ...));
    ``target`` holds class indices (N,) (or (N, d1, ...)) or class probabilities of the
    logits' shape. A class index outside [0, C) other than ``ignore_index`` is an error
    naming it. ``weight`` (C,) weighs classes; ``label_smoothing`` mixes in the uniform
    distribution."""
    if weight is None and label_smoothing.__class__ in (int, float) and not label_smoothing:
        arrays = plain_arrays(logits, target)
        if arrays is not None:  # nobody watches: the ops' NumPy calls (nn/plain.py)
            out = _plain_cross_entropy(*arrays, ignore_index, reduction)
            if out is not None:
                return plain_tensor(out)
        elif getattr(logits, "requires_grad", False):  # training: one node (nn/one_node.py)
            out = one_node.cross_entropy(logits, target, ignore_index, reduction)
            if out is not None:
                return out
            return one_node.ran_its_ops(_cross_entropy(logits, target, weight, ignore_index,
                                                       reduction, label_smoothing),
                                        one_node._cross_entropy_vjp)
    return _cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing)


def _plain_cross_entropy(logits, target, ignore_index, reduction):
    """The plain path for (N, C) logits and (N,) class indices, or None."""
    if logits.ndim != 2 or target.ndim != 1 or target.dtype.kind not in "iu" \
            or not P.float_array(logits) or target.shape[0] != logits.shape[0] \
            or ignore_index.__class__ is not int or reduction.__class__ is not str \
            or reduction not in ("mean", "sum", "none"):
        return None
    try:
        return P.cross_entropy(logits, target, ignore_index, reduction)
    except Exception:  # noqa: BLE001 - a bad label or NumPy raising: the ops explain it
        return None


@named_scope("cross_entropy")
def _cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing):
    op = "cross_entropy"
    logits = F._require_tensor(op, logits, (logits, target))
    target = F._require_tensor(op, target, (logits, target))
    if logits.ndim == 0:
        raise op_error(ShapeError, op, (logits, target), "logits must be (batch, classes)")
    weight, eps = _check_common(op, logits, target, weight, reduction, ignore_index,
                                label_smoothing)
    flat, flat_target, shape = _classes_last(op, logits, target)
    if target.dtype.kind in "iu":
        _check_class_target(op, logits, target,
                            () if logits.ndim == 1 else (logits.shape[0],) + logits.shape[2:])
        logp = log_softmax(flat, axis=-1)
        if flat_target.ndim != 1:  # (N,) targets already are: one op less per call
            flat_target = F.reshape(flat_target, (-1,))
        loss, w = _class_losses(op, logp, flat_target, weight, ignore_index, eps)
        return _finish(loss, w, reduction, shape)
    if target.shape != logits.shape:
        raise op_error(ShapeError, op, (logits, target),
                       "probability targets must have the logits' shape")
    logp = log_softmax(logits, axis=1 if logits.ndim > 1 else 0)
    classes = logits.shape[1] if logits.ndim > 1 else logits.shape[0]
    if eps:
        target = target * (1 - eps) + eps / classes
    if weight is not None:
        logp = logp * F.reshape(weight, (-1,) + (1,) * (logits.ndim - 2)) \
            if logits.ndim > 1 else logp * weight
    per_sample = F.negative(F.sum(logp * target, axis=1 if logits.ndim > 1 else 0))
    return _reduce(per_sample, reduction)


@named_scope("nll_loss")
def nll_loss(log_probs, target, weight=None, ignore_index: int = -100,
             reduction: str = "mean"):
    """Negative log-likelihood of class indices under log-probabilities (N, C) (what
    log_softmax returns): cross_entropy without the log_softmax."""
    op = "nll_loss"
    log_probs = F._require_tensor(op, log_probs, (log_probs, target))
    target = F._require_tensor(op, target, (log_probs, target))
    if log_probs.ndim == 0:
        raise op_error(ShapeError, op, (log_probs, target), "input must be (batch, classes)")
    if target.dtype.kind not in "iu":
        raise op_error(ArgumentError, op, (log_probs, target),
                       f"target must hold class indices (integers), got {target.dtype}")
    weight, _ = _check_common(op, log_probs, target, weight, reduction, ignore_index)
    flat, flat_target, shape = _classes_last(op, log_probs, target)
    _check_class_target(op, log_probs, target,
                        () if log_probs.ndim == 1 else (log_probs.shape[0],)
                        + log_probs.shape[2:])
    loss, w = _class_losses(op, flat, F.reshape(flat_target, (-1,)), weight, ignore_index,
                            0.0)
    return _finish(loss, w, reduction, shape)


@named_scope("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(logits, target, weight=None, reduction: str = "mean",
                                     pos_weight=None):
    """Sigmoid + binary cross-entropy in one stable formula (PyTorch's):
    (1 - t) * x + (1 + (pos_weight - 1) * t) * softplus(-x), finite for every logit."""
    op = "binary_cross_entropy_with_logits"
    logits = F._require_tensor(op, logits, (logits, target))
    target = F._require_tensor(op, target, (logits, target))
    _check_reduction(op, (logits, target), reduction)
    if target.shape != logits.shape:
        raise op_error(ShapeError, op, (logits, target),
                       "target must have the logits' shape")
    if logits.dtype.kind != "f":
        raise op_error(ArgumentError, op, (logits, target),
                       f"logits must be floating point, got {logits.dtype}")
    target = F.astype(target, logits.dtype, copy=False)
    # softplus(-x) = max(-x, 0) + log1p(exp(-|x|)): exp never overflows.
    softplus_neg = F.maximum(F.negative(logits), 0) + F.log1p(F.exp(F.negative(F.abs(logits))))
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * logits + log_weight * softplus_neg
    else:
        loss = (1 - target) * logits + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@named_scope("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, reduction: str = "mean"):  # noqa: A002
    """``-(t * log(p) + (1 - t) * log(1 - p))`` of probabilities ``input`` (what sigmoid
    returns), each log clamped at -100 as PyTorch clamps it, so p = 0 or 1 gives a finite
    loss. ``binary_cross_entropy_with_logits`` is the stable form on logits. Values of
    ``input`` outside [0, 1] give NaN (PyTorch raises; checking would cost a sync)."""
    op = "binary_cross_entropy"
    p = F._require_tensor(op, input, (input, target))
    target = F._require_tensor(op, target, (p, target))
    _check_reduction(op, (p, target), reduction)
    if target.shape != p.shape:
        raise op_error(ShapeError, op, (p, target), "target must have the input's shape")
    if p.dtype.kind != "f":
        raise op_error(ArgumentError, op, (p, target),
                       f"input must be floating point (probabilities), got {p.dtype}")
    target = F.astype(target, p.dtype, copy=False)
    log_p = F.maximum(F.log(p), -100.0)
    log_q = F.maximum(F.log(1 - p), -100.0)
    loss = F.negative(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@named_scope("kl_div")
def kl_div(input, target, reduction: str = "mean", log_target: bool = False):  # noqa: A002
    """Kullback-Leibler divergence with PyTorch's argument order: ``input`` holds
    log-probabilities, ``target`` probabilities (log-probabilities with ``log_target``);
    pointwise ``target * (log(target) - input)``, 0 where target is 0. ``reduction``:
    ``"mean"`` (over every element, PyTorch's default), ``"batchmean"`` (the sum over the
    batch size: the true KL divergence), ``"sum"``, ``"none"``."""
    op = "kl_div"
    x = F._require_tensor(op, input, (input, target))
    target = F._require_tensor(op, target, (x, target))
    if not isinstance(reduction, str) or reduction not in ("mean", "batchmean", "sum",
                                                           "none"):
        raise op_error(ArgumentError, op, (x, target),
                       f"reduction must be 'mean', 'batchmean', 'sum' or 'none', got "
                       f"{reduction!r}")
    log_target = F._bool_arg(op, "log_target", log_target, (x, target))
    if target.shape != x.shape:
        raise op_error(ShapeError, op, (x, target), "target must have the input's shape")
    if log_target:
        loss = F.exp(target) * (target - x)
    else:
        # xlogy: 0 * log(0) is 0 (and its gradient stays finite: log of 1 there).
        positive = F.greater(target, 0)
        safe = F.where(positive, target, 1.0)
        loss = F.where(positive, target * F.log(safe), 0.0) - target * x
    if reduction == "batchmean":
        return F.sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)
