"""At a NaN stop after a fused kernel, the kernel's inputs are inspectable by the names the
Tensor view lists (``input:N``), and a bad ref says which ones this stop has."""

from __future__ import annotations

import pytest
from tui_support import Waiter, press_view, run_async, script_app, settle, text_of

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_the_inputs_of_the_kernel_that_made_a_nan_are_listed_and_shown(tmp_path):
    app = script_app("fused_nan.py", tmp_path, start_paused=False, breakpoints=["nan"])
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        p = await wait.paused(60)
        assert p.mode == "graph" and p.when == "after"
        screen = await press_view(pilot, "2")
        await settle(pilot)
        refs = dict(screen.refs)
        assert {"input:0", "input:1", "output"} <= set(refs), refs
        assert "f32[4,3]" in refs["input:1"]
        stats = screen.query_one("#tensor-stats")
        screen.inspect("input:1")          # y: 2.0 everywhere but the planted 0
        await settle(pilot)
        shown = text_of(stats.content)
        assert "inspect:" not in shown, shown
        assert "max             2" in shown and "min             0" in shown, shown
        screen.inspect("input:7")
        await settle(pilot)
        shown = " ".join(text_of(stats.content).split())
        assert "no 'input:7' at this stop: it has input:0, input:1" in shown, shown
