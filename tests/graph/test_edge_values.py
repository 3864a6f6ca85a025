"""Edge values and outputs where em.jit once answered differently from eager, silently or
with another exception (issue 13, items 1 and 9, and their relatives).

Each test states what eager does and checks graph mode against it and against NumPy:
through the C kernels and the whole-graph C program (no listener), through the plan's
instrumented loop (a listener), and with the interpreter and NumPy backends; on the first
call (the trace) and on replays.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from helpers import has_c_compiler

import execmode as em
from execmode import instrument
from execmode.codegen.program import compile_program
from execmode.errors import ArgumentValueError
from execmode.plan import build_plan

BACKENDS = [None, "interpreter", "numpy"]


class _Listener:
    """Any listener of kernel events: plans then run step by step, without the program."""

    def on_kernel(self, event):
        pass


def _calls(fn, make_args, backend=None, listen=False, n=3):
    """Results of ``n`` calls of em.jit(fn) (the trace, then replays), fresh arguments each
    time, next to eager's results on the same arguments."""
    jitted = em.jit(fn, backend=backend)
    pairs = []
    for k in range(n):
        args = make_args(k)
        if listen:
            with instrument.listening(_Listener()):
                got = jitted(*args)
        else:
            got = jitted(*args)
        pairs.append((fn(*make_args(k)), got))
    return jitted, pairs


def _same_bits(got, want):
    """Values, dtype, shape, NaNs and the sign of zeros all equal."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


# --- item 1: outputs of one node -----------------------------------------------------------

def _matrices(k):
    rng = np.random.default_rng(k)
    return (em.tensor(rng.standard_normal((3, 3)).astype(np.float32)),)


def _plus_zero(x):
    a = (x @ x) * 2
    b = a @ x
    return b, b - 0            # simplify: b - 0 -> b


def _twice(x):
    return (x @ x) @ x * 2, (x @ x) @ x * 2   # CSE: one node


def _view_of_merged(x):
    a = (x @ x) * 2
    b = a @ x
    return b, (b * 1).T        # simplify, then a view of the merged value


@pytest.mark.parametrize("fn", [_plus_zero, _twice, _view_of_merged])
@pytest.mark.parametrize("listen", [False, True], ids=["program", "listener"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_outputs_that_passes_merged_stay_distinct_tensors(fn, listen, backend):
    """Eager: ``b`` and ``b - 0`` (or ``f(x)`` computed twice) are two tensors with their
    own buffers; writing into one leaves the other alone. The whole-graph program once gave
    the repeat a buffer nobody wrote (garbage), the plan handed out one buffer twice."""
    jitted, pairs = _calls(fn, _matrices, backend, listen)
    for want, got in pairs:
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
        assert not np.shares_memory(got[0].numpy(), got[1].numpy())
        got[0][...] = 7.0
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-5, atol=1e-5)
    plan = jitted.concrete_functions[0].segments[0].compiled.plan
    if backend is None and has_c_compiler():
        assert plan.program is not None  # the copy that keeps them apart is a C loop too


def test_output_returned_twice_shares_one_buffer():
    """Eager: ``return y, y`` returns one tensor twice: its values, its one buffer."""
    def f(x):
        y = (x @ x) @ x
        return y, y

    for listen in (False, True):
        _, pairs = _calls(f, _matrices, listen=listen)
        for want, got in pairs:
            np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-5)
            assert np.shares_memory(got[0].numpy(), got[1].numpy())


def test_output_returned_twice_is_one_object_on_replay():
    """Eager: ``return y, y`` gives ``r[0] is r[1]``; so do the trace and the replays."""
    def f(x):
        y = (x @ x) @ x
        return y, y

    _, pairs = _calls(f, _matrices)
    for _, got in pairs:
        assert got[0] is got[1]


@pytest.mark.skipif(not has_c_compiler(), reason="needs a C compiler")
def test_program_returns_a_repeated_output_like_the_plan():
    """A graph listing one value at two output positions: Plan.run hands out that array
    twice; the program once returned an unwritten buffer for the second position."""
    x = _matrices(0)[0].numpy()
    graph = em.jit(lambda x: (x @ x) @ x).lower(em.tensor(x)).graph
    graph = graph.copy(outputs=graph.outputs * 2)
    program = compile_program(graph, "repeat")
    assert program is not None
    want = build_plan(graph).run([x])
    for _ in range(3):
        got = program.run([x])
        assert got[0] is got[1]
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_simplified_output_is_not_the_input(backend):
    """Eager: ``x + 0`` and ``x.clone()`` are new tensors; writing into them leaves ``x``
    alone (simplify rewrites both to ``x``)."""
    def f(x):
        return x + 0, x.clone()

    x = em.tensor([1.0, -2.0])
    for got in (em.jit(f, backend=backend)(x) for _ in range(2)):
        for g in got:
            assert not np.shares_memory(g.numpy(), x.numpy())
            g[...] = 5.0
        np.testing.assert_array_equal(x.numpy(), [1.0, -2.0])


def test_separate_merged_outputs_leaves_unmerged_graphs_alone():
    """The pass that copies merged outputs adds nothing to graphs whose outputs were
    distinct after the passes, and no entry to their pass record."""
    jitted = em.jit(lambda x: (x * 2, (x * 2).T, x))  # CSE merges; x is an argument
    x = em.tensor(np.ones((2, 3), np.float32))
    a, b, c = jitted(x)
    assert c is x and not np.shares_memory(a.numpy(), b.numpy())
    record = jitted.concrete_functions[0].segments[0].compiled.record
    names = [r.name for r in record.results]
    assert names.count("separate_merged_outputs") == 1
    plain = em.jit(lambda x: x * 2)
    plain(x)
    record = plain.concrete_functions[0].segments[0].compiled.record
    assert "separate_merged_outputs" not in [r.name for r in record.results]


# --- item 9: casts through integers --------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("float_type", [em.float32, em.float64])
@pytest.mark.parametrize("int_type", [em.int32, em.int64])
def test_float_int_float_round_trip_gives_positive_zero(backend, float_type, int_type):
    """Eager (NumPy): -0.3 -> 0 -> +0.0. GCC folded (float)(int64)x into truncf(x), which
    keeps the sign: -0.0 under jit."""
    values = np.array([-0.3, -0.999, -0.0, 0.0, 0.3, -1.7, 2.5, -1e-30], float_type)

    def f(x):
        return x.astype(int_type).astype(float_type)

    want = values.astype(int_type).astype(float_type)
    _, pairs = _calls(f, lambda k: (em.tensor(values),), backend)
    for eager, got in pairs:
        _same_bits(eager.numpy(), want)
        _same_bits(got.numpy(), want)


# --- item 9: sigmoid of integer extremes ----------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [em.int32, em.int64])
def test_sigmoid_of_integer_extremes(backend, dtype):
    """Eager computes an integer sigmoid in float64 (as exp does): INT_MIN gives 0.0 and
    INT_MAX 1.0. Negating first wrapped INT_MIN to itself: sigmoid(INT_MIN) was 1.0."""
    info = np.iinfo(dtype)
    values = np.array([info.min, info.min + 1, -800, -1, 0, 1, 800, info.max], dtype)
    with np.errstate(over="ignore"):  # exp(-INT_MIN) is inf, and 1 / inf the 0 wanted
        want = 1 / (1 + np.exp(-values.astype(np.float64)))
    _, pairs = _calls(em.sigmoid, lambda k: (em.tensor(values),), backend)
    for eager, got in pairs:
        assert eager.dtype == got.dtype == em.float64
        np.testing.assert_allclose(eager.numpy(), want, rtol=1e-15, atol=0)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_sigmoid_of_large_magnitudes_never_overflows(dtype):
    """Eager and jit: sigmoid(+-1e4) is 1 and 0, with finite gradients and no overflow
    warning (exp(-x) overflowed to inf, and the gradient was inf * 0 = NaN)."""
    values = np.array([-1e30, -1e4, -100.0, -0.0, 0.0, 100.0, 1e4, 1e30], dtype)

    def f(x):
        y = em.sigmoid(x)
        y.sum().backward()
        return y, x.grad

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager_y, eager_g = f(em.tensor(values, requires_grad=True))
        jitted = em.jit(f)
        for _ in range(2):
            y, g = jitted(em.tensor(values, requires_grad=True))
            for got, want in ((y, eager_y), (g, eager_g)):
                assert np.isfinite(got.numpy()).all()
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-30)
    np.testing.assert_array_equal(eager_y.numpy()[[0, 1, -2, -1]], [0.0, 0.0, 1.0, 1.0])
    np.testing.assert_allclose(eager_g.numpy()[3:5], [0.25, 0.25])


# --- item 9: argmax / argmin over zero-size tensors -----------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_over_a_nonempty_axis_of_an_empty_tensor(backend, op):
    """Eager (NumPy): argmax over axis 0 of a (3, 0) tensor is an empty (0,) int64 tensor;
    jit refused any tensor with a zero in its shape."""
    x = np.zeros((3, 0), np.float32)
    for keepdims in (False, True):
        def f(t, keepdims=keepdims):
            return getattr(em, op)(t, axis=0, keepdims=keepdims)

        want = getattr(np, op)(x, axis=0, keepdims=keepdims)
        _, pairs = _calls(f, lambda k: (em.tensor(x),), backend, n=2)
        for eager, got in pairs:
            _same_bits(eager.numpy(), want)
            _same_bits(got.numpy(), want)


def _error_of(fn, *args):
    """The ExecmodeError that ``fn(*args)`` raises."""
    with pytest.raises(em.ExecmodeError) as info:
        fn(*args)
    return info.value


def _without_line(err) -> str:
    return str(err).split("\n  at ")[0]


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_over_an_empty_axis_raises_as_eager(op):
    """Eager: NumPy refuses an empty axis; execmode raises ShapeError naming the op, the
    operand and the axis. Graph mode raises the same class with the same message."""
    x = em.tensor(np.zeros((3, 0), np.float32))
    f = lambda t: getattr(em, op)(t, axis=1)  # noqa: E731
    eager = _error_of(f, x)
    jitted = _error_of(em.jit(f), x)
    assert type(eager) is type(jitted) is em.ShapeError
    assert _without_line(eager) == _without_line(jitted) == \
        f"{op}(f32[3,0]@cpu): {op} over an empty axis (axis 1 of shape (3, 0))"
    every = _error_of(em.jit(lambda t: getattr(em, op)(t)), x)
    assert "empty tensor" in str(every)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_over_no_axis_of_an_empty_tensor(op):
    """Eager (NumPy): axis=() reduces nothing, so a (0, 3) tensor comes back as it is;
    jit raised "max of an empty axis"."""
    x = np.zeros((0, 3), np.float32)
    f = lambda t: getattr(em, op)(t, axis=())  # noqa: E731
    for backend in BACKENDS:
        _, pairs = _calls(f, lambda k: (em.tensor(x),), backend, n=2)
        for eager, got in pairs:
            assert eager.shape == got.shape == (0, 3)


# --- item 9: index values out of range --------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_index_tensor_out_of_range_raises_eagers_error(backend):
    """Eager: ``x[em.tensor([5])]`` on a length-3 axis raises IndexingError (an IndexError,
    and the ShapeError it always was) naming getitem, the operands and the user's line.
    Under jit the value is only seen when the plan runs: it raised plan.py's raw RuleError
    (and on replays the generated replay's)."""
    x = em.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))

    def gather(t, i):
        return t[i] * 2

    for index in ([5], [-4], [0, 3]):
        i = em.tensor(index)
        eager = _error_of(gather, x, i)
        jitted = em.jit(gather, backend=backend)
        jitted(x, em.tensor([0]))  # compiled with an index in range: the next are replays
        for _ in range(2):
            err = _error_of(jitted, x, i)
            assert type(err) is type(eager) is em.IndexingError
            assert isinstance(err, IndexError) and isinstance(err, em.ShapeError)
            assert _without_line(err) == _without_line(eager)
            assert _without_line(err).startswith("getitem(f32[3,4]@cpu, i64[")
            assert "out of bounds" in str(err)
            code = gather.__code__  # the line of x[i], inside the jitted function
            assert f"at {code.co_filename}:{code.co_firstlineno + 1} in " in str(err)


def test_index_out_of_range_in_assignment_raises_eagers_error():
    """Eager: ``y[i] = v`` with ``i`` out of range raises IndexingError from index_put
    (before: a plain ExecmodeError wrapping NumPy's IndexError, and jit raised the raw
    IndexError)."""
    def put(x, i):
        y = x * 1
        y[i] = 0.0
        return y

    x = em.tensor(np.arange(3, dtype=np.float32))
    eager = _error_of(put, x, em.tensor([7]))
    jitted = em.jit(put)
    jitted(x, em.tensor([1]))
    err = _error_of(jitted, x, em.tensor([7]))
    assert type(err) is type(eager) is em.IndexingError
    assert _without_line(err) == _without_line(eager)
    assert re.match(r"index_put\(f32\[3\]@cpu, 0\.0 \(python float\), i64\[1\]@cpu\)",
                    str(err))


def test_constant_index_out_of_range_is_not_folded_away():
    """Eager raises IndexingError for ``em.arange(3)[em.tensor([5])]``; constant folding
    evaluated it while compiling and let NumPy's error out of the pass."""
    def f(x):
        return em.arange(3)[em.tensor([5])] * x

    eager = _error_of(f, em.tensor([1]))
    for _ in range(2):
        err = _error_of(em.jit(f), em.tensor([1]))
        assert type(err) is type(eager) is em.IndexingError
        assert _without_line(err) == _without_line(eager)


# --- relatives: values NumPy refuses ----------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_power_with_a_negative_exponent_raises_as_eager(backend):
    """Eager (NumPy): an integer to a negative integer power raises (ExecmodeError naming
    power). A fused C kernel cannot raise and returned 0; a lone step raised NumPy's raw
    ValueError; a folded constant raised it while compiling."""
    def fused(x, y):
        return (x ** y) * 2

    def lone(x, y):
        return x ** y

    def folded(x, y):
        return (em.tensor([2, 3]) ** em.tensor([1, -2])) * x

    x, ok, bad = em.tensor([2, 3]), em.tensor([1, 2]), em.tensor([1, -2])
    for fn in (fused, lone, folded):
        eager = _error_of(fn, x, bad)
        jitted = em.jit(fn, backend=backend)
        if fn is not folded:
            np.testing.assert_array_equal(jitted(x, ok).numpy(), fn(x, ok).numpy())
        for _ in range(2):
            err = _error_of(jitted, x, bad)
            # NumPy's ValueError, as the standard's kind (ArgumentValueError)
            assert type(err) is type(eager) is ArgumentValueError
            assert _without_line(err) == _without_line(eager)
            assert "negative integer powers" in str(err)
    # A constant exponent that cannot be negative still fuses.
    square = em.jit(lambda x: (x ** 2) * 3)
    np.testing.assert_array_equal(square(x).numpy(), [12, 27])
    lowered = square.concrete_functions[0].segments[0].compiled.lowered
    assert any(n.op == "fused" for n in lowered.nodes)


def test_unsupported_dtypes_say_the_same_in_both_modes():
    """Eager: ``subtract`` of bools is refused by NumPy: DTypeError with NumPy's reason.
    The traced rule said the same under an extra "unsupported dtypes:"."""
    flags = em.tensor([True, False])
    eager = _error_of(em.subtract, flags, flags)
    jitted = _error_of(em.jit(em.subtract), flags, flags)
    assert type(eager) is type(jitted) is em.DTypeError
    assert _without_line(eager) == _without_line(jitted)


def test_square_of_bool_is_int8_in_both_modes():
    """NumPy squares bools in int8, which execmode has since issue 36 (it refused it
    before); the jit keeps the op out of its kernels (no int8 type) and agrees."""
    flags = em.tensor([True, False])
    eager = em.square(flags)
    jitted = em.jit(em.square)(flags)
    assert eager.dtype == jitted.dtype == em.int8
    np.testing.assert_array_equal(jitted.numpy(), eager.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nan_made_in_a_numpy_step_warns_as_eagerly_does_not(backend):
    """acosh has no C kernel: under jit it is a NumPy step, which the generated replay
    ran as code of no module, so NumPy's "invalid value" warning escaped execmode's filter
    on the replays while the eager op stayed silent."""
    x = em.tensor([0.5, 2.0])
    f = em.jit(lambda t: em.acosh(t) * 2.0, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        eager = em.acosh(x) * 2.0
        results = [f(x) for _ in range(4)]  # the trace, then replays
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    for r in results:
        np.testing.assert_array_equal(r.numpy(), eager.numpy())
