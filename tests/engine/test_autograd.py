"""Autograd behaviour: accumulation, no_grad, detach, in-place updates, deep graphs."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import execmode as em


def leaf(values, dtype=em.float64):
    return em.tensor(values, dtype=dtype, requires_grad=True)


def test_gradient_of_x_squared_at_3_is_6():
    x = leaf(3.0)
    (x * x).backward()
    assert x.grad.item() == 6.0


def test_gradients_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [3.0 + 2.0, 3.0 + 4.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_shared_subexpression_gradients_add_up():
    x = leaf(2.0)
    y = x * x        # used twice below
    z = y * y + y    # x^4 + x^2
    z.backward()
    assert x.grad.item() == 4 * 8 + 2 * 2


def test_no_grad_records_nothing_and_restores_the_mode():
    x = leaf([1.0])
    with em.no_grad():
        y = x * 2
        assert not em.is_grad_enabled()
        with em.enable_grad():
            z = x * 2
    assert em.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None

    @em.no_grad()
    def decorated(t):
        return t * 2

    assert not decorated(x).requires_grad
    assert em.is_grad_enabled()


def test_no_grad_restores_the_mode_after_an_exception():
    with pytest.raises(ZeroDivisionError), em.no_grad():
        raise ZeroDivisionError
    assert em.is_grad_enabled()


def test_detach_cuts_the_graph_and_shares_values():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.tolist() == y.tolist()
    (d * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]  # d is a constant


def test_only_tensors_that_require_grad_get_gradients():
    x = leaf([1.0])
    c = em.tensor([5.0], dtype=em.float64)
    (x * c).sum().backward()
    assert c.grad is None and x.grad.tolist() == [5.0]


def test_leaf_update_under_no_grad_like_an_optimizer():
    w = leaf([1.0, -1.0])
    (w * w).sum().backward()
    alias = w
    lr = 0.25
    with em.no_grad():
        w -= lr * w.grad
    assert alias is w and w.is_leaf and w.requires_grad
    assert w.tolist() == [0.5, -0.5]
    w.grad = None
    (w * w).sum().backward()  # the next step builds a fresh graph over the new values
    assert w.grad.tolist() == [1.0, -1.0]


def test_in_place_update_of_a_leaf_that_requires_grad_raises():
    w = leaf([1.0])
    with pytest.raises(em.BackwardError, match="no_grad"):
        w -= 1.0
    with pytest.raises(em.BackwardError):
        w[0] = 2.0
    assert w.tolist() == [1.0]  # refused before anything was written


def test_in_place_update_of_values_a_pending_backward_needs_raises():
    w = leaf([1.0, 2.0])
    x = em.tensor([3.0, 4.0], dtype=em.float64)
    loss = (w * x).sum()
    with em.no_grad():
        x += 1  # multiply's vjp for w reads x
    with pytest.raises(em.BackwardError, match="overwritten in place"):
        loss.backward()


def test_optimizer_step_before_backward_of_the_old_graph_raises():
    w = leaf([1.0])
    loss = (w * w).sum()
    with em.no_grad():
        w -= 0.1
    with pytest.raises(em.BackwardError, match="overwritten"):
        loss.backward()


def test_backward_on_a_non_scalar_needs_a_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    with pytest.raises(em.BackwardError, match="gradient"):
        y.backward()
    y.backward(em.tensor([1.0, 10.0], dtype=em.float64))
    assert x.grad.tolist() == [3.0, 30.0]
    with pytest.raises(em.BackwardError, match="shape"):
        y.backward(em.ones(3, dtype=em.float64))


def test_backward_on_a_tensor_without_history_raises():
    with pytest.raises(em.BackwardError, match="does not require grad"):
        em.tensor([1.0]).sum().backward()


def test_backward_on_a_leaf():
    x = leaf(2.0)
    x.backward()
    assert x.grad.item() == 1.0


def test_retain_grad_keeps_an_intermediate_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    z = x * 4  # not retained
    (y * y + z).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]
    assert z.grad is None
    assert x.grad.tolist() == [18.0 + 4.0, 36.0 + 4.0]


def test_gradient_dtype_follows_the_leaf():
    x = em.tensor([1.0, 2.0], dtype=em.float32, requires_grad=True)
    x.astype(em.float64).sum().backward()
    assert x.grad.dtype == em.float32 and x.grad.tolist() == [1.0, 1.0]
    y = em.tensor([1.0], dtype=em.float32, requires_grad=True)
    (y * em.tensor([2.0], dtype=em.float64)).sum().backward()  # promoted to float64 inside
    assert y.grad.dtype == em.float32


def test_non_differentiable_ops_pass_no_gradient():
    x = leaf([1.5, -0.5])
    y = em.floor(x) + em.sign(x) + em.round(x) + em.ceil(x) + x
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]  # only the identity term
    assert not (x > 0).requires_grad
    assert not em.argmax(x).requires_grad


def test_deep_chain_backward_does_not_recurse():
    limit = sys.getrecursionlimit()
    x = leaf(1.0)
    y = x
    for _ in range(10_000):
        y = y * 1.0001 + 0.0
    sys.setrecursionlimit(200)  # an implementation that recursed would fail at once
    try:
        y.backward()
    finally:
        sys.setrecursionlimit(limit)
    np.testing.assert_allclose(x.grad.item(), 1.0001 ** 10_000, rtol=1e-9)


def test_zero_grad_on_modules_and_tensor_zero():
    lin = em.nn.Linear(2, 1)
    lin(em.ones((1, 2))).sum().backward()
    assert all(p.grad is not None for p in lin.parameters())
    lin.zero_grad()
    assert all(p.grad is None for p in lin.parameters())
    t = em.ones(3)
    t.zero_()
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_requires_grad_only_for_floats():
    with pytest.raises(em.ArgumentError):
        em.tensor([1, 2]).requires_grad_()
    x = em.tensor([1.0]).requires_grad_()
    assert x.requires_grad and x.is_leaf
