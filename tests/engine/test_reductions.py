"""Reductions against NumPy: every axis form (None, int, negative, tuple), keepdims, dtypes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import arrays, assert_close, check_op, dtypes, shapes
from hypothesis import given
from hypothesis import strategies as st

import execmode as em

REDUCTIONS = {
    "sum": np.sum,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
    "any": np.any,
    "all": np.all,
}


@st.composite
def axis_forms(draw, ndim):
    """None, one axis (maybe negative) or a tuple of distinct axes in any order."""
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1, ()]))
    single = st.integers(-ndim, ndim - 1)
    several = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(
        lambda axes: tuple(a - ndim if i % 2 else a for i, a in enumerate(axes)))
    return draw(st.one_of(st.none(), single, several))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data(), dtype=dtypes(), shape=shapes(max_dims=4), keepdims=st.booleans())
def test_reduction_matches_numpy(name, data, dtype, shape, keepdims):
    # prod of ints overflows identically in both, but keep values small to test something.
    a = data.draw(arrays(dtype, shape, low=-3, high=3, specials=True))
    axis = data.draw(axis_forms(len(shape)))
    em_fn = getattr(em, name)
    # A rank-0 tensor takes axis 0 or -1 like PyTorch (NumPy is inconsistent there):
    # reducing it is the identity, as reducing over no axis is.
    np_axis = None if not shape else axis
    out = check_op(lambda x: em_fn(x, axis=axis, keepdims=keepdims),
                   lambda x: REDUCTIONS[name](x, axis=np_axis, keepdims=keepdims), a)
    if name not in ("mean",):  # the method spelling is the same function
        method = getattr(em.tensor(a, dtype=a.dtype), name)(axis=axis, keepdims=keepdims)
        assert_close(method, out)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data(), dtype=dtypes(), shape=shapes(min_dims=1), keepdims=st.booleans())
def test_argmax_argmin_match_numpy(name, data, dtype, shape, keepdims):
    a = data.draw(arrays(dtype, shape, specials=True))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    np_fn = getattr(np, name)
    out = check_op(lambda x: getattr(em, name)(x, axis=axis, keepdims=keepdims),
                   lambda x: np_fn(x, axis=axis, keepdims=keepdims), a)
    assert out.dtype == em.int64


@pytest.mark.parametrize("name", ["var", "std"])
@given(data=st.data(), dtype=dtypes((em.float32, em.float64, em.int32, em.int64)),
       shape=shapes(max_dims=3, min_side=2), keepdims=st.booleans(),
       correction=st.sampled_from([0, 1]))
def test_var_std_match_numpy(name, data, dtype, shape, keepdims, correction):
    a = data.draw(arrays(dtype, shape, specials=True))
    axis = data.draw(axis_forms(len(shape)))
    np_axis = None if not shape else axis
    np_fn = getattr(np, name)
    check_op(lambda x: getattr(em, name)(x, axis=axis, keepdims=keepdims, correction=correction),
             lambda x: np_fn(x, axis=np_axis, keepdims=keepdims, ddof=correction), a,
             rtol=1e-4 if dtype == em.float32 else None, atol=1e-5 if dtype == em.float32 else None)


def test_reductions_of_empty_axes():
    x = em.zeros((0, 3))
    assert em.sum(x, axis=0).tolist() == [0.0, 0.0, 0.0]
    assert em.prod(x, axis=0).tolist() == [1.0, 1.0, 1.0]
    assert math.isnan(em.mean(x).item())  # 0/0, as in NumPy
    assert em.any(x).item() is False and em.all(x).item() is True
    with pytest.raises(em.ShapeError, match="empty"):
        em.max(x, axis=0)
    with pytest.raises(em.ShapeError, match="empty"):
        em.argmin(x)


def test_count_nonzero_matches_numpy():
    a = np.array([[0, 1, 2], [0, 0, 3]])
    check_op(em.count_nonzero, np.count_nonzero, a)
    check_op(lambda x: em.count_nonzero(x, axis=1), lambda x: np.count_nonzero(x, axis=1), a)


def test_reduction_dtypes_follow_numpy():
    assert em.sum(em.tensor([True, True])).dtype == em.int64
    assert em.sum(em.tensor([1, 2], dtype=em.int32)).dtype == np.sum(np.int32([1])).dtype
    assert em.mean(em.tensor([1, 2])).dtype == em.float64
    assert em.mean(em.tensor([1.0, 2.0])).dtype == em.float32
    assert em.max(em.tensor([True, False])).dtype == em.bool


def test_normalized_axes_are_kept_without_keeping_errors():
    """registry.normalize_axes keeps its answers for None, ints and tuples of ints (every
    eager reduction asks): the same answers as computed afresh, and the errors each time,
    for bools (equal to 1 and 0) and repeats as well."""
    from execmode.ops.registry import RuleError, _normalize_axes, normalize_axes

    for ndim in range(4):
        for axis in (None, 0, -1, 2, (0, -1), (-1, 0), (1,), ()):
            try:
                want = _normalize_axes(axis, ndim)
            except RuleError as exc:
                want = type(exc), str(exc)
            for _ in range(2):  # computed, then kept
                try:
                    got = normalize_axes(axis, ndim)
                except RuleError as exc:
                    got = type(exc), str(exc)
                assert got == want, (axis, ndim)
    normalize_axes(1, 2)
    normalize_axes((0, 1), 2)
    for bad in (True, (True,), (0, 0), (0, False), 1.0, [0, 0]):
        for _ in range(2):
            with pytest.raises(RuleError):
                normalize_axes(bad, 2)
    assert normalize_axes(np.int64(-1), 2) == (1,) and normalize_axes([1, 0], 2) == (0, 1)
    with pytest.raises(em.ArgumentError):
        em.sum(em.ones((2, 3)), axis=True)
    assert em.sum(em.ones((2, 3)), axis=-1).tolist() == [3.0, 3.0]
