"""em.jit with generated kernels against eager, through the real pass pipeline (fusion,
memory planning with in-place writes), for workloads shaped like the seed examples."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, mse_train_step

import execmode as em

BACKENDS = ["c", "interpreter"]


def _fused_backends(jitted) -> set:
    plan = jitted.concrete_functions[0].segments[0].compiled.plan
    return {s.backend for s in plan.steps if s.kind == "fused"}


def _params(model, seed):
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p._data[...] = (rng.standard_normal(p.shape) * 0.1).astype(p.dtype)


def _train(x, y, backend=None):
    """Five SGD-with-momentum steps of a small MLP; eager when ``backend`` is None."""
    model = em.nn.MLP([32, 24, 3])
    _params(model, 0)
    opt = em.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = mse_train_step(model, opt)
    run = step if backend is None else em.jit(step, backend=backend)
    losses = [run(x, y).numpy() for _ in range(5)]
    if backend is not None:
        assert _fused_backends(run) == {backend}
    return losses, [p.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_steps_match_eager(backend):
    x = em.tensor(np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32))
    y = em.tensor(np.random.default_rng(2).standard_normal((16, 3)).astype(np.float32))
    want_losses, want_params = _train(x, y)
    got_losses, got_params = _train(x, y, backend)
    for got, want in zip(got_losses, want_losses):
        assert_close(got, want, rtol=1e-5)
    for got, want in zip(got_params, want_params):
        assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_elementwise_chain_and_softmax_match_eager(backend):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 10)).astype(np.float32)
    a = rng.standard_normal((64, 10)).astype(np.float32)
    b = rng.standard_normal(10).astype(np.float32)
    x[3, 4] = np.nan
    x[5, 1] = np.inf

    def chain(x, a, b):
        return em.tanh(x * a + b) * 0.5 + em.relu(x)

    def heads(x, b):
        z = em.softmax(x * 2 + b, axis=-1)
        return em.sum(z * em.log(z + 1e-6), axis=-1), em.max(x, axis=0)

    for fn, args in ((chain, (x, a, b)), (heads, (x, b))):
        tensors = [em.tensor(v) for v in args]
        want = fn(*tensors)
        jitted = em.jit(fn, backend=backend)
        for _ in range(2):   # the trace, then the replayed plan
            got = jitted(*tensors)
            for g, w in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,)):
                assert_close(g, w.numpy(), rtol=1e-5, atol=1e-6)


def test_relu_chain_in_place_over_matmul_operands():
    """x = relu(x @ w) with square shapes: the memory plan writes each step over its dying
    x, which is also the matmul's operand (the matmul must finish first)."""
    rng = np.random.default_rng(4)
    w = em.tensor((rng.standard_normal((12, 12)) * 0.3).astype(np.float32))
    x0 = rng.standard_normal((12, 12)).astype(np.float32)

    def chain(x):
        for _ in range(5):
            x = em.relu(x @ w + 0.1)
        return x

    want = chain(em.tensor(x0)).numpy()
    jitted = em.jit(chain, backend="c")
    for _ in range(3):
        assert_close(jitted(em.tensor(x0)), want, rtol=1e-5, atol=1e-6)
