"""Shared checks for the PyTorch-facing ops: eager against em.jit, and a PyTorch twin.

* :func:`assert_jit_agrees` runs a function eagerly and under ``em.jit`` (twice, so the
  replay is checked too) and compares every tensor it returns: shape, dtype, values.
* :func:`assert_jit_grads_agree` does the same for the gradients of a weighted sum of the
  function's output, with ``backward()`` traced into the graph.
* :func:`torch_or_skip` imports torch or skips with :data:`NEEDS_TORCH`, the reason and
  how to get torch (torch is never needed).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close

import execmode as em


def _leaves(value):
    if isinstance(value, tuple | list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def assert_jit_agrees(fn, *args, rtol=None, atol=None):
    eager = fn(*args)
    jitted = em.jit(fn)
    for _ in range(2):
        traced = jitted(*args)
        pairs = list(zip(_leaves(traced), _leaves(eager), strict=True))
        for got, want in pairs:
            assert isinstance(got, em.Tensor) and isinstance(want, em.Tensor)
            assert_close(got, want.numpy(), rtol=rtol, atol=atol, msg="jit vs eager")
    return eager


def assert_jit_grads_agree(fn, *arrays, rtol=1e-5, atol=1e-6):
    """``fn`` takes float64 tensors; the gradients of sum(fn(...) * w) agree."""
    with em.no_grad():
        shape = fn(*(em.tensor(a, dtype=em.float64) for a in arrays)).shape
    weights = em.tensor(np.random.default_rng(7).standard_normal(shape))

    def grads(jit: bool):
        leaves = [em.tensor(a, dtype=em.float64, requires_grad=True) for a in arrays]

        def step(*xs):
            loss = em.sum(fn(*xs) * weights)
            loss.backward()
            return tuple(x.grad for x in xs)

        run = em.jit(step) if jit else step
        return [g.numpy().copy() for g in run(*leaves)]

    for got, want in zip(grads(True), grads(False), strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# Why a twin check skipped, and how to run it: torch is a test-only extra, never a
# dependency of execmode. .ci/run installs it only from a local wheel (PIP_FIND_LINKS).
NEEDS_TORCH = ("the PyTorch twin checks need torch (never a dependency of execmode): "
               "pip install torch --index-url https://download.pytorch.org/whl/cpu, or put "
               "torch's CPU wheel in PIP_FIND_LINKS for .ci/run")


def torch_or_skip():
    return pytest.importorskip("torch", reason=NEEDS_TORCH)
