"""Stopping or killing `execmode profile` / `execmode run` never leaves the script running,
and the session it was recording is closed and readable.

Real processes throughout: the CLI in a child process, the script in its child; the test
signals the CLI and then waits (a pidfd, where Linux has one) for the script's pid to end.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest
from execmode.profilers.session import open_session
from fault_helpers import ROOT, SCRIPTS, start_cli, wait_gone

from execmode.debug.controller import Controller
from execmode.lifeline import GRACE_S

# Slow tier: faults injected into real processes.
pytestmark = pytest.mark.slow

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the parent-death signal (prctl) is Linux only")
# Measured 36-124 ms here; the bound is the guarantee itself: a script that does not end
# cleanly is ended by lifeline's watchdog after GRACE_S (a loaded disk can stall the clean
# close of the session past that), plus room for a loaded CI machine.
GONE_WITHIN_S = GRACE_S + 5.0


@pytest.fixture
def reap():
    """Kill any script a failing test leaves behind (never leave orphans in CI)."""
    pids = []
    yield pids.append
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _stderr(tmp_path) -> str:
    return (tmp_path / "stderr.txt").read_text()


def assert_session_closed(session, kinds=("terminated",)):
    with open_session(session) as s:
        assert s.count("op_events") >= 20
        assert s.status == "finished"
        assert s.meta["exit"]["kind"] in kinds, s.meta["exit"]


@pytest.mark.parametrize("mode", ["ops", "sleep"])
@pytest.mark.parametrize("command", ["profile", "run"])
def test_sigterm_is_passed_on_and_the_session_closed(tmp_path, reap, command, mode):
    proc, pid, session = start_cli(tmp_path, command, mode)
    reap(pid)
    proc.send_signal(signal.SIGTERM)
    assert wait_gone(pid, GONE_WITHIN_S), ("the script outlived its SIGTERM'd controller",
                                           proc.poll(), _stderr(tmp_path))
    assert proc.wait(GONE_WITHIN_S) == 128 + signal.SIGTERM
    assert_session_closed(session)
    assert "stopped by SIGTERM" in _stderr(tmp_path)


def test_sighup_is_passed_on(tmp_path, reap):
    proc, pid, session = start_cli(tmp_path, "profile")
    reap(pid)
    proc.send_signal(signal.SIGHUP)
    assert wait_gone(pid, GONE_WITHIN_S)
    assert proc.wait(GONE_WITHIN_S) == 128 + signal.SIGHUP
    assert_session_closed(session)


@linux_only
@pytest.mark.parametrize("mode", ["ops", "sleep"])
@pytest.mark.parametrize("command", ["profile", "run"])
def test_sigkill_of_the_controller_takes_the_script_along(tmp_path, reap, command, mode):
    """Before: the script ran on as an orphan (both commands; `run` only noticed the closed
    socket while the script ran Python, not in a sleep)."""
    proc, pid, session = start_cli(tmp_path, command, mode)
    reap(pid)
    proc.kill()
    proc.wait()
    assert wait_gone(pid, GONE_WITHIN_S), ("the script outlived its SIGKILL'd controller",
                                           _stderr(tmp_path))
    # The agent may see its socket close before the death signal: "quit" then.
    assert_session_closed(session, kinds=("terminated", "quit"))


def test_an_interrupt_not_from_a_terminal_is_passed_on(tmp_path, reap):
    """`kill -INT` of `execmode profile` (no terminal: the script did not get it too) ends
    the script as Ctrl-C would, and the report is still written."""
    proc, pid, session = start_cli(tmp_path, "profile")
    reap(pid)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(GONE_WITHIN_S) == 130
    assert wait_gone(pid, GONE_WITHIN_S)
    assert_session_closed(session, kinds=("interrupted",))
    assert (tmp_path / "run.html").exists()


def test_a_script_that_swallows_the_request_is_ended_after_the_grace_period(tmp_path, reap):
    proc, pid, session = start_cli(tmp_path, "profile", "stubborn")
    reap(pid)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert wait_gone(pid, GRACE_S + GONE_WITHIN_S)
    assert GRACE_S - 0.5 < time.monotonic() - started < GRACE_S + GONE_WITHIN_S
    assert proc.wait(GONE_WITHIN_S) == 128 + signal.SIGTERM
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "Timeout" in stderr and "ops_forever.py" in stderr  # faulthandler's stacks
    with open_session(session) as s:  # cut short, but what was committed is there
        assert s.count("op_events") >= 20


@linux_only
def test_the_script_outlives_the_thread_that_started_it(tmp_path):
    """Linux sends the parent-death signal when the *thread* that forked the child exits;
    the TUI starts scripts from worker threads. The script must run on until the process
    that started it is gone."""
    script = os.path.join(SCRIPTS, "waits_for_continue.py")
    ctl = Controller(script, start_paused=True, cwd=ROOT)
    starter = threading.Thread(target=ctl.start)
    starter.start()
    starter.join()
    try:
        ctl.wait_for("paused", timeout=30)
        time.sleep(0.2)  # the signal from the thread's exit has been handled by now
        ctl.cont()
        exited = ctl.wait_for("exited", timeout=30)
        assert exited["status"] == "ok", exited.data
        assert ("stdout", "done 6.0") in ctl.output
    finally:
        ctl.close()


def test_a_forked_child_signalled_before_its_fork_hook_ends_as_plain_python():
    # Pool.terminate() may SIGTERM a worker so young that threading's own fork hook still
    # runs and lifeline's (which restores SIG_DFL) has not: the inherited handler must end
    # it as plain python would, not with a Terminated traceback (test_script_processes.py hit it once under load).
    import subprocess

    code = ("import signal\nfrom execmode import lifeline\nlifeline.install()\n"
            "lifeline._State.pid = -1  # as in a child whose fork hook has not run yet\n"
            "lifeline._on_terminate(signal.SIGTERM, None)\nprint('not reached')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (-signal.SIGTERM, "", "")
