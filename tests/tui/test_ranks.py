"""A run folder of ranks (execmode launch --profile) in the TUI: it opens rank 0's
session, the status bar says which rank, R goes to the next rank's and round, and the
Ranks view (0) shows every rank side by side. (A real launch's timeline and table are
checked in tests/distributed/test_ranks.py.)"""

from __future__ import annotations

import shutil

from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import SessionLaunch
from fixture_session import build_session
from tui_support import Waiter, press_view, run_async, settle, static_text, table_cells


def _run_folder(tmp_path) -> list[str]:
    demo = build_session(tmp_path / "demo")
    folder = tmp_path / "train-ranks"
    folder.mkdir()
    return [str(shutil.copy(demo, folder / f"rank{r}.emsession")) for r in range(2)]


@run_async
async def test_r_goes_through_the_ranks_of_a_run_folder(tmp_path):
    ranks = _run_folder(tmp_path)
    app = ExecmodeApp(SessionLaunch(ranks[0], ranks=tuple(ranks)))
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count > 0, what="rank 0's session")
        bar = lambda: static_text(app.screen.query_one("StatusBar"))  # noqa: E731
        assert "rank 0/2" in bar()
        await pilot.press("R")
        await wait.until(lambda: app.session_path == ranks[1] and app.snapshot.ops.count > 0,
                         what="rank 1's session")
        await settle(pilot)
        assert "rank 1/2" in bar()
        await pilot.press("R")  # and round to rank 0
        await wait.until(lambda: app.session_path == ranks[0] and app.snapshot.ops.count > 0,
                         what="rank 0 again")


@run_async
async def test_r_on_one_session_says_what_it_is_for(tmp_path):
    demo = build_session(tmp_path / "demo")
    app = ExecmodeApp(SessionLaunch(str(demo)))
    async with app.run_test(size=(80, 24)) as pilot:
        await Waiter(pilot).until(lambda: app.snapshot.ops.count > 0, what="the session")
        await pilot.press("R")
        await settle(pilot)
        assert app.session_path == str(demo)
        assert any("run folder" in str(n.message) for n in app._notifications)


@run_async
async def test_the_ranks_view_shows_every_rank_side_by_side(tmp_path):
    ranks = _run_folder(tmp_path)
    app = ExecmodeApp(SessionLaunch(ranks[0], ranks=tuple(ranks)))
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count > 0, what="rank 0's session")
        assert "0 R" in static_text(app.screen.query_one("ViewBar"))  # "0 Rnk" at 80 columns
        screen = await press_view(pilot, "0")
        await wait.view_loaded(screen)
        lanes = static_text(screen.query_one("#rank-timeline")).splitlines()
        assert [line[:3] for line in lanes[1:3]] == ["r0 ", "r1 "]
        assert all(len(lane.rstrip()) <= 80 and set(lane[3:].strip()) <= set("█░▒·")
                   for lane in lanes[1:3])
        assert "waiting for the others" in lanes[3]
        table = screen.query_one("#rank-ops")
        headers = [str(c.label) for c in table.columns.values()]
        assert headers == ["op", "calls", "r0 time", "r1 time", "slowest/fastest"]
        rows = table_cells(table)
        assert rows and all(row[4] == "1.00x" for row in rows)  # one session copied twice


@run_async
async def test_the_ranks_view_of_one_session_says_how_to_record_ranks(tmp_path):
    demo = build_session(tmp_path / "demo")
    app = ExecmodeApp(SessionLaunch(str(demo)))
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count > 0, what="the session")
        assert "0 R" not in static_text(app.screen.query_one("ViewBar"))
        screen = await press_view(pilot, "0")
        await wait.view_loaded(screen)
        assert "execmode launch -n N --profile" in \
            static_text(screen.query_one("#rank-timeline"))
