"""Array API functions that are composites (issue 36): empty, empty_like, moveaxis and
vecdot, against NumPy, with gradients, under em.jit, and their errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, check_op

import execmode as em

X = np.random.default_rng(0).standard_normal((2, 3, 4))


def test_empty_and_empty_like_shape_dtype():
    assert em.empty((2, 3)).shape == (2, 3) and em.empty((2, 3)).dtype == em.float32
    assert em.empty(4, dtype=em.int32).dtype == em.int32
    like = em.empty_like(em.tensor(X, dtype=em.float64))
    assert (like.shape, like.dtype) == ((2, 3, 4), em.float64)
    assert em.empty_like(like, dtype=em.int64).dtype == em.int64


@pytest.mark.parametrize("source, destination", [
    (0, -1), (-1, 0), (1, 1), ((0, 1), (2, 0)), ((0, 1, 2), (2, 1, 0)), ([2], [0]),
])
def test_moveaxis_matches_numpy(source, destination):
    check_op(lambda x: em.moveaxis(x, source, destination),
             lambda x: np.moveaxis(x, source, destination), X)


def test_moveaxis_errors():
    x = em.tensor(X)
    with pytest.raises(em.ShapeError, match="moveaxis"):
        em.moveaxis(x, (0, 1), 0)
    with pytest.raises(em.ShapeError, match="moveaxis"):
        em.moveaxis(x, (0, 0), (1, 2))
    with pytest.raises(em.ShapeError, match="moveaxis"):
        em.moveaxis(x, 3, 0)
    with pytest.raises(em.ArgumentError, match="moveaxis"):
        em.moveaxis(x, "0", 0)


@pytest.mark.parametrize("shape1, shape2, axis", [
    ((2, 3, 4), (4,), -1), ((2, 3, 4), (3, 1), -2), ((3, 4), (2, 3, 4), -1),
    ((2, 3, 4), (2, 3, 4), 0), ((5,), (5,), 0),
])
def test_vecdot_matches_numpy(shape1, shape2, axis):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(shape1), rng.standard_normal(shape2)
    b = np.broadcast_to(b, np.broadcast_shapes(a.shape, b.shape)) if axis >= 0 else b
    check_op(lambda x, y: em.vecdot(x, y, axis=axis),
             lambda x, y: np.sum(x * y, axis=axis), a, np.ascontiguousarray(b))


def test_vecdot_refuses_mismatched_axes():
    with pytest.raises(em.ShapeError, match="vecdot"):
        em.vecdot(em.ones((2, 3)), em.ones((2, 1)))
    with pytest.raises(em.ArgumentError, match="vecdot"):
        em.vecdot(em.ones((3,)), em.ones((3,)), axis=None)


def test_gradients_of_moveaxis_and_vecdot():
    check_grad(lambda x: em.moveaxis(x, 0, -1), X)
    check_grad(lambda x, y: em.vecdot(x, y), X, X[0, 0])


def test_jit_matches_eager():
    def f(x, y):
        return em.vecdot(em.moveaxis(x, 0, -1), y, axis=-2) + em.empty_like(y)[0]

    x = em.tensor(X, dtype=em.float32)  # moved to (3, 4, 2): axis -2 has y's 4
    y = em.tensor(np.random.default_rng(2).standard_normal((4, 2)), dtype=em.float32)
    assert_close(em.jit(f)(x, y), f(x, y).numpy())


@pytest.mark.parametrize("shapes", [((2, 1), (3,)), ((), (4, 1, 2)), ((0, 3), (1, 3)), ()])
def test_broadcast_shapes_and_arrays_match_numpy(shapes):
    assert em.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    arrays = [np.arange(int(np.prod(s)), dtype=np.float32).reshape(s) for s in shapes]
    got = em.broadcast_arrays(*(em.tensor(a, dtype=em.float32) for a in arrays))
    for g, want in zip(got, np.broadcast_arrays(*arrays)):
        assert_close(g, want)


def test_broadcast_errors():
    with pytest.raises(em.ShapeError, match="broadcast_shapes"):
        em.broadcast_shapes((2,), (3,))
    with pytest.raises(em.ArgumentError, match="broadcast_shapes"):
        em.broadcast_shapes((2, -1))
    with pytest.raises(em.ShapeError, match="broadcast_arrays"):
        em.broadcast_arrays(em.ones((2,)), em.ones((3,)))
