"""The SQL of the TUI's reader: tailing a growing session, paging its long lists by
position, searching them, and the few facts its views read on their own.

Like :mod:`execmode.profilers.store_queries` (whose docstring says why), every function
takes the reader's ``run(sql, params) -> list of tuples``; a search also takes its
``write(sql, params)``, which runs a statement on the connection's temporary tables (the
session itself stays read-only). The reader (``execmode.tui.data.SessionReader``) keeps
the row indexes and turns rows into records; each function here is one statement, so the
reader can count what a page costs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from execmode.profilers import store_queries
from execmode.profilers.store_queries import Run

Write = Callable[[str, Sequence], None]


class Paged(NamedTuple):
    """A list the TUI pages by position: its key, select list, FROM clause, the alias of
    the key's table, and the table that counts its rows."""

    key: str
    columns: str
    source: str
    alias: str
    table: str


def paged_lists(schema_version: int) -> dict[str, Paged]:
    q = store_queries
    return {
        "ops": Paged("seq", q.op_columns(schema_version), q.OPS_FROM, "e", "op_events"),
        "kernels": Paged("id", q.KERNEL_COLUMNS, q.KERNELS_FROM, "k", "kernels"),
        "output": Paged("id", q.OUTPUT_COLUMNS, q.OUTPUT_FROM, "o", "output"),
    }


# --- growth (the tailer) ------------------------------------------------------------------
def data_version(run: Run) -> int:
    """SQLite's counter of commits by other connections (reads no table)."""
    return run("PRAGMA data_version", ())[0][0]


def last_ids(run: Run) -> tuple[int, int, int, int, int]:
    """The last row of events, memory, samples, comparisons and meta (0 when empty)."""
    return run("SELECT (SELECT COALESCE(MAX(id), 0) FROM events), "
               "(SELECT COALESCE(MAX(id), 0) FROM memory), "
               "(SELECT COALESCE(MAX(id), 0) FROM samples), "
               "(SELECT COALESCE(MAX(id), 0) FROM comparisons), "
               "(SELECT COALESCE(MAX(rowid), 0) FROM meta)", ())[0]


def added_after(run: Run, paged: Paged, last_key) -> tuple:
    """(how many rows came after ``last_key``, the last key now)."""
    return run(f"SELECT COUNT(*), MAX({paged.key}) FROM {paged.table} WHERE {paged.key} > ?",
               (last_key,))[0]


def first_key(run: Run, paged: Paged):
    return run(f"SELECT MIN({paged.key}) FROM {paged.table}", ())[0][0]


def key_after(run: Run, paged: Paged, from_key, offset: int):
    """The key ``offset`` rows on from ``from_key`` (None: the list is shorter)."""
    rows = run(f"SELECT {paged.key} FROM {paged.table} WHERE {paged.key} >= ? "
               f"ORDER BY {paged.key} LIMIT 1 OFFSET ?", (from_key, offset))
    return rows[0][0] if rows else None


# --- pages (the UI thread) ----------------------------------------------------------------
def page(run: Run, paged: Paged, from_key, count: int, skip: int) -> list:
    """``count`` rows of the list, ``skip`` rows on from the one keyed ``from_key``."""
    a, key = paged.alias, paged.key
    return run(f"SELECT {paged.columns} FROM {paged.source} WHERE {a}.{key} >= ? "
               f"ORDER BY {a}.{key} LIMIT ? OFFSET ?", (from_key, count, skip))


# --- search, filters, sort (the `/` bar) --------------------------------------------------
def keep_found(write: Write, name: str, paged: Paged, query, upto_key) -> None:
    """Keep the keys of the rows of list ``name`` that ``query`` (the TUI's OpQuery)
    matches, in its order, in the connection's table ``temp.found_<name>``; rows after
    ``upto_key`` are left out. The caller commits (the INSERT opened a transaction)."""
    a, key = paged.alias, paged.key
    where, params = query_filter(name, query)
    order = _ORDER[query.sort].format(a=a, key=key)
    write(f"DROP TABLE IF EXISTS temp.found_{name}", ())
    write(f"CREATE TEMP TABLE found_{name} (pos INTEGER PRIMARY KEY, key INTEGER)", ())
    write(f"INSERT INTO temp.found_{name} (key) SELECT {a}.{key} FROM {paged.source} "
          f"WHERE {a}.{key} <= ? AND {where} ORDER BY {order}", (upto_key, *params))


def found_count(run: Run, name: str) -> int:
    return run(f"SELECT COUNT(*) FROM temp.found_{name}", ())[0][0]


def page_found(run: Run, name: str, paged: Paged, start: int, count: int) -> list:
    """Rows ``start .. start+count`` (by position) of the last :func:`keep_found`."""
    a, key = paged.alias, paged.key
    # CROSS JOIN: SQLite keeps the found table as the outer loop (a seek per row).
    return run(f"SELECT {paged.columns} FROM temp.found_{name} AS f CROSS JOIN "
               f"{paged.source} WHERE {a}.{key} = f.key AND f.pos > ? ORDER BY f.pos LIMIT ?",
               (start, count))


# Sorts: largest first, ties in the order the rows were recorded.
_ORDER = {
    "seq": "{a}.{key}",
    "time": "{a}.dur_ns DESC, {a}.{key}",
    "bytes": "{a}.bytes DESC, {a}.{key}",
}
# What a search word is matched against, per list; and the columns of the source line.
_SEARCHED = {
    "ops": ("e.op", "e.scope", "e.file"),
    "kernels": ("k.kernel", "k.member_ops", "k.graph_id", "k.scope", "l.file"),
}
_LINE_OF = {"ops": ("e.file", "e.line"), "kernels": ("l.file", "l.line")}


def query_filter(name: str, query) -> tuple[str, list]:
    """The WHERE condition (and its parameters) of ``query`` (the TUI's OpQuery) over list
    ``name``."""
    alias = {"ops": "e", "kernels": "k"}[name]
    clauses, params = ["1"], []
    if query.numbers:  # "#57": the op (kernel run) shown with that number everywhere
        key = {"ops": "seq", "kernels": "id"}[name]
        clauses.append(f"{alias}.{key} IN ({', '.join('?' * len(query.numbers))})")
        params += list(query.numbers)
    for word in query.words:
        columns = _SEARCHED[name]
        clauses.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
        params += [f"%{_like(word)}%"] * len(columns)
    if query.locations:
        file_col, line_col = _LINE_OF[name]
        either = []
        for file, line in query.locations:
            either.append(f"({line_col} = ? AND ({file_col} = ? OR {file_col} LIKE ? "
                          "ESCAPE '\\'))")
            params += [line, file, f"%/{_like(file)}"]
        clauses.append("(" + " OR ".join(either) + ")")
    if query.scope:
        clauses.append(f"({alias}.scope = ? OR {alias}.scope LIKE ? ESCAPE '\\')")
        params += [query.scope, f"{_like(query.scope)}/%"]
    if query.graph and name == "kernels":
        clauses.append("k.graph_id LIKE ? ESCAPE '\\'")
        params.append(f"{_like(query.graph)}%")
    if query.nonfinite and name == "ops":  # kernels keep no value statistics
        clauses.append("(e.v_nan > 0 OR e.v_inf > 0)")
    return " AND ".join(clauses), params


def _like(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- what the views read besides the lists ------------------------------------------------
def has_value_stats(run: Run) -> bool:
    """Whether ops carry value summaries (NaN/Inf counts): recorded with summaries on."""
    return bool(run("SELECT 1 FROM op_events WHERE v_nan IS NOT NULL LIMIT 1", ()))


def first_kernel_start(run: Run, graph_id: str, after_ns: int) -> int | None:
    rows = run("SELECT MIN(start_ns) FROM kernels WHERE graph_id = ? AND start_ns > ?",
               (graph_id, after_ns))
    return rows[0][0] if rows else None


def events_of_kind(run: Run, kind: str, graph_id: str | None = None) -> list[tuple]:
    """``(start_ns, end_ns, data)`` of the events of one kind (and graph), in the order
    they were written; ``data`` is the stored JSON text."""
    sql = "SELECT start_ns, end_ns, data FROM events WHERE kind = ?"
    params: tuple = (kind,)
    if graph_id is not None:
        sql += " AND graph_id = ?"
        params += (graph_id,)
    return run(sql + " ORDER BY id", params)


def graph_count(run: Run) -> int:
    """How many compiled graphs the session recorded (``graph`` events)."""
    return run("SELECT COUNT(*) FROM events WHERE kind = 'graph'", ())[0][0]


def memory_buckets(run: Run, points: int) -> list[tuple]:
    """``(bucket, device, last ts_ns, max live, max peak)``: the memory samples in at most
    ``points`` buckets of time per device (empty without samples)."""
    lo, hi = run("SELECT MIN(ts_ns), MAX(ts_ns) FROM memory", ())[0]
    if lo is None:
        return []
    bucket = max(1, (hi - lo) // max(1, points - 1))
    return run("SELECT (ts_ns - ?) / ? AS b, device, MAX(ts_ns), MAX(live_bytes), "
               "MAX(peak_bytes) FROM memory GROUP BY b, device ORDER BY b, device",
               (lo, bucket))
