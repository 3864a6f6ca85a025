"""Sizes computed from a symbolic size stay symbolic through the front ends: slice bounds
(``x[:t // 2]``, ``x[1:t + 1]``), integer indices (``x[t - 1]``) and created shapes
(``em.ones(t + 1)``, ``em.zeros(t, 2)``, ``em.eye(t)``) keep the SymInt, so one graph
serves every size (jit_driver/symbolic_dims.py), with eager's values at each.
(functional/indexing.py and creation.py once passed them through ``int()``, which made
the graphs of two sizes differ: a trace per size.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import execmode as em
from execmode.errors import ArgumentError

SIZES = list(range(2, 14))


def _halves(x):
    t = x.shape[0]
    return x[:t // 2] * 2.0, x[t // 2:] - 1.0


def _past_the_end(x):
    t = x.shape[0]
    return x[1:t + 1].sum(axis=0), x[:t - 1] * x[1:]


def _last_row(x):
    t = x.shape[0]
    return x[t - 1] + 1.0, x[-t] * 3.0


def _created(x):
    t = x.shape[0]
    return em.ones(t + 1) * 3.0, em.zeros(t, 2) + x[:, :2], em.full((2 * t,), 0.5)


def _eye(x):
    t = x.shape[0]
    return em.eye(t) @ x, em.ones((t, t // 2)).sum(axis=1)


PATTERNS = [_halves, _past_the_end, _last_row, _created, _eye]


def _served(jitted) -> int:
    return sum(entry.calls for entries in jitted._sizes.generic.values() for entry in entries)


@pytest.mark.parametrize("fn", PATTERNS, ids=lambda fn: fn.__name__)
def test_a_size_computed_from_a_symbolic_size_is_served_by_one_graph(fn):
    jitted = em.jit(fn)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", em.JitWarning)  # no cache_size_limit reached
        for n in SIZES:
            x = em.tensor(rng.standard_normal((n, 3)).astype(np.float32))
            got, want = jitted(x), fn(x)
            for g, w in zip(got, want, strict=True):
                assert g.shape == w.shape and g.dtype == w.dtype
                np.testing.assert_array_equal(g.numpy(), w.numpy())
    # the first size, a second (the dimension turns dynamic), a symbolic trace, a second
    # symbolic trace that agrees: every further size is one graph's
    assert len(jitted.retraces) <= 3, [r.reason for r in jitted.retraces]
    assert _served(jitted) >= len(SIZES) - 4


def test_a_created_size_that_turns_negative_raises_eagers_error():
    # em.ones(t - 3): the sign test of the symbolic size is a recorded answer, so a size
    # where it is negative is not the shared graph's; it traces and raises eager's error.
    def f(x):
        return em.ones(x.shape[0] - 3) + 1.0

    jitted = em.jit(f)
    for n in (5, 6, 7, 8, 9):
        np.testing.assert_array_equal(jitted(em.zeros(n, 2)).numpy(), f(em.zeros(n, 2)).numpy())
    assert _served(jitted) >= 1
    for n in (2, 3):
        x = em.zeros(n, 2)
        if n - 3 < 0:
            with pytest.raises(ArgumentError):
                f(x)
            with pytest.raises(ArgumentError):
                jitted(x)
        else:
            np.testing.assert_array_equal(jitted(x).numpy(), f(x).numpy())
