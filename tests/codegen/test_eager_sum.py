"""Float sums in kernels keep eager's overflow, NaN and Inf (issue 38; codegen/eager_sum.py):
an output whose values could overflow in float32 is summed again in NumPy's order, so where
eager's partial sums overflow the kernel's do too. Products multiply in order, as NumPy.

The order itself is checked against NumPy: ``fresh_strides`` against the layout NumPy gives
a ufunc's result, ``eager_plan`` + ``eager_sum`` against ``np.add.reduce`` bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from kernel_helpers import eager, run_cases

import execmode as em
from execmode.codegen.eager_sum import eager_plan, eager_sum, fresh_strides

F32_MAX = float(np.finfo(np.float32).max)


def _near_limits(rng, shape, dtype=np.float32, share=0.3):
    """Normal values, a share of them replaced by +-[0.3, 1] x the dtype's largest."""
    a = rng.standard_normal(shape).astype(dtype)
    big = rng.random(shape) < share
    a[big] = (rng.choice([-1.0, 1.0], big.sum()) * np.finfo(dtype).max
              * rng.uniform(0.3, 1.0, big.sum())).astype(dtype)
    return a


def _assert_same_specials_close_elsewhere(got, want, scale):
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    # A finite sum of near-limit values cancels: the kernel's wider sum is within a few
    # ulps of sum(|x|) of eager's (where it re-summed in NumPy's order, exactly eager's).
    np.testing.assert_allclose(got[finite], want[finite], rtol=0, atol=scale)


# --- the order, against NumPy -------------------------------------------------------------

def test_fresh_strides_is_the_layout_numpy_gives_a_ufuncs_result():
    rng = np.random.default_rng(0)
    for _ in range(500):
        ndim = int(rng.integers(1, 5))
        sizes = tuple(int(s) for s in rng.integers(2, 6, ndim))
        operands = []
        for _ in range(int(rng.integers(1, 3))):
            perm = rng.permutation(ndim)
            a = np.zeros([sizes[p] for p in perm], np.float32).transpose(np.argsort(perm))
            if rng.random() < 0.3:  # broadcast along one axis
                d = int(rng.integers(ndim))
                a = np.broadcast_to(np.take(a, [0], axis=d), sizes)
            operands.append(a)
        result = operands[0] * 2.0 if len(operands) == 1 else operands[0] * operands[1]
        strides = [tuple(s // 4 for s in a.strides) for a in operands]
        assert fresh_strides(strides, sizes) == tuple(s // 4 for s in result.strides), \
            (sizes, strides)


def test_eager_plan_and_sum_are_numpys_add_reduce_bit_for_bit():
    rng = np.random.default_rng(1)
    for _ in range(300):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(1, 300 if ndim == 1 else 12, ndim))
        dtype = np.float32 if rng.random() < 0.7 else np.float64
        x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)).astype(dtype)
        perm = rng.permutation(ndim)  # the memory order
        x = np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
        axes = tuple(sorted(int(a) for a in rng.choice(ndim, int(rng.integers(1, ndim + 1)),
                                                       replace=False)))
        want = np.add.reduce(x, axis=axes)
        # As a kernel sees it: a loop per axis (sizes 1 dropped), roles, x's strides.
        loops = [d for d in range(ndim) if shape[d] > 1]
        roles = ["reduce" if d in axes else "outer" for d in loops]
        strides = [x.strides[d] // x.itemsize for d in loops]
        order, run = eager_plan([shape[d] for d in loops], roles, strides)
        kept = [k for k, d in enumerate(loops) if d not in axes]
        points = np.transpose(x.reshape([shape[d] for d in loops]), kept + list(order))
        points = points.reshape(np.shape(want) if kept else ()) if not order else \
            points.reshape(-1, int(np.prod([shape[loops[k]] for k in order])))
        got = np.array([eager_sum(row, run) for row in np.atleast_2d(points)]) if order \
            else points
        np.testing.assert_array_equal(np.atleast_1d(got).reshape(-1).view(np.uint8),
                                      np.atleast_1d(want).reshape(-1).view(np.uint8),
                                      err_msg=f"{shape} {axes} {perm}")


# --- kernels -----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", [None, "interpreter"])
def test_the_mean_of_values_whose_partial_sum_overflows_is_eagers_inf(backend):
    # mean([3e38, 3e38, -3e38]) in float32 is inf eagerly (and in NumPy); the kernel's
    # float64 sum made it 1e38 (issue 38).
    x = em.tensor([3e38, 3e38, -3e38])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = em.mean(x).numpy()
    for fn in (lambda x: em.mean(x), lambda x: em.mean(x * 2.0) * 0.5,
               lambda x: em.sum(em.abs(x) * em.sign(x))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own steps overflow
            got = em.jit(fn, backend=backend)(x).numpy()
            eager_value = fn(x).numpy()
        assert np.array_equal(got, eager_value, equal_nan=True), (got, eager_value)
    assert np.isinf(want)


def test_fused_sums_near_the_float_limits_overflow_where_eager_does():
    rng = np.random.default_rng(2)
    cases = []
    for k in range(40):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(1, 300 if ndim == 1 else 12, ndim))
        dtype = np.float32 if k % 4 else np.float64
        x = _near_limits(rng, shape, dtype, share=float(rng.choice([0.05, 0.3])))
        if k % 7 == 0:
            x.flat[0] = np.inf
        axes = tuple(sorted(int(a) for a in rng.choice(ndim, int(rng.integers(1, ndim + 1)),
                                                       replace=False)))
        cases.append((lambda x, axes=axes: em.sum(x * 0.5, axis=axes), (x,)))
    for backend in ("c", "interpreter"):
        for (fn, (x,)), got in zip(cases, run_cases(cases, backend)):
            with np.errstate(over="ignore"):
                magnitude = np.sum(np.abs(np.where(np.isfinite(x), x, 0)), dtype=np.float64)
            scale = min(float(magnitude), float(np.finfo(np.float64).max)) \
                * float(np.finfo(x.dtype).eps) * 4
            _assert_same_specials_close_elsewhere(got, eager(fn, x), scale)


@pytest.mark.parametrize("backend", [None, "interpreter"])
def test_a_sum_of_a_transposed_value_follows_its_memory_order(backend):
    # NumPy sums in memory order: a value computed from a transposed input is laid out
    # like it (fresh_strides), and so is summed; C order would overflow elsewhere.
    rng = np.random.default_rng(3)
    x = em.tensor(_near_limits(rng, (10, 3, 7), share=0.3))
    for fn in (lambda x: em.sum(em.permute_dims(x, (2, 0, 1)) * 0.5, axis=(0, 2)),
               lambda x: em.sum(em.permute_dims(x, (1, 2, 0)), axis=(1,))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = fn(x).numpy()
        got = em.jit(fn, backend=backend)(x).numpy()
        _assert_same_specials_close_elsewhere(got, want, 1e33)


def test_big_sums_with_overflowing_partials_are_eagers_bit_for_bit():
    # The split (parallel chunks) and blocked-inner layouts re-sum the outputs past the
    # bound exactly as NumPy, so those outputs are eager's bits.
    rng = np.random.default_rng(4)
    for shape, axis in (((1_200_000,), None), ((600, 700), 0), ((3, 50_000), 1)):
        a = rng.standard_normal(shape).astype(np.float32)
        a.flat[::97], a.flat[5::97] = 3e38, -3e38

        def fn(x, axis=axis):
            return em.sum(x * 0.5, axis=axis)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = fn(em.tensor(a)).numpy()
        got = em.jit(fn)(em.tensor(a)).numpy()
        np.testing.assert_array_equal(got, want)


def test_a_float_product_multiplies_in_eagers_order():
    # 1e30 * 1e30 * 0 is inf * 0 = NaN in order; reassociated, (1e30 * 0) * 1e30 = 0.
    a = np.array([1e30, 1e30, 0.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1e-30, 3.0] * 3, np.float32)
    rng = np.random.default_rng(5)
    b = rng.uniform(0.5, 2.0, (64, 300)).astype(np.float32)
    cases = [(lambda x: em.prod(em.abs(x)), (a,))] + [
        (lambda x, axis=axis: em.prod(em.abs(x), axis=axis), (b,)) for axis in (0, 1, None)]
    for backend in ("c", "interpreter"):
        for (fn, arrays), got in zip(cases, run_cases(cases, backend)):
            np.testing.assert_array_equal(got, eager(fn, *arrays))
