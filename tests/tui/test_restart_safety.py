"""Restart is always safe: keys pressed fast, breakpoints carried with their state."""

from __future__ import annotations

import pytest
from execmode.tui import next_run_breakpoints as next_run
from execmode.tui.screens.breakpoints import note_of
from tui_support import SIZE, Waiter, press_view, run_async, script_app, table_cells

from execmode.debug.controller import carried_breakpoint

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_r_c_r_pressed_fast_ends_paused_in_a_fresh_run(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        first = app.bridge.controller.proc
        await pilot.press("r", "c", "r")
        await wait.until(lambda: app.run_state.phase == "paused" and
                         app.bridge.run == 2, what="the pause of the last restart")
        paused = app.run_state.paused
        assert (paused.op, paused.op_index) == ("full", 1)
        assert first.poll() is not None                # the first child ended and reaped
        assert first.returncode is not None
        await wait.step("c")
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        assert app.run_state.exit.status == "ok"


def record_notices(app) -> list[str]:
    """Every notification's text, as the app shows it (app.notify still runs)."""
    said, notify = [], app.notify
    app.notify = lambda message, **kw: (said.append(message), notify(message, **kw))
    return said


def by_spec(app) -> dict:
    return {bp["spec"]: bp for bp in app.breakpoints}


@run_async
async def test_breakpoints_carry_over_with_their_state_and_those_set_after_the_end(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        said = record_notices(app)
        await wait.paused()
        app.set_breakpoint("op:exp")
        app.set_breakpoint("op:sum if max > 1e9")          # never true
        await wait.until(lambda: {"op:exp", "op:sum if max > 1e9"} <= set(by_spec(app)))
        exp_id = by_spec(app)["op:exp"]["id"]
        app.breakpoint_command("enable_breakpoint", exp_id, False)
        await wait.until(lambda: not by_spec(app)["op:exp"]["enabled"], what="disabled")
        await wait.step("c")
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        # The end names the breakpoint that never hit, with its reason.
        note = by_spec(app)["op:sum if max > 1e9"]["note"]
        assert note.startswith("condition never true (max > 1e9")
        notice = next(text for text in said if "never hit" in text)
        assert "breakpoint 3 (op:sum if max > 1e9) never hit: condition never true " \
            "(max > 1e9; checked once)" in notice
        assert "breakpoint 2 (op:exp) never hit: disabled" in notice
        # Set after the script ended: kept for the next run, and says so.
        app.set_breakpoint("op:multiply")
        await wait.until(lambda: "op:multiply" in by_spec(app), what="the next run's list")
        assert by_spec(app)["op:multiply"]["note"] == "for the next run (r)"
        ids = {spec: bp["id"] for spec, bp in by_spec(app).items()}
        await pilot.press("r")
        await wait.until(lambda: app.run_state.phase == "paused" and app.bridge.run == 1,
                         what="the new run's first pause")
        app.bridge.refresh_breakpoints()
        await wait.until(lambda: by_spec(app).get("op:multiply", {}).get("note") is None,
                         what="the agent's list of the new run")
        now = by_spec(app)
        assert {spec: bp["id"] for spec, bp in now.items()} == ids
        assert now["op:exp"]["enabled"] is False and now["op:multiply"]["enabled"]
        assert all(bp["hits"] == 0 for bp in now.values())
        paused = await wait.step("c")
        assert paused.op == "multiply" and paused.reason.startswith("breakpoint")


@run_async
async def test_b_on_a_line_that_ran_no_op_yet_says_the_breakpoint_is_pending(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        said = record_notices(app)
        await wait.paused()
        source = app.screen.query_one("#source")
        source.focus()
        await pilot.press("down", "down", "b")         # line 6: exp, not run yet
        await wait.until(lambda: "three_ops.py:6" in by_spec(app), what="the breakpoint")
        assert by_spec(app)["three_ops.py:6"]["note"] == \
            "pending: no op has run from three_ops.py:6 yet"
        paused = await wait.step("c")
        assert (paused.op, paused.where.lineno) == ("exp", 6)
        assert "breakpoint 2: three_ops.py:6 · pending: no op has run from three_ops.py:6 " \
            "yet" in said                              # said when it was set
        app.bridge.refresh_breakpoints()
        await wait.until(lambda: by_spec(app)["three_ops.py:6"]["hits"] == 1, what="a hit")
        assert by_spec(app)["three_ops.py:6"]["note"] is None


FAILS = "op:exp if cfg.explodes == 1"                  # reading cfg.explodes raises


@run_async
async def test_a_breakpoint_disabled_by_its_failing_condition_still_says_why_after_r(tmp_path):
    app = script_app("failing_condition.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        app.set_breakpoint(FAILS)
        await wait.until(lambda: FAILS in by_spec(app), what="the breakpoint")
        await wait.step("c")                           # disabled; the script goes on
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        reason = by_spec(app)[FAILS]["disabled_reason"]
        assert reason.startswith("disabled: its condition failed on op exp at ")
        assert reason.endswith("RuntimeError: a property that raises")
        await pilot.press("r")
        await wait.until(lambda: app.run_state.phase == "paused" and app.bridge.run == 1,
                         what="the new run's first pause")
        await wait.until(lambda: by_spec(app)[FAILS]["reached"] == 0,
                         what="the agent's list of the new run")
        bp = by_spec(app)[FAILS]
        assert (bp["enabled"], bp["disabled_reason"], bp["note"]) == (False, reason, reason)
        screen = await press_view(pilot, "8")
        assert reason in [row[-1] for row in table_cells(screen.query_one("#bp-table"))]
        # Re-enabled: the reason goes (its condition is tried again, and fails again).
        app.breakpoint_command("enable_breakpoint", bp["id"], True)
        await wait.until(lambda: by_spec(app)[FAILS]["enabled"], what="enabled")
        assert by_spec(app)[FAILS]["disabled_reason"] is None
        assert "condition failed" not in note_of(by_spec(app)[FAILS])
        await wait.step("c")
        await wait.until(lambda: app.run_state.phase == "finished", what="the second end")
        assert by_spec(app)[FAILS]["disabled_reason"] == reason
        # Edited (E) after the end: a new condition, so the old reason is not carried.
        app.breakpoint_command("update_breakpoint", bp["id"], "op:exp")
        await wait.until(lambda: "op:exp" in by_spec(app), what="the edit")
        assert by_spec(app)["op:exp"]["disabled_reason"] is None
        await pilot.press("r")
        await wait.until(lambda: app.run_state.phase == "paused" and app.bridge.run == 2,
                         what="the third run's first pause")
        await wait.until(lambda: by_spec(app)["op:exp"]["note"] != "for the next run (r)",
                         what="the agent's list of the third run")
        edited = by_spec(app)["op:exp"]
        assert edited["enabled"] is False and edited["disabled_reason"] is None
        assert "condition failed" not in note_of(edited)


def test_turned_on_after_the_end_a_breakpoint_drops_the_reason_it_was_off():
    """Space on a breakpoint with no script running (the next run's list): on again, the
    reason an earlier run disabled it is not carried into the next run."""
    reason = "disabled: its condition failed on op exp: RuntimeError: boom"
    bps = [{"id": 2, "spec": FAILS, "enabled": False, "ignore": 0, "disabled_reason": reason}]
    assert carried_breakpoint(bps[0])["disabled_reason"] == reason
    on = next_run.enabled(bps, 2, True)[0]
    assert on["disabled_reason"] is None and "disabled_reason" not in carried_breakpoint(on)
    off = next_run.enabled(bps, 2, False)[0]     # still off: still why
    assert carried_breakpoint(off)["disabled_reason"] == reason
