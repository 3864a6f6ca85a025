"""Regression tests for bugs a review reproduced: each once gave a different answer under
em.jit than eagerly (or crashed, or left state behind)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import execmode as em


def _both(fn, make_args):
    """fn eagerly and jitted (first call and a replay), on fresh arguments each time."""
    eager = fn(*make_args())
    jitted = em.jit(fn)
    return eager, jitted(*make_args()), jitted(*make_args())


def _np(x):
    return x.numpy() if isinstance(x, em.Tensor) else np.asarray(x)


def test_a_returned_copy_is_not_changed_by_a_later_assign_to_its_source():
    def f(x, y):
        t = x.clone()
        em.assign(x, y)
        return t * 1.0, x + 0.0

    def args():
        return em.tensor([1.0, 2.0]), em.tensor([5.0, 6.0])

    for got in _both(f, args):
        np.testing.assert_allclose(_np(got[0]), [1.0, 2.0])
        np.testing.assert_allclose(_np(got[1]), [5.0, 6.0])


def test_swapping_two_arguments_in_place():
    def swap(a, b):
        t = a.clone()
        em.assign(a, b)
        em.assign(b, t)
        return a.sum()

    for jit in (False, True):
        f = em.jit(swap) if jit else swap
        for _ in range(2):
            a, b = em.tensor([1.0, 2.0]), em.tensor([5.0, 6.0])
            f(a, b)
            np.testing.assert_allclose(a.numpy(), [5.0, 6.0])
            np.testing.assert_allclose(b.numpy(), [1.0, 2.0])


def test_copy_with_memory_planning_alone():
    x = em.tensor([1.0, 2.0])
    np.testing.assert_allclose(em.jit(lambda x: x.clone() * 2, passes=["memplan"])(x).numpy(),
                               [2.0, 4.0])


def test_returning_an_input_next_to_computed_outputs():
    def f(x):
        return x, (x * 2 + 1).sum(axis=1), x * 3 + 1

    x = em.arange(6).astype(em.float32).reshape(2, 3)
    for got in _both(f, lambda: (x,)):
        np.testing.assert_allclose(_np(got[0]), x.numpy())
        np.testing.assert_allclose(_np(got[1]), [9.0, 27.0])


def test_a_grad_written_before_a_graph_break_is_kept():
    w = em.nn.Parameter(em.tensor([1.0, 2.0]))

    def f(x):
        w.grad = None
        loss = (x * w).sum()
        loss.backward()
        loss.item()  # a graph break after backward
        return loss

    for jit in (False, True):
        g = em.jit(f) if jit else f
        g(em.tensor([3.0, 4.0]))
        np.testing.assert_allclose(w.grad.numpy(), [3.0, 4.0])


def test_namedtuple_arguments_are_pytree_nodes():
    Batch = namedtuple("Batch", "x y")
    f = em.jit(lambda b: b.x + b.y)
    for k in (1.0, 2.0, 3.0):
        out = f(Batch(em.full((3,), k), em.zeros(3)))
        np.testing.assert_allclose(out.numpy(), [k] * 3)
    assert f.trace_count == 1


def test_grads_of_arguments_go_to_this_calls_tensors():
    def f(x):
        (x * x).sum().backward()

    g = em.jit(f)
    x1 = em.tensor([1.0, 2.0], requires_grad=True)
    g(x1)
    x1.grad = None
    x2 = em.tensor([10.0, 20.0], requires_grad=True)
    g(x2)
    assert x1.grad is None
    np.testing.assert_allclose(x2.grad.numpy(), [20.0, 40.0])


def test_folding_keeps_negative_zero():
    def f(x):
        return x / (em.tensor([0.0, -0.0]) * 1.0)

    x = em.ones(2)
    np.testing.assert_array_equal(em.jit(f)(x).numpy(), f(x).numpy())


def test_no_in_place_write_over_an_operand_read_through_a_view():
    w = em.randn(16, 16)

    def f(x):
        a = x * 3.0
        return ((a + a.mT) * 2.0) @ w

    x = em.randn(16, 16)
    np.testing.assert_allclose(em.jit(f)(x).numpy(), f(x).numpy(), rtol=1e-4, atol=1e-4)


def test_an_exception_while_tracing_leaves_captures_as_they_were():
    w = em.tensor([1.0, 2.0])

    @em.jit
    def f(x):
        with em.no_grad():
            w.__iadd__(x)
        return x @ em.ones(3)  # a shape error after the in-place update

    with pytest.raises(em.ShapeError):
        f(em.ones(2))
    np.testing.assert_allclose((w + 1).numpy(), [2.0, 3.0])


def test_eager_ops_on_a_leaked_tensor_say_it_leaked():
    leaked = []

    @em.jit
    def f(x):
        leaked.append(x * 2)
        return x + 1

    f(em.ones(2))
    with pytest.raises(em.GraphBreakError, match="escaped the trace"):
        leaked[0] + 1.0
    with pytest.raises(em.GraphBreakError, match="escaped the trace"):
        em.ones(2) + leaked[0]


def test_requires_grad_of_a_capture_is_guarded_when_backward_ran():
    w = em.tensor([1.0, 2.0])

    @em.jit
    def f(x):
        loss = (x * w).sum()
        if loss.requires_grad:
            loss.backward()
        return loss

    x = em.tensor([3.0, 4.0], requires_grad=True)
    f(x)
    assert w.grad is None
    w.requires_grad_(True)
    f(em.tensor([3.0, 4.0], requires_grad=True))
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 4.0])


def test_the_same_tensor_passed_twice_sees_in_place_updates():
    def h(x, y):
        with em.no_grad():
            x += 10.0
        return y * 1.5

    for jit in (False, True):
        g = em.jit(h) if jit else h
        for _ in range(2):
            a = em.tensor([1.0, 2.0])
            np.testing.assert_allclose(g(a, a).numpy(), [16.5, 18.0])
            b, c = em.tensor([1.0, 2.0]), em.tensor([1.0, 2.0])
            np.testing.assert_allclose(g(b, c).numpy(), [1.5, 3.0])


def test_custom_passes_run_before_memory_planning():
    from execmode.graph.ir import Node, replace
    from execmode.passes.record import Rewrite

    def add_skip(graph):
        # A residual: output + first input, as a new node.
        out = graph.node(graph.outputs[0])
        new = Node(graph.max_id() + 1, "add", (out.id, graph.inputs[0]), (), out.shape,
                   out.dtype, out.device)
        g = graph.copy(nodes=graph.nodes + [new], outputs=[new.id])
        return g, [Rewrite(f"skip %{new.id}", (new.id,), "x")], {}, {}

    def f(x):
        return em.tanh(x @ x.mT) * 2.0

    x = em.randn(8, 8)
    got = em.jit(f, passes=["fold", "fuse", "memplan", ("add_skip", add_skip)])(x)
    np.testing.assert_allclose(got.numpy(), (f(x) + x).numpy(), rtol=1e-5, atol=1e-5)
    assert replace is not None


def test_returning_a_capture_keeps_its_requires_grad():
    w = em.nn.Parameter(em.ones(2))
    em.jit(lambda x: (x * 2.0, w))(em.ones(2))
    assert w.requires_grad


def test_a_returned_argument_is_the_callers_tensor():
    def f(x):
        with em.no_grad():
            x += 1.0
        return x

    g = em.jit(f)
    for _ in range(2):
        x = em.zeros(2)
        y = g(x)
        assert y is x
        np.testing.assert_allclose(x.numpy(), [1.0, 1.0])


def test_a_differential_check_in_the_middle_of_a_run_leaves_the_run_intact():
    from execmode import instrument
    from execmode.debug.hunt import differential_check

    ws = [em.randn(8, 8) * 0.3 for _ in range(5)]

    def chain(x):
        for w in ws:
            x = em.tanh(x @ w) * 2.0
        return x

    x = em.randn(8, 8)
    expected = chain(x).numpy()
    f = em.jit(chain)
    f(x)

    class CheckMidway:
        inputs = None

        def before_kernel(self, plan, index, values):
            if index == 0:
                self.inputs = [values[s] for s in plan.input_slots]
            if index == 3:  # halfway: pooled buffers hold live values of this run
                assert differential_check(plan, self.inputs)["mismatch"] is False

    with instrument.listening(CheckMidway()):
        got = f(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
