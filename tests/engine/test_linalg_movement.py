"""matmul, tensordot and the movement functions (reshape, permute, concat, ...) against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import (
    arrays,
    assert_close,
    assert_same_bits,
    check_op,
    dtypes,
    shapes,
    through_the_ops,
)
from hypothesis import given
from hypothesis import strategies as st

import execmode as em

NUMERIC = (em.float32, em.float64, em.int32, em.int64)


# --- matmul -----------------------------------------------------------------------------

@st.composite
def matmul_shapes(draw):
    """Operand shapes for matmul: 1-D cases, matrices, batches that broadcast."""
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    batch_a = [draw(st.sampled_from([d, 1])) for d in batch]
    batch_b = [draw(st.sampled_from([d, 1])) for d in batch]
    batch_b = batch_b[draw(st.integers(0, len(batch_b))):]  # fewer leading axes on b
    a = draw(st.sampled_from([(k,), tuple(batch_a) + (n, k)]))
    b = draw(st.sampled_from([(k,), tuple(batch_b) + (k, m)]))
    return a, b


@given(data=st.data(), shape_pair=matmul_shapes(), dtype=dtypes(NUMERIC))
def test_matmul_matches_numpy(data, shape_pair, dtype):
    a = data.draw(arrays(dtype, shape_pair[0], low=-5, high=5))
    b = data.draw(arrays(dtype, shape_pair[1], low=-5, high=5))
    # float32 matmul sums in a different order from NumPy's BLAS call only if the shapes
    # differ; give it a few ulps of the largest possible sum.
    check_op(em.matmul, np.matmul, a, b, atol=1e-4 if dtype == em.float32 else None)
    check_op(lambda x, y: x @ y, np.matmul, a, b, atol=1e-4 if dtype == em.float32 else None)


@given(data=st.data(), shapes_=st.sampled_from([((3, 4), (4, 5)), ((4,), (4, 2)),
                                                 ((3, 4), (4,)), ((4,), (4,)),
                                                 ((2, 1, 3, 4), (5, 4, 2)), ((2, 3), (3, 2))]),
       dtypes_=st.sampled_from([(np.float32,) * 2, (np.float64,) * 2,
                                (np.float32, np.float64), (np.int32, np.int64),
                                (np.int64, np.float32), (np.bool_,) * 2]))
def test_plain_matmul_gives_the_ops_bits(data, shapes_, dtypes_):
    """With nobody watching, ``a @ b`` is np.matmul at once (the op's impl): the op's
    dtype, shape and bits, for any dtypes, 1-D operands and batches included."""
    a = em.tensor(data.draw(arrays(np.dtype(dtypes_[0]), shapes_[0], low=-3, high=3)))
    b = em.tensor(data.draw(arrays(np.dtype(dtypes_[1]), shapes_[1], low=-3, high=3)))
    assert_same_bits(a @ b, through_the_ops(lambda: a @ b))
    assert_same_bits(em.matmul(a, b), through_the_ops(lambda: em.matmul(a, b)))


def test_plain_matmul_leaves_errors_promotion_and_the_tape_to_the_op():
    a, b = em.ones((2, 3)), em.ones((4, 5))
    with pytest.raises(em.ShapeError, match="inner dimensions differ"):
        a @ b
    with pytest.raises(em.ShapeError, match="batch dimensions"):
        em.ones((2, 3, 4)) @ em.ones((3, 4, 2))
    with np.errstate(all="raise"):  # inf * 0: NaN on every path, as the op gives it
        out = em.tensor(np.array([[np.inf, 0.0]], np.float32)) @ em.tensor(np.zeros((2, 2), np.float32))
    assert np.isnan(out.numpy()).all()
    mixed = em.ones((2, 3)) @ em.ones((3, 2), dtype=em.float64)
    assert mixed.dtype == em.float64
    w = em.nn.Parameter(em.ones((3, 2)))
    y = a @ w
    assert y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 2.0, np.float32))


def test_matmul_mixed_dtypes_promote():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.ones((3, 2), dtype=np.float32)
    check_op(em.matmul, np.matmul, a, b)


@pytest.mark.parametrize("shape_b, axes", [
    ((5,), 0),
    ((4, 5), 1),
    ((3, 4, 5), 2),
    ((3, 5), ([1], [0])),
    ((4, 5, 2), ([0, 2], [2, 0])),
    ((5, 3), ([-2], [1])),
])
def test_tensordot_matches_numpy(shape_b, axes):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal(shape_b)
    check_op(lambda x, y: em.tensordot(x, y, axes=axes),
             lambda x, y: np.tensordot(x, y, axes=axes), a, b)


def test_matrix_transpose_and_T():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check_op(em.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), a)
    check_op(lambda x: x.mT, lambda x: np.swapaxes(x, -1, -2), a)
    check_op(lambda x: x.T, lambda x: x.T, a)
    v = np.arange(3.0)
    check_op(lambda x: x.T, lambda x: x.T, v)


def test_permutations_are_kept_without_keeping_errors():
    """permute_dims keeps its normalised axes for tuples of exact ints (x.T asks at every
    call): each permutation twice gives NumPy's answer; an identity gives x itself; bools,
    out-of-range axes and repeats raise every time."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = em.tensor(a)
    for axes in ((2, 0, 1), (-1, 0, 1), [1, 2, 0], (np.int64(1), 0, 2)):
        for _ in range(2):
            np.testing.assert_array_equal(em.permute_dims(x, axes).numpy(),
                                          np.transpose(a, [int(i) for i in axes]))
    assert em.permute_dims(x, (0, 1, 2)) is x and em.permute_dims(x, (-3, -2, -1)) is x
    for bad in ((True, 0, 1), (0, 1, 3), (0, 0, 1), (0, 1)):
        for _ in range(2):
            with pytest.raises(em.ExecmodeError):
                em.permute_dims(x, bad)
    np.testing.assert_array_equal(x.T.numpy(), a.T)


# --- reshape and friends ------------------------------------------------------------------

@st.composite
def reshape_targets(draw, shape):
    """A shape with the same size (maybe with one -1)."""
    size = math.prod(shape)
    dims = []
    rest = size
    while rest > 1 and len(dims) < 3:
        d = draw(st.sampled_from([f for f in range(1, rest + 1) if rest % f == 0]))
        dims.append(d)
        rest //= d
    if rest != 1 or size == 0:
        dims.append(rest)
    dims = draw(st.permutations(dims))
    if dims and draw(st.booleans()) and size:
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


@given(data=st.data(), dtype=dtypes(), shape=shapes(max_dims=4))
def test_reshape_matches_numpy(data, dtype, shape):
    a = data.draw(arrays(dtype, shape))
    target = data.draw(reshape_targets(shape))
    check_op(lambda x: em.reshape(x, target), lambda x: np.reshape(x, target), a)
    check_op(lambda x: x.reshape(target), lambda x: x.reshape(target), a)
    check_op(lambda x: x.reshape(*target), lambda x: x.reshape(target), a)


@given(data=st.data(), shape=shapes(max_dims=4))
def test_permute_dims_and_transpose_match_numpy(data, shape):
    a = data.draw(arrays(em.float32, shape))
    axes = tuple(data.draw(st.permutations(range(len(shape)))))
    check_op(lambda x: em.permute_dims(x, axes), lambda x: np.transpose(x, axes), a)
    check_op(lambda x: em.transpose(x, axes), lambda x: np.transpose(x, axes), a)
    check_op(lambda x: x.permute(axes), lambda x: np.transpose(x, axes), a)
    check_op(lambda x: x.transpose(), lambda x: x.transpose(), a)
    if len(shape) >= 2:
        check_op(lambda x: em.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1), a)


@given(data=st.data(), shape=shapes(max_dims=3))
def test_expand_dims_squeeze_flatten_match_numpy(data, shape):
    a = data.draw(arrays(em.int32, shape))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_op(lambda x: em.expand_dims(x, axis), lambda x: np.expand_dims(x, axis), a)
    check_op(lambda x: x.unsqueeze(axis), lambda x: np.expand_dims(x, axis), a)
    check_op(em.squeeze, np.squeeze, a)
    ones = tuple(i for i, d in enumerate(shape) if d == 1)
    check_op(lambda x: em.squeeze(x, ones), lambda x: np.squeeze(x, ones), a)
    check_op(em.flatten, lambda x: x.reshape(-1), a)
    if len(shape) >= 2:
        # flatten(start, end) joins the axes start..end (inclusive), as in PyTorch.
        check_op(lambda x: em.flatten(x, 1), lambda x: x.reshape(x.shape[0], -1), a)
        check_op(lambda x: x.flatten(0, 1), lambda x: x.reshape((-1,) + x.shape[2:]), a)


@given(data=st.data(), shape=shapes(max_dims=3), dtype=dtypes())
def test_broadcast_to_matches_numpy(data, shape, dtype):
    a = data.draw(arrays(dtype, shape))
    extra = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    target = extra + tuple(data.draw(st.integers(1, 3)) if d == 1 else d for d in shape)
    check_op(lambda x: em.broadcast_to(x, target), lambda x: np.broadcast_to(x, target), a)


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3), count=st.integers(1, 3),
       dtype=dtypes())
def test_concat_and_stack_match_numpy(data, shape, count, dtype):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(count):
        part_shape = list(shape)
        part_shape[axis] = data.draw(st.integers(0, 3))
        parts.append(data.draw(arrays(dtype, tuple(part_shape))))
    tensors = [em.tensor(p, dtype=p.dtype) for p in parts]
    assert_close(em.concat(tensors, axis=axis), np.concatenate(parts, axis=axis))
    same = [data.draw(arrays(dtype, shape)) for _ in range(count)]
    stack_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_close(em.stack([em.tensor(p, dtype=p.dtype) for p in same], axis=stack_axis),
                 np.stack(same, axis=stack_axis))


def test_concat_promotes_dtypes_like_numpy():
    a, b = np.zeros(2, np.int32), np.ones(3, np.float32)
    assert_close(em.concat([em.tensor(a, dtype=a.dtype), em.tensor(b)]),
                 np.concatenate([a, b]))


def test_copy_and_clone_do_not_share_memory():
    x = em.tensor([1.0, 2.0])
    for y in (em.copy(x), x.clone()):
        y[0] = 5.0
        assert x.tolist() == [1.0, 2.0]


def test_argwhere_and_nonzero_match_numpy():
    a = np.array([[0, 1, 0], [2, 0, 3]])
    check_op(em.argwhere, np.argwhere, a)
    for got, want in zip(em.nonzero(em.tensor(a)), np.nonzero(a)):
        assert_close(got, want)


def test_len_and_iteration():
    x = em.tensor(np.arange(6).reshape(3, 2))
    assert len(x) == 3
    rows = list(x)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(TypeError):
        len(em.tensor(1.0))
    with pytest.raises(TypeError):
        iter(em.tensor(1.0)).__next__()
