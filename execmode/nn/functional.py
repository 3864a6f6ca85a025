"""ML functions, composed of primitives, each inside a named scope.

The scope groups their ops in the profiler and in graphs ("softmax/exp", "mse_loss/mean").
"""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from ..dispatch import plain_arrays, plain_tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..functional import (
    one_hot,  # noqa: F401 - torch.nn.functional.one_hot
    tanh,  # noqa: F401 - torch.nn.functional.tanh
)
from ..op_errors import op_error
from ..ops import OPS
from ..scope import named_scope
from . import one_node_layers
from . import plain as P
from .activations import (  # noqa: F401
    celu,
    elu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    prelu,
    relu6,
    selu,
    silu,
    softmin,
    softsign,
    tanhshrink,
    threshold,
)
from .attention import scaled_dot_product_attention  # noqa: F401
from .batchnorm import batch_norm  # noqa: F401
from .conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, pad  # noqa: F401
from .distance import cosine_similarity, interpolate, pairwise_distance, unfold  # noqa: F401
from .dropout import dropout, dropout1d, dropout2d, dropout3d  # noqa: F401
from .logistic import sigmoid, softplus  # noqa: F401 - activations.py uses them too
from .losses import (  # noqa: F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .normalization import group_norm, normalize, rms_norm  # noqa: F401
from .one_node import ran_its_ops
from .pooling import (  # noqa: F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from .softmax import log_softmax, logsumexp, softmax  # noqa: F401

# The softmax family, the losses, convolution, pooling, dropout and attention live in their
# own files; the imports marked F401 above re-export them, so that ``em.nn.functional``
# reads like ``torch.nn.functional``.

# Arguments are checked up front so that bad input names the function the user called
# (softmax), not the primitive inside it that would fail (max).
_tensor = F._tensor_arg


def relu(x):
    """max(x, 0), one primitive (one kernel op); NaN stays NaN. At exactly 0 the gradient
    is 0, as in PyTorch."""
    arrays = plain_arrays(x)
    if arrays is not None:  # nobody sees the op: its impl at once (the scope, apply skipped)
        try:
            return plain_tensor(OPS["relu"].impl(np, arrays[0]))
        except Exception:  # noqa: BLE001 - the op runs it again and explains the error
            pass
    return _relu(x)


@named_scope("relu")
def _relu(x):
    return F.apply(OPS["relu"], _tensor("relu", x))


def gelu(x, approximate: str = "none"):
    """Gaussian error linear unit, ``0.5 * x * (1 + erf(x / sqrt(2)))``;
    ``approximate="tanh"`` uses the tanh formula."""
    # The tanh formula is all operators, whose fast path is already NumPy's loops called
    # from C: only the erf formula has a plain path (its erf and scalars through apply).
    arrays = plain_arrays(x) if approximate.__class__ is str and approximate == "none" \
        else None
    if arrays is not None and P.float_array(arrays[0]):
        try:  # nobody watches: the ops' NumPy calls at once (nn/plain.py)
            return plain_tensor(P.gelu(arrays[0]))
        except Exception:  # noqa: BLE001 - NumPy raising (np.errstate): the ops explain it
            pass
    elif getattr(x, "requires_grad", False) and approximate.__class__ is str \
            and approximate == "none":  # training: one node (nn/one_node_layers.py)
        out = one_node_layers.gelu(x)
        if out is not None:
            return out
        return ran_its_ops(_gelu(x, approximate), one_node_layers.gelu_grads)
    return _gelu(x, approximate)


@named_scope("gelu")
def _gelu(x, approximate):
    x = _tensor("gelu", x)
    if not isinstance(approximate, str) or approximate not in ("none", "tanh"):
        raise op_error(ArgumentError, "gelu", (x,),
                       f"approximate must be 'none' or 'tanh', got {approximate!r}")
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + F.tanh(inner))
    return 0.5 * x * (1 + F.erf(x * (1 / math.sqrt(2))))


def linear(x, weight, bias=None):
    """``x @ weight.mT + bias`` with PyTorch's (out_features, in_features) weight layout."""
    arrays = plain_arrays(x, weight) if bias is None else plain_arrays(x, weight, bias)
    if arrays is not None:
        out = P.linear(*arrays)
        if out is not None:
            return plain_tensor(out)
    elif any(getattr(t, "requires_grad", False) for t in (x, weight, bias)):
        out = one_node_layers.linear(x, weight, bias)
        if out is not None:  # training: one node (nn/one_node_layers.py)
            return out
        return ran_its_ops(_linear(x, weight, bias), one_node_layers.linear_grads)
    return _linear(x, weight, bias)


@named_scope("linear")
def _linear(x, weight, bias):
    x = _tensor("linear", x, (x, weight))
    weight = F._require_tensor("linear", weight, (x, weight))
    if bias is not None:
        bias = F._require_tensor("linear", bias, (x, weight, bias))
    if weight.ndim != 2:
        raise op_error(ShapeError, "linear", (x, weight), "weight must be (out, in)")
    if x.ndim > 2 and x.shape[-1] == weight.shape[1]:
        # one product of every row, (B*M, in) @ (in, out), not B small ones
        rows = F.matmul(F.reshape(x, (math.prod(x.shape[:-1]), x.shape[-1])),
                        F.matrix_transpose(weight))
        out = F.reshape(rows, x.shape[:-1] + weight.shape[:1])
    else:
        out = F.matmul(x, F.matrix_transpose(weight))
    return out + bias if bias is not None else out


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dims
    (``normalized_shape``), with the biased variance, as PyTorch's."""
    arrays = plain_arrays(x, *(t for t in (weight, bias) if t is not None))
    if arrays is not None:  # nobody watches: the ops' NumPy calls at once (nn/plain.py)
        got = P.layer_norm_of(arrays, normalized_shape, weight is not None, bias is not None,
                              eps)
        if got is not None:
            return plain_tensor(got[0])
    elif any(getattr(t, "requires_grad", False) for t in (x, weight, bias)):
        out = one_node_layers.layer_norm(x, normalized_shape, weight, bias, eps)
        if out is not None:  # training: one node (nn/one_node_layers.py)
            return out
        return ran_its_ops(_layer_norm(x, normalized_shape, weight, bias, eps),
                           one_node_layers.layer_norm_grads)
    return _layer_norm(x, normalized_shape, weight, bias, eps)


@named_scope("layer_norm")
def _layer_norm(x, normalized_shape, weight, bias, eps):
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


# check_labels' ignore_index that no index equals: an embedding ignores none.
_NO_IGNORE = -(2**62)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,  # noqa: A002
              scale_grad_by_freq: bool = False, sparse: bool = False):
    """The rows of ``weight`` (num_embeddings, dim) at the integer ``input``: shape
    ``input.shape + (dim,)`` (PyTorch's ``F.embedding``). An index outside the table is
    an error naming it (checked by an op, so under jit too: indexing alone would read row
    -1 as the last row, as NumPy does). The row ``padding_idx`` reads its value but gets
    no gradient. ``max_norm`` and ``scale_grad_by_freq`` are refused."""
    if max_norm is not None or scale_grad_by_freq:
        raise op_error(ArgumentError, "embedding", (),
                       "max_norm and scale_grad_by_freq are not supported")
    return _lookup(input, weight, padding_idx, "embedding")


def _lookup(ids, weight, padding_idx, caller):
    """embedding's body (``nn.Embedding`` calls it too): the plain path when nobody
    watches (the rows read directly after the range check), else the ops."""
    arrays = plain_arrays(ids, weight)
    if arrays is not None and arrays[0].dtype.kind in "iu" and arrays[1].ndim == 2:
        try:  # padding rows read the same values either way (no gradient to keep out)
            return plain_tensor(P.embedding(*arrays))
        except Exception:  # noqa: BLE001 - an index outside the table: the ops explain it
            pass
    return _embedding(ids, weight, padding_idx, caller)


@named_scope("embedding")
def _embedding(ids, weight, padding_idx, caller):
    if not isinstance(ids, F.Tensor) or ids.dtype.kind not in "iu":
        raise op_error(DTypeError, caller, (ids,),
                       "expects integer indices (em.int64), got "
                       f"{getattr(ids, 'dtype', type(ids).__name__)}")
    weight = F._require_tensor(caller, weight, (ids, weight))
    if weight.ndim != 2:
        raise op_error(ShapeError, caller, (ids, weight), "weight must be (rows, dim)")
    F.apply(OPS["check_labels"], ids, num_classes=weight.shape[0], ignore_index=_NO_IGNORE,
            caller=caller, noun="row")
    rows = weight[ids]
    if padding_idx is None:
        return rows
    if padding_idx < 0:
        padding_idx += weight.shape[0]
    # Padding positions read the row's value but pass no gradient to it.
    keep = F.expand_dims(ids != padding_idx, axis=-1)
    return F.where(keep, rows, rows.detach())


# torch.nn.functional's names (the reference documents them here, re-exported or not).
__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "batch_norm",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "celu", "conv1d",
           "conv2d", "cosine_similarity", "conv_transpose1d", "conv_transpose2d", "cross_entropy", "dropout",
           "dropout1d", "dropout2d", "dropout3d", "elu", "embedding", "gelu", "glu",
           "group_norm", "hardsigmoid", "hardswish", "hardtanh", "huber_loss", "interpolate",
           "kl_div",
           "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax", "logsigmoid",
           "logsumexp", "max_pool1d", "max_pool2d", "mish", "mse_loss", "nll_loss",
           "normalize", "one_hot", "pad", "pairwise_distance", "prelu", "relu", "relu6", "rms_norm",
           "scaled_dot_product_attention", "selu", "sigmoid", "silu", "smooth_l1_loss",
           "softmax", "softmin", "softplus", "softsign", "tanh", "tanhshrink", "threshold",
           "unfold"]


def __getattr__(name: str):
    # A name this module lacks: what to use instead, or that PyTorch's is not supported,
    # never a "did you mean" to an unrelated name (aliases.py).
    import sys

    from execmode.aliases import missing_attribute

    raise missing_attribute(__name__, name, sys.modules[__name__])
