"""The events of the eager C paths (codegen/eager_operators.py): what Tensor's + - * / and
the unary functions built in C hand a listener is the event the Python paths build (the
same fields, the user's line, scope and operands), refilled only when no listener kept it."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import execmode as em
from execmode import dispatch, instrument
from execmode._tensor import Tensor
from execmode.backend import CPU
from execmode.codegen import eager_operators

# The C operators on Tensor for this module (tests/codegen/conftest.py).
pytestmark = pytest.mark.usefixtures("c_operators")


def _python(name):
    return eager_operators.python_operator(Tensor.__dict__[name])


def test_the_c_operators_events_are_the_python_operators():
    events = []

    class Listener:
        def on_op(self, event, output):
            events.append((event, output))

    a, b = em.tensor(np.ones(3, np.float32)), em.tensor(np.full(3, 2.0, np.float32))
    with instrument.listening(Listener()), em.named_scope("block"):
        line = sys._getframe().f_lineno + 1
        c_out = a * b
        py_out = _python("__mul__")(a, b)
    (c_event, c_output), (py_event, py_output) = events
    assert c_output is c_out and py_output is py_out
    assert c_event.location.lineno == line and py_event.location.lineno == line + 1
    assert c_event.start_ns <= c_event.end_ns < py_event.start_ns and c_event.seq < py_event.seq

    def comparable(event):
        return event._replace(seq=0, start_ns=0, end_ns=0, location=event.location.filename)

    assert comparable(c_event) == comparable(py_event)
    assert c_event.scope == "block" and c_event.op == "multiply"


def test_the_c_operators_events_name_each_line_and_operand():
    """The event built in C keeps its last line (code object and instruction): two ops on
    alternating lines, a scalar operand, and a helper's line each get their own."""
    events = []

    class Listener:
        def on_op(self, event, output):
            events.append(event)

    def helper(x):
        return x - 1.0

    a, b = em.tensor(np.ones((2, 3), np.float32)), em.tensor(np.full((2, 3), 2.0, np.float32))
    with instrument.listening(Listener()):
        first = sys._getframe().f_lineno + 2
        for _ in range(3):
            a + b
            a * 3.0
            helper(a)
    helper_line = helper.__code__.co_firstlineno + 1
    assert [(e.op, e.location.lineno) for e in events] == \
        [("add", first), ("multiply", first + 1), ("subtract", helper_line)] * 3
    add, scaled = events[0], events[1]
    f32 = np.dtype(np.float32)
    assert add.inputs == (((2, 3), f32, CPU), ((2, 3), f32, CPU))
    assert scaled.inputs == (((2, 3), f32, CPU), 3.0)
    assert add.output == ((2, 3), f32, CPU) and add.bytes_allocated == 24
    assert [e.seq for e in events] == sorted({e.seq for e in events})


def test_a_listener_that_leaves_during_an_event_is_not_called_again():
    calls = []

    class Leaving:
        def on_op(self, event, output):
            calls.append(event.op)
            instrument.remove_listener(self)

    a = em.tensor(np.ones(3, np.float32))
    leaving = Leaving()
    instrument.add_listener(leaving)
    try:
        a + a
        a + a
    finally:
        if leaving in instrument.listeners():
            instrument.remove_listener(leaving)
    assert calls == ["add"]


UNARY_PATHS = ["c", "python", "python, C events"]


@pytest.fixture
def unary_path(request):
    """The unary functions as "c" (their C versions, as install() sets them), "python"
    (dispatch.make_unary_function's body, events from dispatch.emit_unary_event) or
    "python, C events" (that body, events from the extension's emit_unary); as they were
    afterwards."""
    kind = request.param
    saved = {name: entry[0] for name, entry in dispatch.UNARY_FUNCTIONS.items()}
    saved_emitter = dispatch._emit_unary
    if kind != "c":
        for entry in dispatch.UNARY_FUNCTIONS.values():
            entry[0] = None
        dispatch._emit_unary = eager_operators.load_extension().emit_unary \
            if kind == "python, C events" else dispatch.emit_unary_event
    yield kind
    for name, native in saved.items():
        dispatch.UNARY_FUNCTIONS[name][0] = native
    dispatch._emit_unary = saved_emitter


@pytest.mark.parametrize("unary_path", UNARY_PATHS, indirect=True)
def test_a_unary_functions_event_is_run_eagers(unary_path):
    """em.exp(x) under a listener takes make_unary_function's fast path; its event, built
    in C or in Python, is the one run_eager gives for the op (apply): the same fields, the
    output tensor, the user's line and scope. Ints take the impl's cast (float64)."""
    from execmode.ops import OPS

    events = []

    class Listener:
        def on_op(self, event, output):
            events.append((event, output))

    x = em.tensor(np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3))
    n = em.tensor(np.arange(4))
    with instrument.listening(Listener()), em.named_scope("block"):
        line = sys._getframe().f_lineno + 1
        fast = [em.exp(x), em.negative(n), em.sqrt(n)]
        slow = [dispatch.apply(OPS[name], t) for name, t in
                (("exp", x), ("negative", n), ("sqrt", n))]
    assert len(events) == 6
    for (fast_event, fast_out), (slow_event, slow_out), f, s in zip(
            events[:3], events[3:], fast, slow):
        assert fast_out is f and slow_out is s
        assert f.dtype == s.dtype and np.array_equal(f.numpy(), s.numpy())
        assert fast_event.location.lineno == line
        assert slow_event.location.lineno == line + 1
        assert fast_event.start_ns <= fast_event.end_ns < slow_event.start_ns
        assert fast_event._replace(seq=0, start_ns=0, end_ns=0, location=None) == \
            slow_event._replace(seq=0, start_ns=0, end_ns=0, location=None)
    assert events[1][0].output == ((4,), np.dtype(np.int64), CPU)
    assert events[2][0].output[1] == np.float64 and events[0][0].scope == "block"


@pytest.mark.parametrize("unary_path", UNARY_PATHS, indirect=True)
def test_a_unary_functions_event_names_its_callers_line(unary_path):
    """The user's line one frame out from the fast path: lines that alternate (the C
    side's line cache), and a helper's line when the helper called it."""
    events = []

    class Listener:
        def on_op(self, event, output):
            events.append(event)

    def helper(v):
        return em.abs(v)

    x = em.tensor(np.ones(5, np.float32))
    with instrument.listening(Listener()):
        first = sys._getframe().f_lineno + 2
        for _ in range(3):
            em.exp(x)
            x + x
            helper(x)
            em.tanh(x)
    helper_line = helper.__code__.co_firstlineno + 1
    assert [(e.op, e.location.lineno) for e in events] == [
        ("exp", first), ("add", first + 1), ("abs", helper_line), ("tanh", first + 3)] * 3


def test_an_event_a_listener_keeps_is_never_refilled():
    """An event no listener kept is refilled for the next op (one object for a loop); one
    a listener kept stays as it was."""
    kept, ids = [], []

    class Keeping:
        def on_op(self, event, output):
            if event.op == "exp":
                kept.append(event)

    class Passing:
        def on_op(self, event, output):
            ids.append(id(event))

    x = em.tensor(np.ones(3, np.float32))
    with instrument.listening(Passing()):
        for _ in range(5):
            x + x
    assert len(set(ids)) == 1  # refilled: one event object for the five ops
    with instrument.listening(Keeping()):
        for _ in range(4):
            x * 2.0
            em.exp(x)
    assert [e.op for e in kept] == ["exp"] * 4
    assert len({id(e) for e in kept}) == 4 and [e.seq for e in kept] == sorted(
        e.seq for e in kept)
    assert all(e.inputs == (((3,), np.dtype(np.float32), CPU),) for e in kept)


@pytest.mark.parametrize("unary_path", UNARY_PATHS, indirect=True)
def test_each_thread_gets_its_own_scope_in_events(unary_path):
    """The C side reads the main thread's scope from its own dict of the thread-local;
    another thread's ops carry that thread's scope."""
    events = []
    lock = threading.Lock()

    class Listener:
        def on_op(self, event, output):
            with lock:
                events.append((threading.current_thread().name, event.op, event.scope))

    x = em.tensor(np.ones(3, np.float32))

    def work(scope):
        with em.named_scope(scope):
            x + x
            em.exp(x)
        x - x

    with instrument.listening(Listener()):
        x + x
        with em.named_scope("outer"):
            thread = threading.Thread(target=work, args=("worker",), name="worker")
            thread.start()
            thread.join()
            em.exp(x)
            x * x
        x - x
    assert events == [
        ("MainThread", "add", ""),
        ("worker", "add", "worker"), ("worker", "exp", "worker"), ("worker", "subtract", ""),
        ("MainThread", "exp", "outer"), ("MainThread", "multiply", "outer"),
        ("MainThread", "subtract", ""),
    ]
