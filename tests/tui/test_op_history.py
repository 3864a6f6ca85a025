"""The op history as a table: `/` search, the NaN/Inf filter, sorting; recorded and live.

Every expectation is computed from the rows the session was built with, never copied from
the screen: a search that returned the wrong rows or the wrong order fails here.
"""

from __future__ import annotations

import pytest
from big_session import build_big_session
from execmode.tui.widgets.row_list import RowList
from execmode.tui.widgets.search_bar import SearchBar
from tui_support import SIZE, Waiter, record_session, run_async, script_app, session_app

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow

OPS = 6_000
NAN_EVERY = 250
NAMES = ("matmul", "add", "multiply", "exp", "relu", "sum")


def _rows():
    """The synthetic session's ops as big_session writes them: (seq, op, scope, line, dur,
    bytes, nan); row i is op i + 1."""
    return [(i + 1, NAMES[i % 6], "mlp/fc1" if i % 3 else "", 10 + i % 20,
             300 + i % 700, 4096 * (1 + i % 5), i % NAN_EVERY == NAN_EVERY - 1)
            for i in range(OPS)]


async def _search(pilot, wait, op_list, keys):
    before = op_list.source
    await pilot.press(*keys)
    await wait.until(lambda: op_list.source is not before and
                     op_list.source.found is not None, what="the search result")
    await wait.until(lambda: all(op_list.source.row(i) is not None
                                 for i in range(min(3, op_list.source.stored))),
                     what="the first rows")
    return op_list.source


def _shown(source, count=3):
    return [source.row(i) for i in range(min(count, len(source)))]


@run_async
async def test_search_filter_and_sort_a_recorded_session(tmp_path):
    path = build_big_session(tmp_path / "s.emsession", ops=OPS, nan_every=NAN_EVERY)
    rows = _rows()
    app = session_app(path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count == OPS, what="the session")
        screen = app.screen
        op_list = screen.query_one("#op-list", RowList)
        wait.watch(op_list, "rows_arrived")
        assert "ops · 6,000" in screen.query_one("#ops-left").border_title

        # an op name: every exp, in the order they ran, numbered by their place in the run
        source = await _search(pilot, wait, op_list, ["slash", *"exp", "enter"])
        exps = [r for r in rows if r[1] == "exp"]
        assert len(source) == len(exps)
        assert [r.seq for r in _shown(source)] == [r[0] for r in exps[:3]]
        assert source.line(0).plain.split()[:2] == [str(exps[0][0]), "exp"]  # its number
        assert f"{len(exps):,} of 6,000" in screen.query_one("#ops-left").border_title

        # file:line and a scope together; sorted slowest first with o
        source = await _search(pilot, wait, op_list,
                               ["slash", "ctrl+u", *"train.py:15 scope:mlp", "enter"])
        at_15 = [r for r in rows if r[3] == 15 and r[2] == "mlp/fc1"]
        assert len(source) == len(at_15) > 0
        source = await _search(pilot, wait, op_list, ["o"])
        slowest = sorted(at_15, key=lambda r: (-r[4], r[0]))
        assert [r.seq for r in _shown(source)] == [r[0] for r in slowest[:3]]
        assert op_list.cursor == 0  # a sorted result starts at its best row
        source = await _search(pilot, wait, op_list, ["o"])  # most bytes first
        biggest = sorted(at_15, key=lambda r: (-r[5], r[0]))
        assert [r.seq for r in _shown(source)] == [r[0] for r in biggest[:3]]

        # Esc closes the bar and keeps the query; the bar shows the query when reopened
        await pilot.press("slash")
        bar = screen.query_one("#op-search", SearchBar)
        assert bar.display and bar.value == "train.py:15 scope:mlp sort:bytes"
        await pilot.press("escape")
        assert not bar.display and op_list.has_focus and len(op_list.source) == len(at_15)

        # NaN/Inf only (!), after clearing the search with an empty line
        await pilot.press("slash", "ctrl+u", "enter")
        await pilot.pause()
        assert op_list.source.found is None and len(op_list.source) == OPS
        source = await _search(pilot, wait, op_list, ["exclamation_mark"])
        nans = [r for r in rows if r[6]]
        assert [r.seq for r in _shown(source, 100)] == [r[0] for r in nans]
        assert "NaN/Inf only" in screen.query_one("#ops-left").border_title


@run_async
async def test_nonfinite_filter_says_when_the_session_has_no_value_stats(tmp_path):
    path = build_big_session(tmp_path / "s.emsession", ops=500)
    app = session_app(path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count == 500, what="the session")
        op_list = app.screen.query_one("#op-list", RowList)
        await _search(pilot, wait, op_list, ["exclamation_mark"])
        assert len(op_list.source) == 0
        assert "no value stats recorded" in app.screen.query_one("#ops-left").border_title


@run_async
async def test_a_search_while_paused_keeps_the_paused_op_as_the_last_row(tmp_path):
    app = script_app("planted_nan.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        for _ in range(3):
            paused = await wait.step("s")
        await wait.until(lambda: app.snapshot.ops.count == paused.op_index - 1,
                         what="the store to catch up")
        op_list = app.screen.query_one("#op-list", RowList)
        wait.watch(op_list, "rows_arrived")
        source = await _search(pilot, wait, op_list, ["slash", *"multiply", "enter"])
        stored = [source.row(i) for i in range(source.stored)]
        assert stored and all(r.op == "multiply" for r in stored)
        assert source.is_pending(len(source) - 1)  # the op about to run, kept
        assert op_list.cursor == len(source) - 1
        assert source.line(len(source) - 1).plain.split()[1] == f"▶{paused.op}"
        paused = await wait.step("s")  # the next pause: the cursor is on the paused row
        await wait.until(lambda: op_list.source.is_pending(op_list.cursor), what="the row")
        assert op_list.source.line(op_list.cursor).plain.split()[1] == f"▶{paused.op}"


@run_async
async def test_the_kernel_list_filters_by_graph_and_sorts_by_time(tmp_path):
    path = record_session("graph_mode.py", tmp_path / "g.emsession", kernel_rows=True)
    app = session_app(path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.kernels.count > 0, what="the session")
        await pilot.press("t")
        await pilot.pause()
        op_list = app.screen.query_one("#op-list", RowList)
        wait.watch(op_list, "rows_arrived")
        await wait.until(lambda: all(op_list.source.row(i) is not None
                                     for i in range(len(op_list.source))), what="the rows")
        every = [op_list.source.row(i) for i in range(len(op_list.source))]
        source = await _search(pilot, wait, op_list, ["slash", *"graph:step#1 sort:time",
                                                      "enter"])
        await wait.until(lambda: all(source.row(i) is not None for i in range(len(source))),
                         what="the found rows")
        found = [source.row(i) for i in range(len(source))]
        second = sorted((k for k in every if k.graph_id.startswith("step#1")),
                        key=lambda k: (-k.dur_ns, k.id))
        assert second and [k.id for k in found] == [k.id for k in second]
        assert "graph step#1" in app.screen.query_one("#ops-left").border_title


@run_async
async def test_a_live_run_records_value_stats_for_the_nonfinite_filter(tmp_path):
    """As tfdbg's health pills: a live run records every op output's NaN/Inf counts (by
    default), so `!` finds where the NaN was born and where it went."""
    app = script_app("planted_nan.py", tmp_path, start_paused=False)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        await wait.until(lambda: app.snapshot.ops.count >= 5, what="the store")
        op_list = app.screen.query_one("#op-list", RowList)
        wait.watch(op_list, "rows_arrived")
        source = await _search(pilot, wait, op_list, ["exclamation_mark"])
        assert [source.row(i).op for i in range(len(source))] == ["log", "add"]
