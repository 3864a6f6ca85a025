"""View 6, Kernels: every step of every compiled plan — fused kernels first — with its
member ops in order, the generated C/CUDA source (highlighted), its compile time and
whether the compile came from the cache, and how often and how long it ran.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.tui import formatting as fmt
from execmode.tui.data import SessionReader
from execmode.tui.formatting import literal
from execmode.tui.ir_diff import node_locations
from execmode.tui.records import CompileInfo, SourceRef
from execmode.tui.screens.base import StoreView
from execmode.tui.source_cache import THEME
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Static


class KernelEntry(NamedTuple):
    graph_id: str
    name: str
    kind: str
    backend: str
    member_nodes: list
    member_ops: list
    calls: int
    total_ns: int
    compile: CompileInfo | None
    locations: dict           # member node id -> SourceRef


def load_kernels(reader: SessionReader) -> list[KernelEntry]:
    runs = {(k.graph_id, k.kernel): k for k in reader.kernel_totals()}
    compiles: dict = {}
    for c in reader.compiles():  # the plan's own compile first; a program may reuse names
        compiles.setdefault((c.graph_id, c.kernel), c)
    seen, out = set(), []
    for g in reader.graphs():
        locations = node_locations(g.lowered_json)
        for step in g.steps:
            key = (g.graph_id, str(step.get("name", "?")))
            if key in seen:
                continue
            seen.add(key)
            run = runs.get(key)
            out.append(KernelEntry(
                g.graph_id, key[1], str(step.get("kind", "")), str(step.get("backend", "")),
                list(step.get("members") or ()), list(step.get("ops") or ()),
                run.calls if run else 0, run.total_ns if run else 0, compiles.get(key),
                locations))
    for key, run in runs.items():  # steps whose graph event is missing
        if key not in seen:
            out.append(KernelEntry(run.graph_id, run.kernel, run.step_kind, "", [],
                                   run.member_ops, run.calls, run.total_ns,
                                   compiles.get(key), {}))
    out.sort(key=lambda e: (e.kind != "fused",))
    return out


class KernelsScreen(StoreView):
    VIEW = "kernels"

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[KernelEntry] = []

    def compose_view(self) -> ComposeResult:
        with Horizontal(id="kernels-main"):
            yield DataTable(id="kernel-table", classes="pane", cursor_type="row",
                            zebra_stripes=True)
            with Vertical(id="kernel-right"):
                yield Static(id="kernel-members", classes="pane")
                with VerticalScroll(id="kernel-source-box", classes="pane"):
                    yield Static(id="kernel-source")

    def on_mount(self) -> None:
        table = self.query_one("#kernel-table", DataTable)
        table.border_title = "compiled steps"
        table.add_columns("graph", "kernel", "kind", "ops", "calls", "time", "compile", "cache")
        self.query_one("#kernel-members").border_title = "member ops (in order)"
        self.query_one("#kernel-source-box").border_title = "generated source"
        super().on_mount()

    def load(self, reader: SessionReader) -> list[KernelEntry]:
        return load_kernels(reader)

    def show_empty(self, why: str) -> None:
        self.query_one("#kernel-members", Static).update(Text(why, style="dim"))

    def show(self, entries: list[KernelEntry]) -> None:
        self.entries = entries
        table = self.query_one("#kernel-table", DataTable)
        row = table.cursor_row
        table.clear()
        for e in entries:
            c = e.compile
            cache = "-" if c is None or c.cache_hit is None else ("hit" if c.cache_hit else "miss")
            table.add_row(literal(e.graph_id), literal(e.name), e.kind, str(len(e.member_ops)), str(e.calls),
                          fmt.duration(e.total_ns), fmt.duration(c.compile_ns) if c else "-",
                          cache)
        if not entries:
            self.show_empty("no compiled graph has run yet")
            return
        table.move_cursor(row=min(row, len(entries) - 1))
        self._show_entry(table.cursor_row)

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        self._show_entry(message.cursor_row)

    def _show_entry(self, index: int) -> None:
        if not 0 <= index < len(self.entries):
            return
        e = self.entries[index]
        text = Text(f"{e.name}", style="bold")
        text.append(f"  {e.kind} on {e.backend or '?'}", style="magenta")
        if e.calls:
            text.append(f"  ran {e.calls}× for {fmt.duration(e.total_ns)} "
                        f"({fmt.duration(e.total_ns / e.calls)} each)", style="green")
        nodes = e.member_nodes or [None] * len(e.member_ops)
        for node, op in zip(nodes, e.member_ops):
            loc: SourceRef | None = e.locations.get(node) if node is not None else None
            text.append(f"\n  %{node if node is not None else '?':<4} {op:<14}")
            if loc is not None:
                text.append(f" {loc.short}", style="cyan")
        self.query_one("#kernel-members", Static).update(text)
        source = self.query_one("#kernel-source", Static)
        c = e.compile
        if c is not None and c.source:
            lexer = "cuda" if c.language.lower() in ("cuda", "cu") else "c"
            source.update(Syntax(c.source, lexer, theme=THEME, line_numbers=True,
                                 background_color="default"))
            box = self.query_one("#kernel-source-box")
            shared = f" with {c.shared_by - 1} other kernel(s), one unit" \
                if c.shared_by > 1 else ""
            box.border_title = (f"generated {c.language or 'source'} · compiled in "
                                f"{fmt.duration(c.compile_ns)}{shared}")
        else:
            why = ("a library call (BLAS): no generated source" if e.kind == "library" else
                   "no generated source recorded for this step (it runs as a NumPy op, or "
                   "the kernel compiler did not record it)")
            source.update(Text(why, style="dim"))
