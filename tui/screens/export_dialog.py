"""The export dialog (``e``): a file name, and the formats it can end with.

The format follows the name's ending, as ``execmode report`` reads it; choosing a format
in the list rewrites the ending. Enter writes the file (in a worker: a big session's
HTML report takes seconds), Esc closes. Small enough for 80x24.
"""

from __future__ import annotations

from execmode.tui.export import FORMATS, LABEL, format_of, with_format
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option


class ExportDialog(ModalScreen[str | None]):
    """Dismissed with the path to write, or None."""

    BINDINGS = [Binding("escape", "cancel", "Close")]

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Static("[b]Export the session[/]  (Enter writes · ↓ formats · Esc closes)",
                         id="export-title")
            yield Input(self.path, id="export-path")
            yield Static(id="export-format")
            yield OptionList(*(Option(f"{label:<26} {suffix}", id=fmt)
                               for fmt, suffix, label in FORMATS), id="export-formats")

    def on_mount(self) -> None:
        field = self.query_one("#export-path", Input)
        field.focus()
        field.cursor_position = len(field.value)
        self._describe(field.value)

    def on_input_changed(self, message: Input.Changed) -> None:
        self._describe(message.value)

    def _describe(self, path: str) -> None:
        fmt = format_of(path)
        text = f"→ {LABEL[fmt]}" if fmt in LABEL else \
            "[red]end the name with one of the endings below[/]"
        self.query_one("#export-format", Static).update(text)

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        field = self.query_one("#export-path", Input)
        field.value = with_format(field.value, message.option.id)
        field.cursor_position = len(field.value)
        field.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        if format_of(message.value) is None:
            self.notify("end the name with a report format (the list shows them)",
                        severity="warning")
            return
        self.dismiss(message.value.strip())

    def on_key(self, event) -> None:
        """↓ in the name field goes to the format list, on its first format."""
        if event.key == "down" and self.query_one("#export-path", Input).has_focus:
            event.stop()
            event.prevent_default()
            formats = self.query_one("#export-formats", OptionList)
            formats.focus()
            formats.highlighted = 0

    def action_cancel(self) -> None:
        self.dismiss(None)
