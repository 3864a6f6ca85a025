"""The layout of a leaf's first ``.grad`` against PyTorch (grad_accumulation.store_first):
PyTorch's AccumulateGrad gives it the leaf's strides where the leaf is dense (C order, F
order, a transposed parameter, any permutation of axes) and C order otherwise; execmode
does the same eagerly, under em.jit with backward inside the call and with backward
outside it, and the .grad then takes later gradients in place, keeping its strides."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode as em

BASE = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.0) / 10.0
LAYOUTS = {
    "C": lambda: BASE.copy(),
    "F": lambda: np.asfortranarray(BASE),
    "transposed": lambda: BASE.copy().T,                    # a parameter seen as .T
    "axes_swapped": lambda: BASE.copy().transpose(1, 0, 2),  # neither C nor F, dense
}


def _elementwise(fw, w, s):
    return (fw.exp(w) * s).sum()


def _through_a_transpose(fw, w, s):
    # the vjp hands back a transposed view: it is copied into the leaf's layout
    return (w.transpose(0, -1) * s).sum()


LOSSES = {"elementwise": _elementwise, "through_a_transpose": _through_a_transpose}


def _element_strides(array) -> tuple:
    return tuple(s // array.itemsize for s in array.strides)


def _torch_grads(torch, layout, loss):
    w = torch.from_numpy(LAYOUTS[layout]()).requires_grad_()
    strides = []
    for scale in (2.0, 3.0):
        loss(torch, w, scale).backward()
        strides.append(tuple(w.grad.stride()))
    return w, strides


def _execmode_grads(mode, layout, loss):
    w = em.tensor(LAYOUTS[layout](), requires_grad=True)
    if mode == "eager":
        def step(w, s):
            loss(em, w, s).backward()
    elif mode == "jit, backward inside":
        @em.jit
        def step(w, s):
            loss(em, w, s).backward()
    else:
        forward = em.jit(lambda w, s: loss(em, w, s))

        def step(w, s):
            forward(w, s).backward()
    seen = []
    for scale in (2.0, 3.0):
        step(w, em.tensor(scale))
        seen.append((w.grad, _element_strides(w.grad.numpy()), w.grad.numpy().copy()))
    return w, seen


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("mode", ["eager", "jit, backward inside", "jit, backward outside"])
def test_the_first_grad_takes_the_leafs_layout_as_pytorchs_does(mode, layout, loss):
    torch = torch_or_skip()
    tw, t_strides = _torch_grads(torch, layout, LOSSES[loss])
    ew, seen = _execmode_grads(mode, layout, LOSSES[loss])
    assert _element_strides(ew.numpy()) == tuple(tw.stride())  # the same leaf
    assert [strides for _, strides, _ in seen] == t_strides
    assert seen[1][0] is seen[0][0]  # later gradients added into the same .grad
    np.testing.assert_allclose(seen[1][2], tw.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_eager_and_jit_give_the_same_grad_memory(layout):
    """The same strides, and the same answer to whether .grad's array is a view (of a
    C-ordered buffer of its own, seen in the leaf's order of axes) or owns its memory;
    a .grad held across calls is not written by a later call's graph."""
    grads = {}
    for jit in (False, True):
        w = em.tensor(LAYOUTS[layout](), requires_grad=True)

        def step(w, s):
            _elementwise(em, w, s).backward()

        run = em.jit(step) if jit else step
        run(w, em.tensor(2.0))
        held, values = w.grad, w.grad.numpy().copy()
        w.grad = None
        run(w, em.tensor(5.0))
        np.testing.assert_array_equal(held.numpy(), values)
        assert not np.shares_memory(held.numpy(), w.grad.numpy())
        grads[jit] = [(g.numpy().strides, g.numpy().base is None) for g in (held, w.grad)]
    assert grads[True] == grads[False]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_on_the_gpu_the_first_grad_takes_the_leafs_layout_too(layout):
    from execmode.backend import cuda_problem

    if not em.cuda_is_available():
        pytest.skip(f"needs a CUDA GPU with CuPy: {cuda_problem() or 'unavailable'}")
    strides = {}
    for device in ("cpu", "cuda"):
        w = em.tensor(LAYOUTS[layout](), device=device, requires_grad=True)
        for scale in (2.0, 3.0):
            _through_a_transpose(em, w, em.tensor(scale, device=device)).backward()
        strides[device] = (w.grad._data.strides, w.grad.cpu().numpy())
    assert strides["cuda"][0] == strides["cpu"][0]
    np.testing.assert_allclose(strides["cuda"][1], strides["cpu"][1], rtol=1e-6)


class _Ops:
    """A listener that keeps the names of the ops it sees."""

    def __init__(self):
        self.names = []

    def on_op(self, event, output):
        self.names.append(event.op)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_with_a_listener_the_copy_is_ops_it_sees_in_the_same_layout(layout):
    from execmode.instrument import listening

    grads = {}
    for watched in (False, True):
        w = em.tensor(LAYOUTS[layout](), requires_grad=True)
        ops = _Ops()
        if watched:
            with listening(ops):
                _through_a_transpose(em, w, em.tensor(2.0)).backward()
            assert "assign" in ops.names  # the copy into .grad, as an op
        else:
            _through_a_transpose(em, w, em.tensor(2.0)).backward()
        grads[watched] = (w.grad.numpy().strides, w.grad.numpy().base is None,
                          w.grad.numpy().copy())
    assert grads[True][:2] == grads[False][:2]
    np.testing.assert_array_equal(grads[True][2], grads[False][2])


def test_a_linear_weights_gradient_becomes_grad_without_a_copy(monkeypatch):
    """nn.Linear's weight gets g^T x laid out as the weight (PyTorch's linear): the
    product itself becomes .grad, with no copy into the weight's layout."""
    from execmode import grad_accumulation

    copies = []
    real_copyto = grad_accumulation.np.copyto
    monkeypatch.setattr(grad_accumulation.np, "copyto",
                        lambda *a, **k: copies.append(a[0].shape) or real_copyto(*a, **k))
    layer = em.nn.Linear(6, 4)
    x = em.tensor(np.random.default_rng(3).standard_normal((5, 6)).astype(np.float32))
    (layer(x) ** 2).sum().backward()
    w = layer.weight
    assert w.grad._data.base is None and w.grad._data.flags.c_contiguous
    assert (4, 6) not in copies
    g = 2 * (x.numpy() @ w.numpy().T + layer.bias.numpy())
    np.testing.assert_allclose(w.grad.numpy(), g.T @ x.numpy(), rtol=1e-5, atol=1e-6)
