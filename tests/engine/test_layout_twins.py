"""Layouts and identities PyTorch gives where code relies on them: ``contiguous()`` gives C
order (a ``view`` of it is a view), ``cat`` of one tensor is a new tensor; eagerly and
under em.jit alike. Twins against torch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em

torch = pytest.importorskip("torch", reason="the twins need torch (the local CPU wheel)")


def _strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def test_contiguous_of_a_transpose_is_c_ordered_and_a_copy_as_torchs():
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    x, t = em.tensor(values), torch.tensor(values)
    y, u = x.T.contiguous(), t.T.contiguous()
    assert _strides(y.numpy()) == u.stride() == (3, 1)
    np.testing.assert_array_equal(y.numpy(), u.numpy())
    assert not np.shares_memory(y.numpy(), x.numpy())
    assert x.contiguous() is x and t.contiguous() is t  # already C: itself, as torch
    v = y.view(12)  # a view of the contiguous copy: writes reach it
    v[0] = 100.0
    assert y.numpy()[0, 0] == 100.0 and x.numpy()[0, 0] == 0.0


def test_contiguous_under_jit_gives_eagers_layout_values_and_gradient():
    values = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    w = em.tensor(values, requires_grad=True)

    def f(w):
        return (w.T.contiguous() * 2.0).sum(axis=0)

    eager_out = f(w)
    eager_out.sum().backward()
    eager_grad = w.grad.numpy().copy()
    w.grad = None
    jitted = em.jit(f)(w)
    jitted.sum().backward()
    # The kernel's sum may add in another order: within rounding.
    np.testing.assert_allclose(jitted.numpy(), eager_out.detach().numpy(), rtol=1e-6)
    np.testing.assert_array_equal(w.grad.numpy(), eager_grad)
    inside = em.jit(lambda w: w.T.contiguous())(w.detach())
    assert _strides(inside.numpy()) == (3, 1)


def test_cat_of_one_tensor_is_a_new_tensor_as_torchs():
    values = np.ones((2, 3), np.float32)
    x, t = em.tensor(values), torch.tensor(values)
    for result, source in ((em.concat([x]), x), (em.jit(lambda x: em.concat([x]))(x), x)):
        assert result is not source
        assert not np.shares_memory(result.numpy(), source.numpy())
    assert torch.cat([t]).data_ptr() != t.data_ptr()
