"""Responsive layout: every view usable at 80x24 (panes readable, the view bar whole,
dialogs inside the screen) and using the room at 250x70. Measured on the widgets' regions
after layout, on the fixed demo session (and the paused fake for the live-only panes)."""

from __future__ import annotations

import pytest
from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import ScriptLaunch
from execmode.tui.views import VIEWS
from execmode.tui.widgets.view_bar import ViewBar
from fakes import PausedController
from fixture_session import build_session
from tui_support import Waiter, run_async, session_app, settle, static_text

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow

SIZES = [(80, 24), (120, 40), (250, 70)]
# The pane of each view that holds the most text: it must grow with the terminal.
MAIN_PANE = {"ops": "#op-list", "tensor": "#slice-box", "graph": "#ir", "breaks": "#between",
             "passes": "#diff", "kernels": "#kernel-source-box", "profile": "#memory-plot",
             "breakpoints": "#bp-table", "output": "#output", "ranks": "#rank-ops"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_session(tmp_path_factory.mktemp("demo"))


def _paused_app(demo) -> ExecmodeApp:
    launch = ScriptLaunch(str(demo.parent / "train.py"), session=str(demo),
                          breakpoints=["nan"])
    return ExecmodeApp(launch, controller_factory=PausedController)


async def _ready(pilot):
    app = pilot.app
    await Waiter(pilot).until(lambda: app.snapshot.ops.count > 0, what="the session")
    await settle(pilot)


def _shown(widget) -> bool:
    node = widget
    while node is not None and hasattr(node, "display"):
        if not node.display:
            return False
        node = node.parent
    return True


def _check_screen(screen, width: int, height: int) -> None:
    bar = static_text(screen.query_one(ViewBar)).splitlines()[0].rstrip()
    assert len(bar) <= width, f"the view bar is cut at {width} columns: {bar!r}"
    for view in VIEWS:  # Ranks only for a run folder of ranks (or when it is open)
        if view.only_ranks and screen.VIEW != view.name:
            assert f"{view.key} " not in bar, f"view {view.key} in one session's bar: {bar!r}"
        else:
            assert f"{view.key} " in bar, f"view {view.key} missing from the bar: {bar!r}"
    for pane in screen.query(".pane"):
        if not _shown(pane):
            continue
        region = pane.region
        assert region.right <= width and region.bottom <= height, (pane, region)
        inner = pane.content_region
        assert inner.height >= 1 and inner.width >= 12, \
            f"{screen.VIEW}: pane #{pane.id} is {inner.width}x{inner.height} at {width}x{height}"


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@run_async
async def test_every_view_is_usable_at(size, demo):
    width, height = size
    app = session_app(demo)
    async with app.run_test(size=size) as pilot:
        await _ready(pilot)
        for view in VIEWS:
            await pilot.press(view.key)
            await settle(pilot)
            assert app.screen.VIEW == view.name
            _check_screen(app.screen, width, height)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@run_async
async def test_the_live_panes_and_every_dialog_fit_at(size, demo):
    width, height = size
    app = _paused_app(demo)
    async with app.run_test(size=size) as pilot:
        await _ready(pilot)
        _check_screen(app.screen, width, height)  # Ops with its Variables pane
        for keys, box in ((["B"], "#bp-dialog"), (["e"], "#export-dialog"),
                          (["question_mark"], "#help-box"), (["x"], "#expr-dialog")):
            await pilot.press(*keys)
            await settle(pilot)
            region = app.screen.query_one(box).region
            assert region.x >= 0 and region.y >= 0, (box, region)
            assert region.right <= width and region.bottom <= height, (box, region)
            await pilot.press("escape")
            await settle(pilot)


@run_async
async def test_250x70_gives_each_view_s_main_pane_the_room(demo):
    areas = {}
    for size in ((120, 40), (250, 70)):
        app = session_app(demo)
        async with app.run_test(size=size) as pilot:
            await _ready(pilot)
            for view in VIEWS:
                await pilot.press(view.key)
                await settle(pilot)
                region = app.screen.query_one(MAIN_PANE[view.name]).region
                areas[view.name, size] = region.width * region.height
    for view in VIEWS:
        small, big = areas[view.name, (120, 40)], areas[view.name, (250, 70)]
        assert big >= 2.5 * small, f"{view.name}: {small} -> {big} cells"
