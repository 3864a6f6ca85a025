"""A composite recorded as one autograd node when nobody watches: cross_entropy in training.

A training step calls ``F.cross_entropy`` on logits that require grad. Through its ops that
is a dozen nodes on the tape and a dozen vjps in backward, mostly Python for the batches
people train on. When no tracer and no listener would see the ops
(``dispatch.plain_arrays(..., one_node=True)``), the forward makes the ops' NumPy calls at
once (nn/plain.py: the same bits) and records one node. Its backward makes, on the values
the forward kept, the arithmetic the ops' vjps make, in the order backward runs them and
with the casts backward makes between nodes, so the gradient has the bits it has through the
ops (tests/engine/test_one_node_loss.py compares them). Only the rounding steps matter for
that: the scatter of each sample's gradient into zeros and the row sums over one non-zero
value are exact. A tracer, a debugger or a profiler sees the ops, as before.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from .. import watched_composites
from .._tensor import Tensor
from ..dispatch import listener_untraced, plain_arrays, plain_tensor
from ..ops import OPS
from ..tape import GradNode
from . import plain as P

_SUM = OPS["sum"].impl
_SCATTER_ADD = OPS["scatter_add"].impl


class _OneNodeOp:
    """What a GradNode and backward read of an op: its name and vjp; the node keeps the
    forward's values in its attrs, never its output."""

    __slots__ = ("name", "vjp")
    saves_output = False

    def __init__(self, name: str, vjp):
        self.name, self.vjp = name, vjp


def ran_its_ops(out, backward):
    """``out``, a composite's result through its ops. Where only a listener kept it from
    one node (a recorder: watched_composites.py), backward through it counts a call at the
    site of the node's own backward (``backward``, the function the node runs): what
    recording costs there is stated apart from the forward's, which a script may run
    alone."""
    if out.__class__ is Tensor and out._grad_fn is not None and listener_untraced() \
            and out._data.__class__ is np.ndarray:  # (as plain_arrays counts the forward)
        watched_composites.mark_backward(out, backward.__code__)
    return out


def cross_entropy(logits, target, ignore_index, reduction):
    """The loss with one node for the whole composite, or None where its ops run (a tracer
    or a listener, another layout of arguments than (N, C) logits and (N,) labels, a label
    to explain, NumPy raising)."""
    arrays = plain_arrays(logits, target, one_node=True)
    if arrays is None:
        return None
    a, t = arrays
    if a.ndim != 2 or t.ndim != 1 or t.dtype.kind not in "iu" or not P.float_array(a) \
            or t.shape[0] != a.shape[0] or ignore_index.__class__ is not int \
            or reduction.__class__ is not str or reduction not in ("mean", "sum", "none"):
        return None
    try:
        loss, saved = P.cross_entropy_saving(a, t, ignore_index, reduction)
    except Exception:  # noqa: BLE001 - a bad label or NumPy raising: the ops explain it
        return None
    out = plain_tensor(loss)
    out._grad_fn = GradNode(CROSS_ENTROPY, (logits,),
                            {"saved": tuple(saved), "reduction": reduction}, None)
    out.requires_grad = True
    return out


def _cross_entropy_vjp(g, out, logits, *, saved, reduction):
    """The gradient of the logits, as the composite's vjps compute it (last op first):
    divide (the mean) ``g / sum(w)``; sum, a broadcast; multiply by the weights ``g * w``;
    negative; take_along_axis, a scatter_add into zeros; ``shifted - log(total)`` sends
    ``g`` to shifted and ``sum(-g)`` to the log; log ``g / total``; sum, a broadcast; exp
    ``g * e``; the two gradients of shifted added; ``x - max`` passes it to x. Backward
    casts a gradient to its operand's dtype between nodes (another dtype of ``g``)."""
    if g._data.__class__ is not np.ndarray:  # a traced gradient (a jit's backward through it)
        return (_cross_entropy_vjp_in_ops(g, saved, reduction),)
    try:
        grad = _cross_entropy_grad(g._data, saved, reduction)
    except FloatingPointError:  # np.seterr(all="raise"): as dispatch retries an op's NumPy
        with np.errstate(all="ignore"):
            grad = _cross_entropy_grad(g._data, saved, reduction)
    return (plain_tensor(grad),)


def _cross_entropy_grad(gd, saved, reduction):
    e, total, index, w, weight_sum = saved
    n, classes = e.shape
    dtype = e.dtype
    if reduction == "mean":
        gd = _as(np.true_divide(gd, weight_sum), dtype)
    if reduction != "none":
        gd = _as(np.broadcast_to(gd, (n,)), dtype)
    gd = np.negative(_as(np.multiply(gd, w), dtype))
    g_logp = _SCATTER_ADD(np, np.zeros((n, classes), dtype), index, gd.reshape(n, 1), axis=1)
    g_total = np.true_divide(_SUM(np, np.negative(g_logp), axis=(1,), keepdims=True), total)
    return np.add(g_logp, np.multiply(np.broadcast_to(g_total, (n, classes)), e))


def _as(a, dtype):
    """Backward's cast of a gradient to its operand's dtype (autograd._cast_to_operand)."""
    return a if a.dtype == dtype else a.astype(dtype)


def _cross_entropy_vjp_in_ops(g: Tensor, saved, reduction):
    """The same arithmetic through ops, recorded by the tracer that runs it."""
    e, total, index, w, weight_sum = (None if a is None else plain_tensor(a) for a in saved)
    n, classes = e.shape

    def cast(t):
        return t if t.dtype == e.dtype else F.astype(t, e.dtype)

    if reduction == "mean":
        g = cast(g / weight_sum)
    if reduction != "none":
        g = cast(F.broadcast_to(g, (n,)))
    g = F.negative(cast(g * w))
    zeros = F.zeros((n, classes), dtype=g.dtype, device=g.device)
    g_logp = F.apply_op("scatter_add", zeros, index, F.reshape(g, (n, 1)), axis=1)
    g_total = F.sum(F.negative(g_logp), axis=1, keepdims=True) / total
    return g_logp + F.broadcast_to(g_total, (n, classes)) * e


CROSS_ENTROPY = _OneNodeOp("cross_entropy", _cross_entropy_vjp)

__all__ = ["CROSS_ENTROPY", "cross_entropy", "ran_its_ops"]
