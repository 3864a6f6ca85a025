"""How a script ended, as every session says it (profilers/session_end.py): real child
processes under `execmode profile` and `execmode run`, real signals, real session files,
read back by `execmode sessions`, `report` and the exporters; and a closed pipe ends every
verb quietly with status 0 (execmode/cli.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from execmode.profilers.exporters import export
from execmode.profilers.session import open_session

# Slow tier: CLI verbs run as subprocesses (how scripts end: finished, raised, breakpoint, signals).
pytestmark = pytest.mark.slow

ENDS = """\
import os
import sys
import time

import execmode as em

how = sys.argv[1]
x = em.ones(4)
y = em.sum(x * 2.0)
if how == "raise":
    raise ValueError(f"bad value {float(y)}")  # RAISE_LINE
if how == "wait":
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
    while True:
        time.sleep(0.05)  # WAIT_LINE
print("done", float(y))
"""

NAN_STEP = """\
import execmode as em


@em.jit
def step(x):
    y = em.log(x - 1.0)  # LOG_LINE: log of a negative number is NaN
    return (y * 2.0).sum()


x = em.tensor([0.5, 2.0, 3.0])
print(float(step(x)))
"""


def line_of(source: str, marker: str) -> int:
    return next(i for i, text in enumerate(source.splitlines(), 1) if marker in text)


def execmode(*args, cwd, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "execmode", *map(str, args)], cwd=cwd,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=120, **kwargs)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    path = tmp_path / "S"
    monkeypatch.setenv("EXECMODE_SESSION_DIR", str(path))
    return path


@pytest.fixture
def ends(tmp_path):
    path = tmp_path / "ends.py"
    path.write_text(ENDS)
    return path


@pytest.fixture
def nan_step(tmp_path):
    path = tmp_path / "nan_step.py"
    path.write_text(NAN_STEP)
    return path


def only_session(folder):
    (path,) = folder.glob("*.emsession")
    return path


def end_of(path):
    with open_session(path) as s:
        return s.end, s.status


# --- the five ends, each from a real run -----------------------------------------------------
@pytest.mark.parametrize("command", ["profile", "run"])
def test_a_script_that_finishes(command, folder, ends, tmp_path):
    done = execmode(command, ends, "ok", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    end, status = end_of(only_session(folder))
    assert (end.kind, end.text(), end.code, status) == ("finished", "finished", 0, "finished")


@pytest.mark.parametrize("command", ["profile", "run"])
def test_a_script_that_raises_stores_the_type_and_line(command, folder, ends, tmp_path):
    done = execmode(command, ends, "raise", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    end, _ = end_of(only_session(folder))
    line = line_of(ENDS, "RAISE_LINE")
    assert (end.kind, end.error, end.file, end.line) == ("raised", "ValueError", str(ends), line)
    assert end.message == "ValueError: bad value 8.0"
    assert end.text() == f"raised ValueError at ends.py:{line}"


def test_a_script_quit_at_a_nan_breakpoint_stores_the_stop_and_its_origin(folder, nan_step,
                                                                          tmp_path):
    done = execmode("run", "--break", "nan", nan_step, cwd=tmp_path)
    assert done.returncode == 4, done.stderr  # stopped at the breakpoint
    end, status = end_of(only_session(folder))
    log_line = line_of(NAN_STEP, "LOG_LINE")
    assert status == "finished"  # the agent closed its session itself
    assert end.kind == "breakpoint" and end.breakpoint == {"id": 1, "spec": "nan"}
    assert end.file == str(nan_step) and end.line == line_of(NAN_STEP, "print(float")
    assert end.evidence["op"] == "log" and end.evidence["line"] == log_line
    assert re.fullmatch(rf"stopped at breakpoint 1 \(nan\) after kernel \w+ at "
                        rf"nan_step\.py:\d+; origin: log at nan_step\.py:{log_line}",
                        end.text()), end.text()


def _start_waiting(command, ends, tmp_path):
    """A script that records two ops, writes its pid and waits: the test ends it."""
    pid_file = tmp_path / "pid"
    proc = subprocess.Popen([sys.executable, "-m", "execmode", command, str(ends), "wait",
                             str(pid_file)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the script never started"
        time.sleep(0.05)
    return proc, int(pid_file.read_text())


@pytest.mark.parametrize("command", ["profile", "run"])
def test_a_script_killed_with_sigkill(command, folder, ends, tmp_path):
    proc, pid = _start_waiting(command, ends, tmp_path)
    os.kill(pid, signal.SIGKILL)  # the script's own process: it cannot close its session
    assert proc.wait(timeout=60) == 128 + signal.SIGKILL, proc.stderr.read()
    end, status = end_of(only_session(folder))
    assert (end.kind, end.signal, end.code) == ("killed", "SIGKILL", 137)
    assert end.closed_by == "the process that started the script"  # who saw the signal
    assert status == "interrupted"
    assert end.text().startswith("killed by SIGKILL")


@pytest.mark.parametrize("command", ["profile", "run"])
def test_a_script_terminated_with_sigterm_closes_its_session(command, folder, ends, tmp_path):
    proc, pid = _start_waiting(command, ends, tmp_path)
    os.kill(pid, signal.SIGTERM)  # lifeline.py: Terminated in the script, a clean end
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM, proc.stderr.read()
    end, status = end_of(only_session(folder))
    assert (end.kind, end.signal, end.closed_by, status) == \
        ("killed", "SIGTERM", "script", "finished")
    assert end.text() == f"killed by SIGTERM at ends.py:{line_of(ENDS, 'WAIT_LINE')}"


def test_sessions_lists_how_each_script_ended(folder, ends, nan_step, tmp_path):
    for args in (["profile", ends, "ok"], ["profile", ends, "raise"],
                 ["run", "--break", "nan", nan_step]):
        execmode(*args, cwd=tmp_path)
        time.sleep(1.1)  # one second apart: the newest-first order is by date
    proc, pid = _start_waiting("profile", ends, tmp_path)
    os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=60)
    listing = execmode("sessions", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    statuses = [line.split(".emsession", 1)[1].strip()
                for line in listing.stdout.splitlines()[2:]]
    assert statuses[0].startswith("killed by SIGKILL")
    assert statuses[1].startswith("stopped at breakpoint 1 (nan) after kernel")
    assert "origin: log at nan_step.py" in statuses[1]
    assert statuses[2] == f"raised ValueError at ends.py:{line_of(ENDS, 'RAISE_LINE')}"
    assert statuses[3] == "finished"


# --- every report and export says it --------------------------------------------------------
def test_report_and_every_export_show_the_stop(folder, nan_step, tmp_path):
    execmode("run", "--break", "nan", nan_step, cwd=tmp_path)
    session = only_session(folder)
    with open_session(session) as s:
        words = s.end.text()
    assert words.startswith("stopped at breakpoint 1 (nan)")
    summary = execmode("report", session, "--summary", "-o", tmp_path / "r.html",
                       cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    assert words in summary.stdout and "What the stop found: %" in summary.stdout
    assert words in (tmp_path / "r.html").read_text()
    md = export(session, tmp_path / "r.md")
    assert f"- **status**: {words}" in md.read_text()
    trace = json.loads(export(session, tmp_path / "r.trace.json").read_text())
    assert trace["otherData"]["status"] == words
    assert [e["name"] for e in trace["traceEvents"] if e.get("cat") == "end"] == \
        [f"end: {words}"]
    speedscope = json.loads(export(session, tmp_path / "r.speedscope.json").read_text())
    assert speedscope["name"].endswith(f"({words})")
    doc = json.loads(export(session, tmp_path / "r.json").read_text())
    assert doc["summary"]["end_text"] == words and doc["meta"]["end"]["kind"] == "breakpoint"
    rows = export(session, tmp_path / "r.csv", table="session").read_text().splitlines()
    assert f"status,{words}" in rows and "end.evidence.op,log" in rows


# --- a closed pipe ---------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["sessions"], ["sessions", "-n", "0"], ["--help"],
                                  ["sessions", "--help"], ["report", "--summary"]])
def test_a_closed_pipe_ends_quietly_with_status_0(args, folder, ends, tmp_path):
    execmode("profile", ends, "ok", cwd=tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the first write: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "execmode", *args], cwd=tmp_path,
                              stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 0
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_sessions_into_head_ends_with_status_0(folder, tmp_path):
    from execmode.profilers import store

    first = store.create(folder / "s000.emsession", {"script": "/x/s.py"})
    for i in range(1, 600):  # a listing longer than the pipe's 64 KiB buffer
        shutil.copyfile(first, folder / f"s{i:03d}.emsession")
    done = subprocess.run(["bash", "-c", "set -o pipefail; python -m execmode sessions -n 0 "
                           "| head -1"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PATH": os.path.dirname(
                              sys.executable) + os.pathsep + os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sessions in ") and done.stderr == ""
