"""Stepping kernel by kernel in graph mode, and the palette's differential check."""

from __future__ import annotations

import pytest
from execmode.tui.widgets.row_list import RowList
from tui_support import SIZE, Waiter, row_texts, run_async, script_app, settle

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_graph_mode_steps_kernels_and_checks_the_segment(tmp_path):
    app = script_app("graph_mode.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        paused = None
        while paused is None or paused.mode != "graph":
            paused = await wait.step("s")
        assert paused.kernel["graph_id"] == "step#0:0"
        assert app.screen.list_kind == "kernels"
        kernels = row_texts(app.screen.query_one("#op-list", RowList))
        assert kernels[-1].split()[1].startswith("▶step#0:0")   # the kernel about to run
        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(message), notify(message, **kw))
        await pilot.press("ctrl+p", *"differential", "enter")
        await settle(pilot)
        assert "every node matches" in " ".join(said)
