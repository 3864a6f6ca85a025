"""nn.init: in place, seeded, with PyTorch's fans and gains; nn.utils.clip_grad_norm_."""

from __future__ import annotations

import math

import numpy as np
import pytest

import execmode as em
from execmode import nn
from execmode.nn import init


@pytest.mark.parametrize("fn, kwargs, check", [
    (init.uniform_, {"a": -2.0, "b": 3.0}, lambda v: (v.min() >= -2) & (v.max() < 3)
     & (abs(v.mean() - 0.5) < 0.05)),
    (init.normal_, {"mean": 1.0, "std": 2.0}, lambda v: (abs(v.mean() - 1) < 0.05)
     & (abs(v.std() - 2) < 0.05)),
    (init.xavier_uniform_, {}, lambda v: abs(v).max() <= math.sqrt(6 / (300 + 200))),
    (init.xavier_normal_, {"gain": 2.0},
     lambda v: abs(v.std() - 2 * math.sqrt(2 / 500)) < 0.003),
    (init.kaiming_uniform_, {"nonlinearity": "relu"},
     lambda v: (abs(v).max() <= math.sqrt(6 / 300)) & (abs(v).max() > 0.95 * math.sqrt(6 / 300))),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"},
     lambda v: abs(v.std() - math.sqrt(2 / 200)) < 0.003),
])
def test_initializers_fill_in_place_with_the_right_distribution(fn, kwargs, check):
    p = nn.Parameter(em.zeros((200, 300)))
    em.random.seed(0)
    assert fn(p, **kwargs) is p
    values = p.numpy()
    assert check(values), fn.__name__
    assert p.requires_grad and p.is_leaf and p.grad is None
    em.random.seed(0)
    again = fn(nn.Parameter(em.zeros((200, 300))), **kwargs)
    np.testing.assert_array_equal(again.numpy(), values)  # seeded via em.random


def test_constant_zeros_ones_and_dtype():
    t = em.zeros((2, 3), dtype=em.float64)
    init.constant_(t, 0.25)
    assert t.dtype == em.float64 and (t.numpy() == 0.25).all()
    assert (init.ones_(t).numpy() == 1).all() and not init.zeros_(t).numpy().any()
    i = em.zeros(3, dtype=em.int64)
    assert init.ones_(i).tolist() == [1, 1, 1]


def test_gain_and_fan_match_torch():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    for name, param in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None),
                        ("conv2d", None), ("sigmoid", None)]:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param))
    # fans of a conv weight (out, in, kh, kw): the kaiming bound matches torch's
    w = torch.empty(16, 8, 3, 3)
    torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = float(w.abs().max())
    mine = init.kaiming_uniform_(em.zeros((16, 8, 3, 3)), a=math.sqrt(5)).numpy()
    assert abs(mine).max() <= 1 / math.sqrt(8 * 9) + 1e-7
    assert abs(abs(mine).max() - bound) < 0.02


def test_init_errors():
    with pytest.raises(em.ShapeError, match="xavier_uniform_.*at least 2"):
        init.xavier_uniform_(em.zeros(5))
    with pytest.raises(em.ArgumentError, match="mode"):
        init.kaiming_normal_(em.zeros((2, 2)), mode="fan")
    with pytest.raises(em.ArgumentError, match="unknown nonlinearity 'swish'"):
        init.calculate_gain("swish")
    with pytest.raises(em.ArgumentError, match="floating-point"):
        init.normal_(em.zeros(3, dtype=em.int64))


# --- clip_grad_norm_ ------------------------------------------------------------------
def _grads(scale):
    a = em.tensor(np.array([3.0, 4.0], dtype=np.float32) * scale, requires_grad=True)
    b = em.tensor(np.array([[12.0]], dtype=np.float32) * scale, requires_grad=True)
    (a * a / 2).sum().backward()
    (b * b / 2).sum().backward()
    return [a, b]


def test_clip_grad_norm_returns_the_norm_and_scales_in_place():
    params = _grads(1.0)  # grads (3, 4) and (12): total norm 13
    grad = params[0].grad
    norm = nn.utils.clip_grad_norm_(params, max_norm=6.5)
    assert isinstance(norm, em.Tensor) and norm.shape == () and norm.dtype == em.float32
    assert norm.item() == pytest.approx(13.0)
    assert params[0].grad is grad  # in place, as PyTorch's mul_
    np.testing.assert_allclose(params[0].grad.numpy(), [1.5, 2.0], rtol=1e-5)
    np.testing.assert_allclose(params[1].grad.numpy(), [[6.0]], rtol=1e-5)
    small = _grads(0.01)
    nn.utils.clip_grad_norm_(small, max_norm=1.0)  # below the limit: unchanged
    np.testing.assert_allclose(small[0].grad.numpy(), [0.03, 0.04], rtol=1e-5)
    inf = nn.utils.clip_grad_norm_(_grads(1.0), 1.0, norm_type=math.inf)
    assert inf.item() == pytest.approx(12.0)
    assert nn.utils.clip_grad_norm_([em.zeros(2, requires_grad=True)], 1.0).item() == 0.0


def test_clip_grad_norm_matches_torch():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,))]
    for norm_type in (2.0, 1.0, 3.0, math.inf):
        mine = [em.tensor(v, requires_grad=True) for v in values]
        theirs = [torch.tensor(v, requires_grad=True) for v in values]
        for p, t in zip(mine, theirs):
            p.grad, t.grad = em.tensor(p.numpy() * 2), torch.tensor(p.numpy() * 2)
        n1 = nn.utils.clip_grad_norm_(mine, 0.5, norm_type=norm_type)
        n2 = torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type=norm_type)
        assert n1.item() == pytest.approx(n2.item(), rel=1e-5)
        for p, t in zip(mine, theirs):
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_under_jit_has_no_graph_break():
    def run(jit):
        em.random.seed(0)
        model = nn.Linear(3, 2)
        opt = em.optim.SGD(model.parameters(), lr=0.5)
        x = em.random.normal((4, 3)) * 10

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss, norm

        f = em.jit(step, on_break="error") if jit else step
        out = [tuple(t.item() for t in f(x)) for _ in range(4)]
        return out, model.weight.numpy()

    (eager, w_eager), (jitted, w_jit) = run(False), run(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    np.testing.assert_allclose(w_jit, w_eager, rtol=1e-5, atol=1e-6)
    assert eager[0][1] > 1.0  # the norm was above the limit: clipping was exercised


def test_clip_grad_value_():
    (a, b) = _grads(1.0)
    nn.utils.clip_grad_value_([a, b], 3.5)
    assert a.grad.tolist() == [3.0, 3.5] and b.grad.tolist() == [[3.5]]
