"""The Tensor class: operators (and their reflections), metadata, conversions."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from helpers import arrays, assert_close, broadcastable_shapes, check_op, dtypes
from hypothesis import given
from hypothesis import strategies as st

import execmode as em

ARITHMETIC = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}
COMPARISONS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
NUMERIC = (em.float32, em.float64, em.int32, em.int64)


@pytest.mark.usefixtures("eager_path")  # Python and C operators (conftest.py)
@pytest.mark.parametrize("symbol", sorted({**ARITHMETIC, **COMPARISONS}))
@given(data=st.data(), shape_pair=broadcastable_shapes(2), dtype_a=dtypes(NUMERIC),
       dtype_b=dtypes(NUMERIC), scalar=st.sampled_from([None, 2, 0.5, -3, 1.5]))
def test_operators_match_numpy(symbol, data, shape_pair, dtype_a, dtype_b, scalar):
    fn = {**ARITHMETIC, **COMPARISONS}[symbol]
    # Positive integers keep ** away from NumPy's refusal of negative integer powers.
    a = data.draw(arrays(dtype_a, shape_pair[0], low=1, high=5))
    b = data.draw(arrays(dtype_b, shape_pair[1], low=1, high=5))
    check_op(fn, fn, a, b)
    if scalar is None:
        return
    if not (symbol == "**" and scalar == -3 and dtype_a.kind == "i"):
        check_op(lambda x: fn(x, scalar), lambda x: fn(x, scalar), a)  # x op 2
    check_op(lambda x: fn(scalar, x), lambda x: fn(scalar, x), a)  # 2 op x: reflected


@given(data=st.data(), shape=st.sampled_from([(), (3,), (2, 3)]), dtype=dtypes(NUMERIC))
def test_unary_operators_match_numpy(data, shape, dtype):
    a = data.draw(arrays(dtype, shape, specials=True))
    check_op(operator.neg, operator.neg, a)
    check_op(abs, np.abs, a)
    check_op(lambda x: x.abs(), np.abs, a)
    check_op(operator.pos, operator.pos, a)


def test_matmul_operator_and_reflection():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), dtype=np.float32)
    check_op(operator.matmul, operator.matmul, a, b)
    # np.ndarray @ Tensor: NumPy defers to Tensor.__rmatmul__, which refuses raw arrays.
    with pytest.raises(em.ArgumentError):
        a @ em.tensor(b)


def test_logical_operators_on_bool_tensors():
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    check_op(operator.and_, np.logical_and, p, q)
    check_op(operator.or_, np.logical_or, p, q)
    check_op(operator.invert, np.logical_not, p)
    # on ints they are bitwise (the Array API's, NumPy's and PyTorch's); floats have none
    assert (~em.tensor([1, 2])).tolist() == [-2, -3]
    assert (em.tensor([6]) & 3).tolist() == [2] and (em.tensor([6]) | 1).tolist() == [7]
    with pytest.raises(em.DTypeError, match="bitwise_invert"):
        ~em.tensor([1.0])


@pytest.mark.usefixtures("eager_path")  # Python and C operators (conftest.py)
def test_numpy_scalars_on_the_left_defer_to_the_tensor():
    x = em.tensor([1.0, 2.0])
    out = np.float32(2) * x
    assert isinstance(out, em.Tensor) and out.tolist() == [2.0, 4.0]


@pytest.mark.usefixtures("eager_path")  # Python and C operators (conftest.py)
def test_in_place_operators_write_into_the_same_tensor():
    x = em.tensor([1.0, 2.0])
    alias = x
    x += 1
    x *= 2
    x -= 1
    x /= 2
    assert alias is x
    assert alias.tolist() == [1.5, 2.5]


def test_metadata():
    x = em.zeros((2, 3, 4), dtype=em.float64)
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24
    assert x.dtype == em.float64 and x.device == "cpu" and str(x.device) == "cpu"
    assert not x.requires_grad and x.grad is None and x.is_leaf


def test_conversions():
    x = em.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert isinstance(x.numpy(), np.ndarray) and x.numpy().dtype == np.float32
    assert_close(np.asarray(x), np.array([[1.5, 2.0], [3.0, 4.0]], dtype=np.float32))
    one = em.tensor([[7]])
    assert one.item() == 7 and isinstance(one.item(), int)
    assert float(em.tensor(2.5)) == 2.5 and int(em.tensor(3)) == 3
    assert bool(em.tensor([True])) is True
    assert [10, 20, 30][em.tensor(1)] == 20  # __index__
    assert x.to("cpu") is x  # already there: no copy
    assert x.cpu().tolist() == x.tolist()
    assert f"{em.tensor(0.25):.2f}" == "0.25"


def test_repr_shows_values_and_non_default_attributes():
    assert repr(em.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert "dtype=float64" in repr(em.tensor([1.0], dtype=em.float64))
    assert "requires_grad=True" in repr(em.tensor([1.0], requires_grad=True))
    assert "grad_fn=multiply" in repr(em.tensor([1.0], requires_grad=True) * 2)


def test_truth_value_of_many_elements_is_ambiguous():
    with pytest.raises(em.ArgumentError, match="ambiguous"):
        bool(em.ones(2))


def test_tensors_hash_by_identity_and_compare_elementwise():
    x = em.tensor([1, 2])
    assert len({x, x}) == 1
    assert (x == em.tensor([1, 3])).tolist() == [True, False]
