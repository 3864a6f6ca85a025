"""BatchNorm1d/2d: values and gradients, running statistics in eager and under em.jit."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, expect_error

import execmode as em
from execmode import nn


def _reference(x, weight, bias, eps=1e-5):
    axes = (0, *range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight.reshape(shape) + bias.reshape(shape)


@pytest.mark.parametrize("cls, shape", [(nn.BatchNorm1d, (8, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                        (nn.BatchNorm2d, (4, 3, 2, 5))])
def test_batchnorm_training_values_and_running_statistics(cls, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32) * 3 + 1
    bn = cls(3)
    with em.no_grad():
        bn.weight[...] = em.tensor([1.0, 2.0, 0.5])
        bn.bias[...] = em.tensor([0.0, -1.0, 3.0])
    y = bn(em.tensor(x))
    assert_close(y, _reference(x, bn.weight.numpy(), bn.bias.numpy()), rtol=1e-4, atol=1e-5)
    axes = (0, *range(2, x.ndim))
    n = x.size // 3
    assert_close(bn.running_mean, 0.1 * x.mean(axis=axes), rtol=1e-5)
    assert_close(bn.running_var, 0.9 + 0.1 * x.var(axis=axes) * n / (n - 1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    # eval: the running statistics, nothing updated
    bn.eval()
    y = bn(em.tensor(x))
    shape_c = (1, -1) + (1,) * (x.ndim - 2)
    want = (x - bn.running_mean.numpy().reshape(shape_c)) / np.sqrt(
        bn.running_var.numpy().reshape(shape_c) + 1e-5) * bn.weight.numpy().reshape(shape_c) \
        + bn.bias.numpy().reshape(shape_c)
    assert_close(y, want, rtol=1e-5, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1


def test_batchnorm_gradients_against_finite_differences():
    rng = np.random.default_rng(1)

    def f(x, w, b):
        bn = nn.BatchNorm2d(2, dtype=em.float64)
        bn.weight, bn.bias = w, b  # the inputs themselves
        return bn(x)

    check_grad(f, rng.standard_normal((3, 2, 2, 2)), rng.standard_normal(2),
               rng.standard_normal(2))


def test_batchnorm_momentum_none_is_a_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [np.random.default_rng(k).standard_normal((5, 2)).astype(np.float32) for k in range(3)]
    for x in xs:
        bn(em.tensor(x))
    assert_close(bn.running_mean, np.mean([x.mean(0) for x in xs], axis=0), rtol=1e-5,
                 atol=1e-6)
    assert bn.num_batches_tracked.item() == 3


def test_batchnorm_matches_torch_over_steps():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    bn, tbn = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
        w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
        xe, xt = em.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (bn(xe) * em.tensor(w)).sum().backward()
        (tbn(xt) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for key, value in tbn.state_dict().items():
        np.testing.assert_allclose(bn.state_dict()[key].numpy(), value.numpy(), rtol=1e-5,
                                   err_msg=key)
    np.testing.assert_allclose(bn.weight.grad.numpy(), tbn.weight.grad.numpy(), rtol=1e-4)
    bn.eval(), tbn.eval()
    x = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(bn(em.tensor(x)).numpy(), tbn(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def _bn_training(jit: bool):
    em.random.seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    opt = em.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(3)
    batches = [(em.tensor(rng.standard_normal((8, 4)).astype(np.float32)),
                em.tensor(rng.integers(0, 2, 8))) for _ in range(5)]

    def step(x, y):
        opt.zero_grad()
        loss = em.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = em.jit(step, on_break="error") if jit else step
    losses = [run(x, y).item() for x, y in batches]
    model.eval()
    evaluated = model(batches[0][0]).numpy()
    return losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}, evaluated, run


def test_running_statistics_update_identically_under_jit():
    eager_losses, eager_state, eager_eval, _ = _bn_training(jit=False)
    jit_losses, jit_state, jit_eval, step = _bn_training(jit=True)
    np.testing.assert_allclose(jit_losses, eager_losses, rtol=1e-5)
    for key, value in eager_state.items():
        assert jit_state[key].dtype == value.dtype, key
        np.testing.assert_allclose(jit_state[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
    assert jit_state["1.num_batches_tracked"] == 5
    np.testing.assert_allclose(jit_eval, eager_eval, rtol=1e-5, atol=1e-6)
    assert step.trace_count == 1


def test_batchnorm_errors_name_the_module_and_shape():
    bn = nn.BatchNorm2d(3)
    expect_error(em.ShapeError, lambda: bn(em.ones((2, 3))), op="BatchNorm2d",
                 operands=["f32[2,3]"], mentions=["4-d"])
    expect_error(em.ShapeError, lambda: bn(em.ones((2, 4, 2, 2))), op="BatchNorm2d",
                 mentions=["3 channels"])
    expect_error(em.ShapeError, lambda: nn.BatchNorm1d(3)(em.ones((1, 3))), op="BatchNorm1d",
                 mentions=["more than 1 value per channel"])
