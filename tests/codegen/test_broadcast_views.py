"""A broadcast view reaches an elementwise or reduction kernel as it is (0 strides along
the repeated axes: codegen/lower.arrival_strides), not as a copy at every call; one that
arrives materialized is laid out to those strides (buffers.arranged)."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.codegen.buffers import arranged, has_strides
from execmode.codegen.c_runtime import CKernel
from execmode.codegen.toolchain import find_compiler

needs_cc = pytest.mark.skipif(find_compiler() is None, reason="needs a C compiler")


def _centered(x):
    # the mean broadcast back over the last axis, as layer norm and softmax make it
    m = em.broadcast_to(em.mean(x, axis=-1, keepdims=True), x.shape)
    return em.tanh(x - m) * 2.0


def _kernels(jitted):
    plan = jitted.concrete_functions[0].segments[0].compiled.plan
    return [s.fn for s in plan.steps if isinstance(s.fn, CKernel)]


@needs_cc
def test_a_broadcast_view_is_read_in_place_and_agrees_with_eager(monkeypatch):
    x = em.tensor(np.random.default_rng(0).standard_normal((16, 32, 64)).astype(np.float32))
    jitted = em.jit(_centered)
    first = jitted(x)
    sources = [k.source for k in _kernels(jitted)]
    assert any("(a broadcast view, read in place)" in s for s in sources), sources
    copies = []
    original = CKernel._rebind_copy
    monkeypatch.setattr(CKernel, "_rebind_copy",
                        lambda self, *a: copies.append(self.name) or original(self, *a))
    again = jitted(x)
    assert copies == []
    expected = _centered(x).numpy()
    for got in (first, again):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("strides, shape", [((32, 1, 0), (16, 32, 64)), ((0, 1), (8, 32)),
                                            ((1, 0, 8), (8, 5, 4))])
def test_a_materialized_broadcast_is_laid_out_to_the_kernels_strides(strides, shape):
    """Values that repeat along the 0-stride axes, arriving as a plain array: the copy has
    the strides the kernel reads (so that the kernel reads the same values)."""
    rng = np.random.default_rng(1)
    one = tuple(1 if s == 0 else n for s, n in zip(strides, shape))
    a = np.ascontiguousarray(np.broadcast_to(rng.standard_normal(one).astype(np.float32),
                                             shape))
    got = arranged(np, a, np.float32, strides)
    assert has_strides(got, strides)
    np.testing.assert_array_equal(got, a)


@pytest.mark.parametrize("backend", ["interpreter", "numpy"])
def test_a_broadcast_view_agrees_with_eager_on_the_other_backends(backend):
    x = em.tensor(np.random.default_rng(2).standard_normal((4, 8, 16)).astype(np.float32))
    jitted = em.jit(_centered, backend=backend)
    for _ in range(2):
        np.testing.assert_allclose(jitted(x).numpy(), _centered(x).numpy(), rtol=1e-6,
                                   atol=1e-6)
