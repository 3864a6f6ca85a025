"""Indexing and assignment against NumPy: ints, slices, None, Ellipsis, index arrays, masks."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import arrays, assert_close, dtypes, shapes
from hypothesis import given
from hypothesis import strategies as st

import execmode as em


@st.composite
def basic_indices(draw, shape):
    """A tuple of ints, slices (any step sign), None and at most one Ellipsis."""
    items = []
    dims = list(shape)
    used_ellipsis = False
    while dims and len(items) < len(shape) + 2:
        kind = draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis", "stop"]))
        if kind == "stop":
            break
        if kind == "none":
            items.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            items.append(Ellipsis)
            dims = dims[-draw(st.integers(0, len(dims))):] if dims else dims
            dims = dims[len(dims):]  # the ellipsis took what was left unnamed
        elif kind == "int":
            d = dims.pop(0)
            items.append(draw(st.integers(-d, d - 1)))
        else:
            dims.pop(0)
            start = draw(st.none() | st.integers(-5, 5))
            stop = draw(st.none() | st.integers(-5, 5))
            step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))
            items.append(slice(start, stop, step))
    return tuple(items)


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=4), dtype=dtypes())
def test_basic_indexing_matches_numpy(data, shape, dtype):
    a = data.draw(arrays(dtype, shape))
    index = data.draw(basic_indices(shape))
    x = em.tensor(a, dtype=a.dtype)
    assert_close(x[index], a[index])
    if len(index) == 1:
        assert_close(x[index[0]], a[index[0]])


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3))
def test_integer_array_indexing_matches_numpy(data, shape):
    a = data.draw(arrays(em.float64, shape))
    d = shape[0]
    idx = np.array(data.draw(st.lists(st.integers(-d, d - 1), min_size=0, max_size=5)),
                   dtype=np.int64)
    x = em.tensor(a, dtype=a.dtype)
    assert_close(x[em.tensor(idx)], a[idx])  # an index tensor
    assert_close(x[idx], a[idx])  # a NumPy array
    assert_close(x[idx.tolist()], a[idx.tolist()] if idx.size else a[idx])  # a list
    if len(shape) >= 2:
        j = np.array(data.draw(st.lists(st.integers(0, shape[1] - 1), min_size=1, max_size=1)))
        assert_close(x[:, em.tensor(j)], a[:, j])
        assert_close(x[em.tensor(idx), ...], a[idx, ...])


def test_advanced_indexing_with_two_index_arrays_and_int32_indices():
    a = np.arange(12.0).reshape(3, 4)
    x = em.tensor(a)
    rows, cols = np.array([0, 2, 2]), np.array([1, 3, 0], dtype=np.int32)
    assert_close(x[em.tensor(rows), em.tensor(cols, dtype=em.int32)], a[rows, cols])


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3), dtype=dtypes())
def test_bool_mask_indexing_matches_numpy(data, shape, dtype):
    a = data.draw(arrays(dtype, shape))
    mask = data.draw(arrays(em.bool, shape))
    x = em.tensor(a, dtype=a.dtype)
    assert_close(x[em.tensor(mask)], a[mask])
    row_mask = mask.reshape(-1)[: shape[0]] if mask.size >= shape[0] else np.ones(shape[0], bool)
    assert_close(x[em.tensor(row_mask)], a[row_mask])  # a mask over the first axis only
    assert_close(x[x > 0], a[a > 0])


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3), dtype=dtypes())
def test_setitem_matches_numpy(data, shape, dtype):
    a = data.draw(arrays(dtype, shape))
    index = data.draw(basic_indices(shape))
    target_shape = a[index].shape
    value = data.draw(arrays(dtype, target_shape[data.draw(st.integers(0, len(target_shape))):]))
    x = em.tensor(a, dtype=a.dtype)
    expected = a.copy()
    expected[index] = value
    x[index] = em.tensor(value, dtype=value.dtype)
    assert_close(x, expected)
    scalar = data.draw(st.integers(0, 1)) if dtype == em.bool else 3
    expected[index] = scalar
    x[index] = scalar
    assert_close(x, expected)


def test_setitem_with_index_tensor_mask_and_list_value():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = em.tensor(a)
    x[em.tensor([1, 0])] = [7.0, 8.0, 9.0]
    a[[1, 0]] = [7.0, 8.0, 9.0]
    assert_close(x, a)
    x[x > 7.5] = 0.0
    a[a > 7.5] = 0.0
    assert_close(x, a)


def test_setitem_writes_through_to_the_same_tensor():
    x = em.zeros(3)
    alias = x
    x[1] = 2.0
    assert alias.tolist() == [0.0, 2.0, 0.0]


def test_repeated_indices_read_each_time():
    a = np.array([1.0, 2.0, 3.0])
    idx = np.array([0, 0, 2, 0])
    assert_close(em.tensor(a, dtype=em.float64)[em.tensor(idx)], a[idx])


def test_python_bool_index_is_refused():
    with pytest.raises(em.ArgumentError, match="bool"):
        em.ones(3)[True]


def test_function_spellings_of_indexing_and_assignment():
    a = np.arange(6.0).reshape(2, 3)
    x = em.tensor(a)
    assert_close(em.getitem(x, (1, slice(None, 2))), a[1, :2])
    em.setitem(x, (0, 0), 9.0)
    a[0, 0] = 9.0
    assert_close(x, a)
    assert em.assign(x, em.zeros((2, 3), dtype=em.float64)) is x
    assert_close(x, np.zeros((2, 3)))
    em.assign(x, 1.5)  # a scalar or anything that broadcasts fills the tensor
    assert_close(x, np.full((2, 3), 1.5))
