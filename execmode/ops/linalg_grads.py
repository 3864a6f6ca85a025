"""Gradients (vjp rules) of em.linalg's LAPACK calls (``decompositions.py``), for real and
complex matrices (float32, float64, complex64, complex128), batched over the leading axes.

The rules are written with execmode ops, so a backward runs them eagerly and the jit
traces them into a backward graph alike; a LAPACK call a rule needs (an inverse, a solve,
another part of a decomposition) is that op again, one plan step in the graph. A function
with several results is one op per result (``part``), so each part's rule gives the
gradient of its own result and autograd sums them; the other parts are computed again
from the input. The formulas are PyTorch's (``torch/csrc/autograd/FunctionsManual.cpp``:
``linalg_det_backward``, ``cholesky_backward``, ``linalg_eig_backward``, ``svd_backward``,
``pinv_backward``, ``linalg_qr_backward``), with PyTorch's convention for complex values
(ops/complex_grad.py: the gradient is dL/dRe + i dL/dIm). A transpose of the real formula is
the conjugate transpose there (``_mh``: for real values the transpose itself, so nothing
changes for them), plus the terms only complex values have: slogdet's sign moves, the
phase of each singular vector pair adds a diagonal term to svd's U rule, and qr keeps the
real part on a diagonal (LAPACK's R has a real one).

Eigenvectors and singular vectors of complex matrices are defined up to a phase each
(v e^{i phi}): as PyTorch says, a loss that depends on those phases has no gradient, and the
formulas give one only for losses that do not (|v|**2, v v^H, U Vh ...). PyTorch checks the
phase dependence at backward and raises; these rules do not read values (a check would
be a host sync in every backward, and under jit a graph break), so such a loss gets
PyTorch's formula's value, not an error.

Where PyTorch's gradients are undefined, these are too, and for the same reason: eigh
divides by the differences of eigenvalues and svd (U, Vh) by those of squared singular
values, so repeated ones give inf or NaN; svd's U of a tall matrix and Vh of a wide one
divide by the singular values. slogdet, inv, solve and cholesky need an invertible matrix
(a singular one raises the inverse's or the solve's LinAlgError at backward; det's
gradient, read from the SVD, holds at singular matrices too, and is NaN, as PyTorch's,
at matrices holding Inf or NaN);
pinv's gradient holds where the rank does not change near the input.
"""

from __future__ import annotations

from ..errors import BackwardError
from .complex_grad import is_complex, to_operand
from .elementwise import sum_to_shape
from .registry import F


def _mh(x):
    """``x``'s conjugate transpose: its transpose where x is real."""
    t = F.matrix_transpose(x)
    return F.conj(t) if is_complex(t) else t


def _conj(x):
    return F.conj(x) if is_complex(x) else x


def _lapack(name, x, *more, **attrs):
    return F.apply_op(f"linalg_{name}", x, *more, **attrs)


def _col(x):
    return F.expand_dims(x, axis=-1)


def _row(x):
    return F.expand_dims(x, axis=-2)


def _eye(n, like):
    return F.eye(n, dtype=like.dtype, device=like.device)


def _times_inverse_adjoint(x, r):
    """``x @ r^-H``, by a solve against ``r``."""
    return _mh(_lapack("solve", r, _mh(x)))


# --- inverse, determinants, solve, powers --------------------------------------------------

def inv_vjp(g, out, a):
    # d(A^-1) = -A^-1 dA A^-1, whose adjoint sends g to -A^-H g A^-H
    t = _mh(out)
    return (-F.matmul(F.matmul(t, g), t),)


def det_vjp(g, out, a):
    # The gradient of det is the cofactor matrix, det(A) A^-T where A is invertible. Read
    # from the SVD A = U S Vh, it is det(U) det(Vh) U diag(prod_{j != i} s_j) Vh, which
    # holds at singular matrices too (PyTorch's singular case), with no inverse to fail.
    # Of a complex A, g conj(det(A)) A^-H: U and Vh are unitary and det(U) det(Vh) is
    # conjugated. A matrix holding Inf or NaN has PyTorch's NaN gradient: LAPACK's SVD of
    # it does not converge (a LinAlgError), so it reads zeros in its place.
    finite = F.all(F.isfinite(a), axis=(-2, -1), keepdims=True)
    u, s, vh = _reduced_svd(F.where(finite, a, F.zeros_like(a)))
    n = s.shape[-1]
    before = F.cumulative_prod(s, axis=-1, include_initial=True)[..., :n]
    after = F.flip(F.cumulative_prod(F.flip(s, axis=-1), axis=-1, include_initial=True)
                   [..., :n], axis=-1)
    sign = _conj(_lapack("det", u) * _lapack("det", vh))
    cofactors = F.matmul(u * _row(before * after * _col(g * sign)), vh)
    return (F.where(finite, cofactors, F.full_like(cofactors, float("nan"))),)


def slogdet_vjp(g, out, a, *, part):
    # d logabsdet = Re tr(A^-1 dA) and, of a complex A, d sign = i sign Im tr(A^-1 dA):
    # their adjoints are g A^-H and -i Im(conj(g) sign) A^-H (PyTorch's slogdet_backward)
    if part == "sign":
        if not is_complex(a):
            return (None,)  # piecewise constant: no gradient, as PyTorch's
        sign = _lapack("slogdet", a, part="sign")
        g = F.imag(F.conj(g) * sign) * -1j
    return (_col(_col(g)) * _mh(_lapack("inv", a)),)


def solve_vjp(g, out, a, b):
    vector = b.ndim == 1  # the standard's one-vector case: b of shape (M,)
    g2, x2 = (_col(g), _col(out)) if vector else (g, out)
    gb = _lapack("solve", _mh(a), g2)  # A^H gB = g
    ga = None
    if a.requires_grad:
        # to_operand: a real operand of a complex solve gets the real part
        ga = to_operand(sum_to_shape(-F.matmul(gb, _mh(x2)), a.shape), a)
    if not b.requires_grad:
        return ga, None
    if vector:
        gb = gb[..., 0]
    return ga, to_operand(sum_to_shape(gb, b.shape), b)


def matrix_power_vjp(g, out, a, *, n):
    if n == 0:
        return (F.zeros_like(a),)
    base = a if n > 0 else _lapack("inv", a)
    m = abs(n)
    t = _mh(base)
    powers = [None, t]  # t^k; None for the identity
    while len(powers) < m:
        powers.append(F.matmul(powers[-1], t))
    # d(B^m) = sum_k B^k dB B^(m-1-k): each term's adjoint sends g back
    grad = None
    for k in range(m):
        left, right = powers[k], powers[m - 1 - k]
        term = g if left is None else F.matmul(left, g)
        term = term if right is None else F.matmul(term, right)
        grad = term if grad is None else grad + term
    if n < 0:  # through B = A^-1
        grad = -F.matmul(F.matmul(t, grad), t)
    return (grad,)


# --- cholesky and eigh ---------------------------------------------------------------------

def cholesky_vjp(g, out, a, *, upper):
    low, g_low = (_mh(out), _mh(g)) if upper else (out, g)
    phi = F.tril(F.matmul(_mh(low), g_low))
    # the lower triangle mirrored, its diagonal once: a symmetric (Hermitian off the
    # diagonal) matrix
    sym = 0.5 * (phi + _mh(F.tril(phi, -1)))
    # L^-H sym L^-1, by two solves against L^H
    x = _lapack("solve", _mh(low), sym)
    return (_mh(_lapack("solve", _mh(low), _mh(x))),)


def _eigenvalues_vjp(g, a):
    v = _lapack("eigh", a, part="eigenvectors")
    return (F.matmul(v * _row(g), _mh(v)),)


def eigvalsh_vjp(g, out, a):
    return _eigenvalues_vjp(g, a)


def eigh_vjp(g, out, a, *, part):
    if part == "eigenvalues":
        return _eigenvalues_vjp(g, a)
    w = _lapack("eigh", a, part="eigenvalues")
    vg = F.matmul(_mh(out), g)
    # skew-Hermitian; its diagonal is 0 for real values and i Im(v^H gV) for complex ones,
    # which a loss blind to the eigenvectors' phases makes 0 too (PyTorch keeps it)
    skew = 0.5 * (vg - _mh(vg))
    # w_j - w_i off the diagonal; 1 on it
    gaps = _row(w) - _col(w) + _eye(w.shape[-1], w)
    return (F.matmul(F.matmul(out, skew / gaps), _mh(out)),)


# --- svd and pinv --------------------------------------------------------------------------

def _reduced_svd(a, known=None, known_part=None):
    """U, S, Vh of the reduced SVD of ``a``; ``known`` is already the ``known_part``."""
    return tuple(known if p == known_part else _lapack("svd", a, full_matrices=False, part=p)
                 for p in ("U", "S", "Vh"))


def svd_vjp(g, out, a, *, full_matrices, part):
    m, n = a.shape[-2:]
    k = min(m, n)
    # S is the same either way; U and Vh of the full SVD have extra columns (rows)
    u, s, vh = _reduced_svd(a, out, part if part == "S" or not full_matrices else None)
    if part == "S":
        return (F.matmul(u * _row(g), vh),)
    if full_matrices:  # the columns (rows) past k are not determined by A: PyTorch's narrowing
        g = g[..., :k] if part == "U" else g[..., :k, :]
    s2 = s * s
    gaps = _row(s2) - _col(s2) + _eye(k, s)  # s_j^2 - s_i^2 off the diagonal
    if part == "U":
        ug = F.matmul(_mh(u), g)
        skew = ug - _mh(ug)
        core = (skew / gaps) * _row(s)
        if is_complex(skew):
            # the phase of each pair (u_k, v_k): i Im(u_k^H gU_k) / s_k on the diagonal
            core = core + _eye(k, s) * skew / _row(2 * s)
        if m > n:  # U's columns span part of the space: (I - U U^H) gU S^-1 too
            gs = g / _row(s)
            left = F.matmul(u, core) + gs - F.matmul(u, F.matmul(_mh(u), gs))
            return (F.matmul(left, vh),)
        return (F.matmul(F.matmul(u, core), vh),)
    vg = F.matmul(vh, _mh(g))
    core = _col(s) * ((vg - _mh(vg)) / gaps)
    if m < n:  # likewise S^-1 gVh (I - V V^H)
        sg = g / _col(s)
        right = F.matmul(core, vh) + sg - F.matmul(F.matmul(sg, _mh(vh)), vh)
        return (F.matmul(u, right),)
    return (F.matmul(F.matmul(u, core), vh),)


def pinv_vjp(g, out, a, *, rtol):
    m, n = a.shape[-2:]
    p, pt, gt = out, _mh(out), _mh(g)
    if m <= n:
        k = F.matmul(gt, p)
        kpt = F.matmul(k, pt)
        return (-_mh(F.matmul(p, k)) + kpt - F.matmul(F.matmul(a, p), kpt)
                + F.matmul(F.matmul(pt, p), gt - F.matmul(k, a)),)
    k = F.matmul(p, gt)
    ptk = F.matmul(pt, k)
    return (-_mh(F.matmul(k, p)) + F.matmul(F.matmul(gt - F.matmul(a, k), p), pt) + ptk
            - F.matmul(F.matmul(ptk, p), a),)


# --- qr ------------------------------------------------------------------------------------

def _qr_tall_vjp(gq, gr, q, r):
    """A = QR with Q (M, N) and R (N, N), M >= N: (gQ + Q copyltu(M)) R^-H with
    M = R gR^H - gQ^H Q, copyltu copying the lower triangle onto the upper (conjugated).
    LAPACK's R of a complex A has a real diagonal, so only M's real part is kept there
    (PyTorch's syminvadj)."""
    parts = []
    if gr is not None:
        parts.append(F.matmul(r, _mh(gr)))
    if gq is not None:
        parts.append(-F.matmul(_mh(gq), q))
    m_ = parts[0] if len(parts) == 1 else parts[0] + parts[1]
    low = F.tril(m_)
    copied = low + _mh(F.tril(m_, -1))
    if is_complex(m_):
        copied = copied - _eye(m_.shape[-1], r) * F.imag(m_) * 1j
    grad = F.matmul(q, copied)
    if gq is not None:
        grad = grad + gq
    return _times_inverse_adjoint(grad, r)


def qr_vjp(g, out, a, *, mode, part):
    m, n = a.shape[-2:]
    if mode == "complete" and m > n:
        raise BackwardError(
            "linalg.qr: no gradient with mode='complete' and more rows than columns (the "
            f"input is {m}x{n}): Q's last {m - n} columns are not determined by it, as in "
            "PyTorch; use mode='reduced'")
    q = out if part == "Q" else _lapack("qr", a, mode=mode, part="Q")
    r = out if part == "R" else _lapack("qr", a, mode=mode, part="R")
    gq, gr = (g, None) if part == "Q" else (None, g)
    if m >= n:
        return (_qr_tall_vjp(gq, gr, q, r),)
    # A = Q [X | Y] with X square: R = [U | V], X = QU, Y = QV
    y = a[..., :, m:]
    gu = gy = None
    if gr is not None:
        gu, gv = gr[..., :, :m], gr[..., :, m:]
        gy = F.matmul(q, gv)
        through_v = F.matmul(y, _mh(gv))  # V = Q^H Y moves with Q too
        gq = through_v if gq is None else gq + through_v
    if gy is None:
        gy = F.zeros_like(y)
    gx = _qr_tall_vjp(gq, gu, q, r[..., :, :m])
    return (F.concat([gx, gy], axis=-1),)


# The rule of each op (``linalg_<name>``) and whether it reads the op's own result.
# Every rule holds for complex values too (decompositions.py declares them so).
VJPS = {
    "inv": (inv_vjp, True),
    "det": (det_vjp, False),
    "slogdet": (slogdet_vjp, False),
    "solve": (solve_vjp, True),
    "matrix_power": (matrix_power_vjp, False),
    "cholesky": (cholesky_vjp, True),
    "eigvalsh": (eigvalsh_vjp, False),
    "eigh": (eigh_vjp, True),
    "svd": (svd_vjp, True),
    "pinv": (pinv_vjp, True),
    "qr": (qr_vjp, True),
}
