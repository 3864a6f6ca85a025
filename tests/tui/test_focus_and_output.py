"""After Enter in a Tensor view field the view keys work again; the Output view keeps the
order in which the script wrote stdout and stderr."""

from __future__ import annotations

import pytest
from tui_support import Waiter, press_view, run_async, script_app, settle

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_enter_in_the_ref_and_slice_boxes_gives_the_keys_back(tmp_path):
    app = script_app("planted_nan.py", tmp_path, start_paused=False, breakpoints=["nan"])
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        screen = await press_view(pilot, "2")
        await settle(pilot)
        await pilot.press("colon", "i", "n", "p", "u", "t", "colon", "0", "enter")
        await settle(pilot)
        assert app.focused is screen.query_one("#tensor-refs")
        await pilot.press("slash", "0", "enter")
        await settle(pilot)
        assert app.focused is screen.query_one("#tensor-refs")
        assert (await press_view(pilot, "1")).VIEW == "ops"   # a view key, not text


@run_async
async def test_lines_printed_before_an_uncaught_exception_come_before_its_traceback(tmp_path):
    app = script_app("prints_then_raises.py", tmp_path, start_paused=False)
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.run_state.phase in ("paused", "finished"))
        if app.run_state.phase == "paused":        # the exception stop
            await wait.step("c")
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        await settle(pilot)
        streams = [stream for stream, _ in app.output_lines]
        assert streams == ["stdout"] * 40 + ["stderr"] * (len(streams) - 40), app.output_lines
        assert app.output_lines[-1] == ("stderr", "RuntimeError: after the prints")
