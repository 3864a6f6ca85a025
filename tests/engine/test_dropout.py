"""dropout and nn.Dropout: the seeded mask, scaling, identity in eval, gradients, and the
same draws under em.jit as eagerly (random ops replay from the global generator)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, expect_error

import execmode as em
from execmode.nn import functional as NF

RNG = np.random.default_rng(5)


def test_dropout_mask_comes_from_the_seeded_generator():
    x = RNG.standard_normal((4, 50)).astype(np.float32)
    em.random.seed(21)
    got = NF.dropout(em.tensor(x), 0.25)
    draws = np.random.default_rng(21).uniform(0.0, 1.0, size=x.shape).astype(np.float32)
    want = x * (draws >= 0.25).astype(np.float32) * np.float32(1 / 0.75)
    assert_close(got, want)
    kept = got.numpy() != 0
    assert 0.6 < kept.mean() < 0.9


def test_eval_and_zero_probability_return_the_input_itself():
    x = em.ones((3, 3))
    assert NF.dropout(x, 0.5, training=False) is x
    assert NF.dropout(x, 0.0) is x
    layer = em.nn.Dropout(0.5)
    layer.training = False
    assert layer(x) is x
    assert NF.dropout(x, 1.0).numpy().tolist() == [[0.0] * 3] * 3


def test_dropout_gradient_is_the_scaled_mask():
    def fn(x):
        em.random.seed(4)  # the same mask at every evaluation of the finite differences
        return NF.dropout(x, 0.4)

    check_grad(fn, RNG.standard_normal((3, 5)))


def test_inplace_dropout_writes_into_its_input():
    em.random.seed(1)
    x = em.ones((2, 8))
    out = NF.dropout(x, 0.5, inplace=True)
    assert out is x and set(np.unique(x.numpy())) <= {0.0, 2.0}


def _train(jit: bool, steps: int = 3):
    em.random.seed(0)
    hidden = em.nn.Linear(6, 32)
    drop = em.nn.Dropout(0.3)
    head = em.nn.Linear(32, 1)
    opt = em.optim.SGD(hidden.parameters() + head.parameters(), lr=0.05)
    x, y = em.randn(8, 6), em.randn(8, 1)

    def step(x, y):
        opt.zero_grad()
        loss = NF.mse_loss(head(drop(NF.relu(hidden(x)))), y)
        loss.backward()
        opt.step()
        return loss

    run = em.jit(step) if jit else step
    losses = [run(x, y).item() for _ in range(steps)]
    drop.training = False
    losses.append(run(x, y).item())   # eval: no draws
    drop.training = True
    losses.append(run(x, y).item())
    return losses, run


def test_jitted_steps_with_dropout_draw_what_eager_draws():
    eager, _ = _train(jit=False)
    jitted, run = _train(jit=True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    assert len(set(eager[:3])) == 3
    # training is read as a guarded flag: eval retraces once, training replays its graph.
    assert run.trace_count == 2
    assert "training" in run.retraces[0].reason


def test_dropout_errors():
    x = em.ones((2, 2))
    expect_error(em.ArgumentError, lambda: NF.dropout(x, 1.5), op="dropout",
                 operands=["f32[2,2]@cpu"], mentions=["probability"])
    expect_error(em.DTypeError, lambda: NF.dropout(em.ones((2,), dtype=em.int64), 0.1),
                 op="dropout", mentions=["floating"])
    expect_error(em.ArgumentError, lambda: em.nn.Dropout(-0.1), op="Dropout",
                 mentions=["probability"])


def test_dropout_matches_pytorch_semantics():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    x = RNG.standard_normal((64, 64))
    # The generators differ, so the masks do; what a kept element becomes must not.
    em.random.seed(0)
    mine = NF.dropout(em.tensor(x), 0.2).numpy()
    theirs = torch.nn.functional.dropout(torch.tensor(x), 0.2).numpy()
    for out in (mine, theirs):
        kept = out != 0
        np.testing.assert_allclose(out[kept], x[kept] / 0.8)
        assert 0.75 < kept.mean() < 0.85
    t = torch.tensor(x)
    assert torch.nn.functional.dropout(t, 0.2, training=False) is t


def test_identity_and_inplace_dropout_keep_eager_identities_under_jit():
    x = em.ones((2, 3))
    identity = em.jit(lambda x: NF.dropout(x, 0.5, training=False))
    assert identity(x) is x and identity(x) is x  # traced, then replayed
    inplace = em.jit(lambda x: NF.dropout(x, 0.5, inplace=True))
    em.random.seed(6)
    a = em.ones((4, 8))
    assert inplace(a) is a
    em.random.seed(6)
    b = em.ones((4, 8))
    NF.dropout(b, 0.5, inplace=True)
    assert_close(a, b.numpy())
