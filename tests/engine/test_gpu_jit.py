"""Graph mode on the GPU: em.jit of CUDA tensors runs generated CUDA kernels (NVRTC through
CuPy) and gives eager's numbers, state and identities, as the CPU path does.

Every test here is marked ``gpu`` and skipped, with the reason, where no GPU is usable.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close
from hypothesis import given, settings
from programs import programs, run

import execmode as em
from execmode import instrument
from execmode.backend import cuda_problem
from execmode.nn import functional as NF

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not em.cuda_is_available(),
                       reason=f"needs a CUDA GPU with CuPy: {cuda_problem() or 'unavailable'}"),
]

# CUDA's libm (expf, tanhf, erff) is within a few ulps of glibc's, and reductions combine
# in another order: a few float32 ulps more than the CPU path's tolerance.
GPU_F32 = {"rtol": 2e-5, "atol": 2e-6}


def _cuda(array):
    return em.tensor(array, dtype=array.dtype, device="cuda")


def _steps(jitted):
    return jitted.concrete_functions[0].segments[0].compiled.plan.steps


def test_a_fused_chain_runs_as_a_cuda_kernel_and_matches_eager():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 257)).astype(np.float32)
    b = rng.standard_normal(257).astype(np.float32)

    def fn(x, y):
        return em.tanh(x * 0.5 + y) * em.sigmoid(x) - em.relu(y) / 3.0

    x, y = _cuda(a), _cuda(b)
    jitted = em.jit(fn)
    got = jitted(x, y)
    assert got.device == "cuda:0"
    assert {s.backend for s in _steps(jitted) if s.kind == "fused"} == {"cuda"}
    assert_close(got.cpu(), fn(x, y).cpu(), **GPU_F32)
    assert_close(got.cpu(), fn(em.tensor(a), em.tensor(b)), **GPU_F32)
    # Replays: the same numbers for new values of the same signature.
    a2 = rng.standard_normal(a.shape).astype(np.float32)
    assert_close(jitted(_cuda(a2), y).cpu(), fn(em.tensor(a2), em.tensor(b)), **GPU_F32)


@pytest.mark.parametrize("fn", [
    lambda x: em.sum(em.exp(x - 1.0), axis=1),
    lambda x: em.max(x * 2.0, axis=0, keepdims=True),
    lambda x: em.mean(em.square(x)),
    lambda x: NF.softmax(x, axis=-1),
    lambda x: NF.log_softmax(x * 3.0, axis=0),
    lambda x: NF.layer_norm(x, x.shape[-1]),
    lambda x: NF.gelu(x) @ x.mT,
    lambda x: em.where(x > 0.25, x, -x).sum(axis=0) / 7.0,
], ids=["sum_exp", "max_keepdims", "mean_square", "softmax", "log_softmax", "layer_norm",
        "gelu_matmul", "where_sum"])
def test_reductions_and_composites_match_eager(fn):
    a = np.random.default_rng(1).standard_normal((33, 300)).astype(np.float32)
    x = _cuda(a)
    got = em.jit(fn)(x)
    assert got.device == "cuda:0"
    assert_close(got.cpu(), fn(x).cpu(), **GPU_F32)
    assert_close(got.cpu(), fn(em.tensor(a)), rtol=1e-4, atol=1e-5)


def test_float64_and_int_kernels_match_eager():
    rng = np.random.default_rng(2)
    d = rng.standard_normal((17, 19))
    i = rng.integers(-40, 40, (17, 19)).astype(np.int32)

    def fn(d, i):
        return em.power(em.abs(d), 1.5) + em.floor_divide(i, 7) * em.remainder(i, -3)

    got = em.jit(fn)(_cuda(d), _cuda(i))
    assert got.dtype == em.float64
    np.testing.assert_allclose(got.numpy(), fn(em.tensor(d), em.tensor(i)).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_a_graph_break_on_the_gpu_runs_both_segments():
    a = np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)

    def fn(x):
        y = em.exp(x) * 2.0
        if y.sum().item() > 0:          # a concrete value: the graph breaks here
            y = y - 1.0
        return em.tanh(y)

    jitted = em.jit(fn)
    got = jitted(_cuda(a))
    assert got.device == "cuda:0"
    assert_close(got.cpu(), fn(em.tensor(a)), **GPU_F32)
    assert len(jitted.concrete_functions[0].segments) == 2


def _train(device, optimizer, jit, steps=4):
    em.random.seed(0)
    model = em.nn.MLP([16, 32, 4], device=device)
    opt = optimizer(model.parameters())
    rng = np.random.default_rng(4)
    x = em.tensor(rng.standard_normal((64, 16)).astype(np.float32), device=device)
    y = em.tensor(rng.integers(0, 4, 64), device=device)

    def step(x, y):
        loss = NF.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    run_step = em.jit(step) if jit else step
    losses = [float(run_step(x, y).item()) for _ in range(steps)]
    return losses, [p.numpy().copy() for p in model.parameters()], run_step


@pytest.mark.parametrize("optimizer", [
    lambda p: em.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: em.optim.Adam(p, lr=0.01),
], ids=["sgd_momentum", "adam"])
def test_a_jitted_training_step_on_the_gpu_matches_eager(optimizer):
    want_losses, want_params, _ = _train("cuda", optimizer, jit=False)
    got_losses, got_params, jitted = _train("cuda", optimizer, jit=True)
    assert any(s.backend == "cuda" for s in _steps(jitted))
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4)
    for got, want in zip(got_params, want_params):
        assert_close(got, want, rtol=1e-4, atol=1e-5)
    cpu_losses, cpu_params, _ = _train("cpu", optimizer, jit=False)
    np.testing.assert_allclose(got_losses, cpu_losses, rtol=1e-4)


def test_in_place_updates_and_returned_inputs_keep_eager_state():
    buf = em.zeros(5, device="cuda")

    def fn(x):
        acc = buf
        acc += x * 2.0          # in place: buf itself, captured by reference
        return x, acc

    x = em.arange(5, dtype=em.float32, device="cuda")
    jitted = em.jit(fn)
    for _ in range(3):
        same, updated = jitted(x)
        assert same is x and updated is buf
    np.testing.assert_array_equal(buf.numpy(), np.arange(5, dtype=np.float32) * 6.0)


def test_kernel_events_name_the_cuda_backend():
    class Collect:
        def __init__(self):
            self.events = []

        def on_kernel(self, event):
            self.events.append(event)

    a = np.random.default_rng(5).standard_normal((256, 256)).astype(np.float32)
    x = _cuda(a)
    jitted = em.jit(lambda x: em.tanh(x * 2.0) + em.exp(-x))
    want = jitted(x).numpy()
    with instrument.listening(Collect()) as collect:
        got = jitted(x).numpy()      # the instrumented loop: every step timed, synchronized
    np.testing.assert_array_equal(got, want)
    kernels = [e for e in collect.events if e.kind == "kernel"]
    assert kernels and {e.backend for e in kernels if e.step_kind == "fused"} == {"cuda"}
    assert all(e.device == "cuda:0" and e.end_ns >= e.start_ns for e in kernels)


@settings(max_examples=40, deadline=None)
@given(programs(max_len=6))
def test_random_programs_jitted_on_the_gpu_match_eager_on_the_cpu(case):
    program, arrays = case
    cpu = run(program, [em.tensor(a, dtype=a.dtype) for a in arrays])
    gpu = em.jit(lambda *xs: run(program, list(xs)))(*[_cuda(a) for a in arrays])
    assert gpu.device == "cuda:0" and gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    tol = {"rtol": 5e-4, "atol": 5e-5} if arrays[0].dtype == np.float32 else \
        {"rtol": 1e-9, "atol": 1e-11}
    np.testing.assert_allclose(gpu.numpy(), cpu.numpy(), **tol, equal_nan=True)


@pytest.mark.parametrize("shape, axis", [((1,), 0), ((3, 4), 1)])
def test_a_min_into_a_pooled_buffer_matches_eager(shape, axis):
    # Found by the random programs above: CuPy 14's min(out=...) raises inside its CUB
    # check, so the plan's min step computes and copies instead.
    a = np.random.default_rng(6).standard_normal(shape).astype(np.float32)

    def fn(x):
        return em.tanh(em.min(x, axis=axis))

    got = em.jit(fn)(_cuda(a))
    assert_close(got.cpu(), fn(em.tensor(a)), **GPU_F32)


def test_a_jitted_gpu_call_replays_through_the_fast_path():
    a = np.random.default_rng(7).standard_normal((4, 5)).astype(np.float32)
    jitted = em.jit(lambda x, y: em.exp(x) * y + 1.0)
    x, y = _cuda(a), _cuda(a[0])
    want = jitted(x, y).numpy()
    assert jitted._fast is not None
    got = jitted._fast(x, y)
    assert got.device == "cuda:0"
    np.testing.assert_array_equal(got.numpy(), want)
    # A CPU tensor of the same shape is another signature: the fast replay declines it.
    from execmode.jit_driver.fastcall import MISS

    assert jitted._fast(em.tensor(a), y) is MISS


def test_em_tensor_of_a_cupy_array_is_a_copy_on_its_gpu():
    import cupy as cp

    data = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    t = em.tensor(data)
    assert t.device == "cuda:0" and t.dtype == em.float32 and t.shape == (2, 3)
    data[0, 0] = 100.0
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]      # a copy, as torch.tensor
    assert em.tensor(data, device="cpu").device == "cpu"
    assert em.tensor(data, dtype=em.float64).dtype == em.float64
