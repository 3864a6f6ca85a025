"""The examples' spread helpers (examples/_common.py): quartiles as NumPy computes them,
and a verdict only when the interquartile range clears the threshold."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "examples_common", Path(__file__).resolve().parents[2] / "examples" / "_common.py")
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)


def test_quartiles_match_numpy():
    samples = [3.1, 1.0, 2.2, 5.0, 1.7, 2.9, 4.4]
    spread = common.Spread(samples)
    q1, median, q3 = np.quantile(samples, [0.25, 0.5, 0.75])
    assert (spread.min, spread.median) == (1.0, median)
    assert np.isclose(spread.q1, q1) and np.isclose(spread.q3, q3)
    assert np.isclose(spread.iqr, q3 - q1)
    assert str(spread).startswith("2.90x (min 1.00, IQR")


def test_a_call_needs_the_whole_iqr_on_one_side():
    assert common.above(common.Spread([1.6, 1.7, 1.8, 1.9]), 1.5) is True
    assert common.above(common.Spread([0.9, 1.0, 1.1, 1.15]), 1.2) is False
    # The median is above the threshold, but the spread straddles it: no call.
    assert common.above(common.Spread([1.2, 1.4, 1.6, 1.8, 2.0]), 1.5) is None


def test_ratios_are_measured_per_repeat():
    calls = []
    spread = common.ratios(lambda: calls.append("a"), lambda: calls.append("b"), calls=2,
                           repeats=3, rounds=1)
    assert len(spread.samples) == 3
    assert calls == ["a", "b"] + ["a", "a", "b", "b"] * 3  # a warm-up, then back to back
