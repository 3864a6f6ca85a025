"""A run folder of ranks (execmode launch --profile) in the TUI: it opens rank 0's
session, the status bar says which rank, and R goes to the next rank's and round."""

from __future__ import annotations

import shutil

from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import SessionLaunch
from fixture_session import build_session
from tui_support import Waiter, run_async, settle, static_text


@run_async
async def test_r_goes_through_the_ranks_of_a_run_folder(tmp_path):
    demo = build_session(tmp_path / "demo")
    folder = tmp_path / "train-ranks"
    folder.mkdir()
    ranks = []
    for r in range(2):
        ranks.append(str(shutil.copy(demo, folder / f"rank{r}.emsession")))
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
