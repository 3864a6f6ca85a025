"""A script compared with itself does the same work in both runs: measure()'s sizes,
chosen by time in the first run, are replayed by the next (profilers/measure_sizes.py)."""

import time

import pytest
from execmode.profilers import measure, measure_sizes


def _counting(delay_s: float):
    calls = [0]

    def fn():
        calls[0] += 1
        end = time.perf_counter() + delay_s
        while time.perf_counter() < end:
            pass
    return fn, calls


def _fresh_run(monkeypatch, path):
    """A new process's view of EXECMODE_MEASURE_SIZES: nothing read yet."""
    monkeypatch.setenv(measure_sizes.ENV, str(path))
    monkeypatch.setattr(measure_sizes, "_state", {})


def test_a_slower_second_run_makes_the_first_runs_calls(tmp_path, monkeypatch):
    path = tmp_path / "sizes.jsonl"
    _fresh_run(monkeypatch, path)
    fast, fast_calls = _counting(0.00002)
    first = measure.measure({"a": fast}, rounds=5, round_s=0.005)
    assert path.exists() and first["a"].calls > 20  # sized by time: a round of ~5 ms

    _fresh_run(monkeypatch, path)
    slow, slow_calls = _counting(0.0001)  # slower per call: time would size it smaller
    second = measure.measure({"a": slow}, rounds=5, round_s=0.005)
    assert second["a"].calls == first["a"].calls
    assert slow_calls[0] == fast_calls[0]


def test_without_the_variable_rounds_are_sized_by_time(tmp_path, monkeypatch):
    monkeypatch.delenv(measure_sizes.ENV, raising=False)
    fast, _ = _counting(0.0)
    slow, _ = _counting(0.001)
    spreads = measure.measure({"fast": fast, "slow": slow}, rounds=5, round_s=0.01)
    assert spreads["fast"].calls > spreads["slow"].calls


def test_a_run_that_measures_other_candidates_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "sizes.jsonl"
    _fresh_run(monkeypatch, path)
    fn, _ = _counting(0.0)
    measure.measure({"a": fn}, rounds=5, round_s=0.001)
    _fresh_run(monkeypatch, path)
    with pytest.raises(measure_sizes.SizesDiffer, match=r"\['b'\]"):
        measure.measure({"b": fn}, rounds=5, round_s=0.001)
    _fresh_run(monkeypatch, path)
    measure.measure({"a": fn}, rounds=5, round_s=0.001)
    with pytest.raises(measure_sizes.SizesDiffer, match="more often"):
        measure.measure({"a": fn}, rounds=5, round_s=0.001)


def test_the_calibration_neither_writes_nor_replays_sizes(tmp_path, monkeypatch):
    """It runs in the recorded process of a comparison only (the first time, uncached):
    its measure() call must not shift the script's written sizes."""
    path = tmp_path / "sizes.jsonl"
    _fresh_run(monkeypatch, path)
    fn, _ = _counting(0.0)
    measure.measure({"a": fn}, rounds=5, round_s=0.001, replay_sizes=False)
    assert not path.exists()
    measure.measure({"a": fn}, rounds=5, round_s=0.001)
    _fresh_run(monkeypatch, path)
    measure.measure({"other": fn}, rounds=5, round_s=0.001, replay_sizes=False)
    measure.measure({"a": fn}, rounds=5, round_s=0.001)  # replays the first line
