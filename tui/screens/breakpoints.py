"""View 8, Breakpoints: every breakpoint the agent holds, with its condition, hit and
ignore counts, and a note on why it has not hit (pending, never hit, disabled because its
condition failed, kept for the next run).

``a`` (or ``B`` anywhere) adds one through the dialog, ``E`` edits the selected one's spec
(its place and condition), ``i`` its ignore count, Space enables or disables it, ``d``
deletes it, Enter shows a line breakpoint's source. The list is the agent's: it is
refreshed after every change and every pause (hit counts move); with no script running,
edits go to the list the next run starts with.
"""

from __future__ import annotations

import re

from execmode.tui.formatting import literal
from execmode.tui.records import SourceRef
from execmode.tui.screens.base import ViewScreen
from execmode.tui.screens.breakpoint_dialog import BreakpointDialog, grammar
from execmode.tui.screens.ignore_dialog import IgnoreCountDialog
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

_LOCATION = re.compile(r"^\s*(?P<file>[^\s:][^:]*):(?P<line>\d+)")


def place_of(bp: dict) -> str:
    """Where it stops: the spec without its condition ("any op" for a bare condition)."""
    if bp.get("kind") == "tensor":
        return "any op"
    return str(bp.get("spec", "")).partition(" if ")[0].strip()


def note_of(bp: dict) -> str:
    """Why it has not hit (or is off), then the parser's notes (``maxx``: a Python name)."""
    notes = [bp.get("note") or bp.get("disabled_reason") or ""] + list(bp.get("notes") or ())
    return " · ".join(n for n in notes if n)


class BreakpointsScreen(ViewScreen):
    VIEW = "breakpoints"
    BINDINGS = [
        Binding("a", "add", "Add"),
        Binding("E", "edit", "Edit condition"),
        Binding("i", "ignore", "Ignore count"),
        Binding("space", "toggle", "Enable/disable"),
        Binding("d,delete", "delete", "Delete"),
    ]

    def compose_view(self) -> ComposeResult:
        with Vertical():
            yield DataTable(id="bp-table", classes="pane", cursor_type="row", zebra_stripes=True)
            yield Static(grammar(), id="bp-grammar", classes="pane")

    def on_mount(self) -> None:
        table = self.query_one("#bp-table", DataTable)
        table.border_title = "breakpoints"
        table.add_columns("id", "on", "place", "condition", "hits", "ignore", "note")
        self.query_one("#bp-grammar").border_title = "breakpoint specs"
        if self.app.bridge is None:
            table.border_subtitle = "a recorded session: breakpoints need a live script"
        self.watch(self.app, "breakpoints", self._show)

    def _show(self, breakpoints: tuple) -> None:
        table = self.query_one("#bp-table", DataTable)
        row = table.cursor_row
        table.clear()
        for bp in breakpoints:
            on = Text("●", style="bold red") if bp.get("enabled", True) else Text("○")
            table.add_row(str(bp.get("id")), on, literal(place_of(bp)),
                          literal(bp.get("condition") or ""), str(bp.get("hits", 0)),
                          str(bp.get("ignore", 0)), literal(note_of(bp)))
        if breakpoints:
            table.move_cursor(row=min(row, len(breakpoints) - 1))

    def _selected(self) -> dict | None:
        index = self.query_one("#bp-table", DataTable).cursor_row
        bps = self.app.breakpoints
        return bps[index] if 0 <= index < len(bps) else None

    def action_add(self) -> None:
        self.app.action_breakpoint_dialog()

    def action_edit(self) -> None:
        """A new spec for the selected breakpoint: same id, enabled state, ignore count."""
        bp = self._selected()
        if bp is None:
            return

        def edited(spec: str | None) -> None:
            if spec and spec != bp.get("spec"):
                self.app.breakpoint_command("update_breakpoint", bp["id"], spec)

        self.app.push_screen(BreakpointDialog(bp.get("spec", ""),
                                              title=f"Edit breakpoint {bp.get('id')}"), edited)

    def action_ignore(self) -> None:
        bp = self._selected()
        if bp is None:
            return

        def chosen(count: int | None) -> None:
            if count is not None:
                self.app.breakpoint_command("update_breakpoint", bp["id"], None, count)

        self.app.push_screen(IgnoreCountDialog(bp), chosen)

    def action_toggle(self) -> None:
        bp = self._selected()
        if bp is not None:
            self.app.breakpoint_command("enable_breakpoint", bp["id"],
                                        not bp.get("enabled", True))

    def action_delete(self) -> None:
        bp = self._selected()
        if bp is not None:
            self.app.breakpoint_command("clear_breakpoint", bp["id"])

    def on_data_table_row_selected(self, _message: DataTable.RowSelected) -> None:
        ref = self.breakpoint_location()
        if ref is not None:
            self.app.show_source(ref)

    def breakpoint_location(self) -> SourceRef | None:
        bp = self._selected()
        m = _LOCATION.match(bp.get("spec", "")) if bp else None
        return SourceRef(m["file"], int(m["line"])) if m else None
