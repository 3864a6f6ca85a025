"""The Array API's linalg functions that are NumPy's (CuPy's) LAPACK calls: det, inv, solve,
cholesky, eigh, eigvalsh, qr, svd, svdvals, pinv, slogdet, matrix_rank, matrix_power.

Each is one OPAQUE op over a stack of matrices (the last two axes): under jit it is a plan
step that makes the same library call eagerly and in the graph (no kernel template: a
LAPACK factorisation is not an elementwise expression), so graph mode gives eager's bits.
A function with several results (eigh, qr, svd, slogdet) is one op per result, named by
its ``part`` attribute; each makes the whole call. Their gradients, for real and complex
matrices, are in ``linalg_grads.py``; matrix_rank, an integer, has none.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from .complex_grad import complex_differentiable
from .linalg_grads import VJPS
from .registry import OPAQUE, OpDef, RuleError, broadcast_shapes, register


def _grad(name):
    """The op's vjp and saves_output (linalg_grads.py)."""
    vjp, saves_output = VJPS[name]
    return {"vjp": vjp, "saves_output": saves_output}


def _matrices(name, x, square=False):
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise RuleError(f"{name} needs a stack of matrices (rank >= 2), got shape {shape}")
    if square and shape[-1] != shape[-2]:
        raise RuleError(f"{name} needs square matrices, got shape {shape}")
    return shape


# The results that are real for complex matrices too: eigenvalues of a Hermitian matrix,
# singular values, the log of |det|.
_REAL_RESULTS = {("eigvalsh", None), ("eigh", "eigenvalues"), ("svd", "S"),
                 ("slogdet", "logabsdet")}


def _float_dtype(name, int_result=False):
    def rule(dtypes, attrs):
        if any(d.kind not in "fc" for d in dtypes):
            raise RuleError(f"{name} needs floating-point operands, got "
                            + ", ".join(str(d) for d in dtypes), DTypeError)
        if int_result:
            return np.dtype(np.int64)
        dt = np.result_type(*dtypes)
        if (name, attrs.get("part")) in _REAL_RESULTS:
            dt = np.dtype(dt.type(0).real.dtype)
        return dt
    return rule


def _op(name, impl, shape_rule, doc, int_result=False):
    register(OpDef(name=f"linalg_{name}", kind=OPAQUE, impl=impl, shape_rule=shape_rule,
                   dtype_rule=_float_dtype(name, int_result), may_raise=True, doc=doc,
                   **({} if int_result else _grad(name))))


def _batch(name, square=False):
    return lambda x, **attrs: _matrices(name, x, square)[:-2]


def _same(name, square=True):
    return lambda x, **attrs: _matrices(name, x, square)


_op("det", lambda xp, a: xp.linalg.det(a), _batch("det", True),
    "The determinant of each square matrix.")
_op("inv", lambda xp, a: xp.linalg.inv(a), _same("inv"),
    "The inverse of each square matrix (LinAlgError for a singular one).")
def _cholesky_impl(xp, a, *, upper):
    low = xp.linalg.cholesky(a)
    if not upper:
        return low
    # A = U^H U: the upper factor is L's conjugate transpose (of a complex A, not L^T)
    high = xp.swapaxes(low, -1, -2)
    return xp.conj(high) if high.dtype.kind == "c" else high


_op("cholesky", _cholesky_impl, _same("cholesky"),
    "The Cholesky factor of each Hermitian (symmetric) positive-definite matrix.")
_op("matrix_power", lambda xp, a, *, n: xp.linalg.matrix_power(a, n), _same("matrix_power"),
    "Each square matrix to the integer power n (negative n through the inverse).")
_op("eigvalsh", lambda xp, a: xp.linalg.eigvalsh(a),
    lambda x: _matrices("eigvalsh", x, True)[:-1],
    "The eigenvalues of each symmetric matrix, ascending.")


def _solve_rule(a, b):
    sa = _matrices("solve", a, square=True)
    sb = tuple(b.shape)
    if len(sb) == 1:  # the standard's one vector case: x2 of shape (M,)
        if sb[0] != sa[-1]:
            raise RuleError(f"solve: shapes {sa} and {sb} do not fit")
        return sa[:-1]
    if len(sb) < 2 or sb[-2] != sa[-1]:
        raise RuleError(f"solve: shapes {sa} and {sb} do not fit")
    return broadcast_shapes(sa[:-2], sb[:-2]) + sb[-2:]


register(OpDef(name="linalg_solve", kind=OPAQUE,
               impl=lambda xp, a, b: xp.linalg.solve(a, b), shape_rule=_solve_rule,
               dtype_rule=_float_dtype("solve"), may_raise=True, **_grad("solve"),
               doc="The solution x of a @ x = b for each square a."))


def _rank_rule(x, *, rtol):
    return _matrices("matrix_rank", x)[:-2]


def _rtol(xp, a, rtol):
    """The relative cutoff: max(M, N) * eps by default, or ``rtol``: a number, or nested
    tuples (a tensor's values, one per matrix of the stack, broadcast against it)."""
    if rtol is None:
        m, n = a.shape[-2:]
        return max(m, n) * np.finfo(a.dtype).eps
    return rtol if isinstance(rtol, float) else xp.asarray(rtol, dtype=np.float64)


def _rank_impl(xp, a, *, rtol):
    s = xp.linalg.svd(a, compute_uv=False)
    tol = _rtol(xp, a, rtol)
    if getattr(tol, "ndim", 0):
        tol = tol[..., None]  # one cutoff per matrix, against its singular values
    return (s > tol * s.max(axis=-1, keepdims=True)).sum(axis=-1).astype(np.int64)


register(OpDef(name="linalg_matrix_rank", kind=OPAQUE, impl=_rank_impl,
               shape_rule=_rank_rule, dtype_rule=_float_dtype("matrix_rank", True),
               doc="The number of singular values above rtol times the largest."))


def _pinv_impl(xp, a, *, rtol):
    if xp is np:
        return np.linalg.pinv(a, rtol=_rtol(xp, a, rtol))
    return xp.linalg.pinv(a, rcond=_rtol(xp, a, rtol))  # CuPy's name for the same cutoff


register(OpDef(name="linalg_pinv", kind=OPAQUE, impl=_pinv_impl,
               shape_rule=lambda x, *, rtol: (
                   _matrices("pinv", x)[:-2] + (x.shape[-1], x.shape[-2])),
               dtype_rule=_float_dtype("pinv"), **_grad("pinv"),
               doc="The Moore-Penrose pseudo-inverse."))


# --- several results: one op per part ------------------------------------------------------

def _eigh_impl(xp, a, *, part):
    values, vectors = xp.linalg.eigh(a)
    return values if part == "eigenvalues" else vectors


def _eigh_rule(x, *, part):
    shape = _matrices("eigh", x, square=True)
    return shape[:-1] if part == "eigenvalues" else shape


def _qr_impl(xp, a, *, mode, part):
    q, r = xp.linalg.qr(a, mode=mode)
    return q if part == "Q" else r


def _qr_rule(x, *, mode, part):
    shape = _matrices("qr", x)
    m, n = shape[-2:]
    k = m if mode == "complete" else min(m, n)
    return shape[:-2] + ((m, k) if part == "Q" else (k, n))


def _svd_impl(xp, a, *, full_matrices, part):
    if part == "S":
        return xp.linalg.svd(a, compute_uv=False)
    u, _, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u if part == "U" else vh


def _svd_rule(x, *, full_matrices, part):
    shape = _matrices("svd", x)
    m, n = shape[-2:]
    k = min(m, n)
    if part == "S":
        return shape[:-2] + (k,)
    if part == "U":
        return shape[:-2] + (m, m if full_matrices else k)
    return shape[:-2] + (n if full_matrices else k, n)


def _slogdet_impl(xp, a, *, part):
    sign, logabsdet = xp.linalg.slogdet(a)
    return sign if part == "sign" else logabsdet


register(OpDef(name="linalg_eigh", kind=OPAQUE, impl=_eigh_impl, shape_rule=_eigh_rule,
               dtype_rule=_float_dtype("eigh"), **_grad("eigh"),
               doc="One part of each symmetric matrix's eigendecomposition."))
register(OpDef(name="linalg_qr", kind=OPAQUE, impl=_qr_impl, shape_rule=_qr_rule,
               dtype_rule=_float_dtype("qr"), **_grad("qr"),
               doc="One factor (Q or R) of the QR decomposition."))
register(OpDef(name="linalg_svd", kind=OPAQUE, impl=_svd_impl, shape_rule=_svd_rule,
               dtype_rule=_float_dtype("svd"), **_grad("svd"),
               doc="One part (U, S or Vh) of the singular value decomposition."))
register(OpDef(name="linalg_slogdet", kind=OPAQUE, impl=_slogdet_impl,
               shape_rule=lambda x, *, part: _matrices("slogdet", x, square=True)[:-2],
               dtype_rule=_float_dtype("slogdet"), **_grad("slogdet"),
               doc="The sign or the log of the absolute value of each determinant."))

# PyTorch's complex gradients (linalg_grads.py)
complex_differentiable(*(f"linalg_{name}" for name in VJPS))
