"""The bottom line of keys: what the focused view offers, and a click presses the key."""

from __future__ import annotations

import pytest
from execmode.tui.widgets.key_hints import KeyHints
from fixture_session import build_session
from tui_support import SIZE, Waiter, run_async, session_app, settle, static_text

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_the_key_line_follows_the_view_and_a_click_presses_the_key(tmp_path):
    app = session_app(build_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await Waiter(pilot).until(lambda: app.snapshot.ops.count > 0, what="the session")
        await settle(pilot)
        hints = app.screen.query_one(KeyHints)
        line = static_text(hints)
        assert "t Ops/kernels" in line and "/ Search" in line and "^p palette" in line
        start = line.index("t Ops/kernels")
        await pilot.click(KeyHints, offset=(start + 1, 0))
        await settle(pilot)
        assert app.screen.list_kind == "kernels"
        await pilot.press("7")
        await settle(pilot)
        line = static_text(app.screen.query_one(KeyHints))
        assert "m Measure eager vs fused" in line and "t Ops/kernels" not in line
