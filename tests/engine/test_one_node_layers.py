"""layer_norm, softmax and gelu in training as one autograd node each
(nn/one_node_layers.py): the output and every gradient have the bits they have through the
composite's ops (which a listener forces), with an input that also gets gradients from
outside the composite, before and after it; backward's refusals stay; a jitted backward
through an eager node gets the same gradient."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

import execmode as em
import execmode.nn.functional as F
from execmode import instrument
from execmode.errors import BackwardError, ExecmodeError


class _Null:
    def on_op(self, event, output):
        pass


def _run(layer, seed, shape, dtype, leaf):
    """``layer(x)`` inside a small graph, x also used outside it; its output and the
    gradients of x (or of the leaf before it) and of the layer's parameters."""
    rng = np.random.default_rng(seed)
    x0 = em.tensor((rng.standard_normal(shape) * 2).astype(dtype), requires_grad=True)
    params = layer.params(rng, shape, dtype)
    x = x0 if leaf else x0 * 1.5
    before = x * em.tensor(rng.standard_normal(shape).astype(dtype))  # an earlier consumer
    y = layer.call(x, *params)
    node = y._grad_fn.op.name
    r = em.tensor(rng.standard_normal(y.shape).astype(dtype))
    after = em.tanh(x)  # a later one, and y used twice
    loss = (y * r).sum() + (y * y).sum() + after.sum() + before.sum()
    loss.backward()
    grads = [t.grad.numpy() for t in (x0, *params) if t is not None and t.requires_grad]
    return node, [y.numpy(), loss.numpy(), *grads]


class _LayerNorm:
    def __init__(self, n_norm, affine, frozen=False):
        self.n_norm, self.affine, self.frozen = n_norm, affine, frozen

    def params(self, rng, shape, dtype):
        norm = shape[len(shape) - self.n_norm:]
        made = []
        for kind in ("weight", "bias"):
            if kind in self.affine:
                made.append(em.tensor(rng.standard_normal(norm).astype(dtype),
                                      requires_grad=not self.frozen))
            else:
                made.append(None)
        return made

    def call(self, x, w, b):
        return F.layer_norm(x, x.shape[x.ndim - self.n_norm:], w, b, eps=1e-5)


class _Linear:
    def __init__(self, bias=True, frozen=False):
        self.bias, self.frozen = bias, frozen

    def params(self, rng, shape, dtype):
        w = em.tensor(rng.standard_normal((6, shape[-1])).astype(dtype),
                      requires_grad=not self.frozen)
        b = em.tensor(rng.standard_normal(6).astype(dtype), requires_grad=not self.frozen) \
            if self.bias else None
        return [w, b]

    def call(self, x, w, b):
        return F.linear(x, w, b)


class _Softmax:
    def __init__(self, dim):
        self.dim = dim

    def params(self, rng, shape, dtype):
        return []

    def call(self, x):
        return F.softmax(x, dim=self.dim)


class _Gelu:
    def params(self, rng, shape, dtype):
        return []

    def call(self, x):
        return F.gelu(x)


LAYERS = {
    "layer_norm": _LayerNorm(1, ("weight", "bias")),
    "layer_norm_two_axes": _LayerNorm(2, ("weight", "bias")),
    "layer_norm_weight_only": _LayerNorm(1, ("weight",)),
    "layer_norm_bias_only": _LayerNorm(1, ("bias",)),
    "layer_norm_plain": _LayerNorm(1, ()),
    "layer_norm_frozen": _LayerNorm(1, ("weight", "bias"), frozen=True),
    "linear": _Linear(),
    "linear_without_bias": _Linear(bias=False),
    "linear_frozen": _Linear(frozen=True),
    "softmax_last": _Softmax(-1),
    "softmax_first": _Softmax(0),
    "gelu": _Gelu(),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
@pytest.mark.parametrize("shape", [(4, 3, 16), (2, 5, 1), (1, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("leaf", [True, False])
def test_one_node_has_the_bits_of_the_ops(name, shape, dtype, leaf):
    layer = LAYERS[name]
    if isinstance(layer, _LayerNorm) and layer.n_norm > len(shape):
        pytest.skip("not a shape this layer normalises")
    node, fused = _run(layer, 7, shape, dtype, leaf)
    with instrument.listening(_Null()):
        through_ops, ops = _run(layer, 7, shape, dtype, leaf)
    one_node = name.split("_")[0] + ("_norm" if name.startswith("layer_norm") else "")
    if isinstance(layer, _Linear) and shape[-1] == 1:
        one_node = "add" if layer.bias else "reshape"  # a (6, 1) weight: the ops decide
    assert node == one_node
    assert through_ops not in ("linear", "layer_norm", "softmax", "gelu")  # its ops ran
    assert len(fused) == len(ops)
    for a, b in zip(fused, ops):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_the_node_is_taken_only_in_training_and_unwatched():
    x = em.randn(3, 4, requires_grad=True)
    assert F.gelu(x)._grad_fn.op.name == "gelu"
    with em.no_grad():
        assert F.gelu(x)._grad_fn is None
    assert F.gelu(x, approximate="tanh")._grad_fn.op.name != "gelu"
    mixed = F.layer_norm(x, (4,), em.randn(4, dtype=em.float64, requires_grad=True))
    assert mixed._grad_fn.op.name != "layer_norm"  # mixed dtypes: the ops decide
    with instrument.listening(_Null()):
        assert F.softmax(x, dim=-1)._grad_fn.op.name != "softmax"


def test_a_weight_of_another_shape_is_explained_by_the_ops():
    # A weight that does not broadcast against x: the one-node path steps aside and the
    # ops raise their error naming layer_norm, in training as when watched.
    x = em.randn(4, 3, requires_grad=True)
    w = em.randn(5, requires_grad=True)
    for context in (nullcontext(), instrument.listening(_Null())):
        with context, pytest.raises(ExecmodeError, match="layer_norm|multiply"):
            F.layer_norm(x, (3,), w)


def test_second_backward_and_an_overwritten_input_are_refused():
    weight = em.randn(2, 3, requires_grad=True)
    for fn in (lambda t: F.gelu(t), lambda t: F.softmax(t, dim=-1),
               lambda t: F.layer_norm(t, (3,)), lambda t: F.linear(t, weight)):
        x = em.randn(4, 3, requires_grad=True)
        y = fn(x).sum()
        y.backward()
        with pytest.raises(BackwardError, match="second time"):
            y.backward()
        h = x * 2.0
        y = fn(h).sum()
        h += 1.0  # written after the layer read it
        with pytest.raises(BackwardError, match="overwritten"):
            y.backward()


@pytest.mark.parametrize("frozen", [False, True])
def test_a_second_backward_goes_where_the_ops_let_it(frozen):
    # The ops save values only for products of two operands that both require grad
    # (autograd.node_saves): a second backward through a frozen layer's node passes, as
    # through its ops, and one through a trained layer's is refused.
    for layer in (_Linear(frozen=frozen), _LayerNorm(1, ("weight", "bias"), frozen=frozen)):
        results = []
        for watched in (False, True):
            rng = np.random.default_rng(1)
            x = em.tensor(rng.standard_normal((3, 4)).astype(np.float32),
                          requires_grad=not frozen)
            params = layer.params(rng, (3, 4), np.float32)
            if frozen:  # the parameters train, the input does not
                for p in params:
                    p.requires_grad = True
            with instrument.listening(_Null()) if watched else nullcontext():
                y = layer.call(x, *params).sum()
            y.backward()
            try:
                y.backward()
                results.append("passed")
            except BackwardError:
                results.append("refused")
        assert results[0] == results[1] == ("passed" if frozen else "refused")


@pytest.mark.parametrize("name", ["layer_norm", "softmax_last", "gelu", "linear"])
def test_a_jitted_backward_through_an_eager_node_gives_its_gradient(name):
    layer = LAYERS[name]

    def step(y):
        (y * y).sum().backward()
        return y * 1.0

    grads = []
    for run in (step, em.jit(step)):
        rng = np.random.default_rng(3)
        x = em.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
        params = layer.params(rng, (4, 6), np.float32)
        y = layer.call(x, *params)
        assert y._grad_fn.op.name == name.split("_last")[0]
        run(y)
        grads.append([t.grad.numpy() for t in (x, *params) if t is not None])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_gelu_in_c_has_the_bits_of_the_ops(monkeypatch):
    # Arrays large enough for the C GELU (ops/erf.py), with it loaded.
    from execmode.codegen import eager_erf
    from execmode.ops import erf as erf_module
    kernels = eager_erf.load()
    if kernels is None:
        pytest.skip("no C compiler (or EXECMODE_EAGER_OPERATORS=0): GELU stays in NumPy")
    monkeypatch.setattr(erf_module.NATIVE, "_kernels", kernels)
    for dtype in (np.float32, np.float64):
        for leaf in (True, False):
            node, fused = _run(LAYERS["gelu"], 5, (8, 33, 64), dtype, leaf)
            with instrument.listening(_Null()):
                _, ops = _run(LAYERS["gelu"], 5, (8, 33, 64), dtype, leaf)
            assert node == "gelu"
            for a, b in zip(fused, ops):
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
