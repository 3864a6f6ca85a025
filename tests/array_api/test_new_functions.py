"""The Array API functions of issue 36's second piece against NumPy's: tile, repeat,
unstack, diff, take, cumulative_sum/prod, searchsorted and the unique_* set; their
gradients where they have them; under em.jit each agrees with eager (the data-dependent
ones through a graph break); and their errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, check_op

import execmode as em

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4))
INTS = np.array([[3, 1, 3], [0, 2, 1]], dtype=np.int64)


@pytest.mark.parametrize("reps", [(2,), (2, 1), (1, 3, 2), 2])
def test_tile_matches_numpy(reps):
    check_op(lambda t: em.tile(t, reps), lambda a: np.tile(a, reps), X)


@pytest.mark.parametrize("repeats, axis", [(2, None), (3, 1), (0, 0), (np.array([1, 0, 2]), 0),
                                           (np.array([2]), 1)])
def test_repeat_matches_numpy(repeats, axis):
    em_repeats = em.tensor(repeats) if isinstance(repeats, np.ndarray) else repeats
    check_op(lambda t: em.repeat(t, em_repeats, axis=axis),
             lambda a: np.repeat(a, repeats, axis=axis), X)


def test_unstack_gives_the_slices_along_an_axis():
    parts = em.unstack(em.tensor(X), axis=1)
    assert len(parts) == 4
    for i, p in enumerate(parts):
        assert_close(p, X[:, i])
    assert len(em.unstack(em.tensor(X))) == 3


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"n": 2}, {"n": 0},
                                {"prepend": np.zeros((3, 1)), "append": np.ones((3, 2))}])
def test_diff_matches_numpy(kw):
    em_kw = {k: em.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    check_op(lambda t: em.diff(t, **em_kw), lambda a: np.diff(a, **kw), X)
    check_op(lambda t: em.diff(t), lambda a: np.diff(a), np.array([True, True, False]))


def test_take_reads_along_an_axis_with_negative_indices():
    idx = np.array([-1, 0, 2])
    check_op(lambda t: em.take(t, em.tensor(idx), axis=1), lambda a: np.take(a, idx, axis=1), X)
    check_op(lambda t: em.take(t, em.tensor(idx)), lambda a: np.take(a, idx), X[0])
    with pytest.raises(IndexError):
        em.take(em.tensor(X), em.tensor([4]), axis=1)
    with pytest.raises(em.ArgumentError, match="take"):
        em.take(em.tensor(X), em.tensor(idx))


@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_sum_and_prod_match_numpy(include_initial):
    def initial(out, value):
        return np.concatenate([np.full((out.shape[0], 1), value, out.dtype), out], axis=1) \
            if include_initial else out

    kw = {"axis": 1, "include_initial": include_initial}
    check_op(lambda t: em.cumulative_sum(t, **kw),
             lambda a: initial(np.cumsum(a, axis=1), 0), X)
    check_op(lambda t: em.cumulative_prod(t, **kw),
             lambda a: initial(np.cumprod(a, axis=1), 1), X)
    check_op(lambda t: em.cumulative_sum(t, **kw),  # ints sum in int64
             lambda a: initial(np.cumsum(a, axis=1, dtype=np.int64), 0),
             INTS.astype(np.int32))
    check_op(lambda t: em.cumulative_sum(t, dtype=em.float64),
             lambda a: np.cumsum(a, dtype=np.float64), X[0].astype(np.float32))


def test_cumulative_prod_gradient_is_right_at_zeros():
    x = np.array([[2.0, 0.0, 3.0, -1.5], [0.5, 4.0, 0.0, 0.0]])
    check_grad(lambda t: em.cumulative_prod(t, axis=1), x)
    check_grad(lambda t: em.cumulative_sum(t, axis=0, include_initial=True), X)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy_including_nan(side):
    seq = np.array([0.0, 1.0, 1.0, 2.5, np.nan])
    values = np.array([[1.0, -3.0, np.nan], [2.5, 9.0, 0.0]])
    out = check_op(lambda s, v: em.searchsorted(s, v, side=side),
                   lambda s, v: np.searchsorted(s, v, side=side).astype(np.int64), seq, values)
    jitted = em.jit(lambda s, v: em.searchsorted(s, v * 1.0, side=side))
    assert_close(jitted(em.tensor(seq), em.tensor(values)), out)
    order = np.array([2, 0, 1])
    check_op(lambda s: em.searchsorted(s, em.tensor([1.5]), sorter=em.tensor(order)),
             lambda s: np.searchsorted(s, [1.5], sorter=order), np.array([1.0, 2.0, 0.5]))


def test_unique_functions_match_numpys_with_each_nan_apart():
    a = np.array([[3.0, np.nan, 1.0], [1.0, np.nan, 3.0]])
    x = em.tensor(a)
    ref = np.unique_all(a)
    out = em.unique_all(x)
    for mine, theirs in zip(out, ref):
        assert_close(mine, np.asarray(theirs).astype(mine.dtype))
    assert out.inverse_indices.shape == a.shape
    assert_close(em.unique_values(x), np.unique_values(a))
    assert_close(em.unique_counts(em.tensor(INTS)).counts, np.unique_counts(INTS).counts)
    inv = em.unique_inverse(em.tensor(INTS))
    assert_close(inv.values[inv.inverse_indices], INTS)


def test_unique_under_jit_is_a_graph_break_that_agrees_with_eager():
    fn = em.jit(lambda t: em.unique_values(t * 2) + 1)
    x = em.tensor(INTS)
    assert_close(fn(x), np.unique(INTS * 2) + 1)
    report = em.explain(fn, x)  # the size of the result is read: a break, with its reason
    assert [b.op for b in report.breaks] == ["unique"]
