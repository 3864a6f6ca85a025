"""The float32 transcendentals of the C kernels are our own vectorisable approximations:
their error against the exact value (NumPy in float64, math.erf) is bounded in ulps, and
NaN, +-Inf, -0.0, subnormals and huge inputs give NumPy's answers exactly.

The bounds tested here are the ones docs/kernels.md lists (measured there over 44M inputs;
this test samples 1M float32 bit patterns evenly plus the special values). float64 calls
libm, checked to 2 ulp against long double.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_helpers import run_cases

import execmode as em

# Tested bound (ulp) per function; docs/kernels.md has the measured maxima.
BOUNDS_F32 = {"exp": 1.5, "log": 1.5, "tanh": 2.0, "erf": 1.5, "expm1": 2.5, "log1p": 3.0}
_erf64 = np.vectorize(math.erf, otypes=[np.float64])
REFERENCE = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "erf": _erf64,
             "expm1": np.expm1, "log1p": np.log1p}
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38,
            3.4028235e38, -3.4028235e38, 88.72, 88.73, -103.9, -104.0, 1.0, -1.0, 0.55,
            -0.55, 0.5, -0.5, 3.92, 10.0, -10.0, -1.0000001, -0.9999999]


def _f32_inputs():
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    return np.concatenate([x[np.isfinite(x)], np.array(SPECIALS, np.float32)])


@pytest.fixture(scope="module")
def f32_results():
    x = _f32_inputs()
    cases = [(lambda a, name=name: getattr(em, name)(a), (x,)) for name in BOUNDS_F32]
    return x, dict(zip(BOUNDS_F32, run_cases(cases, "c")))


@pytest.mark.parametrize("name", sorted(BOUNDS_F32))
def test_float32_error_bound_in_ulps(name, f32_results):
    x, results = f32_results
    got = results[name]
    with np.errstate(all="ignore"):
        exact = REFERENCE[name](x.astype(np.float64))
    want = exact.astype(np.float32)
    finite = np.isfinite(want) & np.isfinite(got)
    ulp = np.spacing(np.abs(want[finite])).astype(np.float64)
    err = np.abs(got[finite].astype(np.float64) - exact[finite]) / ulp
    worst = int(np.argmax(err))
    assert err.max() <= BOUNDS_F32[name], (
        f"{name}: {err.max():.2f} ulp at x={x[finite][worst]!r} "
        f"(got {got[finite][worst]!r}, exact {exact[finite][worst]!r})")


@pytest.mark.parametrize("name", sorted(BOUNDS_F32))
def test_float32_special_values_match_numpy(name, f32_results):
    x, results = f32_results
    got = results[name]
    with np.errstate(all="ignore"):
        want = REFERENCE[name](x.astype(np.float64)).astype(np.float32)
    # NaN where NumPy gives NaN, the same infinities, the same signed zeros.
    assert np.array_equal(np.isnan(got), np.isnan(want))
    inf = np.isinf(want)
    assert np.array_equal(got[inf], want[inf])
    zero = want == 0
    assert np.array_equal(got[zero], want[zero])
    assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


def test_float64_uses_libm_within_two_ulp():
    """float64 calls libm (glibc documents up to 2 ulp for tanh, less for the others),
    checked against long double NumPy (math.erf for erf). NumPy's own float64 tanh is
    itself up to 3 ulp from the exact value, so this does not compare with NumPy."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20000) * 5, np.array(SPECIALS)])
    cases = [(lambda a, name=name: getattr(em, name)(a), (x,)) for name in BOUNDS_F32]
    for name, got in zip(BOUNDS_F32, run_cases(cases, "c")):
        with np.errstate(all="ignore"):
            if name == "erf":
                exact = _erf64(x).astype(np.longdouble)
            else:
                exact = REFERENCE[name](x.astype(np.longdouble))
        want = exact.astype(np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        finite = np.isfinite(want)
        ulp = np.spacing(np.abs(want[finite])).astype(np.longdouble)
        err = np.abs(got[finite].astype(np.longdouble) - exact[finite]) / ulp
        assert err.max() <= 2.0, f"{name}: {float(err.max()):.2f} ulp"
