"""A function with graph breaks re-runs its Python at every call; a call that traces the
segments the call before it traced reuses their types and plans (graph/segment_match.py),
and one that differs anywhere, however little, takes the full path."""

from __future__ import annotations

import numpy as np

import execmode as em
from execmode.graph import ir, segment_match


def _count_hashes(monkeypatch) -> list:
    """Count structural hashes: the full path's way of finding a segment's plan."""
    calls = []
    original = ir.Graph.structural_hash

    def counted(graph):
        calls.append(graph.name)
        return original(graph)

    monkeypatch.setattr(ir.Graph, "structural_hash", counted)
    return calls


def _three_breaks(x):
    for _ in range(3):
        x = em.tanh(x) * 0.5
        if float(x.sum().item()) > 1e9:
            x = x * 0.0
    return x


def test_same_segments_reuse_the_previous_calls_plans(monkeypatch):
    f = em.jit(_three_breaks)
    x = em.tensor(np.linspace(-2, 2, 8, dtype=np.float32))
    f(x)
    compiled = f.compile_count
    hashes = _count_hashes(monkeypatch)
    for _ in range(3):
        out = f(x)
        np.testing.assert_allclose(out.numpy(), _three_breaks(x).numpy(), rtol=1e-5)
    assert hashes == []  # every segment matched the call before's
    assert f.compile_count == compiled


def _branchy(x):
    if float(x.sum().item()) > 0:  # segment 1 holds a different op on each branch
        y = x * 2.0
    else:
        y = x + 1.0
    if float(y.sum().item()) > 1e9:
        y = y * 0.0
    return em.exp(y)


def test_a_different_branch_takes_the_full_path(monkeypatch):
    f = em.jit(_branchy)
    up = em.tensor(np.array([1.0, 2.0], np.float32))
    down = em.tensor(np.array([-1.0, -2.0], np.float32))
    f(up)
    hashes = _count_hashes(monkeypatch)
    for x in (down, up, down, down):
        np.testing.assert_allclose(f(x).numpy(), _branchy(x).numpy(), rtol=1e-5)
    # The branch's segment hashes whenever the call before took the other branch (the
    # segments after it hold the same nodes, ids included); two calls down in a row match.
    assert hashes == ["_branchy#0:1"] * 3


def _signed_zero(x):
    positive = float(x.sum().item()) > 0
    y = x * (0.0 if positive else -0.0)  # the same op, a literal of other bits
    return 1.0 / y


def _int_or_float(x):
    positive = float(x.sum().item()) > 0
    return x * (2 if positive else 2.0)  # the same value, another type


def test_literals_compare_by_type_and_bits():
    f = em.jit(_signed_zero)
    up = em.tensor(np.array([1.0, 2.0], np.float32))
    down = em.tensor(np.array([-1.0, -2.0], np.float32))
    for x in (up, down, up, down):
        np.testing.assert_array_equal(f(x).numpy(), _signed_zero(x).numpy())
    g = em.jit(_int_or_float)
    up = em.tensor(np.array([1, 2], np.int32))
    down = em.tensor(np.array([-1, -2], np.int32))
    for x in (up, down, up, down):
        got, want = g(x), _int_or_float(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_both_paths_give_the_same_bits(monkeypatch):
    x = em.tensor(np.linspace(-2, 2, 8, dtype=np.float32))
    outputs = {}
    for matching in (True, False):
        monkeypatch.setattr(segment_match, "MATCHING", matching)
        f = em.jit(_three_breaks)
        outputs[matching] = [f(x).numpy() for _ in range(3)]
    for matched, full in zip(outputs[True], outputs[False]):
        assert matched.tobytes() == full.tobytes()


def _same_ops_on_two_lines(x):
    if float(x.sum().item()) > 0:
        y = em.tanh(x) * 0.5  # _UP_LINE
    else:
        y = em.tanh(x) * 0.5  # _DOWN_LINE
    if float(y.sum().item()) > 1e9:
        y = y * 0.0
    return y


def _line_of(marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(_same_ops_on_two_lines)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def test_a_matched_segment_keeps_this_calls_lines():
    """The previous call's nodes are reused only where nothing differs, the user's line
    included: the same ops from another line carry that line (errors and the debugger
    name it), and the breaks after them keep theirs."""
    up = (em.tensor(np.array([1.0, 2.0], np.float32)), "_UP_LINE")
    down = (em.tensor(np.array([-1.0, -2.0], np.float32)), "_DOWN_LINE")
    # Three calls each: all traced (later ones may run eagerly, cache_policy.BreakCost).
    for calls in ((up, down, down), (down, up, up)):
        f = em.jit(_same_ops_on_two_lines)
        for x, marker in calls:
            np.testing.assert_array_equal(f(x).numpy(), _same_ops_on_two_lines(x).numpy())
            cf = f.concrete_functions[0]
            ops = [n for n in cf.segments[1].graph.nodes if n.op in ("tanh", "multiply")]
            assert [n.loc.lineno for n in ops] == [_line_of(marker)] * 2
            assert [b.lineno for b in cf.breaks] == [_line_of("> 0:"), _line_of("> 1e9:")]
