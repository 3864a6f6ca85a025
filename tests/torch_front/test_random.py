"""PyTorch's random functions on execmode's generator: signatures, reproducibility, a
Generator of one's own, and the same draws eagerly and under jit."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
import execmode.torch as torch


def test_manual_seed_makes_every_draw_reproducible():
    def draws():
        torch.manual_seed(7)
        return [torch.randn(3), torch.rand(2, 2), torch.randint(0, 10, (4,)),
                torch.randperm(6), torch.normal(0.0, 2.0, size=(3,)),
                torch.bernoulli(torch.full((5,), 0.5)),
                torch.multinomial(torch.tensor([0.1, 0.9]), 4, replacement=True)]

    for a, b in zip(draws(), draws(), strict=True):
        assert a.tolist() == b.tolist() and a.dtype == b.dtype
    assert torch.manual_seed(3) is torch.default_generator and torch.initial_seed() == 3


def test_signatures_follow_pytorch():
    assert torch.randint(5, (2, 3)).shape == (2, 3) and torch.randint(5, (2,)).dtype == torch.long
    low = torch.randint(3, 5, (1000,))
    assert low.min().item() >= 3 and low.max().item() <= 4
    assert torch.randint(0, 2, size=(3,), dtype=torch.float32).dtype == torch.float32
    assert torch.randn(2, 3).shape == torch.randn((2, 3)).shape == torch.rand(size=(2, 3)).shape
    assert sorted(torch.randperm(50).tolist()) == list(range(50))
    assert torch.normal(torch.zeros(2, 3), 1.0).shape == (2, 3)
    assert torch.normal(torch.zeros(3), torch.ones(2, 1)).shape == (2, 3)
    assert torch.rand_like(torch.zeros(2, dtype=torch.float64)).dtype == torch.float64
    assert torch.randint_like(torch.zeros(3), 4).dtype == torch.float32
    draws = torch.bernoulli(torch.full((4000,), 0.25))
    assert abs(draws.mean().item() - 0.25) < 0.03 and draws.dtype == torch.float32
    with pytest.raises(em.ArgumentError, match="size"):
        torch.normal(0.0, 1.0)
    with pytest.raises(em.ArgumentError, match="high"):
        torch.randint(3)


def test_a_generator_of_ones_own():
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    torch.manual_seed(0)
    a = torch.randn(4, generator=g1)
    between = torch.randn(2)
    b = torch.randn(4, generator=g2)
    assert a.tolist() == b.tolist()
    torch.manual_seed(0)
    assert torch.randn(2).tolist() == between.tolist()  # g1 left the default alone
    assert torch.randperm(5, generator=g1).tolist() == torch.randperm(5, generator=g2).tolist()
    state = g1.get_state()
    x = torch.rand(3, generator=g1)
    g1.set_state(state)
    assert torch.rand(3, generator=g1).tolist() == x.tolist()
    assert g1.initial_seed() == 1


def test_draws_under_jit_match_eager_and_a_generator_is_refused_there():
    def step(x):
        return x + torch.randn(3) + torch.rand(3) + torch.randperm(3).float()

    torch.manual_seed(5)
    eager = [step(torch.zeros(3)).numpy() for _ in range(2)]
    torch.manual_seed(5)
    jitted = em.jit(step)
    for want in eager:
        np.testing.assert_array_equal(jitted(torch.zeros(3)).numpy(), want)
    g = torch.Generator()
    with pytest.raises(em.ArgumentError, match="manual_seed"):
        em.jit(lambda x: x + torch.randn(3, generator=g))(torch.zeros(3))


def test_cuda_seeds_the_same_generator():
    torch.cuda.manual_seed_all(11)
    a = torch.randn(3)
    torch.manual_seed(11)
    assert torch.randn(3).tolist() == a.tolist()
