"""`s` into a fused kernel and `n` over it, in the TUI at 80x24; the paused row is always
on screen."""

from __future__ import annotations

import pytest
from execmode.tui.widgets.row_list import RowList
from tui_support import Waiter, run_async, script_app, static_text

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


def paused_row_visible(app) -> bool:
    op_list = app.screen.query_one("#op-list", RowList)
    top, height = round(op_list.scroll_y), op_list.scrollable_content_region.height
    last = op_list.row_count - 1
    return op_list.cursor == last and top <= last < top + height


@run_async
async def test_s_steps_into_a_fused_kernel_and_n_over_it_at_80x24(tmp_path):
    app = script_app("graph_mode.py", tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        paused = await wait.paused()
        while paused.kernel is None or paused.kernel.get("member_ops") != ["relu", "multiply",
                                                                          "add"]:
            paused = await wait.step("s")
            if paused.mode == "graph":
                await wait.until(lambda: paused_row_visible(app), what="the paused row")
        detail = static_text(app.screen.query_one("#op-detail"))
        assert "s steps into the kernel (its ops), n steps over it" in detail
        paused = await wait.step("s")                   # into k0
        assert paused.what == "%3 relu (1/3 in kernel k0)"
        assert paused.where.lineno == 7                 # the member's line in the source pane
        # The stack's cursor message for the new stop may come after the stop's own
        # show_source (a race, issue 34: 6 launches in 10 showed the caller's line): frame 0
        # is the stop itself, so the pane stays on the member's line.
        stack = app.screen.query_one("#stack", RowList)
        stack.post_message(RowList.CursorMoved(stack, 0))
        await pilot.pause()
        source = app.screen.query_one("#source", RowList)
        assert source.source.current == 7 and source.cursor == 6
        assert "%3 relu (1/3 in kernel k0)" in static_text(app.screen.query_one("StatusBar"))
        paused = await wait.step("n")                   # the same level: the next member
        assert paused.what == "%4 multiply (2/3 in kernel k0)"
        await wait.step("n")
        paused = await wait.step("n")                   # out: the next kernel
        assert paused.member is None and paused.kernel["name"] == "k1"
        await wait.until(lambda: paused_row_visible(app), what="the paused row")
        paused = await wait.step("n")                   # over k1, not into it
        assert paused.member is None and paused.kernel["name"] == "copy"
        await wait.until(lambda: paused_row_visible(app), what="the paused row")
