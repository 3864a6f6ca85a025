"""The help screen (``?``): every key, app-wide and per view, read from the bindings."""

from __future__ import annotations

from execmode.tui import keys
from execmode.tui.views import VIEWS
from execmode.tui.widgets.row_list import RowList
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def key_table() -> Table:
    from execmode.tui.screens import screen_class

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold yellow", no_wrap=True, min_width=10)
    table.add_column()
    table.add_row(Text("debugger", style="bold underline"), "")
    for k in keys.DEBUGGER_KEYS:
        table.add_row(keys.display(k.key), k.description)
    table.add_row("ctrl+p", "command palette: every view and command by name")
    table.add_row("", "")
    table.add_row(Text("views", style="bold underline"), "")
    for v in VIEWS:
        table.add_row(v.key, f"{v.title}: {v.about}")
    for v in VIEWS:
        bindings = [b for b in screen_class(v.name).BINDINGS  # app keys shown again: listed above
                    if isinstance(b, Binding) and not b.action.startswith("app.")]
        if bindings:
            table.add_row("", "")
            table.add_row(Text(f"in {v.title}", style="bold underline"), "")
            for b in bindings:
                table.add_row(", ".join(keys.display(k) for k in b.key.split(",")),
                              b.description)
    table.add_row("", "")
    table.add_row(Text("lists", style="bold underline"), "")
    for b in RowList.BINDINGS:
        table.add_row(keys.display(b.key), b.description)
    table.add_row("tab", "next pane · the mouse clicks, scrolls and double-clicks too")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(key_table())

    def on_mount(self) -> None:
        self.query_one("#help-box").border_title = "execmode keys (Esc closes)"

    def action_close(self) -> None:
        self.dismiss(None)
