"""cross_entropy in training as one autograd node (nn/one_node.py): the loss and every
gradient have the bits they have through the composite's ops (which a listener forces),
and backward's refusals stay."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
import execmode.nn.functional as F
from execmode import instrument
from execmode.errors import BackwardError, ExecmodeError


class _Null:
    def on_op(self, event, output):
        pass


def _train_step(seed, shape, dtype, reduction, ignored):
    """Loss and gradients of a linear layer under cross_entropy, scaled afterwards."""
    rng = np.random.default_rng(seed)
    n, classes = shape
    x = em.tensor(rng.standard_normal((n, 7)).astype(dtype), requires_grad=True)
    w = em.tensor(rng.standard_normal((7, classes)).astype(dtype), requires_grad=True)
    labels = rng.integers(0, classes, n)
    labels[:ignored] = -100
    loss = F.cross_entropy(x @ w, em.tensor(labels), reduction=reduction)
    node = loss._grad_fn.op.name
    if reduction == "none":
        loss = (loss * em.tensor(np.linspace(0.5, 2.0, n).astype(dtype))).sum()
    (loss * 0.5).backward()
    return node, [loss.numpy(), x.grad.numpy(), w.grad.numpy()]


@pytest.mark.parametrize("shape", [(32, 10), (64, 65), (1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignored", [0, 1])
def test_one_node_has_the_bits_of_the_ops(shape, dtype, reduction, ignored):
    node, fused = _train_step(3, shape, dtype, reduction, ignored)
    with instrument.listening(_Null()):
        through_ops, ops = _train_step(3, shape, dtype, reduction, ignored)
    assert node == "cross_entropy" and through_ops != "cross_entropy"
    for a, b in zip(fused, ops):  # (all ignored: NaN, the same NaN)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_second_backward_and_an_overwritten_input_are_refused():
    x = em.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(x, em.tensor([0, 1, 2, 1]))
    loss.backward()
    with pytest.raises(BackwardError, match="second time"):
        loss.backward()
    logits = x * 2.0
    loss = F.cross_entropy(logits, em.tensor([0, 1, 2, 1]))
    logits += 1.0  # written after the loss read it
    with pytest.raises(BackwardError, match="overwritten"):
        loss.backward()


def test_a_bad_label_is_explained_by_the_ops():
    x = em.randn(4, 3, requires_grad=True)
    with pytest.raises(ExecmodeError, match="7"):
        F.cross_entropy(x, em.tensor([0, 1, 7, 1]))


def test_a_jitted_backward_through_the_eager_loss_node_gives_its_gradient():
    # The jit's backward trace walks the eager node with a traced gradient: the same
    # arithmetic through ops.
    labels = em.tensor([0, 1, 2, 1])

    def step(loss):
        (loss * 2.0).backward()
        return loss * 1.0

    grads = []
    for run in (step, em.jit(step)):
        w = em.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, requires_grad=True)
        loss = F.cross_entropy(w * 1.5, labels)
        assert loss._grad_fn.op.name == "cross_entropy"
        run(loss)
        grads.append(w.grad.numpy())
    assert grads[0].tobytes() == grads[1].tobytes()


def test_under_jit_the_loss_is_its_ops():
    w = em.randn(3, 4, requires_grad=True)
    labels = em.tensor([0, 3])

    @em.jit
    def loss_of(x):
        return F.cross_entropy(x @ w, labels)

    eager = F.cross_entropy(em.ones(2, 3) @ w, labels)
    traced = loss_of(em.ones(2, 3))
    # (within rounding: the compiled kernels' exp and log are not NumPy's)
    np.testing.assert_allclose(traced.numpy(), eager.numpy(), rtol=1e-6)
    assert "log" in {n.op for n in loss_of.concrete_functions[0].segments[0].graph.nodes}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("given", [np.float64, np.int64])
def test_a_gradient_of_another_dtype_is_cast_where_backward_casts(reduction, given):
    # backward casts each node's gradient to its operand's dtype: after the first node
    rng = np.random.default_rng(5)
    logits_np = rng.standard_normal((16, 5)).astype(np.float32)
    labels = em.tensor(rng.integers(0, 5, 16))
    gradient = np.full((16,) if reduction == "none" else (), 3, dtype=given)

    def grad_of_logits():
        x = em.tensor(logits_np, requires_grad=True)
        loss = F.cross_entropy(x, labels, reduction=reduction)
        loss.backward(em.tensor(gradient))
        return loss._grad_fn.op.name, x.grad.numpy()

    node, fused = grad_of_logits()
    with instrument.listening(_Null()):
        _, ops = grad_of_logits()
    assert node == "cross_entropy"
    assert fused.dtype == ops.dtype == np.float32 and fused.tobytes() == ops.tobytes()


def test_np_seterr_raise_is_honoured_as_by_the_ops():
    # an exp that underflows in backward's product: the ops retry with errors ignored
    logits_np = np.array([[0.0, -87.3, -1.0], [1.0, 2.0, 3.0]], np.float32)
    labels = em.tensor([0, 2])

    def grad_of_logits():
        x = em.tensor(logits_np, requires_grad=True)
        F.cross_entropy(x, labels).backward()
        return x.grad.numpy()

    with np.errstate(all="raise"):
        fused = grad_of_logits()
        with instrument.listening(_Null()):
            ops = grad_of_logits()
    assert fused.tobytes() == ops.tobytes()


def test_under_no_grad_a_watched_call_is_counted_once():
    from execmode import watched_composites

    x = em.randn(4, 3, requires_grad=True)
    before = watched_composites.counts()
    with em.no_grad(), instrument.listening(_Null()):
        F.cross_entropy(x, em.tensor([0, 1, 2, 1]))
    counted = watched_composites.since(before)  # (the ops' own composites count too)
    assert counted.get("nn/losses:cross_entropy") == 1
    assert "nn/one_node:cross_entropy" not in counted
