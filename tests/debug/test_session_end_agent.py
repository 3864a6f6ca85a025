"""The debugger's agent stores how the script ended in its session (profilers/session_end.py):
quit where a breakpoint held it (the TUI's q, a restart, `execmode run`), quit while paused
elsewhere, an exception breakpoint, a graph-break breakpoint. Real agents under a
Controller, as the TUI drives them."""

from __future__ import annotations

import os

import pytest
from execmode.profilers.session import open_session

from execmode.debug.controller import Controller

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
STEPS = os.path.join(SCRIPTS, "steps.py")
CRASH = os.path.join(SCRIPTS, "crash.py")

GRAPH_BREAK = """\
import execmode as em


@em.jit
def f(x):
    y = x * 2.0
    if float(y.sum()) > 0:  # BREAK_LINE: Python needs a value: a graph break
        return y + 1.0
    return y


print(float(f(em.ones(3)).sum()))
"""


def end_after(controller_args: dict, act) -> tuple:
    """Run a script under a Controller with a session, let ``act(controller)`` end it, and
    return (its session's end, the exit the controller saw)."""
    session = controller_args.pop("session")
    c = Controller(session=str(session), **controller_args).start()
    try:
        act(c)
    finally:
        c.close()
    with open_session(session) as s:
        return s.end, c.exit


def quit_at_first_stop(c) -> None:
    c.wait_until_stopped()
    c.stop()


def test_quit_at_a_place_breakpoint(tmp_path):
    end, exit_ = end_after({"script": STEPS, "breakpoints": ["op:exp"], "start_paused": False,
                            "session": tmp_path / "s.emsession"}, quit_at_first_stop)
    assert exit_.status == "quit"
    assert end.kind == "breakpoint" and end.breakpoint == {"id": 1, "spec": "op:exp"}
    assert end.text() == "stopped at breakpoint 1 (op:exp) before op exp at steps.py:5"


def test_quit_while_paused_at_the_start_is_not_a_breakpoint(tmp_path):
    end, _ = end_after({"script": STEPS, "start_paused": True,
                        "session": tmp_path / "s.emsession"}, quit_at_first_stop)
    assert end.kind == "stopped"
    assert end.text() == "stopped in the debugger (paused: start) at steps.py:3"


def test_a_breakpoint_the_script_ran_past_is_not_its_end(tmp_path):
    def go_on(c):
        c.wait_until_stopped()
        c.cont()
        c.wait_for("exited")

    end, _ = end_after({"script": STEPS, "breakpoints": ["op:exp"], "start_paused": False,
                        "session": tmp_path / "s.emsession"}, go_on)
    assert end.kind == "finished"


def test_quit_at_an_exception_breakpoint_is_the_exception(tmp_path):
    end, _ = end_after({"script": CRASH, "args": ["exception"], "breakpoints": ["exception"],
                        "start_paused": False, "session": tmp_path / "s.emsession"},
                       quit_at_first_stop)
    assert (end.kind, end.error, end.line) == ("raised", "ShapeError", 14)
    assert end.file == CRASH  # the user's line, not execmode's frame that raised
    assert end.breakpoint == {"id": 1, "spec": "exception"}


@pytest.mark.parametrize("spec", ["graph_break"])
def test_quit_at_a_graph_break_breakpoint(spec, tmp_path):
    script = tmp_path / "breaks.py"
    script.write_text(GRAPH_BREAK)
    end, _ = end_after({"script": str(script), "breakpoints": [spec], "start_paused": False,
                        "session": tmp_path / "s.emsession"}, quit_at_first_stop)
    assert end.kind == "breakpoint" and end.breakpoint == {"id": 1, "spec": "graph_break"}
    assert end.text().startswith("stopped at breakpoint 1 (graph_break) at breaks.py:")


def test_a_killed_agent_leaves_the_end_to_whoever_saw_it(tmp_path):
    # The Controller alone writes nothing: `execmode run` and the TUI write the signal they
    # saw (tests/cli/test_session_status.py); without them the file says "unknown".
    def kill(c):
        c.wait_until_stopped()
        c.proc.kill()
        c.wait_for("exited")

    end, exit_ = end_after({"script": STEPS, "start_paused": True,
                            "session": tmp_path / "s.emsession"}, kill)
    assert exit_.status == "killed"
    assert end.kind == "unknown" and "without closing" in end.text()
