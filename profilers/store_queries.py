"""The SQL that reads rows and totals out of a session file, in one place.

Both readers use it: :class:`~execmode.profilers.session.Session` (reports, exporters,
``em.profile``) and the TUI's ``SessionReader`` (which adds paging and search on top).
They differ only in how a statement runs, so every function here takes the reader's
``run(sql, params) -> list of tuples``: the Session turns a SQLite failure into a
``SessionError``, the TUI into ``SessionUnreadable`` and counts the rows it read.

JSON columns (a kernel's member lists, a comparison's eager ops) are decoded by the
reader's ``decode(text, table, row_id, column)``: a report refuses a damaged value naming
the row, the TUI shows what it can.

Ops are read through the schema's ``ops`` view (op_events joined to their source lines),
so the join is written once, in schema.sql. SQLite flattens the view: a page read is still
one primary-key seek plus one location lookup per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from execmode.profilers.calibration_cold import MIN_BYTES, type_bytes
from execmode.profilers.errors import SessionError
from execmode.profilers.op_columns import VIEW_COLUMNS
from execmode.profilers.store_rows import (
    Comparison,
    KernelRow,
    KernelTotal,
    MemoryRow,
    OpRow,
    OpTotal,
    OutputRow,
    StackSample,
)

Run = Callable[[str, Sequence], list]
Decode = Callable[[object, str, int, str], object]

OPS_FROM = "ops AS e"
KERNEL_COLUMNS = ("k.id, k.graph_id, k.kernel, k.step_kind, k.member_nodes, k.member_ops, "
                  "k.start_ns, k.dur_ns, k.bytes, k.output, k.device, k.scope, "
                  "l.file, l.line, l.function")
KERNELS_FROM = "kernels AS k LEFT JOIN locations AS l ON l.id = k.location"
# The key first: the TUI pages output by id; the row itself leaves it out.
OUTPUT_COLUMNS = "o.id, o.ts_ns, o.stream, o.text"
OUTPUT_FROM = "output AS o"


def op_columns(schema_version: int) -> str:
    """The select list of :class:`OpRow` from :data:`OPS_FROM`, for a session's version:
    the view's columns (op_columns.py), aliased "e" so that a caller's WHERE and ORDER BY
    can name them. Version 1 has no thread column, in op_events nor in its view
    (store.OLDER_VERSIONS): every op reads as the main thread's."""
    return ", ".join("NULL" if name == "thread" and schema_version < 2 else f"e.{name}"
                     for name in VIEW_COLUMNS)


op_row = OpRow._make


def kernel_row(raw: Sequence, decode: Decode) -> KernelRow:
    """A :data:`KERNEL_COLUMNS` row as a :class:`KernelRow`, member lists decoded."""
    return KernelRow(*raw[:4], decode(raw[4], "kernels", raw[0], "member_nodes"),
                     decode(raw[5], "kernels", raw[0], "member_ops"), *raw[6:])


def output_row(raw: Sequence) -> OutputRow:
    """An :data:`OUTPUT_COLUMNS` row as an :class:`OutputRow` (without the key)."""
    return OutputRow(*raw[1:])


# Whole tables stream (a 1M-op session is not loaded at once): these give the statement,
# the reader iterates it in chunks and builds rows with op_row / kernel_row.
def ops_sql(schema_version: int, after_seq: int | None = None,
            limit: int | None = None) -> tuple[str, list]:
    """Eager ops in order; ``after_seq`` tails a live session from a known point."""
    sql, params = f"SELECT {op_columns(schema_version)} FROM {OPS_FROM}", []
    if after_seq is not None:
        sql += " WHERE e.seq > ?"
        params.append(after_seq)
    sql += " ORDER BY e.seq"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return sql, params


KERNELS_SQL = f"SELECT {KERNEL_COLUMNS} FROM {KERNELS_FROM} ORDER BY k.start_ns, k.id"


def outputs(run: Run) -> list[OutputRow]:
    """The script's output lines in the order they were written."""
    return [output_row(r) for r in run(f"SELECT {OUTPUT_COLUMNS} FROM {OUTPUT_FROM} "
                                       "ORDER BY o.id", ())]


def ops_between(run: Run, schema_version: int, start_ns: int, end_ns: int,
                limit: int) -> list[OpRow]:
    """Eager ops that started in ``[start_ns, end_ns)``, in the order they started."""
    rows = run(f"SELECT {op_columns(schema_version)} FROM {OPS_FROM} WHERE e.start_ns >= ? "
               "AND e.start_ns < ? ORDER BY e.start_ns LIMIT ?", (start_ns, end_ns, limit))
    return [op_row(r) for r in rows]


def comparisons(run: Run, decode: Decode) -> list[Comparison]:
    # Schema 3 added the rounds and the verdict (store.OLDER_VERSIONS).
    columns = {r[1] for r in run("PRAGMA table_info(comparisons)", ())}
    extra = "rounds, verdict" if "verdict" in columns else "NULL, NULL"
    rows = run("SELECT id, function, graph_id, kernel, step_kind, eager_ops, eager_count, "
               f"eager_ns, kernel_ns, eager_bytes, planned_bytes, repeat, {extra} "
               "FROM comparisons ORDER BY id", ())
    return [Comparison(*r[1:5], decode(r[5], "comparisons", r[0], "eager_ops"), *r[6:])
            for r in rows]



# --- the session's facts ------------------------------------------------------------------
_TABLES = ("op_events", "kernels", "events", "memory", "samples", "output", "comparisons",
           "locations")


def row_count(run: Run, table: str) -> int:
    """How many rows ``table`` holds (one of the session's tables)."""
    if table not in _TABLES:
        raise SessionError(f"no table {table!r} in a session")
    return run(f"SELECT COUNT(*) FROM {table}", ())[0][0]


def first_op_start(run: Run) -> int | None:
    """When the first eager op started (None without ops): t0 of sessions without one."""
    return run("SELECT MIN(start_ns) FROM op_events", ())[0][0]


def last_timestamp(run: Run) -> int | None:
    """The latest end of any op, kernel row, event or memory sample (None: no rows)."""
    return run("SELECT MAX(m) FROM (SELECT MAX(start_ns + dur_ns) AS m FROM op_events "
               "UNION ALL SELECT MAX(start_ns + dur_ns) FROM kernels "
               "UNION ALL SELECT MAX(end_ns) FROM events UNION ALL SELECT MAX(ts_ns) "
               "FROM memory)", ())[0][0]


def op_time(run: Run) -> tuple[int, int, int]:
    """(op count, summed op ns, summed bytes allocated)."""
    count, total, nbytes = run("SELECT COUNT(*), COALESCE(SUM(dur_ns), 0), "
                               "COALESCE(SUM(bytes), 0) FROM op_events", ())[0]
    return count, total, nbytes


def events(run: Run, kind: str | None = None) -> list[tuple]:
    """``(id, kind, start_ns, end_ns, graph_id, data)`` of the events (of one ``kind``) in
    the order they started; ``data`` is the stored JSON text."""
    sql = "SELECT id, kind, start_ns, end_ns, graph_id, data FROM events"
    params: tuple = ()
    if kind is not None:
        sql += " WHERE kind = ?"
        params = (kind,)
    return run(sql + " ORDER BY start_ns, id", params)


def event_counts(run: Run) -> dict[str, int]:
    return dict(run("SELECT kind, COUNT(*) FROM events GROUP BY kind ORDER BY kind", ()))


def memory(run: Run) -> list[MemoryRow]:
    return [MemoryRow(*row) for row in run(
        "SELECT ts_ns, device, live_bytes, peak_bytes, source FROM memory "
        "ORDER BY ts_ns, id", ())]


def peak_memory(run: Run, by_source: bool = False) -> dict:
    """{device: peak live bytes}; with ``by_source``, {(device, source): bytes}."""
    if by_source:
        rows = run("SELECT device, source, MAX(peak_bytes) FROM memory "
                   "GROUP BY device, source ORDER BY device, source", ())
        return {(d, s): b for d, s, b in rows}
    return dict(run("SELECT device, MAX(peak_bytes) FROM memory GROUP BY device "
                    "ORDER BY device", ()))


def samples(run: Run) -> list[StackSample]:
    rows = run("SELECT thread, stack, count, category FROM samples ORDER BY id", ())
    return [StackSample(t, s.split(";") if s else [], c, k) for t, s, c, k in rows]


def category_totals(run: Run) -> dict[str, int]:
    """{category: samples} from py-spy (empty when it did not run)."""
    return dict(run("SELECT category, SUM(count) FROM samples GROUP BY category "
                    "ORDER BY SUM(count) DESC", ()))


# --- totals -------------------------------------------------------------------------------
SORT_KEYS = {
    "total_time": lambda t: (-t.total_ns, t.name),
    "count": lambda t: (-t.count, t.name),
    "mean_time": lambda t: (-t.mean_ns, t.name),
    "max_time": lambda t: (-t.max_ns, t.name),
    "bytes": lambda t: (-t.bytes, t.name),
    "name": lambda t: (t.name,),
}
# group_by -> (op_events columns grouped first, the label of a group). Grouping on the raw
# columns and joining the few groups to locations afterwards keeps aggregates of a 1M-op
# session fast (no string building per row); so totals read op_events, not the ops view.
GROUP_KEYS = {
    "op": ("op", "g.op"),
    "scope": ("scope", "CASE WHEN g.scope = '' THEN '(no scope)' ELSE g.scope END"),
    "location": ("location", "COALESCE(l.file || ':' || l.line, '(unknown)')"),
    "op_location": ("op, location",
                    "g.op || ' @ ' || COALESCE(l.file || ':' || l.line, '(unknown)')"),
}


def op_totals(run: Run, group_by: str = "op", sort_by: str = "total_time",
              limit: int | None = None) -> list[OpTotal]:
    """Eager ops aggregated by op name, scope, source location or op+location."""
    if group_by not in GROUP_KEYS:
        raise SessionError(f"unknown group_by {group_by!r}; choose from {sorted(GROUP_KEYS)}")
    columns, label = GROUP_KEYS[group_by]
    inner = (f"SELECT {columns}, COUNT(*) AS n, SUM(dur_ns) AS total, MIN(dur_ns) AS lo, "
             f"MAX(dur_ns) AS hi, SUM(bytes) AS b FROM op_events GROUP BY {columns}")
    join = " LEFT JOIN locations AS l ON l.id = g.location" if "location" in columns else ""
    rows = run(f"SELECT {label} AS name, SUM(n), SUM(total), MIN(lo), MAX(hi), SUM(b) "
               f"FROM ({inner}) AS g{join} GROUP BY name", ())
    return _totals(rows, sort_by, limit)


def has_kernel_sums(run: Run) -> bool:
    """True when the session holds the kernel clock's sums (kernel_totals, schema 3 on).
    They cover every run, with or without per-run rows; older sessions have only the
    per-run rows of table kernels, summed here instead."""
    table = run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kernel_totals'",
                ())
    return bool(table) and bool(run("SELECT 1 FROM kernel_totals LIMIT 1", ()))


def kernel_totals(run: Run, sort_by: str = "total_time",
                  limit: int | None = None) -> list[OpTotal]:
    """Graph-mode steps aggregated by "graph/kernel" name."""
    if has_kernel_sums(run):
        rows = run("SELECT graph_id || '/' || kernel AS k, SUM(calls), SUM(total_ns), "
                   "MIN(min_ns), MAX(max_ns), SUM(bytes) FROM kernel_totals GROUP BY k", ())
    else:
        rows = run("SELECT graph_id || '/' || kernel AS k, COUNT(*), SUM(dur_ns), "
                   "MIN(dur_ns), MAX(dur_ns), SUM(bytes) FROM kernels GROUP BY k", ())
    return _totals(rows, sort_by, limit)


def step_totals(run: Run, decode: Decode) -> list[KernelTotal]:
    """Every step of every compiled graph with its calls and time, in the order the steps
    first ran (member ops and kind as the first run recorded them)."""
    if has_kernel_sums(run):
        rows = run("SELECT MIN(rowid), graph_id, kernel, MIN(step_kind), MIN(member_ops), "
                   "SUM(calls), SUM(total_ns), SUM(bytes) FROM kernel_totals "
                   "GROUP BY graph_id, kernel ORDER BY MIN(clock), MIN(step_index)", ())
        table = "kernel_totals"
    else:
        rows = run("SELECT MIN(id), graph_id, kernel, MIN(step_kind), MIN(member_ops), "
                   "COUNT(*), SUM(dur_ns), SUM(bytes) FROM kernels GROUP BY graph_id, kernel "
                   "ORDER BY MIN(id)", ())
        table = "kernels"
    return [KernelTotal(g, k, kind, decode(ops, table, first, "member_ops"), n,
                        total or 0, b or 0)
            for first, g, k, kind, ops, n, total, b in rows]


def kernel_sums(run: Run, decode: Decode) -> list[dict]:
    """Every row of kernel_totals (the kernel clock's sums per step of each plan), with
    its source line; empty in sessions older than the table."""
    if not run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kernel_totals'",
               ()):
        return []
    columns = ("clock", "step_index", "graph_id", "kernel", "step_kind", "member_nodes",
               "member_ops", "calls", "loop_calls", "total_ns", "min_ns", "max_ns", "bytes",
               "output", "device", "scope", "file", "line", "function", "backend")
    rows = run("SELECT k.clock, k.step_index, k.graph_id, k.kernel, k.step_kind, "
               "k.member_nodes, k.member_ops, k.calls, k.loop_calls, k.total_ns, k.min_ns, "
               "k.max_ns, k.bytes, k.output, k.device, k.scope, l.file, l.line, l.function, "
               "k.backend FROM kernel_totals AS k LEFT JOIN locations AS l "
               "ON l.id = k.location ORDER BY k.clock, k.step_index", ())
    out = []
    for raw in rows:
        row = dict(zip(columns, raw))
        key = raw[0] * 100_000 + raw[1]  # a row's name in an error: plan and step
        row["member_nodes"] = decode(row["member_nodes"], "kernel_totals", key, "member_nodes")
        row["member_ops"] = decode(row["member_ops"], "kernel_totals", key, "member_ops")
        out.append(row)
    return out


def graph_run_sums(run: Run) -> list[dict]:
    """Every row of graph_runs; empty in sessions older than the table."""
    if not run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'graph_runs'", ()):
        return []
    columns = ("clock", "graph_id", "runs", "loop_runs", "total_ns", "min_ns", "max_ns")
    return [dict(zip(columns, raw)) for raw in run(
        f"SELECT {', '.join(columns)} FROM graph_runs ORDER BY clock", ())]


def kernel_run_sums(run: Run) -> tuple[int, int]:
    """(kernel runs, their total ns) over the whole session."""
    if has_kernel_sums(run):
        row = run("SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(total_ns), 0) "
                  "FROM kernel_totals", ())
    else:
        row = run("SELECT COUNT(*), COALESCE(SUM(dur_ns), 0) FROM kernels", ())
    return int(row[0][0]), int(row[0][1])


def cost_counts(run: Run) -> CostCounts:
    """What the profiler's cost is stated from (profiler_cost.py)."""
    ops = int(run("SELECT COUNT(*) FROM op_events", ())[0][0])
    kernel_rows = int(run("SELECT COUNT(*) FROM kernels", ())[0][0])
    if not has_kernel_sums(run):  # older sessions: kernel runs are their rows
        return CostCounts(ops, kernel_rows, 0, 0, 0, kernel_rows, op_bytes=op_bytes_moved(run))
    calls, loop_calls = run("SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(loop_calls), 0) "
                            "FROM kernel_totals", ())[0]
    runs, loop_runs = run("SELECT COALESCE(SUM(runs), 0), COALESCE(SUM(loop_runs), 0) "
                          "FROM graph_runs", ())[0]
    # Plans whose every run was timed in Python: a run's time less its steps' is the
    # timing's own work between the steps (plan._run_timed, the generated replay).
    gap, gap_runs, gap_calls = run(
        "SELECT COALESCE(SUM(g.total_ns - s.steps), 0), COALESCE(SUM(g.runs), 0), "
        "COALESCE(SUM(s.calls), 0) FROM graph_runs AS g JOIN (SELECT clock, "
        "SUM(total_ns) AS steps, SUM(calls) AS calls FROM kernel_totals GROUP BY clock) "
        "AS s ON s.clock = g.clock WHERE g.runs > 0 AND g.loop_runs = g.runs", ())[0]
    return CostCounts(ops, int(calls), int(loop_calls), int(runs), int(loop_runs),
                      kernel_rows, max(0, int(gap)), int(gap_runs), int(gap_calls),
                      op_bytes_moved(run))


def op_bytes_moved(run: Run) -> tuple:
    """``((bytes, ops), ...)``: the CPU ops that allocated their output, by the bytes of
    their inputs and output (calibration_cold.py states what such an op costs the
    recorder), largest first; ops under MIN_BYTES left out."""
    moved: dict = {}
    for inputs, output, n in run("SELECT inputs, output, COUNT(*) FROM op_events "
                                 "WHERE bytes > 0 AND device = 'cpu' "
                                 "GROUP BY inputs, output", ()):
        nbytes = type_bytes(inputs) + type_bytes(output)
        if nbytes >= MIN_BYTES:
            moved[nbytes] = moved.get(nbytes, 0) + int(n)
    return tuple(sorted(moved.items(), reverse=True))


class CostCounts(NamedTuple):
    ops: int
    kernel_calls: int      # compiled steps run
    loop_calls: int        # of those, timed in Python
    graph_runs: int        # compiled plans run
    loop_runs: int         # of those, timed in Python
    kernel_rows: int       # per-run kernel rows written (only with --kernel-rows)
    loop_gap_ns: int = 0   # measured: the Python timing's work between steps, in the
    gap_runs: int = 0      # runs (and steps) of plans timed in Python at every run
    gap_calls: int = 0
    op_bytes: tuple = ()   # ((bytes moved, ops), ...): op_bytes_moved


def _totals(rows, sort_by: str, limit: int | None) -> list[OpTotal]:
    if sort_by not in SORT_KEYS:
        raise SessionError(f"unknown sort_by {sort_by!r}; choose from {sorted(SORT_KEYS)}")
    grand = sum(r[2] or 0 for r in rows) or 1
    totals = [OpTotal(str(k), n, total or 0, lo or 0, hi or 0, b or 0, (total or 0) / grand)
              for k, n, total, lo, hi, b in rows]
    totals.sort(key=SORT_KEYS[sort_by])
    return totals[:limit] if limit is not None else totals


def op_spans(run: Run, names: Sequence[str]) -> list[tuple]:
    """``(start_ns, dur_ns, attrs)`` of the ops named ``names`` (a rank's collectives), in
    the order they started."""
    marks = ",".join("?" * len(names))
    return run(f"SELECT start_ns, dur_ns, attrs FROM op_events WHERE op IN ({marks}) "
               "ORDER BY start_ns", tuple(names))


def ops_extent(run: Run) -> tuple:
    """``(first start, last end)`` of the eager ops and kernel rows, or ``(None, None)``."""
    return tuple(run("SELECT MIN(s), MAX(e) FROM (SELECT MIN(start_ns) AS s, "
                     "MAX(start_ns + dur_ns) AS e FROM op_events UNION ALL "
                     "SELECT MIN(start_ns), MAX(start_ns + dur_ns) FROM kernels)", ())[0])


def busy_by_slice(run: Run, t0_ns: int, width_ns: int, skip: Sequence[str]) -> tuple:
    """The time of eager ops (but those named ``skip``) and kernel rows, in slices of
    ``width_ns`` from ``t0_ns``: ``({slice: ns of rows no longer than a slice, summed
    where they start}, [(start_ns, dur_ns) of the longer rows, to be spread])``."""
    marks = ",".join("?" * len(skip))
    not_skipped = f" AND op NOT IN ({marks})" if skip else ""
    short = run(f"SELECT (start_ns - ?) / ?, SUM(dur_ns) FROM op_events WHERE dur_ns <= ?"
                f"{not_skipped} GROUP BY 1 UNION ALL SELECT (start_ns - ?) / ?, SUM(dur_ns) "
                "FROM kernels WHERE dur_ns <= ? GROUP BY 1",
                (t0_ns, width_ns, width_ns, *skip, t0_ns, width_ns, width_ns))
    by_slice: dict = {}
    for index, ns in short:
        by_slice[int(index)] = by_slice.get(int(index), 0) + int(ns or 0)
    long = run(f"SELECT start_ns, dur_ns FROM op_events WHERE dur_ns > ?{not_skipped} "
               "UNION ALL SELECT start_ns, dur_ns FROM kernels WHERE dur_ns > ?",
               (width_ns, *skip, width_ns))
    return by_slice, [(int(s), int(d)) for s, d in long]
