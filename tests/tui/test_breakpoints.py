"""Breakpoints from the dialog (with the condition grammar's errors) and from the source."""

from __future__ import annotations

from execmode.tui.widgets.row_list import RowList
from tui_support import SIZE, Waiter, run_async, script_app, static_text, table_cells


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
