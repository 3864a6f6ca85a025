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


class HitsFound(Message):
    """A search of list ``table`` finished: ``count`` rows match (generation ``generation``)."""

    def __init__(self, table: str, generation: int, count: int, error: str = "",
                 note: str = "") -> None:
        self.note = note  # e.g. why a NaN/Inf filter found nothing
        self.table = table
        self.generation = generation
        self.count = count
        self.error = error
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
        self._built: dict[str, int] = {}         # list -> the generation its table holds
        self._latest_find: dict[str, int] = {}  # list -> the generation asked for last
        self._generation = 0
        self.rows_read = 0  # rows this fetcher handed to Python (the tests count them)

    def find(self, table: str, query, upto_key: int, requester) -> int:
        """Search list ``table`` (in SQL, in the fetcher thread); ``requester`` gets
        :class:`HitsFound`. Returns the generation that names the result's pages: a newer
        search replaces an older one that has not started yet."""
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._latest_find[table] = generation
        self._requests.put(("find", table, query, upto_key, generation, requester))
        return generation

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

    def _find(self, reader, table, query, upto_key, generation, requester) -> None:
        if self._latest_find.get(table) != generation:
            return  # a newer search of the same list is queued: skip this one
        try:
            count = reader.find(table, query, upto_key)
        except SessionUnreadable as exc:
            requester.post_message(HitsFound(table, generation, 0, str(exc)))
            return
        self._built[table] = generation
        note = ""
        if query.nonfinite and table == "ops" and count == 0 and not reader.has_value_stats():
            note = "no value stats recorded (tui without --no-summaries, profile --summaries)"
        requester.post_message(HitsFound(table, generation, count, note=note))

    def _read_page(self, reader, table, index, page_no) -> list | None:
        """A page of a plain list (``"ops"``) or of a search result (``("ops", gen)``);
        None for a result that a newer search replaced (its rows are gone)."""
        if isinstance(table, tuple):
            name, generation = table
            if self._built.get(name) != generation:
                with self._lock:
                    self._pending.discard((table, page_no))
                return None
            return reader.page_found(name, page_no * PAGE, PAGE)
        return reader.page(table, index, page_no * PAGE, PAGE)

    def run(self, cancelled: Callable[[], bool]) -> None:
        reader = None
        try:
            while not cancelled():
                try:
                    request = self._requests.get(timeout=0.1)
                except queue.Empty:
                    continue
                if reader is None:
                    reader = SessionReader(self.path)
                if request[0] == "find":
                    self._find(reader, *request[1:])
                    continue
                table, index, page_no, requester = request
                rows = self._read_page(reader, table, index, page_no)
                if rows is None:
                    continue
                self.rows_read = reader.rows_read
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
