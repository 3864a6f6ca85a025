"""Linear algebra: matmul (the one primitive), matrix_transpose, and tensordot written as
permute + reshape + one matmul. einsum, lowered the same way, is in ``einsum_lowering.py``."""

from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from .._tensor import Tensor
from ..dispatch import apply, plain_arrays, plain_tensor
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from ..ops.registry import RuleError, normalize_axis
from .arguments import _is_int, _rule_error, _tensor_arg
from .shape import permute_dims, reshape

_MATMUL = OPS["matmul"]
# The impl matmul was registered with: another one in its place (a test's) runs as the op.
_REGISTERED_MATMUL_IMPL = _MATMUL.impl


def matmul(a, b) -> Tensor:
    """Matrix product: batched, broadcasting the batch dimensions; 1-D as in NumPy."""
    arrays = plain_arrays(a, b)
    if arrays is not None:  # nobody sees the op: its impl's NumPy call at once (`x @ w`)
        out = plain_matmul(*arrays)
        if out is not None:
            return plain_tensor(out)
    return apply(OPS["matmul"], _tensor_arg("matmul", a, (a, b)), _tensor_arg("matmul", b, (a, b)))


def matrix_transpose(x) -> Tensor:
    """Swap the last two axes (``x.mT``)."""
    x = _tensor_arg("matrix_transpose", x)
    ndim = x.ndim
    if ndim < 2:
        raise op_error(ShapeError, "matrix_transpose", (x,), "needs a tensor of rank >= 2")
    return apply(OPS["permute_dims"], x, axes=_last_two_swapped(ndim))


def plain_matmul(x, y):
    """The matmul op's NumPy call on arrays nobody watches (dispatch.plain_arrays), while
    its impl is the registered one; None otherwise, or when NumPy raises (the op then
    runs again and explains the error)."""
    if _MATMUL.impl is not _REGISTERED_MATMUL_IMPL:
        return None
    try:
        return np.matmul(x, y)
    except Exception:  # noqa: BLE001 - the op explains it
        return None


@functools.cache
def _last_two_swapped(ndim: int) -> tuple:
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def tensordot(a, b, axes=2) -> Tensor:
    """Sum products over the last ``axes`` axes of ``a`` and the first of ``b`` (or pairs)."""
    a = _tensor_arg("tensordot", a, (a, b))
    b = _tensor_arg("tensordot", b, (a, b))
    if _is_int(axes):
        if not 0 <= axes <= builtins.min(a.ndim, b.ndim):
            raise op_error(ShapeError, "tensordot", (a, b),
                           f"axes={axes} needs both operands to have at least {axes} axes")
        axes_a = tuple(range(a.ndim - axes, a.ndim))
        axes_b = tuple(range(axes))
    else:
        pair = tuple(axes) if isinstance(axes, tuple | list) else ()
        if len(pair) != 2:
            raise op_error(ArgumentError, "tensordot", (a, b),
                           f"axes must be an int or a pair of axis sequences, got {axes!r}")
        axes_a, axes_b = (tuple(ax) if isinstance(ax, tuple | list) else (ax,) for ax in pair)
    try:
        axes_a = tuple(normalize_axis(i, a.ndim) for i in axes_a)
        axes_b = tuple(normalize_axis(i, b.ndim) for i in axes_b)
    except RuleError as exc:
        raise _rule_error("tensordot", (a, b), exc) from None
    if (a.ndim == 0 and axes_a) or (b.ndim == 0 and axes_b):
        raise op_error(ShapeError, "tensordot", (a, b), "a rank-0 tensor has no axis to contract")
    if len(axes_a) != len(axes_b) or builtins.any(
        a.shape[i] != b.shape[j] for i, j in zip(axes_a, axes_b)
    ):
        raise op_error(ShapeError, "tensordot", (a, b),
                       f"contracted axes {axes_a} and {axes_b} do not match in size")
    free_a = tuple(i for i in range(a.ndim) if i not in axes_a)
    free_b = tuple(i for i in range(b.ndim) if i not in axes_b)
    k = math.prod(a.shape[i] for i in axes_a)
    a2 = reshape(permute_dims(a, free_a + axes_a), (math.prod(a.shape[i] for i in free_a), k))
    b2 = reshape(permute_dims(b, axes_b + free_b), (k, math.prod(b.shape[i] for i in free_b)))
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    return reshape(matmul(a2, b2), out_shape)


def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002 - PyTorch's name
    """PyTorch's ``addmm``: ``beta * input + alpha * (mat1 @ mat2)`` for 2-D ``mat1``,
    ``mat2`` (``input`` broadcasts). With ``beta=0`` the input is ignored, NaN included."""
    mat1, mat2 = (_tensor_arg("addmm", m, (input, mat1, mat2)) for m in (mat1, mat2))
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise op_error(ShapeError, "addmm", (input, mat1, mat2), "mat1 and mat2 must be 2-D")
    return _scaled_sum("addmm", input, matmul(mat1, mat2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """PyTorch's ``baddbmm``: ``beta * input + alpha * (batch1 @ batch2)`` for 3-D batches
    of matrices (``input`` broadcasts). With ``beta=0`` the input is ignored."""
    batch1, batch2 = (_tensor_arg("baddbmm", m, (input, batch1, batch2))
                      for m in (batch1, batch2))
    if batch1.ndim != 3 or batch2.ndim != 3 or batch1.shape[0] != batch2.shape[0]:
        raise op_error(ShapeError, "baddbmm", (input, batch1, batch2),
                       "batch1 and batch2 must be 3-D with the same batch size")
    return _scaled_sum("baddbmm", input, matmul(batch1, batch2), beta, alpha)


def _scaled_sum(op, input, product, beta, alpha):  # noqa: A002
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise op_error(ArgumentError, op, (input, product), f"{name} must be a number")
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    input = _tensor_arg(op, input, (input, product))  # noqa: A001
    return product + (input if beta == 1 else input * beta)
