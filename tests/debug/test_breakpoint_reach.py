"""Breakpoints that have not hit say why: pending while the script runs, the reason when it
ended (the agent, and `execmode run`); ignore counts and conditions are editable; restart
carries every breakpoint's state."""

from __future__ import annotations

import subprocess
import sys

import pytest

from execmode.debug.breakpoints import BreakpointError, BreakpointSet
from execmode.debug.controller import Controller, ControllerError


def by_spec(breakpoints):
    return {bp["spec"]: bp for bp in breakpoints}


# Slow tier: the debug agent in a child process under a Controller.
@pytest.mark.slow
def test_breakpoints_that_never_hit_come_back_with_their_reason(scripts):
    specs = ["line:train.py:42", "scoped.py:6", "scope:mlp/fc1", "op:matmul",
             "min < -5", "scope:mlp", "op:multiply if max > 1e3"]
    with Controller(scripts("scoped.py"), breakpoints=specs, start_paused=False) as c:
        pause = c.wait_until_stopped()
        assert pause.type == "paused" and pause["reason"].startswith("breakpoint 6: scope:mlp")
        c.cont()
        pause = c.wait_until_stopped()                    # max > 1e3 fires on an Inf
        assert pause["reason"] == "breakpoint 7: op:multiply if max > 1e3"
        assert pause["output"]["max"] == "inf"
        c.cont()
        assert c.wait_for("exited")["status"] == "ok"
    notes = {bp["spec"]: bp["note"] for bp in c.exit.breakpoints}
    assert notes["line:train.py:42"] == \
        "train.py never ran (not the script, nor a module it imported)"
    assert notes["scoped.py:6"] == "line 6 of scoped.py ran no op"
    assert notes["scope:mlp/fc1"].startswith("scope mlp/fc1 never occurred (scopes that "
                                             "did: mlp/fc0)")
    assert notes["op:matmul"] == "no matmul op ran"
    assert notes["min < -5"].startswith("condition never true (min < -5; checked 4 times")
    assert notes["scope:mlp"] is None and notes["op:multiply if max > 1e3"] is None


# Slow tier: the debug agent in a child process under a Controller.
@pytest.mark.slow
def test_a_breakpoint_on_a_line_that_ran_no_op_yet_is_pending(scripts):
    with Controller(scripts("scoped.py")) as c:
        c.wait_for("paused")
        bp = c.set_breakpoint("scoped.py:12")
        assert bp["note"] == "pending: no op has run from scoped.py:12 yet"
        scope_bp = c.set_breakpoint("scope:mlp/fc1")
        assert scope_bp["note"] == "pending: no op has run in scope mlp/fc1 yet"
        c.cont()
        pause = c.wait_for("paused")
        assert pause["location"]["lineno"] == 12
        listed = by_spec(c.breakpoints())
        assert listed["scoped.py:12"]["note"] is None and listed["scoped.py:12"]["hits"] == 1
        assert listed["scope:mlp/fc1"]["note"].startswith("pending")


# Slow tier: the debug agent in a child process under a Controller.
@pytest.mark.slow
def test_ignore_counts_and_conditions_are_edited_in_place(scripts):
    with Controller(scripts("scoped.py")) as c:
        c.wait_for("paused")
        bp = c.set_breakpoint("op:exp")
        listed = by_spec(c.update_breakpoint(bp["id"], spec="op:multiply if max > 1e3",
                                             ignore=0))
        edited = listed["op:multiply if max > 1e3"]
        assert edited["id"] == bp["id"] and edited["condition"] == "max > 1e3"
        c.update_breakpoint(bp["id"], ignore=1)          # skip the first multiply's hit
        with pytest.raises(ControllerError, match="ignore count must be a whole number"):
            c.update_breakpoint(bp["id"], ignore=-1)
        with pytest.raises(ControllerError, match="column"):
            c.update_breakpoint(bp["id"], spec="max >")
        c.cont()
        assert c.wait_until_stopped().type == "exited"   # the one Inf multiply: ignored
        end = by_spec(c.exit.breakpoints)["op:multiply if max > 1e3"]
        assert (end["hits"], end["ignore"]) == (1, 1)
        assert end["note"] == "hit 1 of the 1 hits its ignore count skips"


# Slow tier: the debug agent in a child process under a Controller.
@pytest.mark.slow
def test_restart_carries_ids_enabled_state_and_ignore_counts(scripts):
    c = Controller(scripts("scoped.py"), breakpoints=[
        {"id": 4, "spec": "op:exp", "enabled": False, "ignore": 0},
        {"id": 7, "spec": "op:multiply", "enabled": True, "ignore": 1}])
    with c:
        c.wait_for("paused")
        listed = by_spec(c.breakpoints())
        assert (listed["op:exp"]["id"], listed["op:exp"]["enabled"]) == (4, False)
        assert (listed["op:multiply"]["id"], listed["op:multiply"]["ignore"]) == (7, 1)
        c.cont()
        pause = c.wait_for("paused")                      # the second multiply (line 12)
        assert pause["reason"] == "breakpoint 7: op:multiply"
        assert pause["location"]["lineno"] == 12


def test_restart_carries_why_the_agent_disabled_a_breakpoint(scripts):
    """Disabled because its condition failed: the next run's list still says why (an
    enabled breakpoint carries no stale reason)."""
    reason = "disabled: its condition failed on op exp: RuntimeError: boom"
    c = Controller(scripts("scoped.py"), breakpoints=[
        {"id": 3, "spec": "op:exp", "enabled": False, "disabled_reason": reason},
        {"id": 5, "spec": "op:multiply", "enabled": True, "disabled_reason": reason}])
    with c:
        c.wait_for("paused")
        listed = by_spec(c.breakpoints())
        assert (listed["op:exp"]["disabled_reason"], listed["op:exp"]["note"]) == \
            (reason, reason)
        assert listed["op:multiply"]["disabled_reason"] is None
        c.enable_breakpoint(3, True)                      # on again: the reason goes
        assert by_spec(c.breakpoints())["op:exp"]["disabled_reason"] is None


def test_a_carried_breakpoint_with_a_bad_field_is_refused_with_the_reason(scripts):
    c = Controller(scripts("scoped.py"), breakpoints=[{"spec": "op:exp", "ignore": "x"}])
    with c:
        error = c.wait_for("error")
        assert "--break-json" in error["message"]
        assert "ignore count must be a whole number >= 0, not 'x'" in error["message"]
        assert c.wait_for("exited")["code"] == 2


@pytest.mark.parametrize("text, why", [
    ("{not json", "not JSON"),
    ("[1, 2]", "an object with a string 'spec'"),
    ('{"spec": "nan", "id": true}', "'id' must be a positive integer"),
    ('{"spec": "nan", "enabled": "yes"}', "'enabled' must be true or false"),
    ('{"spec": "nan", "enabled": false, "disabled_reason": 3}',
     "'disabled_reason' must be a string"),
])
def test_carried_breakpoint_json_is_parsed_as_data_and_checked(text, why):
    with pytest.raises(BreakpointError, match=why):
        BreakpointSet().restore(text)


# Slow tier: execmode run in a subprocess.
@pytest.mark.slow
def test_execmode_run_lists_the_breakpoints_that_never_hit(scripts, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "execmode", "run", "--no-session", "--keep-going",
         "--break", "line:train.py:42", "--break", "scope:mlp/fc1", "--break", "max > 1e3",
         scripts("scoped.py")], capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "[execmode] breakpoint 3: max > 1e3" in result.stderr
    assert "execmode run: breakpoint 1 (line:train.py:42) never hit: train.py never ran" \
        in result.stderr
    assert "execmode run: breakpoint 2 (scope:mlp/fc1) never hit: scope mlp/fc1 never " \
        "occurred" in result.stderr
    assert "breakpoint 3 (max > 1e3) never hit" not in result.stderr
