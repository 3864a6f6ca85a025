"""em.linalg and em.fft (issue 36) against NumPy's: the LAPACK calls eagerly and under
em.jit (plan steps: the same bits), the composites with their gradients, and errors (the
LAPACK calls' gradients: test_linalg_grads.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import assert_close, check_grad, check_op

import execmode as em

L = em.linalg
RNG = np.random.default_rng(3)
B = RNG.standard_normal((2, 3, 3))
SPD = B @ np.swapaxes(B, -1, -2) + 3 * np.eye(3)
RECT = RNG.standard_normal((2, 4, 3))

SINGLE = {
    "det": (L.det, np.linalg.det, SPD), "inv": (L.inv, np.linalg.inv, SPD),
    "eigvalsh": (L.eigvalsh, np.linalg.eigvalsh, SPD),
    "svdvals": (L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), RECT),
    "pinv": (L.pinv, np.linalg.pinv, RECT),
    "matrix_power": (lambda t: L.matrix_power(t, 3), lambda a: np.linalg.matrix_power(a, 3), B),
    "cholesky": (L.cholesky, np.linalg.cholesky, SPD),
    "solve": (lambda t: L.solve(t, em.tensor(RECT[0, :3])),
              lambda a: np.linalg.solve(a, RECT[0, :3]), SPD),
    "matrix_rank": (L.matrix_rank, lambda a: np.linalg.matrix_rank(a).astype(np.int64), RECT),
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_lapack_calls_match_numpy_eagerly_and_under_jit(name):
    fn, np_fn, a = SINGLE[name]
    eager = check_op(fn, np_fn, a, rtol=1e-10, atol=1e-10)
    assert_close(em.jit(fn)(em.tensor(a)), eager.numpy(), rtol=0, atol=0)


def test_several_results():
    x = em.tensor(SPD)
    w, v = L.eigh(x)
    assert_close(w, np.linalg.eigh(SPD).eigenvalues)
    assert_close(em.matmul(x, v), (v * em.expand_dims(w, axis=-2)).numpy(), atol=1e-10)
    q, r = L.qr(em.tensor(RECT))
    assert (q.shape, r.shape) == ((2, 4, 3), (2, 3, 3))
    assert_close(q @ r, RECT, atol=1e-12)
    assert L.qr(em.tensor(RECT), mode="complete").Q.shape == (2, 4, 4)
    u, s, vh = L.svd(em.tensor(RECT), full_matrices=False)
    assert_close((u * em.expand_dims(s, axis=-2)) @ vh, RECT, atol=1e-12)
    sign, logabs = L.slogdet(x)
    assert_close(sign * em.exp(logabs), np.linalg.det(SPD))


def test_composites_match_numpy_with_gradients():
    v, w = RNG.standard_normal(3), RNG.standard_normal(3)
    check_op(L.outer, np.outer, v, w)
    check_op(L.cross, np.cross, B, B[::-1].copy())
    check_op(lambda t: L.diagonal(t, offset=1), lambda a: np.diagonal(a, 1, -2, -1), RECT)
    check_op(lambda t: L.trace(t, offset=-1), lambda a: np.trace(a, -1, -2, -1), RECT)
    for ord_ in (2, 1, math.inf, -math.inf, 0, 3, -1, -2.5):
        check_op(lambda t, o=ord_: L.vector_norm(t, axis=-1, ord=o),
                 lambda a, o=ord_: np.linalg.norm(a, ord=o, axis=-1), RECT)
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        check_op(lambda t, o=ord_: L.matrix_norm(t, ord=o),
                 lambda a, o=ord_: np.linalg.norm(a, ord=o, axis=(-2, -1)), RECT)
    check_grad(lambda a, b: L.cross(a, b), B, B[::-1].copy())
    check_grad(lambda t: L.trace(t) + L.vector_norm(t), RECT)


def test_a_tensor_rtol_gives_one_cutoff_per_matrix():
    a = RNG.standard_normal((3, 4, 4))
    a[1, :, 0] = 0.0  # a rank-3 matrix in the stack
    rtol = np.array([1e-3, 0.5, 1e-3])
    x = em.tensor(a, dtype=em.float64)
    assert_close(L.pinv(x, rtol=em.tensor(rtol, dtype=em.float64)), np.linalg.pinv(a, rtol=rtol))
    want = np.linalg.matrix_rank(a, rtol=rtol).tolist()
    assert L.matrix_rank(x, rtol=em.tensor(rtol, dtype=em.float64)).tolist() == want
    jitted = em.jit(lambda m, r: L.matrix_rank(m, rtol=r))  # the cutoffs read: a break
    assert jitted(x, em.tensor(rtol, dtype=em.float64)).tolist() == want


def test_errors_name_the_function():
    with pytest.raises(em.DTypeError, match="inv"):
        L.inv(em.tensor([[1, 2], [3, 4]]))
    with pytest.raises(em.ShapeError, match="square"):
        L.det(em.tensor(RECT))
    with pytest.raises(em.ShapeError, match="size 3"):
        L.cross(em.ones((2,)), em.ones((2,)))


def test_fft_frequencies_and_shifts():
    check_op(lambda: em.fft.fftfreq(7, d=0.5, dtype=em.float64),
             lambda: np.fft.fftfreq(7, d=0.5))
    check_op(lambda: em.fft.rfftfreq(8, dtype=em.float64), lambda: np.fft.rfftfreq(8))
    check_op(em.fft.fftshift, np.fft.fftshift, RECT)
    check_op(lambda t: em.fft.ifftshift(t, axes=(0, 2)),
             lambda a: np.fft.ifftshift(a, axes=(0, 2)), RECT)

