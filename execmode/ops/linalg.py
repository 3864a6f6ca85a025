"""matmul: batched, with broadcasting of the batch dimensions and NumPy's 1-D rules."""

from __future__ import annotations

import functools
import math

from .complex_grad import complex_differentiable, holomorphic_binary
from .elementwise import sum_to_shape
from .registry import MATMUL, F, OpDef, RuleError, broadcast_shapes, register


def _matmul_rule(a, b, **attrs):
    if len(a.shape) == 0 or len(b.shape) == 0:
        raise RuleError("matmul needs operands of rank >= 1 (use multiply for scalars)")
    a2 = (1,) + tuple(a.shape) if len(a.shape) == 1 else tuple(a.shape)
    b2 = tuple(b.shape) + (1,) if len(b.shape) == 1 else tuple(b.shape)
    if a2[-1] != b2[-2]:
        raise RuleError(
            f"inner dimensions differ: {a.shape} @ {b.shape} "
            f"({a2[-1]} != {b2[-2]})"
        )
    try:
        batch = broadcast_shapes(a2[:-2], b2[:-2])
    except RuleError as exc:
        raise RuleError(f"batch dimensions: {exc.problem}") from None
    out = batch + (a2[-2], b2[-1])
    if len(a.shape) == 1:
        out = out[:-2] + out[-1:]
    if len(b.shape) == 1:
        out = out[:-1]
    return out


def _matmul_impl(xp, a, b):
    return xp.matmul(a, b)


def _matmul_vjp(g, out, a, b):
    # Only operands that require grad get one: data batches do not (saves a matmul).
    # Reshapes and transposes are the ops themselves (apply_op): their shapes are right by
    # construction, and F's checks of a user's arguments cost a backward pass per node.
    need_a, need_b = a.requires_grad, b.requires_grad
    if a.ndim == 1 and b.ndim == 1:
        return (g * b if need_a else None), (g * a if need_b else None)
    a2 = _reshaped(a, (1, a.shape[0])) if a.ndim == 1 else a
    b2 = _reshaped(b, (b.shape[0], 1)) if b.ndim == 1 else b
    # g has the product's shape; with a 1-D operand, the shape of the product of the
    # matrices it stands for
    g2 = g if a2 is a and b2 is b else _reshaped(g, _matmul_rule(a2, b2))
    if a2.ndim > 2 and b2.ndim == 2:
        return _batch_times_matrix_vjp(g2, a, b, a2, b2, need_a, need_b)
    ga = gb = None
    if need_a:
        ga = sum_to_shape(F.matmul(g2, _transposed(b2)), a2.shape)
        ga = _reshaped(ga, a.shape)
    if need_b:
        if b2 is b and b.ndim == 2 and a2.ndim == 2 and _column_major(b):
            # b = w.mT (nn.Linear's weight): its gradient in b's layout, so that w's is
            # g^T a laid out as w is, as PyTorch's linear computes it, not the transposed
            # view of a^T g that .grad would copy
            gb = _transposed(F.matmul(_transposed(g2), a2))
        else:
            gb = sum_to_shape(F.matmul(_transposed(a2), g2), b2.shape)
            gb = _reshaped(gb, b.shape)
    return ga, gb


def _column_major(x) -> bool:
    """Whether matrix ``x`` lies in memory column by column (``w.mT`` of a C-ordered
    ``w``), eagerly or as traced (a traced value's layout: graph/views.py)."""
    data = x._data
    flags = getattr(getattr(data, "proxy", data), "flags", None)
    return flags is not None and flags.f_contiguous and not flags.c_contiguous


def _reshaped(x, shape):
    shape = tuple(shape)
    return x if x.shape == shape else F.apply_op("reshape", x, shape=shape)


def _transposed(x):
    """x.mT (x of rank >= 2)."""
    return F.apply_op("permute_dims", x, axes=_last_two_swapped(x.ndim))


@functools.cache
def _last_two_swapped(ndim: int) -> tuple:
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def _batch_times_matrix_vjp(g2, a, b, a2, b2, need_a, need_b):
    """A batch of matrices times one matrix (a linear layer's x @ w.T): both gradients as
    one product of the batch flattened into rows, (B*M, N) @ (N, K) and (K, B*M) @
    (B*M, N), rather than B small products and, for b, a sum over them."""
    k, n = b2.shape
    m = math.prod(a2.shape[:-1])
    rows = _reshaped(g2, (m, n))
    ga = gb = None
    if need_a:
        ga = _reshaped(F.matmul(rows, _transposed(b2)), a.shape)
    if need_b:
        gb = _reshaped(F.matmul(_transposed(_reshaped(a2, (m, k))), rows), b.shape)
    return ga, gb


register(OpDef(
    # holomorphic in each operand: for complex values g @ conj(b).T and conj(a).T @ g
    name="matmul", kind=MATMUL, impl=_matmul_impl, shape_rule=_matmul_rule,
    vjp=holomorphic_binary(_matmul_vjp), ufunc=None,
    doc="Matrix product with NumPy's broadcasting and 1-D rules.",
))
complex_differentiable("matmul")
