"""What a function with graph breaks keeps between calls, and how a re-run op's attributes
are compared with the previous call's node (graph/segment_match.py)."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.graph import segment_match
from execmode.graph.ir import make_attrs


def _pairs_agree(mine: tuple, theirs: tuple) -> bool:
    """The reference: both sorted (name, value) pairs, the same names, same_value values."""
    return len(mine) == len(theirs) and all(
        a == b and segment_match.same_value(x, y) for (a, x), (b, y) in zip(mine, theirs))


@pytest.mark.parametrize("mine, theirs", [
    ({"axis": None, "keepdims": False}, {"axis": None, "keepdims": False}),
    ({"keepdims": False, "axis": None}, {"axis": None, "keepdims": False}),
    ({"axis": 1}, {"axis": 1.0}),          # 1 and 1.0 promote differently
    ({"axis": True}, {"axis": 1}),
    ({"value": 0.0}, {"value": -0.0}),     # different products
    ({"value": float("nan")}, {"value": float("nan")}),
    ({"axis": (0, 1)}, {"axis": (0, 1)}),
    ({"axis": (0, 1)}, {"axis": [0, 1]}),
    ({"axis": 0}, {"axis": 0, "keepdims": True}),
    ({"axis": 0, "keepdims": True}, {"axis": 0}),
    ({"axis": 0, "keepdim": True}, {"axis": 0, "keepdims": True}),
    ({"shape": np.array([2, 3])}, {"shape": np.array([2, 3])}),
    ({"shape": np.array([2, 3])}, {"shape": np.array([2, 3], np.int32)}),
])
def test_attrs_compare_as_their_sorted_pairs_do(mine, theirs):
    before = make_attrs(theirs)
    assert segment_match.attrs_as_before(mine, before) == _pairs_agree(make_attrs(mine),
                                                                        before)


def _reduce_after_a_break(x):
    x = em.tanh(x)
    if float(x.sum().item()) > 1e9:
        x = x * 0.0
    return x.sum(axis=0, keepdims=SETTINGS["keepdims"])


SETTINGS = {"keepdims": False}


def test_an_attribute_that_changes_between_calls_is_a_new_node(monkeypatch):
    monkeypatch.setitem(SETTINGS, "keepdims", False)
    f = em.jit(_reduce_after_a_break)
    x = em.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    for keepdims in (False, False, True, True, False):
        SETTINGS["keepdims"] = keepdims
        got, want = f(x), _reduce_after_a_break(x)
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    node = [n for n in f._last_tracer.segments[-1].graph.nodes if n.op == "sum"][-1]
    assert dict(node.attrs)["keepdims"] is False


WEIGHT = em.tensor(np.array([0.5, 2.0], np.float32))


def _scaled_with_breaks(x):
    for _ in range(3):
        x = em.tanh(x * WEIGHT)
        if float(x.sum().item()) > 1e9:
            x = x * 0.0
    return x


def test_no_guard_holds_the_values_a_break_handed_out():
    f = em.jit(_scaled_with_breaks)
    x = em.tensor(np.array([0.25, -1.0], np.float32))
    for _ in range(3):
        f(x)
    (cf,) = f.concrete_functions
    watched = [g.holder for g in cf.python_guards if g.name == "requires_grad"]
    # The captured weight is watched; the values handed out at the breaks (the next
    # segment's captures, made by the call itself) are not.
    assert any(h is WEIGHT for h in watched)
    assert all(h is WEIGHT for h in watched)
    assert len(f._last_tracer.breaks) == 3


def test_a_frozen_weight_between_calls_still_changes_the_results_flags(monkeypatch):
    w = em.tensor(np.array([0.5, 2.0], np.float32), requires_grad=True)
    monkeypatch.setitem(globals(), "WEIGHT", w)
    f = em.jit(_scaled_with_breaks)
    x = em.tensor(np.array([0.25, -1.0], np.float32))
    flags = []
    for frozen in (False, False, True, True, False):
        w.requires_grad = not frozen
        got, want = f(x), _scaled_with_breaks(x)
        assert got.requires_grad == want.requires_grad
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        flags.append(got.requires_grad)
    assert flags == [True, True, False, False, True]
