"""The Breakpoints view edits conditions (E) and ignore counts (i), and shows each
breakpoint's condition and note."""

from __future__ import annotations

import pytest
from tui_support import SIZE, Waiter, run_async, script_app, static_text, table_cells

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


def by_spec(app) -> dict:
    return {bp["spec"]: bp for bp in app.breakpoints}


@run_async
async def test_conditions_and_ignore_counts_are_edited_from_the_breakpoints_view(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        app.set_breakpoint("op:exp")
        await wait.until(lambda: "op:exp" in by_spec(app), what="the breakpoint")
        await pilot.press("8")
        table = app.screen.query_one("#bp-table")
        table.focus()
        await pilot.press("down")                     # row 0 is the TUI's `exception`
        await pilot.press("E")
        assert app.screen.query_one("#bp-input").value == "op:exp"
        await pilot.press("end", *" if max > 1e9", "enter")
        await wait.until(lambda: "op:exp if max > 1e9" in by_spec(app), what="the edit")
        assert by_spec(app)["op:exp if max > 1e9"]["id"] == 2
        await pilot.press("i")
        dialog = app.screen
        await pilot.press("backspace", "x", "enter")  # refused, with the reason
        assert "not a whole number: 'x'" in static_text(dialog.query_one("#ignore-error"))
        await pilot.press("backspace", "3", "enter")
        await wait.until(lambda: by_spec(app)["op:exp if max > 1e9"]["ignore"] == 3,
                         what="the ignore count")
        row = table_cells(table)[1]
        assert row[0] == "2" and row[2:6] == ["op:exp", "max > 1e9", "0", "3"]
        await pilot.press("c")
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        await wait.until(lambda: "never hit" not in table_cells(table)[1][6] and
                         table_cells(table)[1][6].startswith("condition never true"),
                         what="the note")
        assert table_cells(table)[1][6] == "condition never true (max > 1e9; checked once)"
