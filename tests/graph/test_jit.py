"""em.jit semantics: signatures and retraces, captures, side effects, state, pytrees,
stages, errors in graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em


def test_retrace_on_new_shape_dtype_and_static_arg_not_on_new_values():
    @em.jit
    def f(x, scale):
        return x * scale

    f(em.ones(4, 3), 2.0)
    f(em.full((4, 3), 5.0), 2.0)        # new values: no retrace
    assert f.trace_count == 1
    f(em.ones(2, 3), 2.0)               # new shape
    f(em.ones(2, 3, dtype=em.float64), 2.0)   # new dtype
    f(em.ones(2, 3, dtype=em.float64), 3.0)   # new static value
    assert f.trace_count == 4
    reasons = [r.reason for r in f.retraces]
    assert reasons == [
        # The second size of dim 0 makes it dynamic (jit_driver/cache_policy.py).
        "x: shape (4, 3) -> (2, 3); dynamic: x dim 0 (no kernels compiled for this size); "
        "x dim 0 traced with symbolic sizes (served at every size once a trace at another "
        "size gives the same graph)",
        "x: dtype float32 -> float64",
        "static arg scale: 2.0 -> 3.0",
    ]
    assert len(f.concrete_functions) == 4


def test_captured_weights_are_read_at_every_call():
    w = em.ones(3)

    @em.jit
    def f(x):
        return x * w

    x = em.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(f(x).numpy(), [1, 2, 3])
    with em.no_grad():
        w -= 1.0          # in-place: the same tensor, new values
    np.testing.assert_allclose(f(x).numpy(), [0, 0, 0])
    em.assign(w, em.tensor([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(f(x).numpy(), [2, 4, 6])
    assert f.trace_count == 1
    graph = f.trace(x).graph
    assert any(n.attr.get("kind") == "capture" for n in graph.input_nodes)
    assert not any(n.op in ("constant", "full") for n in graph.nodes)


def test_a_print_happens_only_while_tracing(capsys):
    @em.jit
    def f(x):
        print("traced")
        return x + 1

    for _ in range(3):
        f(em.ones(2))
    assert capsys.readouterr().out == "traced\n"
    with em.disable_jit():
        f(em.ones(2))
    assert capsys.readouterr().out == "traced\n"


def test_a_write_to_python_state_happens_at_every_call():
    # Issue 38: a list append is state eager leaves behind; jit notices it while tracing
    # and runs the Python at every call (the graph compiles once).
    calls = []

    @em.jit
    def f(x):
        calls.append("ran")
        return x + 1

    for _ in range(3):
        f(em.ones(2))
    assert calls == ["ran"] * 3
    assert f.compile_count == 1
    with em.disable_jit():
        f(em.ones(2))
    assert calls == ["ran"] * 4


def test_in_place_update_of_an_argument_becomes_an_assign():
    @em.jit
    def bump(counter):
        with em.no_grad():
            counter += 1
        return counter * 10

    c = em.zeros(2)
    out = bump(c)
    np.testing.assert_allclose(c.numpy(), [1, 1])
    np.testing.assert_allclose(out.numpy(), [10, 10])
    bump(c)
    np.testing.assert_allclose(c.numpy(), [2, 2])
    assert bump.trace_count == 1
    graph = bump.trace(c).graph
    assert [n.op for n in graph.assigns] == ["assign"]


def _train(jit: bool, steps: int = 6):
    em.random.seed(3)
    model = em.nn.MLP([5, 8, 1])
    opt = em.optim.Adam(model.parameters(), lr=0.05)
    x = em.randn(16, 5)
    y = x.sum(axis=1, keepdims=True) * 0.5

    def step(x, y):
        opt.zero_grad()
        loss = em.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = em.jit(step) if jit else step
    losses = [run(x, y).item() for _ in range(steps)]
    return losses, run


def test_jitted_training_step_trains_like_eager():
    eager, _ = _train(jit=False)
    jitted, step = _train(jit=True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    assert jitted[-1] < jitted[0]
    assert step.trace_count == 1  # forward, backward and update: one graph, replayed


def test_grad_accumulation_guard_retraces_with_a_reason():
    w = em.nn.Parameter(em.ones(3))

    @em.jit
    def accumulate(x):
        (w * x).sum().backward()   # reads w.grad (None on the first call) and adds to it
        return w.grad

    x = em.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(accumulate(x).numpy(), [1, 2, 3])
    np.testing.assert_allclose(accumulate(x).numpy(), [2, 4, 6])
    np.testing.assert_allclose(accumulate(x).numpy(), [3, 6, 9])
    assert accumulate.trace_count == 2
    assert "grad" in accumulate.retraces[0].reason and "None" in accumulate.retraces[0].reason


def test_pytree_arguments_and_results():
    @em.jit
    def f(batch, scale=2.0):
        return {"sum": batch["x"] + batch["y"][0], "scaled": [batch["x"] * scale]}

    b = {"x": em.ones(2), "y": (em.full((2,), 3.0), "tag")}
    out = f(b)
    np.testing.assert_allclose(out["sum"].numpy(), [4, 4])
    np.testing.assert_allclose(out["scaled"][0].numpy(), [2, 2])
    f({"x": em.ones(2), "y": (em.full((2,), 1.0), "tag")})
    assert f.trace_count == 1
    f({"x": em.ones(2), "y": (em.full((2,), 1.0), "other")})
    assert f.trace_count == 2


def test_stages_trace_lower_compile():
    w = em.randn(4, 4)

    def f(x):
        return em.relu(x @ w) + 1.0

    jf = em.jit(f)
    x = em.randn(2, 4)
    traced = jf.trace(x)
    assert "matmul" in str(traced.graph)
    lowered = traced.lower()
    assert lowered.graph.op_nodes and lowered.record.results
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-6)
    assert compiled.plan.kernel_count <= len(traced.graph.op_nodes)


def test_shape_error_while_tracing_names_op_shapes_and_line():
    @em.jit
    def f(x, y):
        return x @ y  # LINE

    with pytest.raises(em.ShapeError) as info:
        f(em.ones(2, 3), em.ones(4, 5))
    msg = str(info.value)
    assert "matmul(f32[2,3]@cpu, f32[4,5]@cpu)" in msg
    line = f.fn.__code__.co_firstlineno + 2
    assert f"{__file__}:{line} in " in msg and msg.rstrip().endswith(".f")


def test_disable_jit_runs_eagerly():
    @em.jit
    def f(x):
        return bool(x.sum() > 0)  # would break in graph mode

    with em.disable_jit():
        assert f(em.ones(2)) is True
    assert f.trace_count == 0
