"""View 9, Output: the script's stdout and stderr (stderr in red), following the tail.

A live run shows what the controller forwards; a recorded session shows what the store
kept. Both are RowLists: a script that prints a million lines scrolls as fast as one
that prints ten.
"""

from __future__ import annotations

from execmode.tui.lines import LiveOutput, StoredOutput
from execmode.tui.screens.base import ViewScreen
from execmode.tui.widgets.row_list import RowList
from textual.app import ComposeResult


class OutputScreen(ViewScreen):
    VIEW = "output"

    def compose_view(self) -> ComposeResult:
        yield RowList(None, follow=True, id="output", classes="pane")

    def on_mount(self) -> None:
        view = self.query_one("#output", RowList)
        view.border_title = "stdout and stderr"
        if self.app.bridge is not None:
            view.set_source(LiveOutput(self.app.output_lines))
            self.watch(self.app, "output_count", lambda _n: view.rows_changed(), init=False)
        else:
            self.watch(self.app, "snapshot", self._store_grew)
        view.focus()

    def _store_grew(self, snapshot) -> None:
        view = self.query_one("#output", RowList)
        source = view.source
        if source is None or source.pages is not self.app.pages:
            view.set_source(StoredOutput(self.app.pages, snapshot.output))
        else:
            source.grow(snapshot.output)
            view.rows_changed()
