"""PyTorch habits a review of the [models] work found giving wrong numbers or a crash
(each written as the line a PyTorch user writes)."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
import execmode.nn as nn


def test_max_with_a_positional_dim_is_the_pair():
    logits = em.tensor([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.0, 0.2, 0.7]])
    _, pred = logits.max(1)
    np.testing.assert_array_equal(pred.numpy(), [1, 0, 2])
    np.testing.assert_array_equal(em.max(logits, 1).indices.numpy(), [1, 0, 2])
    np.testing.assert_allclose(em.min(logits, 1, True).values.numpy(), [[0.0], [0.1], [0.0]])
    # The Array API's keyword keeps its meaning: the values.
    np.testing.assert_allclose(em.max(logits, axis=1).numpy(), [0.9, 0.8, 0.7])
    np.testing.assert_array_equal(em.sum(logits, 1).numpy(), logits.sum(axis=1).numpy())
    with pytest.raises(em.ArgumentError, match="give the axis once"):
        em.max(logits, 1, axis=0)


@pytest.mark.parametrize("jit", [False, True])
def test_the_gradient_of_max_over_dim_goes_to_the_returned_index(jit):
    def f(x):
        return x.max(dim=1).values.sum()

    x = em.tensor([[2.0, 2.0, 0.0]], requires_grad=True)
    if jit:
        def step(x):
            f(x).backward()
            return x.grad
        grad = em.jit(step)(x)
    else:
        f(x).backward()
        grad = x.grad
    np.testing.assert_array_equal(grad.numpy(), [[1.0, 0.0, 0.0]])


def test_var_and_std_with_dim_use_pytorchs_default():
    x = em.tensor([[1.0, 2.0, 4.0]])
    np.testing.assert_allclose(x.var(dim=1).numpy(), [7 / 3])
    np.testing.assert_allclose(x.std(dim=1).numpy(), [np.sqrt(7 / 3)], rtol=1e-6)
    np.testing.assert_allclose(x.var(axis=1).numpy(), [14 / 9], rtol=1e-6)   # Array API
    np.testing.assert_allclose(x.var(dim=1, unbiased=False).numpy(), [14 / 9], rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_an_embedding_index_outside_the_table_is_an_error(jit):
    emb = nn.Embedding(5, 3)
    f = em.jit(lambda i: emb(i).sum()) if jit else (lambda i: emb(i).sum())
    with pytest.raises(em.IndexingError, match="index -1 at position .* table of 5 rows"):
        f(em.tensor([[1, 2, -1]]))
    with pytest.raises(em.IndexingError, match="index 5"):
        f(em.tensor([[5]]))


def test_a_changed_dropout_p_retraces_instead_of_crashing():
    # The second value of m.p makes it a number jit reads at every call; dropout needs
    # its value (a scale), so it is used with a guard and a new value retraces.
    m = nn.Dropout(0.0)
    f = em.jit(lambda x: m(x) * 1.0)
    x = em.ones(64)
    for p in (0.0, 0.5, 0.25, 0.25):
        m.p = p
        em.random.seed(3)
        got = f(x).numpy()
        em.random.seed(3)
        np.testing.assert_array_equal(got, (m(x) * 1.0).numpy())


def test_schedulers_chain_and_keep_a_hand_edit():
    # PyTorch's schedulers step from the current rate: two on one optimizer compose, and
    # a hand edit of the rate carries on (a closed form alone dropped both).
    p = nn.Parameter(em.zeros(1))
    opt = em.optim.SGD([p], lr=1.0)
    S = em.optim.lr_scheduler
    a, b = S.ExponentialLR(opt, gamma=0.9), S.StepLR(opt, step_size=2, gamma=0.1)
    lrs = []
    for _ in range(3):
        opt.step()
        a.step()
        b.step()
        lrs.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(lrs, [0.9, 0.081, 0.0729])
    opt.param_groups[0]["lr"] *= 10
    a.step()
    np.testing.assert_allclose(opt.param_groups[0]["lr"], 0.729 * 0.9)


@pytest.mark.parametrize("jit", [False, True])
def test_contiguous_copies_a_transposed_view(jit):
    # x.t().contiguous() is a copy in PyTorch: writing into it leaves x alone; a
    # contiguous x's contiguous() is x itself.
    def f(x):
        y = x.t().contiguous()
        y[0, 0] = -1.0
        z = x.contiguous()
        z[1, 1] = 5.0
        return x

    g = em.jit(f) if jit else f
    got = g(em.arange(6).float().reshape(2, 3)).numpy()
    np.testing.assert_array_equal(got, [[0.0, 1.0, 2.0], [3.0, 5.0, 5.0]])


def test_small_pytorch_spellings():
    x = em.tensor([1.0, 5.0])
    np.testing.assert_array_equal(x.pow(2).numpy(), [1.0, 25.0])
    np.testing.assert_array_equal(x.clamp_min(2).numpy(), [2.0, 5.0])
    np.testing.assert_array_equal(x.clamp_max(2).numpy(), [1.0, 2.0])
    assert em.ones(3).expand_as(em.ones(2, 3)).shape == (2, 3)
    np.testing.assert_array_equal(nn.functional.one_hot(em.tensor([0, 2]), 3).numpy(),
                                  [[1, 0, 0], [0, 0, 1]])
    # squeeze(dim=d) leaves a dim of another size alone, as PyTorch's; axis= refuses it.
    y = em.ones(1, 3, 1)
    assert y.squeeze(dim=1).shape == (1, 3, 1) and y.squeeze(dim=0).shape == (3, 1)
    with pytest.raises(em.ShapeError):
        em.squeeze(y, axis=1)
