"""The store tailer: a worker that watches a session file grow and says so.

It waits for the file to appear (the agent creates it when the script starts), then checks
``PRAGMA data_version`` every 100 ms — a counter read, no table scan — and, when another
connection committed, extends its row indexes and posts a :class:`StoreGrew` with the new
snapshot. A pause or the end of the script pokes it so the views catch up at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from execmode.tui.data import SessionReader, SessionUnreadable
from execmode.tui.messages import StoreGrew, StoreUnreadable
from execmode.tui.records import EMPTY_SNAPSHOT

POLL_S = 0.1


class EarlySnapshot:
    """A recorded session's first snapshot, read by a thread that ``execmode open`` starts
    before it imports Textual: the row index of a 1M-op session (~0.2 s of SQLite, which
    releases the GIL) then overlaps the TUI's imports instead of following them."""

    def __init__(self, path: str):
        self.path = path
        self._snapshot = None
        self._done = threading.Event()
        threading.Thread(target=self._read, name="execmode-early-snapshot",
                         daemon=True).start()

    def _read(self) -> None:
        try:
            with SessionReader(self.path) as reader:
                self._snapshot = reader.snapshot()
        except Exception:  # noqa: BLE001 - the tailer reads the file again and says why
            self._snapshot = None
        finally:
            self._done.set()

    def take(self):
        """The snapshot (waiting for the thread), or None when it could not be read."""
        self._done.wait()
        return self._snapshot


class StoreTailer:
    def __init__(self, path: str, post: Callable, interval: float = POLL_S,
                 early: EarlySnapshot | None = None):
        self.path = path
        self.post = post
        self.interval = interval
        self.early = early
        self._wake = threading.Event()

    def poke(self) -> None:
        """Look now (the agent flushed before pausing)."""
        self._wake.set()

    def run(self, cancelled: Callable[[], bool]) -> None:
        reader = None
        snapshot = EMPTY_SNAPSHOT
        first = self.early.take() if self.early is not None else None
        if first is not None:  # read while Textual loaded: the rest extends it
            snapshot = first
            self.post(StoreGrew(self.path, snapshot))
        try:
            while not cancelled():
                if reader is None and os.path.exists(self.path):
                    reader = SessionReader(self.path)
                if reader is not None and reader.changed():
                    new = reader.snapshot(snapshot)
                    if new != snapshot or snapshot is EMPTY_SNAPSHOT:
                        snapshot = new
                        self.post(StoreGrew(self.path, snapshot))
                self._wake.wait(self.interval)
                self._wake.clear()
        except SessionUnreadable as exc:
            self.post(StoreUnreadable(self.path, str(exc)))
        finally:
            if reader is not None:
                reader.close()
