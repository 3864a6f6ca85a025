"""A split's gradients summed into one ``scatter_slices`` (passes/slice_sums.py): the same
bits as eager's adds of index_adds, in the program's C, the plan's NumPy and a listener's
step-by-step run."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import has_c_compiler

import execmode as em
from execmode import instrument
from execmode.ops.scatter_slices import common_loops


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
    lowered = em.jit(_grad_step(jit_w, pieces)).lower()
    ops = [n.op for n in lowered.graph.nodes]
    ((compiled),) = jitted._segments.values()
    return eager, got, ops, compiled.plan, [str(r) for r in lowered.record.rewrites]


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_splits_gradients_become_one_scatter_slices_with_eagers_bits(dtype):
    eager, got, ops, plan, _ = _eager_and_jit(dtype, lambda w: w.split(4, dim=2), listen=True)
    assert "scatter_slices" in ops and "index_add" not in ops
    assert np.signbit(eager[0, 0]).sum() == 0 and (eager[0, 0] == 0).all()
    for g in got:  # the program's C, then a listener's step-by-step run (NumPy)
        _same_bits(eager, g)
    if has_c_compiler():
        assert plan.program is not None, plan.program_reason


def test_slices_that_leave_elements_uncovered_keep_them_zero():
    eager, got, ops, plan, _ = _eager_and_jit(
        np.float32, lambda w: (w[:, :2, 1:4], w[:, 2:4, 6:9], w[:, 3:, 9:]))
    assert "scatter_slices" in ops
    for g in got:
        _same_bits(eager, g)
    if has_c_compiler():
        assert plan.program is not None, plan.program_reason


def test_overlapping_slices_keep_their_adds():
    eager, got, ops, *_ = _eager_and_jit(np.float32, lambda w: (w[:, :, :7], w[:, :, 5:]))
    assert "scatter_slices" not in ops
    for g in got:
        _same_bits(eager, g)


def _heads(w):
    """Attention's layout: each piece split into 2 heads and moved to (B, heads, T, d); the
    gradients come back through a permutation and a reshape (a copy each, read in place)."""
    return tuple(p.reshape(3, 5, 2, 2).transpose(1, 2) for p in w.split(4, dim=2))


def _merged_rows(w):
    """Each piece's rows merged and transposed: the permuted operand's dims are coarser
    than its slice's (one of them split across two loops)."""
    return tuple(p.reshape(15, 4).T for p in w.split(4, dim=2))


@pytest.mark.parametrize("pieces", [_heads, _merged_rows])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_permuted_pieces_are_read_in_place(dtype, pieces):
    eager, got, ops, plan, rewrites = _eager_and_jit(dtype, pieces, listen=True)
    assert "scatter_slices" in ops and "reshape" not in ops[ops.index("scatter_slices"):]
    assert any("3 read through their permutation" in r for r in rewrites), rewrites
    for g in got:
        _same_bits(eager, g)
    if has_c_compiler():
        assert plan.program is not None, plan.program_reason


def test_shapes_walked_in_common_loops():
    # (size, dim of a, its inner rest, dim of b, its inner rest), outermost first
    assert common_loops((2, 4, 8), (2, 4, 2, 4)) == [
        (2, 0, 1, 0, 1), (4, 1, 1, 1, 1), (2, 2, 4, 2, 1), (4, 2, 1, 3, 1)]
    assert common_loops((6,), (1, 2, 1, 3)) == [(2, 0, 3, 1, 1), (3, 0, 1, 3, 1)]
    assert common_loops((2, 3), (3, 2)) is None
    assert common_loops((4,), (5,)) is None
    assert common_loops((0, 3), (3, 0)) == []


def test_a_long_chain_of_adds_compiles_in_linear_time():
    # A loss summed in a Python loop: a chain of 1,500 adds whose terms are not index_adds
    # (the tree walk once recursed per add and again from every add: RecursionError).
    rows = 1500
    xs = em.tensor(np.linspace(-1, 1, rows * 4).reshape(rows, 4).astype(np.float32))

    def total(x):
        t = x[0] * x[0]
        for i in range(1, rows):
            t = t + x[i] * x[i]
        return t

    lowered = em.jit(total).lower(xs)
    assert not any("scatter_slices" in str(r) for r in lowered.record.rewrites)
