"""``em.linalg``: the Array API's linear algebra extension (2024.12).

Two kinds of function. Composites of execmode's own functions, which trace, fuse and
differentiate as those do: ``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot``
(em's), ``outer``, ``diagonal``, ``trace``, ``cross``, ``vector_norm`` and
``matrix_norm`` (its 2, -2 and "nuc" orders read singular values). And LAPACK calls
(``ops/decompositions.py``): ``det``, ``inv``, ``solve``, ``cholesky``, ``eigh``,
``eigvalsh``, ``qr``, ``svd``, ``svdvals``, ``pinv``, ``slogdet``, ``matrix_rank``,
``matrix_power``: one op each (per result), a NumPy/CuPy plan step under jit, with
gradients for real and complex matrices (``ops/linalg_grads.py``). Everything takes floating-point
(real or complex) stacks of matrices in the last two axes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from . import api as _em
from .dispatch import apply as _apply
from .errors import ArgumentError, DTypeError, ShapeError
from .functional.arguments import _int_arg, _tensor_arg, normalize_axis_for
from .functional.reductions import norm_root
from .op_errors import op_error
from .ops import OPS as _OPS

matmul = _em.matmul
matrix_transpose = _em.matrix_transpose
tensordot = _em.tensordot
vecdot = _em.vecdot


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def _op(name, x, *more, **attrs):
    x = _tensor_arg(name, x, (x, *more))
    if any(t.dtype.kind not in "fc" for t in (x, *more)):
        # said here, for eager and jit alike (NumPy's LAPACK would take ints as float64)
        raise op_error(DTypeError, name, (x, *more), "needs floating-point tensors")
    return _apply(_OPS[f"linalg_{name}"], x, *more, **attrs)


def det(x, /):
    """The determinant of each square matrix."""
    return _op("det", x)


def inv(x, /):
    """The inverse of each square matrix."""
    return _op("inv", x)


def solve(x1, x2, /):
    """``x`` with ``x1 @ x = x2``: ``x2`` is a stack of matrices, or one vector (1-D)."""
    return _op("solve", x1, _tensor_arg("solve", x2, (x1, x2)))


def cholesky(x, /, *, upper=False):
    """The lower (or ``upper``) Cholesky factor of each symmetric positive-definite matrix."""
    return _op("cholesky", x, upper=bool(upper))


def matrix_power(x, n, /):
    """Each square matrix to the integer power ``n`` (negative: of the inverse)."""
    return _op("matrix_power", x, n=_int_arg("matrix_power", "n", n, (x,)))


def eigvalsh(x, /):
    """The eigenvalues of each symmetric matrix, ascending."""
    return _op("eigvalsh", x)


def eigh(x, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix."""
    return EighResult(*(_op("eigh", x, part=p) for p in ("eigenvalues", "eigenvectors")))


def qr(x, /, *, mode="reduced") -> QRResult:
    """The QR decomposition, ``mode`` "reduced" or "complete"."""
    if mode not in ("reduced", "complete"):
        raise op_error(ArgumentError, "qr", (x,), f"mode must be 'reduced' or 'complete', "
                       f"got {mode!r}")
    return QRResult(*(_op("qr", x, mode=mode, part=p) for p in ("Q", "R")))


def svd(x, /, *, full_matrices=True) -> SVDResult:
    """The singular value decomposition ``U @ diag(S) @ Vh``."""
    full = bool(full_matrices)
    return SVDResult(*(_op("svd", x, full_matrices=full, part=p) for p in ("U", "S", "Vh")))


def svdvals(x, /):
    """The singular values of each matrix, descending."""
    return _op("svd", x, full_matrices=False, part="S")


def slogdet(x, /) -> SlogdetResult:
    """The sign and the natural log of the absolute value of each determinant."""
    return SlogdetResult(*(_op("slogdet", x, part=p) for p in ("sign", "logabsdet")))


def _rtol_attr(rtol):
    """``rtol`` as an op attribute: a number, or a tensor's values as nested tuples (one
    cutoff per matrix; reading them is a graph break under jit, as repeat's counts)."""
    if rtol is None or not isinstance(rtol, _em.Tensor):
        return None if rtol is None else float(rtol)
    values = rtol.tolist()
    if not isinstance(values, list):
        return float(values)

    def nested(v):
        return tuple(nested(x) for x in v) if isinstance(v, list) else float(v)

    return nested(values)


def pinv(x, /, *, rtol=None):
    """The Moore-Penrose pseudo-inverse; singular values below ``rtol`` (a number, or a
    tensor of one per matrix) times the largest count as zero (default: max(M, N) times
    the dtype's eps)."""
    return _op("pinv", x, rtol=_rtol_attr(rtol))


def matrix_rank(x, /, *, rtol=None):
    """How many singular values are above ``rtol`` (a number, or a tensor of one per
    matrix) times the largest (int64)."""
    return _op("matrix_rank", x, rtol=_rtol_attr(rtol))


# --- composites ------------------------------------------------------------------------------

def outer(x1, x2, /):
    """The outer product of two 1-D tensors."""
    x1, x2 = (_tensor_arg("outer", t, (x1, x2)) for t in (x1, x2))
    if x1.ndim != 1 or x2.ndim != 1:
        raise op_error(ShapeError, "outer", (x1, x2), "needs two 1-D tensors")
    return _em.reshape(x1, (-1, 1)) * _em.reshape(x2, (1, -1))


def diagonal(x, /, *, offset=0):
    """The diagonal of each matrix (``offset`` > 0 above the main one, < 0 below)."""
    x = _tensor_arg("diagonal", x)
    if x.ndim < 2:
        raise op_error(ShapeError, "diagonal", (x,), "needs a stack of matrices")
    offset = _int_arg("diagonal", "offset", offset, (x,))
    m, n = x.shape[-2:]
    first, end = max(0, -offset), min(m, n - offset)
    count = end - first if m and n and end > first else 0
    # the flat positions r * n + r + offset of (r, r + offset) in each matrix, r from
    # first: one take over m * n. Computed with ops, not a list: a traced size (or an
    # offset computed from one) stays symbolic in them.
    flat = _em.reshape(x, x.shape[:-2] + (m * n,))
    rows = _em.arange(count, dtype=_em.int64, device=x.device)
    index = (rows + first) * (n + 1) + offset
    return _em.take(flat, index, axis=-1)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of each matrix's diagonal (``offset`` as :func:`diagonal`)."""
    return _em.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along ``axis`` (the other axes broadcast)."""
    x1, x2 = (_tensor_arg("cross", t, (x1, x2)) for t in (x1, x2))
    a, b = _em.broadcast_arrays(x1, x2)
    axis = normalize_axis_for("cross", a, axis)
    if a.shape[axis] != 3:
        raise op_error(ShapeError, "cross", (x1, x2), f"axis {axis} must have size 3")
    a0, a1, a2 = _em.unstack(a, axis=axis)
    b0, b1, b2 = _em.unstack(b, axis=axis)
    return _em.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=axis)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002 - the standard's
    """The ``ord``-norm of the vectors along ``axis`` (every element when None): any
    number (a negative one as NumPy's: a zero element makes it 0), inf, -inf, or 0 (how
    many are not zero). Of complex vectors, real."""
    x = _tensor_arg("vector_norm", x)
    a = _em.abs(x)
    if ord == math.inf:
        return _em.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _em.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _em.astype(_em.count_nonzero(x, axis=axis, keepdims=keepdims), a.dtype)
    if ord == 1:
        return _em.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return norm_root(_em.sum(a * a, axis=axis, keepdims=keepdims), 2)
    if not isinstance(ord, int | float) or isinstance(ord, bool):
        raise op_error(ArgumentError, "vector_norm", (x,), f"unsupported ord {ord!r}")
    total = _em.sum(a ** ord, axis=axis, keepdims=keepdims)
    return norm_root(total, ord) if ord > 0 else total ** (1.0 / ord)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002 - the standard's
    """The ``ord``-norm of each matrix: "fro", "nuc", 1, -1, 2, -2, inf or -inf."""
    x = _tensor_arg("matrix_norm", x)
    if x.ndim < 2:
        raise op_error(ShapeError, "matrix_norm", (x,), "needs a stack of matrices")
    a = _em.abs(x)
    if ord == "fro":
        out = norm_root(_em.sum(a * a, axis=(-2, -1)), 2)
    elif ord in (1, -1):
        col = _em.sum(a, axis=-2)
        out = _em.max(col, axis=-1) if ord == 1 else _em.min(col, axis=-1)
    elif ord in (math.inf, -math.inf):
        row = _em.sum(a, axis=-1)
        out = _em.max(row, axis=-1) if ord > 0 else _em.min(row, axis=-1)
    elif ord in (2, -2, "nuc"):
        s = svdvals(x)
        out = (_em.sum(s, axis=-1) if ord == "nuc"
               else _em.max(s, axis=-1) if ord == 2 else _em.min(s, axis=-1))
    else:
        raise op_error(ArgumentError, "matrix_norm", (x,), f"unsupported ord {ord!r}")
    return _em.expand_dims(out, axis=(-2, -1)) if keepdims else out


__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]
