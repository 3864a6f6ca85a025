"""The pass pipeline keeps eager answers: a pass list of memory planning alone, constant
folding of -0.0, no in-place reuse of a buffer read through a view, custom passes placed
before memory planning, and a differential check halfway through a run. Each test once
gave a different answer under em.jit than eagerly."""

from __future__ import annotations

import numpy as np

import execmode as em


def test_copy_with_memory_planning_alone():
    x = em.tensor([1.0, 2.0])
    np.testing.assert_allclose(em.jit(lambda x: x.clone() * 2, passes=["memplan"])(x).numpy(),
                               [2.0, 4.0])


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
