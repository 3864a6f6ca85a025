"""Every view against a real run of a jitted script with a graph break, CSE and fusion."""

from __future__ import annotations

import pytest
from execmode.tui.data import SessionReader
from execmode.tui.widgets.row_list import RowList
from tui_support import (
    SIZE,
    Waiter,
    press_view,
    row_texts,
    run_async,
    script_app,
    static_text,
    table_cells,
)

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_each_view_shows_its_part_of_the_run(tmp_path):
    app = script_app("graph_mode.py", tmp_path, start_paused=False)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        await wait.until(lambda: "exit" in SessionReader(app.session_path).meta(),
                         what="the recording to close")

        # 1 Ops: the eager ops; t switches to the kernels. Rows come in pages from the
        # store on a worker: wait until the first ones are drawn (not "…").
        ops = app.screen

        def first_rows():
            return [r.split()[1] if len(r.split()) > 1 else r
                    for r in row_texts(ops.query_one("#op-list"))][:2]

        wait.watch(ops.query_one("#op-list"), "rows_arrived")
        await wait.until(lambda: "…" not in first_rows(), what="the first ops")
        assert first_rows() == ["full", "multiply"]
        await pilot.press("t")
        await wait.until(lambda: any("k0" in k for k in row_texts(ops.query_one("#op-list"))),
                         what="the kernels")
        kernels = row_texts(ops.query_one("#op-list"))
        assert any("step#0:0" in k and "k0" in k and "fused" in k for k in kernels)

        # 3 Graph: functions, signatures, segments, IR, retraces.
        graph = await press_view(pilot, "3")
        await wait.view_loaded(graph)
        listing = " ".join(row_texts(graph.query_one("#graph-list")))
        for part in ("step#0:0", "step#0:1", "step#1:0", "x: f32[16,8]", "x: f32[32,8]"):
            assert part in listing
        ir = row_texts(graph.query_one("#ir"))
        assert ir[0].startswith("{ lambda") and any("matmul" in line for line in ir)
        assert "(16, 8) -> (32, 8)" in " ".join(row_texts(graph.query_one("#retraces")))
        graph.query_one("#ir", RowList).move_to(1)            # the matmul line
        assert graph.breakpoint_location().lineno == 6
        await pilot.press("l")
        assert any("fused" in line for line in row_texts(graph.query_one("#ir")))

        # 4 Breaks: the break, its reason and line; Enter opens the line.
        breaks = await press_view(pilot, "4")
        await wait.view_loaded(breaks)
        rows = table_cells(breaks.query_one("#breaks-table"))
        assert rows[0][:4] == ["step", "item() needs a concrete value", "sum", "graph_mode.py:9"]
        breaks.query_one("#breaks-table").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert app.current_mode == "ops"
        source = app.screen.query_one("#source", RowList)
        assert source.cursor + 1 == 9 and source.source.marked == 9

        # 5 Passes: the pipeline, the coloured diff, stepping through rewrites.
        passes = await press_view(pilot, "5")
        await wait.view_loaded(passes)
        names = [r[1] for r in table_cells(passes.query_one("#pass-table"))]
        assert names[:2] == ["fold_constants", "simplify"] and "fuse" in names
        await pilot.press("right_square_bracket")         # the first rewrite of the graph
        title = static_text(passes.query_one("#diff-title"))
        assert "rewrite 1/" in title and "CSE" in title
        statuses = {d.status for d in passes.query_one("#diff").source.lines}
        assert "merged" in statuses
        while "fuse" not in static_text(passes.query_one("#diff-title")).split("(")[0]:
            await pilot.press("right_square_bracket")
        assert "fused" in {d.status for d in passes.query_one("#diff").source.lines}

        # 6 Kernels: fused kernels with member ops and their generated source.
        kernels = await press_view(pilot, "6")
        await wait.view_loaded(kernels)
        first = table_cells(kernels.query_one("#kernel-table"))[0]
        assert first[1] == "k0" and first[2] == "fused"
        assert "relu" in static_text(kernels.query_one("#kernel-members"))
        source_text = static_text(kernels.query_one("#kernel-source"))
        assert "k0" in source_text

        # 7 Profile: top ops, kernels, overhead.
        profile = await press_view(pilot, "7")
        await wait.view_loaded(profile)
        assert table_cells(profile.query_one("#top-ops"))[0][0] in ("full", "multiply")
        assert table_cells(profile.query_one("#compare-table"))
        assert "profiler cost" in static_text(profile.query_one("#overhead"))

        # 8 Breakpoints: the crash breakpoint the TUI always sets.
        bps = await press_view(pilot, "8")
        assert ["1", "●", "exception", "", "0", "0", ""] in \
            table_cells(bps.query_one("#bp-table"))

        # 9 Output; 2 Tensor says when tensors can be inspected.
        output = await press_view(pilot, "9")
        assert any(line.startswith("loss") for line in row_texts(output.query_one("#output")))
        tensor = await press_view(pilot, "2")
        assert "paused" in row_texts(tensor.query_one("#tensor-refs"))[0]


@run_async
async def test_the_help_screen_lists_every_key(tmp_path):
    app = script_app("three_ops.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        from execmode.tui.screens.help import key_table
        from tui_support import text_of
        text = text_of(key_table())
        for key in ("n ", "s ", "c ", "p ", "b ", "B ", "r ", "e ", "? ", "q "):
            assert any(line.strip().startswith(key) for line in text.splitlines()), key
        assert "Next rewrite" in text and "Ops/kernels" in text
        await pilot.press("escape")
        assert app.screen.VIEW == "ops"
