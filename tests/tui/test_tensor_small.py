"""The Tensor view in an 80x24 terminal: the summary keeps every row (NaN and Inf counts
included) and most of the width; the histogram gives way and the value pane shrinks."""

from __future__ import annotations

from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import ScriptLaunch
from fakes import PausedController
from fixture_session import build_session
from tui_support import SIZE, Waiter, run_async, settle


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
        assert stats.size.height >= 11  # type .. Inf: every row of the table


@run_async
async def test_a_large_terminal_keeps_the_histogram(tmp_path):
    async with _app(tmp_path).run_test(size=SIZE) as pilot:
        screen = await _tensor_view(pilot)
        assert screen.query_one("#tensor-hist").display
        assert not screen.query_one("#tensor-body").has_class("narrow", "short")
