"""At 80x24, the first screen of a NaN stop reads: >= 40 columns of source (the guilty line
is read, not guessed), the NaN origin op and line on screen without a key, the stop's
reason whole in the status bar, and the list's numbers never cut mid-digit."""

from __future__ import annotations

import re

import pytest
from execmode.tui.lines import SourceLines
from tui_support import Waiter, run_async, script_app, settle, static_text, text_of

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow

GUTTER = 8  # SourceLines: breakpoint dot, paused mark, line number, space


@run_async
async def test_a_nan_stop_at_80x24_shows_its_evidence_on_the_first_screen(tmp_path):
    app = script_app("fused_nan.py", tmp_path, start_paused=False, breakpoints=["nan"])
    async with app.run_test(size=(80, 24)) as pilot:
        p = await Waiter(pilot).paused(60)
        await settle(pilot)
        screen = app.screen
        source = screen.query_one("#source")
        assert isinstance(source.source, SourceLines)
        assert source.scrollable_content_region.width - GUTTER >= 40
        # The origin the hunt found (log, line 7) is in the shown paused-op pane.
        box = screen.query_one("#paused-box")
        assert box.display and box.region.width > 0
        shown = text_of(screen.query_one("#paused").content, box.region.width - 2)
        assert "origin:" in shown and "fused_nan.py:7" in " ".join(shown.split()), shown
        assert p.origin is not None and p.origin.lineno == 7
        assert source.source.marked == 7
        status = static_text(screen.query_one("StatusBar"))
        assert "breakpoint 1: nan" in text_of(screen.query_one("StatusBar").render(), 80), \
            status
        # Every kernel row: its number and time whole inside the list's width.
        op_list = screen.query_one("#op-list")
        width = op_list.scrollable_content_region.width
        lines = [op_list.source.line(i).plain[:width] for i in range(len(op_list.source))]
        assert lines
        for line in lines:
            if "(next)" in line:
                continue
            assert re.match(r"^\s*\d+ \S+\s+\d+(\.\d+)? (ns|µs|ms|s)\b", line), lines
