"""linear, layer_norm, softmax and gelu in training, each recorded as one autograd node when
nobody watches (nn/one_node.py's mechanism, for the layers of a transformer block).

Through its ops, a linear layer is five nodes on the tape, a layer_norm ten, softmax and
gelu five each, and backward runs a vjp for every one: a GPT's eager step spent more time
in that Python than in their arithmetic. Here the forward makes the ops' NumPy calls at once
(nn/plain.py: the same bits) and keeps what their vjps read; the node's backward makes the
arithmetic those vjps make, in the order backward runs them, so every gradient has the
bits it has through the ops (tests/engine/test_one_node_layers.py compares them).

Where an input gets gradients from two of the composite's ops (layer_norm's x from the
mean and from ``x - mean``, gelu's x from ``0.5 * x`` and ``x / sqrt 2``), the node lists
it twice, and backward adds the two as it adds them through the ops: one after the other
into whatever the input already holds. A tracer, a debugger or a profiler sees the ops.

Each backward is written once, over a kit of the few functions that differ between NumPy
arrays and tensors (operators are the same on both): tensors when the gradient is traced
(a jit's backward walks an eager node), arrays otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from .. import tape
from ..dispatch import plain_arrays, plain_tensor
from ..ops import OPS
from ..ops.elementwise import broadcast_axes
from ..ops.erf import gelu_grads_native
from ..tape import GradNode
from . import plain as P
from .one_node import _OneNodeOp

_SUM = OPS["sum"].impl
# erf's vjp multiplies by 2 / sqrt(pi) as a Python number (dispatch turns the NumPy scalar
# into one): a float64 NumPy scalar would make a float32 gradient float64.
_TWO_OVER_ROOT_PI = float(2.0 / np.sqrt(np.pi))


class _ArrayKit:
    """The vjps' functions on NumPy arrays: the calls the ops make."""

    @staticmethod
    def sum(a, axes):
        return _SUM(np, a, axis=axes, keepdims=True)

    broadcast, reshape, exp = staticmethod(np.broadcast_to), staticmethod(np.reshape), np.exp
    matmul = staticmethod(np.matmul)

    @staticmethod
    def transposed(a):
        return a.T

    @staticmethod
    def value(t):
        """An input's values as the vjps' arithmetic takes them."""
        return t._data


class _TensorKit:
    """The same through ops (a traced gradient: the tracer records them)."""

    @staticmethod
    def sum(a, axes):
        return F.sum(a, axis=axes, keepdims=True)

    @staticmethod
    def broadcast(a, shape):
        return F.apply_op("broadcast_to", a, shape=tuple(shape))

    reshape, exp, matmul = staticmethod(F.reshape), staticmethod(F.exp), staticmethod(F.matmul)

    @staticmethod
    def transposed(a):
        return F.matrix_transpose(a)

    @staticmethod
    def value(t):
        return t


def _sum_to(kit, g, shape):
    """ops/elementwise.sum_to_shape with ``kit``'s functions."""
    if g.shape == tuple(shape):
        return g
    axes = broadcast_axes(g.shape, shape)
    if axes:
        g = kit.sum(g, axes)
    return g if g.ndim == len(shape) else kit.reshape(g, shape)


def _broadcast(kit, g, shape):
    """A sum's vjp (keepdims): its gradient broadcast back to the summed shape."""
    return g if g.shape == tuple(shape) else kit.broadcast(g, shape)


def _backward(vjp_arrays):
    """A node's vjp from ``vjp_arrays(kit, g, *inputs, **attrs)``: on arrays when ``g`` is
    a NumPy array (retried with NumPy's floating-point errors ignored where
    ``np.seterr(all="raise")`` made one raise, as dispatch retries an op), through ops when
    it is traced."""
    def vjp(g, out, *inputs, **attrs):
        if g._data.__class__ is not np.ndarray:
            return vjp_arrays(_TensorKit, g, *inputs, **_as_tensors(attrs))
        try:
            grads = vjp_arrays(_ArrayKit, g._data, *inputs, **attrs)
        except FloatingPointError:
            with np.errstate(all="ignore"):
                grads = vjp_arrays(_ArrayKit, g._data, *inputs, **attrs)
        return tuple(None if a is None else plain_tensor(a) for a in grads)
    return vjp


def _as_tensors(attrs: dict) -> dict:
    """The saved arrays of ``attrs`` as tensors (constants of a trace)."""
    saved = tuple(a if a.__class__ is not np.ndarray else plain_tensor(a)
                  for a in attrs["saved"])
    return {**attrs, "saved": saved}


def _needs(x) -> bool:
    return x is not None and x.requires_grad


def _one_node(op, out, inputs: tuple, attrs: dict):
    t = plain_tensor(out)
    t._grad_fn = GradNode(op, inputs, attrs, None)
    t.requires_grad = True
    return t


# --- linear --------------------------------------------------------------------------------

def linear(x, weight, bias):
    """linear as one node, or None where its ops run (a tracer or a listener, a 1-D x, a
    weight not laid out row by row, mixed dtypes, anything the ops check)."""
    inputs = (x, weight) if bias is None else (x, weight, bias)
    arrays = plain_arrays(*inputs, one_node=True)
    if arrays is None:
        return None
    a, w = arrays[0], arrays[1]
    # The weight's gradient is g^T x where w.mT is laid out column by column (the matmul's
    # vjp, ops/linalg.py): a weight in rows, as a layer keeps it.
    if a.ndim < 2 or w.ndim != 2 or not w.flags.c_contiguous or w.flags.f_contiguous:
        return None
    out = P.linear(*arrays)
    if out is None:
        return None
    rows = a.reshape(math.prod(a.shape[:-1]), a.shape[-1]) if a.ndim > 2 else a
    return _one_node(LINEAR, out, inputs, {"saved": (rows,)})


def linear_grads(kit, g, x, weight, *bias, saved):
    """Through the ops, last first: ``+ bias`` (its gradient summed to its shape), the
    reshape of the rows' product, the product ``rows @ w.mT`` (rows: ``g @ w``; w.mT:
    ``(g^T rows)^T``, which w.mT's transpose turns back), the reshape of x into rows."""
    (rows,) = saved
    g_bias = (_sum_to(kit, g, bias[0].shape) if _needs(bias[0]) else None,) if bias else ()
    g_rows = g if g.ndim == 2 else kit.reshape(g, (rows.shape[0], g.shape[-1]))
    g_x = g_weight = None
    if x.requires_grad:
        g_x = kit.matmul(g_rows, kit.value(weight))
        if g_x.shape != x.shape:
            g_x = kit.reshape(g_x, x.shape)
    if weight.requires_grad:
        g_weight = kit.matmul(kit.transposed(g_rows), rows)
    return (g_x, g_weight) + g_bias


LINEAR = _OneNodeOp("linear", _backward(linear_grads))
# (its ops save only for a product of two operands that require grad)
tape.saves_when["linear"] = lambda node: node.inputs[0].requires_grad and \
    node.inputs[1].requires_grad


# --- layer_norm ----------------------------------------------------------------------------

def layer_norm(x, normalized_shape, weight, bias, eps):
    """layer_norm as one node, or None where its ops run (a tracer or a listener, mixed
    dtypes, a weight or bias that broadcasts the result larger, anything the ops check)."""
    affine = tuple(t for t in (weight, bias) if t is not None)
    arrays = plain_arrays(x, *affine, one_node=True)
    if arrays is None:
        return None
    a = arrays[0]
    if any(t.dtype != a.dtype or not _keeps_shape(a, t) for t in arrays[1:]):
        return None
    got = P.layer_norm_of(arrays, normalized_shape, weight is not None, bias is not None, eps)
    if got is None:
        return None
    out, saved = got
    return _one_node(LAYER_NORM, out, (x, x, *affine),
                     {"saved": saved, "affine": (weight is not None, bias is not None)})


def _keeps_shape(a, t) -> bool:
    """``t`` broadcasts against ``a`` without making the result larger (a weight or bias
    that does not broadcast at all is the ops' to explain)."""
    try:
        return np.broadcast_shapes(a.shape, t.shape) == a.shape
    except ValueError:
        return False


def layer_norm_grads(kit, g, x, _, *affine_tensors, saved, affine):
    """Through the ops, last first: ``+ bias`` (its gradient summed to its shape),
    ``* weight``, ``d / root``, sqrt, ``+ eps``, ``/ count``, the sum, ``d * d`` (both
    operands d: d's gradient is ``(g / root + b) + b``), ``x - mean``, ``/ count``, the
    sum. x gets ``x - mean``'s gradient first, then the mean's."""
    d, root, normed, axes = saved
    weight = affine_tensors[0] if affine[0] else None
    bias = affine_tensors[-1] if affine[1] else None
    g_bias = _sum_to(kit, g, bias.shape) if _needs(bias) else None
    g_weight = _sum_to(kit, g * normed, weight.shape) if _needs(weight) else None
    given = ((g_weight,) if weight is not None else ()) + ((g_bias,) if bias is not None else ())
    if not x.requires_grad:
        return (None, None) + given
    if weight is not None:
        g = g * kit.value(weight)
    count = math.prod(d.shape[i] for i in axes)
    g_root = _sum_to(kit, -g * d / (root * root), root.shape)
    g_sum = _broadcast(kit, g_root * 0.5 / root / count, d.shape)
    g_d = g / root + g_sum * d
    g_d = g_d + g_sum * d
    g_mean = _sum_to(kit, -g_d, root.shape)
    return (g_d, _broadcast(kit, g_mean / count, d.shape)) + given


LAYER_NORM = _OneNodeOp("layer_norm", _backward(layer_norm_grads))
# (its ops save only where x requires grad: ``d / root`` and the sqrt; the weight's product
# saves nothing with a normed x that needs none)
tape.saves_when["layer_norm"] = lambda node: node.inputs[0].requires_grad


# --- softmax -------------------------------------------------------------------------------

def softmax(x, axis, torch_keywords):
    """softmax as one node, or None where its ops run."""
    arrays = plain_arrays(x, one_node=True)
    got = None if arrays is None else P.on_class_axis(P.softmax_saving, arrays[0], axis,
                                                      torch_keywords)
    if got is None:
        return None
    out, saved = got
    return _one_node(SOFTMAX, out, (x,), {"saved": saved})


def softmax_grads(kit, g, x, *, saved):
    """``e / total``'s two gradients (the total's summed over the axis), the sum's added
    to e's, then exp's (``* e``); ``x - max`` passes it on (the max is a constant)."""
    e, total = saved
    g_e = g / total
    g_total = _sum_to(kit, -g * e / (total * total), total.shape)
    g_e = g_e + _broadcast(kit, g_total, e.shape)
    return (g_e * e,)


SOFTMAX = _OneNodeOp("softmax", _backward(softmax_grads))


# --- gelu ----------------------------------------------------------------------------------

def gelu(x):
    """gelu (the erf formula) as one node, or None where its ops run."""
    arrays = plain_arrays(x, one_node=True)
    if arrays is None or not P.float_array(arrays[0]):
        return None
    try:
        out, saved = P.gelu_saving(arrays[0])
    except Exception:  # noqa: BLE001 - NumPy raising (np.errstate): the ops explain it
        return None
    return _one_node(GELU, out, (x, x), {"saved": saved})


def gelu_grads(kit, g, x, _, *, saved):
    """``half * shifted``'s two gradients; ``1 + erf`` passes shifted's to erf, whose vjp
    is ``g * 2/sqrt(pi) * exp(-scaled^2)``; ``x / sqrt 2`` and ``0.5 * x`` give x its two,
    in the order backward reaches them (through erf first)."""
    half, scaled, shifted = saved
    if kit is _ArrayKit:  # in C where it applies (ops/erf.py: the same operations)
        native = gelu_grads_native(g, half, scaled, shifted)
        if native is not None:
            return native
    g_scaled = g * half * _TWO_OVER_ROOT_PI * kit.exp(-(scaled * scaled))
    return g_scaled * P.SQRT_HALF, g * shifted * 0.5


GELU = _OneNodeOp("gelu", _backward(gelu_grads))

__all__ = ["GELU", "LAYER_NORM", "LINEAR", "SOFTMAX", "gelu", "gelu_grads", "layer_norm",
           "layer_norm_grads", "linear", "linear_grads", "softmax", "softmax_grads"]
