"""The Array API's data type functions and constants (issue 36): finfo, iinfo, isdtype,
result_type, can_cast, e/pi/inf/nan/newaxis and Tensor.__array_namespace__."""

from __future__ import annotations

import math

import numpy as np
import pytest

import execmode as em

FLOATS = [em.float32, em.float64]
INTS = [em.int32, em.int64]


@pytest.mark.parametrize("dtype", FLOATS)
def test_finfo_matches_numpy_and_takes_a_tensor(dtype):
    info, want = em.finfo(dtype), np.finfo(dtype)
    assert (info.bits, info.eps, info.max, info.min, info.smallest_normal, info.dtype) == (
        want.bits, float(want.eps), float(want.max), float(want.min),
        float(want.smallest_normal), dtype)
    assert all(type(v) is float for v in (info.eps, info.max, info.min, info.smallest_normal))
    assert em.finfo(em.zeros((2,), dtype=dtype)) == info
    assert em.finfo("float32").bits == 32


@pytest.mark.parametrize("dtype", INTS)
def test_iinfo_matches_numpy(dtype):
    info, want = em.iinfo(dtype), np.iinfo(dtype)
    assert (info.bits, info.max, info.min, info.dtype) == (want.bits, want.max, want.min,
                                                           dtype)
    assert type(info.max) is int and em.iinfo(em.tensor([1], dtype=dtype)) == info


def test_finfo_and_iinfo_refuse_the_other_kind():
    with pytest.raises(TypeError, match="iinfo"):
        em.finfo(em.int32)
    with pytest.raises(TypeError, match="finfo"):
        em.iinfo(em.float32)
    with pytest.raises(TypeError):
        em.iinfo(em.bool)
    for fn in (em.finfo, em.iinfo, lambda t: em.can_cast(t, em.int64), em.result_type):
        with pytest.raises(em.DTypeError):
            fn(None)


@pytest.mark.parametrize("dtype, kind, want", [
    (em.bool, "bool", True), (em.int32, "signed integer", True),
    (em.int64, "unsigned integer", False), (em.int64, "integral", True),
    (em.float32, "real floating", True), (em.float64, "complex floating", False),
    (em.float32, "numeric", True), (em.bool, "numeric", False),
    (em.int32, em.int32, True), (em.int32, em.int64, False),
    (em.float64, ("bool", "real floating"), True), (em.int32, ("bool", em.float32), False),
])
def test_isdtype(dtype, kind, want):
    assert em.isdtype(dtype, kind) is want


def test_isdtype_refuses_bad_arguments():
    with pytest.raises(TypeError, match="kind"):
        em.isdtype(em.float32, "floating")
    with pytest.raises(TypeError):
        em.isdtype("float32", "numeric")


@pytest.mark.parametrize("args, want", [
    ((em.float32, em.float64), em.float64), ((em.int32, em.int64), em.int64),
    ((em.bool, em.bool), em.bool), ((em.float32, 1.0), em.float32),
    ((em.int32, 7), em.int32), ((em.bool, True), em.bool), ((em.float64,), em.float64),
])
def test_result_type_follows_the_standard(args, want):
    assert em.result_type(*args) == want
    tensors = [em.zeros((1,), dtype=a) if isinstance(a, np.dtype) else a for a in args]
    assert em.result_type(*tensors) == want


@pytest.mark.parametrize("args", [(em.int32, em.float32), (em.bool, em.int64),
                                  (em.int64, 1.5), (em.float32, True), (1.0,), ()])
def test_result_type_refuses_what_the_standard_leaves_undefined(args):
    with pytest.raises(TypeError):
        em.result_type(*args)


@pytest.mark.parametrize("src, dst, want", [
    (em.int32, em.int64, True), (em.int64, em.int32, False), (em.float32, em.float64, True),
    (em.float64, em.float32, False), (em.bool, em.bool, True), (em.bool, em.int32, True),
    (em.bool, em.float64, True), (em.int32, em.bool, False),
    (em.int32, em.float64, True), (em.int32, em.float32, False), (em.float32, em.int64, False),
])
def test_can_cast(src, dst, want):
    assert em.can_cast(src, dst) is want
    assert em.can_cast(em.zeros((1,), dtype=src), dst) is want


def test_constants_and_newaxis():
    assert em.e == math.e and em.pi == math.pi and math.isinf(em.inf) and em.inf > 0
    assert math.isnan(em.nan) and em.newaxis is None
    assert all(type(v) is float for v in (em.e, em.pi, em.inf, em.nan))
    assert em.zeros((2, 3))[:, em.newaxis].shape == (2, 1, 3)


def test_array_namespace_is_execmode():
    x = em.tensor([1.0])
    assert x.__array_namespace__() is em
    assert x.__array_namespace__(api_version="2024.12") is em
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")
