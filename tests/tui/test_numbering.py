"""One op, one number: the Ops list, the status bar, the Tensor view's op:N, the `/` search,
the session and its exports all agree (docs/session-store.md, "How ops and kernels are
numbered"; `execmode run`'s side is tests/debug/test_numbering.py).

The agent calibrates the profiler first here (EXECMODE_RECALIBRATE=1), which moves
dispatch's process-wide op counter thousands of ops on, as on a machine's first run: the
Tensor view then called op 11 "#8422" while the Ops list and the status bar said 11.
"""

from __future__ import annotations

import pytest
from execmode.tui.widgets.row_list import RowList
from exported_numbers import numbers_in_exports, numbers_in_store
from tui_support import Waiter, run_async, script_app, settle, static_text

SMALL = (80, 24)
# Slow tier: the TUI around a real agent process that calibrates the profiler first.
pytestmark = pytest.mark.slow


@run_async
async def test_an_op_has_one_number_in_every_view_the_session_and_its_exports(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("EXECMODE_RECALIBRATE", "1")
    app = script_app("three_ops.py", tmp_path)   # x = ones(3, 4); y = x * 2.0; z = exp(y)
    async with app.run_test(size=SMALL) as pilot:
        wait = Waiter(pilot)
        paused = await wait.paused()
        assert paused.op_index == 1
        for _ in range(3):
            paused = await wait.step("s")
        assert (paused.op, paused.op_index) == ("sum", 4)   # ones, multiply, exp have run
        await wait.until(lambda: app.snapshot.ops.count == 3, what="the store")
        await settle(pilot)
        assert "paused at op 4" in static_text(app.screen.query_one("StatusBar"))
        op_list = app.screen.query_one("#op-list", RowList)
        numbers = [op_list.source.line(i).plain.split()[:2] for i in range(4)]
        assert numbers == [["1", numbers[0][1]], ["2", "multiply"], ["3", "exp"],
                           ["4", "▶sum"]]             # the paused op: the number it will get

        await pilot.click("#op-list", offset=(10, 1))  # op 2: y = x * 2.0
        assert (app.selected_op.op, app.selected_op.seq) == ("multiply", 2)
        assert static_text(app.screen.query_one("#op-detail")).startswith("op 2: multiply")
        await pilot.press("enter")                      # its kept values, as op:2
        tensor = app.screen
        assert tensor.refs[0] == ("op:2", "#2 multiply → f32[3,4]")
        await wait.until(lambda: tensor.inspected == "op:2", what="op 2's output")
        assert static_text(tensor.query_one("#tensor-stats")).split("max", 1)[1].split()[0] \
            == "2"                                      # every element of x * 2.0

        await pilot.press("colon", *"op:3", "enter")   # typed: op 3 is exp(y) = e^2
        await wait.until(lambda: tensor.inspected == "op:3", what="op 3's output")
        assert "7.389" in static_text(tensor.query_one("#tensor-stats"))

        await pilot.press("escape", "1")
        assert app.screen.query_one("#op-list", RowList) is op_list
        wait.watch(op_list, "rows_arrived")
        await pilot.press("slash", *"#3", "enter")      # the search finds op 3 alone
        await wait.until(lambda: op_list.source.found is not None and
                         op_list.source.row(0) is not None, what="the search result")
        assert op_list.source.stored == 1
        assert op_list.source.line(0).plain.split()[:2] == ["3", "exp"]
        session = app.session_path

    stored = numbers_in_store(session)
    assert sorted(stored["ops"]) == [1, 2, 3]          # quit before sum (op 4) ran
    assert (stored["ops"][2], stored["ops"][3]) == ("multiply", "exp")
    for name, found in numbers_in_exports(session, tmp_path).items():
        assert found["ops"] == stored["ops"], name


@run_async
async def test_a_kernel_run_has_one_number_in_the_status_bar_the_list_and_the_session(
        tmp_path):
    app = script_app("graph_mode.py", tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        wait = Waiter(pilot)
        paused = await wait.paused()
        while paused is not None and paused.mode != "graph":
            paused = await wait.step("n")
        paused = await wait.step("n")                  # run kernel 1: now before kernel 2
        assert paused.mode == "graph" and paused.kernel_index == 2
        await settle(pilot)
        status = static_text(app.screen.query_one("StatusBar"))
        assert "paused at kernel 2" in status
        op_list = app.screen.query_one("#op-list", RowList)
        pending = op_list.source.line(len(op_list.source) - 1).plain.split()
        assert pending[0] == "2" and pending[1].startswith("▶")
        name = paused.kernel["name"]
        paused = await wait.step("n")                  # kernel 2 runs: row 2 of the store
        await wait.until(lambda: app.snapshot.kernels.count >= 2, what="kernel 2's row")
        await settle(pilot)
        row = op_list.source.row(1)
        assert (row.id, row.kernel) == (2, name)
        assert op_list.source.line(1).plain.split()[0] == "2"
        session = app.session_path
    assert numbers_in_store(session)["kernels"][2] == name
