"""A split's gradients summed into one ``scatter_slices`` (passes/slice_sums.py): the same
bits as eager's adds of index_adds, in the program's C, the plan's NumPy and a listener's
step-by-step run."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode import instrument
from execmode.codegen.toolchain import NoCompiler, get_toolchain


def _weights(dtype, shape=(3, 5, 12)):
    values = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape).astype(dtype)
    values[0, 0, :] = 0.0  # products of zeros by negatives: -0.0 gradients, +0.0 summed
    return values


def _grad_step(w, pieces):
    def step():
        w.grad = None
        parts = pieces(w)
        loss = parts[0] * -1.0
        for part in parts[1:]:
            loss = loss * part
        loss.sum().backward()
        return w.grad
    return step


def _eager_and_jit(dtype, pieces, listen=False):
    eager_w = em.nn.Parameter(em.tensor(_weights(dtype)))
    jit_w = em.nn.Parameter(em.tensor(_weights(dtype)))
    eager = _grad_step(eager_w, pieces)().numpy().copy()
    jitted = em.jit(_grad_step(jit_w, pieces))
    got = [jitted().numpy().copy() for _ in range(2)]
    if listen:
        class Listener:
            def on_kernel(self, event):
                pass
        with instrument.listening(Listener()):
            got.append(jitted().numpy().copy())
    ops = [n.op for n in em.jit(_grad_step(jit_w, pieces)).lower().graph.nodes]
    ((compiled),) = jitted._segments.values()
    return eager, got, ops, compiled.plan


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _compiler():
    try:
        get_toolchain()
    except NoCompiler as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_splits_gradients_become_one_scatter_slices_with_eagers_bits(dtype):
    eager, got, ops, plan = _eager_and_jit(dtype, lambda w: w.split(4, dim=2), listen=True)
    assert "scatter_slices" in ops and "index_add" not in ops
    assert np.signbit(eager[0, 0]).sum() == 0 and (eager[0, 0] == 0).all()
    for g in got:  # the program's C, then a listener's step-by-step run (NumPy)
        _same_bits(eager, g)
    if _compiler() is None:
        assert plan.program is not None, plan.program_reason


def test_slices_that_leave_elements_uncovered_keep_them_zero():
    eager, got, ops, plan = _eager_and_jit(
        np.float32, lambda w: (w[:, :2, 1:4], w[:, 2:4, 6:9], w[:, 3:, 9:]))
    assert "scatter_slices" in ops
    for g in got:
        _same_bits(eager, g)
    if _compiler() is None:
        assert plan.program is not None, plan.program_reason


def test_overlapping_slices_keep_their_adds():
    eager, got, ops, _ = _eager_and_jit(np.float32, lambda w: (w[:, :, :7], w[:, :, 5:]))
    assert "scatter_slices" not in ops
    for g in got:
        _same_bits(eager, g)
