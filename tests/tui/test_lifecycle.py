"""Restart, a crashing script, a script that cannot start."""

from __future__ import annotations

import pytest
from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import ScriptLaunch
from execmode.tui.widgets.row_list import RowList
from tui_support import (
    SCRIPTS,
    SIZE,
    Waiter,
    row_texts,
    run_async,
    script_app,
    static_text,
)

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_the_tui_takes_the_agent_started_before_it_and_restarts_afresh(tmp_path):
    # execmode tui spawns the agent before importing Textual (launch.prestart): the app
    # must connect to that process and its session, not start a second one.
    launch = ScriptLaunch(str(SCRIPTS / "three_ops.py"),
                          session_dir=str(tmp_path / "sessions"))
    launch.prestart()
    early = launch.prestarted.proc
    early_session = launch.prestarted.session
    app = ExecmodeApp(launch)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        paused = await wait.paused()
        assert (paused.op, paused.op_index) == ("full", 1)
        assert app.bridge.controller.proc is early and launch.prestarted is None
        assert app.session_path == early_session
        await pilot.press("r")                         # a restart spawns anew, as before
        await wait.until(lambda: app.session_path != early_session, what="a new session")
        await wait.paused()
        assert early.poll() is not None and app.bridge.controller.proc is not early


@run_async
async def test_restart_runs_the_script_again_from_the_top(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        await wait.step("s")
        await wait.step("s")
        app.set_breakpoint("op:sum")                   # set during the first run
        await wait.until(lambda: any(b["spec"] == "op:sum" for b in app.breakpoints))
        first_session = app.session_path
        await pilot.press("r")
        await wait.until(lambda: app.session_path != first_session, what="a new session")
        paused = await wait.paused()
        assert (paused.op, paused.op_index, paused.where.lineno) == ("full", 1, 4)
        await wait.until(lambda: len(row_texts(app.screen.query_one("#op-list"))) == 1,
                         what="the op list of the new run")
        assert app.output_count == 0
        paused = await wait.step("c")                  # the breakpoint came along
        assert paused.op == "sum" and paused.reason.startswith("breakpoint")
        await wait.step("c")
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        assert app.run_state.exit.status == "ok"
        await wait.until(lambda: any("total" in t for _, t in app.output_lines))


@run_async
async def test_a_crash_shows_the_traceback_and_the_failing_ops_tensors(tmp_path):
    app = script_app("crashes.py", tmp_path, start_paused=False)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        paused = await wait.paused()
        assert paused.when == "exception"
        assert "ShapeError" in paused.reason and "ShapeError" in paused.traceback
        assert paused.where.lineno == 8
        panel = static_text(app.screen.query_one("#paused"))
        assert "ShapeError" in panel and "inner dimensions differ" in panel
        # The failing op's inputs stay inspectable in the Tensor view.
        await pilot.press("2")
        tensor = app.screen
        refs = tensor.query_one("#tensor-refs", RowList)
        await wait.until(lambda: "input:1" in " ".join(row_texts(refs)), what="the refs")
        assert row_texts(refs)[0].split()[:2] == ["input:0", "f32[2,3]"]
        wait.watch(tensor, "inspected")
        refs.move_to(1)
        await wait.until(lambda: tensor.inspected == "input:1", what="input:1 inspected")
        stats = static_text(tensor.query_one("#tensor-stats"))
        assert "f32[4,5]" in stats and "NaN" in stats
        await pilot.press("c")
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        assert app.run_state.exit.status == "exception"
        status = static_text(app.screen.query_one("StatusBar"))
        assert "raised an exception" in status


@run_async
async def test_a_script_that_cannot_start_says_why(tmp_path):
    app = script_app("no_such_script.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.run_state.phase == "failed", what="the failure")
        status = static_text(app.screen.query_one("StatusBar"))
        assert "could not start" in status and "no such file" in status
        await pilot.press("s")                       # stepping says why it cannot
        await pilot.press("9")
        assert "no such file" in " ".join(row_texts(app.screen.query_one("#output")))
