"""The Ops view's search, filters and sort: what narrows the op (or kernel) history.

``/`` opens a one-line bar (see :mod:`execmode.tui.op_query` for what it reads), ``!``
keeps only ops whose output holds a NaN or an Inf, ``o`` cycles the order (as run,
slowest first, most bytes first). The search runs in SQL in the page fetcher's thread
(:meth:`PageFetcher.find`): the UI thread waits for nothing, and the list then pages the
result by position as it pages the whole history. The op the script is paused before is
not in the store; it stays the list's last row whatever the query, so the paused row is
always in the list and the cursor goes to it at each pause.
"""

from __future__ import annotations

import time

from execmode.tui.formatting import literal
from execmode.tui.op_query import NO_QUERY, OpQuery, QueryError, parse
from execmode.tui.pages import HitsFound
from execmode.tui.widgets.row_list import RowList
from execmode.tui.widgets.search_bar import SearchBar
from execmode.tui.widgets.text_pane import TextPane
from textual.widgets import Input

REFIND_S = 1.0  # while a script runs, a filtered list is searched again at most this often


class OpFilterMixin:
    """Mixed into OpsScreen (which has ``list_kind``, ``_lines`` and the widgets)."""

    op_query: OpQuery = NO_QUERY
    _found: tuple[int, int] | None = None   # (generation, count) shown
    _asked: int | None = None               # the generation being searched
    _asked_at = 0.0
    _refind_timer = None
    _note = ""                              # what the fetcher said about the result

    # --- keys -----------------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one("#op-search", SearchBar).open(self.op_query.to_text())

    def action_toggle_nonfinite(self) -> None:
        self.apply_query(self.op_query.with_(nonfinite=not self.op_query.nonfinite))

    def action_cycle_sort(self) -> None:
        self.apply_query(self.op_query.next_sort())

    def on_input_submitted(self, message: Input.Submitted) -> None:
        if message.input.id != "op-search":
            return
        message.stop()
        try:
            query = parse(message.value)
        except QueryError as exc:
            self.notify(str(exc), title="search", severity="warning")
            return
        self.query_one("#op-search", SearchBar).close()
        self.query_one("#op-list", RowList).focus()
        self.apply_query(query)

    def on_search_bar_closed(self, _message: SearchBar.Closed) -> None:
        self.query_one("#op-list", RowList).focus()

    # --- running the search ---------------------------------------------------------------
    def apply_query(self, query: OpQuery) -> None:
        self.op_query = query
        self._found = None
        self._asked = None
        if query.active:
            self.find()
        self.show_list(cursor=None if query.active else -1)

    def find(self) -> None:
        """Search the list's table as far as the snapshot goes (the fetcher's thread)."""
        pages = self.app.pages
        if pages is None or not self.op_query.active:
            return
        index = self.app.snapshot.kernels if self.list_kind == "kernels" else \
            self.app.snapshot.ops
        self._asked = pages.find(self.list_kind, self.op_query, index.last_key, self)
        self._asked_at = time.monotonic()
        self.show_title()

    def refind_soon(self) -> None:
        """The store grew under a filtered list: search again, at most once a second."""
        if not self.op_query.active or self._refind_timer is not None:
            return
        wait = REFIND_S - (time.monotonic() - self._asked_at)
        if wait <= 0:
            self.find()
            return

        def later() -> None:
            self._refind_timer = None
            self.find()

        self._refind_timer = self.set_timer(wait, later)

    def on_hits_found(self, message: HitsFound) -> None:
        message.stop()
        if message.generation != self._asked or message.table != self.list_kind:
            return  # an older search, or the other list's
        if message.error:
            self.notify(message.error, title="search", severity="error")
        first = self._found is None
        self._note = message.note
        self._found = (message.generation, message.count)
        self._asked = None
        if first:  # a new query: the best row (sorted) or the latest (in order)
            self.show_list(cursor=0 if self.op_query.sort != "seq" else -1)
        else:      # the same query over a grown store: the cursor stays (or follows)
            op_list = self.query_one("#op-list", RowList)
            op_list.source.found = self._found
            op_list.source.grow(self._index())
            op_list.rows_changed()
        self.show_title()

    def _index(self):
        return self.app.snapshot.kernels if self.list_kind == "kernels" else \
            self.app.snapshot.ops

    def found_for_list(self) -> tuple[int, int] | None:
        """What the list should page: the search result, or None for the whole history."""
        return self._found if self.op_query.active else None

    def show_list(self, cursor: int | None) -> None:
        op_list = self.query_one("#op-list", RowList)
        lines = self._lines()
        if cursor is not None and cursor < 0:
            cursor = max(0, len(lines) - 1)
        op_list.set_source(lines, cursor=cursor)
        if not len(lines) and self.op_query.active and self._found is not None:
            self.query_one("#op-detail", TextPane).show(
                "nothing matches · / edits the search, an empty line shows every op")
        self.show_title()

    def show_title(self) -> None:
        """The list pane's title: what it shows and how much of the history that is."""
        total = self._index().count
        name = "kernels" if self.list_kind == "kernels" else "ops"
        pane = self.query_one("#ops-left")
        if not self.op_query.active:
            pane.border_title = f"{name} · {total:,}  (/ search)"
            return
        if self._found is None or self._asked is not None and self._found is None:
            shown = "searching…"
        else:
            shown = f"{self._found[1]:,} of {total:,}"
        note = f" · {self._note}" if self._note else ""
        if self.op_query.nonfinite and self.list_kind == "kernels":
            note = " · NaN/Inf: ops only"
        pane.border_title = literal(f"{name} · {shown} · {self.op_query.describe()}{note}")
