"""Opening a recorded session: everything but stepping; clear words for a bad file."""

from __future__ import annotations

import pytest
from execmode.tui.app import ExecmodeApp
from execmode.tui.cli import main as cli_main
from fixture_session import build_session
from tui_support import (
    SIZE,
    Waiter,
    press_view,
    record_session,
    row_texts,
    run_async,
    session_app,
    static_text,
    table_cells,
)


# Slow tier: the TUI driven by the Pilot.
@pytest.mark.slow
@run_async
async def test_a_recorded_session_opens_post_mortem(tmp_path):
    session = record_session("graph_mode.py", tmp_path / "run.emsession")
    app = session_app(session)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count > 0, what="the ops")
        assert app.run_state.phase == "post-mortem"
        status = static_text(app.screen.query_one("StatusBar"))
        assert "post-mortem: finished normally" in status and "run.emsession" in status
        ops = row_texts(app.screen.query_one("#op-list"))
        assert len(ops) == app.snapshot.ops.count and ops[0].split()[1] == "full"
        await pilot.press("s")                          # no stepping in a recording
        assert app.run_state.phase == "post-mortem"
        graph = await press_view(pilot, "3")
        await wait.view_loaded(graph)
        assert "step#0:0" in " ".join(row_texts(graph.query_one("#graph-list")))
        breaks = await press_view(pilot, "4")
        await wait.view_loaded(breaks)
        assert table_cells(breaks.query_one("#breaks-table"))[0][1].startswith("item()")
        output = await press_view(pilot, "9")
        await wait.until(lambda: any(t.startswith("loss")
                                     for t in row_texts(output.query_one("#output"))),
                         what="the recorded output")


@run_async
async def test_an_unreadable_session_says_what_is_wrong(tmp_path):
    bad = tmp_path / "broken.emsession"
    bad.write_text("this is not a database\n")
    app = session_app(bad)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.run_state.phase == "failed"
        status = static_text(app.screen.query_one("StatusBar"))
        assert "not an execmode session" in status


def test_the_open_command_refuses_a_missing_or_foreign_file(tmp_path, capsys):
    assert cli_main(["open", str(tmp_path / "missing.emsession")]) == 2
    assert "no such session file" in capsys.readouterr().err
    (tmp_path / "empty.emsession").write_bytes(b"")
    assert cli_main(["open", str(tmp_path / "empty.emsession")]) == 2
    assert "empty" in capsys.readouterr().err


# Slow tier: the TUI driven by the Pilot.
@pytest.mark.slow
@run_async
async def test_execmode_open_reads_the_row_index_before_the_app_starts(tmp_path):
    # `execmode open` starts reading the session's row indexes while Textual loads
    # (SessionLaunch.prestart, tail.EarlySnapshot); the app's first snapshot is that one.
    from execmode.tui.launch import SessionLaunch

    launch = SessionLaunch(str(build_session(tmp_path)))
    launch.prestart()
    early = launch.early
    first = early.take()
    assert first is not None and first.ops.count > 0
    app = ExecmodeApp(launch)
    async with app.run_test(size=SIZE) as pilot:
        await Waiter(pilot).until(lambda: app.snapshot.ops.count == first.ops.count,
                                  what="the early snapshot")
        assert app.snapshot == first and launch.early is None
