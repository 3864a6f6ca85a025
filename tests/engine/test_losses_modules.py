"""The loss modules (nn.CrossEntropyLoss ...) and the losses added with them (l1, smooth
L1, Huber, binary cross-entropy on probabilities, KL divergence): PyTorch twins of values
and gradients, eager against em.jit, and the modules' PyTorch conventions."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import assert_jit_agrees, assert_jit_grads_agree, torch_or_skip

import execmode as em
from execmode import nn
from execmode.nn import functional as NF

RNG = np.random.default_rng(32)
X = RNG.standard_normal((4, 5)).astype(np.float32)
Y = RNG.standard_normal((4, 5)).astype(np.float32)
P = (1 / (1 + np.exp(-X))).astype(np.float32)
T = (RNG.random((4, 5)) > 0.5).astype(np.float32)
LOGP = (X - np.log(np.exp(X).sum(1, keepdims=True))).astype(np.float32)
Q = np.exp(Y) / np.exp(Y).sum(1, keepdims=True)
Q[0, 0] = 0.0  # 0 * log 0 is 0
Q = Q.astype(np.float32)
LABELS = np.array([0, 4, -100, 2])
W = np.array([1.0, 2.0, 0.5, 1.0, 3.0], np.float32)

# (name, our module, torch's module (from torch.nn), input, target)
MODULES = [
    ("CrossEntropyLoss", lambda m: m.CrossEntropyLoss(label_smoothing=0.1), X, LABELS),
    ("CrossEntropyLoss weighted sum", lambda m: m.CrossEntropyLoss(
        weight=_t(m, W), reduction="sum", ignore_index=4), X, np.where(LABELS < 0, 1, LABELS)),
    ("NLLLoss", lambda m: m.NLLLoss(weight=_t(m, W)), LOGP, LABELS),
    ("MSELoss", lambda m: m.MSELoss(), X, Y),
    ("L1Loss none", lambda m: m.L1Loss(reduction="none"), X, Y),
    ("SmoothL1Loss", lambda m: m.SmoothL1Loss(beta=0.5), X, Y),
    ("SmoothL1Loss beta 0", lambda m: m.SmoothL1Loss(beta=0.0), X, Y),
    ("HuberLoss", lambda m: m.HuberLoss(delta=0.7, reduction="sum"), X, Y),
    ("BCELoss", lambda m: m.BCELoss(weight=_t(m, W)), P, T),
    ("BCEWithLogitsLoss", lambda m: m.BCEWithLogitsLoss(pos_weight=_t(m, W)), X, T),
    ("KLDivLoss batchmean", lambda m: m.KLDivLoss(reduction="batchmean"), LOGP, Q),
    ("KLDivLoss log_target", lambda m: m.KLDivLoss(reduction="sum", log_target=True), LOGP,
     np.log(Q + 1e-3).astype(np.float32)),
    ("legacy size_average=False", lambda m: m.MSELoss(size_average=False), X, Y),
]


def _t(module_namespace, array):
    """A tensor of ``array`` from the library whose ``nn`` is ``module_namespace``."""
    return em.tensor(array) if module_namespace is nn else _torch().tensor(array)


def _torch():
    import torch

    return torch


@pytest.mark.filterwarnings("ignore:size_average and reduce")  # torch's, for the legacy case
@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_loss_modules_match_torch_in_values_and_gradients(case):
    torch = torch_or_skip()
    _, build, x, target = case
    ours_in = em.tensor(x, requires_grad=True)
    ours = build(nn)(ours_in, em.tensor(target))
    ours.sum().backward()
    theirs_in = torch.tensor(x, requires_grad=True)
    theirs = build(torch.nn)(theirs_in, torch.tensor(target))
    theirs.sum().backward()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours_in.grad.numpy(), theirs_in.grad.numpy(), rtol=1e-4,
                               atol=1e-6)
    assert set(build(nn).state_dict()) == set(build(torch.nn).state_dict())


FUNCTIONS = [
    ("l1", lambda a, b: NF.l1_loss(a, b), X, Y),
    ("smooth l1", lambda a, b: NF.smooth_l1_loss(a, b, beta=0.3), X, Y),
    ("huber", lambda a, b: NF.huber_loss(a, b, reduction="none", delta=0.5), X, Y),
    ("bce", lambda a, b: NF.binary_cross_entropy(NF.sigmoid(a), b), X, T),
    ("kl", lambda a, b: NF.kl_div(NF.log_softmax(a, dim=1), b, reduction="batchmean"), X, Q),
]


@pytest.mark.parametrize("case", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_losses_agree_under_jit(case):
    _, fn, a, b = case
    target = em.tensor(b.astype(np.float64))
    assert_jit_agrees(fn, em.tensor(a), em.tensor(b))
    assert_jit_grads_agree(lambda v: fn(v, target), a.astype(np.float64))


def test_binary_cross_entropy_clamps_its_logs_as_pytorch():
    p = em.tensor([0.0, 1.0, 0.5], requires_grad=True)
    loss = NF.binary_cross_entropy(p, em.tensor([1.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [100.0, 100.0, np.log(2)], rtol=1e-6)


def test_loss_module_conventions():
    ce = nn.CrossEntropyLoss(weight=em.tensor(W))
    assert list(ce.state_dict()) == ["weight"] and ce.reduction == "mean"
    assert nn.MSELoss(reduce=False).reduction == "none"
    assert nn.L1Loss(size_average=False).reduction == "sum"
    assert "reduction='sum'" in repr(nn.L1Loss(reduction="sum"))
    with pytest.raises(em.ArgumentError, match="reduction"):
        nn.MSELoss(reduction="avg")(em.zeros(2), em.zeros(2))
    with pytest.raises(em.ArgumentError, match="batchmean"):
        NF.kl_div(em.zeros(2), em.zeros(2), reduction="avg")
    with pytest.raises(em.ShapeError, match="shapes differ"):
        nn.L1Loss()(em.zeros(2), em.zeros(3))
    with pytest.raises(em.ArgumentError, match="delta"):
        NF.huber_loss(em.zeros(2), em.zeros(2), delta=0.0)
