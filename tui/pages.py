"""Pages of store rows, read in a worker thread: the UI thread never waits on SQLite.

Measured: while the agent commits thousands of rows a second, a read in the UI thread can
stall for 100 ms and more (SQLite's busy handler sleeps while the writer holds the WAL
lock). So a list asks :meth:`PageFetcher.get` for a page; it gets the rows if they are
cached, else None at once, and the fetcher thread reads the page and posts
:class:`RowsLoaded` to the list, which redraws.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Callable

from execmode.tui.data import SessionReader, SessionUnreadable
from execmode.tui.records import RowIndex
from textual.message import Message

PAGE = 64
_PAGES_KEPT = 256


class RowsLoaded(Message):
    """Rows ``start .. start+count`` of a list's source can now be drawn."""

    def __init__(self, start: int, count: int) -> None:
        self.start = start
        self.count = count
        super().__init__()


class PageFetcher:
    """A cache of store pages, filled by :meth:`run` (a worker thread) on request."""

    def __init__(self, path: str):
        self.path = path
        self.error: str | None = None
        self._cache: OrderedDict[tuple, list] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: set[tuple] = set()
        self._requests: queue.Queue = queue.Queue()

    def get(self, table: str, index: RowIndex, page_no: int, requester=None) -> list | None:
        """The rows of page ``page_no`` if read already (complete for ``index``); else
        None, and the page is read soon (``requester`` gets :class:`RowsLoaded`)."""
        key = (table, page_no)
        wanted = min(PAGE, index.count - page_no * PAGE)
        with self._lock:
            rows = self._cache.get(key)
            if rows is not None and len(rows) >= wanted:
                self._cache.move_to_end(key)
                return rows
            if key in self._pending:
                return rows  # a shorter page: fine to draw while the rest arrives
            self._pending.add(key)
        self._requests.put((table, index, page_no, requester))
        return rows

    def run(self, cancelled: Callable[[], bool]) -> None:
        reader = None
        try:
            while not cancelled():
                try:
                    table, index, page_no, requester = self._requests.get(timeout=0.1)
                except queue.Empty:
                    continue
                if reader is None:
                    reader = SessionReader(self.path)
                rows = reader.page(table, index, page_no * PAGE, PAGE)
                with self._lock:
                    self._cache[(table, page_no)] = rows
                    self._pending.discard((table, page_no))
                    while len(self._cache) > _PAGES_KEPT:
                        self._cache.popitem(last=False)
                if requester is not None:
                    requester.post_message(RowsLoaded(page_no * PAGE, len(rows)))
        except SessionUnreadable as exc:
            self.error = str(exc)
        finally:
            if reader is not None:
                reader.close()
