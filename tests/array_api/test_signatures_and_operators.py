"""The Array API's signatures and operators that the conformance suite found missing
(issue 36): the namespace's version and inspection object, ``copy=`` of asarray and
astype, ``dtype=`` of sum and prod, ``keepdims=`` of count_nonzero, ``to_device``, and
``& | ^ ~ << >>`` as bitwise operators on integer tensors (logical on bool ones), eagerly
and under em.jit."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from helpers import assert_close, check_op

import execmode as em

INTS = np.array([[5, -3, 12], [0, 7, -8]], dtype=np.int64)
SHIFTS = np.array([[1, 0, 3], [2, 5, 1]], dtype=np.int64)
BOOLS = np.array([True, False, True, False])


def test_the_namespace_says_its_version_and_answers_inspection():
    assert em.__array_api_version__ == "2024.12"
    info = em.__array_namespace_info__()
    assert info.default_device() in info.devices() and "cpu" in info.devices()
    assert info.default_dtypes() == {"real floating": em.float32, "integral": em.int64,
                                     "indexing": em.int64, "complex floating": em.complex64}
    assert set(info.dtypes()) == {
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64", "complex64", "complex128"}
    assert info.dtypes(kind="unsigned integer") == {
        "uint8": em.uint8, "uint16": em.uint16, "uint32": em.uint32, "uint64": em.uint64}
    assert info.dtypes(kind="complex floating") == {"complex64": em.complex64,
                                                   "complex128": em.complex128}
    assert info.dtypes(kind=("bool", "real floating")) == {
        "bool": em.bool, "float32": em.float32, "float64": em.float64}
    assert info.capabilities()["boolean indexing"] is True
    with pytest.raises(em.ArgumentError, match="unknown kind"):
        info.dtypes(kind="complex")


def test_asarray_copy_shares_or_copies_as_the_standard_says():
    x = em.tensor([1.0, 2.0])
    assert em.asarray(x) is x and em.asarray(x, copy=False) is x
    copied = em.asarray(x, copy=True)
    x[0] = 9.0
    assert copied.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="copy=False"):
        em.asarray([1.0], copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        em.asarray(x, dtype=em.float64, copy=False)


def test_astype_copies_unless_told_not_to():
    x = em.tensor([1, 2])
    same = em.astype(x, em.int64)
    assert same is not x and same.tolist() == [1, 2]
    assert em.astype(x, em.int64, copy=False) is x
    assert x.astype(em.float64, copy=False).dtype == em.float64
    assert x.long() is x  # PyTorch's casts keep their identity


def test_sum_and_prod_take_a_dtype():
    x = em.tensor(INTS.astype(np.int32))
    assert em.sum(x, dtype=em.float64).dtype == em.float64
    check_op(lambda t: em.prod(t, axis=1, dtype=em.int64), lambda a: np.prod(a, axis=1), INTS)
    check_op(lambda t: em.sum(t, axis=0, dtype=em.float32),
             lambda a: np.sum(a, axis=0, dtype=np.float32), np.float64([[1.5, 2], [3, 4]]))


def test_count_nonzero_keeps_dims():
    check_op(lambda t: em.count_nonzero(t, axis=1, keepdims=True),
             lambda a: np.count_nonzero(a, axis=1, keepdims=True).astype(np.int64), INTS)


def test_to_device_is_a_method_too():
    x = em.tensor([1.0])
    assert x.to_device("cpu") is x
    with pytest.raises(em.ArgumentError, match="stream"):
        x.to_device("cpu", stream=1)


OPERATORS = {
    "and": (operator.and_, np.bitwise_and), "or": (operator.or_, np.bitwise_or),
    "xor": (operator.xor, np.bitwise_xor), "lshift": (operator.lshift, np.left_shift),
    "rshift": (operator.rshift, np.right_shift),
}


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_integer_operators_are_bitwise_eagerly_and_under_jit(name):
    op, np_op = OPERATORS[name]
    check_op(op, np_op, INTS, SHIFTS)
    check_op(lambda a: op(3, a), lambda a: np_op(3, a), SHIFTS)  # reflected
    jitted = em.jit(lambda a, b: op(a, b))
    assert_close(jitted(em.tensor(INTS), em.tensor(SHIFTS)), np_op(INTS, SHIFTS))


def test_invert_is_bitwise_on_ints_and_logical_on_bools():
    check_op(operator.invert, np.invert, INTS)
    check_op(operator.invert, np.logical_not, BOOLS)
    assert_close(em.jit(lambda a: ~a)(em.tensor(INTS)), np.invert(INTS))
    check_op(lambda a, b: a ^ b, np.logical_xor, BOOLS, BOOLS[::-1].copy())
    with pytest.raises(em.DTypeError, match="bitwise_and"):
        em.tensor([1.0]) & em.tensor([1.0])


def test_creation_takes_one_shape_tuple_or_ints():
    for fn in (em.zeros, em.ones, em.empty):
        assert fn((2, 3)).shape == fn(2, 3).shape == fn(shape=(2, 3)).shape == (2, 3)
    assert em.zeros(()).shape == ()


def test_reshape_copy():
    x = em.tensor(INTS)
    view = em.reshape(x, (3, 2), copy=False)
    copied = em.reshape(x, (3, 2), copy=True)
    x[0, 0] = 100
    assert view[0, 0].item() == 100 and copied[0, 0].item() == 5
    with pytest.raises(ValueError, match="copy=False"):
        em.reshape(x.T, (6,), copy=False)


def test_dlpack_both_ways_shares_memory():
    a = np.arange(4.0)
    t = em.from_dlpack(a)
    a[0] = 9.0
    assert t.tolist() == [9.0, 1.0, 2.0, 3.0]
    assert em.from_dlpack(a, copy=True).tolist() == t.tolist()
    back = np.from_dlpack(t)  # Tensor.__dlpack__
    back[1] = -1.0
    assert t.tolist() == [9.0, -1.0, 2.0, 3.0] and t.__dlpack_device__() == (1, 0)
    with pytest.raises(em.DTypeError, match="float16"):
        em.from_dlpack(np.zeros(2, np.float16))


def test_complex_functions_on_real_tensors_are_numpys():
    x = em.tensor(INTS)
    check_op(em.conj, np.conj, INTS)
    check_op(em.real, np.real, INTS)
    check_op(em.imag, np.imag, INTS)
    assert em.conj(x) is not x and complex(em.tensor(2.5)) == 2.5 + 0j


def test_take_along_axis_counts_negative_indices_from_the_end_and_gather_refuses_them():
    idx = np.array([[-1, 0], [1, -3]])
    check_op(lambda t: em.take_along_axis(t, em.tensor(idx), axis=1),
             lambda a: np.take_along_axis(a, idx, axis=1), INTS)
    with pytest.raises(IndexError, match="out of range"):
        em.gather(em.tensor(INTS), 1, em.tensor(idx))


def test_small_conformance_fixes():
    ints = em.tensor(INTS.astype(np.int32))
    assert em.vecdot(ints, ints).dtype == em.int32  # the operands' dtype, not sum's int64
    assert em.tensor(INTS)[0, em.tensor(1):em.tensor(3)].tolist() == [-3, 12]
    assert em.can_cast(em.bool, em.float64) and not em.can_cast(em.int64, em.int32)
    assert em.sum(em.tensor(INTS), dtype=em.int32).dtype == em.int32
    with pytest.raises(IndexError):
        em.expand_dims(em.tensor(INTS), axis=5)
    with pytest.raises(ValueError, match="nonzero"):
        em.nonzero(em.tensor(1.0))
    assert em.concat([em.tensor(INTS), em.tensor([1])], axis=None).shape == (7,)
