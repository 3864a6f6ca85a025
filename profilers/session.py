"""Reading a session file: rows, aggregates and a summary, for exporters, reports and
``em.profile``. Its rows and their SQL are :mod:`~execmode.profilers.store_queries`', which
the TUI's reader shares.

    with open_session("run.emsession") as s:
        print(s.summary()["ops"], s.op_totals()[:5])

Opened read-only, so it can tail a file that a recording process is still writing (each
query sees the rows committed when it starts) or read one whose writer was killed.
Every SQLite failure becomes a :class:`SessionError` naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from execmode.profilers import session_end, store, store_queries
from execmode.profilers.errors import SessionError
from execmode.profilers.profiler_cost import profiler_cost

# The row types live with the queries that build them (store_rows.py); named here too for
# code that has always imported them from the Session's module.
from execmode.profilers.store_rows import (  # noqa: F401
    Comparison,
    EventRow,
    KernelRow,
    MemoryRow,
    OpRow,
    OpTotal,
    OutputRow,
    StackSample,
)


def open_session(path: str | os.PathLike) -> Session:
    """Open a session file for reading (raises SessionError with the reason if it can't)."""
    return Session(path)


class Session:
    """A read-only view of one session file."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._conn, self.schema_version = store.connect_reader(self.path)
        self.meta = self._read_meta()

    # --- plumbing -------------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def _query(self, sql: str, params=()) -> list:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise store.damaged(self.path, exc) from None

    def _iterate(self, sql: str, params=(), size: int = 5000) -> Iterator[tuple]:
        # Rows in chunks, so a 1M-op session streams instead of loading at once.
        try:
            cursor = self._conn.execute(sql, params)
            while True:
                chunk = cursor.fetchmany(size)
                if not chunk:
                    return
                yield from chunk
        except sqlite3.DatabaseError as exc:
            raise store.damaged(self.path, exc) from None

    def _json(self, text, kind: type, table: str, row_id, column: str):
        """A JSON column's value; text that is not JSON of the expected kind is refused
        naming the row (a report must not quietly leave out what it cannot read)."""
        try:
            value = json.loads(text) if text else kind()
        except (ValueError, TypeError):
            value = None
        if not isinstance(value, kind):
            shown = repr(text) if len(repr(text)) <= 60 else repr(text)[:57] + "..."
            raise SessionError(f"{self.path}: {table} row {row_id}: {column} is not a JSON "
                               f"{'array' if kind is list else 'object'} ({shown})")
        return value

    def _json_list(self, text, table: str, row_id, column: str) -> list:
        return self._json(text, list, table, row_id, column)

    def _read_meta(self) -> dict:
        return store.read_meta(self._conn, self.path)

    def refresh(self) -> None:
        """Re-read meta (a live session gains its end stamps and exit status)."""
        self.meta = self._read_meta()

    # --- facts ----------------------------------------------------------------------------
    @property
    def t0_ns(self) -> int:
        """The session's start on the recording clock; timestamps are relative to it."""
        t0 = self.meta.get("t0_ns")
        if isinstance(t0, int):
            return t0
        return store_queries.first_op_start(self._query) or 0

    def end_ns(self) -> int:
        end = self.meta.get("end_ns")
        if isinstance(end, int):
            return end
        return store_queries.last_timestamp(self._query) or self.t0_ns

    @property
    def status(self) -> str:
        """Whether the recording was closed: "finished" (closed by the recording process),
        "recording" (the writer is alive) or "interrupted" (it died first). How the
        *script* ended is :attr:`end`."""
        end = self.meta.get("end")
        if isinstance(end, dict) and end.get("closed_by") == session_end.BY_STARTER:
            return "interrupted"  # its process died; the starter wrote how (session_end.py)
        exit_ = self.meta.get("exit")
        if isinstance(exit_, dict) and exit_.get("closed_by"):
            return "interrupted"  # the same, written by an execmode from before "end"
        if "end_ns" in self.meta or exit_ is not None or end is not None:
            return "finished"
        return "recording" if session_end.writer_is_alive(self.meta) else "interrupted"

    @property
    def end(self) -> session_end.SessionEnd:
        """How the script ended (session_end.py): finished, raised, stopped at a
        breakpoint, killed, crashed ...; "unknown" when the file does not say, never
        "finished"."""
        return session_end.from_meta(self.meta)

    def count(self, table: str) -> int:
        return store_queries.row_count(self._query, table)

    # --- rows -----------------------------------------------------------------------------
    def ops(self, after_seq: int | None = None, limit: int | None = None) -> Iterator[OpRow]:
        """Eager ops in order; ``after_seq`` tails a live session from a known point."""
        sql, params = store_queries.ops_sql(self.schema_version, after_seq, limit)
        for row in self._iterate(sql, params):
            yield store_queries.op_row(row)

    def kernels(self) -> Iterator[KernelRow]:
        for row in self._iterate(store_queries.KERNELS_SQL):
            yield store_queries.kernel_row(row, self._json_list)

    def events(self, kind: str | None = None) -> list[EventRow]:
        return [EventRow(*row[:5], self._json(row[5], dict, "events", row[0], "data"))
                for row in store_queries.events(self._query, kind)]

    def event_counts(self) -> dict[str, int]:
        return store_queries.event_counts(self._query)

    def memory(self) -> list[MemoryRow]:
        return store_queries.memory(self._query)

    def peak_memory(self, by_source: bool = False) -> dict:
        """{device: peak live bytes} over the whole session; with ``by_source``,
        {(device, source): bytes} (source: "eager", "graph" or "pool")."""
        return store_queries.peak_memory(self._query, by_source)

    def samples(self) -> list[StackSample]:
        return store_queries.samples(self._query)

    def category_totals(self) -> dict[str, int]:
        """{category: samples} from py-spy (empty when it did not run)."""
        return store_queries.category_totals(self._query)

    def output(self) -> list[OutputRow]:
        return store_queries.outputs(self._query)

    def kernel_sums(self) -> list[dict]:
        """The kernel clock's sums: one dict per step of each compiled plan that ran."""
        return store_queries.kernel_sums(self._query, self._json_list)

    def graph_runs(self) -> list[dict]:
        """Whole runs of each compiled plan while recording."""
        return store_queries.graph_run_sums(self._query)

    def comparisons(self) -> list[Comparison]:
        return store_queries.comparisons(self._query, self._json_list)

    # --- aggregates -----------------------------------------------------------------------
    def op_totals(self, group_by: str = "op", sort_by: str = "total_time",
                  limit: int | None = None) -> list[OpTotal]:
        """Eager ops aggregated by op name, scope, source location or op+location."""
        return store_queries.op_totals(self._query, group_by, sort_by, limit)

    def kernel_totals(self, sort_by: str = "total_time",
                      limit: int | None = None) -> list[OpTotal]:
        """Graph-mode steps aggregated by graph and kernel name."""
        return store_queries.kernel_totals(self._query, sort_by, limit)

    def op_time(self) -> tuple[int, int, int]:
        """(op count, summed op ns, summed bytes allocated)."""
        return store_queries.op_time(self._query)

    def summary(self) -> dict:
        """The headline numbers every report starts with."""
        ops, op_ns, op_bytes = self.op_time()
        kernels, kernel_ns = store_queries.kernel_run_sums(self._query)
        wall_ns = max(0, self.end_ns() - self.t0_ns)
        end = self.end
        calibration = self.meta.get("calibration") or {}
        cost = profiler_cost(calibration, store_queries.cost_counts(self._query), self.meta)
        return {
            "path": str(self.path),
            "script": self.meta.get("script"),
            "argv": self.meta.get("argv"),
            "status": self.status,
            "end": end.to_json(),
            "end_text": end.text(),
            "exit": self.meta.get("exit"),
            "created": self.meta.get("created"),
            "wall_ns": wall_ns,
            "ops": ops,
            "op_ns": op_ns,
            "op_bytes": op_bytes,
            "kernels": kernels,
            "kernel_ns": kernel_ns,
            "events": self.event_counts(),
            "peak_memory": self.peak_memory(),
            "calibration": calibration,
            "profiler_ns": cost.total_ns,
            "profiler_cost": cost,
            "pyspy": self.meta.get("pyspy") or {"status": "off"},
            "samples": self.category_totals(),
            "machine": self.meta.get("machine") or {},
            "recorded": self.meta.get("recorded") or {},
            "partial": self.meta.get("partial"),
        }
