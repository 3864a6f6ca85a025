"""The stated profiler cost counts what the recorder adds inside the recorded wall time
(profilers/profiler_cost.py): invariants of what is measured and stated, no timings."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest
from execmode.profilers.output import captured_output
from execmode.profilers.profiler_cost import profiler_cost
from execmode.profilers.recorder import Recorder
from execmode.profilers.runner import record_script
from execmode.profilers.session import open_session
from execmode.profilers.writer import OutputLine

import execmode as em

# A calibration that measured nothing (a fast machine's noise is stated as 0): what is
# stated then is only what the session measured directly.
NOTHING_CALIBRATED = {"overhead_ns": 0, "kernel_step_ns": 0, "kernel_run_ns": 0,
                      "kernel_loop_step_ns": 0, "settled": True}


def _recorded(tmp_path, source: str, *args):
    script = tmp_path / "script.py"
    script.write_text(source)
    path = tmp_path / "run.emsession"
    record_script(script, args, session=path, calibrate=False, capture_output=False)
    with open_session(path) as s:
        return s.meta, s.summary()


def test_the_runners_work_around_the_script_is_measured_and_stated(tmp_path):
    """From the start to the script's first line and from its end to the stop, the
    runner's work is inside the recorded wall time: measured, and part of the total."""
    meta, summary = _recorded(tmp_path, "import execmode as em\nem.ones(3) + 1\n")
    around = meta["recorder_cost_ns"]["around"]
    assert 0 < around < summary["wall_ns"]
    cost = profiler_cost(NOTHING_CALIBRATED, summary["profiler_cost"].counts, meta)
    assert cost.around_ns == around and cost.total_ns >= around
    assert "running the script (its start and end" in cost.text(summary["wall_ns"])


def test_a_script_that_raises_still_has_its_surroundings_measured(tmp_path):
    meta, _ = _recorded(tmp_path, "raise ValueError('no')\n")
    assert meta["exit"]["kind"] == "exception"
    assert meta["recorder_cost_ns"]["around"] > 0


def test_a_recording_that_did_work_never_states_zero(tmp_path):
    """Even where the calibration measured nothing, a recorded script's stated cost
    counts the work measured in the session itself."""
    meta, summary = _recorded(tmp_path, "x = 1\n")
    cost = profiler_cost(NOTHING_CALIBRATED, summary["profiler_cost"].counts, meta)
    assert cost.total_ns > 0


def test_the_starts_rows_are_committed_before_the_clock_starts(tmp_path):
    """The start's meta is written as part of the start (its cost, outside the recorded
    time), not by the writer's first batch inside a short script's recording."""
    path = tmp_path / "started.emsession"
    rec = Recorder(path, calibrate=False)
    rec.set_meta("queued_before_start", True)  # as calibrate() queues its numbers
    rec.start()
    try:
        with sqlite3.connect(path) as reader:
            keys = {key for (key,) in reader.execute("SELECT key FROM meta")}
        assert "queued_before_start" in keys
    finally:
        rec.close()


def test_a_recorder_without_a_runner_states_no_surroundings(tmp_path):
    """Recording from the API (no runner marks the script), nothing around is claimed."""
    path = tmp_path / "api.emsession"
    with Recorder(path, calibrate=False):
        em.ones(4) * 2
    with open_session(path) as s:
        meta, summary = s.meta, s.summary()
    assert "around" not in meta["recorder_cost_ns"]
    cost = profiler_cost(NOTHING_CALIBRATED, summary["profiler_cost"].counts, meta)
    assert cost.around_ns is None


def test_the_writers_python_work_while_recording_is_stated(tmp_path):
    """Rows the writer formats in Python while the script runs hold the interpreter the
    script needs: its thread's CPU time for them is measured and stated."""
    path = tmp_path / "writer.emsession"
    rec = Recorder(path, calibrate=False).start()
    for i in range(2000):
        rec.writer.put(OutputLine(i, "stdout", f"line {i}"))
    rec.flush()  # a batch inside the recording
    rec.close()
    with open_session(path) as s:
        meta, summary = s.meta, s.summary()
    writer = meta["recorder_cost_ns"]["writer"]
    assert writer > 0
    cost = profiler_cost(NOTHING_CALIBRATED, summary["profiler_cost"].counts, meta)
    assert cost.writer_ns == writer and cost.total_ns >= writer
    assert "session writer's Python work" in cost.text(summary["wall_ns"])


def test_recording_the_scripts_output_is_timed_and_stated_with_the_runners_work(
        tmp_path, capsys):
    lines = []
    with captured_output(lines.append) as capture:
        for i in range(100):
            print("line", i)
    assert len(lines) == 100 and capture.recording_ns > 0
    # What a runner measured during the script is part of its work around it.
    path = tmp_path / "runner.emsession"
    rec = Recorder(path, calibrate=False).start()
    rec.script_started()
    rec.runner_ns(capture.recording_ns)
    rec.script_ended()
    rec.close()
    with open_session(path) as s:
        assert s.meta["recorder_cost_ns"]["around"] > capture.recording_ns


DISPLACING = """
import json, os, sys, time
from execmode.profilers.recorder import Recorder
from execmode.profilers.writer import OutputLine
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
rec = Recorder(sys.argv[1], calibrate=False).start()
i = 0
for burst in range(40):  # rows to commit, then the script's Python beside the commits
    for _ in range(300):
        rec.writer.put(OutputLine(i, "stdout", "line %d" % i))
        i += 1
    busy = time.perf_counter() + 0.01
    while time.perf_counter() < busy:
        pass
rec.close()
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_the_writers_sqlite_work_on_the_scripts_only_cpu_is_stated(tmp_path):
    """Pinned to one CPU, every moment of the writer's SQLite work is one the running
    script waited for: the session measures that wait (the script's threads' schedstat),
    states it, and never more than the SQLite work's own CPU time."""
    if not os.path.exists("/proc/self/task"):
        pytest.skip("needs /proc/self/task/*/schedstat (Linux)")
    path = tmp_path / "pinned.emsession"
    subprocess.run([sys.executable, "-c", DISPLACING, str(path)], check=True, timeout=120)
    with open_session(path) as s:
        meta, summary = s.meta, s.summary()
    measured = meta["recorder_cost_ns"]
    assert measured["writer_sql"] > 0
    assert 0 < measured["displaced"] <= measured["writer_sql"]
    cost = profiler_cost(NOTHING_CALIBRATED, summary["profiler_cost"].counts, meta)
    assert cost.displaced_ns == measured["displaced"]
    assert cost.total_ns >= cost.displaced_ns + cost.writer_ns
    assert "while the session writer's SQLite work ran" in cost.text(summary["wall_ns"])
