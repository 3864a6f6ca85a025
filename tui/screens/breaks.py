"""View 4, Breaks: every graph break (reason, op, source line, how often), and the eager
ops that ran between the segments on either side of the selected one, with timings.

Enter opens the break's line in the Ops view's source pane.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.tui import formatting as fmt
from execmode.tui.data import SessionReader
from execmode.tui.formatting import literal
from execmode.tui.lines import TextLines
from execmode.tui.records import BreakInfo, OpRow, SourceRef
from execmode.tui.screens.base import StoreView
from execmode.tui.widgets.row_list import RowList
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static


class BreakGroup(NamedTuple):
    first: BreakInfo
    count: int
    between: list[OpRow]     # eager ops after the first occurrence, before the next segment


def load_breaks(reader: SessionReader) -> list[BreakGroup]:
    groups: dict[tuple, list[BreakInfo]] = {}
    for b in reader.breaks():
        key = (b.function, b.graph_id, b.reason, b.op, b.location)
        groups.setdefault(key, []).append(b)
    out = []
    for items in groups.values():
        first = items[0]
        prefix = first.graph_id.rsplit(":", 1)[0]
        end = reader.first_kernel_start(f"{prefix}:{first.segment_after}", first.start_ns)
        out.append(BreakGroup(first, len(items), reader.ops_between(first.start_ns, end)))
    return out


class BreaksScreen(StoreView):
    VIEW = "breaks"

    def __init__(self) -> None:
        super().__init__()
        self.groups: list[BreakGroup] = []

    def compose_view(self) -> ComposeResult:
        with Vertical():
            yield DataTable(id="breaks-table", classes="pane", cursor_type="row",
                            zebra_stripes=True)
            yield Static(id="break-detail")
            yield RowList(TextLines(), id="between", classes="pane", show_cursor=False)

    def on_mount(self) -> None:
        table = self.query_one("#breaks-table", DataTable)
        table.border_title = "graph breaks (Enter: show the line)"
        table.add_columns("function", "reason", "op", "line", "segments", "times")
        self.query_one("#between").border_title = "eager ops between the segments"
        super().on_mount()

    def load(self, reader: SessionReader) -> list[BreakGroup]:
        return load_breaks(reader)

    def show_empty(self, why: str) -> None:
        self.query_one("#break-detail", Static).update(Text(why, style="dim"))

    def show(self, groups: list[BreakGroup]) -> None:
        self.groups = groups
        table = self.query_one("#breaks-table", DataTable)
        row = table.cursor_row
        table.clear()
        for g in groups:
            b = g.first
            table.add_row(*map(literal, (b.function, b.reason, b.op,
                                        b.location.short if b.location else "?")),
                          f"{b.segment_before} → {b.segment_after}", f"×{g.count}")
        if not groups:
            self.query_one("#break-detail", Static).update(
                Text("no graph breaks: every jitted function ran as whole graphs",
                     style="dim"))
            self.query_one("#between", RowList).set_source(TextLines())
            return
        table.move_cursor(row=min(row, len(groups) - 1))
        self._show_group(table.cursor_row)

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        self._show_group(message.cursor_row)

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        ref = self.breakpoint_location()
        if ref is not None:
            self.app.show_source(ref)

    def _show_group(self, index: int) -> None:
        if not 0 <= index < len(self.groups):
            return
        g = self.groups[index]
        b = g.first
        detail = Text(f"{b.function}", style="bold")
        detail.append(f" broke in segment {b.segment_before} ({b.graph_id}): ")
        detail.append(b.reason, style="yellow")
        detail.append(f"  at {b.location.short if b.location else '?'}", style="cyan")
        detail.append(f"  op {b.op}", style="dim")
        self.query_one("#break-detail", Static).update(detail)
        lines = []
        for op in g.between:
            text = Text(f"{op.op:<14}", style="bold")
            text.append(f" {op.output:<16} {fmt.duration(op.dur_ns):>9}", style="green")
            text.append(f"  {fmt.where(op.file, op.line)}", style="cyan")
            lines.append(text)
        total = sum(op.dur_ns for op in g.between)
        if lines:
            lines.append(Text(f"{len(g.between)} eager ops, {fmt.duration(total)}",
                              style="bold"))
        self.query_one("#between", RowList).set_source(
            TextLines(lines, "no eager ops ran between these segments"))

    def breakpoint_location(self) -> SourceRef | None:
        index = self.query_one("#breaks-table", DataTable).cursor_row
        if 0 <= index < len(self.groups):
            return self.groups[index].first.location
        return None
