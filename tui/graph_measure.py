"""``m`` in the Profile view: eager vs fused for every recorded graph, measured now.

The measuring runs in a child process (``python -m execmode.profilers.graph_compare``:
its eager loop would hold the GIL the UI thread needs) that reads the graphs from the
session file, so it works the same for a live run and a recorded session. This module
is the worker's side: it starts the child, turns its JSON lines into messages (progress,
then the rows), and ends the child if the worker is cancelled.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

from execmode.tui.records import Comparison
from textual.message import Message


class CompareProgress(Message):
    def __init__(self, done: int, total: int, graph: str) -> None:
        self.done = done
        self.total = total
        self.graph = graph
        super().__init__()


class CompareMeasured(Message):
    """Every graph measured: the rows, and the graphs skipped with why."""

    def __init__(self, rows: list[Comparison], skipped: list[tuple[str, str]],
                 error: str = "") -> None:
        self.rows = rows
        self.skipped = skipped
        self.error = error
        super().__init__()


def measure_session(session_path: str, post: Callable[[Message], object],
                    cancelled: Callable[[], bool], repeat: int = 5) -> None:
    """Run the child on ``session_path``; post :class:`CompareProgress` per graph and one
    :class:`CompareMeasured` at the end."""
    command = [sys.executable, "-m", "execmode.profilers.graph_compare", session_path,
               "--repeat", str(repeat)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True)
    rows: list[Comparison] = []
    skipped: list[tuple[str, str]] = []
    try:
        for line in child.stdout:
            if cancelled():
                break
            try:
                news = json.loads(line)
            except ValueError:
                continue
            if "progress" in news:
                post(CompareProgress(news["progress"], news["total"], news["graph"]))
            elif "skipped" in news:
                skipped.append((news["graph"], news["skipped"]))
            elif "rows" in news:
                rows += [_comparison(news.get("function", "?"), r, news.get("repeat", repeat),
                                     news.get("rounds"))
                         for r in news["rows"]]
    finally:
        if child.poll() is None and cancelled():
            child.kill()
        child.wait()
    error = ""
    if child.returncode:
        error = (child.stderr.read().strip().splitlines() or ["failed"])[-1]
    child.stderr.close()
    child.stdout.close()
    post(CompareMeasured(rows, skipped, error))


def _comparison(function: str, r: dict, repeat: int, rounds: int | None = None) -> Comparison:
    # The store's row type, as em.compare records it: eager_count is the ops it replaced.
    eager_ops = list(r["eager_ops"])
    cell = r.get("cell")  # the row's verdict as a table cell ("removed": none)
    return Comparison(function, str(r["graph_id"]), str(r["kernel"]), str(r["step_kind"]),
                      eager_ops, len(eager_ops), int(r["eager_ns"]), int(r["kernel_ns"]),
                      int(r["eager_bytes"]), int(r["planned_bytes"]), int(repeat),
                      rounds, None if cell in (None, "removed") else str(cell))
