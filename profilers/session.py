"""Reading a session file: rows, aggregates and a summary, for exporters, reports and the TUI.

    with open_session("run.emsession") as s:
        print(s.summary()["ops"], s.op_totals()[:5])

Opened read-only, so it can tail a file that a recording process is still writing (each
query sees the rows committed when it starts) or read one whose writer was killed.
Every SQLite failure becomes a :class:`SessionError` naming the file.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from execmode.profilers import store
from execmode.profilers.errors import SessionError


class OpRow(NamedTuple):
    seq: int
    op: str
    scope: str
    file: str | None
    line: int | None
    function: str | None
    start_ns: int
    dur_ns: int
    bytes: int
    inputs: str
    output: str
    device: str
    attrs: str | None
    v_min: float | None
    v_max: float | None
    v_mean: float | None
    v_std: float | None
    v_nan: int | None
    v_inf: int | None
    thread: int | None = None  # None: the script's main thread (meta "threads" names others)


class KernelRow(NamedTuple):
    id: int
    graph_id: str
    kernel: str
    step_kind: str
    member_nodes: list
    member_ops: list
    start_ns: int
    dur_ns: int
    bytes: int
    output: str | None
    device: str | None
    scope: str | None
    file: str | None
    line: int | None
    function: str | None


class EventRow(NamedTuple):
    id: int
    kind: str
    start_ns: int
    end_ns: int
    graph_id: str | None
    data: dict


class MemoryRow(NamedTuple):
    ts_ns: int
    device: str
    live_bytes: int
    peak_bytes: int
    source: str


class StackSample(NamedTuple):
    thread: str
    frames: list  # "function (file:line)", root first
    count: int
    category: str


class OutputRow(NamedTuple):
    ts_ns: int
    stream: str
    text: str


class Comparison(NamedTuple):
    function: str
    graph_id: str
    kernel: str
    step_kind: str
    eager_ops: list
    eager_count: int
    eager_ns: int
    kernel_ns: int
    eager_bytes: int
    planned_bytes: int
    repeat: int

    @property
    def speedup(self) -> float | None:
        return self.eager_ns / self.kernel_ns if self.kernel_ns > 0 else None


class OpTotal(NamedTuple):
    """One line of an aggregate table: all ops (or kernels) sharing a key."""

    name: str
    count: int
    total_ns: int
    min_ns: int
    max_ns: int
    bytes: int
    share: float  # of the summed time of all rows in the table

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.count if self.count else 0.0


SORT_KEYS = {
    "total_time": lambda t: (-t.total_ns, t.name),
    "count": lambda t: (-t.count, t.name),
    "mean_time": lambda t: (-t.mean_ns, t.name),
    "max_time": lambda t: (-t.max_ns, t.name),
    "bytes": lambda t: (-t.bytes, t.name),
    "name": lambda t: (t.name,),
}
# group_by -> (columns grouped over op_events, label of a group). Grouping on the raw
# columns first and joining the few groups to locations afterwards keeps a 1M-op session's
# aggregate fast (no string building per row).
# group_by -> (op_events columns grouped first, the label of a group). Grouping on the raw
# columns and joining the few groups to locations afterwards keeps aggregates of a 1M-op
# session fast (no string building per row).
GROUP_KEYS = {
    "op": ("op", "g.op"),
    "scope": ("scope", "CASE WHEN g.scope = '' THEN '(no scope)' ELSE g.scope END"),
    "location": ("location", "COALESCE(l.file || ':' || l.line, '(unknown)')"),
    "op_location": ("op, location",
                    "g.op || ' @ ' || COALESCE(l.file || ':' || l.line, '(unknown)')"),
}
_OP_SELECT = ("SELECT e.seq, e.op, e.scope, l.file, l.line, l.function, e.start_ns, e.dur_ns, "
              "e.bytes, e.inputs, e.output, e.device, e.attrs, e.v_min, e.v_max, e.v_mean, "
              "e.v_std, e.v_nan, e.v_inf, {thread} FROM op_events AS e "
              "LEFT JOIN locations AS l ON l.id = e.location")
_KERNEL_SELECT = ("SELECT k.id, k.graph_id, k.kernel, k.step_kind, k.member_nodes, "
                  "k.member_ops, k.start_ns, k.dur_ns, k.bytes, k.output, k.device, k.scope, "
                  "l.file, l.line, l.function FROM kernels AS k "
                  "LEFT JOIN locations AS l ON l.id = k.location")


def open_session(path: str | os.PathLike) -> Session:
    """Open a session file for reading (raises SessionError with the reason if it can't)."""
    return Session(path)


class Session:
    """A read-only view of one session file."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._conn, self.schema_version = store.connect_reader(self.path)
        self.meta = self._read_meta()
        # Version 1 has no thread column (store.OLDER_VERSIONS): every op is the main's.
        self._op_select = _OP_SELECT.format(
            thread="e.thread" if self.schema_version >= 2 else "NULL")

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
        first = self._query("SELECT MIN(start_ns) FROM op_events")[0][0]
        return first or 0

    def end_ns(self) -> int:
        end = self.meta.get("end_ns")
        if isinstance(end, int):
            return end
        last = self._query(
            "SELECT MAX(m) FROM (SELECT MAX(start_ns + dur_ns) AS m FROM op_events "
            "UNION ALL SELECT MAX(start_ns + dur_ns) FROM kernels "
            "UNION ALL SELECT MAX(end_ns) FROM events UNION ALL SELECT MAX(ts_ns) FROM memory)"
        )[0][0]
        return last or self.t0_ns

    @property
    def status(self) -> str:
        """"finished", "recording" (the writer is alive) or "interrupted" (it died first)."""
        exit_ = self.meta.get("exit")
        if isinstance(exit_, dict) and exit_.get("kind") in store.UNCLOSED_EXITS:
            return "interrupted"  # its process died; the starter wrote how (store.py)
        if "end_ns" in self.meta or exit_ is not None:
            return "finished"
        writer = self.meta.get("writer") or {}
        pid, host = writer.get("pid"), writer.get("host")
        if isinstance(pid, int) and host == platform.node() and _alive(pid):
            return "recording"
        return "interrupted"

    def count(self, table: str) -> int:
        if table not in ("op_events", "kernels", "events", "memory", "samples", "output",
                         "comparisons", "locations"):
            raise SessionError(f"no table {table!r} in a session")
        return self._query(f"SELECT COUNT(*) FROM {table}")[0][0]

    # --- rows -----------------------------------------------------------------------------
    def ops(self, after_seq: int | None = None, limit: int | None = None) -> Iterator[OpRow]:
        """Eager ops in order; ``after_seq`` tails a live session from a known point."""
        sql, params = self._op_select, []
        if after_seq is not None:
            sql += " WHERE e.seq > ?"
            params.append(after_seq)
        sql += " ORDER BY e.seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        for row in self._iterate(sql, params):
            yield OpRow(*row)

    def kernels(self) -> Iterator[KernelRow]:
        for row in self._iterate(_KERNEL_SELECT + " ORDER BY k.start_ns, k.id"):
            yield KernelRow(*row[:4], self._json(row[4], list, "kernels", row[0], "member_nodes"),
                            self._json(row[5], list, "kernels", row[0], "member_ops"), *row[6:])

    def events(self, kind: str | None = None) -> list[EventRow]:
        sql = "SELECT id, kind, start_ns, end_ns, graph_id, data FROM events"
        params: tuple = ()
        if kind is not None:
            sql += " WHERE kind = ?"
            params = (kind,)
        rows = self._query(sql + " ORDER BY start_ns, id", params)
        return [EventRow(*row[:5], self._json(row[5], dict, "events", row[0], "data"))
                for row in rows]

    def event_counts(self) -> dict[str, int]:
        return dict(self._query("SELECT kind, COUNT(*) FROM events GROUP BY kind ORDER BY kind"))

    def memory(self) -> list[MemoryRow]:
        rows = self._query("SELECT ts_ns, device, live_bytes, peak_bytes, source FROM memory "
                           "ORDER BY ts_ns, id")
        return [MemoryRow(*row) for row in rows]

    def peak_memory(self, by_source: bool = False) -> dict:
        """{device: peak live bytes} over the whole session; with ``by_source``,
        {(device, source): bytes} (source: "eager", "graph" or "pool")."""
        if by_source:
            rows = self._query("SELECT device, source, MAX(peak_bytes) FROM memory "
                               "GROUP BY device, source ORDER BY device, source")
            return {(d, s): b for d, s, b in rows}
        return dict(self._query("SELECT device, MAX(peak_bytes) FROM memory GROUP BY device "
                                "ORDER BY device"))

    def samples(self) -> list[StackSample]:
        rows = self._query("SELECT thread, stack, count, category FROM samples ORDER BY id")
        return [StackSample(t, s.split(";") if s else [], c, k) for t, s, c, k in rows]

    def category_totals(self) -> dict[str, int]:
        """{category: samples} from py-spy (empty when it did not run)."""
        return dict(self._query("SELECT category, SUM(count) FROM samples GROUP BY category "
                                "ORDER BY SUM(count) DESC"))

    def output(self) -> list[OutputRow]:
        return [OutputRow(*r) for r in
                self._query("SELECT ts_ns, stream, text FROM output ORDER BY id")]

    def comparisons(self) -> list[Comparison]:
        rows = self._query(
            "SELECT id, function, graph_id, kernel, step_kind, eager_ops, eager_count, "
            "eager_ns, kernel_ns, eager_bytes, planned_bytes, repeat FROM comparisons "
            "ORDER BY id")
        return [Comparison(*r[1:5], self._json(r[5], list, "comparisons", r[0], "eager_ops"),
                           *r[6:]) for r in rows]

    # --- aggregates -----------------------------------------------------------------------
    def op_totals(self, group_by: str = "op", sort_by: str = "total_time",
                  limit: int | None = None) -> list[OpTotal]:
        """Eager ops aggregated by op name, scope, source location or op+location."""
        if group_by not in GROUP_KEYS:
            raise SessionError(f"unknown group_by {group_by!r}; choose from {sorted(GROUP_KEYS)}")
        columns, label = GROUP_KEYS[group_by]
        inner = (f"SELECT {columns}, COUNT(*) AS n, SUM(dur_ns) AS total, MIN(dur_ns) AS lo, "
                 f"MAX(dur_ns) AS hi, SUM(bytes) AS b FROM op_events GROUP BY {columns}")
        join = " LEFT JOIN locations AS l ON l.id = g.location" if "location" in columns else ""
        rows = self._query(f"SELECT {label} AS name, SUM(n), SUM(total), MIN(lo), MAX(hi), "
                           f"SUM(b) FROM ({inner}) AS g{join} GROUP BY name")
        return _totals(rows, sort_by, limit)

    def kernel_totals(self, sort_by: str = "total_time",
                      limit: int | None = None) -> list[OpTotal]:
        """Graph-mode steps aggregated by graph and kernel name."""
        rows = self._query(
            "SELECT graph_id || '/' || kernel AS k, COUNT(*), SUM(dur_ns), MIN(dur_ns), "
            "MAX(dur_ns), SUM(bytes) FROM kernels GROUP BY k")
        return _totals(rows, sort_by, limit)

    def op_time(self) -> tuple[int, int, int]:
        """(op count, summed op ns, summed bytes allocated)."""
        count, total, nbytes = self._query(
            "SELECT COUNT(*), COALESCE(SUM(dur_ns), 0), COALESCE(SUM(bytes), 0) FROM op_events"
        )[0]
        return count, total, nbytes

    def summary(self) -> dict:
        """The headline numbers every report starts with."""
        ops, op_ns, op_bytes = self.op_time()
        kernels, kernel_ns = self._query(
            "SELECT COUNT(*), COALESCE(SUM(dur_ns), 0) FROM kernels")[0]
        wall_ns = max(0, self.end_ns() - self.t0_ns)
        calibration = self.meta.get("calibration") or {}
        overhead = calibration.get("overhead_ns")
        profiler_ns = int(overhead * ops) if isinstance(overhead, int | float) else None
        return {
            "path": str(self.path),
            "script": self.meta.get("script"),
            "argv": self.meta.get("argv"),
            "status": self.status,
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
            "profiler_ns": profiler_ns,
            "pyspy": self.meta.get("pyspy") or {"status": "off"},
            "samples": self.category_totals(),
            "machine": self.meta.get("machine") or {},
            "recorded": self.meta.get("recorded") or {},
            "partial": self.meta.get("partial"),
        }


def _totals(rows, sort_by: str, limit: int | None) -> list[OpTotal]:
    if sort_by not in SORT_KEYS:
        raise SessionError(f"unknown sort_by {sort_by!r}; choose from {sorted(SORT_KEYS)}")
    grand = sum(r[2] or 0 for r in rows) or 1
    totals = [OpTotal(str(k), n, total or 0, lo or 0, hi or 0, b or 0, (total or 0) / grand)
              for k, n, total, lo, hi, b in rows]
    totals.sort(key=SORT_KEYS[sort_by])
    return totals[:limit] if limit is not None else totals


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
