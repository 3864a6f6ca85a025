"""A generated small matmul gives eager's bits where its values are near the float limits
(codegen/matmul_overflow.py): past the bound on its partial sums, the kernel computes the
product with the CBLAS call NumPy's matmul makes. Checked on every jit replay tier (the
native one runs a whole-graph program where the plan qualifies), against eager on this
machine, whichever kernel its BLAS runs."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz.check import assert_agrees

import execmode as em
from execmode.codegen import blas
from execmode.codegen.c_runtime import CKernel
from execmode.codegen.toolchain import find_compiler
from execmode.jit_driver import paths

pytestmark = [
    pytest.mark.skipif(find_compiler() is None, reason="needs a C compiler"),
    pytest.mark.skipif(blas.find() is None, reason=f"needs NumPy's CBLAS: {blas.reason()}"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

inf, nan = float("inf"), float("nan")


def _near_limits(shape, dtype, seed, big):
    """Small values and, in about a third of the places, the float's near-largest ones of
    either sign (their products and partial sums overflow), with one Inf."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, shape)
    picks = rng.random(shape) < 0.35
    x[picks] = rng.choice([-big, big, -0.5 * big, 0.7 * big], picks.sum())
    x.flat[rng.integers(x.size)] = rng.choice([inf, -inf])
    return x.astype(dtype)


# name, function, operand shapes, whether the kernels generate the product (a B whose
# rows are contiguous, or one column) or leave it to BLAS (B transposed: matmul_policy.py)
CASES = [
    ("row form x @ w", lambda x, w: x @ w, (3, 8), (8, 5), True),
    ("matrix-vector x @ w", lambda x, w: (x @ w) * 2.0, (1, 64), (64, 32), True),
    ("with an epilogue", lambda x, w: (x @ w) * 0.5 + 1.0, (4, 4), (4, 6), True),
    ("one column x @ v", lambda x, v: x @ v, (6, 16), (16, 1), True),
    ("B transposed x @ w.T", lambda x, w: x @ w.T, (3, 8), (5, 8), False),
]


def _generated(jitted):
    """The sources of the C kernels the jitted function's plan runs."""
    plan = jitted.concrete_functions[0].segments[0].compiled.plan
    return [s.fn.source for s in plan.steps if isinstance(s.fn, CKernel)]


@pytest.mark.parametrize("replay", ["general", "generated", "native"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,x_shape,w_shape,generated", CASES,
                         ids=[c[0] for c in CASES])
def test_near_the_limits_a_small_matmul_gives_eagers_bits(name, fn, x_shape, w_shape,
                                                         generated, dtype, replay):
    big = float(np.finfo(dtype).max) * 0.9
    with paths.pinned(replay=replay):
        jitted = em.jit(fn)
        for seed in range(4):
            x = em.tensor(_near_limits(x_shape, dtype, seed, big))
            w = em.tensor(_near_limits(w_shape, dtype, seed + 100, big))
            want = fn(x, w).numpy()
            got = jitted(x, w).numpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{name}, seed {seed}")
        # small values: the loops' own order, within rounding of eager's
        x = em.tensor(np.linspace(-1, 1, np.prod(x_shape)).reshape(x_shape).astype(dtype))
        w = em.tensor(np.linspace(2, -1, np.prod(w_shape)).reshape(w_shape).astype(dtype))
        np.testing.assert_allclose(jitted(x, w).numpy(), fn(x, w).numpy(), rtol=1e-5)
    if replay == "general":
        sources = _generated(jitted)
        assert any("em_blas_fn[" in s for s in sources) == generated, sources


@pytest.mark.parametrize("replay", ["general", "native"])
def test_a_matrix_times_its_own_transpose_gives_eagers_bits(replay):
    # The fuzzer's repro (seed 20261237, program 1236): -2.5 * inf + -1.5 * -3.06e38 is
    # -inf through OpenBLAS (multiply and add fused) and was NaN through the loops (B
    # transposed: the kernels now call NumPy's syrk, as eager does).
    x = em.tensor([[-2.5, -1.5, 1.0, -2.75], [inf, -3.06e38, 0.0, 3.0]], dtype=em.float32)
    with paths.pinned(replay=replay):
        jitted = em.jit(lambda a: a @ a.T)
        np.testing.assert_array_equal(jitted(x).numpy(), (x @ x.T).numpy())
        np.testing.assert_array_equal(jitted(x).numpy(), (x @ x.T).numpy())


def test_a_gram_matrix_of_values_scaled_past_the_limits_agrees_with_eager():
    # Seed 1858958899, program 9720 (the fuzzer's known "matmul_overflow" class until
    # then): k.sum() of int64 extremes scales z to ~1e19, and z.T @ z overflows in its
    # partial sums: eager -inf, the generated loops NaN.
    assert_agrees("""
import execmode as em

# --- setup ---

# --- function ---
def f(z, k):
    v0 = k.sum()
    v1 = v0 + v0
    z *= v0
    v5 = z.T @ z
    v6 = v5 - v1
    return v6

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[-1.25, 2.0, 1.0, -2.0], [-2.25, 2.5, -2.75, 1.25], [1.25, 0.0, 0.75, -1.25], [-1.25, -2.75, -2.5, -2.0], [-0.25, 2.0, 3.0, -2.5]], dtype=em.float32)
k1 = em.tensor([[9223372036854775807, -2, -1, 1], [-4, -4, 5, -3], [6, -4, 6, -6], [0, -3, 2147483648, -4], [-4, 2, 1, -2]], dtype=em.int64)
out1 = F(x1, k1)
""")


@pytest.mark.parametrize("replay", ["general", "generated", "native"])
@pytest.mark.parametrize("shape", [(8, 32, 32), (32, 16, 32), (4, 64, 64)])
def test_a_matrix_product_past_the_loops_size_is_numpys_call_from_the_kernel(shape, replay):
    # matmul_overflow.BLAS_FROM_MACS: eager's bits at any values (loops would round in
    # their own order), with the epilogue fused after the call (* 2 + 1: exact in both)
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    x = em.tensor(rng.standard_normal((m, k)).astype(np.float32))
    w = em.tensor(rng.standard_normal((k, n)).astype(np.float32))

    def fn(x, w):
        return (x @ w) * 2.0 + 1.0

    with paths.pinned(replay=replay):
        jitted = em.jit(fn)
        for _ in range(3):
            np.testing.assert_array_equal(jitted(x, w).numpy(), fn(x, w).numpy())
    if replay == "general":
        (source,) = [s for s in _generated(jitted) if "em_blas_fn[" in s]
        assert "if (em_blas_fn[0] != 0) {" in source and "em_absmax" not in source
