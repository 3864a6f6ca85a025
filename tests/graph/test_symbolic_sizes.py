"""One trace for every size of a dynamic dimension (execmode/symbolic_sizes.py,
execmode/jit_driver/symbolic_dims.py): values, dtypes and shapes as eager's at every
size, the traces it takes, the guards that send a size elsewhere, and the patterns that
keep tracing per size with a reason."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import execmode as em
import execmode.nn.functional as F
from execmode.symbolic_sizes import SizeEnv, SymInt, resolve, sizes_bound

em.random.seed(0)
C, T = 8, 40
EMB, POS = em.randn(11, C) * 0.5, em.randn(T, C) * 0.5
WQ, WK = em.randn(C, C) * 0.3, em.randn(C, C) * 0.3


def _attention(idx):
    """A growing context: t-dependent slicing and creation, masks, softmax, matmuls."""
    t = idx.shape[1]
    x = EMB[idx] + POS[:t]
    att = (x @ WQ) @ (x @ WK).transpose(-2, -1) * C ** -0.5
    att = att.masked_fill(~em.tril(em.ones(t, t, dtype=em.bool)), float("-inf"))
    x = x + F.softmax(att, dim=-1) @ x
    return F.layer_norm(x, C).sum(axis=1) / t + em.arange(C)[None, :] * 0.1


def _contexts(lengths):
    rng = np.random.default_rng(1)
    return [em.tensor(rng.integers(0, 11, size=(1, n))) for n in lengths]


def _run(fn, inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", em.JitWarning)
        return [fn(x) for x in inputs]


def _assert_same(got, expected):
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_a_growing_context_runs_every_size_from_one_graph():
    lengths = list(range(1, T))
    inputs = _contexts(lengths)
    f = em.jit(_attention)
    got = _run(f, inputs)
    _assert_same(got, _run(_attention, inputs))
    # Size 1 is specialized (it is the first, and broadcasting depends on it); sizes 2
    # and 3 trace symbolically and agree; every later size replays without tracing.
    assert f.trace_count == 3 and f.eager_fallbacks == 0, (f.trace_count, f.retraces)
    assert "one graph now serves every size" in f.retraces[-1].reason, f.retraces[-1].reason
    ((generic,),) = f._sizes.generic.values()
    assert generic.calls == len(lengths) - 3
    # Sizes seen before and after come from the same plan: no compile per size.
    compiles = f.compile_count
    _assert_same(_run(f, _contexts([7, 30, 2])), _run(_attention, _contexts([7, 30, 2])))
    assert f.compile_count == compiles and f.trace_count == 3


def test_the_plan_for_every_size_is_built_once():
    f = em.jit(_attention)
    _run(f, _contexts([1, 2, 3]))
    ((generic,),) = f._sizes.generic.values()
    plan, steps = generic.plan, list(generic.plan.steps)
    _run(f, _contexts(range(4, 20)))
    assert generic.plan is plan and generic.plan.steps == steps
    assert generic.calls == 16


def _branchy(x):
    # A Python decision on the size: its answer is a guard of the size-generic graph.
    if x.shape[0] > 6:
        return x * 2.0
    return x + 1.0


def test_a_decision_on_the_size_retraces_when_its_answer_changes():
    f = em.jit(_branchy)
    inputs = [em.ones(n, 3) * n for n in range(1, 12)]
    _assert_same(_run(f, inputs), _run(_branchy, inputs))
    # 1 (specialized), 2 and 3 (symbolic, agree); 4..6 replay; 7 answers `> 6` the other
    # way: traced anew (a candidate for that side), 8 agrees with it; 9.. replay.
    assert f.trace_count == 5, [r.reason for r in f.retraces]
    assert len(f._sizes.generic) == 1 or all(
        g.calls > 0 for g in f._sizes.generic.values())
    assert f.eager_fallbacks == 0


def _unrolled(x):
    # A Python loop over the size: the graph itself depends on it.
    y = x[0]
    for i in range(1, x.shape[0]):
        y = y * 0.5 + x[i]
    return y


def test_a_graph_that_depends_on_the_size_keeps_tracing_per_size_with_a_reason():
    f = em.jit(_unrolled, cache_size_limit=None)
    inputs = [em.arange(n * 2, dtype=em.float32).reshape(n, 2) for n in range(1, 9)]
    _assert_same(_run(f, inputs), _run(_unrolled, inputs))
    assert f.trace_count == 8 and not f._sizes.generic
    assert any("traced per size: the graph at sizes" in r.reason for r in f.retraces), \
        [r.reason for r in f.retraces]


def _baked(x):
    # x.shape[0] - 1 computed from len(): a plain int the tracer cannot follow.
    n = len(x) - 1
    return x[:n].sum(axis=0)


def test_a_size_baked_through_len_is_a_difference_not_a_wrong_value():
    f = em.jit(_baked, cache_size_limit=None)
    inputs = [em.arange(n * 3, dtype=em.float32).reshape(n, 3) for n in range(1, 9)]
    _assert_same(_run(f, inputs), _run(_baked, inputs))
    assert not f._sizes.generic and f.trace_count == 8


def _pair(x, y):
    return (x * y).sum(axis=0)


def test_sizes_equal_when_traced_must_be_equal_to_replay():
    f = em.jit(_pair)
    for n in (1, 2, 3, 4):
        _assert_same([f(em.ones(n, 2), em.ones(n, 2) * 2)], [_pair(em.ones(n, 2),
                                                                   em.ones(n, 2) * 2)])
    assert f._sizes.generic
    traces = f.trace_count
    # Unequal sizes: not the generic graph's (x and y were equal); eager's error.
    with pytest.raises(Exception) as eager_error:
        _pair(em.ones(5, 2), em.ones(6, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", em.JitWarning)
        with pytest.raises(type(eager_error.value)):
            f(em.ones(5, 2), em.ones(6, 2))
    assert f.trace_count == traces + 1


def _window(x):
    # pos[:t] stops growing at pos's length: the order against that static size is a guard.
    t = x.shape[0]
    return POS[:t].sum(axis=0) + x.sum(axis=0)


def test_a_size_past_a_static_length_is_not_replayed_from_the_shorter_graph():
    f = em.jit(_window, cache_size_limit=None)
    inputs = [em.ones(n, C) for n in list(range(1, 8)) + [T - 1, T, T + 1, T + 5, T + 9]]
    _assert_same(_run(f, inputs), _run(_window, inputs))
    assert f.eager_fallbacks == 0


def test_symbolic_ints_stay_symbolic_and_record_their_comparisons():
    env = SizeEnv(["x dim 0"])
    t = SymInt(5, "s[0]", env)
    u = (t + 1) * 2 - t // 2
    assert u == 10 and isinstance(u, SymInt)
    assert resolve((u, slice(None, t)), (9,)) == (16, slice(None, 9))
    assert not (t > 6)
    with sizes_bound((3,)):
        assert resolve(t * t) == 9
    assert resolve(t * t) == 25  # outside a size-generic replay: the traced size
    assert ("(((s[0] + 1) * 2) - (s[0] // 2))", "==", "10") not in env.guards  # (a lookup)
    assert u != 11 and env.guards[("(((s[0] + 1) * 2) - (s[0] // 2))", "!=", "11")] is True
    assert env.guards[("s[0]", ">", "6")] is False
    env.open = False
    assert t < 100 and ("s[0]", "<", "100") not in env.guards  # after the trace: no guard


BUF = em.zeros(50, 3)


def _writes(x):
    # In-place writes to the argument and to a captured buffer, through symbolic slices.
    t = x.shape[0]
    x[1:] += 1.0
    BUF[:t] = x * 2
    return x.sum(axis=0), x


def test_writes_through_symbolic_slices_leave_eagers_state():
    f = em.jit(_writes, cache_size_limit=None)
    for n in [1, 2, 3, 4, 5, 7, 9, 12]:
        a = em.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
        b = em.tensor(a.numpy().copy())
        BUF[...] = 0
        eager = _writes(a)
        eager_buf = BUF.numpy().copy()
        BUF[...] = 0
        got = f(b)
        assert np.array_equal(got[0].numpy(), eager[0].numpy())
        assert got[1] is b and eager[1] is a  # the caller's own tensor, as eagerly
        assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(BUF.numpy(), eager_buf)
    assert sum(g.calls for gs in f._sizes.generic.values() for g in gs) > 0


def _view_results(x):
    return x[1:] * 1.0, x.transpose(1, 0)


def _views_of_a_result(x):
    h = x * 2.0
    return h[1:], h.transpose(1, 0)


def test_views_of_a_result_are_rebuilt_at_each_size():
    f = em.jit(_views_of_a_result, cache_size_limit=None)
    for n in range(1, 9):
        x = em.arange(n * 3, dtype=em.float32).reshape(n, 3)
        got, eager = f(x), _views_of_a_result(x)
        for g, e in zip(got, eager):
            assert g.shape == e.shape and np.array_equal(g.numpy(), e.numpy())
        # Two views of one result share its memory as eagerly (none when one is empty).
        assert np.shares_memory(got[0].numpy(), got[1].numpy()) == \
            np.shares_memory(eager[0].numpy(), eager[1].numpy())
    assert sum(g.calls for gs in f._sizes.generic.values() for g in gs) > 0


def test_a_view_of_an_input_keeps_tracing_per_size_and_says_why():
    f = em.jit(_view_results, cache_size_limit=None)
    for n in range(1, 7):
        x = em.ones(n, 3)
        got, eager = f(x), _view_results(x)
        assert all(np.array_equal(g.numpy(), e.numpy()) for g, e in zip(got, eager))
        assert np.shares_memory(got[1].numpy(), x.numpy())  # a view, as eagerly
    assert not f._sizes.generic
    assert "a view of an input" in f.retraces[-1].reason, f.retraces[-1].reason


MODE = {"double": False}


def _reads_a_global(x):
    if MODE["double"]:
        return x * 2.0
    return x + 1.0


def test_a_changed_global_is_not_served_by_the_size_generic_graph():
    f = em.jit(_reads_a_global, cache_size_limit=None)
    MODE["double"] = False
    _run(f, [em.ones(n, 2) for n in (1, 2, 3, 4)])
    assert f._sizes.generic
    MODE["double"] = True
    try:
        got = f(em.ones(5, 2))
        assert np.array_equal(got.numpy(), np.full((5, 2), 2.0, np.float32))
    finally:
        MODE["double"] = False


def test_the_sizes_a_plan_runs_with_are_each_threads_own():
    # A size-generic plan resolves its symbolic attributes from the calling thread's
    # sizes: another thread's call at another size must not see them (a module-level
    # name once shadowed the thread-local, and two threads read each other's sizes).
    import threading

    from execmode.symbolic_sizes import bound_sizes, sizes_bound

    seen = []
    entered, checked = threading.Event(), threading.Event()

    def other():
        entered.wait(10)
        seen.append(bound_sizes())
        with sizes_bound((11,)):
            seen.append(bound_sizes())
        checked.set()

    thread = threading.Thread(target=other)
    thread.start()
    with sizes_bound((5,)):
        entered.set()
        checked.wait(10)
        assert bound_sizes() == (5,)
    thread.join(10)
    assert seen == [None, (11,)]
