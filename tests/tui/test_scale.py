"""A million ops: the session opens in under two seconds and the list pages on demand."""

from __future__ import annotations

import time

import pytest
from big_session import build_big_session
from execmode.tui.widgets.row_list import RowList
from tui_support import SIZE, Waiter, run_async, session_app

pytestmark = pytest.mark.slow


@run_async
async def test_a_million_op_session_opens_fast_and_scrolls_to_the_end(tmp_path):
    path = build_big_session(tmp_path / "big.emsession", ops=1_000_000)
    app = session_app(path)
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count == 1_000_000, timeout=10,
                         what="a million ops listed")
        assert time.perf_counter() - start < 2.0
        op_list = app.screen.query_one("#op-list", RowList)
        op_list.focus()
        await pilot.press("end")
        wait.watch(op_list, "cursor")
        wait.watch(op_list, "rows_arrived")
        await wait.until(lambda: op_list.cursor == 999_999)
        source = op_list.source
        await wait.until(lambda: source.row(999_999) is not None, timeout=5,
                         what="the last page")
        assert source.line(999_999).plain.split()[:2] == ["1000000", "relu"]
