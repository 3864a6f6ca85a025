"""The controller's own promises, against real child processes: its state agrees with the
events it has published, one run never leaks into the next, a gone agent is a prompt
ControllerError, and a script in plain Python still stops when told to."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import sys
import threading

import pytest

from execmode.debug.controller import Controller, ControllerError

# Slow tier: the debug agent in a child process under a Controller (its restart loop starts 20
# agents).
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
LOOP = os.path.join(SCRIPTS, "loop.py")       # 1 + 400 ops, paused at the first
SPIN = os.path.join(SCRIPTS, "spin.py")       # one op, then plain Python for argv[1] s


@contextlib.contextmanager
def _busy_thread():
    """A thread that keeps the GIL busy: the thread waiting for a reply wakes late, as on a
    loaded machine. Races between the controller's threads then show in most rounds."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: [None for _ in iter(done.is_set, True)],
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def test_a_paused_event_always_comes_with_the_paused_state():
    # The state used to be set by the commanding thread after the agent's reply, so it
    # could overwrite the next pause (published meanwhile by the reader) with "running".
    with _busy_thread(), Controller(LOOP) as c:
        last = c.wait_for("paused")["op_index"]
        assert c.state == "paused"
        for _ in range(40):
            c.step()
            # Once step() returned, the pause it left is over.
            assert c.state == "running" or c.paused["op_index"] > last
            ev = c.wait_for("paused", timeout=30)
            assert c.state == "paused" and c.paused is ev.data
            assert ev["op_index"] == last + 1
            last = ev["op_index"]


def test_each_restart_is_a_new_run_and_the_old_one_never_reaches_it():
    # start() used to set "running" after the hello, over a first pause already published;
    # and the old run's reader could still report its exit as the new run's.
    seen: list[str] = []
    c = Controller(LOOP)
    c.listeners.append(lambda ev: seen.append(ev.type))
    with _busy_thread(), contextlib.closing(c.start()):
        c.wait_until_stopped()
        # Both kinds of restart, four times each: each is a fresh agent process (~1 s).
        for i in range(8):
            if i % 2:
                c.restart()
            else:  # the TUI's way
                c.stop()
                assert c.state == "finished" and seen[-1] == "exited"
                c.start()
            mark = len(seen)
            ev = c.wait_until_stopped(timeout=30)
            assert ev.type == "paused" and ev["op_index"] == 1
            assert c.state == "paused" and c.exit is None
            c.step()
            assert c.wait_until_stopped(timeout=30)["op_index"] == 2
            assert "exited" not in seen[mark:] and c.exit is None
        c.cont()
        assert c.wait_for("exited", timeout=30)["status"] == "ok"
        assert list(c.output) == [("stdout", "done 4.163")]


def test_send_on_a_broken_connection_is_a_controller_error():
    with Controller(LOOP) as c:
        c.wait_until_stopped()
        c.channel.sock.shutdown(socket.SHUT_WR)   # our end: sending now fails (EPIPE)
        with pytest.raises(ControllerError, match="the agent is gone"):
            c.send({"type": "stack"})
        assert c._run.pending == {}              # no reply is waited for


def _fake_agent(tmp_path) -> str:
    """A "python" that runs scripts/fake_agent.py in place of the agent."""
    exe = tmp_path / "python"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" '
                   f'"{os.path.join(SCRIPTS, "fake_agent.py")}" "$@"\n')
    exe.chmod(0o755)
    return str(exe)


def test_a_request_fails_as_soon_as_the_agent_dies_without_answering(tmp_path):
    with Controller(LOOP, python=_fake_agent(tmp_path)) as c:
        c.wait_for("paused")
        # Had it waited for the request's timeout, the error would say "no reply to stack
        # within 60 s": the message tells a prompt failure from a timeout, with no clock.
        with pytest.raises(ControllerError, match="the agent is gone"):
            c.request({"type": "stack"}, timeout=60)
        assert c.wait_for("exited")["code"] == 5
        assert list(c.output) == [("stdout", "got stack")]
        with pytest.raises(ControllerError, match="the agent is gone"):
            c.stack()


def _session_exit(path) -> dict:
    import json

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        [(value,)] = con.execute("select value from meta where key = 'exit'")
        ops = [row[0] for row in con.execute("select op from op_events order by seq")]
    finally:
        con.close()
    return dict(json.loads(value), ops=ops)


def _wait_for_line(c: Controller, line: str) -> None:
    while c.wait_for("output", timeout=30)["line"] != line:
        pass


def test_quit_stops_a_script_that_runs_plain_python(tmp_path):
    session = tmp_path / "quit.emsession"
    with Controller(SPIN, ["60"], session=str(session), start_paused=False) as c:
        _wait_for_line(c, "spinning")
        # The quit message must stop the spin: had it not, stop() would SIGTERM the script
        # after 20 s and its exit would not be a quit (checked below, with no clock).
        c.stop(timeout=20)
        # Stopped by the debugger (not killed): the session was closed properly.
        assert (c.exit.status, c.exit.code) == ("quit", 130)
    exit_info = _session_exit(session)
    assert exit_info["kind"] == "quit" and "multiply" in exit_info["ops"]


def test_the_agent_stops_the_script_when_the_controller_goes_away(tmp_path):
    session = tmp_path / "gone.emsession"
    with Controller(SPIN, ["60"], session=str(session), start_paused=False) as c:
        _wait_for_line(c, "spinning")
        c.channel.shutdown()                     # as if the controller had died
        ev = c.wait_for("exited", timeout=20)    # not after the script's 60 s
        assert ev["code"] == 130
        assert ("stdout", "ran to the end") not in c.output
    assert _session_exit(session)["kind"] == "quit"


def test_a_short_script_in_plain_python_still_ends_normally():
    # Quit is only raised when asked for: a script that never hears it ends as it would.
    with Controller(SPIN, ["0.05"], start_paused=False) as c:
        assert c.wait_for("exited", timeout=30)["status"] == "ok"
    assert [line for s, line in c.output if s == "stdout"] == ["spinning", "ran to the end"]


def test_a_spawned_agent_runs_before_start_and_start_loses_nothing(tmp_path):
    # The TUI spawns the agent before importing Textual, so the two imports overlap. The
    # agent connects to the listening socket and runs meanwhile; here it even ends before
    # start(), and start() still gets its hello, every output line and its exit.
    session = tmp_path / "early.emsession"
    c = Controller(SPIN, ["0.05"], session=str(session), start_paused=False)
    c.spawn()
    assert c.spawned and c.state == "starting"
    assert c.proc.wait(timeout=60) == 0                  # it ran to the end on its own
    with contextlib.closing(c.start()):
        assert c.wait_for("exited", timeout=30)["status"] == "ok"
        assert not c.spawned
    assert [line for s, line in c.output if s == "stdout"] == ["spinning", "ran to the end"]
    assert _session_exit(session)["kind"] == "normal"


def test_a_spawned_agent_that_nobody_connects_to_is_ended_by_stop(tmp_path):
    c = Controller(SPIN, ["60"], start_paused=False)
    seen: list[str] = []
    c.listeners.append(lambda ev: seen.append(ev.type))
    c.spawn()
    socket_dir = os.path.dirname(c._spawned.server.getsockname())
    c.stop()                                  # no quit can be sent: SIGTERM, then reaped
    assert c.proc.poll() is not None and not c.spawned
    assert not os.path.exists(socket_dir)     # the private socket folder went with it
    assert seen == ["exited"] and c.state == "finished"
