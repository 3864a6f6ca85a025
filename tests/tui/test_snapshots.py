"""Snapshot tests of every view at 80x24, 120x40 and 200x60, on a session with fixed
contents (test_layout.py checks the same sizes with assertions on the regions).

Update after an intended change with ``pytest tests/tui/test_snapshots.py
--snapshot-update`` and look at the report before committing the new SVGs.
"""

from __future__ import annotations

import pytest
from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import ScriptLaunch
from execmode.tui.widgets.row_list import RowList
from fakes import PausedController
from fixture_session import build_session
from textual.widgets import Input
from tui_support import Waiter, session_app, settle

# Slow tier: the TUI's snapshots, driven by the Pilot.
pytestmark = pytest.mark.slow

SIZES = {"80x24": (80, 24), "120x40": (120, 40), "200x60": (200, 60)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_session(tmp_path_factory.mktemp("demo"))


def _prepare(*keys):
    async def run_before(pilot):
        app = pilot.app
        await Waiter(pilot).until(lambda: app.snapshot.ops.count > 0, what="the session")
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        for field in app.screen.query(Input):
            field.cursor_blink = False
        await settle(pilot)
        await _rows_on_screen(pilot)
    return run_before


async def _rows_on_screen(pilot) -> None:
    """Wait for the pages of the rows each paged list shows (the page fetcher is a
    service worker, which settle() does not wait for): no row may draw as "…"."""
    wait = Waiter(pilot)
    lists = [r for r in pilot.app.screen.query(RowList) if hasattr(r.source, "stored")]
    for row_list in lists:
        wait.watch(row_list, "rows_arrived")

    def drawn() -> bool:
        for r in lists:
            top = round(r.scroll_y)
            shown = range(top, min(r.source.stored, top + r.size.height))
            if any(r.source.row(i) is None for i in shown):
                return False
        return True

    await wait.until(drawn, what="the visible rows")
    await settle(pilot)


POST_MORTEM_VIEWS = {
    "ops": (),
    "ops_kernels": ("t",),
    "graph": ("3",),
    "breaks": ("4",),
    "passes": ("5", "right_square_bracket", "right_square_bracket"),
    "kernels": ("6",),
    "profile": ("7",),
    "output": ("9",),
}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("view", list(POST_MORTEM_VIEWS))
def test_post_mortem_view(view, size, demo, snap_compare):
    app = session_app(demo)
    assert snap_compare(app, terminal_size=SIZES[size],
                        run_before=_prepare(*POST_MORTEM_VIEWS[view]))


def _paused_app(demo) -> ExecmodeApp:
    launch = ScriptLaunch(str(demo.parent / "train.py"), session=str(demo),
                          breakpoints=["nan"])
    return ExecmodeApp(launch, controller_factory=PausedController)


PAUSED_VIEWS = {
    "paused_ops": (),
    "paused_tensor": ("2",),
    "breakpoint_dialog": ("B", *"max >"),
    "export_dialog": ("e", "ctrl+u", *"run.html"),  # the default path is a tmp folder
    "breakpoints": ("8",),
    "help": ("question_mark",),
}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("view", list(PAUSED_VIEWS))
def test_paused_view(view, size, demo, snap_compare):
    assert snap_compare(_paused_app(demo), terminal_size=SIZES[size],
                        run_before=_prepare(*PAUSED_VIEWS[view]))
