"""Gradients of em.linalg's LAPACK calls (ops/linalg_grads.py, issue 36): against
PyTorch's on the same inputs (float64 and float32, batched), against finite differences
in float64, and under em.jit with a backward outside the call."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_grad
from pytorch_twins import assert_jit_grads_agree, torch_or_skip

import execmode as em

L = em.linalg
RNG = np.random.default_rng(36)
SQUARE = RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)   # invertible, a batch of two
SPD = SQUARE @ np.swapaxes(SQUARE, -1, -2) + np.eye(3)
TALL = RNG.standard_normal((2, 4, 3))
WIDE = RNG.standard_normal((2, 3, 4))
RHS = RNG.standard_normal((2, 3, 2))


def _mt(x):
    return x.mT if hasattr(x, "mT") else em.matrix_transpose(x)


def _sym(x):
    # eigh and cholesky read one triangle: their inputs are made symmetric first, so that
    # every element of the input moves the result (finite differences see that too)
    return (x + _mt(x)) / 2


# name: (the function on a namespace, where its linalg is ``ns.linalg``; the input).
# Eigenvectors and singular vectors are squared: their signs are LAPACK's choice, the
# squares are not.
CASES = {
    "inv": (lambda ns, x: ns.linalg.inv(x), SQUARE),
    "det": (lambda ns, x: ns.linalg.det(x), SQUARE),
    "slogdet": (lambda ns, x: ns.linalg.slogdet(x)[1], SQUARE),
    "solve": (lambda ns, x: ns.linalg.solve(x, ns.asarray(RHS, dtype=x.dtype)), SQUARE),
    "solve_vector": (lambda ns, x: ns.linalg.solve(x, ns.asarray(RHS[0, :, 0], dtype=x.dtype)), SQUARE),
    "matrix_power": (lambda ns, x: ns.linalg.matrix_power(x, 3), SQUARE),
    "matrix_power_negative": (lambda ns, x: ns.linalg.matrix_power(x, -2), SQUARE),
    "cholesky": (lambda ns, x: ns.linalg.cholesky(_sym(x)), SPD),
    "cholesky_upper": (lambda ns, x: ns.linalg.cholesky(_sym(x), upper=True), SPD),
    "eigvalsh": (lambda ns, x: ns.linalg.eigvalsh(_sym(x)), SPD),
    "eigh": (lambda ns, x: ns.linalg.eigh(_sym(x))[1] ** 2 + ns.linalg.eigh(_sym(x))[0][
        ..., None], SPD),
    "svdvals": (lambda ns, x: ns.linalg.svdvals(x), TALL),
    "svd_tall": (lambda ns, x: ns.linalg.svd(x, full_matrices=False)[0] ** 2
                 + ns.linalg.svd(x, full_matrices=False)[1][..., None, :], TALL),
    "svd_wide": (lambda ns, x: ns.linalg.svd(x, full_matrices=False)[2] ** 2, WIDE),
    "svd_full": (lambda ns, x: ns.linalg.svd(x)[0][..., :3] ** 2, TALL),
    "pinv_tall": (lambda ns, x: ns.linalg.pinv(x), TALL),
    "pinv_wide": (lambda ns, x: ns.linalg.pinv(x), WIDE),
    "qr_tall": (lambda ns, x: ns.linalg.qr(x)[0] + ns.linalg.qr(x)[1][..., :1, :], TALL),
    "qr_wide": (lambda ns, x: ns.linalg.qr(x)[0][..., :1] * ns.linalg.qr(x)[1], WIDE),
}


def _gradient(ns, fn, a, weights, dtype):
    """The gradient of sum(fn(x) * weights) at ``a``, with execmode or with torch."""
    if ns is em:
        x = em.tensor(a, dtype=dtype, requires_grad=True)
    else:
        x = ns.tensor(a.astype(dtype), requires_grad=True)
    (fn(ns, x) * ns.asarray(weights, dtype=x.dtype)).sum().backward()
    return np.asarray(x.grad.numpy())


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_pytorchs(name):
    torch = torch_or_skip()
    fn, a = CASES[name]
    with em.no_grad():
        shape = fn(em, em.tensor(a, dtype=em.float64)).shape
    weights = np.random.default_rng(0).standard_normal(shape)
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 2e-4)):
        ours = _gradient(em, fn, a, weights, dtype)
        theirs = _gradient(torch, fn, a, weights, dtype)
        assert ours.dtype == dtype
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol * np.abs(theirs).max(),
                                   err_msg=f"{name} in {np.dtype(dtype)}")


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "solve", "matrix_power_negative",
                                  "cholesky", "eigh", "svd_tall", "svd_wide", "pinv_wide",
                                  "qr_tall", "qr_wide"])
def test_gradients_match_finite_differences(name):
    fn, a = CASES[name]
    check_grad(lambda x: fn(em, x), a[:1].copy())


def test_the_gradient_of_det_holds_at_a_singular_matrix():
    # the cofactor matrix of [[1, 2], [2, 4]]: det(A + h E_00) = 4h, and so on
    x = em.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=em.float64, requires_grad=True)
    L.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_dets_gradient_at_a_matrix_holding_inf_or_nan_is_nan_as_pytorchs(mode):
    # LAPACK's SVD of such a matrix does not converge; the gradient is NaN, not an error,
    # and the other matrices of the batch keep theirs
    nan, inf = float("nan"), float("inf")
    x = em.tensor([[[2.0, 1.0], [1.0, 3.0]], [[1.0, nan], [1.0, 1.0]],
                   [[inf, -inf], [-inf, inf]]], dtype=em.float32, requires_grad=True)
    det = em.jit(L.det) if mode == "jit" else L.det
    det(x).sum().backward()
    grad = x.grad.numpy()
    np.testing.assert_allclose(grad[0], [[3.0, -1.0], [-1.0, 2.0]], rtol=1e-6)
    assert np.isnan(grad[1:]).all()


def test_a_norms_gradient_at_zero_is_zero_as_pytorchs():
    # the root's own derivative is infinite there: inf * 0 would be NaN
    import execmode.torch as emt

    a = np.zeros((2, 3))
    a[1] = [3.0, -4.0, 0.0]
    norms = [lambda ns, x: ns.linalg.vector_norm(x, axis=-1),
             lambda ns, x: ns.linalg.vector_norm(x, axis=-1, ord=3),
             lambda ns, x: ns.linalg.matrix_norm(x[..., None] * x[..., None, :])]
    for fn in norms:
        for run in (fn, lambda ns, x, fn=fn: em.jit(lambda t: fn(ns, t))(x)):
            x = em.tensor(a, dtype=em.float64, requires_grad=True)
            em.sum(run(em, x)).backward()
            assert np.isfinite(x.grad.numpy()).all() and not x.grad.numpy()[0].any()
    x = emt.zeros(3, requires_grad=True)
    x.norm().backward()  # execmode.torch's Tensor.norm, torch.linalg.vector_norm's
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    torch = torch_or_skip()
    weights = np.ones(2)
    for fn in norms:
        np.testing.assert_allclose(_gradient(em, fn, a, weights, np.float64),
                                   _gradient(torch, fn, a, weights, np.float64), atol=1e-12)


# One function per family, differentiated through em.jit's result (the backward outside
# the call: the jit traces the rules into a backward graph), and inside the call.
FAMILIES = {
    "inverse_and_determinants": (lambda x: L.inv(x) * em.expand_dims(
        L.det(x) + L.slogdet(x).logabsdet, axis=(-2, -1)), SQUARE),
    "solve_and_powers": (lambda x: L.solve(x, L.matrix_power(x, 2)) + L.matrix_power(x, -1),
                         SQUARE),
    "symmetric": (lambda x: L.cholesky(_sym(x)) + L.eigh(_sym(x)).eigenvectors ** 2
                  + em.expand_dims(L.eigvalsh(_sym(x)), axis=-1), SPD),
    "svd_pinv_qr": (lambda x: L.svd(x, full_matrices=False).U ** 2 + L.pinv(_mt(x))
                    + L.qr(x).Q * em.expand_dims(L.svdvals(x), axis=-2), TALL),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_jitted_functions_gradients_are_eagers(name):
    fn, a = FAMILIES[name]
    weights = None
    grads = []
    for run in (fn, em.jit(fn), em.jit(fn)):
        x = em.tensor(a, dtype=em.float64, requires_grad=True)
        out = run(x)
        if weights is None:
            weights = em.tensor(np.random.default_rng(1).standard_normal(out.shape))
        em.sum(out * weights).backward()
        grads.append(x.grad.numpy())
    for got in grads[1:]:
        np.testing.assert_allclose(got, grads[0], rtol=1e-10, atol=1e-12)
    assert_jit_grads_agree(fn, a, rtol=1e-10, atol=1e-12)


def test_what_has_no_gradient_says_so():
    x = em.tensor(TALL, dtype=em.float64, requires_grad=True)
    with pytest.raises(em.BackwardError, match="linalg.qr: no gradient with mode='complete'"):
        em.sum(L.qr(x, mode="complete").Q).backward()
    assert not L.matrix_rank(x).requires_grad  # an integer
    sign = L.slogdet(em.tensor(SQUARE, requires_grad=True)).sign
    em.sum(sign).backward()  # piecewise constant: nothing flows back, as PyTorch's
    z = em.tensor(SQUARE, requires_grad=True) * 1j
    # of a complex matrix too (test_linalg_complex_grads.py has the complex gradients)
    assert not L.matrix_rank(z).requires_grad
