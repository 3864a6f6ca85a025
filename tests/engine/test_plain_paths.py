"""The plain paths of the composites (nn/plain.py): with nobody watching, softmax,
log_softmax, cross_entropy, layer_norm, gelu, dropout, embedding and
scaled_dot_product_attention make their ops' NumPy calls directly. Each gives the bits its
ops give (run under a listener, which makes them dispatch), takes its ops when watched,
recorded or wrong, and raises the ops' errors. Also: erf over whole arrays (fdlibm's, as
math.erf) and whole-number powers of negative bases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import arrays, assert_same_bits, shapes, through_the_ops
from hypothesis import given
from hypothesis import strategies as st

import execmode as em
from execmode import instrument
from execmode.nn import functional as NF

FLOATS = st.sampled_from([np.float32, np.float64])


def _same(fn):
    """The plain result and the ops' result of ``fn()``: same dtype, shape and bits."""
    assert_same_bits(fn(), through_the_ops(fn))


@given(data=st.data(), dtype=FLOATS, shape=shapes(min_dims=1, max_dims=3))
def test_softmax_family_gives_its_ops_bits(data, dtype, shape):
    x = em.tensor(data.draw(arrays(dtype, shape, low=-30, high=30, specials=True)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    _same(lambda: NF.softmax(x, dim=axis))
    _same(lambda: NF.log_softmax(x, axis))


@given(data=st.data(), dtype=FLOATS, n=st.integers(1, 5), c=st.integers(1, 6),
       reduction=st.sampled_from(["mean", "sum", "none"]))
def test_cross_entropy_gives_its_ops_bits(data, dtype, n, c, reduction):
    logits = em.tensor(data.draw(arrays(dtype, (n, c), low=-20, high=20)))
    labels = data.draw(st.lists(st.sampled_from([*range(c), -100]), min_size=n, max_size=n))
    target = em.tensor(np.array(labels, np.int64))
    _same(lambda: NF.cross_entropy(logits, target, reduction=reduction))


@given(data=st.data(), dtypes_=st.sampled_from([(np.float32,) * 3, (np.float64,) * 3,
                                                (np.float32, np.float64, np.float32)]),
       shape=shapes(min_dims=1, max_dims=3), affine=st.booleans())
def test_layer_norm_gives_its_ops_bits(data, dtypes_, shape, affine):
    xt, wt, bt = dtypes_
    x = em.tensor(data.draw(arrays(xt, shape, low=-5, high=5)))
    n = data.draw(st.integers(1, len(shape)))
    norm = shape[len(shape) - n:]
    w = em.tensor(data.draw(arrays(wt, norm, low=-2, high=2))) if affine else None
    b = em.tensor(data.draw(arrays(bt, norm, low=-2, high=2))) if affine else None
    _same(lambda: NF.layer_norm(x, norm, w, b, eps=1e-5))


@given(data=st.data(), dtype=FLOATS, shape=shapes(min_dims=0, max_dims=3),
       approximate=st.sampled_from(["none", "tanh"]))
def test_gelu_gives_its_ops_bits(data, dtype, shape, approximate):
    x = em.tensor(data.draw(arrays(dtype, shape, low=-8, high=8, specials=True)))
    _same(lambda: NF.gelu(x, approximate))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_gives_its_ops_bits_and_draws(dtype):
    x = em.tensor(np.random.default_rng(5).standard_normal((7, 9)).astype(dtype))

    def drop():
        em.random.seed(11)
        first = NF.dropout(x, 0.3)
        return first + NF.dropout(x, 0.6)  # the second draw continues the generator

    _same(drop)


def test_embedding_gives_its_ops_bits():
    em.random.seed(0)
    table = em.nn.Embedding(10, 4, padding_idx=2)
    table.weight.requires_grad_(False)
    ids = em.tensor(np.array([[1, 2, 9], [0, 2, 5]]))
    _same(lambda: table(ids))
    _same(lambda: NF.embedding(ids, table.weight))


@given(data=st.data(), dtype=FLOATS, lengths=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       mask=st.sampled_from(["none", "causal", "bool", "float"]))
def test_attention_gives_its_ops_bits(data, dtype, lengths, mask):
    length, source = lengths
    q = em.tensor(data.draw(arrays(dtype, (2, length, 3), low=-3, high=3)))
    k = em.tensor(data.draw(arrays(dtype, (2, source, 3), low=-3, high=3)))
    v = em.tensor(data.draw(arrays(dtype, (2, source, 2), low=-3, high=3)))
    kwargs = {"causal": dict(is_causal=True)}.get(mask, {})
    if mask == "bool":
        keep = data.draw(arrays(np.bool_, (length, source)))
        keep[:, 0] = True  # no row without a key (a NaN row is checked elsewhere)
        kwargs = dict(attn_mask=em.tensor(keep))
    elif mask == "float":
        kwargs = dict(attn_mask=em.tensor(data.draw(arrays(dtype, (length, source)))))
    _same(lambda: NF.scaled_dot_product_attention(q, k, v, **kwargs))
    _same(lambda: NF.scaled_dot_product_attention(q, k, v, scale=0.5, **kwargs))


def test_plain_paths_step_aside_when_watched_recorded_or_wrong():
    x = em.tensor(np.array([[1.0, 2.0, 3.0]], np.float32), requires_grad=True)
    y = NF.softmax(x, dim=-1)                          # autograd records: the ops
    assert y.grad_fn is not None
    (y * em.tensor([[1.0, 0.0, 0.0]])).sum().backward()
    assert x.grad is not None
    with em.no_grad():
        assert NF.softmax(x, dim=-1).grad_fn is None   # the plain path
    events = []

    class Listener:
        def on_op(self, event, output):
            events.append((event.op, event.scope))

    with instrument.listening(Listener()), em.no_grad():
        NF.cross_entropy(x, em.tensor([2]))
    assert ("exp", "cross_entropy/log_softmax") in events
    assert ("check_labels", "cross_entropy") in events
    # The ops' errors, naming the function and the user's line, plain or watched.
    for bad in (lambda: NF.cross_entropy(x.detach(), em.tensor([3])),
                lambda: NF.softmax(x.detach(), dim=2),
                lambda: NF.layer_norm(x.detach(), (4,)),
                lambda: NF.embedding(em.tensor([5]), em.ones((3, 2)))):
        with pytest.raises(em.ExecmodeError) as plain:
            bad()
        with pytest.raises(em.ExecmodeError) as watched:
            through_the_ops(bad)
        assert str(plain.value) == str(watched.value)
        assert "test_plain_paths.py" in str(plain.value)
    # NumPy raising under np.errstate (inf / inf) never leaks from a plain path: the ops
    # run, and give NaN on every path, as they do when watched (docs/graph-mode.md).
    with np.errstate(all="raise"):
        out = NF.softmax(em.tensor([[np.inf, np.inf]]), dim=-1)
    assert np.isnan(out.numpy()).all()
    traced = em.jit(lambda t: NF.gelu(NF.layer_norm(t, 3)))
    with em.no_grad():
        np.testing.assert_allclose(traced(x).numpy(), NF.gelu(NF.layer_norm(x, 3)).numpy(),
                                   rtol=1e-6)


# --- erf and pow ---------------------------------------------------------------------------

_MATH_ERF = np.frompyfunc(math.erf, 1, 1)


def test_float64_erf_is_fdlibms_over_whole_arrays():
    # (float32 erf is the kernels': tests/engine/test_erf_float32.py)
    rng = np.random.default_rng(32)
    edges = np.array([0.0, -0.0, 0.84375, -0.84375, np.nextafter(0.84375, 0), 1.25, -1.25,
                      1 / 0.35, 6.0, -6.0, 27.0, np.inf, -np.inf, 5e-324, -1e-300, 1e-9])
    for values in (rng.standard_normal(4000), rng.uniform(-7, 7, 4000), edges):
        got = em.erf(em.tensor(values)).numpy()
        want = _MATH_ERF(values).astype(np.float64)
        ulps = np.abs(got.view(np.int64) - want.view(np.int64))
        assert ulps.max() <= 1  # within 1 ulp of math.erf (mostly identical)
    nan = em.erf(em.tensor(np.array([np.nan, 1.0]))).numpy()
    assert np.isnan(nan[0]) and nan[1] == math.erf(1.0)
    assert em.erf(em.tensor([0, 1])).dtype == em.float64  # integers give float64


@pytest.mark.parametrize("exponent", [3.0, 3, -3, 4.0, 5, 0, 1, -1, 2.5, 2])
def test_whole_powers_of_negative_bases_are_the_correctly_signed_powers(exponent):
    x = np.array([-2.5, -1.0, -0.0, 0.0, 0.5, 3.0, -np.inf, np.inf, np.nan, -1e-3],
                 np.float32)
    got = em.pow(em.tensor(x), exponent).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), exponent).astype(np.float32)
    assert got.dtype == np.float32
    finite = np.isfinite(want) & (want != 0)
    ulps = np.abs(got[finite].view(np.int32).astype(np.int64)
                  - want[finite].view(np.int32).astype(np.int64))
    assert ulps.max(initial=0) <= 1
    np.testing.assert_array_equal(got[~finite], want[~finite])  # inf, NaN and signed zeros
    assert np.array_equal(np.signbit(got), np.signbit(want))
