"""Scripts that fork, spawn workers, run threads, leave by os._exit or crash, under
`execmode profile` and `execmode run`: the same results as plain python, the script's exit
status passed through, the session readable and saying how the script ended.

Real processes throughout (tests/faults/scripts/processes.py is the script)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from execmode.profilers.session import open_session
from fault_helpers import ROOT, SCRIPTS, child_env, run_execmode

# Slow tier: faults injected into real processes.
pytestmark = pytest.mark.slow

SCRIPT = os.path.join(SCRIPTS, "processes.py")
OPS_PER_WORK = 22  # processes.work(): tensor, 10 x (mul, add), sum


def _plain(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, mode], capture_output=True, text=True,
                          env=child_env(), cwd=ROOT, timeout=120)


def _results(stdout: str) -> list[str]:
    return sorted(line for line in stdout.splitlines() if line.startswith("result"))


def _under(command: str, mode: str, tmp_path) -> tuple[subprocess.CompletedProcess, str]:
    session = str(tmp_path / f"{command}-{mode}.emsession")
    result = run_execmode(command, "--session", session, SCRIPT, mode)
    return result, session


@pytest.mark.parametrize("command", ["profile", "run"])
@pytest.mark.parametrize("mode, main_works", [
    ("fork", 2),        # the forked child's ops are its own: not in the parent's session
    ("pool-fork", 2),
    ("pool-spawn", 2),
    ("threads", 4),     # every thread's ops are recorded
])
def test_processes_and_threads_give_plain_python_results(command, mode, main_works, tmp_path):
    plain = _plain(mode)
    assert plain.returncode == 0, plain.stderr
    result, session = _under(command, mode, tmp_path)
    assert result.returncode == 0, result.stderr
    assert _results(result.stdout) == _results(plain.stdout)
    # Pool.terminate() SIGTERMs its forked workers: they end silently, as under python.
    assert "Terminated" not in result.stderr and "Traceback" not in result.stderr, \
        result.stderr
    with open_session(session) as s:
        assert s.status == "finished"
        assert s.count("op_events") == main_works * OPS_PER_WORK
        if mode == "threads":  # three workers, each its own number and track
            assert sorted({op.thread for op in s.ops()} - {None}) == [1, 2, 3]


@pytest.mark.parametrize("command", ["profile", "run"])
@pytest.mark.parametrize("mode, code, kind, words", [
    ("os_exit", 7, "vanished", "os._exit(7)"),
    ("segfault", 128 + 11, "crashed", "crashed with SIGSEGV"),
])
def test_a_script_that_dies_without_closing_its_session(command, mode, code, kind, words,
                                                        tmp_path):
    result, session = _under(command, mode, tmp_path)
    assert result.returncode == code, result.stderr
    with open_session(session) as s:
        assert s.status == "interrupted"  # its writer died: rows up to the last flush
        assert s.count("op_events") == OPS_PER_WORK  # flushed before the end (a 0.3 s sleep)
        assert s.meta["exit"]["kind"] == kind and s.meta["exit"]["code"] == code
    summary = run_execmode("report", session, "--summary")
    assert summary.returncode == 0, summary.stderr
    assert words in summary.stdout and "rows up to the last flush" in summary.stdout
    if mode == "segfault":
        assert "Fatal Python error" in result.stderr  # faulthandler's stack of the crash
