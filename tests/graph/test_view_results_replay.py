"""Results on every replay tier: the fast replays (jit_driver/fastcall.py) give the general
path's values, strides and aliasing, for results that are views of a graph output (views
of one output, a repeated result, a differentiable view) and for a training step's state,
so a jitted training step takes the fast replay with eager's results. A step's .grads are
arrays of their own in the parameters' (C) layout, as eager's and PyTorch's are
(grad_accumulation.py), though backward computes a weight's as a transposed product and a
bias's as a reshaped sum."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
import execmode.torch as torch
from execmode.jit_driver import paths

TIERS = ("general", "generated", "native")
# What the newest signature's replay is on each tier: a training step writes .grad, which
# the C entry leaves to the generated replay.
STEP_REPLAY = {"general": "NoneType", "generated": "function", "native": "function"}


def _layout(t) -> tuple:
    """Everything about a tensor a replay could get wrong, its values aside."""
    d = t._data
    return (t.shape, str(d.dtype), d.strides, d.flags.c_contiguous, d.flags.f_contiguous,
            d.base is not None, t.requires_grad, t.grad_fn is not None)


def _sharing(tensors) -> list:
    """Which of ``tensors`` share memory with which (the aliasing the caller can see)."""
    arrays = [t._data for t in tensors]
    return [(i, j) for i in range(len(arrays)) for j in range(i + 1, len(arrays))
            if np.shares_memory(arrays[i], arrays[j])]


def _training_step():
    """A two-layer classifier, its SGD step as one jitted function, and the initial
    weights (for putting them back between tiers)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(),
                                torch.nn.Linear(5, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    initial = [p._data.copy() for p in params]

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, params, initial


def _state(loss, params) -> dict:
    grads = [p.grad for p in params]
    return {"loss": (loss.numpy().copy(), _layout(loss)),
            "params": [p._data.copy() for p in params],
            "grads": [(g.numpy().copy(), _layout(g)) for g in grads],
            "sharing": _sharing([loss, *params, *grads])}


def test_a_training_step_gives_the_general_paths_results_on_every_tier():
    step, params, initial = _training_step()
    x = torch.randn(4, 6)
    y = torch.tensor([0, 2, 1, 1])
    jitted = em.jit(step)
    got = {}
    for tier in TIERS:
        with paths.pinned(replay=tier):
            jitted(x, y)  # (the first call after a switch builds the tier's replay)
            assert type(jitted._fast).__name__ == STEP_REPLAY[tier]
            for p, value in zip(params, initial):
                p._data[...] = value
            got[tier] = _state(jitted(x, y), params)
    for p, value in zip(params, initial):
        p._data[...] = value
    eager = _state(step(x, y), params)
    for tier in TIERS:
        for name in ("params", "grads"):
            for (a, b) in zip(got[tier][name], got["general"][name]):
                # Bit for bit: the same plan ran; only the rebuilding of results differs.
                a, b = (a, b) if name == "params" else (a[0], b[0])
                assert np.array_equal(a, b), (tier, name)
        assert np.array_equal(got[tier]["loss"][0], got["general"]["loss"][0])
        assert got[tier]["loss"][1] == got["general"]["loss"][1] == eager["loss"][1]
        assert [g[1] for g in got[tier]["grads"]] == [g[1] for g in eager["grads"]], tier
        assert got[tier]["sharing"] == eager["sharing"], tier
        for (g, _), (e, _) in zip(got[tier]["grads"], eager["grads"]):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        for g, e in zip(got[tier]["params"], eager["params"]):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    # A Linear weight's gradient is stored in the weight's C layout (backward computes it
    # as a transpose of x.T @ g), an array of its own; so is a bias's (a reshaped sum).
    weight, bias = params[0], params[1]
    for grad, param in ((eager["grads"][0][1], weight), (eager["grads"][1][1], bias)):
        assert grad[2] == param._data.strides and grad[3] and not grad[5]


def test_a_training_step_takes_the_fast_replay():
    step, params, _ = _training_step()
    x = torch.randn(4, 6)
    y = torch.tensor([0, 2, 1, 1])
    with paths.pinned(replay="generated"):
        jitted = em.jit(step)
        jitted(x, y)
        (cf,) = jitted.concrete_functions
        # Every .grad is an output of its own (no view of another output to rebuild).
        assert [kind for kind, _ in cf.out_spec].count("out_view") == 0
        calls = cf.calls
        for _ in range(3):
            jitted(x, y)
        assert cf.calls == calls  # the general path counts the calls it takes: none
        assert jitted.retraces == []
        for p in params:
            assert p.grad._data.strides == p._data.strides and p.grad._data.base is None


@pytest.mark.parametrize("tier", TIERS)
def test_views_of_one_output_and_a_repeated_result_keep_eagers_aliasing(tier):
    def f(a, b):
        product = a @ b
        doubled = a * 2.0
        return product.T, product.reshape(-1), product, doubled, doubled, product[1]

    a = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = em.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    want = f(a, b)
    with paths.pinned(replay=tier):
        jitted = em.jit(f)
        jitted(a, b)
        calls = jitted.concrete_functions[0].calls
        got = jitted(a, b)
        if tier != "general":
            assert jitted.concrete_functions[0].calls == calls
    for g, w in zip(got, want):
        assert np.array_equal(g.numpy(), w.numpy())
        assert _layout(g) == _layout(w)
    assert _sharing(got) == _sharing(want) == [(0, 1), (0, 2), (0, 5), (1, 2), (1, 5),
                                               (2, 5), (3, 4)]
    assert got[3] is got[4] and got[0] is not got[2]
    assert got[0]._data.base is got[2]._data.base or got[0]._data.base is got[2]._data


@pytest.mark.parametrize("tier", TIERS)
def test_a_differentiable_view_result_backpropagates_on_every_tier(tier):
    def f(a, b):
        product = a @ b
        return product.T, product

    weights = em.tensor(np.arange(8, dtype=np.float32).reshape(4, 2))

    def run(call):
        a = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        b = em.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        transposed, product = call(a, b)
        (transposed * weights).sum().backward()
        return transposed, a.grad

    want_t, want_grad = run(f)
    with paths.pinned(replay=tier):
        jitted = em.jit(f)
        run(jitted)
        got_t, got_grad = run(jitted)
        assert [kind for kind, _ in jitted.concrete_functions[0].out_spec] == \
            ["out_view", "out_rg"]
    assert _layout(got_t) == _layout(want_t)
    assert np.array_equal(got_grad.numpy(), want_grad.numpy())


def test_views_of_pooled_buffers_are_taken_once_and_read_each_calls_values():
    """The generated replay takes a view of a pooled buffer once (fastcall._fixed_view):
    it must still read each call's values, and a reshape NumPy copies must stay a step.
    (A cumsum keeps the graph out of a whole-graph program, which would copy the view
    itself: the replay runs the plan's steps.)"""
    def f(x, w):
        h = em.tanh(x @ w) * 2.0           # one kernel into a pooled buffer
        flat = em.reshape(h.T, (-1,))      # a transposed view of it, then a copy
        return em.sum(em.exp(em.cumsum(flat, axis=0)) + 1.0, axis=0), em.matmul(h.T, x)

    rng = np.random.default_rng(0)
    x = em.tensor(rng.standard_normal((8, 6)).astype(np.float32))
    w = em.tensor(rng.standard_normal((6, 5)).astype(np.float32))
    inputs = [np.ones((8, 6), np.float32)] + [
        rng.standard_normal((8, 6)).astype(np.float32) for _ in range(2)]
    got = {}
    for tier in ("general", "generated"):
        with paths.pinned(replay=tier):
            jitted = em.jit(f)
            jitted(x, w)
            runs = []
            for value in inputs:
                x._data[...] = value  # (the caller's array, written between calls)
                runs.append([r.numpy().copy() for r in jitted(x, w)] +
                            [r.numpy() for r in f(x, w)])
            got[tier] = runs
            if tier == "generated":
                assert "= view" in jitted._fast.__source__
    for general, generated in zip(got["general"], got["generated"]):
        for a, b in zip(general[:2], generated[:2]):
            assert np.array_equal(a, b)
        for a, eager in zip(generated[:2], generated[2:]):
            np.testing.assert_allclose(a, eager, rtol=1e-5, atol=1e-5)
