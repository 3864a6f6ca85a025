"""Backward's plain paths: with nobody watching, the views, sums and slice gradients the
vjp rules make run their impls on the arrays at once (functional/primitives.apply_op,
F.reshape, F.sum). The gradients are the bits the ops give under a listener, the listener
sees every one of those ops, and F.reshape and F.sum keep their errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import execmode as em
import execmode.torch as et
from execmode import instrument


class _Recording:
    def __init__(self):
        self.ops = []

    def on_op(self, event, output):
        self.ops.append((event.op, event.scope))


def _block_grads(listener=None):
    """The gradients of a small attention block's loss (embedding, layer norm, split,
    view/transpose, masked softmax, GELU, linear, cross entropy), each as raw bytes."""
    et.manual_seed(0)
    B, T, C, H, V = 2, 4, 8, 2, 11
    wte, ln = et.nn.Embedding(V, C), et.nn.LayerNorm(C)
    attn, proj = et.nn.Linear(C, 3 * C), et.nn.Linear(C, C)
    mlp = et.nn.Sequential(et.nn.Linear(C, 4 * C), et.nn.GELU(), et.nn.Linear(4 * C, V))
    idx = et.from_numpy(np.random.default_rng(3).integers(0, V, (B, T)))
    targets = et.from_numpy(np.random.default_rng(4).integers(0, V, (B, T)))
    mask = et.tril(et.ones(T, T)).view(1, 1, T, T)

    def loss():
        x = ln(wte(idx))
        q, k, v = attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        att = et.nn.functional.softmax(att.masked_fill(mask == 0, float("-inf")), dim=-1)
        y = proj((att @ v).transpose(1, 2).contiguous().view(B, T, C)) + x
        logits = mlp(y)
        return et.nn.functional.cross_entropy(logits.view(-1, V), targets.view(-1))

    modules = (wte, ln, attn, proj, mlp)
    if listener is None:
        loss().backward()
    else:
        with instrument.listening(listener):
            loss().backward()
    return [(p.grad.numpy().dtype, p.grad.numpy().shape, p.grad.numpy().tobytes())
            for m in modules for p in m.parameters()]


def test_backward_without_a_listener_gives_the_bits_of_the_ops():
    watched = _Recording()
    assert _block_grads() == _block_grads(watched)
    backward_ops = {op for op, scope in watched.ops if scope.startswith("backward")}
    # the ops the plain paths take when nobody watches are seen when somebody does
    assert {"reshape", "permute_dims", "sum", "broadcast_to", "index_add",
            "matmul"} <= backward_ops


@pytest.mark.parametrize("shape, error", [
    ((6.0, 4), em.ArgumentError), ((True, 24), None), ((5, -1), em.ShapeError),
    ((-1, -1), em.ShapeError)])
def test_reshape_of_a_tuple_keeps_the_general_checks(shape, error):
    x = em.asarray(np.arange(24, dtype=np.float32))
    if error is None:  # a bool is an index (operator.index), as before
        assert em.reshape(x, shape).shape == (1, 24)
        return
    with pytest.raises(error):
        em.reshape(x, shape)
    assert em.reshape(x, (6, 4)).shape == (6, 4)  # and the answers kept stay right


@pytest.mark.parametrize("axis", [(True,), 1.0, (0, 0), 3])
def test_sum_over_a_bad_axis_keeps_the_general_checks(axis):
    x = em.asarray(np.ones((2, 3, 4), np.float32))
    with pytest.raises(em.ExecmodeError):
        em.sum(x, axis=axis)


def test_sum_attributes_are_kept_per_rank():
    for shape in ((4,), (2, 4), (2, 3, 4)):
        x = em.asarray(np.arange(math.prod(shape), dtype=np.float64).reshape(shape))
        for keepdims in (False, True):
            got = em.sum(x, axis=-1, keepdims=keepdims).numpy()
            np.testing.assert_array_equal(got, x.numpy().sum(axis=-1, keepdims=keepdims))
