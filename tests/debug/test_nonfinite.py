"""NaN/Inf breakpoints fire once per occurrence (where the value appears, not at every op
that passes it on), ``max > 1e3`` holds on inf, and summaries read inf/-inf."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from execmode.debug.controller import Controller
from execmode.debug.protocol import encode
from execmode.debug.summary import TensorStats, format_summary, summarize

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def hits(script, spec, args=()):
    """Every pause of a run with one breakpoint, continuing after each."""
    out = []
    with Controller(os.path.join(SCRIPTS, script), list(args), breakpoints=[spec],
                    start_paused=False) as c:
        while True:
            event = c.wait_until_stopped()
            if event.type == "exited":
                assert event["status"] == "ok", event.data
                return out
            out.append(event.data)
            c.cont()


def test_infinite_stats_read_inf_and_stay_json():
    a = np.array([1.0, np.inf, -np.inf, np.nan, 3.0], np.float32)
    s = summarize(a)
    assert (s["min"], s["max"], s["abs_max"]) == ("-inf", "inf", "inf")
    assert s["mean"] == 2.0 and s["nan_count"] == 1 and s["inf_count"] == 2  # finite values
    assert "min=-inf max=inf mean=2" in format_summary(s)
    json.loads(encode({"type": "reply", "summary": s}))  # the protocol refuses NaN/Inf floats
    stats = TensorStats(a)
    assert stats.max == np.inf and stats.min == -np.inf
    assert summarize(np.array([np.nan], np.float32))["max"] is None  # no value: None


def test_max_over_a_threshold_fires_on_inf():
    stats = TensorStats(np.array([1.0, np.inf], np.float32))
    from execmode.debug.conditions import Condition

    assert Condition("max > 1e3").evaluate(stats)
    assert Condition("abs_max > 1e3").evaluate(TensorStats(np.array([-np.inf], np.float32)))
    assert not Condition("mean > 1e3").evaluate(stats)  # the mean is of the finite values


def test_a_nan_fires_where_it_appears_not_where_it_is_carried():
    found = hits("nonfinite_born.py", "nan")
    assert [(h["op"], h["op_index"]) for h in found] == [("multiply", 3), ("multiply", 7)]
    assert [h["location"]["lineno"] for h in found] == [5, 8]


def test_an_inf_fires_once_per_occurrence():
    found = hits("nonfinite_born.py", "inf")
    assert [(h["op"], h["op_index"]) for h in found] == [("log", 2), ("log", 6)]


def test_a_plain_threshold_still_fires_on_every_op_that_meets_it():
    # Only conditions on NaN/Inf are about an occurrence; min < -1e3 is about values.
    found = hits("nonfinite_born.py", "min < -1e3")
    assert [h["op"] for h in found] == ["log", "log"]   # -inf is below -1e3


def test_graph_mode_fires_once_per_kernel_that_makes_the_value():
    found = hits("nan_jit.py", "inf")
    kernels = [h["kernel"]["name"] for h in found]
    # One jitted call per loop turn: the kernel with log fires in each, nothing after it.
    assert len(found) == 3 and len(set(kernels)) == 1
    assert all("log" in h["kernel"]["member_ops"] for h in found)
