"""em_gemm.h, the whole-graph programs' own float32 matrix product (gemm_kernel.py): it
gives NumPy's bits on every layout it is chosen for, or it is not chosen.

Which it is depends on the sgemm kernel NumPy's OpenBLAS runs (chosen per CPU, or named by
OPENBLAS_CORETYPE): these tests hold for either, and test_other_openblas_core.py runs them
again under the other core type."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import mse_train_step

import execmode as em
from execmode.codegen import blas, gemm_kernel

needs_blas = pytest.mark.skipif(blas.find() is None, reason=f"no BLAS: {blas.reason()}")

# (m, n, p, form): (m x n) @ (n x p); "tn": A arrives transposed, "nt": B does. Full tiles,
# partial tiles (masked vectors, short row groups), and k split into OpenBLAS's blocks.
LAYOUTS = [
    (64, 256, 256, "nt"), (64, 512, 256, "nt"), (33, 1000, 65, "nt"), (70, 300, 130, "nt"),
    (70, 300, 130, "nn"), (64, 896, 96, "nn"), (64, 130, 1000, "nn"),
    (70, 300, 130, "tn"), (200, 64, 129, "tn"), (128, 1024, 40, "tn"),
]


def _operands(m, n, p, form, rng):
    a = rng.standard_normal((n, m) if form == "tn" else (m, n)).astype(np.float32)
    b = rng.standard_normal((p, n) if form == "nt" else (n, p)).astype(np.float32)
    return (a.T if form == "tn" else a), (b.T if form == "nt" else b)


def _k_blocks(n):
    # The k-block sizes gemm_kernel._decided tries, in its order: one chain, then OpenBLAS's.
    return (n,) + tuple(q for q in gemm_kernel.Q_CANDIDATES if q < n)


@pytest.mark.parametrize("m,n,p,form", LAYOUTS)
def test_the_kernel_is_chosen_only_where_it_gives_numpys_bits(m, n, p, form, monkeypatch):
    """Whichever sgemm kernel NumPy's BLAS runs here (OpenBLAS picks one per CPU, or the one
    OPENBLAS_CORETYPE names), a program takes em_gemm.h exactly where its bits are NumPy's:
    chosen, it gives NumPy's bits on operands other than the check's own; refused, it
    really sums in another order. tests/codegen/test_other_openblas_core.py runs this
    under the other core type too, so both branches run in one run of the suite."""
    monkeypatch.setenv("EXECMODE_GEMM_KERNEL", "own")  # decided by the bits, not by speed
    chosen = gemm_kernel.choice(np.float32, m, n, p, form == "tn", form == "nt")
    if gemm_kernel.probe() is None:  # no AVX-512F or no -march=native compiler here
        assert chosen is None
        return
    rng = np.random.default_rng(m * n + p)
    if chosen is None:
        a, b = _operands(m, n, p, form, rng)
        want = a @ b
        out = np.empty((m, p), np.float32)
        for q in _k_blocks(n):
            gemm_kernel.runner(form, a, b, out, q)()
            assert np.allclose(out, want, rtol=1e-4, atol=1e-3), f"k-block {q}: wrong values"
            assert not np.array_equal(out, want), \
                f"refused, yet k-block {q} gives NumPy's bits on these operands"
        return
    assert chosen[0] == form and chosen[1] in _k_blocks(n)
    for trial in range(3):  # operands other than the check's own
        a, b = _operands(m, n, p, form, rng)
        if trial == 1:  # zero rows and columns: signed zeros as BLAS leaves them
            a[: m // 3] = 0.0
            b[:, : p // 4] = -0.0
        if trial == 2:
            a[0, 0], b[1, 1] = np.inf, np.nan
        out = np.full((m, p), 7.0, np.float32)
        gemm_kernel.runner(form, a, b, out, chosen[1])()
        want = a @ b
        assert np.array_equal(out, want, equal_nan=True)
        assert np.array_equal(np.signbit(out), np.signbit(want))


def test_other_dtypes_and_small_products_keep_the_blas():
    assert gemm_kernel.choice(np.float64, 64, 256, 256, False, True) is None
    assert gemm_kernel.choice(np.float32, 16, 16, 16, False, False) is None
    assert gemm_kernel.choice(np.float32, 256, 256, 256, True, True) is None  # no "tt" form


def _mlp_forward(width):
    rng = np.random.default_rng(7)
    model = em.nn.MLP([width, width, 10])
    x = em.tensor(rng.standard_normal((64, width)).astype(np.float32))
    return model, x


@needs_blas
@pytest.mark.parametrize("mode", ["own", "blas"])
def test_a_program_calls_the_kernel_and_keeps_eagers_bits(mode, monkeypatch):
    monkeypatch.setenv("EXECMODE_GEMM_KERNEL", mode)
    monkeypatch.setenv("EXECMODE_GEMM_ORIENTATION", "numpy")  # a BLAS call as NumPy makes it
    model, x = _mlp_forward(256)
    with em.no_grad():
        want = model(x).numpy()
        jitted = em.jit(lambda x: model(x))
        got = jitted(x).numpy()
        got_again = jitted(x).numpy()
    (compiled,) = jitted._segments.values()
    program = compiled.plan.program
    assert program is not None, compiled.plan.program_reason
    # The first layer, x @ w.T (the second, 64x256 @ (10x256)^T, is too small to ask):
    # the kernel where its bits are NumPy's on this machine, else the BLAS, never asked
    # under "blas". The same bits as eager either way.
    chosen = gemm_kernel.choice(np.float32, 64, 256, 256, False, True)
    assert ("em_gemm_nt(64, 256, 256," in program.source) == (chosen is not None)
    blas_call = "(101, 111, 112, 64, 256, 256, 1.F, A, 256, B, 256,"  # cblas_sgemm's
    assert (blas_call in program.source) == (chosen is None)
    assert ("em_gemm" in program.source) == (mode == "own" and chosen is not None)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_again, want)


def _train(monkeypatch, mode, x, y):
    monkeypatch.setenv("EXECMODE_GEMM_KERNEL", mode)
    em.random.seed(11)
    model = em.nn.MLP([96, 128, 64, 3])
    opt = em.optim.SGD(model.parameters(), lr=0.05)
    jitted = em.jit(mse_train_step(model, opt))
    losses = [jitted(x, y).numpy() for _ in range(3)]
    (compiled,) = jitted._segments.values()
    program = compiled.plan.program
    assert program is not None, compiled.plan.program_reason
    return program.source, losses, [p.numpy().copy() for p in model.parameters()]


@pytest.mark.slow  # compiles a training step through the GEMM kernel
@needs_blas
def test_a_training_step_through_the_kernel_has_the_blas_bits(monkeypatch):
    """Every form in a program, "nt" (the forward), "tn" (the weight gradients g.T @ x)
    and "nn" (the input gradients g @ w), with the leading dimensions the program passes,
    each through the kernel where its bits are NumPy's here, else the BLAS: three steps
    give the bits the BLAS alone gives."""
    rng = np.random.default_rng(12)
    x = em.tensor(rng.standard_normal((64, 96)).astype(np.float32))
    y = em.tensor(rng.standard_normal((64, 3)).astype(np.float32))
    own_source, own_losses, own_state = _train(monkeypatch, "own", x, y)
    blas_source, blas_losses, blas_state = _train(monkeypatch, "blas", x, y)
    assert "em_gemm" not in blas_source.split("void program_")[1]
    calls = own_source.split("void program_")[1]
    monkeypatch.setenv("EXECMODE_GEMM_KERNEL", "own")
    products = {  # each called through the kernel exactly where its bits are NumPy's here
        "em_gemm_nt(64, 128, 96, A, 96, B, 96": (64, 96, 128, False, True),     # x @ w1.T
        "em_gemm(64, 128, 64, A, 64, 1, B, 128": (64, 64, 128, False, False),   # g2 @ w2
        "em_gemm(128, 96, 64, A, 1, 128, B, 96": (128, 64, 96, True, False),    # g1.T @ x
    }
    for call, product in products.items():
        assert (call in calls) == (gemm_kernel.choice(np.float32, *product) is not None), call
    for mine, want in zip(own_losses + own_state, blas_losses + blas_state):
        np.testing.assert_array_equal(mine, want)
