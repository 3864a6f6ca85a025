"""The Tensor view as a newcomer meets it after `--break nan`: in an 80x24 terminal the
summary keeps every row (NaN and Inf counts included) and most of the width, the histogram
gives way and the value pane shrinks; stopped after an op, its output is shown first."""

from __future__ import annotations

import pytest
from execmode.tui import panels
from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import ScriptLaunch
from fakes import X_SUMMARY, PausedController
from fixture_session import build_session
from tui_support import SIZE, Waiter, run_async, settle

from execmode.debug.run_events import Event

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


def _app(tmp_path) -> ExecmodeApp:
    demo = build_session(tmp_path)
    launch = ScriptLaunch(str(demo.parent / "train.py"), session=str(demo),
                          breakpoints=["nan"])
    return ExecmodeApp(launch, controller_factory=PausedController)


async def _tensor_view(pilot):
    await Waiter(pilot).until(lambda: pilot.app.snapshot.ops.count > 0, what="the session")
    await settle(pilot)
    await pilot.press("2")
    await settle(pilot)
    return pilot.app.screen


@run_async
async def test_an_80x24_terminal_shows_the_whole_summary(tmp_path):
    async with _app(tmp_path).run_test(size=(80, 24)) as pilot:
        screen = await _tensor_view(pilot)
        stats = screen.query_one("#tensor-stats")
        assert not screen.query_one("#tensor-hist").display
        assert stats.size.width >= 40
        rows = len(panels.tensor_table(dict(X_SUMMARY, nbytes=1024, base_nbytes=4096)).rows)
        assert stats.content_region.height >= rows  # type .. Inf: every row of the table


@run_async
async def test_a_large_terminal_keeps_the_histogram(tmp_path):
    async with _app(tmp_path).run_test(size=SIZE) as pilot:
        screen = await _tensor_view(pilot)
        assert screen.query_one("#tensor-hist").display
        assert not screen.query_one("#tensor-body").has_class("narrow", "short")


class StoppedAfterANaN(PausedController):
    """Pauses after ``divide`` on a nan breakpoint: its output holds the NaN."""

    asked: list = []

    def start(self):
        where = {"filename": self.script, "lineno": 26, "function": "<module>"}
        nan_output = dict(X_SUMMARY, nan_count=4)
        event = Event("paused", {
            "reason": "breakpoint", "when": "after", "mode": "eager", "op_index": 11,
            "kernel_index": 0, "op": "divide", "location": where, "stack": [where],
            "scope": "", "inputs": [X_SUMMARY, X_SUMMARY], "output": nan_output,
            "kernel": None, "breakpoint": None, "hunt": None,
        })
        for listener in self.listeners:
            listener(event)
        return self

    def inspect(self, ref, histogram=True):
        self.asked.append(ref)
        return super().inspect(ref, histogram)


@run_async
async def test_after_a_breakpoint_the_output_comes_first(tmp_path):
    demo = build_session(tmp_path)
    launch = ScriptLaunch(str(demo.parent / "train.py"), session=str(demo),
                          breakpoints=["nan"])
    app = ExecmodeApp(launch, controller_factory=StoppedAfterANaN)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _tensor_view(pilot)
        await Waiter(pilot).until(lambda: StoppedAfterANaN.asked, what="an inspection")
        assert StoppedAfterANaN.asked[0] == "output"
        assert screen.query_one("#tensor-refs").cursor == 2  # input:0, input:1, output
