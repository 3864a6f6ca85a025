"""The TUI's reading of a session: paging, search, the snapshot and the view records.

The rows and totals themselves, and their SQL, are the store's
(:mod:`execmode.profilers.store_queries`, :mod:`execmode.profilers.store_rows`), shared
with reports and exporters; the SQL of what only the TUI needs (tailing, paging, search)
is :mod:`execmode.profilers.store_pages`. This module keeps the row indexes and makes the
views' records.

A :class:`SessionReader` is one read-only connection to one session file. The tailer
thread owns one (it watches the file grow) and the UI thread owns another (it pages the
rows the lists show); SQLite's WAL lets both read while the agent writes. Results are the
store's rows and the records of :mod:`execmode.tui.records`; nothing else in the TUI sees
a cursor.

Lists of millions of rows are paged by position through a :class:`RowIndex`: the key of
every 1024th row, so reading rows ``i..i+40`` is one seek plus at most 1023 skipped rows,
whatever the table's size, and the TUI never holds a Python object per row.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from execmode.profilers import store, store_pages, store_queries
from execmode.profilers.compiles import compiles
from execmode.profilers.errors import SessionError
from execmode.profilers.profiler_cost import profiler_cost
from execmode.tui.op_query import OpQuery
from execmode.tui.records import (
    EMPTY_INDEX,
    EMPTY_SNAPSHOT,
    BreakInfo,
    Comparison,
    CompileInfo,
    GraphInfo,
    KernelTotal,
    MemoryPlanInfo,
    MemoryPoint,
    OpRow,
    OpTotal,
    PassInfo,
    RetraceInfo,
    RowIndex,
    SessionOverview,
    SourceRef,
    StoreSnapshot,
    TraceInfo,
)


class SessionUnreadable(Exception):
    """The session file is missing, damaged, foreign or too new; the message says which."""


def open_connection(path: str | Path) -> tuple[sqlite3.Connection, int]:
    """A read-only connection to a checked session file, and its schema version."""
    try:
        return store.connect_reader(Path(path))
    except SessionError as exc:
        raise SessionUnreadable(str(exc)) from None


class SessionReader:
    """Read-only queries over one session file (one connection: use it from one thread)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._conn, self.schema_version = open_connection(self.path)
        self._paged = store_pages.paged_lists(self.schema_version)
        self._data_version = None
        # What this reader cost: the tests check that paging and searching a million-row
        # session reads pages, not the table (rows handed to Python, statements run).
        self.rows_read = 0
        self.queries = 0

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SessionReader:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def _rows(self, sql: str, params=()) -> list:
        self.queries += 1
        try:
            rows = self._conn.execute(sql, params).fetchall()
            self.rows_read += len(rows)
            return rows
        except sqlite3.DatabaseError as exc:
            raise SessionUnreadable(f"{self.path}: the session file is damaged or was "
                                    f"replaced ({exc})") from None

    # --- growth (the tailer) ------------------------------------------------------------
    def changed(self) -> bool:
        """Whether another connection committed since the last call (cheap: no table read)."""
        version = store_pages.data_version(self._rows)
        changed = version != self._data_version
        self._data_version = version
        return changed

    def snapshot(self, previous: StoreSnapshot = EMPTY_SNAPSHOT) -> StoreSnapshot:
        """How far every table has grown, extending the previous row indexes."""
        last = store_pages.last_ids(self._rows)
        return StoreSnapshot(
            ops=self._extend("ops", previous.ops),
            kernels=self._extend("kernels", previous.kernels),
            output=self._extend("output", previous.output),
            events=last[0], memory=last[1], samples=last[2], comparisons=last[3],
            meta_version=last[4],
        )

    def _extend(self, name: str, old: RowIndex) -> RowIndex:
        paged = self._paged[name]
        added, last = store_pages.added_after(self._rows, paged, old.last_key)
        if not added:
            return old
        count = old.count + added
        blocks = list(old.blocks)
        while len(blocks) * old.block < count:
            if not blocks:
                start = store_pages.first_key(self._rows, paged)
            else:
                start = store_pages.key_after(self._rows, paged, blocks[-1], old.block)
            if start is None:
                break
            blocks.append(start)
        return RowIndex(count, last, tuple(blocks), old.block)

    # --- pages (the UI thread) ------------------------------------------------------------
    def page(self, name: str, index: RowIndex, start: int, count: int) -> list:
        """Rows ``start .. start+count`` (by position) of ``ops``, ``kernels`` or ``output``."""
        count = min(count, index.count - start)
        if count <= 0 or start < 0:
            return []
        block, skip = divmod(start, index.block)
        if block >= len(index.blocks):
            return []
        rows = store_pages.page(self._rows, self._paged[name], index.blocks[block], count,
                                skip)
        return _records(name, rows)

    # --- search, filters, sort (the `/` bar) ----------------------------------------------
    def find(self, name: str, query: OpQuery, upto_key: int) -> int:
        """Keep the keys of the rows of ``ops``/``kernels`` that ``query`` matches, in its
        order, in a temporary table of this connection; returns how many.

        SQLite filters and sorts (one pass over the table, in C); Python gets one number.
        Pages are then read by position with :meth:`page_found`. Rows after ``upto_key``
        are left out, so the result matches the snapshot the list shows.
        """
        store_pages.keep_found(self._write, name, self._paged[name], query, upto_key)
        # The INSERT opened a transaction: end it, or this reader would keep seeing the
        # store as it was (and hold back the writer's WAL checkpoints).
        self._conn.commit()
        return store_pages.found_count(self._rows, name)

    def page_found(self, name: str, start: int, count: int) -> list:
        """Rows ``start .. start+count`` (by position) of the last :meth:`find` result."""
        rows = store_pages.page_found(self._rows, name, self._paged[name], start, count)
        return _records(name, rows)

    def has_value_stats(self) -> bool:
        """Whether ops carry value summaries (NaN/Inf counts): recorded with summaries on."""
        return store_pages.has_value_stats(self._rows)

    def _write(self, sql: str, params) -> None:
        """A statement on this connection's temporary tables (the session stays read-only)."""
        self.queries += 1
        try:
            self._conn.execute(sql, params)
        except sqlite3.DatabaseError as exc:
            raise SessionUnreadable(f"{self.path}: cannot search the session ({exc})") from None

    def ops_between(self, start_ns: int, end_ns: int | None, limit: int = 500) -> list[OpRow]:
        """Eager ops that started in a window of time (the fallback ops of a graph break)."""
        end = end_ns if end_ns is not None else 2**62
        return store_queries.ops_between(self._rows, self.schema_version, start_ns, end, limit)

    def first_kernel_start(self, graph_id: str, after_ns: int) -> int | None:
        return store_pages.first_kernel_start(self._rows, graph_id, after_ns)

    # --- the session's facts --------------------------------------------------------------
    def meta(self) -> dict:
        """The meta table, checked as reports check it (a value that is not JSON, or of the
        wrong type for its key, makes the session unreadable, naming the key)."""
        try:
            return store.read_meta(self._conn, self.path)
        except SessionError as exc:
            raise SessionUnreadable(str(exc)) from None

    def overview(self) -> SessionOverview:
        meta = self.meta()
        t0 = meta.get("t0_ns")
        if not isinstance(t0, int):
            t0 = store_queries.first_op_start(self._rows) or 0
        argv = meta.get("argv")
        return SessionOverview(
            path=str(self.path), script=meta.get("script"),
            argv=argv if isinstance(argv, list) else [], exit=_dict_or_none(meta.get("exit")),
            calibration=_dict(meta.get("calibration")), pyspy=_dict(meta.get("pyspy")),
            recorded=_dict(meta.get("recorded")), t0_ns=t0, meta=meta,
        )

    def _events(self, kind: str, graph_id: str | None = None) -> list[tuple]:
        return [(s, e, _decode(d))
                for s, e, d in store_pages.events_of_kind(self._rows, kind, graph_id)]

    def graphs(self) -> list[GraphInfo]:
        out = []
        for _s, _e, d in self._events("graph"):
            out.append(GraphInfo(
                graph_id=str(d.get("graph_id", "?")), function=str(d.get("function", "?")),
                ir_text=str(d.get("ir_text") or ""), lowered_text=str(d.get("lowered_text") or ""),
                compile_ns=_int(d.get("compile_ns")), steps=_list(d.get("steps")),
                ir_json=_dict(d.get("ir_json")), lowered_json=_dict(d.get("lowered_json")),
            ))
        return out

    def traces(self) -> list[TraceInfo]:
        return [TraceInfo(str(d.get("function", "?")), str(d.get("graph_id", "?")),
                          _int(d.get("segment")), str(d.get("signature") or ""),
                          _int(d.get("node_count")), SourceRef.from_json(d.get("location")))
                for _s, _e, d in self._events("trace")]

    def retraces(self) -> list[RetraceInfo]:
        return [RetraceInfo(str(d.get("function", "?")), str(d.get("reason") or ""),
                            str(d.get("signature") or ""), s)
                for s, _e, d in self._events("retrace")]

    def breaks(self) -> list[BreakInfo]:
        return [BreakInfo(str(d.get("function", "?")), str(d.get("graph_id") or ""),
                          str(d.get("reason") or ""), str(d.get("op") or ""),
                          SourceRef.from_json(d.get("location")), _int(d.get("segment_before")),
                          _int(d.get("segment_after")), s)
                for s, _e, d in self._events("graph_break")]

    def passes(self, graph_id: str) -> list[PassInfo]:
        out = []
        for _s, _e, d in self._events("pass", graph_id):
            out.append(PassInfo(
                graph_id=graph_id, index=_int(d.get("index")), name=str(d.get("name", "?")),
                wall_ns=_int(d.get("wall_ns")), node_count=_int(d.get("node_count")),
                kernel_count=_int(d.get("kernel_count")),
                buffer_count=_int(d.get("buffer_count")), rewrites=_list(d.get("rewrites")),
                diff=_dict(d.get("diff")), ir_text=str(d.get("ir_text") or ""),
                ir_json=_dict(d.get("ir_json")),
            ))
        out.sort(key=lambda p: p.index)
        return out

    def compiles(self) -> list[CompileInfo]:
        """One entry per compiled kernel, with its translation unit's compile (time counted
        once per unit: ``shared_by`` kernels share it)."""
        out = []
        for c in compiles(self._events("compile")):
            for k in c.kernels:
                out.append(CompileInfo(c.graph_id, k.kernel, c.language, k.source,
                                       c.compile_ns, c.cache_hit, k.member_nodes,
                                       k.member_ops, c.backend, len(c.kernels)))
        return out

    def memory_plans(self) -> list[MemoryPlanInfo]:
        return [MemoryPlanInfo(str(d.get("graph_id") or ""), _int(d.get("planned_peak")),
                               _int(d.get("unplanned_peak")), _int(d.get("eager_peak")),
                               _int(d.get("buffers")))
                for _s, _e, d in self._events("memory_plan")]

    def graph_count(self) -> int:
        """How many compiled graphs the session recorded (``graph`` events)."""
        return store_pages.graph_count(self._rows)

    def kernel_totals(self) -> list[KernelTotal]:
        return store_queries.step_totals(self._rows, _list_or_empty)

    def op_totals(self, limit: int = 20) -> list[OpTotal]:
        return store_queries.op_totals(self._rows, limit=limit)

    def memory_series(self, t0_ns: int, points: int = 200) -> list[MemoryPoint]:
        """Live/peak bytes over time, at most ``points`` per device (the max of each bucket)."""
        return [MemoryPoint((ts - t0_ns) / 1e9, dev, live, peak)
                for _b, dev, ts, live, peak in store_pages.memory_buckets(self._rows, points)]

    def comparisons(self) -> list[Comparison]:
        return store_queries.comparisons(self._rows, _list_or_empty)

    def sample_categories(self) -> dict[str, int]:
        return store_queries.category_totals(self._rows)

    def op_time(self) -> tuple[int, int]:
        """(summed eager op ns, summed kernel ns: the kernel clock's sums, or the per-run
        rows of sessions that have no sums)."""
        return (store_queries.op_time(self._rows)[1],
                store_queries.kernel_run_sums(self._rows)[1])

    def profiler_cost(self):
        """What recording cost the script (profilers/profiler_cost.py), as reports state it."""
        meta = self.meta()
        return profiler_cost(meta.get("calibration") or {},
                             store_queries.cost_counts(self._rows), meta)


def _records(name: str, rows: list) -> list:
    if name == "ops":
        return [store_queries.op_row(r) for r in rows]
    if name == "kernels":
        return [store_queries.kernel_row(r, _list_or_stored) for r in rows]
    return [store_queries.output_row(r) for r in rows]


# The TUI browses what it can: a damaged JSON column is never raised.
def _list_or_stored(text, _table, _row_id, _column):
    """A kernel's member list, or the text as stored when it is not a JSON list (the list
    shows it as it is: formatting.op_names)."""
    value = _decode(text)
    return value if isinstance(value, list) else text


def _list_or_empty(text, _table, _row_id, _column) -> list:
    return _list(_decode(text))


def _decode(text):
    try:
        return json.loads(text) if text else None
    except (TypeError, ValueError):
        return None


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _dict_or_none(value) -> dict | None:
    return value if isinstance(value, dict) else None


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


__all__ = ["EMPTY_INDEX", "SessionReader", "SessionUnreadable", "open_connection"]
