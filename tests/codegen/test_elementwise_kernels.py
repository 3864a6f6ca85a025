"""Elementwise kernels against eager (NumPy semantics) over random programs, shapes,
broadcasts and dtypes, NaN and +-Inf included, compiled C and interpreted alike.

Each example compiles one translation unit of several programs (one compiler call), which
keeps the suite fast while covering many kernels.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_helpers import eager, elementwise_programs, fused_case, run_cases

import execmode as em
from execmode import instrument
from execmode.codegen.lower import Unsupported, lower_fused
from execmode.dtypes import KERNEL_DTYPES

# Approximated float32 functions are within a few ulp; chained ops compound that.
TOLERANCE = {em.float32: {"rtol": 2e-4, "atol": 1e-5}, em.float64: {"rtol": 1e-9, "atol": 1e-12}}


class _OutputDtypes:
    """The dtypes of every op output while listening (the program's intermediates)."""

    def __init__(self):
        self.dtypes = set()

    def on_op(self, event, output):
        self.dtypes.add(np.dtype(event.output[1]))


def _check(cases, backend):
    outs = run_cases(cases, backend)
    for (program, arrs), got in zip(cases, outs):
        seen = _OutputDtypes()
        with instrument.listening(seen):
            want = eager(program, *arrs)
        tol = TOLERANCE.get(want.dtype, {})
        if want.dtype == em.float64 and np.dtype(np.float32) in seen.dtypes:
            # A float32 intermediate (a float32 input, or a float function of a bool, as
            # sin(isfinite(x)), computed in float32) carries its float32 error into a
            # float64 result.
            tol = TOLERANCE[em.float32]
        assert_close(got, want, **tol, msg=f"{backend} kernel vs eager")


@pytest.mark.parametrize("backend", ["c", "interpreter"])
@given(st.lists(elementwise_programs(), min_size=1, max_size=6))
@settings(max_examples=int(__import__("os").environ.get("EM_EXAMPLES", 12)))
def test_random_elementwise_programs(backend, cases):
    # Only what the fuse pass puts in a kernel: an op whose result is a type the kernels
    # lack (square or power of bools: int8) stays a plan step (fuse.kernel_dtype_refusal).
    assume(all(m.dtype in KERNEL_DTYPES for fn, arrs in cases
               for m in fused_case(fn, *arrs)[1].body))
    _check(cases, backend)


def test_promotion_and_weak_literals():
    x32 = np.array([1.5, -2.25, np.nan, np.inf], np.float32)
    i32 = np.array([3, -4, 0, 7], np.int32)
    b = np.array([True, False, True, False])
    cases = [
        (lambda x, i: x + i, (x32, i32)),              # int32 + float32 -> float64
        (lambda i, j: i / j, (i32, i32[::-1].copy())),  # int / int -> float64
        (lambda i: em.less(i, 2.5), (i32,)),            # compares in float64
        (lambda x: x * 0.5, (x32,)),                    # weak float stays float32
        (lambda b: em.exp(b), (b,)),                    # float function of bool: float32
        (lambda i: em.exp(i), (i32,)),                  # of int: float64
        (lambda b, i: em.where(b, i, 2.5), (b, i32)),
        (lambda x: em.astype(x, em.int32), (x32,)),
        (lambda b: b + b, (b,)),
        (lambda i: i // 0, (i32,)),
        (lambda i: i % -3, (i32,)),
    ]
    for backend in ("c", "interpreter"):
        for (fn, arrs), got in zip(cases, run_cases(cases, backend)):
            assert_close(got, eager(fn, *arrs), msg=backend)


def test_nan_inf_and_signed_zero_semantics():
    """max/min propagate NaN, floor division and remainder follow NumPy's sign rules."""
    a = np.array([np.nan, 1.0, -0.0, 5.0, -7.0, np.inf, 0.0, 7.0], np.float32)
    b = np.array([1.0, np.nan, 0.0, -np.inf, 2.0, 2.0, 0.0, 0.0], np.float32)
    cases = [
        (lambda a, b: em.maximum(a, b), (a, b)),
        (lambda a, b: em.minimum(a, b), (a, b)),
        (lambda a, b: em.floor_divide(a, b), (a, b)),
        (lambda a, b: em.remainder(a, b), (a, b)),
        (lambda a: em.sign(a), (a,)),
        (lambda a: em.isinf(a) | em.isnan(a), (a,)),
        # -0.5 -> int 0 -> +0.0 -> 1/x = +inf (GCC's trunc rewrite would give -inf)
        (lambda a: em.reciprocal(em.astype(em.astype(a * -0.1, em.int32), em.float32)), (a,)),
        (lambda a: em.astype(a * 1e10, em.int32), (a,)),   # out of range: NumPy's INT_MIN
    ]
    for (fn, arrs), got in zip(cases, run_cases(cases, "c")):
        want = eager(fn, *arrs)
        assert_close(got, want)
        both_zero = (want == 0) & (got == 0)
        assert np.array_equal(np.signbit(got[both_zero]), np.signbit(want[both_zero]))


def test_broadcasting_shapes():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 1, 5)).astype(np.float32)
    y = rng.standard_normal((4, 1)).astype(np.float32)
    s = np.array(2.0, np.float32)
    cases = [(lambda x, y, s: em.tanh(x * y) - s, (x, y, s)),
             (lambda s: em.exp(s) + 1, (s,))]
    for (fn, arrs), got in zip(cases, run_cases(cases, "c")):
        assert_close(got, eager(fn, *arrs), rtol=1e-5)


def test_a_member_of_a_type_the_kernels_lack_is_refused_by_name():
    # square of bools is int8 (NumPy's promotion): never a kernel member, and lowering
    # says so rather than failing in the renderer.
    graph, fused = fused_case(lambda b: em.square(b), np.array([True, False]))
    with pytest.raises(Unsupported, match=r"\(square\) is i8"):
        lower_fused(fused, graph.node_map(), graph_id="test")
