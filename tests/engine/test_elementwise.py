"""Elementwise functions against NumPy over random shapes, broadcasts and dtypes.

execmode's dtype rules are NumPy's (NEP 50: Python scalars are weak), with these
documented exceptions, which the references below spell out:

* float functions of bool inputs compute in float32 (NumPy would give float16, which
  execmode does not support); int inputs give float64, as in NumPy;
* ``reciprocal`` is a float function (NumPy's integer reciprocal truncates 1/2 to 0);
* ``round`` keeps integer dtypes, like ``np.round`` and the Array API;
* a result whose NumPy dtype execmode does not support (int8 from ``bool // bool``) is a
  DTypeError, as it is when the op is traced.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    arrays,
    assert_close,
    broadcastable_shapes,
    check_op,
    dtypes,
    exp_impl_doubled,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st

import execmode as em
from execmode.dtypes import SUPPORTED

_np_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf_reference(a):
    return _np_erf(a).astype(a.dtype)


# Functions whose result is a float: (execmode name, NumPy reference on a float input).
FLOAT_FUNCTIONS = {
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "erf": _erf_reference,
    "reciprocal": np.reciprocal,
}

# Functions that follow NumPy's dtype for every input dtype (or refuse it, as NumPy does).
PLAIN_FUNCTIONS = {
    "copy": np.copy,
    "negative": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "square": np.square,
    "floor": np.floor,
    "ceil": np.ceil,
    "logical_not": np.logical_not,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}

BINARY_FUNCTIONS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}


def float_input(a: np.ndarray) -> np.ndarray:
    """What a float function computes on: bool in float32, ints in float64."""
    if a.dtype == np.bool_:
        return a.astype(np.float32)
    if a.dtype.kind in "iu":
        return a.astype(np.float64)
    return a


def numpy_outcome(np_fn, *args):
    """NumPy's result, or the execmode error class NumPy's refusal must turn into."""
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(np_fn(*args))
    except TypeError:
        return em.DTypeError
    except (ValueError, ArithmeticError):
        return em.ExecmodeError
    if out.dtype not in SUPPORTED:
        return em.DTypeError
    return out


def check_against(em_fn, np_fn, *args):
    """check_op, or the error execmode must raise where NumPy refuses."""
    expected = numpy_outcome(np_fn, *args)
    if isinstance(expected, type):
        with pytest.raises(expected):
            em_fn(*(em.tensor(a, dtype=a.dtype) if isinstance(a, np.ndarray) else a
                    for a in args))
        return
    check_op(em_fn, lambda *_: expected, *args)


# --- unary ------------------------------------------------------------------------------

@pytest.mark.usefixtures("eager_path")  # Python and C operators (conftest.py)
@pytest.mark.parametrize("name", sorted(FLOAT_FUNCTIONS))
@given(data=st.data(), dtype=dtypes(), shape=shapes(min_side=0))
def test_float_function_matches_numpy(name, data, dtype, shape):
    a = data.draw(arrays(dtype, shape, specials=True))
    np_fn = FLOAT_FUNCTIONS[name]
    check_op(getattr(em, name), lambda x: np_fn(float_input(x)), a)


@pytest.mark.parametrize("name", sorted(PLAIN_FUNCTIONS))
@given(data=st.data(), dtype=dtypes(), shape=shapes(min_side=0))
def test_plain_unary_matches_numpy(name, data, dtype, shape):
    a = data.draw(arrays(dtype, shape, specials=True))
    check_against(getattr(em, name), PLAIN_FUNCTIONS[name], a)


@given(data=st.data(), dtype=dtypes(), shape=shapes())
def test_round_half_to_even_and_keeps_integer_dtypes(data, dtype, shape):
    a = data.draw(arrays(dtype, shape, specials=True))
    if dtype == em.bool:
        check_op(em.round, lambda x: np.round(x.astype(np.float32)), a)
    else:
        check_op(em.round, np.round, a)


def test_round_ties_go_to_even():
    x = em.tensor([0.5, 1.5, 2.5, -0.5, -1.5])
    assert em.round(x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]


def test_reciprocal_of_integers_is_a_float():
    out = em.reciprocal(em.tensor([1, 2, 4], dtype=em.int32))
    assert out.dtype == em.float64
    assert out.tolist() == [1.0, 0.5, 0.25]


def test_erf_known_values():
    x = em.tensor([0.0, 0.5, -1.0, math.inf, -math.inf, math.nan], dtype=em.float64)
    want = [0.0, 0.5204998778130465, -0.8427007929497149, 1.0, -1.0, math.nan]
    assert_close(em.erf(x), np.array(want))


# --- binary -----------------------------------------------------------------------------

def operand(data, dtype, shape, scalar_kind):
    """An array of ``dtype`` and ``shape``, or (scalar_kind set) a weak Python scalar."""
    if scalar_kind == "int":
        return data.draw(st.integers(-5, 5))
    if scalar_kind == "float":
        return data.draw(st.floats(-5, 5, allow_subnormal=False))
    if scalar_kind == "bool":
        return data.draw(st.booleans())
    return data.draw(arrays(dtype, shape, specials=True))


@pytest.mark.parametrize("name", sorted(BINARY_FUNCTIONS))
@given(data=st.data(), dtype_a=dtypes(), dtype_b=dtypes(),
       shape_pair=broadcastable_shapes(2), scalar=st.sampled_from([None, None, "int", "float",
                                                                   "bool"]),
       scalar_first=st.booleans())
def test_binary_matches_numpy(name, data, dtype_a, dtype_b, shape_pair, scalar, scalar_first):
    a = operand(data, dtype_a, shape_pair[0], scalar if scalar_first else None)
    b = operand(data, dtype_b, shape_pair[1], None if scalar_first else scalar)
    check_against(getattr(em, name), BINARY_FUNCTIONS[name], a, b)


@pytest.mark.usefixtures("eager_path")  # Python and C operators (conftest.py)
def test_weak_python_scalars_keep_the_tensor_dtype():
    x = em.ones(3, dtype=em.float32)
    assert (x * 0.5).dtype == em.float32
    assert (0.5 * x).dtype == em.float32
    assert (x + 1).dtype == em.float32
    i = em.ones(3, dtype=em.int32)
    assert (i + 1).dtype == em.int32
    assert (i * 0.5).dtype == em.float64  # an int array meets a float: NumPy's float64
    b = em.ones(3, dtype=em.bool)
    assert (b + 1).dtype == em.int64
    assert (b * 2.5).dtype == em.float64


def test_two_python_scalars_make_default_dtype_tensors():
    # em.tensor of a Python float is float32 (PyTorch's default), of an int int64.
    assert em.add(2, 3).dtype == em.int64 and em.add(2, 3).item() == 5
    assert em.add(2.5, 1).dtype == em.float32 and em.add(2.5, 1).item() == 3.5


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "power"])
def test_bool_results_numpy_gives_as_int8_are_int8(name):
    # refused while execmode had no int8; now NumPy's answer, dtype and values
    b = np.array([True, False, True])
    c = np.array([True, True, True])
    got = getattr(em, name)(em.tensor(b), em.tensor(c))
    want = getattr(np, name)(b, c)
    assert got.dtype == want.dtype == em.int8
    np.testing.assert_array_equal(got.numpy(), want)


def test_integer_to_negative_integer_power_is_explained():
    with pytest.raises(em.ExecmodeError, match="negative integer powers"):
        em.tensor([1, 2, 3]) ** -1


def test_integer_division_by_zero_gives_numpys_values():
    with np.errstate(all="ignore"):
        want = np.array([1, 2]) // 0
    assert (em.tensor([1, 2]) // 0).tolist() == want.tolist()


@pytest.mark.usefixtures("eager_path")  # Python and C operators (conftest.py)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_division_by_zero_and_nan_propagation(dtype):
    x = em.tensor([1.0, -1.0, 0.0, math.nan], dtype=dtype)
    assert_close(x / 0.0, np.array([math.inf, -math.inf, math.nan, math.nan], dtype=dtype))
    assert_close(em.maximum(x, 0.0), np.array([1.0, 0.0, 0.0, math.nan], dtype=dtype))
    assert_close(em.minimum(x, 0.0), np.array([0.0, -1.0, 0.0, math.nan], dtype=dtype))


# --- where, clip, astype -----------------------------------------------------------------

@given(data=st.data(), shapes3=broadcastable_shapes(3), dtype_a=dtypes(),
       dtype_b=dtypes(), scalar_b=st.booleans())
def test_where_matches_numpy(data, shapes3, dtype_a, dtype_b, scalar_b):
    cond = data.draw(arrays(em.bool, shapes3[0]))
    a = data.draw(arrays(dtype_a, shapes3[1], specials=True))
    b = data.draw(st.floats(-3, 3)) if scalar_b else data.draw(
        arrays(dtype_b, shapes3[2], specials=True))
    check_op(em.where, np.where, cond, a, b)


@given(data=st.data(), dtype=dtypes((em.float32, em.float64, em.int32, em.int64)),
       shape=shapes(), bounds=st.sampled_from([(-1, 2), (0.5, None), (None, 1.5), (3, 1)]))
def test_clip_matches_numpy(data, dtype, shape, bounds):
    a = data.draw(arrays(dtype, shape, specials=True))
    low, high = bounds
    # np.clip is max-then-min, so low > high gives high everywhere, as execmode does.
    check_op(lambda x: em.clip(x, low, high), lambda x: np.clip(x, low, high), a)


@pytest.mark.parametrize("target", ALL_DTYPES)
@given(data=st.data(), dtype=dtypes(), shape=shapes(min_side=0))
def test_astype_matches_numpy(target, data, dtype, shape):
    # No NaN/Inf: converting them to integers is undefined behaviour in C and NumPy.
    a = data.draw(arrays(dtype, shape, low=-100, high=100))
    out = check_op(lambda x: em.astype(x, target), lambda x: x.astype(target), a)
    assert check_op(lambda x: x.astype(target), lambda x: x.astype(target), a).dtype == out.dtype


def test_astype_accepts_dtype_spellings():
    x = em.tensor([1.7, -1.7])
    assert x.astype("int32").dtype == em.int32
    assert x.astype(np.float64).dtype == em.float64
    assert x.astype(int).tolist() == [1, -1]  # truncates toward zero, as NumPy
    assert x.astype(bool).dtype == em.bool
    assert x.to(em.float64).dtype == em.float64


def test_astype_to_an_unsupported_dtype_is_refused():
    with pytest.raises(TypeError, match="float16"):
        em.tensor([1.0]).astype(np.float16)


def test_unary_functions_take_the_fast_path_only_when_plain():
    # dispatch.make_unary_function: with no trace and no debugger, em.exp(x) calls the
    # op's implementation at once (listeners that want events after ops get the op after
    # it); the results, dtypes, autograd and errors are apply()'s.
    from execmode import instrument

    x = em.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = em.exp(x)
    assert y.dtype == em.float32 and y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.exp(x.numpy()))
    assert em.exp(em.tensor([1, 2])).dtype == em.float64          # ints compute in float64
    assert em.exp(em.tensor([True, False])).dtype == em.float32    # bools in float32
    assert em.exp(0.0).item() == 1.0                               # a number: a tensor
    with em.no_grad():
        assert not em.tanh(x).requires_grad
    with pytest.raises(em.DTypeError, match=r"negative\(bool\[1\]@cpu\)"):
        em.negative(em.tensor([True]))                             # the general path explains

    class Seen:
        def __init__(self):
            self.ops = []

        def on_op(self, event, tensor):
            self.ops.append(event.op)

    four = em.tensor([4.0])
    with instrument.listening(Seen()) as seen:
        em.exp(x)
        em.sqrt(four)
    assert seen.ops == ["exp", "sqrt"]                             # listeners see every op


def test_a_float_function_of_floats_calls_its_ufunc_unless_the_impl_was_swapped():
    # The fast path calls np.exp on a float array directly (the impl only casts ints and
    # bools); an impl swapped after import (the fuzzer's rounding oracle nudges eager's
    # transcendental results that way) is still what runs.
    data = np.linspace(-3, 3, 7)
    for dtype in (np.float32, np.float64):
        x = em.tensor(data.astype(dtype))
        np.testing.assert_array_equal(em.exp(x).numpy(), np.exp(x.numpy()))
        np.testing.assert_array_equal(em.log1p(x * x).numpy(), np.log1p((x * x).numpy()))
    x = em.tensor(data.astype(np.float32))
    with exp_impl_doubled():
        np.testing.assert_array_equal(em.exp(x).numpy(), 2 * np.exp(x.numpy()))
    np.testing.assert_array_equal(em.exp(x).numpy(), np.exp(x.numpy()))


def test_em_add_with_a_tensor_first_is_the_operator():
    """em.add/subtract/multiply/divide(a, b) with a tensor first call Tensor's operator (its
    fast path, the C one once installed): the same values, dtypes, gradients, events and
    errors as ``a + b`` and as the general path."""
    import sys

    from execmode import instrument

    a = em.tensor(np.array([1.5, -2.0, 3.0], np.float32), requires_grad=True)
    b = em.tensor(np.array([0.5, 4.0, -1.0], np.float32))
    for fn, symbol in ((em.add, np.add), (em.subtract, np.subtract),
                       (em.multiply, np.multiply), (em.divide, np.divide)):
        for other in (b, 2, 0.25):
            got = fn(a, other)
            want = symbol(a.numpy(), other.numpy() if isinstance(other, em.Tensor) else other)
            assert got.dtype == em.float32 and got.requires_grad
            np.testing.assert_array_equal(got.numpy(), want)
    em.multiply(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), b.numpy())
    assert em.add(2, b).numpy().tolist() == [2.5, 6.0, 1.0]        # a number first: apply
    with pytest.raises(em.ShapeError):
        em.add(b, em.ones(2))

    class Seen:
        def __init__(self):
            self.events = []

        def on_op(self, event, tensor):
            self.events.append(event)

    with instrument.listening(Seen()) as seen:
        line = sys._getframe().f_lineno + 1
        em.add(b, b)
    (event,) = seen.events
    assert event.op == "add" and event.location.lineno == line
    jitted = em.jit(lambda x, y: em.multiply(em.add(x, y), 2.0))
    np.testing.assert_array_equal(jitted(b, b).numpy(), (b.numpy() + b.numpy()) * 2)
