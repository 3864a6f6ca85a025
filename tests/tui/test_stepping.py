"""Stepping a real script: the op shown, the source line, the status bar."""

from __future__ import annotations

import pytest
from execmode.tui.widgets.row_list import RowList
from tui_support import SIZE, Waiter, row_texts, run_async, script_app, static_text

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_step_three_ops_shows_each_op_and_line(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        first = await wait.paused()
        assert (first.op, first.where.lineno) == ("full", 4)
        expected = [("multiply", 5), ("exp", 6), ("sum", 7)]
        for op, line in expected:
            paused = await wait.step("s")
            assert (paused.op, paused.where.lineno) == (op, line)
            recorded = paused.op_index - 1            # every op before the paused one
            await wait.until(lambda n=recorded: app.snapshot.ops.count == n,
                             what="the store to catch up")
            screen = app.screen
            ops = row_texts(screen.query_one("#op-list", RowList))
            assert ops[-1].split()[1] == f"▶{op}"       # the op about to run, last
            assert len(ops) == paused.op_index
            source = screen.query_one("#source", RowList)
            assert source.cursor + 1 == line
            assert source.source.current == line
            status = static_text(screen.query_one("StatusBar"))
            assert f"paused at op {paused.op_index}" in status
            assert f"three_ops.py:{line}" in status
