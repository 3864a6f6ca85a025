"""nn and optim: small MLPs learn a synthetic task with SGD (momentum) and Adam."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.nn import functional as NF


def _two_moons(n=128, seed=0):
    """Two interleaved half circles with noise: a task a linear model cannot solve."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    labels = rng.integers(0, 2, n)
    x = np.stack([np.cos(t), np.sin(t)], axis=1)
    x[labels == 1] = np.array([1.0, 0.5]) - x[labels == 1]
    x += rng.normal(0, 0.1, x.shape)
    return em.tensor(x.astype(np.float32)), em.tensor(labels)


def _train(make_optimizer, steps):
    em.random.seed(0)
    x, y = _two_moons()
    model = em.nn.MLP([2, 16, 16, 2])
    opt = make_optimizer(model.parameters())
    losses = []
    for _ in range(steps):
        loss = NF.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    accuracy = (em.argmax(model(x), axis=1) == y).astype(em.float32).mean().item()
    return losses, accuracy


@pytest.mark.parametrize("name, make_optimizer", [
    ("sgd momentum", lambda params: em.optim.SGD(params, lr=0.1, momentum=0.9)),
    ("adam", lambda params: em.optim.Adam(params, lr=0.02)),
])
def test_mlp_learns_two_moons(name, make_optimizer):
    losses, accuracy = _train(make_optimizer, steps=150)
    assert losses[-1] < 0.1 * losses[0], f"{name}: loss {losses[0]:.3f} -> {losses[-1]:.3f}"
    assert accuracy > 0.95, f"{name}: accuracy {accuracy:.2f}"


def test_training_is_reproducible_with_a_seed():
    make = lambda params: em.optim.Adam(params, lr=0.02)  # noqa: E731
    assert _train(make, steps=5) == _train(make, steps=5)


def test_regression_with_mse_and_sgd_weight_decay():
    em.random.seed(1)
    x = em.random.uniform((64, 3), -1.0, 1.0)
    true_w = em.tensor([[2.0, -1.0, 0.5]])
    y = x @ true_w.mT + 0.3
    lin = em.nn.Linear(3, 1)
    opt = em.optim.SGD(lin.parameters(), lr=0.1, momentum=0.5, weight_decay=1e-4)
    first = None
    for _ in range(200):
        loss = NF.mse_loss(lin(x), y)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 1e-3 * first
    np.testing.assert_allclose(lin.weight.numpy(), true_w.numpy(), atol=0.02)
    np.testing.assert_allclose(lin.bias.numpy(), [0.3], atol=0.02)


def test_modules_expose_their_parameters():
    model = em.nn.Sequential(em.nn.Linear(4, 8), em.nn.ReLU(), em.nn.Linear(8, 2, bias=False),
                             em.nn.LayerNorm(2))
    names = [name for name, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "3.weight", "3.bias"]  # PyTorch's names
    assert model.num_parameters() == 4 * 8 + 8 + 8 * 2 + 2 + 2
    assert all(p.requires_grad and p.is_leaf for p in model.parameters())
    assert model(em.ones((3, 4))).shape == (3, 2)


def test_optimizers_refuse_bad_settings():
    with pytest.raises(em.ArgumentError):
        em.optim.SGD([], lr=0.1)
    with pytest.raises(em.ArgumentError):
        em.optim.Adam(em.nn.Linear(2, 2).parameters(), lr=-1.0)
