"""The input line: the script reads stdin (``input()``) and waits for the person.

Under the TUI the script's stdin is a pipe (the TUI owns the keyboard); the agent says
when a read is about to wait, with the prompt the script printed, and this line appears
at the bottom. Enter sends the line (with its newline) to the script's stdin, ctrl+d
sends end-of-file (``input()`` raises EOFError, a ``for line in sys.stdin`` loop ends),
Esc hides the line (the palette's "Type a line for the script's stdin" brings it back).
"""

from __future__ import annotations

from execmode.tui.formatting import literal
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

# What the dialog answers: a line to send, EOF, or nothing (hidden).
EOF = "\x04"


class StdinDialog(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "hide", "Hide"),
                # priority: the Input's own ctrl+d (delete right) must not take it.
                Binding("ctrl+d", "end_of_file", "End of file", show=False, priority=True)]

    def __init__(self, prompt: str = "") -> None:
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical(id="stdin-dialog"):
            yield Static(Text.assemble(("The script reads stdin", "bold"),
                                       "  (Enter sends the line · ctrl+d end of file · "
                                       "Esc hides)"), id="stdin-title")
            yield Input(placeholder=self.prompt.strip() or "a line for the script",
                        id="stdin-input")

    def on_mount(self) -> None:
        field = self.query_one("#stdin-input", Input)
        field.border_title = literal(self.prompt.strip()) if self.prompt.strip() else None
        field.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(message.value)

    def action_end_of_file(self) -> None:
        self.dismiss(EOF)

    def action_hide(self) -> None:
        self.dismiss(None)
