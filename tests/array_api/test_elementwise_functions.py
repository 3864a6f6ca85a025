"""The Array API's elementwise functions added for issue 36: values against NumPy, the
standard's special cases, dtypes, gradients against finite differences, and em.jit
against eager (these ops have no kernel template: under jit each is a plan step on
NumPy, which must give eager's bits)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import assert_close, assert_same_bits, check_grad, check_op

import execmode as em

UNARY = {
    "tan": np.tan, "acos": np.arccos, "asin": np.arcsin, "atan": np.arctan,
    "acosh": np.arccosh, "asinh": np.arcsinh, "atanh": np.arctanh,
    "log2": np.log2, "log10": np.log10, "trunc": np.trunc, "signbit": np.signbit,
}
BINARY = {"atan2": np.arctan2, "copysign": np.copysign, "hypot": np.hypot,
          "nextafter": np.nextafter}
# Inputs inside each function's domain (acosh needs x >= 1; acos, asin, atanh |x| <= 1).
DOMAIN = {"acosh": (1.0, 4.0), "acos": (-0.95, 0.95), "asin": (-0.95, 0.95),
          "atanh": (-0.95, 0.95), "log2": (0.1, 5.0), "log10": (0.1, 5.0),
          "tan": (-1.2, 1.2)}


def _inputs(name, dtype, shape=(3, 4), seed=0):
    low, high = DOMAIN.get(name, (-3.0, 3.0))
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_numpy(name, dtype):
    check_op(getattr(em, name), UNARY[name], _inputs(name, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_numpy_with_broadcasting(name, dtype):
    a = _inputs(name, dtype, (3, 4))
    b = _inputs(name, dtype, (4,), seed=1)
    check_op(getattr(em, name), BINARY[name], a, b)
    check_op(getattr(em, name), BINARY[name], a, 0.5)  # a weak scalar keeps a's dtype


@pytest.mark.parametrize("name", ["tan", "acos", "asin", "atan", "acosh", "asinh", "atanh",
                                  "log2", "log10"])
def test_float_functions_of_ints_compute_in_float64_and_of_bools_in_float32(name):
    ints = np.array([1, 2, 3], np.int64)
    with np.errstate(all="ignore"):
        assert_close(getattr(em, name)(em.tensor(ints)), UNARY[name](ints.astype(np.float64)))
    assert getattr(em, name)(em.tensor([True, False])).dtype == em.float32


def test_trunc_keeps_integers_and_signbit_gives_bool():
    assert em.trunc(em.tensor([3, -2])).dtype == em.int64
    assert em.trunc(em.tensor([3, -2], dtype=em.int32)).tolist() == [3, -2]
    assert em.signbit(em.tensor([1.0, -1.0])).dtype == em.bool
    assert em.atan2(em.tensor([1, 2]), em.tensor([3, 4])).dtype == em.float64


# The standard's special cases (float64, where NumPy and C99's Annex F agree with it).
SPECIAL = [
    ("acos", 1.0, 0.0), ("acos", 1.5, math.nan), ("asin", -0.0, -0.0),
    ("atan", math.inf, math.pi / 2), ("atan", -0.0, -0.0), ("acosh", 1.0, 0.0),
    ("acosh", 0.5, math.nan), ("asinh", -math.inf, -math.inf), ("atanh", 1.0, math.inf),
    ("atanh", -1.0, -math.inf), ("atanh", 2.0, math.nan), ("log2", 0.0, -math.inf),
    ("log2", -1.0, math.nan), ("log10", 1.0, 0.0), ("log10", math.inf, math.inf),
    ("trunc", -0.5, -0.0), ("trunc", math.inf, math.inf), ("trunc", math.nan, math.nan),
    ("tan", -0.0, -0.0), ("tan", math.inf, math.nan), ("signbit", -0.0, True),
    ("signbit", math.nan, False), ("signbit", -math.inf, True),
]
SPECIAL2 = [
    ("atan2", 0.0, -0.0, math.pi), ("atan2", -0.0, -0.0, -math.pi),
    ("atan2", 1.0, 0.0, math.pi / 2), ("atan2", math.inf, -math.inf, 3 * math.pi / 4),
    ("atan2", math.nan, 1.0, math.nan), ("copysign", 1.0, -0.0, -1.0),
    ("copysign", math.inf, -1.0, -math.inf), ("hypot", math.inf, math.nan, math.inf),
    ("hypot", 3.0, 4.0, 5.0), ("hypot", 1e300, 1e300, 1e300 * math.sqrt(2)),
    ("nextafter", 1.0, 1.0, 1.0), ("nextafter", 0.0, 1.0, 5e-324),
    ("nextafter", math.nan, 1.0, math.nan),
]


def _same(got, want):
    got = got.numpy()[()]
    if isinstance(want, bool):
        assert bool(got) is want
    elif math.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-15) and np.signbit(got) == np.signbit(want)


@pytest.mark.parametrize("name, x, want", SPECIAL)
def test_unary_special_cases(name, x, want):
    with np.errstate(all="ignore"):
        _same(getattr(em, name)(em.tensor(x, dtype=em.float64)), want)


@pytest.mark.parametrize("name, a, b, want", SPECIAL2)
def test_binary_special_cases(name, a, b, want):
    with np.errstate(all="ignore"):
        _same(getattr(em, name)(em.tensor(a, dtype=em.float64),
                                em.tensor(b, dtype=em.float64)), want)


@pytest.mark.parametrize("name", ["tan", "acos", "asin", "atan", "acosh", "asinh", "atanh",
                                  "log2", "log10"])
def test_unary_gradients(name):
    check_grad(getattr(em, name), _inputs(name, np.float64, (2, 3)))


@pytest.mark.parametrize("name", ["atan2", "hypot"])
def test_binary_gradients_to_both_operands_with_broadcasting(name):
    check_grad(getattr(em, name), _inputs(name, np.float64, (2, 3)),
               _inputs(name, np.float64, (3,), seed=1))


def test_copysign_gradient_is_the_sign_flip_and_none_for_the_sign_operand():
    a = np.array([0.5, -1.5, 2.0, -0.25])
    b = np.array([-1.0, -2.0, 3.0, 4.0])
    check_grad(em.copysign, a, b, wrt=[0])
    x = em.tensor(a, dtype=em.float64, requires_grad=True)
    em.sum(em.copysign(x, em.tensor(b, dtype=em.float64))).backward()
    assert x.grad.tolist() == [-1.0, 1.0, 1.0, -1.0]


def test_piecewise_constant_functions_pass_no_gradient():
    x = em.tensor([0.5, -1.5], requires_grad=True)
    y = em.trunc(x) + em.nextafter(x, 0.0) * 0
    assert y.requires_grad in (True, False)  # whatever the tape says, backward runs
    em.sum(em.trunc(x) * 1.0 + x).backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_jit_runs_them_as_plan_steps_with_eagers_bits():
    def f(a, b):
        return (em.atan2(em.asin(a), b) + em.log10(em.abs(a) + 1) * em.hypot(a, b)
                + em.copysign(em.trunc(a * 3), b) + em.nextafter(a, b) + em.tan(a)
                + em.atanh(a) + em.acosh(em.abs(b) + 1) + em.asinh(a) + em.acos(a)
                + em.log2(em.abs(b) + 1) + em.atan(b)), em.signbit(a - b)

    a = em.tensor(_inputs("asin", np.float32, (4, 5)))
    b = em.tensor(_inputs("atan", np.float32, (5,), seed=2))
    jf = em.jit(f)
    for got, want in zip(jf(a, b), f(a, b)):
        assert_same_bits(got, want)
    for got, want in zip(jf(a, b), f(a, b)):  # the cached plan, replayed
        assert_same_bits(got, want)


def test_jit_differentiates_them_as_eager_does():
    def step(x):
        y = em.sum(em.atan2(x, 2.0) + em.asinh(x) * em.hypot(x, 1.0))
        y.backward()
        return y

    w0 = _inputs("asinh", np.float64, (6,))
    xs = [em.tensor(w0, dtype=em.float64, requires_grad=True) for _ in range(2)]
    eager = step(xs[0])
    graph = em.jit(step)(xs[1])
    assert_close(graph, eager.numpy())
    assert_close(xs[1].grad, xs[0].grad.numpy())
