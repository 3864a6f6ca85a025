"""``torch.distributions`` basics against PyTorch: log_prob, entropy, shapes of samples,
and gradients through rsample and log_prob."""

from __future__ import annotations

import numpy as np
from helpers import assert_close
from pytorch_twins import torch_or_skip

import execmode.torch as torch

LOGITS = np.random.default_rng(3).standard_normal((2, 5)).astype(np.float32)


def test_categorical_and_normal_match_pytorch():
    real = torch_or_skip()
    ours = torch.distributions.Categorical(logits=torch.tensor(LOGITS))
    theirs = real.distributions.Categorical(logits=real.tensor(LOGITS))
    value = np.array([[1, 4], [0, 3], [2, 2]])
    assert_close(ours.log_prob(torch.tensor(value)), theirs.log_prob(real.tensor(value)).numpy(),
                 rtol=1e-5, atol=1e-6)
    assert_close(ours.entropy(), theirs.entropy().numpy(), rtol=1e-5)
    probs = np.abs(LOGITS)
    assert_close(torch.distributions.Categorical(probs=torch.tensor(probs)).probs,
                 real.distributions.Categorical(probs=real.tensor(probs)).probs.numpy())
    loc, scale = LOGITS[0], np.abs(LOGITS[1]) + 0.1
    n = torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale))
    tn = real.distributions.Normal(real.tensor(loc), real.tensor(scale))
    assert_close(n.log_prob(torch.tensor(LOGITS)), tn.log_prob(real.tensor(LOGITS)).numpy(),
                 rtol=1e-5, atol=1e-6)
    assert_close(n.entropy(), tn.entropy().numpy(), rtol=1e-6)
    assert_close(n.stddev, tn.stddev.numpy())


def test_samples_and_gradients():
    torch.manual_seed(0)
    c = torch.distributions.Categorical(logits=torch.tensor(LOGITS))
    assert c.sample().shape == (2,) and c.sample((3, 4)).shape == (3, 4, 2)
    counts = np.bincount(torch.distributions.Categorical(
        probs=torch.tensor([0.1, 0.0, 0.9])).sample((2000,)).numpy(), minlength=3)
    assert counts[1] == 0 and abs(counts[2] / 2000 - 0.9) < 0.03
    loc = torch.zeros(3, requires_grad=True)
    n = torch.distributions.Normal(loc, 2.0)
    assert not n.sample().requires_grad and n.sample((5,)).shape == (5, 3)
    (n.rsample().sum() + n.log_prob(torch.ones(3)).sum()).backward()
    assert_close(loc.grad, np.full(3, 1.0 + 0.25, np.float32), rtol=1e-6)
    logits = torch.tensor(LOGITS, requires_grad=True)
    torch.distributions.Categorical(logits=logits).log_prob(torch.tensor([1, 2])).sum().backward()
    assert logits.grad.shape == (2, 5)
