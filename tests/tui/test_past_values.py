"""A past eager op's values while the script is live: Enter on its row in the Ops view
opens the Tensor view on the copies the agent kept (execmode/debug/value_ring.py)."""

from __future__ import annotations

import pytest
from execmode.tui.widgets.row_list import RowList
from tui_support import SIZE, Waiter, run_async, script_app, settle, static_text

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_enter_on_a_past_op_shows_its_kept_output_and_inputs(tmp_path):
    app = script_app("three_ops.py", tmp_path)   # x = ones(3, 4); y = x * 2.0; z = exp(y)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        for _ in range(3):
            paused = await wait.step("s")
        assert paused.op == "sum"                     # full, multiply and exp have run
        await wait.until(lambda: app.snapshot.ops.count == 3, what="the store")
        await settle(pilot)
        op_list = app.screen.query_one("#op-list", RowList)
        await pilot.click("#op-list", offset=(10, 1))  # the second row: y = x * 2.0
        assert app.selected_op.op == "multiply"
        seq = app.selected_op.seq
        await pilot.press("enter")
        assert app.current_mode == "tensor"
        tensor = app.screen
        refs = [ref for ref, _ in tensor.refs]
        assert refs[:2] == [f"op:{seq}", f"op:{seq}:input:0"]   # 2.0 is a scalar input
        await wait.until(lambda: tensor.inspected == f"op:{seq}", what="the kept output")
        stats = static_text(tensor.query_one("#tensor-stats"))
        assert "2" in stats.split("max", 1)[1].split()[0]       # every element is 2.0
        assert "(3, 4)" in stats
        tensor.inspect(f"op:{seq}:input:0")
        await wait.until(lambda: tensor.inspected == f"op:{seq}:input:0", what="its input")
        assert static_text(tensor.query_one("#tensor-stats")).split("max", 1)[1].split()[0] \
            .startswith("1")
        # A new pause: the Tensor view opens on the paused op's own tensors again.
        await pilot.press("1")
        assert op_list is app.screen.query_one("#op-list", RowList)
        await wait.step("s")
        await pilot.press("2")
        await settle(pilot)
        assert not any(ref.startswith("op:") for ref, _ in app.screen.refs)


@run_async
async def test_an_op_the_ring_no_longer_holds_says_why(tmp_path):
    app = script_app("three_ops.py", tmp_path, keep_values=1)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        for _ in range(3):
            await wait.step("s")
        await wait.until(lambda: app.snapshot.ops.count == 3, what="the store")
        await settle(pilot)
        await pilot.click("#op-list", offset=(10, 0))  # the first row: ones, long gone
        seq = app.selected_op.seq
        await pilot.press("enter")
        tensor = app.screen
        await wait.until(lambda: tensor.inspected == f"op:{seq}", what="the answer")
        stats = static_text(tensor.query_one("#tensor-stats"))
        assert "no longer kept" in stats and "--keep-values" in stats
