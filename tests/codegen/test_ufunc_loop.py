"""A ufunc's own loop called directly (codegen/ufunc_loop.py): NumPy's bits for the calls
it takes, the ufunc itself for every other call, and the jitted single op's step."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import execmode as em
from execmode.codegen import fast_entry, ufunc_loop


@pytest.fixture(scope="module", autouse=True)
def extension():
    module = ufunc_loop.load_extension()
    if module is None:
        pytest.skip("no C compiler or Python headers: the ufunc loop extension is not built")
    # These tests read the C entry the jitted call takes, whatever EXECMODE_JIT_REPLAY
    # the suite runs under (jit_driver/paths.py).
    from execmode.jit_driver import paths

    with paths.pinned(replay="auto"):
        yield module


UFUNCS = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.power,
          np.arctan2, np.floor_divide, np.remainder, np.copysign, np.logaddexp,
          np.exp, np.log, np.tanh, np.sqrt, np.negative, np.absolute, np.log1p, np.sin]


def _edge_values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    flat = x.reshape(-1)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(dtype).tiny / 4,
               np.finfo(dtype).max, -1.0]
    flat[:len(special)] = special
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_the_loop_gives_numpys_bits(ufunc, dtype):
    loop = ufunc_loop.direct_loop(ufunc, dtype)
    assert loop is not None
    arrays = [_edge_values(dtype, (5, 13), seed) for seed in range(ufunc.nin)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ufunc(*arrays)
        cases = [(arrays, want)]
        if ufunc.nin == 2:  # a Python number on either side: NumPy's weak scalar
            cases += [((arrays[0], 2.5), ufunc(arrays[0], 2.5)),
                      ((-3, arrays[1]), ufunc(-3, arrays[1]))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the loop raises no floating-point warning
        for args, expected in cases:
            got = loop(*args)
            assert type(got) is np.ndarray and got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)


def test_other_calls_go_to_the_ufunc():
    loop = ufunc_loop.direct_loop(np.add, np.float32)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    cases = [
        (a, a.astype(np.float64)),          # another dtype: NumPy promotes
        (a, np.ones(3, np.float32)),        # broadcasting
        (a.T, a.T),                         # not C-contiguous
        (a, 2**40),                         # an int float32 cannot hold exactly
        (1.5, 2.5),                         # numbers only: NumPy's scalar
    ]
    for args in cases:
        got, want = loop(*args), np.add(*args)
        assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        loop(a, "x")                        # the ufunc's own error
    out = np.empty_like(a)
    assert loop(a, a, out=out) is out       # keywords: the ufunc's


def test_a_zero_d_result_is_an_array():
    loop = ufunc_loop.direct_loop(np.multiply, np.float64)
    got = loop(np.array(3.0), np.array(0.5))
    assert type(got) is np.ndarray and got.shape == () and got == 1.5


def test_ufuncs_without_a_same_dtype_loop_get_none():
    assert ufunc_loop.direct_loop(np.greater, np.float32) is None   # f f -> bool
    assert ufunc_loop.direct_loop(np.add, np.int64) is None          # float loops only


def test_a_jitted_single_op_steps_through_the_loop():
    a, b = em.tensor(np.ones(4, np.float32)), em.tensor(np.full(4, 2.0, np.float32))
    jitted = em.jit(lambda a, b: a * b)
    assert jitted(a, b).tolist() == [2.0] * 4
    segment = jitted.concrete_functions[0].segments[0]
    target = fast_entry._call_target(segment.compiled.plan, segment.sources)
    assert type(target[0]).__name__ == "Loop"
    assert jitted._fast(a, b).tolist() == [2.0] * 4
