"""CUDA tensors (CuPy): the same numbers as on the CPU, device moves, mixed-device errors.

Every test here is marked ``gpu`` and skipped, with the reason, where no GPU is usable.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, expect_error

import execmode as em
from execmode.backend import cuda_problem
from execmode.nn import functional as NF

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not em.cuda_is_available(),
                       reason=f"needs a CUDA GPU with CuPy: {cuda_problem() or 'unavailable'}"),
]

# Different reduction orders and fused GPU math (exp, tanh, erf): a few float32 ulps more.
GPU_F32 = {"rtol": 1e-5, "atol": 1e-5}


def both(array):
    """The same values as a CPU tensor and a CUDA tensor."""
    return em.tensor(array, dtype=array.dtype), em.tensor(array, dtype=array.dtype, device="cuda")


def test_cuda_tensors_have_a_cuda_device():
    x = em.ones((2, 3), device="cuda")
    assert x.device == "cuda:0" and x.device.is_cuda
    assert (x + 1).device == "cuda:0"
    assert isinstance(x.numpy(), np.ndarray) and x.tolist() == [[1.0] * 3] * 2
    assert em.tensor([1, 2], device="cuda:0").dtype == em.int64


def test_to_and_cpu_round_trip():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = em.tensor(a)
    on_gpu = x.to("cuda")
    assert on_gpu.device == "cuda:0"
    back = on_gpu.cpu()
    assert back.device == "cpu"
    assert_close(back, a)
    assert on_gpu.to("cuda:0") is on_gpu  # already there: no copy


@pytest.mark.parametrize("fn", [
    lambda x, y: x + y * 2.5,
    lambda x, y: em.exp(x) - em.tanh(y),
    lambda x, y: em.erf(x),
    lambda x, y: em.maximum(x, y) // 0.5,
    lambda x, y: em.sum(x * y, axis=1),
    lambda x, y: em.mean(x, axis=0, keepdims=True),
    lambda x, y: em.argmax(x, axis=1),
    lambda x, y: x @ y.mT,
    lambda x, y: NF.softmax(x, axis=-1),
    lambda x, y: NF.gelu(y),
    lambda x, y: NF.layer_norm(x, 4),
    lambda x, y: x[1:, em.tensor([0, 3, 3], device=x.device)],
    lambda x, y: x[x > 0],
    lambda x, y: em.where(x > y, x, 0.0),
    lambda x, y: em.concat([x, y], axis=0).reshape(2, -1).T,
])
def test_ops_agree_with_the_cpu(fn):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    (xc, xg), (yc, yg) = both(a), both(b)
    on_gpu = fn(xg, yg)
    assert on_gpu.device == "cuda:0"
    assert_close(on_gpu.cpu(), fn(xc, yc), **GPU_F32)


def test_gradients_agree_with_the_cpu():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3))
    w = rng.standard_normal((3, 2))
    grads = []
    for device in ("cpu", "cuda"):
        x = em.tensor(a, device=device)
        weight = em.tensor(w, device=device, requires_grad=True)
        loss = NF.cross_entropy(x @ weight, em.tensor([0, 1, 1, 0], device=device))
        loss.backward()
        assert weight.grad.device == device
        grads.append(weight.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10, atol=1e-12)


def test_seeded_random_numbers_are_the_same_on_every_device():
    em.random.seed(5)
    on_cpu = em.randn(4, 4).numpy()
    em.random.seed(5)
    np.testing.assert_array_equal(em.randn(4, 4, device="cuda").numpy(), on_cpu)


def test_mixed_devices_are_a_clear_error():
    x, y = em.ones(3), em.ones(3, device="cuda")
    expect_error(em.DeviceError, lambda: x + y, op="add",
                 operands=["f32[3]@cpu", "f32[3]@cuda:0"], mentions=["different devices"])
    expect_error(em.DeviceError, lambda: em.matmul(y, x), op="matmul",
                 operands=["f32[3]@cuda:0", "f32[3]@cpu"])


def test_a_missing_gpu_index_is_a_clear_error():
    expect_error(em.DeviceError, lambda: em.zeros(2, device="cuda:99"), op="full",
                 mentions=["cuda:99"])


def test_training_step_on_the_gpu():
    em.random.seed(0)
    model = em.nn.MLP([4, 8, 2], device="cuda")
    opt = em.optim.Adam(model.parameters(), lr=0.05)
    x = em.random.normal((32, 4), device="cuda")
    y = em.random.randint(0, 2, (32,), device="cuda")
    losses = []
    for _ in range(30):
        loss = NF.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.device == "cuda:0" for p in model.parameters())
    assert losses[-1] < losses[0]
