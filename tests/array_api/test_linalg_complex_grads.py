"""Gradients of em.linalg's LAPACK calls for complex matrices (ops/linalg_grads.py, issue
36): against PyTorch's autograd (complex64 and complex128, batched), against finite
differences in complex128, and eager against em.jit (backward inside and outside the
call). PyTorch's convention: the gradient of a real loss L of z = x + iy is dL/dx + i dL/dy.

Eigenvectors and singular vectors are defined up to a phase each, so the losses of them
here do not depend on those phases (|v|**2, U @ Vh): only such losses have a gradient."""

from __future__ import annotations

import numpy as np
import pytest
from complex_oracles import (
    assert_jitted_backward_is_eagers,
    em_gradients,
    finite_differences,
    loss_of,
    torch_gradients,
    weights_for,
)
from pytorch_twins import torch_or_skip

import execmode as em

RNG = np.random.default_rng(3636)


def _complex(shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


SQUARE = _complex((2, 3, 3)) + 2 * np.eye(3)   # invertible, a batch of two
SPD = SQUARE @ np.conj(np.swapaxes(SQUARE, -1, -2)) + np.eye(3)  # Hermitian, definite
TALL = _complex((2, 4, 3))
WIDE = _complex((2, 3, 4))
RHS = _complex((2, 3, 2))


def _mh(ns, x):
    return em.conj(em.matrix_transpose(x)) if ns is em else x.mH


def _herm(ns, x):
    # eigh and cholesky read one triangle: their inputs are made Hermitian first, so that
    # every element of the input moves the result (finite differences see that too)
    return (x + _mh(ns, x)) / 2


def _abs2(ns, x):
    return ns.abs(x) ** 2


def _svd(ns, x, full=False):
    return ns.linalg.svd(x, full_matrices=full)


# name: (the function on a namespace, its inputs). One input: the matrix; two: solve's.
CASES = {
    "inv": (lambda ns, x: ns.linalg.inv(x), [SQUARE]),
    "det": (lambda ns, x: ns.linalg.det(x), [SQUARE]),
    "slogdet_logabsdet": (lambda ns, x: ns.linalg.slogdet(x)[1], [SQUARE]),
    "slogdet_sign": (lambda ns, x: ns.linalg.slogdet(x)[0], [SQUARE]),
    "slogdet_both": (lambda ns, x: ns.linalg.slogdet(x)[0] * ns.linalg.slogdet(x)[1],
                     [SQUARE]),
    "solve": (lambda ns, a, b: ns.linalg.solve(a, b), [SQUARE, RHS]),
    "solve_vector": (lambda ns, a, b: ns.linalg.solve(a, b), [SQUARE[0], RHS[0, :, 0]]),
    "matrix_power": (lambda ns, x: ns.linalg.matrix_power(x, 3), [SQUARE]),
    "matrix_power_negative": (lambda ns, x: ns.linalg.matrix_power(x, -2), [SQUARE]),
    "cholesky": (lambda ns, x: ns.linalg.cholesky(_herm(ns, x)), [SPD]),
    "cholesky_upper": (lambda ns, x: ns.linalg.cholesky(_herm(ns, x), upper=True), [SPD]),
    "eigvalsh": (lambda ns, x: ns.linalg.eigvalsh(_herm(ns, x)), [SPD]),
    "eigh": (lambda ns, x: _abs2(ns, ns.linalg.eigh(_herm(ns, x))[1])
             + ns.linalg.eigh(_herm(ns, x))[0][..., None], [SPD]),
    "eigh_projector": (lambda ns, x: (lambda v: v[..., :1] @ _mh(ns, v[..., :1]))(
        ns.linalg.eigh(_herm(ns, x))[1]), [SPD]),
    "svdvals": (lambda ns, x: ns.linalg.svdvals(x), [TALL]),
    "svd_tall": (lambda ns, x: _abs2(ns, _svd(ns, x)[0]) + _svd(ns, x)[1][..., None, :],
                 [TALL]),
    "svd_wide": (lambda ns, x: _abs2(ns, _svd(ns, x)[2]), [WIDE]),
    # one call: a loss of U alone, or of Vh alone, would depend on their phases
    "svd_u_times_vh": (lambda ns, x: (lambda u, s, vh: u @ vh)(*_svd(ns, x)), [SQUARE]),
    "svd_u_times_vh_wide": (lambda ns, x: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(
        *_svd(ns, x)), [WIDE]),
    "svd_full": (lambda ns, x: _abs2(ns, _svd(ns, x, True)[0][..., :3]), [TALL]),
    "pinv_tall": (lambda ns, x: ns.linalg.pinv(x), [TALL]),
    "pinv_wide": (lambda ns, x: ns.linalg.pinv(x), [WIDE]),
    # Q and R together: LAPACK's R has a real diagonal, which fixes the phases
    "qr_tall": (lambda ns, x: (lambda q, r: q + r[..., :1, :])(*ns.linalg.qr(x)), [TALL]),
    "qr_square": (lambda ns, x: (lambda q, r: q @ r.mT if ns is not em
                                 else q @ em.matrix_transpose(r))(*ns.linalg.qr(x)),
                  [SQUARE]),
    "qr_wide": (lambda ns, x: (lambda q, r: q[..., :1] * r)(*ns.linalg.qr(x)), [WIDE]),
    "qr_r_only": (lambda ns, x: ns.linalg.qr(x)[1], [TALL]),
    "qr_q_only_wide": (lambda ns, x: ns.linalg.qr(x)[0], [WIDE]),
    "matrix_norm_2": (lambda ns, x: ns.linalg.matrix_norm(x, ord=2), [TALL]),
    "matrix_norm_nuc": (lambda ns, x: ns.linalg.matrix_norm(x, ord="nuc"), [WIDE]),
    "matrix_norm_fro": (lambda ns, x: ns.linalg.matrix_norm(x, ord="fro"), [SQUARE]),
    "matrix_norm_minus_2": (lambda ns, x: ns.linalg.matrix_norm(x, ord=-2), [SQUARE]),
    "matrix_norm_1": (lambda ns, x: ns.linalg.matrix_norm(x, ord=1), [TALL]),
    "matrix_norm_inf": (lambda ns, x: ns.linalg.matrix_norm(x, ord=float("inf")), [WIDE]),
}


def _weights(fn, arrays):
    with em.no_grad():
        out = fn(em, *(em.tensor(a) for a in arrays))
    return weights_for(out.shape, out.dtype.kind == "c", seed=7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_pytorchs(name):
    torch = torch_or_skip()
    fn, arrays = CASES[name]
    weights = _weights(fn, arrays)
    for dtype, tol in ((np.complex128, 1e-10), (np.complex64, 3e-4)):
        typed = [a.astype(dtype) for a in arrays]
        w = weights.astype(dtype if weights.dtype.kind == "c" else np.dtype(dtype).type(0).real.dtype)
        ours = em_gradients(fn, typed, w)
        theirs = torch_gradients(torch, fn, typed, w)
        for a, got, want in zip(typed, ours, theirs, strict=True):
            assert got.dtype == a.dtype, f"{name}: the gradient of a {a.dtype} is {got.dtype}"
            scale = max(1.0, float(np.abs(want).max()))
            np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol * scale,
                                       err_msg=f"{name} ({a.dtype})")


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    fn, arrays = CASES[name]
    weights = _weights(fn, arrays)
    for got, want in zip(em_gradients(fn, arrays, weights),
                         finite_differences(fn, arrays, weights), strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("single", [False, True])
def test_a_jitted_backward_is_eagers(name, single):
    fn, arrays = CASES[name]
    dtype = np.complex64 if single else np.complex128
    weights = _weights(fn, arrays)
    w = weights.astype(dtype) if weights.dtype.kind == "c" else weights.astype(
        np.float32 if single else np.float64)
    assert_jitted_backward_is_eagers(lambda *xs: loss_of(em, fn(em, *xs), w),
                                     [a.astype(dtype) for a in arrays],
                                     2e-5 if single else 1e-12)


@pytest.mark.parametrize("real_operand", [0, 1])
def test_a_real_operand_of_a_complex_solve_gets_the_real_part(real_operand):
    # torch's solve takes one dtype; the real operand's gradient is the real part of the
    # complex one's (ops/complex_grad.to_operand), checked by finite differences
    arrays = [SQUARE[0], RHS[0]]
    arrays[real_operand] = arrays[real_operand].real.copy()
    fn = CASES["solve"][0]
    weights = _weights(fn, arrays)
    got = em_gradients(fn, arrays, weights)
    assert [g.dtype for g in got] == [em.asarray(a).dtype for a in arrays]
    for g, want in zip(got, finite_differences(fn, arrays, weights), strict=True):
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-7)


def test_the_gradient_of_det_holds_at_a_singular_complex_matrix():
    # read from the SVD, with det(U) det(Vh) conjugated: no inverse to fail. A 3x3 matrix
    # of rank 2 has a cofactor matrix that is not 0, which finite differences see too.
    u, v = _complex((3, 2)), _complex((2, 3))
    singular = u @ v
    fn = CASES["det"][0]
    weights = _weights(fn, [singular])
    got = em_gradients(fn, [singular], weights)[0].numpy()
    assert np.abs(got).max() > 0.1
    np.testing.assert_allclose(got, finite_differences(fn, [singular], weights)[0],
                               rtol=1e-6, atol=1e-7)


def test_the_sign_of_a_real_determinant_still_passes_no_gradient():
    # piecewise constant for real matrices: only its logabsdet moves the input
    x = em.tensor(SQUARE[0].real.copy(), requires_grad=True)
    sign, logabsdet = em.linalg.slogdet(x)
    (sign * 3.0 + logabsdet).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.linalg.inv(SQUARE[0].real).T, rtol=1e-12)
