"""Sessions while and after they are written: another process tails them, the writer
commits on its own within ~100 ms and at exit, a SIGKILL leaves everything up to the last
flush, and memory stays bounded however many ops run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from execmode.profilers.exporters import export
from execmode.profilers.report import build_report
from execmode.profilers.session import open_session
from profiler_fixtures import SCRIPTS, run_python

# Slow tier: live sessions across processes.
pytestmark = pytest.mark.slow


def _wait_for(predicate, timeout: float):
    """Poll a reader until ``predicate()`` holds; return the seconds it took (or fail)."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, f"condition not met within {timeout} s"
        time.sleep(0.01)
    return time.monotonic() - start


def _count(path) -> int:
    with open_session(path) as s:
        return s.count("op_events")


def test_another_process_reads_while_the_writer_writes(tmp_path):
    path = tmp_path / "live.emsession"
    child = subprocess.Popen([sys.executable, str(SCRIPTS / "writer_child.py"), str(path),
                              "3", "1000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        with open_session(path if path.exists() else _first_batch(child, path)) as reader:
            for i in range(3):
                if i:
                    assert child.stdout.readline().strip() == f"batch {i}"
                # flush() returned before "batch i" was printed: the rows are there.
                assert reader.count("op_events") == 1000 * (i + 1)
                assert reader.status == "recording"
                child.stdin.write("next\n")
                child.stdin.flush()
            assert child.stdout.readline().strip() == "queued"
            # No flush this time: the background writer commits within its interval.
            took = _wait_for(lambda: reader.count("op_events") == 4000, timeout=10)
            print(f"rows visible {took * 1000:.0f} ms after they were queued")
            child.stdin.write("exit\n")
            child.stdin.flush()
            assert child.wait(timeout=30) == 0
            assert reader.count("op_events") == 5000  # the atexit flush
            ops = list(reader.ops(after_seq=4990))
            assert [o.seq for o in ops] == list(range(4991, 5000))
    finally:
        child.kill()
        child.wait()


def _first_batch(child, path):
    assert child.stdout.readline().strip() == "batch 0"
    return path


def test_sigkill_leaves_a_readable_session(tmp_path):
    path = tmp_path / "killed.emsession"
    child = subprocess.Popen(
        [sys.executable, "-m", "execmode.profilers.runner", "--session", str(path),
         "--no-calibrate", "--", str(SCRIPTS / "endless.py")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        _wait_for(lambda: path.exists() and _count(path) >= 200, timeout=20)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()
    with open_session(path) as s:
        assert s.status == "interrupted"
        assert s.count("op_events") >= 200
        assert {t.name for t in s.op_totals()} >= {"matmul", "tanh", "multiply"}
        report = build_report(s)
        assert any("without closing" in n for n in report.notes)
        html = export(s, tmp_path / "killed.html")
        assert "ended without closing" in html.read_text()


def test_memory_stays_bounded(tmp_path):
    # 1M ops may grow the process by at most ~200 MB: 150k ops by 30 MB. The queue is
    # bounded, so growth after the warm-up should be close to nothing.
    measured = 150_000
    result = run_python(SCRIPTS / "bounded_memory.py", tmp_path / "big.emsession", 30_000,
                        measured, timeout=240)
    assert result.returncode == 0, result.stderr
    numbers = json.loads(result.stdout)
    grown_mib = (numbers["after_kib"] - numbers["before_kib"]) / 1024
    print(f"peak RSS grew {grown_mib:.1f} MiB over {measured:,} recorded ops")
    assert numbers["ops"] == 30_000 + measured + 2 * 2  # + the four em.ones per run()
    assert grown_mib < 200 * measured / 1_000_000


def test_a_recorder_left_open_is_closed_at_exit(tmp_path):
    path = tmp_path / "open.emsession"
    code = ("import sys, execmode as em\n"
            "from execmode.profilers.recorder import Recorder\n"
            "Recorder(sys.argv[1], calibrate=False).start()\n"
            "em.ones(3) + 1\n")
    result = run_python("-c", code, path)
    assert result.returncode == 0, result.stderr
    with open_session(path) as s:
        assert s.status == "finished" and s.count("op_events") == 2
        assert s.meta["recorded"]["ops"] == 2
