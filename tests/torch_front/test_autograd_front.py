"""PyTorch's autograd semantics in execmode.torch: a backward frees what the graph saved
(a second one needs retain_graph=True, else PyTorch's error), torch.autograd.grad returns
gradients without touching .grad; eagerly and under jit, twinned with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode as em
import execmode.torch as torch

A = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)


def _twice(lib, retain):
    x = lib.tensor(A, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=retain)
    y.backward()
    return x.grad.numpy().copy()


def test_retain_graph_allows_a_second_backward_as_pytorch():
    real = torch_or_skip()
    np.testing.assert_allclose(_twice(torch, True), _twice(real, True), rtol=1e-6)


def test_a_second_backward_without_retain_graph_raises_pytorch_s_error():
    real = torch_or_skip()
    with pytest.raises(RuntimeError) as theirs:
        _twice(real, False)
    with pytest.raises(RuntimeError) as mine:  # em.BackwardError is a RuntimeError
        _twice(torch, False)
    assert isinstance(mine.value, em.BackwardError)
    assert str(theirs.value).split(".")[0] in str(mine.value)
    assert "retain_graph=True" in str(mine.value)


def test_graphs_that_save_nothing_backward_twice_as_in_pytorch():
    real = torch_or_skip()
    for lib in (real, torch):
        x = lib.tensor(A, requires_grad=True)
        y = (x + 1).reshape(-1)[1:].sum() + lib.cat([x, x]).mean()  # no saved tensor
        y.backward()
        y.backward()
        want = np.full_like(A, 2.0 + 2 * 2 / (2 * A.size)).reshape(-1)
        want[0] -= 2.0
        np.testing.assert_allclose(x.grad.numpy().reshape(-1), want, rtol=1e-6)


def test_retain_graph_under_jit_as_eagerly():
    def step(x, retain):
        y = (x.tanh() * x).sum()
        y.backward(retain_graph=retain)
        y.backward()
        return x.grad

    def run(f):
        x = torch.tensor(A, requires_grad=True)
        return f(x, True).numpy().copy()

    np.testing.assert_allclose(run(em.jit(step)), run(step), rtol=1e-6)
    with pytest.raises(em.BackwardError, match="second time"):
        em.jit(step)(torch.tensor(A, requires_grad=True), False)


def test_autograd_grad_returns_gradients_and_leaves_grad_alone():
    real = torch_or_skip()

    def run(lib):
        w, b = lib.tensor(A, requires_grad=True), lib.tensor(0.5, requires_grad=True)
        w.grad = lib.ones(3, 4)
        h = w * b
        y = (h * h).sum()
        gw, gh = lib.autograd.grad(y, [w, h], retain_graph=True)
        before = (w.grad.numpy().copy(), b.grad)
        y.backward()
        return gw.numpy(), gh.detach().numpy(), before, w.grad.numpy(), b.grad.item()

    got, want = run(torch), run(real)
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_array_equal(got[2][0], want[2][0])
    assert got[2][1] is None and want[2][1] is None
    np.testing.assert_allclose(got[3], want[3], rtol=1e-6)
    assert got[4] == pytest.approx(want[4], rel=1e-5)


def test_autograd_grad_refusals_follow_pytorch():
    x = torch.ones(2, requires_grad=True)
    unused = torch.ones(2, requires_grad=True)
    with pytest.raises(em.BackwardError, match="not have been used"):
        torch.autograd.grad((x * x).sum(), [x, unused])
    got = torch.autograd.grad((x * x).sum(), [x, unused], allow_unused=True)
    assert got[1] is None
    with pytest.raises(em.ArgumentError, match="create_graph"):
        torch.autograd.grad((x * x).sum(), x, create_graph=True)
