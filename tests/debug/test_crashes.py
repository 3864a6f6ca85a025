"""Every way a script can end is reported, and the controller survives all of them."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile

import pytest

from execmode.debug.controller import Controller, ControllerError
from execmode.debug.protocol import Channel

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
CRASH = os.path.join(SCRIPTS, "crash.py")


@pytest.mark.parametrize("mode,status,code,text", [
    ("exception", "exception", 1, "raised an exception"),
    ("exit", "exit", 3, "sys.exit(3)"),
    ("os_exit", "vanished", 7, "without reporting"),
    ("sigkill", "killed", -9, "SIGKILL"),
    ("segfault", "crashed", -11, "SIGSEGV"),
    ("none", "ok", 0, "finished normally"),
])
def test_crash_matrix(mode, status, code, text):
    with Controller(CRASH, [mode], start_paused=False) as c:
        ev = c.wait_for("exited")
    assert (ev["status"], ev["code"]) == (status, code)
    assert text in ev["description"]
    assert ("stdout", f"before {mode}") in c.output
    stderr = "\n".join(line for s, line in c.output if s == "stderr")
    if mode == "exception":
        assert "matmul(f32[2]@cpu, f32[3]@cpu)" in ev["traceback"]
        assert "crash.py:14" in ev["traceback"]
    if mode == "segfault":
        assert "Fatal Python error" in stderr or "Segmentation fault" in stderr


def test_exception_breakpoint_keeps_the_failing_op_inspectable():
    with Controller(CRASH, ["exception"], breakpoints=["exception"], start_paused=False) as c:
        ev = c.wait_until_stopped()
        assert ev["when"] == "exception" and "ShapeError" in ev["reason"]
        assert ev["location"]["lineno"] == 14
        assert [s["type"] for s in ev["inputs"]] == ["f32[2]", "f32[3]"]
        assert c.inspect("var:x")["max"] == 3.0
        c.cont()
        assert c.wait_for("exited")["status"] == "exception"


def test_restart_runs_the_script_again():
    c = Controller(CRASH, ["none"], start_paused=False).start()
    try:
        assert c.wait_for("exited")["status"] == "ok"
        c.restart()
        assert c.wait_for("exited")["status"] == "ok"
        assert [line for s, line in c.output if s == "stdout"] == ["before none", "after"]
    finally:
        c.close()


def test_a_script_that_cannot_start_is_a_clear_error(tmp_path):
    with pytest.raises(ControllerError, match="no such file"):
        Controller(str(tmp_path / "missing.py")).start()
    bad = tmp_path / "syntax.py"
    bad.write_text("def broken(:\n")
    with Controller(str(bad), start_paused=False) as c:
        ev = c.wait_for("exited")
    assert ev["status"] == "exception" and "SyntaxError" in ev["traceback"]


def test_malformed_and_unknown_messages_get_error_replies():
    with Controller(os.path.join(SCRIPTS, "steps.py")) as c:
        c.wait_until_stopped()
        c.channel.sock.sendall(b"this is not json\n")
        ev = c.wait_for("error")
        assert "malformed JSON" in ev["message"]
        c.channel.sock.sendall(b"[1, 2]\n")
        assert "JSON object" in c.wait_for("error")["message"]
        with pytest.raises(ControllerError, match="unknown command 'explode'"):
            c.request({"type": "explode"})
        with pytest.raises(ControllerError, match="missing field 'spec'"):
            c.request({"type": "set_breakpoint"})
        with pytest.raises(ControllerError, match="must be int"):
            c.request({"type": "clear_breakpoint", "bp": "one"})
        # Still alive and controllable after all that.
        c.step()
        assert c.wait_until_stopped()["op"] == "multiply"


def test_malformed_breakpoint_expressions_get_clear_errors():
    with Controller(os.path.join(SCRIPTS, "steps.py")) as c:
        c.wait_until_stopped()
        with pytest.raises(ControllerError, match="at column 6"):
            c.set_breakpoint("max >")
        # A name outside the language is a Python value of the script; a near miss of a
        # statistic is accepted with a note, a bare one is refused.
        assert "did you mean max?" in c.set_breakpoint("maxx > 3")["notes"][0]
        with pytest.raises(ControllerError, match="did you mean max"):
            c.set_breakpoint("maxx")
        with pytest.raises(ControllerError, match="Call is not allowed"):
            c.set_breakpoint("__import__('os').system('true')")
        with pytest.raises(ControllerError, match="unknown op 'matmull'"):
            c.set_breakpoint("op:matmull")


def test_results_are_identical_with_and_without_the_agent():
    script = os.path.join(SCRIPTS, "main_guard.py")
    plain = subprocess.run([sys.executable, script, "a", "b"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    with Controller(script, ["a", "b"], start_paused=False) as c:
        assert c.wait_for("exited")["status"] == "ok"
    debugged = [line for s, line in c.output if s == "stdout"]
    assert debugged == plain
    assert plain == ["argv ['a', 'b'] name __main__ sum 12.0"]


def test_agent_socket_lives_in_a_private_directory_that_goes_once_connected(
        monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real_popen = subprocess.Popen
    seen = []

    def popen(cmd, **kwargs):  # the socket as the agent finds it when it starts
        path = cmd[cmd.index("--socket") + 1]
        seen.append((os.path.dirname(path), os.stat(os.path.dirname(path)).st_mode & 0o777,
                     stat.S_ISSOCK(os.stat(path).st_mode)))
        return real_popen(cmd, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    with Controller(os.path.join(SCRIPTS, "steps.py")) as c:
        c.wait_until_stopped()
        [(directory, mode, is_socket)] = seen
        assert os.path.dirname(directory) == str(tmp_path)
        assert mode == 0o700 and is_socket
        assert isinstance(c.channel, Channel) and c.channel.sock.family == socket.AF_UNIX
        assert not os.path.exists(directory)   # connected: nothing left to find or leak
        c.restart()
        c.wait_until_stopped()
    assert len(seen) == 2 and os.listdir(tmp_path) == []
    with pytest.raises(ControllerError, match="could not start"):
        Controller(os.path.join(SCRIPTS, "steps.py"), python="/bin/false").start()
    assert os.listdir(tmp_path) == []      # nor when the agent never connects


@pytest.mark.parametrize("mode", ["sigkill", "segfault", "exception"])
def test_session_stays_readable_after_a_crash(mode, tmp_path):
    import sqlite3

    path = tmp_path / f"{mode}.emsession"
    with Controller(CRASH, [mode], session=str(path), start_paused=False) as c:
        c.wait_for("exited")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    ops = [row[0] for row in con.execute("select op from op_events order by seq")]
    assert "multiply" in ops   # x = em.ones(2) * 3.0 ran before the crash
