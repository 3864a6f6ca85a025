"""em.jit and autograd: backward inside a jitted function writes .grad to this call's
tensors, keeps grads written before a graph break, and guards on a capture's
requires_grad. Each test once gave a different answer under em.jit than eagerly."""

from __future__ import annotations

import numpy as np

import execmode as em


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


def test_returning_a_capture_keeps_its_requires_grad():
    w = em.nn.Parameter(em.ones(2))
    em.jit(lambda x: (x * 2.0, w))(em.ones(2))
    assert w.requires_grad
