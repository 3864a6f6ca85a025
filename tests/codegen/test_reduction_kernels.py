"""Reduction kernels (elementwise producers + sum/prod/max/min over any axes) against eager,
with broadcast inputs, keepdims, NaN/Inf, every dtype, and the big-reduction paths (split
into chunks, blocked inner axes)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, dtypes, elements
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from kernel_helpers import eager, run_cases

import execmode as em

PRODUCERS = {
    "none": lambda x, b: x,
    "add": lambda x, b: x + b,
    "mul_exp": lambda x, b: em.exp(x * 0.1) * b,
    "where": lambda x, b: em.where(em.isnan(x), b, x),
}


@st.composite
def reduction_cases(draw):
    op = draw(st.sampled_from(["sum", "prod", "max", "min"]))
    dtype = draw(dtypes((em.float32, em.float64, em.int32, em.int64)))
    # prod stays small so that no partial product overflows in one order and not another.
    max_side = 3 if op == "prod" else 5
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=max_side))
    axes = tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1)))))
    keepdims = draw(st.booleans())
    # b broadcasts: a trailing part of the shape, with some sides 1.
    tail = shape[len(shape) - draw(st.integers(0, len(shape))):]
    b_shape = tuple(d if draw(st.booleans()) else 1 for d in tail)
    low, high = (-3, 3) if op == "prod" else (-10, 10)
    specials = dtype.kind == "f" and op != "prod"
    x = draw(hnp.arrays(dtype, shape, elements=elements(dtype, low=low, high=high,
                                                        specials=specials)))
    b = draw(hnp.arrays(dtype, b_shape, elements=elements(dtype, low=low, high=high)))
    producer = draw(st.sampled_from(sorted(PRODUCERS)))
    if dtype.kind != "f" and producer in ("mul_exp", "where"):
        producer = "add"
    make = PRODUCERS[producer]
    reduce = getattr(em, op)

    def fn(x, b):
        return reduce(make(x, b), axis=axes, keepdims=keepdims)

    fn.__qualname__ = fn.__name__ = f"{op}({producer}, axis={axes}, keepdims={keepdims})"
    return fn, (x, b)


def _tolerance(fn, arrs, want):
    if want.dtype.kind != "f":
        return {}
    # Summation order differs from NumPy's pairwise sums: allow a few ulps of sum(|x|).
    eps = np.finfo(want.dtype).eps
    scale = float(np.nansum(np.abs(np.where(np.isfinite(arrs[0]), arrs[0], 0)))) + 1.0
    return {"rtol": 16 * eps, "atol": 64 * eps * scale * 10}


@pytest.mark.parametrize("backend", ["c", "interpreter"])
@given(st.lists(reduction_cases(), min_size=1, max_size=6))
@settings(max_examples=int(__import__('os').environ.get('EM_EXAMPLES', 10)))
def test_random_reductions(backend, cases):
    for (fn, arrs), got in zip(cases, run_cases(cases, backend)):
        want = eager(fn, *arrs)
        assert_close(got, want, **_tolerance(fn, arrs, want), msg=f"{backend} {fn.__qualname__}")


def test_big_reductions_split_and_blocked():
    """A full reduction big enough to be cut into parallel chunks, NaN propagation through
    the chunks, and an axis-0 reduction with blocks of the kept axis."""
    rng = np.random.default_rng(0)
    big = rng.standard_normal(1 << 18).astype(np.float32)
    with_nan = big.copy()
    with_nan[123457] = np.nan
    wide = rng.standard_normal((300, 700)).astype(np.float32)
    ints = rng.integers(-1000, 1000, size=(1 << 18,), dtype=np.int32)
    cases = [
        (lambda x: em.sum(x * x), (big,)),
        (lambda x: em.max(em.exp(x)), (big,)),
        (lambda x: em.max(x), (with_nan,)),
        (lambda x: em.min(x), (with_nan,)),
        (lambda x: em.sum(x, axis=0), (wide,)),
        (lambda x: em.max(x, axis=0, keepdims=True), (wide,)),
        (lambda x: em.sum(x), (ints,)),          # int32 sums to int64, as NumPy
        (lambda x: em.sum(em.tanh(x), axis=1), (wide,)),
    ]
    for (fn, arrs), got in zip(cases, run_cases(cases, "c")):
        want = eager(fn, *arrs)
        assert_close(got, want, rtol=1e-5, atol=1e-3)


def test_reduction_layout_is_outer_reduce_inner():
    """Reducing the middle axes of a 4-D tensor: the loop nest is outer x reduce x inner."""
    from kernel_helpers import fused_case

    from execmode.codegen.lower import lower_fused

    x = np.ones((2, 3, 4, 5), np.float32)
    g, f = fused_case(lambda x: em.sum(x * 2, axis=(1, 2)), x)
    k = lower_fused(f, g.node_map())
    assert [(lp.role, lp.size) for lp in k.loops] == [("outer", 2), ("reduce", 12),
                                                     ("inner", 5)]
    g, f = fused_case(lambda x: em.max(x + 1, axis=(1, 3)), x)
    k = lower_fused(f, g.node_map())
    assert [(lp.role, lp.size) for lp in k.loops] == [("outer", 2), ("outer", 4),
                                                     ("reduce", 3), ("reduce", 5)]


@pytest.mark.parametrize("length", [16, 17, 32, 37, 64, 100])
def test_row_sums_in_vector_lanes(length):
    """Sums along one row of 16 or more points keep partial sums in a vector's lanes and
    combine them as a tree (render_reduction.lane_sum), the tail after the last whole
    vector included. Where the float64 sum is exact, a float32 row sum is its correctly
    rounded value, whatever the order; overflow, NaN, infinities and -0.0 rows give
    eager's answers exactly (the overflow rows are summed again in NumPy's order)."""
    from kernel_helpers import fused_case

    from execmode.codegen.lower import lower_fused
    from execmode.codegen.render_c import CRenderer

    rng = np.random.default_rng(length)
    exact = (rng.integers(-4096, 4096, (40, length)) / 1024).astype(np.float32)
    special = exact[:8].copy()
    special[0] = 3e38                   # overflows to inf in float32, eagerly
    special[1, :] = -3e38
    special[1, 3] = 3e38                # inf and -inf partials: what eager gives
    special[2, 5] = np.nan
    special[3, :] = -0.0                # a sum of -0.0 is 0.0, as NumPy's
    special[4, 1], special[4, 2] = np.inf, -np.inf
    special[5, length - 1] = np.inf     # in the tail where there is one
    ints = rng.integers(-2**31, 2**31, (6, length), dtype=np.int64).astype(np.int32)
    cases = [
        (lambda x: em.sum(x, axis=1), (exact,)),
        (lambda x, y: em.sum(x * y, axis=1, keepdims=True), (exact, exact)),
        (lambda x: em.sum(x, axis=-1), (special,)),
        (lambda x: em.sum(x, axis=1), (exact.astype(np.float64),)),
        (lambda x: em.sum(x, axis=1), (ints,)),   # int32 rows sum to int64, as NumPy
    ]
    g, f = fused_case(cases[0][0], *cases[0][1])
    assert "acc_lane[em_l] += val;" in CRenderer().kernel(lower_fused(f, g.node_map()))
    for k, ((fn, arrs), got) in enumerate(zip(cases, run_cases(cases, "c"))):
        want = eager(fn, *arrs)
        assert got.dtype == want.dtype and got.shape == want.shape
        if k == 1:  # eager sums the products in float32, pairwise: not exact
            assert_close(got, want, **_tolerance(fn, arrs, want))
        else:
            np.testing.assert_array_equal(got, want)
        assert not np.signbit(got[np.asarray(got) == 0]).any()
    wide = np.sum(exact.astype(np.float64), axis=1)
    np.testing.assert_array_equal(run_cases(cases[:1], "c")[0], wide.astype(np.float32))
