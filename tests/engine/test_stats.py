"""execmode.stats: the one computation of tensor value statistics that the debugger's
summaries and conditions and the profiler's stored summaries share, and type_text, the one
spelling of a value's type."""

from __future__ import annotations

import math

import numpy as np
import pytest

from execmode import stats
from execmode.debug.summary import TensorStats, summarize
from execmode.dtypes import type_text


@pytest.mark.parametrize("values, expected, among_ones", [
    ([1.0, math.inf, 2.0], (1.0, math.inf, 1.5, 0, 1), (1.0, math.inf)),
    ([-math.inf, 3.0, math.nan], (-math.inf, 3.0, 3.0, 1, 1), (-math.inf, 3.0)),
    ([math.inf, -math.inf], (-math.inf, math.inf, None, 0, 2), (-math.inf, math.inf)),
    ([math.nan, math.nan], (None, None, None, 2, 0), (1.0, 1.0)),
])
def test_non_finite_values_read_inf_not_the_largest_finite(values, expected, among_ones):
    s = stats.value_stats(np.array(values, dtype=np.float32))
    assert (s.min, s.max, s.mean, s.nan, s.inf) == expected
    # The same values among 5,000 ones: the large-array path.
    big = stats.value_stats(np.concatenate([np.ones(5000, np.float32),
                                            np.array(values, dtype=np.float32)]))
    assert (big.min, big.max, big.nan, big.inf) == (*among_ones, *expected[3:])


def test_a_broadcast_view_is_read_once_per_element():
    base = np.array([[1.0, np.nan, -np.inf, 4.0, 0.5]], dtype=np.float32)
    view = np.broadcast_to(base, (6, 5))
    assert stats.one_copy(view)[1] == 6
    assert stats.value_stats(view) == stats.value_stats(np.array(view))
    assert (stats.nan_count(view), stats.inf_count(view)) == (6, 6)
    assert stats.finite_sum(view) == pytest.approx(6 * 5.5)
    assert stats.histogram(view, 4) == stats.histogram(np.array(view), 4)


@pytest.mark.parametrize("array, expected", [
    (np.array([], np.float32), (None, None, None, None, 0, 0)),
    (np.array([True, False, True, True]), (0.0, 1.0, 0.75, math.sqrt(0.75 * 0.25), 0, 0)),
    (np.array([True, True]), (1.0, 1.0, 1.0, 0.0, 0, 0)),
    (np.array([-3, 1, 5], np.int64), (-3.0, 5.0, 1.0, math.sqrt(32 / 3), 0, 0)),
    (np.array([2.0, 4.0], np.float64), (2.0, 4.0, 3.0, 1.0, 0, 0)),
])
def test_every_dtype_reads_float_statistics(array, expected):
    got = stats.value_stats(array)
    assert got[4:] == expected[4:]
    assert got[:4] == pytest.approx(expected[:4])


def test_the_small_and_large_paths_agree():
    rng = np.random.default_rng(0)
    values = rng.standard_normal(5000).astype(np.float32)
    small = [stats.value_stats(values[:4096]), stats.value_stats(values[:4097])]
    assert small[0].mean == pytest.approx(small[1].mean, abs=1e-3)
    assert small[0].std == pytest.approx(np.std(values[:4096].astype(np.float64)), rel=1e-12)
    assert small[1].std == pytest.approx(np.std(values[:4097].astype(np.float64)), rel=1e-12)


def test_the_debugger_and_the_profiler_read_the_same_numbers():
    """TensorStats (conditions, the agent's summaries) shapes value_stats (stored rows)."""
    a = np.array([1.0, np.inf, -np.inf, np.nan, 3.0, -7.5], np.float32)
    row = stats.value_stats(a)
    t = TensorStats(a)
    assert (t.min, t.max, t.mean, t.std, t.nan_count, t.inf_count) == tuple(row)
    assert t.abs_max == math.inf
    s = summarize(a)
    assert (s["mean"], s["std"], s["nan_count"], s["inf_count"]) == \
        (row.mean, row.std, row.nan, row.inf)


def test_no_value_reads_nan_for_conditions_and_none_in_summaries():
    t = TensorStats(np.array([np.nan], np.float32))
    assert math.isnan(t.max) and math.isnan(t.abs_max) and math.isnan(t.sum)
    assert not t.max > 1e3
    assert summarize(np.array([np.nan], np.float32))["max"] is None


def test_a_nan_condition_counts_nans_without_the_other_statistics():
    t = TensorStats(np.array([1.0, np.nan], np.float32))
    assert t.nan and not t.inf
    assert "values" not in t._cache  # min/max/mean/std not computed for a `nan` check


def test_counts_of_integer_and_bool_arrays_are_zero():
    for a in (np.arange(4), np.array([True, False])):
        assert (stats.nan_count(a), stats.inf_count(a)) == (0, 0)


def test_histogram_counts_the_finite_values():
    h = stats.histogram(np.array([0.0, 1.0, 1.0, np.nan, np.inf], np.float32), bins=2)
    assert h == {"counts": [1, 2], "edges": [0.0, 0.5, 1.0]}
    assert stats.histogram(np.array([np.nan], np.float32)) == {"counts": [], "edges": []}


@pytest.mark.parametrize("shape, dtype, device, text", [
    ((3, 4), np.dtype("float32"), None, "f32[3,4]"),
    ((), np.dtype("int64"), None, "i64[]"),
    ((2,), np.dtype("bool"), "cpu", "bool[2]@cpu"),
    ((5, 1), np.dtype("float64"), "cuda:0", "f64[5,1]@cuda:0"),
    ((7,), np.dtype("float16"), None, "float16[7]"),   # outside the table: NumPy's name
    (None, np.dtype("int32"), None, "i32[?]"),         # an unknown shape
    ((1,), "float32", None, "float32[1]"),             # not a dtype object: as it reads
])
def test_type_text(shape, dtype, device, text):
    assert type_text(shape, dtype, device) == text


def test_complex_values_are_read_by_magnitude():
    z = np.array([3 + 4j, complex(math.nan, 1.0), complex(0.0, math.inf), 1j], np.complex64)
    s = stats.value_stats(z)
    assert (s.min, s.max, s.nan, s.inf) == (1.0, math.inf, 1, 1)
    assert s.mean == pytest.approx(3.0)  # of the finite magnitudes 5 and 1
    assert stats.nan_count(z) == 1 and stats.inf_count(z) == 1
    assert stats.finite_sum(z) == pytest.approx(6.0)
    assert sum(stats.histogram(z)["counts"]) == 2
    assert summarize(z) is not None  # the debugger's summary of a complex tensor
