"""The ML functions of execmode.nn.functional against straightforward NumPy references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import (
    FLOAT_DTYPES,
    arrays,
    assert_close,
    assert_same_bits,
    check_op,
    dtypes,
    shapes,
    through_the_ops,
)
from hypothesis import given
from hypothesis import strategies as st

import execmode as em
from execmode.nn import functional as NF

_erf = np.vectorize(math.erf, otypes=[np.float64])


# --- NumPy references, computed in float64 and cast back ------------------------------------

def ref_relu(x):
    return np.maximum(x, 0)


def ref_sigmoid(x):
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def ref_gelu(x, approximate="none"):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        out = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    else:
        out = 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))
    return out.astype(x.dtype)


def ref_logsumexp(x, axis=None, keepdims=False):
    x64 = x.astype(np.float64)
    m = np.max(x64, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x64 - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return np.asarray(out).astype(x.dtype)


def ref_softmax(x, axis=-1):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - np.max(x64, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def ref_log_softmax(x, axis=-1):
    return (x.astype(np.float64) - ref_logsumexp(x.astype(np.float64), axis, True)).astype(
        x.dtype)


def ref_cross_entropy(logits, target, reduction="mean"):
    logp = ref_log_softmax(logits.astype(np.float64))
    if target.dtype.kind in "iu":
        per_row = -logp[np.arange(len(target)), target]
    else:
        per_row = -np.sum(logp * target, axis=-1)
    out = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](per_row)
    return np.asarray(out).astype(logits.dtype)


def ref_layer_norm(x, shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=axes, keepdims=True)
    out = (x64 - mu) / np.sqrt(x64.var(axis=axes, keepdims=True) + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.astype(x.dtype)


# float32 composites round differently from a float64 reference: a few ulps, relative.
def tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == em.float32 else {"rtol": 1e-9, "atol": 1e-12}


# --- activations ----------------------------------------------------------------------------

@given(data=st.data(), dtype=dtypes(FLOAT_DTYPES), shape=shapes(min_side=0))
def test_activations_match_numpy(data, dtype, shape):
    x = data.draw(arrays(dtype, shape, low=-20, high=20, specials=True))
    check_op(NF.relu, ref_relu, x)
    check_op(NF.sigmoid, ref_sigmoid, x, **tol(dtype))
    check_op(NF.gelu, ref_gelu, x, **tol(dtype))
    check_op(lambda t: NF.gelu(t, approximate="tanh"), lambda a: ref_gelu(a, "tanh"), x,
             **tol(dtype))
    # The top-level aliases are the same functions.
    assert em.relu is NF.relu and em.gelu is NF.gelu and em.sigmoid is NF.sigmoid


@given(data=st.data(), dtype=dtypes(FLOAT_DTYPES), shape=shapes(min_dims=1, max_dims=3))
def test_softmax_family_matches_numpy(data, dtype, shape):
    x = data.draw(arrays(dtype, shape, low=-50, high=50))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_op(lambda t: NF.softmax(t, axis=axis), lambda a: ref_softmax(a, axis), x, **tol(dtype))
    check_op(lambda t: NF.log_softmax(t, axis=axis), lambda a: ref_log_softmax(a, axis), x,
             **tol(dtype))
    keepdims = data.draw(st.booleans())
    lse_axis = data.draw(st.sampled_from([None, axis]))
    check_op(lambda t: NF.logsumexp(t, axis=lse_axis, keepdims=keepdims),
             lambda a: ref_logsumexp(a, lse_axis, keepdims), x, **tol(dtype))


def test_softmax_is_stable_for_huge_and_infinite_logits():
    x = em.tensor([[1000.0, 1000.0, -math.inf], [-1e30, 0.0, 1e30]])
    assert_close(NF.softmax(x), np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], np.float32))
    assert_close(NF.logsumexp(em.tensor([-math.inf, -math.inf])), np.float32(-math.inf))
    out = NF.log_softmax(em.tensor([1000.0, 0.0]))
    assert_close(out, np.array([0.0, -1000.0], np.float32))
    # The largest logit keeps its small log-probability (x - logsumexp(x) would round
    # 41 + 1.7e-6 to 41 in float32 and return 0).
    logits = np.array([41.0, 27.0, 27.0], np.float32)
    assert_close(NF.log_softmax(em.tensor(logits)), ref_log_softmax(logits), atol=1e-7)


def test_nan_propagates_through_activations():
    x = em.tensor([math.nan, 1.0])
    for fn in (NF.relu, NF.sigmoid, NF.gelu):
        assert math.isnan(fn(x).tolist()[0])
    assert all(math.isnan(v) for v in NF.softmax(x).tolist())


# --- linear, losses, layer norm ---------------------------------------------------------------

@given(data=st.data(), dtype=dtypes(FLOAT_DTYPES), batch=st.sampled_from([(), (3,), (2, 3)]),
       bias=st.booleans())
def test_linear_matches_numpy(data, dtype, batch, bias):
    x = data.draw(arrays(dtype, batch + (4,), low=-3, high=3))
    w = data.draw(arrays(dtype, (5, 4), low=-3, high=3))
    b = data.draw(arrays(dtype, (5,), low=-3, high=3)) if bias else None
    want = x @ w.T + (b if bias else 0)
    got = NF.linear(em.tensor(x, dtype=dtype), em.tensor(w, dtype=dtype),
                    em.tensor(b, dtype=dtype) if bias else None)
    assert_close(got, want.astype(dtype), rtol=1e-5, atol=1e-5)


# --- the plain path: linear and relu on arrays nobody watches ---------------------------------

@given(data=st.data(), dtypes_=st.sampled_from([(np.float32,) * 3, (np.float64,) * 3,
                                                (np.float32, np.float64, np.float32)]),
       batch=st.sampled_from([(), (3,), (2, 3), (2, 1, 3)]), bias=st.booleans())
def test_plain_linear_gives_its_ops_bits(data, dtypes_, batch, bias):
    """With nobody watching, linear computes on the arrays (the NumPy calls its ops make);
    mixed dtypes take the ops (NumPy's promotion). Same dtype, shape and bits either way."""
    xt, wt, bt = dtypes_
    x = em.tensor(data.draw(arrays(np.dtype(xt), batch + (4,), low=-3, high=3)))
    w = em.tensor(data.draw(arrays(np.dtype(wt), (5, 4), low=-3, high=3)))
    b = em.tensor(data.draw(arrays(np.dtype(bt), (5,), low=-3, high=3))) if bias else None
    assert_same_bits(NF.linear(x, w, b), through_the_ops(lambda: NF.linear(x, w, b)))


@pytest.mark.parametrize("values", [
    np.array([-1.5, 0.0, -0.0, 2.0, np.nan, -np.inf], np.float32),
    np.array([[-1.0, 3.0]], np.float64), np.array(-2.0, np.float32), np.array([-3, 4]),
    np.array([True, False]), np.array(5, np.int32)])
def test_plain_relu_gives_its_ops_bits(values):
    x = em.tensor(values)
    assert_same_bits(NF.relu(x), through_the_ops(lambda: NF.relu(x)))


def test_linear_and_relu_take_their_ops_when_watched_recorded_or_wrong():
    from execmode import instrument

    x = em.tensor(np.ones((2, 4), np.float32))
    w = em.nn.Parameter(em.tensor(np.full((3, 4), 0.5, np.float32)))
    b = em.tensor(np.zeros(3, np.float32))
    y = NF.relu(NF.linear(x, w, b))          # a parameter in grad mode: the tape
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2.0, np.float32))
    with em.no_grad():
        z = NF.relu(NF.linear(x, w, b))      # no tape: the plain path
    assert not z.requires_grad and z.grad_fn is None
    events = []

    class Listener:
        def on_op(self, event, output):
            events.append((event.op, event.scope))

    with instrument.listening(Listener()), em.no_grad():
        NF.relu(NF.linear(x, w, b))
    assert events == [("permute_dims", "linear"), ("matmul", "linear"), ("add", "linear"),
                      ("relu", "relu")]
    for wrong in (em.ones((3, 5)), em.ones(3)):  # the ops' errors, as before
        with pytest.raises(em.ShapeError) as plain:
            NF.linear(x, wrong)
        with pytest.raises(em.ShapeError) as watched:
            through_the_ops(lambda wrong=wrong: NF.linear(x, wrong))
        assert str(plain.value).split(" at ")[0] == str(watched.value).split(" at ")[0]
        assert "test_nn_functional.py" in str(plain.value)  # the user's line
    inf = em.tensor(np.array([[np.inf, 1.0, 0.0, 0.0]], np.float32))
    minus_inf = em.tensor(np.full(3, -np.inf, np.float32))
    # inf + -inf: the ops' NaN, whatever np.seterr says
    with np.errstate(all="raise"), em.no_grad():
        assert_same_bits(NF.linear(inf, w, minus_inf),
                         through_the_ops(lambda: NF.linear(inf, w, minus_inf)))
    traced = em.jit(lambda v: NF.relu(NF.linear(v, w, b)))
    with em.no_grad():
        assert_same_bits(traced(x), NF.relu(NF.linear(x, w, b)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@given(data=st.data(), dtype=dtypes(FLOAT_DTYPES), shape=shapes(min_dims=1))
def test_mse_loss_matches_numpy(reduction, data, dtype, shape):
    pred = data.draw(arrays(dtype, shape))
    target = data.draw(arrays(dtype, shape))
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    check_op(lambda p, t: NF.mse_loss(p, t, reduction=reduction),
             lambda p, t: np.asarray(reduce((p - t) ** 2)).astype(dtype), pred, target,
             rtol=1e-5 if dtype == em.float32 else 1e-10)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@given(data=st.data(), dtype=dtypes(FLOAT_DTYPES), n=st.integers(1, 4), c=st.integers(1, 5))
def test_cross_entropy_with_class_indices_matches_numpy(reduction, data, dtype, n, c):
    logits = data.draw(arrays(dtype, (n, c), low=-20, high=20))
    target = np.array(data.draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n)))
    check_op(lambda x, t: NF.cross_entropy(x, t, reduction=reduction),
             lambda x, t: ref_cross_entropy(x, t, reduction), logits, target, **tol(dtype))


@given(data=st.data(), dtype=dtypes(FLOAT_DTYPES), n=st.integers(1, 4), c=st.integers(1, 5))
def test_cross_entropy_with_probabilities_matches_numpy(data, dtype, n, c):
    logits = data.draw(arrays(dtype, (n, c), low=-20, high=20))
    raw = data.draw(arrays(dtype, (n, c), low=0.01, high=1))
    probs = (raw / raw.sum(axis=-1, keepdims=True)).astype(dtype)
    check_op(NF.cross_entropy, ref_cross_entropy, logits, probs, **tol(dtype))


@given(data=st.data(), dtype=dtypes(FLOAT_DTYPES), shape=shapes(min_dims=1, max_dims=3,
                                                                 min_side=2),
       affine=st.booleans(), n_norm=st.integers(1, 2))
def test_layer_norm_matches_numpy(data, dtype, shape, affine, n_norm):
    n_norm = min(n_norm, len(shape))
    norm_shape = shape[-n_norm:]
    x = data.draw(arrays(dtype, shape, low=-5, high=5))
    w = data.draw(arrays(dtype, norm_shape, low=-2, high=2)) if affine else None
    b = data.draw(arrays(dtype, norm_shape, low=-2, high=2)) if affine else None
    got = NF.layer_norm(em.tensor(x, dtype=dtype), norm_shape,
                        em.tensor(w, dtype=dtype) if affine else None,
                        em.tensor(b, dtype=dtype) if affine else None)
    # Rows with (nearly) equal values divide a rounding error by sqrt(eps): allow for it.
    assert_close(got, ref_layer_norm(x, norm_shape, w, b),
                 rtol=1e-4 if dtype == em.float32 else 1e-8,
                 atol=1e-3 if dtype == em.float32 else 1e-8)


def test_layer_norm_int_normalized_shape_and_module():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_close(NF.layer_norm(em.tensor(x), 4), ref_layer_norm(x, (4,)), atol=1e-5)
    assert_close(em.nn.LayerNorm(4)(em.tensor(x)), ref_layer_norm(x, (4,)), atol=1e-5)


def test_functions_record_their_named_scope():
    events = []

    class Listener:
        def on_op(self, event, output):
            events.append(event)

    from execmode import instrument

    listener = Listener()
    x = em.ones((2, 3))
    instrument.add_listener(listener)
    try:
        with em.named_scope("block"):
            NF.softmax(x)
    finally:
        instrument.remove_listener(listener)
    scopes = {e.scope for e in events}
    assert scopes == {"block/softmax"}, scopes
