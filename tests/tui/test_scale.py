"""A million ops: the session opens with every op (the first, op 1, and the last), the
list pages on demand and a search runs in SQL. Costs are counted (rows handed to Python),
never timed: the wall-clock numbers are in benchmarks/bench_tui_latency.py."""

from __future__ import annotations

import pytest
from big_session import build_big_session
from execmode.tui.data import SessionReader
from execmode.tui.widgets.row_list import RowList
from tui_support import SIZE, Waiter, run_async, session_app

pytestmark = pytest.mark.slow

OPS = 1_000_000


def test_the_row_index_of_a_million_ops_reads_one_key_per_block(tmp_path):
    path = build_big_session(tmp_path / "big.emsession", ops=OPS)
    with SessionReader(path) as reader:
        snapshot = reader.snapshot()
        assert snapshot.ops.count == OPS            # op 1 counted: none dropped
        assert snapshot.ops.blocks[0] == 1 and snapshot.ops.last_key == OPS
        assert reader.rows_read <= OPS // 1024 + 10  # keys of blocks, not rows


@run_async
async def test_a_million_op_session_keeps_its_first_and_last_op_and_searches_in_sql(tmp_path):
    path = build_big_session(tmp_path / "big.emsession", ops=OPS)
    app = session_app(path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.snapshot.ops.count == OPS, timeout=30,
                         what="a million ops listed")
        op_list = app.screen.query_one("#op-list", RowList)
        op_list.focus()
        wait.watch(op_list, "cursor")
        wait.watch(op_list, "rows_arrived")
        await pilot.press("home")
        await wait.until(lambda: op_list.source.row(0) is not None, what="the first page")
        assert op_list.source.line(0).plain.split()[:2] == ["1", "matmul"]  # op 1
        await pilot.press("end")
        await wait.until(lambda: op_list.cursor == OPS - 1)
        source = op_list.source
        await wait.until(lambda: source.row(OPS - 1) is not None, timeout=10,
                         what="the last page")
        assert source.line(OPS - 1).plain.split()[:2] == [f"{OPS}", "exp"]  # op 1,000,000
        assert app.pages.rows_read <= 5 * 64  # pages around the cursor, not the table

        before = app.pages.rows_read
        await pilot.press("slash", *"relu scope:mlp sort:time", "enter")
        await wait.until(lambda: op_list.source.found is not None, timeout=30,
                         what="the search result")
        # relu is every 6th op from row 4; scope mlp/fc1 unless row % 3 == 0
        matching = [row for row in range(4, OPS, 6) if row % 3]
        assert len(op_list.source) == len(matching)
        await wait.until(lambda: op_list.source.row(0) is not None, what="the best row")
        best = op_list.source.row(0)
        assert best.op == "relu" and best.scope == "mlp/fc1" and best.dur_ns == max(300 + row % 700 for row in matching)
        assert app.pages.rows_read - before <= 2 * 64  # SQLite sorted; Python got a page
