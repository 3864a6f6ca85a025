"""Every differentiable op's gradient against central finite differences, in float64.

Inputs are drawn away from the points where an op is not differentiable (0 for abs,
ties for maximum, the bounds of clip, ...), so the finite differences are meaningful.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_grad

import execmode as em
from execmode.nn import functional as NF

RNG_SEED = 1234


def rand(*shape, low=-2.0, high=2.0, away_from=None, seed=0):
    """Float64 values in [low, high), at least 0.1 away from ``away_from`` (a number)."""
    rng = np.random.default_rng(RNG_SEED + seed)
    x = rng.uniform(low, high, size=shape)
    if away_from is not None:
        close = np.abs(x - away_from) < 0.1
        x[close] = away_from + np.where(x[close] >= away_from, 0.1, -0.1)
    return x


def distinct(*shape, seed=0):
    """Float64 values with no two closer than 0.05 (no ties for max/min/maximum)."""
    rng = np.random.default_rng(RNG_SEED + seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 - n * 0.05).reshape(shape) + 0.01


# --- unary ------------------------------------------------------------------------------

UNARY_CASES = {
    "copy": (em.copy, {}),
    "negative": (em.negative, {}),
    "abs": (em.abs, {"away_from": 0.0}),
    "exp": (em.exp, {}),
    "log": (em.log, {"low": 0.2, "high": 3.0}),
    "log1p": (em.log1p, {"low": -0.8, "high": 3.0}),
    "expm1": (em.expm1, {}),
    "sqrt": (em.sqrt, {"low": 0.2, "high": 3.0}),
    "square": (em.square, {}),
    "sin": (em.sin, {}),
    "cos": (em.cos, {}),
    "tanh": (em.tanh, {}),
    "erf": (em.erf, {}),
    "reciprocal": (em.reciprocal, {"away_from": 0.0}),
    "neg operator": (lambda x: -x, {}),
    "abs builtin": (abs, {"away_from": 0.0}),
    "clip": (lambda x: em.clip(x, -1.0, 1.0), {"away_from": 1.0}),
    "pow scalar exponent": (lambda x: x ** 3, {}),
    "scalar base pow": (lambda x: 2.0 ** x, {}),
    "rtruediv": (lambda x: 3.0 / x, {"away_from": 0.0}),
    "rsub": (lambda x: 1 - x, {}),
    "remainder scalar": (lambda x: x % 0.7, {"low": 0.05, "high": 0.65}),
}


@pytest.mark.parametrize("name", sorted(UNARY_CASES))
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_unary_gradients(name, shape):
    fn, domain = UNARY_CASES[name]
    check_grad(fn, rand(*shape, **domain))


def test_clip_below_bound_and_gradient_at_nonsmooth_points():
    check_grad(lambda x: em.clip(x, -1.0, None), rand(4, away_from=-1.0))
    # abs'(0) = sign(0) = 0 and relu'(0) = 0, as in PyTorch; clip's gradient at a bound is 1.
    for fn, want in ((em.abs, 0.0), (NF.relu, 0.0), (lambda x: em.clip(x, 0.0, 1.0), 1.0),
                     (lambda x: em.clip(x, -1.0, 0.0), 1.0)):
        x = em.tensor([0.0], dtype=em.float64, requires_grad=True)
        fn(x).sum().backward()
        assert x.grad.tolist() == [want]


# --- binary with broadcasting -----------------------------------------------------------

BROADCAST_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 4)), ((4, 1, 3), (2, 1)),
                   ((), (2, 2))]

BINARY_CASES = {
    "add": (em.add, {}, {}),
    "subtract": (em.subtract, {}, {}),
    "multiply": (em.multiply, {}, {}),
    "divide": (em.divide, {}, {"away_from": 0.0}),
    "power": (em.power, {"low": 0.3, "high": 2.0}, {}),  # a tensor exponent
    "maximum": (em.maximum, "distinct", "distinct"),
    "minimum": (em.minimum, "distinct", "distinct"),
    "remainder": (em.remainder, {"low": 0.1, "high": 0.9}, {"low": 1.0, "high": 2.0}),
    "operators": (lambda a, b: (a + b) * a - b / (a * a + 1) + b ** 2, {}, {}),
}


def _operand(shape, domain, seed):
    if domain == "distinct":
        return distinct(*shape, seed=seed) if shape else np.array(0.037 * (seed + 1))
    return rand(*shape, seed=seed, **domain)


@pytest.mark.parametrize("name", sorted(BINARY_CASES))
@pytest.mark.parametrize("shapes", BROADCAST_PAIRS)
def test_binary_gradients_with_broadcasting(name, shapes):
    fn, domain_a, domain_b = BINARY_CASES[name]
    a = _operand(shapes[0], domain_a, seed=1)
    b = _operand(shapes[1], domain_b, seed=2)
    if name in ("maximum", "minimum"):
        b = b + 0.013  # operands of different shapes still must not tie after broadcasting
    check_grad(fn, a, b)
    check_grad(fn, b, a) if name not in ("power", "remainder") else None


def test_power_with_zero_base_has_a_finite_exponent_gradient():
    base = em.tensor([0.0, 2.0], dtype=em.float64, requires_grad=True)
    exponent = em.tensor([2.0, 3.0], dtype=em.float64, requires_grad=True)
    em.sum(base ** exponent).backward()
    assert np.all(np.isfinite(exponent.grad.numpy()))
    np.testing.assert_allclose(exponent.grad.numpy(), [0.0, 8.0 * np.log(2.0)])


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((3,), (2, 3), (1,)),
                                    ((2, 1), (3,), (2, 3))])
def test_where_gradients(shapes):
    rng = np.random.default_rng(7)
    cond = em.tensor(rng.random(shapes[0]) > 0.5)
    check_grad(lambda a, b: em.where(cond, a, b), rand(*shapes[1], seed=1),
               rand(*shapes[2], seed=2))
    check_grad(lambda a: em.where(cond, a, 0.5), rand(*shapes[1], seed=3))


# --- reductions -------------------------------------------------------------------------

AXES = [None, 0, -1, (0, 2), (2, 0, 1)]


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "std"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_gradients(name, axis, keepdims):
    fn = getattr(em, name)
    x = distinct(2, 3, 2) if name in ("max", "min") else rand(2, 3, 2, away_from=0.0, seed=3)
    check_grad(lambda t: fn(t, axis=axis, keepdims=keepdims), x)


def test_var_with_correction_and_max_with_ties():
    check_grad(lambda t: em.var(t, axis=1, correction=1), rand(3, 4))
    # Tied maxima share the gradient evenly (documented); check the numbers directly.
    x = em.tensor([1.0, 3.0, 3.0], dtype=em.float64, requires_grad=True)
    em.max(x).backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5]


# --- matmul and tensordot ---------------------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 2)),
    ((2, 3, 4), (4, 5)),        # batched @ matrix (one product of the rows)
    ((2, 2, 3, 4), (4, 5)),     # two batch dimensions @ matrix
    ((2, 1, 3, 4), (3, 4, 2)),  # batch dimensions broadcast
    ((4,), (4, 3)),             # vector @ matrix
    ((2, 3, 4), (4,)),          # batched matrix @ vector
    ((4,), (4,)),               # dot product
    ((4,), (2, 4, 3)),          # vector @ batch
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul_gradients(shapes):
    check_grad(em.matmul, rand(*shapes[0], seed=1), rand(*shapes[1], seed=2))


@pytest.mark.parametrize("shape_b, axes", [((4, 5), 1), ((3, 4, 2), 2), ((4, 3), ([1, 2], [1, 0]))])
def test_tensordot_gradients(shape_b, axes):
    check_grad(lambda a, b: em.tensordot(a, b, axes=axes), rand(2, 3, 4, seed=1),
               rand(*shape_b, seed=2))


# --- movement and indexing --------------------------------------------------------------

MOVEMENT_CASES = {
    "reshape": lambda x: em.reshape(x, (3, -1)),
    "reshape method": lambda x: x.reshape(4, 3),
    "permute_dims": lambda x: em.permute_dims(x, (2, 0, 1)),
    "transpose T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "swapaxes": lambda x: em.swapaxes(x, 0, 2),
    "expand_dims": lambda x: em.expand_dims(x, 1),
    "squeeze": lambda x: em.squeeze(em.expand_dims(x, 0)),
    "flatten": lambda x: em.flatten(x, 1),
    "broadcast_to": lambda x: em.broadcast_to(x, (3, 2, 3, 2)),
    "broadcast one axis": lambda x: em.broadcast_to(x[:, :1, :], (2, 5, 2)),
    "basic index": lambda x: x[1, ::-2, None, ...],
    "negative index": lambda x: x[-1, 1:],
    "repeated integer indices": lambda x: x[em.tensor([0, 1, 0, 0])],
    "index array on axis 1": lambda x: x[:, em.tensor([2, 2, 0])],
    "two index arrays": lambda x: x[em.tensor([0, 1, 1]), em.tensor([2, 2, 0])],
    "bool mask": lambda x: x[x > 0.0],
    "astype round trip": lambda x: em.astype(x, em.float64),
}


@pytest.mark.parametrize("name", sorted(MOVEMENT_CASES))
def test_movement_and_indexing_gradients(name):
    check_grad(MOVEMENT_CASES[name], rand(2, 3, 2, away_from=0.0, seed=5))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_and_stack_gradients(axis):
    a, b, c = rand(2, 3, seed=1), rand(2, 3, seed=2), rand(2, 3, seed=3)
    check_grad(lambda x, y, z: em.concat([x, y, z], axis=axis), a, b, c)
    check_grad(lambda x, y, z: em.stack([x, y, z], axis=axis), a, b, c)
    check_grad(lambda x, y: em.concat([x, x * y], axis=axis), a, b)  # one input used twice


def test_setitem_gradients():
    def fn(w, v):
        x = em.zeros((3, 4), dtype=em.float64)
        x[1] = v                          # a row from v
        x[0, 1:3] = w[0, :2] * 2          # a slice from w
        # An index tensor. (Repeated indices in an assignment are left undefined, as in
        # PyTorch's index_put_: which write wins is unspecified.)
        x[em.tensor([2, 0]), 3] = w[1, :2]
        return x * em.concat([w, w[:1]])

    check_grad(fn, rand(2, 4, seed=1), rand(4, seed=2))


def test_augmented_assignment_on_an_intermediate_gradients():
    def fn(w):
        h = w * 2
        h += 1
        h *= w
        h[0] = 5.0  # a constant: no gradient flows to w[0] through it
        return h

    check_grad(fn, rand(3, seed=4))


# --- composites -------------------------------------------------------------------------

def test_softmax_family_gradients():
    x = rand(3, 4, low=-3, high=3)
    check_grad(lambda t: NF.softmax(t, axis=-1), x)
    check_grad(lambda t: NF.softmax(t, axis=0), x)
    check_grad(lambda t: NF.log_softmax(t, axis=-1), x)
    check_grad(lambda t: NF.logsumexp(t, axis=1), x)
    check_grad(lambda t: NF.logsumexp(t), x)


def test_activation_gradients():
    x = rand(2, 5, low=-3, high=3, away_from=0.0)
    check_grad(NF.relu, x)
    check_grad(NF.sigmoid, x)
    check_grad(NF.gelu, x)
    check_grad(lambda t: NF.gelu(t, approximate="tanh"), x)


def test_linear_and_loss_gradients():
    x, w, b = rand(4, 3, seed=1), rand(2, 3, seed=2), rand(2, seed=3)
    check_grad(NF.linear, x, w, b)
    check_grad(lambda a, c: NF.linear(a, c), x, w)
    target = rand(4, 2, seed=4)
    check_grad(lambda p: NF.mse_loss(p, em.tensor(target)), rand(4, 2, seed=5))
    check_grad(lambda p: NF.mse_loss(p, em.tensor(target), reduction="sum"), rand(4, 2, seed=5))
    labels = em.tensor([0, 2, 1, 2])
    check_grad(lambda z: NF.cross_entropy(z, labels), rand(4, 3, seed=6))
    probs = np.random.default_rng(8).dirichlet(np.ones(3), size=4)
    check_grad(lambda z, p: NF.cross_entropy(z, p), rand(4, 3, seed=7), probs, wrt=[0])


def test_layer_norm_gradients():
    x, w, b = rand(3, 5, seed=1), rand(5, seed=2), rand(5, seed=3)
    check_grad(lambda t, g, h: NF.layer_norm(t, 5, g, h), x, w, b)
    check_grad(lambda t: NF.layer_norm(t, (3, 5)), x)


def test_mlp_composite_gradient():
    def mlp(x, w1, w2):
        return NF.log_softmax(NF.gelu(x @ w1) @ w2, axis=-1)

    check_grad(mlp, rand(4, 3, seed=1), rand(3, 5, seed=2), rand(5, 2, seed=3))
