"""The generated Python replay (jit_driver/fastcall.py) for the smallest functions: a single
op, the same tensor passed twice, an op function jitted directly. Same results and misses
as the general path."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close

import execmode as em
from execmode.jit_driver import paths
from execmode.jit_driver.fastcall import MISS


@pytest.fixture(autouse=True)
def _fast_replays():
    # These tests read the fast replays: built whatever EXECMODE_JIT_REPLAY forces.
    with paths.pinned(replay="auto"):
        yield


def _t(*values):
    return em.tensor(np.array(values, np.float32))


def _f32(*values):
    return np.array(values, np.float32)


def test_a_single_op_replays_through_the_fast_path():
    f = em.jit(lambda a, b: a + b)
    x, y = _t(1, 2), _t(3, 4)
    f(x, y)
    assert f._fast is not None
    got = f._fast(x, y)
    assert got is not MISS and type(got) is em.Tensor and got.dtype == np.float32
    assert_close(got.numpy(), (x + y).numpy())
    assert got.requires_grad is False and got.grad_fn is None


def test_one_tensor_passed_twice_gets_the_fast_path_and_checks_identity():
    f = em.jit(lambda a, b: a * b + 1)
    x, y = _t(1, 2, 3), _t(2, 2, 2)
    assert_close(f(x, x).numpy(), _f32(2, 5, 10))
    fast = f._fast
    python = getattr(fast, "python", fast)  # a C fast entry keeps the Python replay
    assert python is not None and "is not a0" in python.__source__
    assert_close(python(x, x).numpy(), _f32(2, 5, 10))
    assert python(x, y) is MISS
    assert_close(fast(x, x).numpy(), _f32(2, 5, 10))
    assert fast(x, y) is MISS  # traced as one input: two tensors are another signature
    assert_close(f(x, y).numpy(), _f32(3, 5, 7))
    assert_close(f(y, y).numpy(), _f32(5, 5, 5))


def test_an_op_function_jitted_directly_guards_no_registry_entry():
    f = em.jit(em.exp)
    x = _t(0, 1)
    assert_close(f(x).numpy(), np.exp([0, 1]).astype(np.float32))
    (cf,) = f.concrete_functions
    assert not [g.label for g in cf.python_guards if g.label.startswith("op.")]
    assert_close(f._fast(x).numpy(), np.exp([0, 1]).astype(np.float32))


def test_a_float_function_of_floats_is_its_ufunc_and_eagers_bits():
    """em.jit(em.exp) on float32: the plan's step is np.exp itself, so the C fast entry
    calls its loop as it does a + b's. Ints and bools keep the impl's casts (NumPy would
    compute exp of a bool in float16)."""
    rng = np.random.default_rng(3)
    for data, dtype in ((rng.standard_normal((16, 16)), np.float32),
                        (rng.standard_normal(7), np.float64),
                        (np.arange(-3, 4), np.int64), (np.array([True, False]), np.bool_)):
        x = em.tensor(data.astype(dtype))
        for fn in (em.exp, em.tanh, em.log1p):
            f = em.jit(fn)
            f(x)
            got = f(x).numpy()
            want = fn(x).numpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            ((compiled,),) = [tuple(f._segments.values())]
            (step,) = compiled.plan.steps
            assert (step.fn is getattr(np, fn.__name__)) == (x.dtype.kind == "f")


def test_the_engines_own_functions_jitted_directly_guard_nothing():
    # guards.names_read: em.exp's fast path reads dispatch's flags (_plain, _grad_enabled,
    # ...), engine state that no user rebinds; guarding them made every replay check them.
    x = _t(0, 1)
    for fn in (em.exp, em.tanh, em.nn.functional.gelu):
        f = em.jit(fn)
        f(x)
        (cf,) = f.concrete_functions
        assert cf.python_guards == [], [g.label for g in cf.python_guards]


def test_integer_and_scalar_operands_keep_eager_dtypes():
    f = em.jit(lambda a, b: a // b)
    a = em.tensor(np.array([7, -7], np.int32))
    b = em.tensor(np.array([2, 2], np.int32))
    f(a, b)
    got, want = f(a, b), a // b
    assert got.dtype == want.dtype
    assert_close(got.numpy(), want.numpy())
    g = em.jit(lambda a: a * 2.5)
    got, want = g(a), a * 2.5
    assert got.dtype == want.dtype
    assert_close(got.numpy(), want.numpy())
