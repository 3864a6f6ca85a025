"""Each pass: what it must do and what it must not."""

from __future__ import annotations

import math

import numpy as np
import pytest

import execmode as em
from execmode import matmul_bits


def _lower(fn, *args, passes=None):
    return em.jit(fn, passes=passes).lower(*args)


def _ops(graph):
    return [n.op for n in graph.op_nodes]


# --- constant folding -------------------------------------------------------------------

def test_fold_evaluates_constants_built_in_the_trace():
    def f(x):
        return x + em.full((3,), 2.0) * 3.0 + em.arange(3).astype(em.float32)

    low = _lower(f, em.ones(3), passes=["fold", "dce"])
    sentences = [r.sentence for r in low.record.rewrites]
    assert any("folded" in s and "-> full 6.0" in s for s in sentences)
    np.testing.assert_allclose(em.jit(f)(em.ones(3)).numpy(), [7, 8, 9])


def test_fold_never_folds_captures_or_random_numbers():
    w = em.full((3,), 2.0)

    def f(x):
        return x + w * 3.0 + em.random.normal((3,))

    low = _lower(f, em.ones(3), passes=["fold"])
    assert low.record.rewrites == []
    assert "random_normal" in _ops(low.graph)


# --- simplification -----------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    lambda x: x * 1.0, lambda x: 1.0 * x, lambda x: x + -0.0, lambda x: x - 0.0,
    lambda x: x / 1.0, lambda x: em.negative(em.negative(x)), lambda x: x.mT.mT,
    lambda x: x.reshape(6).reshape(2, 3), lambda x: x ** 1,
])
def test_simplify_removes_identities(expr):
    x = em.randn(2, 3)
    low = _lower(lambda x: expr(x) + x, x, passes=["simplify", "dce"])
    assert _ops(low.graph) == ["add"], str(low.record)
    np.testing.assert_allclose(em.jit(lambda x: expr(x) + x)(x).numpy(), (expr(x) + x).numpy())


def test_simplify_keeps_float_x_plus_zero_because_of_signed_zero():
    """-0.0 + 0.0 is +0.0: for floats only x + -0.0 is an identity (ints: x + 0 is)."""
    low = _lower(lambda x: x + 0.0, em.tensor([-0.0, 1.0]), passes=["simplify", "dce"])
    assert _ops(low.graph) == ["add"]
    out = em.jit(lambda x: x + 0.0)(em.tensor([-0.0, 1.0])).numpy()
    assert not np.signbit(out[0])
    low = _lower(lambda x: x + 0, em.tensor([1, 2]), passes=["simplify", "dce"])
    assert "add" not in _ops(low.graph)  # (a copy keeps the result fresh)


def test_simplify_keeps_x_times_zero_because_of_nan_and_inf():
    def f(x):
        return x * 0.0

    low = _lower(f, em.ones(3))
    assert "multiply" in str(low.graph)
    out = em.jit(f)(em.tensor([np.nan, np.inf, 1.0])).numpy()
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == 0


def test_simplify_turns_power_two_into_square():
    low = _lower(lambda x: x ** 2, em.ones(3), passes=["simplify"])
    assert _ops(low.graph) == ["square"]


def test_simplify_turns_a_product_read_only_through_its_transpose(monkeypatch):
    """(A @ B)^T -> B^T @ A^T: the gradient of ``x @ w.T`` w.r.t. ``w`` is such a
    transpose; turned, the update reads it contiguous. The rule fires exactly where NumPy's
    matmul gives the turned product the same bits (execmode/matmul_bits.py asks it on this
    machine, whichever sgemm kernel its BLAS runs), so the values are eager's bits either
    way; forced to fire, it rewrites the graph the same way and the values stay close."""
    import execmode.passes.simplify as simplify_module

    rng = np.random.default_rng(0)
    x = em.tensor(rng.standard_normal((64, 96)).astype(np.float32))
    g = em.tensor(rng.standard_normal((64, 48)).astype(np.float32))
    w = em.tensor(rng.standard_normal((48, 96)).astype(np.float32))

    def f(x, g, w):
        return w - 0.5 * (x.mT @ g).mT

    def turned_round(low) -> bool:
        sentences = [r.sentence for r in low.record.rewrites]
        products = [n for n in low.graph.op_nodes if n.op == "matmul"]
        assert len(products) == 1, products
        read_transposed = any(n.op == "permute_dims" and n.inputs[0] == products[0].id
                              for n in low.graph.op_nodes)
        turned = any("turned round" in s for s in sentences)
        # Turned: one product of w's shape, read directly; else x^T @ g read through .mT.
        assert products[0].shape == ((48, 96) if turned else (96, 48)), sentences
        assert read_transposed == (not turned), sentences
        return turned

    # x.mT @ g: (96 x 64) @ (64 x 48), the left operand a transpose.
    same_bits = matmul_bits.turned_same_bits("<f4", 96, 64, 48, True, False)
    low = _lower(f, x, g, w, passes=["simplify", "dce"])
    assert turned_round(low) == same_bits
    eager = f(x, g, w).numpy()
    np.testing.assert_array_equal(em.jit(f)(x, g, w).numpy(), eager)

    monkeypatch.setattr(simplify_module, "turned_same_bits", lambda *args: True)
    assert turned_round(_lower(f, x, g, w, passes=["simplify", "dce"]))
    np.testing.assert_allclose(em.jit(f)(x, g, w).numpy(), eager, rtol=1e-5, atol=1e-5)


def test_simplify_leaves_a_product_that_is_also_read_untransposed():
    rng = np.random.default_rng(1)
    a = em.tensor(rng.standard_normal((8, 5)).astype(np.float32))
    b = em.tensor(rng.standard_normal((5, 8)).astype(np.float32))

    def f(a, b):
        p = a @ b
        return p.mT + p

    low = _lower(f, a, b, passes=["simplify", "dce"])
    assert not any("turned round" in r.sentence for r in low.record.rewrites)
    # (a product this small is generated loops, not NumPy's BLAS: another summation order)
    np.testing.assert_allclose(em.jit(f)(a, b).numpy(), f(a, b).numpy(), rtol=1e-5)


# --- CSE -----------------------------------------------------------------------------------

def test_cse_merges_duplicates_and_names_them():
    def f(x):
        return em.tanh(x * 2.0) + em.tanh(x * 2.0)

    low = _lower(f, em.ones(3), passes=["cse", "dce"])
    assert _ops(low.graph) == ["multiply", "tanh", "add"]
    assert any(s.startswith("CSE: %") and " is %" in s
               for s in (r.sentence for r in low.record.rewrites))


def test_cse_does_not_merge_different_attrs_or_random_ops():
    def f(x):
        a = x.sum(axis=0, keepdims=True) + x.sum(axis=1, keepdims=True)
        return a + em.random.normal((3, 3)) + em.random.normal((3, 3))

    low = _lower(f, em.ones(3, 3), passes=["cse"])
    assert _ops(low.graph).count("sum") == 2
    assert _ops(low.graph).count("random_normal") == 2


# --- DCE ------------------------------------------------------------------------------------

def test_dce_removes_unused_and_keeps_assigns_and_impure_nodes():
    state = em.zeros(3)

    def f(x):
        em.exp(x)                      # unused
        em.random.normal((2,))         # unused but impure: kept (eager draws it too)
        with em.no_grad():
            em.assign(state, x * 2)    # overwritten below
            em.assign(state, x * 3)
        return x + 1

    low = _lower(f, em.ones(3), passes=["dce"])
    ops = _ops(low.graph)
    assert "exp" not in ops and "random_normal" in ops
    assert ops.count("assign") == 1  # the tracer writes each written input back once
    em.jit(f)(em.ones(3))
    np.testing.assert_allclose(state.numpy(), [3, 3, 3])


# --- fusion ----------------------------------------------------------------------------------

def _fused(graph):
    return [n for n in graph.nodes if n.op == "fused"]


def test_fuse_elementwise_chain_with_broadcasting():
    b = em.ones(4)

    def f(x):
        return em.tanh(x * 0.5 + b) * 0.5 + em.relu(x)

    low = _lower(f, em.randn(3, 4))
    (k,) = _fused(low.graph)
    assert k.attr["kind"] == "elementwise"
    assert [m.op for m in k.body] == ["multiply", "add", "tanh", "multiply", "relu", "add"]


def test_fuse_producers_into_a_reduction_and_stop_at_its_boundary():
    def f(x):
        e = em.exp(x - 1.0)
        return e / e.sum(axis=-1, keepdims=True)

    low = _lower(f, em.randn(3, 4))
    kinds = [k.attr["kind"] for k in _fused(low.graph)]
    for k in _fused(low.graph):
        if k.attr["kind"] == "reduction":
            assert k.body[-1].op == "sum"  # nothing after the reduction joins its group
    # exp feeds both the sum and the divide: it is an input of both groups, not a member.
    assert "exp" in _ops(low.graph) or kinds
    np.testing.assert_allclose(em.jit(f)(em.ones(2, 4)).numpy(), np.full((2, 4), 0.25),
                               rtol=1e-6)


def test_fuse_matmul_epilogue_keeps_matmul_a_library_call():
    w, bias = em.randn(4, 5), em.randn(5)

    def f(x):
        return em.relu(x @ w + bias)

    low = _lower(f, em.randn(3, 4))
    (k,) = _fused(low.graph)
    assert k.attr["kind"] == "matmul_epilogue"
    assert [m.op for m in k.body] == ["matmul", "add", "relu"]


def test_fuse_does_not_absorb_a_value_used_outside_the_group():
    def f(x):
        y = em.exp(x)
        return em.tanh(y) * 2.0, y

    low = _lower(f, em.randn(3))
    for k in _fused(low.graph):
        assert all(m.op != "exp" for m in k.body)


def test_fuse_takes_a_shared_producer_once_all_its_users_joined():
    """A diamond: y feeds two members that join the group one after the other (the
    worklist counts y's users inside the group instead of re-scanning the group)."""
    def f(x):
        y = em.exp(x)
        a = y * 2.0
        b = em.tanh(y)
        return em.relu(a + b) - (b * 0.5)

    low = _lower(f, em.randn(3, 4))
    (k,) = _fused(low.graph)
    assert sorted(m.op for m in k.body) == sorted(
        ["exp", "multiply", "tanh", "add", "relu", "multiply", "subtract"])
    x = em.randn(3, 4)
    np.testing.assert_allclose(em.jit(f)(x).numpy(), f(x).numpy(), rtol=1e-6)


def test_fuse_a_long_chain_into_kernels_of_bounded_size():
    from execmode.passes.fuse import MAX_GROUP_OPS

    def f(x):
        for k in range(3000):
            x = x * 1.0001 if k % 2 == 0 else x + 0.5
        return x

    low = _lower(f, em.ones(8), passes=["fuse"])
    kernels = _fused(low.graph)
    # Every op in exactly one kernel, each kernel at most MAX_GROUP_OPS ops and reading
    # the one before it (one output per group), the chain's order kept.
    assert len(kernels) == -(-3000 // MAX_GROUP_OPS)
    assert all(len(k.body) <= MAX_GROUP_OPS for k in kernels)
    assert sum(len(k.body) for k in kernels) == 3000
    assert [n.op for n in low.graph.op_nodes] == ["fused"] * len(kernels)
    for before, after in zip(kernels, kernels[1:]):
        assert after.inputs == (before.id,)


def test_unknown_pass_name_is_a_clear_error():
    with pytest.raises(em.ArgumentError, match="unknown pass 'constfold'"):
        em.jit(lambda x: x + 1, passes=["constfold"])(em.ones(1))


# --- memory planning ------------------------------------------------------------------------

def _mlp_step_record():
    em.random.seed(0)
    model = em.nn.MLP([16, 32, 32, 1])
    opt = em.optim.SGD(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = em.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return em.jit(step).lower(em.randn(64, 16), em.randn(64, 1)).record


def test_planned_peak_is_strictly_lower_on_an_mlp_training_step():
    mem = _mlp_step_record().memory
    assert mem.planned_peak < mem.unplanned_peak
    assert mem.eager_peak > 0
    assert mem.buffers and len(mem.buffers) < len(mem.assignment)  # buffers are reused


@pytest.mark.parametrize("fn", [
    lambda x: em.tanh(x * 2.0) + x,
    lambda x: em.softmax(x @ x.mT, axis=-1).sum(),
    lambda x: (em.exp(x) - em.exp(x).mean()).sum(axis=0),
])
def test_planned_peak_never_exceeds_unplanned(fn):
    mem = _lower(fn, em.randn(8, 8)).record.memory
    assert mem.planned_peak <= mem.unplanned_peak


def test_memory_planned_plans_compute_the_same_values_twice():
    # Pooled buffers are reused across calls: a second call must not see stale data.
    f = em.jit(lambda x: (em.tanh(x @ x.mT) * 2.0).sum(axis=1) + x.sum(axis=1))
    a, b = em.randn(6, 6), em.randn(6, 6)
    ra, rb = f(a), f(b)
    np.testing.assert_allclose(ra.numpy(), f.fn(a).numpy(), rtol=1e-5)
    np.testing.assert_allclose(rb.numpy(), f.fn(b).numpy(), rtol=1e-5)
    assert not math.isclose(float(ra.sum()), float(rb.sum()))


def test_simplify_keeps_one_tensor_operand_when_both_are_constants():
    """Found by the fuzzer: ``v0.zero_(); v0 + v0`` is add(%full, %full); turning both
    operands into literals left a node typed f32[4,3] whose rule gives i64[]."""
    def f(x):
        v = x * 2
        v.zero_()
        return v + v

    low = _lower(f, em.ones((4, 3)), passes=["simplify"])
    assert "add" in _ops(low.graph)
    np.testing.assert_array_equal(em.jit(f, passes=["simplify"])(em.ones((4, 3))).numpy(),
                                  np.zeros((4, 3)))
