"""Graph mode keeps eager's state semantics: one regression test per class of silent
eager/jit mismatch found by the differential fuzzer (issue 13). Each test states what eager
does; the jitted function must do exactly the same."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import execmode as em
from execmode.errors import ExecmodeError


def test_two_threads_trace_at_once_without_sharing_a_tracer():
    """A trace in one thread must not capture another thread's eager ops (class 10)."""
    inside = threading.Event()
    resume = threading.Event()

    @em.jit
    def slow(x):
        y = x * 2
        inside.set()
        resume.wait(10)  # hold the trace open while the other thread works
        return y + 1

    result = {}

    def tracer_thread():
        result["jit"] = slow(em.tensor([1.0, 2.0]))

    t = threading.Thread(target=tracer_thread)
    t.start()
    assert inside.wait(10)
    eager = em.tensor([10.0]) * 3  # runs eagerly in this thread while the other traces
    resume.set()
    t.join(10)
    assert not eager.is_traced
    np.testing.assert_array_equal(eager.numpy(), [30.0])
    np.testing.assert_array_equal(result["jit"].numpy(), [3.0, 5.0])
    assert len(slow.concrete_functions[0].graphs[0].op_nodes) == 2  # mul, add: nothing else


def test_jitted_function_called_from_two_threads_gives_eager_results():
    @em.jit
    def f(x):
        return (x * x).sum() + x.mean()

    data = [np.arange(n, dtype=np.float32) for n in (3, 4, 5, 6)] * 5
    out = [None] * len(data)

    def work(i):
        out[i] = f(em.tensor(data[i])).item()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(data))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for a, got in zip(data, out):
        assert got == em.tensor((a * a).sum() + a.mean()).item()


# --- a twin runner: the same program eagerly and jitted, on twin copies of its state ------

def _twins(make_state, fn, calls=3):
    """Run ``fn(*state)`` ``calls`` times eagerly and jitted (each on its own copy of the
    state made by ``make_state``); return [(eager result, jit result, eager state,
    jit state)] per call."""
    eager_state, jit_state = make_state(), make_state()
    jitted = em.jit(fn)
    rows = []
    for _ in range(calls):
        rows.append((fn(*eager_state), jitted(*jit_state), eager_state, jit_state))
    return rows


def _values(x):
    return x.numpy().copy() if isinstance(x, em.Tensor) else x


def _assert_same(e, g):
    if isinstance(e, tuple | list):
        assert len(e) == len(g)
        for a, b in zip(e, g):
            _assert_same(a, b)
        return
    if isinstance(e, em.Tensor):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_array_equal(e.numpy(), g.numpy())
        assert e.requires_grad == g.requires_grad
    else:
        assert e == g


def _check(make_state, fn, calls=3):
    for e_out, g_out, e_state, g_state in _twins(make_state, fn, calls):
        _assert_same(e_out, g_out)
        _assert_same(e_state, g_state)


def test_duplicate_outputs_are_the_same_object_or_distinct_buffers_as_in_eager():
    """Class 1: ``return y, y`` is one object twice; ``a, a + 0`` are two buffers."""
    x0 = np.arange(4, dtype=np.float32)

    def same(x):
        y = x * 2
        return y, y

    def two(x):
        a = x * 2
        return a, a + 0

    for fn in (same, two):
        jitted = em.jit(fn)
        for _ in range(3):
            a, b = jitted(em.tensor(x0))
            assert (a is b) == (fn is same)
            np.testing.assert_array_equal(b.numpy(), x0 * 2)
            if fn is two:
                a += 1  # a write to one result is not seen through the other
                np.testing.assert_array_equal(b.numpy(), x0 * 2)


def test_simplified_identities_return_fresh_tensors_not_the_input():
    """Class 2: ``x + 0``, ``x * 1``, ``-(-x)`` are new tensors in eager; simplify may turn
    them into ``x``, but the result must not share the input's memory."""
    for fn in (lambda x: x + 0, lambda x: x * 1, lambda x: -(-x)):  # noqa: B002 - negation twice
        jitted = em.jit(fn)
        for _ in range(2):
            x = em.tensor([1.0, 2.0])
            y = jitted(x)
            assert y is not x
            y += 10
            np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


def test_intermediate_updated_in_place_then_returned_is_not_frozen():
    """Class 3: eager returns the updated values, computed from this call's input."""
    def f(x):
        h = x * 2
        h += 1
        h[0] = x[1]
        return h

    _check(lambda: [em.tensor(np.random.default_rng(0).normal(size=3).astype(np.float32))],
           f)
    jitted = em.jit(f)
    for v in (1.0, 5.0):
        np.testing.assert_array_equal(jitted(em.full((3,), v)).numpy(), [v, 2 * v + 1, 2 * v + 1])


def test_writes_through_views_detach_and_data_reach_the_argument_or_capture():
    """Class 4: ``p.data.zero_()``, ``w.detach()[0] = 1``, ``v = x[:, :2]; v *= 0``."""
    w = em.ones(3)

    def through_detach(x):
        w.detach()[0] = 5.0
        x.data.zero_()
        return w * 1

    def through_view(x):
        v = x[:, :2]
        v *= 0
        t = x.T
        t[0] = 7.0
        return x.sum()

    def make():
        return [em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))]

    _check(make, through_view)
    jitted = em.jit(through_detach)
    for _ in range(2):
        x = make()[0]
        out = jitted(x)
        np.testing.assert_array_equal(x.numpy(), np.zeros((2, 3)))
        np.testing.assert_array_equal(w.numpy(), [5.0, 1.0, 1.0])
        np.testing.assert_array_equal(out.numpy(), [5.0, 1.0, 1.0])


def test_views_taken_before_an_in_place_update_see_the_new_values():
    """Class 5 (and the old "intermediate seen through an earlier view" limitation)."""
    def of_argument(x):
        row = x[0]
        flat = x.reshape(-1)
        x += 1
        return row * 1, flat.sum()

    def of_intermediate(x):
        h = x * 3
        d = h.detach()
        col = h[:, 1]
        h[...] = 0.5
        h[1, 1] = 9.0
        return d + 0, col + 0, h

    def make():
        return [em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))]

    _check(make, of_argument)
    _check(make, of_intermediate)


def test_returned_views_alias_their_base_as_in_eager():
    def f(x):
        h = x * 2
        return h, h[0], x[1], x.T

    jitted = em.jit(f)
    for _ in range(2):
        x = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        h, row, xrow, xt = jitted(x)
        row[0] = 100.0
        assert h.numpy()[0, 0] == 100.0
        xrow[0] = -1.0
        xt[0, 0] = -2.0
        np.testing.assert_array_equal(x.numpy()[:, 0], [-2.0, -1.0])


def test_returned_parameter_updated_in_place_keeps_requires_grad():
    """Class 6: returning a parameter the step updated must not clear its flags."""
    w = em.tensor([1.0, 2.0], requires_grad=True)

    @em.jit
    def step(x):
        loss = (w * x).sum()
        loss.backward()
        with em.no_grad():
            p = w
            p -= 0.1 * w.grad
        w.grad = None
        return w, loss

    for _ in range(3):
        out, _ = step(em.tensor([1.0, 1.0]))
        assert out is w and w.requires_grad and w.is_leaf
    np.testing.assert_allclose(w.numpy(), [0.7, 1.7], rtol=1e-6)


def test_writes_to_a_broadcast_view_fail_as_in_eager():
    def f(x):
        b = x.broadcast_to((2, 3))
        b[0] = 1.0
        return b

    with pytest.raises(ExecmodeError, match="read-only") as eager:
        f(em.zeros(3))
    with pytest.raises(type(eager.value), match="read-only"):
        em.jit(f)(em.zeros(3))


# --- Python state the trace read: guards, symbolic numbers, Python writes ------------------

REBOUND = em.ones(2)


def test_a_rebound_global_tensor_is_seen_and_the_retrace_says_why():
    """Class 7: ``w = em.zeros(...)`` at module level between calls."""
    global REBOUND

    @em.jit
    def f(x):
        return x + REBOUND

    x = em.tensor([1.0, 2.0])
    np.testing.assert_array_equal(f(x).numpy(), [2.0, 3.0])
    REBOUND = em.full((2,), 10.0)
    np.testing.assert_array_equal(f(x).numpy(), [11.0, 12.0])
    assert "global REBOUND rebound" in f.retraces[-1].reason
    np.testing.assert_array_equal(f(x).numpy(), [11.0, 12.0])  # and replays again


class _Config:
    def __init__(self):
        self.scale = 2.0
        self.training = True
        self.step = 0


def test_numbers_and_flags_on_captured_objects_are_never_frozen():
    """Class 8: a changed number becomes a graph input (one retrace, not one per value);
    a flag that decides Python control flow retraces when it changes."""
    cfg = _Config()

    @em.jit
    def f(x):
        y = x * cfg.scale + cfg.step
        return y * 2 if cfg.training else y

    x = em.tensor([1.0, 2.0])
    for scale, step, training in [(2.0, 0, True), (3.0, 1, True), (0.5, 2, True),
                                  (0.25, 7, False), (4.0, 8, False), (4.0, 8, True)]:
        cfg.scale, cfg.step, cfg.training = scale, step, training
        expected = (np.array([1.0, 2.0]) * scale + step) * (2 if training else 1)
        np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-6)
    reasons = [r.reason for r in f.retraces]
    assert any("cfg.scale: 2.0 -> 3.0" in r for r in reasons)
    assert any("cfg.training" in r for r in reasons)
    assert f.trace_count <= 5  # not one trace per new number


def test_a_function_writing_python_state_reruns_its_python_every_call():
    """``self.step += 1`` inside a jitted function: eager counts every call, so graph
    mode must too (it re-runs the Python, reusing the compiled graph)."""
    cfg = _Config()

    @em.jit
    def f(x):
        cfg.step += 1
        return x * cfg.step

    outs = [f(em.tensor([1.0])).item() for _ in range(4)]
    assert outs == [1.0, 2.0, 3.0, 4.0] and cfg.step == 4


def _train(jit: bool, optimizer: str, steps: int = 12):
    rng = np.random.default_rng(0)
    w = em.tensor(rng.normal(size=(4, 3)).astype(np.float32), requires_grad=True)
    b = em.zeros(3, requires_grad=True)
    x = em.tensor(rng.normal(size=(8, 4)).astype(np.float32))
    y = em.tensor(rng.normal(size=(8, 3)).astype(np.float32))
    opt = em.optim.Adam([w, b], lr=0.1) if optimizer == "adam" else \
        em.optim.SGD([w, b], lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = (((x @ w + b) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    step = em.jit(step) if jit else step
    losses = []
    for i in range(steps):
        opt.lr = 0.05 * (1 + np.cos(np.pi * i / steps))  # a cosine schedule
        losses.append(step(x, y).item())
    return losses, w.numpy().copy(), step


def test_a_learning_rate_schedule_trains_under_jit_exactly_as_eagerly():
    for optimizer in ("sgd", "adam"):
        eager, w_eager, _ = _train(False, optimizer)
        jitted, w_jit, step = _train(True, optimizer)
        np.testing.assert_allclose(jitted, eager, rtol=1e-5)
        np.testing.assert_allclose(w_jit, w_eager, rtol=1e-5, atol=1e-6)
        assert step.trace_count == 1  # lr is a graph input: no retrace per step


# --- classes the fuzzer found after the ten of the issue ----------------------------------

def test_an_unused_gather_out_of_range_raises_as_in_eager():
    """Dead code elimination must not remove an op that raises eagerly."""
    g = em.arange(4)

    def f(x):
        g[em.tensor([7])]  # unused, but eager raises IndexError here
        return x * 2

    with pytest.raises(IndexError):
        f(em.ones(2))
    with pytest.raises(IndexError):
        em.jit(f)(em.ones(2))


def test_detach_of_a_capture_is_a_new_object_at_every_call():
    buf = em.ones(3)

    @em.jit
    def f(x):
        return buf.detach(), x

    a, _ = f(em.ones(1))
    b, _ = f(em.ones(1))
    assert a is not b and a is not buf
    assert np.shares_memory(a.numpy(), buf.numpy())


def test_an_argument_written_with_a_differentiable_value_takes_its_history():
    """Eager: ``x[...] = w * 2`` makes x require grad (it takes w's history)."""
    w = em.tensor([1.0, 2.0], requires_grad=True)

    def f(x):
        x[...] = w * 2
        return x.sum()

    x_eager, x_jit = em.zeros(2), em.zeros(2)
    f(x_eager)
    jitted = em.jit(f)
    for _ in range(2):
        x_jit = em.zeros(2)
        jitted(x_jit)
        assert x_jit.requires_grad == x_eager.requires_grad is True
        np.testing.assert_array_equal(x_jit.numpy(), x_eager.numpy())


def test_a_capture_passed_as_the_argument_is_guarded():
    """f(obj.buf) reads obj.buf both as x and as a capture: one memory. A later call with
    another x must not read x where the function names obj.buf."""
    class Obj:
        buf = None

    obj = Obj()
    obj.buf = em.tensor([1.0, 2.0])

    def f(x):
        x += 1.0
        return obj.buf * 1

    jitted = em.jit(f)
    np.testing.assert_array_equal(jitted(obj.buf).numpy(), [2.0, 3.0])
    other = em.tensor([10.0, 20.0])
    np.testing.assert_array_equal(jitted(other).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(other.numpy(), [11.0, 21.0])


def test_jit_results_that_eager_would_differentiate_backpropagate_as_eagerly():
    # (They used to refuse: a compiled backward graph now runs, jit_driver/backward.py.)
    w = em.tensor([1.0, 2.0], requires_grad=True)
    out = em.jit(lambda x: (w * x).sum())(em.ones(2))
    assert out.requires_grad  # as eagerly
    out.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])


def test_a_value_error_before_a_trace_time_error_is_raised_first_as_in_eager():
    """Eager fails at the out-of-range gather; a trace only meets the later in-place
    write on a leaf that requires grad. Graph mode must raise eager's (first) error."""
    def f(x, z):
        x[em.tensor([7])]
        z[:, 1] = 0
        return x

    x = em.ones((1, 4), requires_grad=True)
    with pytest.raises(IndexError):
        f(x, x)
    with pytest.raises(IndexError):
        em.jit(f)(x, x)


def test_guards_watch_globals_the_code_loads_not_attribute_names():
    """``opt.step()`` names the attribute ``step``; a global jitted function called
    ``step`` is not read, and its caches must not cause a retrace at every call."""
    w = em.tensor([1.0, 2.0], requires_grad=True)
    opt = em.optim.SGD([w], lr=0.1)

    def train(x):
        opt.zero_grad()
        (w * x).sum().backward()
        opt.step()

    global step
    step = em.jit(train)
    for _ in range(4):
        step(em.ones(2))
    assert step.trace_count == 1, [r.reason for r in step.retraces]
    np.testing.assert_allclose(w.numpy(), [0.6, 1.6], rtol=1e-6)


def test_a_capture_taking_a_history_keeps_eager_flags_on_replays():
    """``em.assign(g, b)`` with b requiring grad makes g require grad, at every call."""
    g = em.zeros(3)
    b = em.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def f(x):
        em.assign(g, b)
        return x * 1

    jitted = em.jit(f)
    for _ in range(3):
        with em.no_grad():
            g.zero_()
        g.requires_grad, g._grad_fn = False, None
        jitted(em.ones(1))
        assert g.requires_grad


def test_cse_keeps_minus_zero_apart_from_zero():
    """``y.zero_(); return -y``: eager gives -0.0; CSE must not merge full(-0.0) with
    full(0.0) (they compare equal in Python)."""
    def f(x, y):
        y.zero_()
        return -y

    out = em.jit(f)(em.ones(3), em.ones(3)).numpy()
    assert np.signbit(out).all()


def test_a_write_through_a_reshape_of_a_dead_strided_result_is_allowed():
    """Whether ``(x.T * 2).reshape(-1)`` is a view is NumPy's choice, but nothing else
    can read the strided result, so writing the reshape is safe (and eager's)."""
    def f(x):
        y = (x.T * 2).reshape(-1)
        y[0] = 100.0
        return y

    x = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(em.jit(f)(x).numpy(), f(x).numpy())


def test_basic_indexing_of_a_strided_result_is_a_view_as_in_eager():
    """``v1 = (z.T @ z) + 1; v1[0]``: NumPy indexes basically as a view whatever the
    layout; the returned row shares memory with v1 (found by the fuzzer)."""
    def f(z):
        v1 = em.exp(z.T) + 1
        return v1[0], v1

    z = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    row, whole = em.jit(f)(z)
    row[0] = -5.0
    assert whole.numpy()[0, 0] == -5.0


BUF = em.tensor([1.0, 2.0])


def test_a_global_passed_as_the_argument_is_one_object_with_its_history():
    """Found by the slow fuzz tier: ``f(BUF)`` where f also reads the global BUF. Eagerly
    they are one object: writing a differentiable value into the argument makes BUF require
    grad, and what f computes from BUF does too; a later call with another argument reads
    BUF itself again; ``BUF += 1`` on the global rebinds it to itself."""
    d = em.tensor([5.0, 6.0], requires_grad=True)

    def f(y):
        em.assign(y, d)
        return BUF.astype(em.float64)

    jitted = em.jit(f)
    global BUF
    out = jitted(BUF)
    assert out.requires_grad and BUF.requires_grad
    np.testing.assert_array_equal(out.numpy(), [5.0, 6.0])
    with em.no_grad():
        BUF = em.tensor([1.0, 2.0])
    other = em.zeros(2)
    np.testing.assert_array_equal(jitted(other).numpy(), [1.0, 2.0])

    def g(y):
        global BUF
        BUF += 1
        return y * 1

    before = BUF
    em.jit(g)(BUF)
    assert BUF is before and not BUF.is_traced
    np.testing.assert_array_equal(BUF.numpy(), [2.0, 3.0])


def test_python_errors_after_a_failing_gather_are_eagers_index_error():
    """Found by the slow fuzz tier: eager stops at the out-of-range gather; the trace goes
    on and fails in Python on a ``.grad`` that stayed None. The error is eager's."""
    w = em.ones((4, 3), requires_grad=True)
    b = em.zeros(3, requires_grad=True)

    def f(x):
        v0 = x[em.tensor([7])]
        (v0 @ w).mean().backward()
        return b.grad.astype(em.float64)  # b.grad is None: AttributeError, after eager's

    with pytest.raises(IndexError):
        f(em.ones((1, 4)))
    with pytest.raises(IndexError):
        em.jit(f)(em.ones((1, 4)))


def test_an_argument_with_a_history_may_be_written_as_in_eager():
    """Found by the slow fuzz tier: an argument that is not a leaf (it took a history)
    may be written in place eagerly; its stand-in must not be a leaf either."""
    w = em.tensor([1.0, 2.0], requires_grad=True)
    y = w * 1  # requires grad, not a leaf

    def f(x, y):
        em.assign(y, x.sum())
        return y - x

    expected = f(em.ones(2), w * 1).numpy()
    np.testing.assert_array_equal(em.jit(f)(em.ones(2), y).numpy(), expected)
