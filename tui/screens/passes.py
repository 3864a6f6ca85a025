"""View 5, Passes: what each optimisation pass did to the selected graph.

The pass list gives each pass's time and node/kernel/buffer counts; the right pane shows
the graph after the selected pass with the changes coloured (+ added, - removed,
= merged, » fused, ~ changed). ``]`` and ``[`` step through the rewrites one at a time,
across passes: the graph shows only the rewrites applied so far and the current one is
highlighted, so you watch the graph change. ``a`` shows the whole pass again.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.tui import formatting as fmt
from execmode.tui.data import SessionReader
from execmode.tui.formatting import literal
from execmode.tui.ir_diff import diff_lines, node_locations
from execmode.tui.lines import DiffLines, TextLines
from execmode.tui.records import PassInfo, SourceRef
from execmode.tui.screens.base import StoreView
from execmode.tui.widgets.row_list import RowList
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

LEGEND = "[green]+ added[/]  [red]- removed[/]  [magenta]= merged[/]  [cyan]» fused[/]  " \
         "[yellow]~ changed[/]  [reverse]the rewrite shown[/]"


class PassesData(NamedTuple):
    graph_ids: list[str]
    traced: dict[str, str]                 # graph id -> IR text as traced
    passes: dict[str, list[PassInfo]]


def load_passes(reader: SessionReader) -> PassesData:
    traced: dict[str, str] = {}
    for g in reader.graphs():
        traced.setdefault(g.graph_id, g.ir_text)
    ids = list(traced)
    return PassesData(ids, traced, {gid: reader.passes(gid) for gid in ids})


class PassesScreen(StoreView):
    VIEW = "passes"
    BINDINGS = [
        Binding("right_square_bracket", "rewrite(1)", "Next rewrite"),
        Binding("left_square_bracket", "rewrite(-1)", "Prev rewrite"),
        Binding("a", "whole_pass", "Whole pass"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.data: PassesData | None = None
        self.graph_id: str | None = None
        self.pass_index = 0
        self.step: int | None = None          # rewrites applied so far - 1; None: all
        self.diff_nodes: list[int | None] = []
        self.locations: dict[int, SourceRef] = {}

    def compose_view(self) -> ComposeResult:
        with Horizontal(id="passes-top"):
            yield RowList(TextLines(), id="pass-graphs", classes="pane")
            yield DataTable(id="pass-table", classes="pane", cursor_type="row")
        with Horizontal(id="passes-bottom"):
            yield RowList(TextLines(), id="rewrites", classes="pane")
            with Vertical(id="diff-box", classes="pane"):
                yield Static(id="diff-title")
                yield RowList(TextLines(), id="diff")
                yield Static(LEGEND, id="diff-legend")

    def on_mount(self) -> None:
        self.query_one("#pass-graphs").border_title = "graphs"
        table = self.query_one("#pass-table", DataTable)
        table.border_title = "passes"
        table.add_columns("#", "pass", "time", "nodes", "kern", "bufs", "rewr")
        self.query_one("#rewrites").border_title = "rewrites  ([ ] step, a whole pass)"
        self.query_one("#diff-box").border_title = "graph after the pass"
        super().on_mount()

    def load(self, reader: SessionReader) -> PassesData:
        return load_passes(reader)

    def show_empty(self, why: str) -> None:
        self.query_one("#pass-graphs", RowList).set_source(TextLines((), why))

    def show(self, data: PassesData) -> None:
        self.data = data
        lines = [Text(gid, style="cyan") + Text(f"  {len(data.passes.get(gid, []))} passes",
                                                 style="dim") for gid in data.graph_ids]
        graphs = self.query_one("#pass-graphs", RowList)
        keep = data.graph_ids.index(self.graph_id) if self.graph_id in data.graph_ids else 0
        graphs.set_source(TextLines(lines, "no graph has been compiled yet"), cursor=keep)

    # --- selection ------------------------------------------------------------------------
    def on_row_list_cursor_moved(self, message: RowList.CursorMoved) -> None:
        if self.data is None:
            return
        if message.row_list.id == "pass-graphs" and message.index < len(self.data.graph_ids):
            gid = self.data.graph_ids[message.index]
            if gid != self.graph_id:
                self.graph_id, self.pass_index, self.step = gid, 0, None
            self._fill_pass_table()
        elif message.row_list.id == "rewrites":
            if self.step is not None and message.index != self.step:
                self.step = message.index
                self._show_diff()

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        if message.cursor_row != self.pass_index:
            self.pass_index, self.step = message.cursor_row, None
        self._show_pass()

    def _passes(self) -> list[PassInfo]:
        if self.data is None or self.graph_id is None:
            return []
        return self.data.passes.get(self.graph_id, [])

    def _fill_pass_table(self) -> None:
        table = self.query_one("#pass-table", DataTable)
        table.clear()
        for p in self._passes():
            table.add_row(str(p.index + 1), literal(p.name), fmt.duration(p.wall_ns), str(p.node_count),
                          str(p.kernel_count), str(p.buffer_count), str(len(p.rewrites)))
        if self._passes():
            self.pass_index = min(self.pass_index, len(self._passes()) - 1)
            table.move_cursor(row=self.pass_index)
        self._show_pass()

    def _show_pass(self) -> None:
        passes = self._passes()
        if not passes:
            self.query_one("#diff", RowList).set_source(TextLines((), "no passes recorded"))
            return
        p = passes[self.pass_index]
        lines = [Text(f"{i + 1:>3}. ", style="dim") + Text(str(r.get("sentence", r)))
                 for i, r in enumerate(p.rewrites)]
        self.query_one("#rewrites", RowList).set_source(
            TextLines(lines, "this pass changed nothing"), cursor=self.step or 0)
        self._show_diff()

    def _show_diff(self) -> None:
        passes = self._passes()
        p = passes[self.pass_index]
        before = passes[self.pass_index - 1].ir_text if self.pass_index else \
            self.data.traced.get(self.graph_id, "")
        applied = highlight = None
        title = Text(f"after {p.name} ", style="bold")
        title.append(f"({self.pass_index + 1}/{len(passes)})  ", style="dim")
        if self.step is not None and p.rewrites:
            done = p.rewrites[: self.step + 1]
            applied = {n for r in done for n in r.get("nodes", ())}
            highlight = set(p.rewrites[self.step].get("nodes", ()))
            title.append(f"rewrite {self.step + 1}/{len(p.rewrites)}: ", style="yellow")
            title.append(str(p.rewrites[self.step].get("sentence", "")))
        else:
            title.append(_diff_summary(p.diff), style="dim")
        self.query_one("#diff-title", Static).update(title)
        lines = diff_lines(before, p.ir_text, p.diff, applied, highlight or ())
        self.diff_nodes = [d.node for d in lines]
        self.locations = node_locations(p.ir_json)
        view = self.query_one("#diff", RowList)
        first_marked = next((i for i, d in enumerate(lines) if d.highlight), None)
        view.set_source(DiffLines(lines), cursor=first_marked or 0)

    # --- stepping through rewrites --------------------------------------------------------
    def action_rewrite(self, direction: int) -> None:
        passes = self._passes()
        if not passes:
            return
        index, step = self.pass_index, self.step
        for _ in range(len(passes) + 1):  # skip the passes that rewrote nothing
            index, step = _next_position(passes, index, step, direction)
            if step is not None:
                break
        self.step = step
        if index != self.pass_index:
            self.pass_index = index
            self.query_one("#pass-table", DataTable).move_cursor(row=index)
        self._show_pass()

    def action_whole_pass(self) -> None:
        self.step = None
        self._show_pass()

    def breakpoint_location(self) -> SourceRef | None:
        index = self.query_one("#diff", RowList).cursor
        if index < len(self.diff_nodes) and self.diff_nodes[index] is not None:
            return self.locations.get(self.diff_nodes[index])
        return None

    def on_row_list_row_chosen(self, message: RowList.RowChosen) -> None:
        if message.row_list.id == "diff":
            ref = self.breakpoint_location()
            if ref is not None:
                self.app.show_source(ref)


def _next_position(passes: list[PassInfo], index: int, step: int | None,
                   direction: int) -> tuple[int, int | None]:
    """The next (pass, rewrite) in reading order; passes without rewrites are skipped."""
    count = len(passes[index].rewrites)
    if direction > 0:
        if step is None:
            step = -1
        if step + 1 < count:
            return index, step + 1
        index = (index + 1) % len(passes)
        return index, 0 if passes[index].rewrites else None
    if step is not None and step > 0:
        return index, step - 1
    index = (index - 1) % len(passes)
    n = len(passes[index].rewrites)
    return index, n - 1 if n else None


def _diff_summary(diff: dict) -> str:
    parts = []
    for name in ("added", "removed", "merged", "fused", "changed"):
        n = len(diff.get(name) or ())
        if n:
            parts.append(f"{n} {name}")
    return ", ".join(parts) or "no change"

