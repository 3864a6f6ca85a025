"""Tensor's + - * / and the unary functions in C (codegen/eager_operators.py): NumPy's bits
for the calls they take, the Python operator's answer (and side effects) for every call
they hand over. Their events: test_eager_c_events.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from helpers import exp_impl_doubled
from hypothesis import given
from hypothesis import strategies as st

import execmode as em
from execmode import dispatch, instrument
from execmode._tensor import Tensor
from execmode.codegen import eager_operators

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide}
NAMES = eager_operators.operator_names()
# The C operators on Tensor for this module (tests/codegen/conftest.py).
pytestmark = pytest.mark.usefixtures("c_operators")


def _python(name):
    return eager_operators.python_operator(Tensor.__dict__[name])


def _is_c(name) -> bool:
    return type(Tensor.__dict__[name]).__name__ == "Operator"


def _bits(array):
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _same(c_result, py_result):
    """Identical results: class, dtype, shape, bits, and no autograd state."""
    assert type(c_result) is type(py_result) is Tensor
    c, p = c_result._data, py_result._data
    assert (c.dtype, c.shape) == (p.dtype, p.shape)
    assert np.array_equal(_bits(c), _bits(p))
    assert c_result.requires_grad is py_result.requires_grad


def _both(dunder, left, right):
    """``left <op> right`` through the C operator and through the Python one."""
    name = f"__{dunder}__"
    c = getattr(Tensor, name)(left, right)
    return c, _python(name)(left, right)


def _reflected(dunder, scalar, tensor):
    name = f"__r{dunder}__"
    return getattr(Tensor, name)(tensor, scalar), _python(name)(tensor, scalar)


SPECIAL = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-40, 3.4e38, 7.0])


@pytest.mark.parametrize("dunder", sorted(UFUNCS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_operator_gives_numpys_bits(dunder, dtype):
    assert _is_c(f"__{dunder}__") and _is_c(f"__r{dunder}__")
    a = SPECIAL.astype(dtype)
    b = np.roll(SPECIAL, 3).astype(dtype)
    ufunc = UFUNCS[dunder]
    cases = [  # (left, right, what NumPy computes)
        (em.tensor(a), em.tensor(b), ufunc(a, b)),
        (em.tensor(a.reshape(2, 5)), em.tensor(b[:1]), ufunc(a.reshape(2, 5), b[:1])),
        (em.tensor(a[:1]), em.tensor(b.reshape(5, 2)), ufunc(a[:1], b.reshape(5, 2))),
        (em.tensor(a[3]), em.tensor(b[4]), np.asarray(ufunc(a[3], b[4]))),  # 0-d
        (em.tensor(a), 0.1, ufunc(a, 0.1)),
        (em.tensor(a), -3, ufunc(a, -3)),
        (em.tensor(a), 0, ufunc(a, 0)),
        (em.tensor(a[:0]), em.tensor(b[:0]), ufunc(a[:0], b[:0])),
    ]
    for left, right, expected in cases:
        c, p = _both(dunder, left, right)
        _same(c, p)
        assert c._data.dtype == expected.dtype
        assert np.array_equal(_bits(c._data), _bits(expected))
    for scalar in (0.1, 2, -7.5):
        c, p = _reflected(dunder, scalar, em.tensor(a))
        _same(c, p)
        assert np.array_equal(_bits(c._data), _bits(ufunc(scalar, a)))


_floats = st.floats(allow_nan=True, allow_infinity=True, width=32)


@given(st.sampled_from(sorted(UFUNCS)), st.sampled_from([np.float32, np.float64]),
       st.lists(_floats, min_size=1, max_size=40), st.data())
def test_any_values_and_shapes_it_takes_match_numpy(dunder, dtype, values, data):
    a = np.array(values, dtype=dtype)
    kind = data.draw(st.sampled_from(["same", "one", "float", "int"]))
    if kind == "same":
        other = np.array(data.draw(st.lists(_floats, min_size=len(a), max_size=len(a))), dtype)
        right, expected = em.tensor(other), UFUNCS[dunder](a, other)
    elif kind == "one":
        other = np.array([data.draw(_floats)], dtype)
        right, expected = em.tensor(other), UFUNCS[dunder](a, other)
    elif kind == "float":
        right = data.draw(st.floats(allow_nan=True, allow_infinity=True))
        expected = UFUNCS[dunder](a, right)
    else:
        right = data.draw(st.integers(-(1 << 30), 1 << 30))
        expected = UFUNCS[dunder](a, right)
    c, p = _both(dunder, em.tensor(a), right)
    _same(c, p)
    assert np.array_equal(_bits(c._data), _bits(expected))


def _cases_handed_over():
    f32 = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    return {
        "int dtype": (em.tensor(np.arange(1, 5)), em.tensor(np.arange(1, 5))),
        "float16": (em.tensor(f32.astype(np.float16)), 2.0),
        "mixed dtypes": (em.tensor(f32), em.tensor(f32.astype(np.float64))),
        "broadcast": (em.tensor(f32[:, :1]), em.tensor(f32[:1, :])),
        "a view": (em.tensor(f32).T, em.tensor(f32.T.copy())),
        "a huge int": (em.tensor(f32), 1 << 70),
        "an int float32 rounds": (em.tensor(f32), (1 << 24) + 1),
        "a bool": (em.tensor(f32), True),
        "a NumPy scalar": (em.tensor(f32), np.float64(0.5)),
    }


@pytest.mark.parametrize("dunder", sorted(UFUNCS))
@pytest.mark.parametrize("case", sorted(_cases_handed_over()))
def test_calls_it_does_not_take_get_the_python_operators_answer(dunder, case):
    left, right = _cases_handed_over()[case]
    c, p = _both(dunder, left, right)
    _same(c, p)


def test_errors_are_the_python_operators():
    a, b = em.tensor(np.ones((2, 3), np.float32)), em.tensor(np.ones((4, 5), np.float32))
    messages = []
    for call in (Tensor.__add__, _python("__add__")):
        with pytest.raises(em.ExecmodeError) as info:
            call(a, b)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "add" in messages[0]
    for other in ("text", np.ones(3, np.float32)):
        with pytest.raises(em.ExecmodeError, match="expected a Tensor or a Python number"):
            a + other


def test_autograd_listeners_and_traces_take_the_python_path():
    x = em.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    y = (x * 3.0 + x) / 2.0
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full(2, 2.0, np.float32))

    events = []

    class Listener:
        def on_op(self, event, output):
            events.append(event.op)

    a = em.tensor(np.ones(3, np.float32))
    with instrument.listening(Listener()):
        a + a
        2.0 * a
    assert events == ["add", "multiply"]

    jitted = em.jit(lambda p, q: p * q + 1.0)
    assert np.array_equal(jitted(a, a).numpy(), np.full(3, 2.0, np.float32))
    b = em.tensor(np.full(3, 3.0, np.float32))  # a replay: the trace recorded the ops
    assert np.array_equal(jitted(b, b).numpy(), np.full(3, 10.0, np.float32))


# Called directly, as the tests below do, both give the values; an event's line would be
# one frame off (they count their frames from the em.<name> function that calls them).
def _c_unary(name):
    return dispatch.UNARY_FUNCTIONS[name][0]


def _python_unary(name):
    return dispatch.UNARY_FUNCTIONS[name][1]


# The unary functions whose ufunc has float32 -> float32 and float64 -> float64 loops.
C_UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "exp",
           "expm1", "floor", "log", "log10", "log1p", "log2", "negative", "positive",
           "reciprocal", "sign", "sin", "sqrt", "square", "tan", "tanh"]


def test_the_unary_functions_with_a_float_loop_have_c_versions():
    have = {name for name, entry in dispatch.UNARY_FUNCTIONS.items() if entry[0] is not None}
    assert have == set(C_UNARY)
    # No one-operand ufunc (copy, round, erf) or no float -> float loop (isnan): Python.
    assert {"copy", "round", "erf", "isnan", "logical_not"} <= set(dispatch.UNARY_FUNCTIONS)
    assert repr(_c_unary("exp")) == "<C function exp>"


@pytest.mark.parametrize("name", C_UNARY)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_unary_function_gives_the_python_functions_bits(name, dtype):
    rng = np.random.default_rng(7)
    values = np.concatenate([SPECIAL, rng.standard_normal(60) * 4]).astype(dtype)
    for data in (values, values.reshape(7, 1, 10), values[:1].reshape(()), values[:0]):
        x = em.tensor(data)
        c, p = _c_unary(name)(x), _python_unary(name)(x)
        _same(c, p)
        assert c is not x and not np.shares_memory(c._data, x._data)


def test_calls_the_c_unary_functions_do_not_take_get_the_python_answer():
    """Ints (the impl's cast), a view that is not contiguous, autograd, a swapped impl
    and a number: the Python body's answers, tape and errors."""
    exp = _c_unary("exp")
    ints = em.tensor(np.arange(4))
    assert exp(ints).dtype == em.float64
    _same(exp(ints), _python_unary("exp")(ints))
    wide = em.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert not wide.T._data.flags.c_contiguous
    _same(exp(wide.T), _python_unary("exp")(wide.T))
    w = em.tensor(np.array([0.5, 1.0], np.float32), requires_grad=True)
    y = exp(w)
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.exp(w.numpy()))
    with em.no_grad():
        z = exp(w)  # the C path: no tape under no_grad
    assert not z.requires_grad and z.grad_fn is None
    with exp_impl_doubled():
        np.testing.assert_array_equal(em.exp(wide).numpy(), 2 * np.exp(wide.numpy()))
    assert em.exp(0.0).item() == 1.0
    with pytest.raises(em.DTypeError, match=r"negative\(bool\[1\]@cpu\)"):
        em.negative(em.tensor([True]))


def test_installed_while_an_impl_is_swapped_the_c_version_keeps_the_registered_one():
    """The operators get hot wherever the countdown ends, inside the fuzzer's rounding
    oracle too (it swaps op.impl): the C version compares against the impl the op was
    registered with, so the swapped impl runs while it is in place and C after."""
    x = em.tensor(np.linspace(-2, 2, 5, dtype=np.float32))
    with exp_impl_doubled() as original:
        assert eager_operators.install(Tensor, native=True)
        np.testing.assert_array_equal(em.exp(x).numpy(), 2 * np.exp(x.numpy()))
    assert _c_unary("exp").impl is original
    np.testing.assert_array_equal(em.exp(x).numpy(), np.exp(x.numpy()))


def test_the_unary_functions_become_c_when_hot_without_any_operator(tmp_path):
    """A script calling em.exp in a loop, and no operator, gets the C versions too."""
    script = (
        "import numpy as np\n"
        "import execmode as em\n"
        "from execmode import dispatch\n"
        "x = em.tensor(np.ones(3, np.float32))\n"
        "for _ in range(dispatch.HOT_CALLS + 1):\n"
        "    em.exp(x)\n"
        "print(dispatch.UNARY_FUNCTIONS['exp'][0] is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_the_output_is_a_fresh_tensor_of_its_own():
    data = np.ones(4, np.float32)
    a = em.tensor(data)
    refs = sys.getrefcount(a._data)
    for _ in range(1000):
        out = a + a
    after = sys.getrefcount(a._data)
    assert after == refs  # nothing leaked or kept
    assert not np.shares_memory(out._data, a._data)
    assert out._data.flags.owndata and out._data.flags.writeable
    assert out.grad_fn is None and not out.requires_grad
    out._data[0] = 5.0
    assert a.numpy()[0] == 1.0


def test_under_no_grad_tensors_that_require_grad_are_taken_without_a_tape():
    w = em.nn.Parameter(em.tensor(np.full(3, 2.0, np.float32)))
    x = em.tensor(np.arange(3, dtype=np.float32))
    calls = []
    real = eager_operators.python_operator(Tensor.__dict__["__mul__"])
    with em.no_grad():
        c, p = _both("mul", x, w)
        _same(c, p)
        assert c.grad_fn is None and not c.requires_grad
        Tensor.__mul__ = _spy(real, calls)
        try:
            x * w
        finally:
            eager_operators.install(Tensor, native=True)
    assert calls == []  # the C operator took it
    y = x * w  # grad mode on again: the Python operator records it
    assert y.requires_grad and y.grad_fn is not None


def _spy(python_operator, calls):
    """A C ``__mul__`` whose Python fallback notes each call it is handed."""
    def noted(a, b):
        calls.append((a, b))
        return python_operator(a, b)
    noted.__wrapped__ = python_operator  # install() finds the real one under it
    ext = eager_operators.load_extension()
    return ext.Operator(noted, "multiply", np.multiply, Tensor, vars(dispatch), False)


def test_a_parameter_on_the_left_without_grad_is_taken():
    w = em.nn.Parameter(em.tensor(np.full(3, 2.0, np.float32)))
    w.requires_grad = False
    c, p = _both("mul", w, 4.0)
    _same(c, p)


def test_no_floating_point_warning_reaches_the_user():
    a = em.tensor(np.array([1.0, 0.0, 3e38], np.float32))
    with np.errstate(all="warn"), warnings.catch_warnings():
        warnings.simplefilter("error")
        out = (a / 0.0).numpy(), (a * 10.0).numpy()
    assert np.isinf(out[0][0]) and np.isnan(out[0][1]) and np.isinf(out[1][2])


def test_large_operands_run_with_the_gil_released_from_threads():
    a = em.tensor(np.arange(100_000, dtype=np.float64))
    results = {}

    def work(k):
        results[k] = [(a * float(k) + a).numpy()[-1] for _ in range(50)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: [99_999.0 * (k + 1)] * 50 for k in range(4)}


def test_the_descriptor_binds_and_describes_itself():
    a = em.tensor(np.ones(2, np.float32))
    assert Tensor.__add__.__name__ == "__add__"
    assert Tensor.__radd__.__qualname__ == "Tensor.__radd__"
    assert "Tensor.__mul__" in repr(Tensor.__mul__)
    assert np.array_equal(a.__add__(a).numpy(), [2.0, 2.0])
    assert np.array_equal(Tensor.__rsub__(a, 5.0).numpy(), [4.0, 4.0])


def test_many_plain_calls_replace_the_counting_operators():
    eager_operators.reset(Tensor)
    try:
        assert not _is_c("__add__") and hasattr(Tensor.__dict__["__add__"], "__wrapped__")
        a = em.tensor(np.ones(1, np.float32))
        with instrument.listening(type("Stepper", (), {"before_op": lambda *_: None})()):
            for _ in range(dispatch.HOT_CALLS):
                a + a  # a debugger runs before each op: the general path, not counted
        assert not _is_c("__add__")
        with instrument.listening(type("Events", (), {"on_op": lambda *_: None})()):
            for _ in range(dispatch.HOT_CALLS // 2):
                a * 2.0  # events after ops (the recorder): the C operators take these
        for _ in range(dispatch.HOT_CALLS // 2):
            a - 1.0
        assert all(_is_c(name) for name in NAMES)
    finally:
        eager_operators.install(Tensor, native=True)


def test_switched_off_the_python_operators_stay(monkeypatch):
    monkeypatch.setenv("EXECMODE_EAGER_OPERATORS", "0")
    try:
        assert eager_operators.install(Tensor) is False
        assert not any(_is_c(name) for name in NAMES)
        assert all(callable(Tensor.__dict__[n]) and not hasattr(Tensor.__dict__[n], "__wrapped__")
                   for name in NAMES for n in [name])
    finally:
        eager_operators.install(Tensor, native=True)


SCRIPT = """
import json
import numpy as np
import execmode as em
from execmode.codegen import eager_operators
a = em.tensor(np.ones(4, np.float32))
for _ in range(5000):
    a = a * 1.0 + 1.0
status = eager_operators.extension_status()
print(json.dumps({"value": a.numpy().tolist(), "ok": status["ok"], "reason": status["reason"],
                  "kind": type(em.Tensor.__dict__["__add__"]).__name__}))
"""


# Slow tier: a fresh process without a compiler.
@pytest.mark.slow
def test_without_a_compiler_the_python_operators_do_the_work(tmp_path):
    env = dict(os.environ, EXECMODE_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT, CC="/nonexistent/cc")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["value"] == [5001.0] * 4
    assert (result["ok"], result["kind"]) == (False, "function")
    assert "no C compiler" in result["reason"]
