"""Every view by key, by the command palette and by the mouse."""

from __future__ import annotations

import pytest
from execmode.tui.views import VIEWS
from execmode.tui.widgets.row_list import RowList
from fixture_session import build_session
from tui_support import SIZE, Waiter, run_async, session_app


# Slow tier: the TUI driven by the Pilot.
@pytest.mark.slow
@run_async
async def test_views_open_by_number_palette_and_mouse(tmp_path):
    app = session_app(build_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await Waiter(pilot).until(lambda: app.snapshot.ops.count > 0, what="the session")
        for view in VIEWS:                                   # number keys
            await pilot.press(view.key)
            assert app.current_mode == view.name
        await pilot.press("1", "ctrl+p", *"passes", "enter")  # the command palette
        await pilot.pause()
        assert app.current_mode == "passes"
        await pilot.click("ViewBar", offset=(3, 0))           # "1 Ops" in the view bar
        await pilot.pause()
        assert app.current_mode == "ops"
        op_list = app.screen.query_one("#op-list", RowList)
        await pilot.click("#op-list", offset=(10, 2))         # the third op
        assert op_list.cursor == 2
