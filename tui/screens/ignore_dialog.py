"""The ignore-count dialog (``i`` in the Breakpoints view): how many hits to skip.

pdb's ``ignore BPNUMBER COUNT``: the breakpoint stops only once it has been hit more
than COUNT times (hits are counted per run, and the count carries over to a restart).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


def parse_ignore(text: str) -> int:
    """A whole number >= 0; ValueError with the reason otherwise."""
    try:
        count = int(text.strip())
    except ValueError:
        raise ValueError(f"not a whole number: {text.strip()!r}") from None
    if count < 0:
        raise ValueError("an ignore count cannot be negative")
    return count


class IgnoreCountDialog(ModalScreen[int | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, bp: dict) -> None:
        super().__init__()
        self.bp = bp

    def compose(self) -> ComposeResult:
        bp = self.bp
        with Vertical(id="ignore-dialog"):
            yield Static(Text.assemble(
                ("Ignore count", "bold"), f" of breakpoint {bp.get('id')} ({bp.get('spec')}): "
                f"skip this many hits, then stop  (hit {bp.get('hits', 0)} times so far; "
                "Enter to set, Esc to cancel)"), id="ignore-title")
            yield Input(str(bp.get("ignore", 0)), id="ignore-input")
            yield Static(id="ignore-error")

    def on_mount(self) -> None:
        self.query_one("#ignore-input", Input).focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        try:
            count = parse_ignore(message.value)
        except ValueError as exc:
            self.query_one("#ignore-error", Static).update(Text(str(exc), style="red"))
            return
        self.dismiss(count)

    def action_cancel(self) -> None:
        self.dismiss(None)
