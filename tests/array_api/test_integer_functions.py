"""The Array API's bitwise and logical functions added for issue 36, and positive: values
against NumPy for ints and bools, the refusal of floats, and em.jit (C kernels for
and/or/xor/logical_xor, NumPy steps for invert and the shifts) against eager's bits."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_same_bits, check_op

import execmode as em

BINARY = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
          "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
          "bitwise_right_shift": np.right_shift, "logical_xor": np.logical_xor}
RNG = np.random.default_rng(0)
INTS = {np.int32: RNG.integers(-50, 50, (3, 4)).astype(np.int32),
        np.int64: RNG.integers(-2**40, 2**40, (3, 4))}
SHIFTS = RNG.integers(0, 31, (4,))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_on_ints_matches_numpy(name, dtype):
    b = SHIFTS.astype(dtype) if "shift" in name else INTS[dtype][::-1].copy()
    check_op(getattr(em, name), BINARY[name], INTS[dtype], b)
    check_op(getattr(em, name), BINARY[name], INTS[dtype], 3)  # a weak Python int


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor"])
def test_binary_on_bools_stays_bool(name):
    t = np.array([True, True, False, False])
    u = np.array([True, False, True, False])
    assert check_op(getattr(em, name), BINARY[name], t, u).dtype == em.bool


def test_shifts_by_the_bit_width_or_more_are_numpys():
    x = np.array([1, -8, 2**40], np.int64)
    check_op(em.bitwise_left_shift, np.left_shift, x, np.array([64, 70, 3]))
    check_op(em.bitwise_right_shift, np.right_shift, x, np.array([64, 70, 3]))


def test_invert_and_positive():
    check_op(em.bitwise_invert, np.invert, INTS[np.int32])
    check_op(em.bitwise_invert, np.invert, np.array([True, False]))
    check_op(em.positive, np.positive, INTS[np.int64])
    check_op(em.positive, np.positive, np.array([1.5, -0.0], np.float32))


@pytest.mark.parametrize("name", sorted(set(BINARY) - {"logical_xor"}))
def test_bitwise_functions_refuse_floats(name):
    x = em.tensor([1.0, 2.0])
    with pytest.raises(em.DTypeError, match=name):
        getattr(em, name)(x, x)
    with pytest.raises(em.DTypeError, match="bitwise_invert"):
        em.bitwise_invert(x)


def test_positive_passes_the_gradient():
    x = em.tensor([1.0, -2.0], requires_grad=True)
    em.sum(em.positive(x) * 3).backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_jit_gives_eagers_bits():
    def f(a, b, t, u):
        return (em.bitwise_and(a, b) + em.bitwise_xor(a, b) * em.bitwise_or(a, 3),
                em.bitwise_invert(t), em.logical_xor(a, b), em.logical_xor(t, u),
                em.bitwise_left_shift(a, em.bitwise_and(b, 7)) + em.positive(a),
                em.bitwise_right_shift(a, 2) - em.bitwise_invert(a), em.bitwise_and(t, u))

    a = em.tensor(INTS[np.int64])
    b = em.tensor(INTS[np.int64][::-1].copy())
    t = em.tensor(RNG.random((3, 4)) > 0.5)
    u = em.tensor(RNG.random((4,)) > 0.5)
    jf = em.jit(f)
    for _ in range(2):  # the trace, then the cached plan
        for got, want in zip(jf(a, b, t, u), f(a, b, t, u)):
            assert_same_bits(got, want)
