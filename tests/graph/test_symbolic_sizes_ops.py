"""Ops over a symbolic size, each against eager at many sizes: whatever one trace serves
(symbolic_dims.py) or traces per size, the values, dtypes and shapes are eager's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import execmode as em
import execmode.nn.functional as F

em.random.seed(3)
W = em.randn(5, 4)
ROWS = em.randn(20, 5)


def _slices(x):
    t = x.shape[0]
    return x[1:].sum(axis=0) + x[:-1].mean(axis=0) + x[::2].max(axis=0) + x[: t // 2 + 1][0]


def _reshapes(x):
    t = x.shape[0]
    y = x.reshape(t * 5).reshape(5, t).transpose(1, 0)
    return y.reshape(-1)[: t + 1] * 2.0


def _reductions(x):
    return F.softmax(x, dim=0) * x.var(axis=0) + em.argmax(x, dim=0) + x.cumsum(0)[-1]


def _matmul_over_t(x):
    return (x.transpose(1, 0) @ x) / x.shape[0] + (x @ W @ W.transpose(1, 0)).sum(axis=0)


def _creation(x):
    t = x.shape[0]
    steps = em.arange(t, dtype=em.float32)[:, None]
    mask = em.tril(em.ones(t, t, dtype=em.bool))
    return em.where(mask, 1.0, 0.0) @ (x + steps) + em.zeros(t, 5) + em.full((t, 1), 0.5)


def _concat_and_rows(x):
    t = x.shape[0]
    both = em.cat([x, ROWS[:t]], dim=0)
    return both[t:] - both[:t] + em.stack([x, x], axis=0).sum(axis=0)


def _size_as_number(x):
    t = x.shape[0]
    return x * t + x.sum(axis=0) / (t + 1) - (t * t) % 7


def _masked(x):
    return x.masked_fill(x > 0, float("-inf")).exp().sum(axis=0)


FUNCTIONS = [_slices, _reshapes, _reductions, _matmul_over_t, _creation, _concat_and_rows,
             _size_as_number, _masked]
# Those one graph serves (a bound or size the user computed from t, t // 2 + 1 or t + 1,
# stays symbolic through indexing and creation). The other traces per size, with the
# reason: a count a function computes in Python (var's n) reaches the graph as a plain
# number, so its graphs differ from size to size.
ONE_GRAPH = {_slices, _reshapes, _matmul_over_t, _creation, _concat_and_rows,
             _size_as_number, _masked}


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_every_size_gives_eagers_values(fn):
    rng = np.random.default_rng(7)
    sizes = [1, 2, 3, 4, 6, 5, 9, 2, 13, 8, 20]
    inputs = [em.tensor(rng.standard_normal((n, 5)).astype(np.float32)) for n in sizes]
    f = em.jit(fn, cache_size_limit=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", em.JitWarning)
        got = [f(x) for x in inputs]
    for n, x, g in zip(sizes, inputs, got):
        e = fn(x)
        assert g.shape == e.shape and g.dtype == e.dtype, (n, g.shape, e.shape)
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=2e-5, atol=1e-5,
                                   err_msg=f"size {n}")
    # Fewer traces than sizes wherever one graph serves them (not asserted per function:
    # some graphs depend on the size and say so in the retrace reason).
    assert f.trace_count <= len(set(sizes))
    if fn in ONE_GRAPH:
        assert sum(g.calls for gs in f._sizes.generic.values() for g in gs) > 0
    else:
        assert any("traced per size" in r.reason for r in f.retraces), \
            [r.reason for r in f.retraces]
