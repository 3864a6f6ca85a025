"""The examples' helpers (examples/_common.py) are thin over execmode's measurement
protocol: never fewer rounds than a verdict needs, quick mode or not, and a first call
timed once per round with what decide() needs to see a busy machine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from execmode.profilers import measure

COMMON = Path(__file__).resolve().parents[2] / "examples" / "_common.py"


def load_common(monkeypatch, quick: str):
    monkeypatch.setenv("EXECMODE_QUICK", quick)
    spec = importlib.util.spec_from_file_location("examples_common", COMMON)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("quick", ["", "1"])
def test_rounds_never_fall_below_what_a_verdict_needs(monkeypatch, quick):
    common = load_common(monkeypatch, quick)
    assert common.QUICK == bool(quick)
    assert common.ROUNDS >= measure.MIN_ROUNDS
    spreads = common.compare_times({"a": lambda: None, "b": lambda: None}, calls=3)
    assert [s.rounds for s in spreads.values()] == [common.ROUNDS] * 2
    assert all(s.calls == 3 for s in spreads.values())


def test_single_calls_prepare_untimed_and_time_one_call_per_round(monkeypatch):
    common = load_common(monkeypatch, "1")
    log = []
    # Each round collects garbage before its timed call; the log shows where. (A full
    # collection of this test process's heap takes a good part of a second.)
    monkeypatch.setattr(common.gc, "collect", lambda: log.append(("collect",)))

    def prepare(name):
        def make():
            log.append(("prepare", name))
            return lambda: log.append(("call", name))
        return make

    spreads = common.single_calls({"a": prepare("a"), "b": prepare("b")})
    # Rounds interleaved, their order rotated; each one prepared, then called once.
    first_round = [("prepare", "a"), ("collect",), ("call", "a"),
                   ("prepare", "b"), ("collect",), ("call", "b")]
    second_round = [("prepare", "b"), ("collect",), ("call", "b"),
                    ("prepare", "a"), ("collect",), ("call", "a")]
    assert log[:12] == first_round + second_round
    assert len(log) == 6 * common.ROUNDS
    for spread in spreads.values():
        assert spread.rounds == common.ROUNDS and spread.calls == 1
        if measure.runnable_tasks() is not None:  # what decide() reads for a busy machine
            assert len(spread.runnable) == common.ROUNDS


def test_per_item_keeps_the_rounds(monkeypatch):
    common = load_common(monkeypatch, "1")
    spread = measure.Spread.of([100.0, 120.0, 90.0, 110.0, 105.0], calls=4, runnable=[1] * 5)
    item = common.per_item(spread, 10)
    assert item.samples == (10.0, 12.0, 9.0, 11.0, 10.5)
    assert (item.calls, item.runnable) == (4, spread.runnable)
    assert item.relative_iqr == pytest.approx(spread.relative_iqr)
