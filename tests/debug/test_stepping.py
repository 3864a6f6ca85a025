"""Stepping and breakpoints against real child processes."""

from __future__ import annotations

import os

import pytest

from execmode.debug.controller import Controller, ControllerError

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def _path(name):
    return os.path.join(SCRIPTS, name)


def _where(event):
    return event["op"], event["location"]["lineno"]


def test_step_lands_on_each_op_and_line():
    with Controller(_path("steps.py")) as c:
        seen = [_where(c.wait_until_stopped())]
        for _ in range(3):
            c.step()
            seen.append(_where(c.wait_until_stopped()))
        assert seen == [("constant", 3), ("multiply", 4), ("exp", 5), ("sum", 6)]
        c.cont()
        assert c.wait_for("exited").data["status"] == "ok"
    assert ("stdout", "result 465.416") in c.output


def test_next_stays_in_the_frame_and_step_goes_into_calls():
    with Controller(_path("functions.py"), breakpoints=["functions.py:16"],
                    start_paused=False) as c:
        ev = c.wait_until_stopped()
        assert _where(ev)[1] == 16 and ev["location"]["function"] == "<module>"
        c.step()                      # into outer() -> inner(): a + 1.0
        ev = c.wait_until_stopped()
        assert ev["location"]["function"] == "inner" and ev["location"]["lineno"] == 5
        assert [f["function"] for f in ev["stack"]][:3] == ["inner", "outer", "<module>"]
        c.next()                      # next line of inner
        assert c.wait_until_stopped()["location"]["lineno"] == 6
        c.next()                      # inner returns: stop at the next op in outer
        ev = c.wait_until_stopped()
        assert (ev["location"]["function"], ev["location"]["lineno"]) == ("outer", 12)
        c.next()                      # back in the module, after r = outer(x)
        ev = c.wait_until_stopped()
        assert (ev["location"]["function"], ev["location"]["lineno"]) == ("<module>", 18)


def test_each_breakpoint_kind_hits_where_it_must():
    with Controller(_path("functions.py"), start_paused=False,
                    breakpoints=["op:multiply", "scope:nothing_here", "functions.py:12"]) as c:
        ev = c.wait_until_stopped()
        assert _where(ev) == ("multiply", 6) and ev["reason"].startswith("breakpoint 1")
        c.cont()
        ev = c.wait_until_stopped()
        assert _where(ev) == ("subtract", 12) and ev["reason"].startswith("breakpoint 3")
        c.cont()
        assert c.wait_until_stopped().type == "exited"


def test_tensor_condition_and_ignore_count():
    with Controller(_path("steps.py"), start_paused=False) as c:
        ev = c.wait_until_stopped()
        assert ev.type == "exited"
    with Controller(_path("steps.py")) as c:
        c.wait_until_stopped()
        bp = c.set_breakpoint("max > 5", ignore=1)
        assert bp["kind"] == "tensor" and bp["ignore"] == 1
        c.cont()
        ev = c.wait_until_stopped()
        # multiply (max 6) is ignored once; exp (max 403) stops, after it ran.
        assert ev["op"] == "exp" and ev["when"] == "after"
        assert ev["output"]["max"] > 400
        assert c.breakpoints()[0]["hits"] == 2


def test_inspect_locals_and_slices_while_paused():
    with Controller(_path("steps.py"), breakpoints=["op:exp"], start_paused=False) as c:
        c.wait_until_stopped()
        assert {t["name"] for t in c.locals()} >= {"x", "y"}
        y = c.inspect("var:y")
        assert y["type"] == "f32[3]" and y["max"] == 6.0 and "histogram" in y
        assert c.inspect("input:0")["min"] == 2.0
        assert c.slice("var:y", "[1:]")["values"] == [4.0, 6.0]
        # One element of a NumPy array is a NumPy scalar: it killed the script once.
        assert c.slice("var:y", "[2]") == {"shape": [], "values": [6.0], "truncated": False,
                                           "text": "6."}
        assert c.slice("var:y", "0")["values"] == [2.0]
        with pytest.raises(ControllerError, match="no tensor variable"):
            c.inspect("var:nope")
        with pytest.raises(ControllerError, match="bad index"):
            c.slice("var:y", "[__import__('os')]")


def test_em_breakpoint_pauses_under_the_debugger(tmp_path):
    script = tmp_path / "bp.py"
    script.write_text("import execmode as em\nx = em.ones(2)\nem.breakpoint()\ny = x + 1\n")
    with Controller(str(script), start_paused=False) as c:
        ev = c.wait_until_stopped()
        assert ev["reason"] == "em.breakpoint()" and ev["location"]["lineno"] == 3


def test_graph_break_breakpoint(tmp_path):
    script = tmp_path / "brk.py"
    script.write_text(
        "import execmode as em\n"
        "@em.jit\n"
        "def f(x):\n"
        "    if x.sum() > 0:\n"
        "        return x * 2\n"
        "    return x\n"
        "f(em.ones(3))\n")
    with Controller(str(script), breakpoints=["graph_break"], start_paused=False) as c:
        ev = c.wait_for("graph_break")
        assert ev["location"]["lineno"] == 4 and "bool()" in ev["reason"]
        assert c.wait_until_stopped()["reason"].startswith("graph break")


def _fn_line(event):
    return event["location"]["function"], event["location"]["lineno"]


def test_next_out_of_a_returning_frame_stops_in_its_caller_not_in_its_next_call():
    with Controller(_path("next_calls.py"), breakpoints=["next_calls.py:9"],
                    start_paused=False) as c:
        ev = c.wait_until_stopped()
        assert _fn_line(ev) == ("inner", 9)
        c.next()      # inner returns; outer calls helper (skipped), then z - 1.0
        ev = c.wait_until_stopped()
        assert (*_fn_line(ev), ev["op"]) == ("outer", 16, "subtract")
        c.next()      # outer returns: the module's next line
        ev = c.wait_until_stopped()
        assert (*_fn_line(ev), ev["op"]) == ("<module>", 22, "add")
        c.next()      # sum() adds twice on one line: one line, one stop
        ev = c.wait_until_stopped()
        assert (*_fn_line(ev), ev["op"]) == ("<module>", 23, "exp")


def test_next_stops_again_on_the_next_pass_of_a_loop():
    with Controller(_path("next_loop.py")) as c:
        ev = c.wait_until_stopped()
        assert (ev["location"]["lineno"], ev["op_index"]) == (3, 1)
        seen = []
        for _ in range(6):
            c.next()
            ev = c.wait_until_stopped()
            seen.append((ev["location"]["lineno"], ev["op"], ev["op_index"]))
        assert seen == [(5, "multiply", i) for i in range(2, 7)] + [(6, "add", 7)]
