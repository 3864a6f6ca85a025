"""SearchBar: the one-line `/` field above a list (less's and vim's habit).

Enter submits the text, Esc closes the bar without changing anything; either way the
focus goes back to the list. The screen that owns the bar decides what the text means.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class SearchBar(Input):
    # Input's own CSS (a tall border) wins over a plain type selector: an id-level one here.
    DEFAULT_CSS = """
    SearchBar.-bar { display: none; height: 1; border: none; padding: 0 1; }
    SearchBar.-bar:focus { border: none; background: $boost; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_class("-bar")
    BINDINGS = [Binding("escape", "close", "Close", show=False)]

    class Closed(Message):
        """Esc: the bar was closed, the query stays as it was."""

    def open(self, text: str) -> None:
        self.value = text
        self.cursor_position = len(text)
        self.display = True
        self.focus()

    def close(self) -> None:
        self.display = False

    def action_close(self) -> None:
        self.close()
        self.post_message(self.Closed())
