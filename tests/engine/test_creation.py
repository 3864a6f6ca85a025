"""Creation functions and the seeded random generator."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ALL_DTYPES, assert_close

import execmode as em


def test_tensor_default_dtypes():
    assert em.tensor([1.0, 2.0]).dtype == em.float32  # Python floats: float32, as PyTorch
    assert em.tensor([1, 2]).dtype == em.int64
    assert em.tensor([True]).dtype == em.bool
    assert em.tensor(3.5).shape == ()
    assert em.tensor([[1, 2], [3, 4]]).shape == (2, 2)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_keeps_the_dtype_of_numpy_data_and_tensors(dtype):
    a = np.arange(4).astype(dtype)
    assert em.tensor(a).dtype == dtype
    assert em.tensor(em.tensor(a)).dtype == dtype
    assert em.tensor(a[0]).dtype == dtype  # a NumPy scalar


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_with_dtype_copies_the_data(dtype):
    a = np.array([0, 1, 2])
    x = em.tensor(a, dtype=dtype)
    a[0] = 9
    assert_close(x, np.array([0, 1, 2]).astype(dtype))


def test_asarray_shares_a_tensor_and_converts_on_request():
    x = em.tensor([1.0, 2.0])
    assert em.asarray(x) is x
    assert em.asarray(x, dtype=em.float64).dtype == em.float64
    assert_close(em.asarray([1, 2]), np.array([1, 2]))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_filled_tensors(dtype):
    assert_close(em.zeros(2, 3, dtype=dtype), np.zeros((2, 3), dtype))
    assert_close(em.zeros((2, 3), dtype=dtype), np.zeros((2, 3), dtype))
    assert_close(em.ones([4], dtype=dtype), np.ones(4, dtype))
    assert_close(em.full((2, 2), 1, dtype=dtype), np.full((2, 2), 1, dtype))
    like = em.tensor(np.zeros((3, 1), dtype))
    assert_close(em.zeros_like(like), np.zeros((3, 1), dtype))
    assert_close(em.ones_like(like), np.ones((3, 1), dtype))
    assert_close(em.full_like(like, 1), np.full((3, 1), 1, dtype))
    assert_close(em.ones_like(like, dtype=em.float64), np.ones((3, 1)))


def test_default_dtypes_of_filled_tensors():
    assert em.zeros(2).dtype == em.float32
    assert em.ones(()).shape == ()
    assert em.full((2,), 2.5).dtype == em.float32
    assert em.full((2,), 7).dtype == em.int64
    assert em.full((2,), True).dtype == em.bool


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}),
    ((2, 10, 3), {}),
    ((10, 2, -2), {}),
    ((0.0, 1.0, 0.25), {}),
    ((1, 4), {"dtype": em.float64}),
    ((3,), {"dtype": em.int32}),
])
def test_arange_matches_numpy(args, kwargs):
    out = em.arange(*args, **kwargs)
    want = np.arange(*args, dtype=kwargs.get("dtype"))
    if "dtype" not in kwargs and want.dtype == np.float64:
        want = want.astype(np.float32)  # float arguments: float32, execmode's default float
    assert_close(out, want)


@pytest.mark.parametrize("num, endpoint", [(5, True), (4, False), (1, True), (0, True)])
def test_linspace_matches_numpy(num, endpoint):
    assert_close(em.linspace(-1, 2, num, endpoint=endpoint),
                 np.linspace(-1, 2, num, endpoint=endpoint, dtype=np.float32))
    assert_close(em.linspace(0, 1, num, endpoint=endpoint, dtype=em.float64),
                 np.linspace(0, 1, num, endpoint=endpoint))


@pytest.mark.parametrize("n, m, k", [(3, None, 0), (2, 4, 1), (4, 2, -1)])
def test_eye_matches_numpy(n, m, k):
    assert_close(em.eye(n, m, k), np.eye(n, m, k, dtype=np.float32))
    assert_close(em.eye(n, m, k, dtype=em.int32), np.eye(n, m, k, dtype=np.int32))


def test_requires_grad_at_creation():
    assert em.zeros(2, requires_grad=True).requires_grad
    assert em.tensor([1.0], requires_grad=True).is_leaf
    with pytest.raises(em.ArgumentError, match="floating"):
        em.tensor([1, 2], requires_grad=True)


# --- random -----------------------------------------------------------------------------

def _draws():
    return [
        em.random.normal((3, 4)).numpy(),
        em.random.uniform((5,), low=-2.0, high=3.0).numpy(),
        em.random.randint(0, 10, (6,)).numpy(),
        em.randn(2, 2).numpy(),
    ]


def test_same_seed_gives_the_same_numbers():
    em.random.seed(123)
    first = _draws()
    em.random.seed(123)
    second = _draws()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    em.random.seed(124)
    assert not np.array_equal(_draws()[0], first[0])


def test_random_shapes_dtypes_and_ranges():
    em.random.seed(0)
    x = em.random.normal((1000,), mean=2.0, std=0.5)
    assert x.shape == (1000,) and x.dtype == em.float32
    assert abs(x.numpy().mean() - 2.0) < 0.1 and abs(x.numpy().std() - 0.5) < 0.1
    u = em.random.uniform((1000,), -1.0, 1.0, dtype=em.float64)
    assert u.dtype == em.float64 and -1.0 <= u.numpy().min() and u.numpy().max() < 1.0
    r = em.random.randint(3, 7, (1000,))
    assert r.dtype == em.int64 and set(r.tolist()) == {3, 4, 5, 6}
    assert em.random.randint(0, 2, (4,), dtype=em.int32).dtype == em.int32
    assert em.randn(2, 3).shape == (2, 3) and em.randn(2, 3, dtype=em.float64).dtype == em.float64
    assert em.randn(2, requires_grad=True).requires_grad
