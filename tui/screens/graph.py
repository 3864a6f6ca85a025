"""View 3, Graph: every jitted function, its signatures and segments, the IR of the
selected one (as traced, or lowered with ``l``), and the retrace log with reasons.

Enter on an IR line opens that node's source line in the Ops view; ``b`` sets a
breakpoint there.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.tui import formatting as fmt
from execmode.tui.data import SessionReader
from execmode.tui.ir_diff import node_locations, parse_ir
from execmode.tui.lines import TextLines, ir_text
from execmode.tui.records import GraphInfo, RetraceInfo, SourceRef, TraceInfo
from execmode.tui.screens.base import StoreView
from execmode.tui.widgets.row_list import RowList
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static


class GraphData(NamedTuple):
    graphs: list[GraphInfo]           # one per graph id, in order of first compile
    traces: dict[str, TraceInfo]      # graph id -> its first trace
    retraces: list[RetraceInfo]
    t0_ns: int


def load_graphs(reader: SessionReader) -> GraphData:
    graphs: dict[str, GraphInfo] = {}
    for g in reader.graphs():
        graphs.setdefault(g.graph_id, g)
    traces: dict[str, TraceInfo] = {}
    for t in reader.traces():
        traces.setdefault(t.graph_id, t)
    return GraphData(list(graphs.values()), traces, reader.retraces(),
                     reader.overview().t0_ns)


class GraphScreen(StoreView):
    VIEW = "graph"
    BINDINGS = [Binding("l", "toggle_lowered", "Traced/lowered")]

    def __init__(self) -> None:
        super().__init__()
        self.data: GraphData | None = None
        self.entries: list[str | None] = []   # graph id per line of the graph list
        self.lowered = False
        self.graph: GraphInfo | None = None
        self.ir_nodes: list[int | None] = []
        self.locations: dict[int, SourceRef] = {}

    def compose_view(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="graph-left"):
                yield RowList(TextLines(), id="graph-list", classes="pane")
                yield RowList(TextLines(), id="retraces", classes="pane", show_cursor=False)
            with Vertical(id="graph-right"):
                yield Static(id="graph-title")
                yield RowList(TextLines(), id="ir", classes="pane")

    def on_mount(self) -> None:
        self.query_one("#graph-list").border_title = "jitted functions · segments"
        self.query_one("#retraces").border_title = "retraces · eager calls"
        self.query_one("#ir").border_title = "IR"
        super().on_mount()

    def load(self, reader: SessionReader) -> GraphData:
        return load_graphs(reader)

    def show_empty(self, why: str) -> None:
        self.query_one("#graph-list", RowList).set_source(TextLines((), why or "no graphs"))

    def show(self, data: GraphData) -> None:
        self.data = data
        lines, self.entries = [], []
        by_function: dict[str, list[GraphInfo]] = {}
        for g in data.graphs:
            by_function.setdefault(g.function, []).append(g)
        for function, graphs in by_function.items():
            lines.append(Text(f"{function}", style="bold"))
            self.entries.append(None)
            for g in graphs:
                t = data.traces.get(g.graph_id)
                lines.append(Text(f"  {g.graph_id:<12}", style="cyan") +
                             Text(f" seg {t.segment if t else '?'}  {len(g.steps)} steps  "
                                  f"{fmt.duration(g.compile_ns)}", style="dim"))
                self.entries.append(g.graph_id)
                if t is not None and t.signature:
                    lines.append(Text(f"      {t.signature}", style="dim italic"))
                    self.entries.append(g.graph_id)
        graph_list = self.query_one("#graph-list", RowList)
        keep = graph_list.cursor if self.graph is not None else 1
        graph_list.set_source(TextLines(lines, "no jitted function has run yet"),
                              cursor=min(keep, max(0, len(lines) - 1)))
        retraces = [Text(f"{(r.start_ns - data.t0_ns) / 1e9:8.3f}s ", style="dim") +
                    Text(f"{r.function}: ", style="bold") + Text(r.reason)
                    for r in data.retraces]
        self.query_one("#retraces", RowList).set_source(TextLines(retraces, "no retraces"))

    def on_row_list_cursor_moved(self, message: RowList.CursorMoved) -> None:
        if message.row_list.id != "graph-list" or self.data is None:
            return
        if message.index < len(self.entries) and self.entries[message.index] is not None:
            graph_id = self.entries[message.index]
            self.graph = next(g for g in self.data.graphs if g.graph_id == graph_id)
            self._show_ir()

    def _show_ir(self) -> None:
        g = self.graph
        if g is None:
            return
        text = g.lowered_text if self.lowered else g.ir_text
        ir = parse_ir(text)
        self.ir_nodes = [line.node for line in ir]
        self.locations = node_locations(g.lowered_json if self.lowered else g.ir_json)
        t = self.data.traces.get(g.graph_id) if self.data else None
        title = Text(f"{g.graph_id}", style="bold cyan")
        title.append(f"  {'lowered (after passes)' if self.lowered else 'as traced'}",
                     style="yellow")
        if t is not None:
            title.append(f"  {t.node_count} nodes traced  {t.signature}", style="dim")
        self.query_one("#graph-title", Static).update(title)
        lines = [ir_text(line.text, "bold" if line.node is None else "") for line in ir]
        self.query_one("#ir", RowList).set_source(TextLines(lines, "(no IR recorded)"),
                                                  cursor=0)

    def on_row_list_row_chosen(self, message: RowList.RowChosen) -> None:
        if message.row_list.id == "ir":
            ref = self._node_location(message.index)
            if ref is not None:
                self.app.show_source(ref)
            else:
                self.notify("this line has no source location", severity="warning")

    def _node_location(self, index: int) -> SourceRef | None:
        if index >= len(self.ir_nodes) or self.ir_nodes[index] is None:
            return None
        return self.locations.get(self.ir_nodes[index])

    def breakpoint_location(self) -> SourceRef | None:
        return self._node_location(self.query_one("#ir", RowList).cursor)

    def action_toggle_lowered(self) -> None:
        self.lowered = not self.lowered
        self._show_ir()
