"""A fused node run member by member (no kernel: dynamic sizes, no C compiler) as one
generated function of straight-line calls (plan._members_op_by_op): eager's values, and a
failing member named as the interpreter names it."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.graph.ir import FUSED
from execmode.plan import _members_one_at_a_time, _members_op_by_op


def chain(x, y):
    return em.tanh(x * 2.0 + y) * y - 0.5  # one fused node, y read twice


def _fused_node():
    x, y = em.ones(3, 4), em.ones(4)
    jitted = em.jit(chain)
    jitted(x, y)
    lowered = jitted.concrete_functions[-1].segments[0].compiled.lowered
    (node,) = [n for n in lowered.nodes if n.op == FUSED]
    return node, lowered


def test_the_members_give_eagers_values():
    node, lowered = _fused_node()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    by_id = dict(zip(lowered.inputs, (x, y)))
    arrays = [by_id[i] for i in node.node_inputs]
    got = _members_op_by_op(node)(*arrays)
    want = chain(em.tensor(x), em.tensor(y)).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    assert np.array_equal(got, _members_one_at_a_time(
        [(m, f) for m, f in zip(node.body, _op_functions(node))], node.node_inputs)(*arrays))


def _op_functions(node):
    from execmode.graph.op_call import op_function
    return [op_function(m) for m in node.body]


def test_a_failing_member_is_named_as_one_at_a_time_names_it():
    node, lowered = _fused_node()
    by_id = dict(zip(lowered.inputs, (np.ones((3, 4), np.float32),
                                      np.ones(5, np.float32))))  # y no longer broadcasts
    arrays = [by_id[i] for i in node.node_inputs]
    with pytest.raises(Exception) as generated:
        _members_op_by_op(node)(*arrays)
    with pytest.raises(Exception) as stepwise:
        _members_one_at_a_time(list(zip(node.body, _op_functions(node))),
                               node.node_inputs)(*arrays)
    assert type(generated.value) is type(stepwise.value)
    assert str(generated.value) == str(stepwise.value)
    assert generated.value.__notes__ == stepwise.value.__notes__
    assert generated.value.__notes__[0].startswith("while executing %")
