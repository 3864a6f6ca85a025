"""Breakpoints from the dialog (with the condition grammar's errors) and from the source."""

from __future__ import annotations

from pathlib import Path

import pytest
from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import ScriptLaunch
from execmode.tui.widgets.row_list import RowList
from tui_support import SIZE, Waiter, run_async, script_app, static_text, table_cells

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_nan_breakpoint_from_the_dialog_stops_at_the_planted_op(tmp_path):
    app = script_app("planted_nan.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        await pilot.press("B")
        dialog = app.screen
        # A malformed condition: the parser's message, with the column, shows as you type.
        await pilot.press(*"max >")
        error = static_text(dialog.query_one("#bp-error"))
        assert "column" in error and "^" in error
        await pilot.press("enter")                    # refused: the dialog stays
        assert app.screen is dialog
        await pilot.press(*["backspace"] * 5, "n", "a", "n")
        assert static_text(dialog.query_one("#bp-error")).strip() == ""
        await pilot.press("enter")
        await wait.until(lambda: any(b["spec"] == "nan" for b in app.breakpoints),
                         what="the nan breakpoint")
        paused = await wait.step("c")
        assert paused.op == "log" and paused.when == "after"
        assert paused.where.lineno == 11
        assert paused.output["nan_count"] == 8
        assert paused.breakpoint["spec"] == "nan"
        panel = static_text(app.screen.query_one("#paused"))
        assert "NaN 8" in panel and "log" in panel
        await pilot.press("8")
        rows = table_cells(app.screen.query_one("#bp-table"))
        nan_row = next(r for r in rows if r[3] == "nan")   # the condition column
        assert nan_row[4] == "1"                      # hit once


@run_async
async def test_b_sets_a_breakpoint_on_the_source_cursor_line(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        source = app.screen.query_one("#source", RowList)
        source.focus()
        await pilot.press("down", "down")             # from line 4 to line 6
        assert source.cursor + 1 == 6
        await pilot.press("b")
        await wait.until(lambda: any(b["spec"] == "three_ops.py:6" for b in app.breakpoints),
                         what="the line breakpoint")
        assert 6 in source.source.breakpoints         # the gutter shows it
        await pilot.press("down", "b")                # line 7: set, then b again: off
        await wait.until(lambda: any(b["spec"] == "three_ops.py:7" for b in app.breakpoints))
        await pilot.press("b")
        await wait.until(lambda: all(b["spec"] != "three_ops.py:7" for b in app.breakpoints),
                         what="b to toggle the breakpoint off")
        paused = await wait.step("c")
        assert (paused.op, paused.where.lineno) == ("exp", 6)
        assert paused.reason.startswith("breakpoint")


@run_async
async def test_a_nan_breakpoint_in_a_fused_kernel_opens_the_source_where_the_nan_was_born(
        tmp_path):
    # The example's bug: log(0) inside a jitted step whose ops are fused. At 80x24 the
    # answer must be on screen after one key: the hunt's line in the source pane (marked)
    # and the origin first in the paused panel (v shows it beside the Variables pane).
    example = Path(__file__).resolve().parents[2] / "examples" / "nan_hunt.py"
    app = ExecmodeApp(ScriptLaunch(str(example), session_dir=str(tmp_path / "sessions"),
                                   breakpoints=["nan"]))
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        paused = await wait.step("c")
        assert paused.mode == "graph" and paused.breakpoint["spec"] == "nan"
        origin = paused.origin
        line = example.read_text().splitlines()[origin.lineno - 1]
        assert "em.log(probs)" in line
        ops = app.screen
        assert (ops.source_path, ops.marked_line) == (str(example), origin.lineno)
        await pilot.press("v")
        panel = static_text(ops.query_one("#paused")).splitlines()
        assert panel[2].startswith("origin: ") and " log " in panel[2]
